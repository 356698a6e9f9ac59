# Every target runs with the project's toolchain first on PATH: a pinned Node 24 in .tools/node
# (fetched from the npm registry only when the machine's node is older than 22.19) and .tools/bin.
# The chart tests use the first helm of HELM_VERSION's major version on PATH (.tools/bin first),
# else build the pinned one into .tools/bin with `go install`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
# Prerequisites written $$(...) are expanded only when make considers their target, so the helm
# lookup runs only for the targets that need helm.
.SECONDEXPANSION:

NODE_VERSION ?= 24.21.0
# npm of the locally assembled build base image (make image-local)
NPM_VERSION ?= 11.21.2
HELM_VERSION ?= v3.22.0
TOOLS := $(CURDIR)/.tools
# npm and Node trust only their own CA list; the machine's store may also hold the CA of a proxy
# between it and the registry. An NODE_EXTRA_CA_CERTS already set is kept.
SYSTEM_CA_BUNDLE := $(firstword $(wildcard /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt))
ifneq ($(SYSTEM_CA_BUNDLE),)
export NODE_EXTRA_CA_CERTS ?= $(SYSTEM_CA_BUNDLE)
endif
LOCAL_NODE := $(TOOLS)/node/bin/node
NODE_ARCH := $(subst aarch64,arm64,$(subst x86_64,x64,$(shell uname -m)))

# The machine's node version, read before .tools is put on PATH, against the oldest the
# dependencies accept (bin/preflight.js MINIMUM_NODE, package.json engines).
SYSTEM_NODE_VERSION := $(shell node -p 'process.versions.node' 2>/dev/null || echo 0.0.0)
SYSTEM_NODE_MAJOR := $(firstword $(subst ., ,$(SYSTEM_NODE_VERSION)))
SYSTEM_NODE_MINOR := $(word 2,$(subst ., ,$(SYSTEM_NODE_VERSION)))
ifeq ($(shell [ $(SYSTEM_NODE_MAJOR) -gt 22 ] || { [ $(SYSTEM_NODE_MAJOR) -eq 22 ] && [ $(SYSTEM_NODE_MINOR) -ge 19 ]; } && echo modern),modern)
  NODE_BOOTSTRAP :=
else
  NODE_BOOTSTRAP := $(LOCAL_NODE)
endif

export PATH := $(TOOLS)/node/bin:$(TOOLS)/bin:$(CURDIR)/node_modules/.bin:$(PATH)

DEPS_STAMP := node_modules/.deps-stamp
BUILD_STAMP := dist/.build-stamp
SOURCES := $(shell find src -name '*.ts' 2>/dev/null)

VITEST_REPORT := test/.tmp/vitest-report.json

.PHONY: help run test build lint typecheck unit bench bench-quick bench-headline bench-fleet scorecard e2e e2e-k8s image-local image-load soak clean docs check-docs node-info helm chart-golden FORCE

help: ## List the targets
	@echo "usage: make <target>   (make run starts the quickstart, make test runs every check)"
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sort | awk -F ':.*## ' \
	  '{ name[NR] = $$1; text[NR] = $$2; if (length($$1) > width) width = length($$1) } \
	   END { for (i = 1; i <= NR; i++) printf "  %-" width "s  %s\n", name[i], text[i] }'

$(LOCAL_NODE):
	@echo "node $(SYSTEM_NODE_VERSION) is older than 22.19: fetching Node $(NODE_VERSION) from the npm registry into .tools/node"
	@rm -rf $(TOOLS)/node $(TOOLS)/node-pack && mkdir -p $(TOOLS)/node $(TOOLS)/node-pack
	@cd $(TOOLS)/node-pack && npm pack --silent node-linux-$(NODE_ARCH)@$(NODE_VERSION) >/dev/null
	@tar -xzf $(TOOLS)/node-pack/node-linux-$(NODE_ARCH)-$(NODE_VERSION).tgz -C $(TOOLS)/node --strip-components=1 package/bin/node package/LICENSE
	@rm -rf $(TOOLS)/node-pack
	@$(LOCAL_NODE) --version

node-info: $(NODE_BOOTSTRAP) ## Show which node every target uses, and which helm the chart tests use
	@echo "node $$(node --version) at $$(command -v node); npm $$(npm --version)"
	@helm='$(HELM_ON_PATH)'; \
	if [ -n "$$helm" ]; then echo "helm $$("$$helm" version --short) at $$helm"; \
	elif command -v go >/dev/null; then \
	  echo "helm: no helm $(HELM_MAJOR).x on PATH; the chart tests build helm $(HELM_VERSION) into .tools/bin with $$(command -v go)"; \
	else echo "helm: $(HELM_NONE)"; fi

$(DEPS_STAMP): package.json package-lock.json $(NODE_BOOTSTRAP)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(BUILD_STAMP): $(DEPS_STAMP) $(SOURCES) tsconfig.build.json tsconfig.base.json
	tsc -p tsconfig.build.json
	@touch $@

build: $(BUILD_STAMP) ## Compile TypeScript into dist/

HELM_MAJOR := $(firstword $(subst ., ,$(HELM_VERSION)))
# The first helm on PATH (.tools/bin first) whose `helm version --short` is $(HELM_MAJOR).x, or
# nothing; looked up once, when first used.
HELM_ON_PATH = $(eval HELM_ON_PATH := $(shell p='$(PATH)'; IFS=:; for dir in $$p; do \
  [ -x "$$dir/helm" ] || continue; \
  case "$$("$$dir/helm" version --short 2>/dev/null)" in ($(HELM_MAJOR).*) echo "$$dir/helm"; break;; esac; \
  done))$(HELM_ON_PATH)
# The helm the chart tests use (test/chart/helm.ts reads HELM_BIN), and what to build for it.
HELM_BIN = $(or $(HELM_ON_PATH),$(TOOLS)/bin/helm)
HELM_NEEDED = $(if $(HELM_ON_PATH),,$(TOOLS)/bin/helm)
HELM_NONE := no helm $(HELM_MAJOR).x on PATH, and no Go to build helm $(HELM_VERSION): install helm $(HELM_MAJOR) (https://helm.sh/docs/intro/install/) or Go (https://go.dev/doc/install)
HELM_NO_GO = $(HELM_NONE)
helm e2e-k8s: HELM_NO_GO = building helm $(HELM_VERSION) into .tools/bin needs Go, and go is not on PATH: install Go (https://go.dev/doc/install)

# Checked on every use, so a helm of another major version left in .tools/bin is replaced.
$(TOOLS)/bin/helm: FORCE
	@case "$$('$@' version --short 2>/dev/null)" in ($(HELM_MAJOR).*) exit 0;; esac; \
	command -v go >/dev/null || { echo "make: $(HELM_NO_GO)" >&2; exit 1; }; \
	echo "building helm $(HELM_VERSION) with go install into .tools/bin"; \
	mkdir -p $(TOOLS)/bin; \
	set -x; GOBIN=$(TOOLS)/bin GOFLAGS=-mod=mod go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

FORCE:

helm: $(TOOLS)/bin/helm ## Build the pinned helm into .tools/bin (make e2e-k8s and the release use that one)
	@echo "helm $$('$(TOOLS)/bin/helm' version --short) at .tools/bin/helm"

.PHONY: claude-code
claude-code: $(NODE_BOOTSTRAP) ## Fetch the pinned Claude Code CLI (Linux x64) into ~/.cache/llm-gateway, for the tests that run it
	@node scripts/claude-code.ts

chart-golden: $(BUILD_STAMP) $$(HELM_NEEDED) ## Regenerate the chart's values.schema.json, golden renders and manifests/
	HELM_BIN='$(HELM_BIN)' node test/chart/regenerate.ts

lint: $(DEPS_STAMP) ## ESLint, Prettier, and no import cycles between modules or gateway folders
	eslint .
	prettier --check .
	node scripts/import-cycles.ts src

typecheck: $(DEPS_STAMP) ## Type-check sources, tests and benchmarks
	tsc -p tsconfig.json

docs: $(BUILD_STAMP) ## Regenerate docs/configuration.md from the config schema
	node bin/gateway.js schema --markdown > docs/configuration.md

check-docs: $(BUILD_STAMP) ## Fail when docs/configuration.md is stale
	@node bin/gateway.js schema --markdown | diff -u docs/configuration.md - \
	  || { echo "docs/configuration.md is stale: run 'make docs'"; exit 1; }

# The report is removed first, so a run that ends before writing one is never summarised from an
# earlier run's report; vitest's exit status goes to the summary, which fails the run on it.
unit: $(BUILD_STAMP) $$(HELM_NEEDED) ## Run every vitest suite, the local e2e included (closing line "tests: N passed, N failed[, N skipped]")
	@mkdir -p $(dir $(VITEST_REPORT)) && rm -f $(VITEST_REPORT)
	@echo "HELM_BIN=$(HELM_BIN) vitest run"
	@status=0; HELM_BIN='$(HELM_BIN)' vitest run --reporter=default --reporter=json \
	  --outputFile.json=$(VITEST_REPORT) || status=$$?; \
	node scripts/test-summary.mjs $(VITEST_REPORT) $$status

test: lint typecheck check-docs unit ## Lint, typecheck, doc staleness and every test suite

run: $(BUILD_STAMP) ## Start the simulator and the gateway with examples/quickstart
	@bash scripts/run-quickstart.sh

bench: $(BUILD_STAMP) ## Full benchmark run (prints a markdown table)
	node bench/run.ts

bench-quick: $(BUILD_STAMP) ## Short benchmark run with the budget verdicts (about 2.5 minutes): a FAIL line says a change cost what the budget does not allow
	node bench/run.ts --quick

bench-headline: $(BUILD_STAMP) ## The headline table: the gateway beside the Node.js floor, nginx and Portkey in one run, chat and Messages API (about 16 minutes)
	node bench/run.ts --headline

bench-fleet: $(BUILD_STAMP) ## Routing across four simulator replicas with prefix caches: round robin, kube-proxy-like, least_request, prefix_affinity at 70% and 90% of capacity (about 12 minutes)
	node bench/fleet.ts

scorecard: $(BUILD_STAMP) ## The resilience scorecard: every provider fault against the gateway, Portkey and the provider directly; writes docs/resilience-scorecard.md (under 10 minutes)
	node bench/scorecard/run.ts

e2e: $(BUILD_STAMP) ## Local end-to-end lifecycle checks (processes on loopback)
	vitest run --config e2e/vitest.config.ts

image-local: $(DEPS_STAMP) ## Build the Dockerfile offline with locally assembled base images (needs a Docker engine, or root: then it installs docker.io, busybox-static and python3 when missing)
	NODE_VERSION=$(NODE_VERSION) NPM_VERSION=$(NPM_VERSION) bash e2e/images/gateway.sh

# Silent: its stdout is the two IMAGE_ lines, for a shell to read.
image-load: ## Import the image make image-local saved into a registry-less cluster's containerd, named by digest too (KIND_CLUSTER=name for kind)
	@bash scripts/image-load.sh

# e2e/k8s runs .tools/bin/helm by that path, so this target builds the pinned one.
e2e-k8s: $(BUILD_STAMP) $(TOOLS)/bin/helm ## The chart's lifecycle on a real cluster: KUBECONFIG, else kind, else a host cluster built here (skips with a message when none is possible; E2E_K8S_REQUIRED=1 fails instead)
	NODE_VERSION=$(NODE_VERSION) NPM_VERSION=$(NPM_VERSION) bash e2e/k8s/run.sh

soak: $(BUILD_STAMP) ## Longer reliability runs
	SOAK=1 vitest run test/reliability

clean: ## Remove build output, dependencies and fetched tools
	rm -rf dist node_modules .tools coverage
