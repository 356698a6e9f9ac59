#!/usr/bin/env bash
# `make e2e-k8s`: the chart's lifecycle on a real Kubernetes API server (e2e/k8s/*.k8s.ts).
#
# Which cluster, in this order:
#   1. the current KUBECONFIG, when it is set and the API server answers;
#   2. a kind cluster, where a Docker engine and kind work (created here, deleted afterwards);
#   3. the host cluster (e2e/cluster/hostk8s: Kubernetes built from source, run on this machine as
#      root, torn down afterwards), on Linux as root.
# When none is possible it says why and exits 0, or 1 with E2E_K8S_REQUIRED=1 (CI): never a silent
# pass.
#
# Images reach the cluster without a registry: built here (e2e/images), then imported into the
# node's containerd (hostk8s, kind). A cluster of another kind needs E2E_K8S_REGISTRY=host/path,
# a registry the nodes pull from and `docker push` reaches.
#
#   E2E_K8S_REQUIRED=1    fail instead of skipping when no cluster is possible
#   E2E_K8S_KEEP=1        keep the namespaces (and a cluster this script started) afterwards
#   E2E_K8S_PROVIDER=...  force kubeconfig | kind | hostk8s
#   KIND_CLUSTER, KIND_NODE_IMAGE   name and node image of a kind cluster created here
#   E2E_K8S_TESTS=...     vitest filter (file name part) to run a subset
#   E2E_K8S_WAIT_SECS=N   wait up to N s for another run's host cluster to go down (default 1500)
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
WORK=$ROOT/e2e/.work/k8s
mkdir -p "$WORK"
T0=$(date +%s)
phase() { printf '[e2e-k8s %5ss] %s\n' "$(($(date +%s) - T0))" "$*"; }
fail() { phase "FAILED: $*" >&2; exit 1; }

no_cluster() {
  phase "no Kubernetes cluster is possible here: $1"
  if [[ ${E2E_K8S_REQUIRED:-0} == 1 ]]; then
    echo "E2E_K8S_REQUIRED=1: the real-cluster suite could not run, and that is a failure" >&2
    exit 1
  fi
  echo "SKIPPED: the real-cluster suite did not run (set KUBECONFIG, install Docker and kind, or run as root on Linux)"
  exit 0
}

HOSTK8S=(bash "$ROOT/e2e/cluster/hostk8s")
export HOSTK8S_DIR=${HOSTK8S_DIR:-/tmp/hostk8s}

# One host cluster fits on a machine (its bridge, ports and state directory are fixed). Another
# run's cluster, such as a second checkout's CI, is waited for and never torn down from here; one
# left behind by a killed run (its bridge up, no control-plane process alive) is cleared.
wait_for_host_cluster() {
  local waited=0 limit=${E2E_K8S_WAIT_SECS:-1500}
  while ip link show hostk8s0 >/dev/null 2>&1; do
    if ! pgrep -x kube-apiserver >/dev/null && ! pgrep -x etcd >/dev/null; then
      phase "clearing a host cluster left behind by a run that was stopped (bridge hostk8s0 up, no control plane)"
      "${HOSTK8S[@]}" down >"$WORK/hostk8s-stale-down.log" 2>&1 || true
      ip link show hostk8s0 >/dev/null 2>&1 &&
        fail "bridge hostk8s0 is left over from a cluster outside $HOSTK8S_DIR: run 'e2e/cluster/hostk8s down' with its HOSTK8S_DIR"
      return 0
    fi
    ((waited < limit)) || fail "another host cluster stayed up for ${limit}s (E2E_K8S_WAIT_SECS); stop it with 'e2e/cluster/hostk8s down'"
    ((waited % 60 == 0)) && phase "another host cluster is up on this machine; waiting for it to go down (${waited}s of ${limit}s)"
    sleep 5
    waited=$((waited + 5))
  done
}

# ---------------------------------------------------------------------------------------- cluster
provider=${E2E_K8S_PROVIDER:-}
if [[ -z $provider ]]; then
  if [[ -n ${KUBECONFIG:-} ]]; then
    provider=kubeconfig
  elif command -v kind >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    provider=kind
  elif [[ $(uname -s) == Linux && $(id -u) == 0 ]]; then
    provider=hostk8s
  else
    why="KUBECONFIG is not set;"
    command -v kind >/dev/null 2>&1 || why+=" kind is not installed;"
    docker info >/dev/null 2>&1 || why+=" no Docker engine answers;"
    why+=" the host cluster needs Linux and root"
    no_cluster "$why"
  fi
fi

started_cluster=0
kind_cluster=${KIND_CLUSTER:-gateway-e2e}
cleanup() {
  local rc=$?
  set +e
  if [[ ${E2E_K8S_KEEP:-0} == 1 ]]; then
    phase "E2E_K8S_KEEP=1: leaving the cluster and the namespaces in place (KUBECONFIG=$KUBECONFIG)"
  elif ((started_cluster)); then
    phase "tearing down the $provider cluster"
    case $provider in
      kind) kind delete cluster --name "$kind_cluster" >/dev/null 2>&1 ;;
      hostk8s) "${HOSTK8S[@]}" down >"$WORK/hostk8s-down.log" 2>&1 || tail -n 20 "$WORK/hostk8s-down.log" ;;
    esac
  fi
  phase "done (exit $rc)"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

case $provider in
  kubeconfig)
    [[ -n ${KUBECONFIG:-} ]] || fail "E2E_K8S_PROVIDER=kubeconfig needs KUBECONFIG"
    ;;
  kind)
    export KUBECONFIG=$WORK/kind-kubeconfig
    if ! kind get clusters 2>/dev/null | grep -qx "$kind_cluster"; then
      phase "creating kind cluster $kind_cluster ${KIND_NODE_IMAGE:+($KIND_NODE_IMAGE)}"
      kind create cluster --name "$kind_cluster" ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"} --wait 180s
      started_cluster=1
    fi
    kind get kubeconfig --name "$kind_cluster" >"$KUBECONFIG"
    ;;
  hostk8s)
    phase "building Kubernetes and the cluster's images (cached after the first run: several minutes cold)"
    "${HOSTK8S[@]}" setup 2>&1 | sed -u 's/^/  /'
    wait_for_host_cluster
    phase "starting the host cluster"
    started_cluster=1
    "${HOSTK8S[@]}" up >"$WORK/hostk8s-up.log" 2>&1 || { sed -u 's/^/  /' "$WORK/hostk8s-up.log"; fail "hostk8s up"; }
    sed -u 's/^/  /' "$WORK/hostk8s-up.log" | grep -v '^  export'
    eval "$(grep '^export ' "$WORK/hostk8s-up.log")"
    ;;
  *) fail "unknown E2E_K8S_PROVIDER=$provider" ;;
esac
export KUBECONFIG
if ! command -v kubectl >/dev/null 2>&1; then
  [[ $provider == kubeconfig ]] && no_cluster "KUBECONFIG is set but kubectl is not on PATH"
  fail "kubectl is not on PATH"
fi
server_version=$( (kubectl version -o json --request-timeout=10s 2>/dev/null || true) |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{console.log(JSON.parse(s).serverVersion.gitVersion)}catch{}})')
[[ -n $server_version ]] || {
  [[ $provider == kubeconfig ]] && no_cluster "the API server of KUBECONFIG=$KUBECONFIG does not answer"
  fail "the API server does not answer"
}
phase "cluster up: $provider, Kubernetes $server_version"
# A KUBECONFIG of a kind or host cluster: images are imported into its nodes like ours.
if [[ $provider == kubeconfig && -z ${E2E_K8S_REGISTRY:-} ]]; then
  context=$(kubectl config current-context 2>/dev/null || true)
  case $context in
    kind-*) provider=kind; kind_cluster=${context#kind-} ;;
    hostk8s) provider=hostk8s ;;
    *) fail "KUBECONFIG names context '$context': set E2E_K8S_REGISTRY to a registry its nodes pull from" ;;
  esac
fi

# ----------------------------------------------------------------------------------------- images
# The Docker engine that builds: the one at hand, or the host cluster's private dockerd.
if ! docker info >/dev/null 2>&1; then
  [[ $provider == hostk8s ]] || fail "building the image needs a Docker engine"
  docker_env=$("${HOSTK8S[@]}" docker-up) || fail "the host cluster's dockerd did not start (log: $HOSTK8S_DIR/logs/dockerd.log)"
  eval "$(grep '^export ' <<<"$docker_env")"
fi

# load_image TAR REFERENCE: the image archive into the nodes' containerd, also named
# REPOSITORY@DIGEST (the reference a pod spec pinned by digest uses), and the digest printed: the
# documented registry-less install (make image-load), run as a user runs it.
load_image() {
  local tar=$1 ref=$2 out
  case $provider in
    hostk8s) out=$(KIND_CLUSTER='' IMAGE=$ref IMAGE_ARCHIVE=$tar \
      CONTAINERD_ADDRESS=$HOSTK8S_DIR/containerd/containerd.sock make --no-print-directory image-load) ;;
    kind) out=$(IMAGE=$ref IMAGE_ARCHIVE=$tar KIND_CLUSTER=$kind_cluster make --no-print-directory image-load) ;;
  esac || fail "make image-load of $ref"
  [[ $(sed -n 's/^IMAGE_REPOSITORY=//p' <<<"$out") == "${ref%:*}" ]] || fail "make image-load named $ref otherwise: $out"
  sed -n 's/^IMAGE_DIGEST=//p' <<<"$out"
}

# push_image TAG: for a cluster of another kind, the image goes through E2E_K8S_REGISTRY and the
# digest is the one the registry reports.
push_image() {
  local remote=$E2E_K8S_REGISTRY/llm-gateway:$2
  docker tag "$1" "$remote" && docker push "$remote" >/dev/null
  docker image inspect -f '{{join .RepoDigests "\n"}}' "$remote" | sed -n "s|^$E2E_K8S_REGISTRY/llm-gateway@||p" | head -n 1
}

REPOSITORY=docker.io/library/llm-gateway
declare -A DIGEST
for variant in a b; do
  phase "building image llm-gateway:e2e-$variant from the Dockerfile (revision e2e-$variant)"
  out=$(IMAGE=llm-gateway:e2e-$variant REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)-e2e-$variant" \
    IMAGE_ARCHIVE="$WORK/llm-gateway-e2e-$variant.tar" bash e2e/images/gateway.sh | tee "$WORK/image-$variant.log")
  grep -v -E '^(IMAGE|IMAGE_ID|IMAGE_ARCHIVE)=' <<<"$out" | sed -u 's/^/  /'
  if [[ -n ${E2E_K8S_REGISTRY:-} ]]; then
    REPOSITORY=$E2E_K8S_REGISTRY/llm-gateway
    DIGEST[$variant]=$(push_image "llm-gateway:e2e-$variant" "e2e-$variant")
  else
    DIGEST[$variant]=$(load_image "$WORK/llm-gateway-e2e-$variant.tar" "$REPOSITORY:e2e-$variant")
  fi
  [[ ${DIGEST[$variant]} =~ ^sha256:[0-9a-f]{64}$ ]] || fail "no digest for llm-gateway:e2e-$variant in the cluster"
  phase "image llm-gateway:e2e-$variant in the cluster as $REPOSITORY@${DIGEST[$variant]}"
done
[[ ${DIGEST[a]} != "${DIGEST[b]}" ]] || fail "the two builds have the same digest"

phase "assembling the Redis and Prometheus images from the host's packages"
aux=$(bash e2e/images/auxiliary.sh "$WORK")
grep -v -E '^[A-Z_]+=' <<<"$aux" | sed -u 's/^/  /'
for name in REDIS PROMETHEUS; do
  image=$(sed -n "s/^${name}_IMAGE=//p" <<<"$aux")
  if [[ -n ${E2E_K8S_REGISTRY:-} ]]; then
    remote=$E2E_K8S_REGISTRY/${image#localhost/}
    docker tag "$image" "$remote" && docker push "$remote" >/dev/null
    image=$remote
  else
    load_image "$(sed -n "s/^${name}_ARCHIVE=//p" <<<"$aux")" "$image" >/dev/null
  fi
  export "E2E_K8S_${name}_IMAGE=$image"
done

phase "Prometheus Operator CRDs"
CRDS=$WORK/crds
bash scripts/monitoring-crds.sh "$CRDS" | sed -u 's/^/  /'

[[ -x .tools/bin/helm ]] || make --no-print-directory helm
phase "running the lifecycle suite"
export E2E_K8S_REPOSITORY=$REPOSITORY E2E_K8S_DIGEST_A=${DIGEST[a]} E2E_K8S_DIGEST_B=${DIGEST[b]}
export E2E_K8S_CRDS=$CRDS E2E_K8S_PROVIDER_NAME=$provider E2E_K8S_SERVER_VERSION=$server_version
export E2E_K8S_T0=$T0
rm -f "$WORK/figures.jsonl"
./node_modules/.bin/vitest run --config e2e/k8s/vitest.config.ts ${E2E_K8S_TESTS:+"$E2E_K8S_TESTS"}
