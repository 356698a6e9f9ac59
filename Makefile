# Every target runs with the project's toolchain first on PATH: a pinned Node 24 in .tools/node
# (fetched from the npm registry only when the machine's node is older than 22) and helm in
# .tools/bin (built with `go install` for the chart tests).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

NODE_VERSION ?= 24.21.0
# npm of the locally assembled build base image (make image-local)
NPM_VERSION ?= 11.21.2
HELM_VERSION ?= v3.22.0
TOOLS := $(CURDIR)/.tools
LOCAL_NODE := $(TOOLS)/node/bin/node
NODE_ARCH := $(subst aarch64,arm64,$(subst x86_64,x64,$(shell uname -m)))

# The machine's node major version, read before .tools is put on PATH.
SYSTEM_NODE_MAJOR := $(shell node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
ifeq ($(shell [ $(SYSTEM_NODE_MAJOR) -ge 22 ] && echo modern),modern)
  NODE_BOOTSTRAP :=
else
  NODE_BOOTSTRAP := $(LOCAL_NODE)
endif

export PATH := $(TOOLS)/node/bin:$(TOOLS)/bin:$(CURDIR)/node_modules/.bin:$(PATH)

DEPS_STAMP := node_modules/.deps-stamp
BUILD_STAMP := dist/.build-stamp
SOURCES := $(shell find src -name '*.ts' 2>/dev/null)

.PHONY: help run test build lint typecheck unit bench bench-quick e2e e2e-k8s image-local soak clean docs check-docs node-info helm chart-golden

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

$(LOCAL_NODE):
	@echo "node $(SYSTEM_NODE_MAJOR) is older than 22: fetching Node $(NODE_VERSION) from the npm registry into .tools/node"
	@rm -rf $(TOOLS)/node $(TOOLS)/node-pack && mkdir -p $(TOOLS)/node $(TOOLS)/node-pack
	@cd $(TOOLS)/node-pack && npm pack --silent node-linux-$(NODE_ARCH)@$(NODE_VERSION) >/dev/null
	@tar -xzf $(TOOLS)/node-pack/node-linux-$(NODE_ARCH)-$(NODE_VERSION).tgz -C $(TOOLS)/node --strip-components=1 package/bin/node package/LICENSE
	@rm -rf $(TOOLS)/node-pack
	@$(LOCAL_NODE) --version

node-info: $(NODE_BOOTSTRAP) ## Show which node every target uses
	@echo "node $$(node --version) at $$(command -v node); npm $$(npm --version)"

$(DEPS_STAMP): package.json package-lock.json $(NODE_BOOTSTRAP)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(BUILD_STAMP): $(DEPS_STAMP) $(SOURCES) tsconfig.build.json tsconfig.base.json
	tsc -p tsconfig.build.json
	@touch $@

build: $(BUILD_STAMP) ## Compile TypeScript into dist/

$(TOOLS)/bin/helm:
	@echo "building helm $(HELM_VERSION) with go install into .tools/bin"
	@mkdir -p $(TOOLS)/bin
	GOBIN=$(TOOLS)/bin GOFLAGS=-mod=mod go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

helm: $(TOOLS)/bin/helm ## Install the pinned helm into .tools/bin

chart-golden: $(BUILD_STAMP) $(TOOLS)/bin/helm ## Regenerate the chart's values.schema.json, golden renders and manifests/
	node test/chart/regenerate.ts

lint: $(DEPS_STAMP) ## ESLint and Prettier
	eslint .
	prettier --check .

typecheck: $(DEPS_STAMP) ## Type-check sources, tests and benchmarks
	tsc -p tsconfig.json

docs: $(BUILD_STAMP) ## Regenerate docs/configuration.md from the config schema
	node bin/gateway.js schema --markdown > docs/configuration.md

check-docs: $(BUILD_STAMP) ## Fail when docs/configuration.md is stale
	@node bin/gateway.js schema --markdown | diff -u docs/configuration.md - \
	  || { echo "docs/configuration.md is stale: run 'make docs'"; exit 1; }

unit: $(BUILD_STAMP) $(TOOLS)/bin/helm ## Run every vitest suite, the local e2e included (prints a plain "tests: N passed, N failed" line)
	@mkdir -p test/.tmp
	vitest run --reporter=default --reporter=json --outputFile.json=test/.tmp/vitest-report.json || true
	@node scripts/test-summary.mjs test/.tmp/vitest-report.json

test: lint typecheck check-docs unit ## Lint, typecheck, doc staleness and every test suite

run: $(BUILD_STAMP) ## Start the simulator and the gateway with examples/quickstart
	@bash scripts/run-quickstart.sh

bench: $(BUILD_STAMP) ## Full benchmark run (prints a markdown table)
	node bench/run.ts

bench-quick: $(BUILD_STAMP) ## Short benchmark run (under two minutes)
	node bench/run.ts --quick

e2e: $(BUILD_STAMP) ## Local end-to-end lifecycle checks (processes on loopback)
	vitest run --config e2e/vitest.config.ts

image-local: $(DEPS_STAMP) ## Build the Dockerfile offline with locally assembled base images (needs a Docker engine, or root and Debian's docker.io)
	NODE_VERSION=$(NODE_VERSION) NPM_VERSION=$(NPM_VERSION) bash e2e/images/gateway.sh

e2e-k8s: $(BUILD_STAMP) $(TOOLS)/bin/helm ## The chart's lifecycle on a real cluster: KUBECONFIG, else kind, else a host cluster built here (skips with a message when none is possible; E2E_K8S_REQUIRED=1 fails instead)
	NODE_VERSION=$(NODE_VERSION) NPM_VERSION=$(NPM_VERSION) bash e2e/k8s/run.sh

soak: $(BUILD_STAMP) ## Longer reliability runs
	SOAK=1 vitest run test/reliability

clean: ## Remove build output, dependencies and fetched tools
	rm -rf dist node_modules .tools coverage
