#!/usr/bin/env bash
# `make e2e-kind`: the gateway on a kind cluster, driven by e2e/kind/lifecycle.kind.ts.
#
# Needs a Docker engine and kind. Where either is missing it prints SKIPPED and exits 0, so that
# `make e2e-kind` on a laptop without Docker says so instead of failing; it is not part of
# `make test`. CI (.github/workflows/e2e.yaml) sets E2E_KIND_REQUIRED=1, which turns the skip into
# a failure.
#
#   KIND_CLUSTER=name      use (or create) this cluster (default gateway-e2e)
#   KIND_NODE_IMAGE=ref    node image for a new cluster (default: kind's own)
#   E2E_KIND_KEEP=1        keep the cluster and the release afterwards
set -euo pipefail
cd "$(dirname "$0")/../.."

skip() {
  echo "SKIPPED: kind e2e needs a Docker engine and kind; it runs in .github/workflows/e2e.yaml ($1)"
  if [ "${E2E_KIND_REQUIRED:-0}" = "1" ]; then
    echo "E2E_KIND_REQUIRED=1: a skip is a failure here" >&2
    exit 1
  fi
  exit 0
}

command -v docker >/dev/null 2>&1 || skip "no docker client"
docker info >/dev/null 2>&1 || skip "no Docker engine reachable"
command -v kind >/dev/null 2>&1 || skip "no kind on PATH (go install sigs.k8s.io/kind@v0.33.0)"

[ -x .tools/bin/helm ] || make helm

CLUSTER=${KIND_CLUSTER:-gateway-e2e}
IMAGE=llm-gateway:e2e
WORK=e2e/.work/kind
mkdir -p "$WORK"
export KUBECONFIG="$PWD/$WORK/kubeconfig"

created=0
if ! kind get clusters | grep -qx "$CLUSTER"; then
  kind create cluster --name "$CLUSTER" ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"} --wait 180s
  created=1
fi
kind get kubeconfig --name "$CLUSTER" > "$KUBECONFIG"

cleanup() {
  if [ "${E2E_KIND_KEEP:-0}" != "1" ] && [ "$created" = "1" ]; then
    kind delete cluster --name "$CLUSTER" || true
  fi
}
trap cleanup EXIT

echo "building $IMAGE"
docker build --build-arg VERSION="$(node -p 'require("./package.json").version')" \
  --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" -t "$IMAGE" .
kind load docker-image "$IMAGE" --name "$CLUSTER"

E2E_KIND_IMAGE="$IMAGE" ./node_modules/.bin/vitest run --config e2e/kind/vitest.config.ts
