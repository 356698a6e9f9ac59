# shellcheck shell=bash
# What `make image-local` needs from the machine, checked all at once before any work starts, so a
# missing piece is never found only after another one was fixed. Sourced by e2e/images/gateway.sh
# after rootfs.sh (it uses docker_cli, img_log and img_die).
#
#   IMAGE_INSTALL=0         name what is missing instead of installing it (as root, with apt-get,
#                           the default is to install it)
#   IMAGE_BUSYBOX=path      the static busybox the build base's shell is copied from (/bin/busybox)

IMAGE_BUSYBOX=${IMAGE_BUSYBOX:-/bin/busybox}

# missing_prerequisites: one "PACKAGE<tab>WHAT" line per missing piece (Debian package names).
missing_prerequisites() {
  if ! docker info >/dev/null 2>&1 && ! { [[ $(id -u) == 0 ]] && command -v dockerd >/dev/null; }; then
    printf 'docker.io\ta Docker engine: none answers at %s, and a private one needs root and dockerd\n' \
      "${DOCKER_HOST:-the default socket}"
  fi
  if ! docker_cli >/dev/null; then
    # Where the distribution packages buildx, its docker.io client is 23 or later and needs it;
    # Debian 12 has no such package, and its docker.io client (20.10) has BuildKit built in.
    local buildx=''
    apt-cache show docker-buildx >/dev/null 2>&1 && buildx=docker-buildx
    if command -v docker >/dev/null; then
      printf '%s\ta docker client that builds with BuildKit: %s is version 23 or later without the buildx plugin\n' \
        "${buildx:-docker.io}" "$(command -v docker)"
    else
      printf 'docker.io%s\ta docker client that builds with BuildKit\n' "${buildx:+ $buildx}"
    fi
  fi
  if ! static_program "$IMAGE_BUSYBOX"; then
    printf 'busybox-static\ta statically linked busybox at %s (the build base'"'"'s shell)\n' "$IMAGE_BUSYBOX"
  fi
  command -v python3 >/dev/null || printf 'python3\tpython3 (it writes the base images'"'"' layers)\n'
  return 0
}

# static_program PATH: an executable that needs no shared library (a dynamically linked busybox
# would not run in the build base, which has none). ldd says so in one of two ways, the second for
# a static position-independent program.
static_program() {
  [[ -x $1 ]] || return 1
  local out
  out=$(ldd "$1" 2>&1) || true
  [[ $out == *"not a dynamic executable"* || $out == *"statically linked"* ]]
}

# packages_of MISSING: the Debian packages of missing_prerequisites' lines, once each, space-separated.
packages_of() {
  cut -f1 <<<"$1" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# image_prerequisites LOG: returns when the machine has everything. As root with apt-get (and
# IMAGE_INSTALL not 0) it installs what is missing first; otherwise it names all of it and exits 1.
image_prerequisites() {
  local log=$1 missing packages
  missing=$(missing_prerequisites)
  [[ -z $missing ]] && return 0
  packages=$(packages_of "$missing")
  if [[ ${IMAGE_INSTALL:-1} != 0 && $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    img_log "installing what the build needs: $packages (apt-get; IMAGE_INSTALL=0 names it instead)"
    mkdir -p "$(dirname "$log")"
    # shellcheck disable=SC2086 # one word per package
    {
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $packages >"$log" 2>&1 || {
        apt-get update -q >>"$log" 2>&1 &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $packages >>"$log" 2>&1
      }
    } || img_die "apt-get install $packages failed (log: $log)"
    missing=$(missing_prerequisites)
    [[ -z $missing ]] && return 0
    packages=$(packages_of "$missing")
  fi
  {
    echo "make image-local needs what this machine lacks:"
    while IFS=$'\t' read -r package what; do
      if [[ $package == *" "* ]]; then echo "  - $what (Debian packages $package)"; else echo "  - $what (Debian package $package)"; fi
    done <<<"$missing"
    if [[ $(id -u) == 0 ]]; then
      echo "Install it with: apt-get install -y $packages"
    else
      echo "Install it as root (apt-get install -y $packages), or run make image-local as root, which installs it;"
      echo "or point DOCKER_HOST at a Docker engine you may use."
    fi
  } >&2
  exit 1
}
