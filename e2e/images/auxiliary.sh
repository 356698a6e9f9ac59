#!/usr/bin/env bash
# The real-cluster suite's other images, assembled from this machine's Debian packages (nothing is
# pulled): Redis (redis-server, for limits shared across replicas) and Prometheus (scraping the
# pods the chart's ServiceMonitor selects). Each runs as uid 65532 with no shell, so it passes the
# restricted Pod Security Standard like the gateway.
#
#   e2e/images/auxiliary.sh OUTDIR   writes OUTDIR/<name>.tar (docker save) and prints
#                                    REDIS_IMAGE=, REDIS_ARCHIVE=, PROMETHEUS_IMAGE=, PROMETHEUS_ARCHIVE=
# Needs a Docker engine at $DOCKER_HOST, and installs redis-server and prometheus with apt-get when
# they are missing (as root).
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=e2e/images/rootfs.sh
source e2e/images/rootfs.sh
IMG_T0=${IMG_T0:-$(date +%s)}
OUT=${1:?usage: auxiliary.sh OUTDIR}
mkdir -p "$OUT"

missing=()
[[ -x /usr/bin/redis-server ]] || missing+=(redis-server)
[[ -x /usr/bin/prometheus ]] || missing+=(prometheus)
if ((${#missing[@]})); then
  [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null || img_die "install ${missing[*]} (Debian/Ubuntu packages)"
  img_log "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >"$OUT/apt.log" 2>&1 || {
    apt-get update -q >>"$OUT/apt.log" 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$OUT/apt.log" 2>&1
  } || img_die "apt-get install ${missing[*]} failed (log: $OUT/apt.log)"
fi

# assemble NAME PROGRAM VERSION ENTRYPOINT_JSON: a one-layer image holding PROGRAM and its libraries.
assemble() {
  local name=$1 program=$2 version=$3 entrypoint=$4
  local image=localhost/e2e-$name:$version root
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    root=$(mktemp -d)
    rootfs_accounts "$root"
    rootfs_add_program "$root" "$program" "$program"
    mkdir -p "$root/data" && rootfs_owner "$root" /data 65532
    rootfs_import "$root" "$image" --change 'USER 65532:65532' --change 'WORKDIR /data' \
      --change "ENTRYPOINT $entrypoint"
  fi
  docker save "$image" -o "$OUT/$name.tar"
  img_log "$image ($program $version)"
  local upper
  upper=$(tr '[:lower:]' '[:upper:]' <<<"$name")
  echo "${upper}_IMAGE=$image"
  echo "${upper}_ARCHIVE=$OUT/$name.tar"
}

redis_version=$(/usr/bin/redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
prometheus_version=$(/usr/bin/prometheus --version 2>&1 | sed -n 's/^prometheus, version \([^ ]*\).*/\1/p' | tr '+' '_')
assemble redis /usr/bin/redis-server "$redis_version" '["/usr/bin/redis-server"]'
assemble prometheus /usr/bin/prometheus "$prometheus_version" '["/usr/bin/prometheus"]'
