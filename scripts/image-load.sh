#!/usr/bin/env bash
# `make image-load`: the image `make image-local` saved, imported into the containerd of a cluster
# that has no registry, and named by its digest as well as its tag, so the chart can pin it by
# digest with `image.pullPolicy: Never`.
#
# containerd names an imported archive only by its tags. A pod pinned by digest asks for
# REPOSITORY@sha256:..., and with pullPolicy Never the kubelet looks for an image of exactly that
# name: without the second name the pod stays in ErrImageNeverPull. The digest is the one
# containerd gives the imported image (its manifest's), not the Docker image ID.
#
#   IMAGE=llm-gateway:local      the tag make image-local built
#   IMAGE_ARCHIVE=path           its archive (default e2e/.work/images/<tag>.tar, as make image-local writes)
#   KIND_CLUSTER=name            import into every node of that kind cluster (through docker exec)
#   CONTAINERD_ADDRESS=socket    otherwise into this machine's containerd
#                                (default /run/containerd/containerd.sock; k3s: /run/k3s/containerd/containerd.sock)
#
# Progress goes to stderr; the last lines on stdout are IMAGE_REPOSITORY=... and IMAGE_DIGEST=...,
# the chart's image.repository and image.digest.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

log() { printf '[image-load] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

IMAGE=${IMAGE:-llm-gateway:local}
IMAGE_ARCHIVE=${IMAGE_ARCHIVE:-e2e/.work/images/${IMAGE//[:\/]/_}.tar}
CONTAINERD_ADDRESS=${CONTAINERD_ADDRESS:-/run/containerd/containerd.sock}
KIND_CLUSTER=${KIND_CLUSTER:-}
case $(uname -m) in aarch64) PLATFORM=linux/arm64 ;; *) PLATFORM=linux/amd64 ;; esac

# The name containerd and the kubelet give IMAGE: Docker Hub's host and library/ made explicit.
reference=$IMAGE
first=${reference%%/*}
if [[ $reference != */* ]]; then
  reference=docker.io/library/$reference
elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then
  reference=docker.io/$reference
fi
[[ ${reference##*/} == *:* ]] || die "IMAGE=$IMAGE has no tag (make image-local tags what it builds, llm-gateway:local by default)"
repository=${reference%:*}

problems=()
[[ -f $IMAGE_ARCHIVE ]] || problems+=("no image archive at $IMAGE_ARCHIVE: run make image-local first (with the same IMAGE)")
if [[ -n $KIND_CLUSTER ]]; then
  command -v kind >/dev/null || problems+=("KIND_CLUSTER is set but kind is not on PATH")
  command -v docker >/dev/null || problems+=("KIND_CLUSTER is set but docker is not on PATH")
else
  command -v ctr >/dev/null || problems+=("ctr is not on PATH (Debian package containerd)")
  [[ -S $CONTAINERD_ADDRESS ]] ||
    problems+=("no containerd socket at $CONTAINERD_ADDRESS (set CONTAINERD_ADDRESS; it usually needs root)")
fi
if ((${#problems[@]})); then
  for problem in "${problems[@]}"; do log "$problem"; done
  exit 1
fi

# node_ctr ARGS...: ctr in the Kubernetes namespace of every node's containerd.
nodes=()
if [[ -n $KIND_CLUSTER ]]; then
  # A cluster of several control planes has a load balancer container too, with no containerd.
  mapfile -t nodes < <(kind get nodes --name "$KIND_CLUSTER" | grep -v -- '-external-load-balancer$')
  ((${#nodes[@]})) || die "kind cluster $KIND_CLUSTER has no nodes"
fi
node_ctr() {
  if [[ -n $KIND_CLUSTER ]]; then
    local node
    for node in "${nodes[@]}"; do docker exec -i "$node" ctr -n k8s.io "$@"; done
  else
    ctr --address "$CONTAINERD_ADDRESS" -n k8s.io "$@"
  fi
}
first_node_ctr() {
  if [[ -n $KIND_CLUSTER ]]; then docker exec -i "${nodes[0]}" ctr -n k8s.io "$@"; else node_ctr "$@"; fi
}

# The name is dropped first (the image's content stays), so the digest read after the import is the
# archive's, never an older image's of the same name when the archive holds another tag.
node_ctr images rm "$reference" >/dev/null 2>&1 || true
if [[ -n $KIND_CLUSTER ]]; then
  log "importing $IMAGE_ARCHIVE into the ${#nodes[@]} node(s) of kind cluster $KIND_CLUSTER"
  for node in "${nodes[@]}"; do
    docker exec -i "$node" ctr -n k8s.io images import --platform "$PLATFORM" - <"$IMAGE_ARCHIVE" >/dev/null
  done
else
  log "importing $IMAGE_ARCHIVE into the containerd at $CONTAINERD_ADDRESS"
  node_ctr images import --platform "$PLATFORM" "$IMAGE_ARCHIVE" >/dev/null
fi
digest=$(first_node_ctr images ls "name==$reference" | awk 'NR > 1 {print $3}' | head -n 1)
[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || die "the archive holds no image named $reference (IMAGE must be the tag it was built with)"
node_ctr images tag --force "$reference" "$repository@$digest" >/dev/null
log "$reference is also named $repository@$digest"
echo "IMAGE_REPOSITORY=$repository"
echo "IMAGE_DIGEST=$digest"
