#!/usr/bin/env bash
# `make image-local`: the project's own Dockerfile, built here with locally assembled base images
# (e2e/images/bases.sh) substituted through its BUILD_IMAGE and RUNTIME_IMAGE build arguments, so
# the image a cluster runs is the image the release builds. Nothing is pulled: the build runs with
# --network=none.
#
#   IMAGE=llm-gateway:local   tag of the result
#   REVISION=<git sha>        org.opencontainers.image.revision label (a different value gives a
#                             different image, and so a different digest, from the same sources)
#   IMAGE_ARCHIVE=path        where `docker save` writes the image (default e2e/.work/images/<tag>.tar)
#
# Needs a Docker engine: $DOCKER_HOST, the default socket, or (as root, with dockerd installed) a
# private dockerd that this script starts through e2e/cluster/hostk8s and stops again. Everything
# it needs is checked first, at once, and installed with apt-get as root
# (e2e/images/prerequisites.sh: IMAGE_INSTALL=0 names it instead).
# Prints IMAGE=, IMAGE_ID= and IMAGE_ARCHIVE= lines last.
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=e2e/images/rootfs.sh
source e2e/images/rootfs.sh
# shellcheck source=e2e/images/prerequisites.sh
source e2e/images/prerequisites.sh
IMG_T0=$(date +%s)
image_prerequisites e2e/.work/image-apt.log

IMAGE=${IMAGE:-llm-gateway:local}
REVISION=${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
VERSION=$(node -p 'require("./package.json").version')
IMAGE_ARCHIVE=${IMAGE_ARCHIVE:-e2e/.work/images/${IMAGE//[:\/]/_}.tar}

started_docker=0
if ! docker info >/dev/null 2>&1; then
  if [[ $(id -u) == 0 ]] && command -v dockerd >/dev/null; then
    img_log "no Docker engine reachable: starting a private dockerd (no network, no registry)"
    docker_env=$(bash e2e/cluster/hostk8s docker-up) || img_die "the private dockerd did not start"
    eval "$(grep '^export ' <<<"$docker_env")"
    started_docker=1
  else
    img_die "no Docker engine reachable (set DOCKER_HOST, or run as root with Debian's docker.io installed)"
  fi
fi
stop_docker() { if ((started_docker)); then bash e2e/cluster/hostk8s docker-down >/dev/null 2>&1 || true; fi; }
trap stop_docker EXIT

mkdir -p e2e/.work
bases=$(bash e2e/images/bases.sh)
build_image=$(sed -n 's/^BUILD_IMAGE=//p' <<<"$bases")
runtime_image=$(sed -n 's/^RUNTIME_IMAGE=//p' <<<"$bases")

builder=$(docker_cli) || img_die "no docker client can build with BuildKit (install the buildx plugin)"
img_log "docker build $IMAGE (version $VERSION, revision ${REVISION:0:12}) FROM $build_image / $runtime_image"
DOCKER_BUILDKIT=1 "$builder" build --network=none --progress=plain \
  --build-arg BUILD_IMAGE="$build_image" --build-arg BUILD_IMAGE_DIGEST= \
  --build-arg RUNTIME_IMAGE="$runtime_image" --build-arg RUNTIME_IMAGE_DIGEST= \
  --build-arg VERSION="$VERSION" --build-arg REVISION="$REVISION" \
  -t "$IMAGE" . >e2e/.work/image-build.log 2>&1 \
  || { tail -n 40 e2e/.work/image-build.log >&2; img_die "docker build failed (log: e2e/.work/image-build.log)"; }

# What the image runs is what the release runs: both programs print the package version.
for program in /app/bin/gateway.js /app/bin/sim.js; do
  out=$(docker run --rm --network=none --entrypoint /nodejs/bin/node "$IMAGE" "$program" --version)
  [[ $out == "$VERSION" ]] || img_die "$program --version in $IMAGE printed '$out', expected $VERSION"
done
user=$(docker image inspect -f '{{.Config.User}}' "$IMAGE")
[[ $user == 65532:65532 ]] || img_die "$IMAGE runs as '$user', expected 65532:65532"

mkdir -p "$(dirname "$IMAGE_ARCHIVE")"
docker save "$IMAGE" -o "$IMAGE_ARCHIVE"
img_log "built $IMAGE: $(docker image inspect -f '{{.Id}}' "$IMAGE"), $(du -h "$IMAGE_ARCHIVE" | cut -f1) saved"
echo "IMAGE=$IMAGE"
echo "IMAGE_ID=$(docker image inspect -f '{{.Id}}' "$IMAGE")"
echo "IMAGE_ARCHIVE=$IMAGE_ARCHIVE"
