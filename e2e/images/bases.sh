#!/usr/bin/env bash
# The two base images the Dockerfile takes through BUILD_IMAGE and RUNTIME_IMAGE, assembled on this
# machine so the project's own Dockerfile builds with no registry:
#
#   localhost/llm-gateway-build-base:<node>    Node.js and npm on busybox (the RUN steps need a
#                                              shell), with an npm cache that holds every package
#                                              of package-lock.json and npm set to offline mode
#   localhost/llm-gateway-runtime-base:<node>  laid out like distroless nodejs24-debian12:nonroot:
#                                              /nodejs/bin/node and the C libraries it links, user
#                                              65532, no shell, no package manager
#
# Node.js comes from the npm registry's node-linux-<arch> package at NODE_VERSION (the version the
# Makefile pins), npm from the registry's npm package at NPM_VERSION; both are cached under
# ${XDG_CACHE_HOME:-~/.cache}/llm-gateway/images. Needs a Docker engine at $DOCKER_HOST.
#
#   e2e/images/bases.sh      prints BUILD_IMAGE=... and RUNTIME_IMAGE=... lines
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=e2e/images/rootfs.sh
source e2e/images/rootfs.sh
IMG_T0=${IMG_T0:-$(date +%s)}

: "${NODE_VERSION:?NODE_VERSION is not set (the Makefile pins it)}"
: "${NPM_VERSION:?NPM_VERSION is not set (the Makefile pins it)}"
ARCH=$(uname -m)
case $ARCH in
  x86_64) NODE_ARCH=x64 ;;
  aarch64) NODE_ARCH=arm64 ;;
  *) img_die "no Node.js package for $ARCH" ;;
esac
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/llm-gateway/images
BUILD_BASE=localhost/llm-gateway-build-base:$NODE_VERSION
RUNTIME_BASE=localhost/llm-gateway-runtime-base:$NODE_VERSION
mkdir -p "$CACHE"

# fetch_package NAME VERSION DIR: an npm registry package unpacked into DIR (cached).
fetch_package() {
  local name=$1 version=$2 dir=$3
  [[ -f $dir/.complete ]] && return 0
  img_log "fetching $name@$version from the npm registry"
  rm -rf "$dir" "$dir.pack" && mkdir -p "$dir" "$dir.pack"
  (cd "$dir.pack" && npm pack --silent "$name@$version" >/dev/null)
  tar -xzf "$dir.pack"/*.tgz -C "$dir" --strip-components=1
  rm -rf "$dir.pack"
  touch "$dir/.complete"
}

NODE_DIR=$CACHE/node-$NODE_VERSION-$NODE_ARCH
NPM_DIR=$CACHE/npm-$NPM_VERSION
fetch_package "node-linux-$NODE_ARCH" "$NODE_VERSION" "$NODE_DIR"
fetch_package npm "$NPM_VERSION" "$NPM_DIR"
NODE_BIN=$NODE_DIR/bin/node
[[ $("$NODE_BIN" --version) == "v$NODE_VERSION" ]] || img_die "$NODE_BIN is not Node.js $NODE_VERSION"

# The npm cache of the build base: every package the lockfile names, fetched once per lockfile by
# the same npm the image runs.
LOCK_SUM=$(sha256sum package-lock.json | cut -c1-16)
NPM_CACHE=$CACHE/npm-cache
if [[ $(cat "$NPM_CACHE/.lock-sum" 2>/dev/null) != "$LOCK_SUM" ]]; then
  img_log "filling the npm cache for package-lock.json ($LOCK_SUM)"
  scratch=$(mktemp -d)
  cp package.json package-lock.json "$scratch/"
  (cd "$scratch" && "$NODE_BIN" "$NPM_DIR/bin/npm-cli.js" ci --cache "$NPM_CACHE" --ignore-scripts \
    --no-audit --no-fund --loglevel=error >/dev/null)
  rm -rf "$scratch"
  echo "$LOCK_SUM" >"$NPM_CACHE/.lock-sum"
fi

have_image() { docker image inspect "$1" >/dev/null 2>&1; }
# The tag also names the lockfile the cache was filled from: a new lockfile means a new build base.
BUILD_BASE=$BUILD_BASE-$LOCK_SUM

if ! have_image "$RUNTIME_BASE"; then
  root=$(mktemp -d)
  rootfs_accounts "$root"
  rootfs_add_program "$root" "$NODE_BIN" /nodejs/bin/node
  [[ ! -e $root/bin/sh ]] || img_die "the runtime base must not have a shell"
  rootfs_import "$root" "$RUNTIME_BASE" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'USER 65532:65532' \
    --change 'WORKDIR /home/nonroot' \
    --change 'ENTRYPOINT ["/nodejs/bin/node"]'
  img_log "built $RUNTIME_BASE"
fi

if ! have_image "$BUILD_BASE"; then
  root=$(mktemp -d)
  rootfs_accounts "$root"
  busybox=${IMAGE_BUSYBOX:-/bin/busybox}
  [[ -x $busybox ]] || img_die "the build base needs a static busybox at $busybox (Debian: busybox-static)"
  install -D -m 0755 "$busybox" "$root/bin/busybox"
  for applet in $("$busybox" --list); do
    [[ $applet == busybox ]] || ln -sf busybox "$root/bin/$applet"
  done
  mkdir -p "$root/usr/bin" && ln -sf /bin/busybox "$root/usr/bin/env"
  rootfs_add_program "$root" "$NODE_BIN" /usr/local/bin/node
  mkdir -p "$root/usr/local/lib/node_modules"
  cp -a "$NPM_DIR" "$root/usr/local/lib/node_modules/npm"
  rm -f "$root/usr/local/lib/node_modules/npm/.complete"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  mkdir -p "$root/var/cache"
  cp -a "$NPM_CACHE" "$root/var/cache/npm"
  rootfs_import "$root" "$BUILD_BASE" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV npm_config_cache=/var/cache/npm' \
    --change 'ENV npm_config_offline=true' \
    --change 'ENV npm_config_update_notifier=false' \
    --change 'WORKDIR /' \
    --change 'CMD ["sh"]'
  img_log "built $BUILD_BASE"
fi

echo "BUILD_IMAGE=$BUILD_BASE"
echo "RUNTIME_IMAGE=$RUNTIME_BASE"
