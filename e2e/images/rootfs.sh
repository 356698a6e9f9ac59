# shellcheck shell=bash
# Root filesystems for images assembled on this machine, without pulling anything: a program from
# the host with the shared libraries it links, the account files, and an import into a Docker
# engine. Sourced by e2e/images/*.sh.

img_log() { printf '[images %6ss] %s\n' "$(($(date +%s) - ${IMG_T0:-$(date +%s)}))" "$*"; }
img_die() { img_log "ERROR: $*" >&2; exit 1; }

# docker_cli: the first `docker` on PATH that builds with BuildKit without a registry: one with
# the buildx plugin, or a client older than 23 (BuildKit built in; newer clients need buildx).
docker_cli() {
  local candidate major
  for candidate in $(type -ap docker); do
    if "$candidate" buildx version >/dev/null 2>&1; then echo "$candidate"; return 0; fi
    major=$("$candidate" version --format '{{.Client.Version}}' 2>/dev/null | cut -d. -f1)
    if [[ $major =~ ^[0-9]+$ ]] && ((major < 23)); then echo "$candidate"; return 0; fi
  done
  return 1
}

# rootfs_add_program ROOT SOURCE DEST: copies SOURCE to ROOT/DEST, and every shared library it
# links (as `ldd` resolves them on this host) to the same path inside ROOT, dynamic loader
# included. Symlinked library names are copied as the files they point to.
rootfs_add_program() {
  local root=$1 src=$2 dest=$3 lib
  install -D -m 0755 "$src" "$root$dest"
  while read -r lib; do
    [[ -n $lib && -e $lib ]] || continue
    [[ -e $root$lib ]] && continue
    install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
  done < <(ldd "$src" 2>/dev/null | grep -oE '(/[^ ]+\.so[^ ]*)' | sort -u)
}

# rootfs_owner ROOT PATH UID: PATH (inside ROOT) belongs to UID:UID in the image. Everything
# else belongs to root, whoever assembles the image (no chown, so no root needed).
rootfs_owner() { printf '%s %s\n' "${2#/}" "$3" >>"$1.owners"; }

# rootfs_accounts ROOT: root and the conventional nonroot user (uid/gid 65532, as distroless
# images have it), a home and a sticky /tmp.
rootfs_accounts() {
  local root=$1
  chmod 0755 "$root"
  mkdir -p "$root/etc" "$root/tmp" "$root/home/nonroot" "$root/root"
  chmod 1777 "$root/tmp"
  rootfs_owner "$root" /home/nonroot 65532
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
    install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  fi
}

# rootfs_import ROOT IMAGE [--change INSTRUCTION]...: the directory as a one-layer image in the
# Docker engine of $DOCKER_HOST (owners as rootfs_owner recorded them, a fixed mtime), and ROOT
# removed.
rootfs_import() {
  local root=$1 image=$2; shift 2
  command -v python3 >/dev/null || img_die "assembling an image needs python3 (it writes the layer with fixed owners)"
  python3 - "$root" <<'PY' | docker import "$@" - "$image" >/dev/null
import os, sys, tarfile
root = sys.argv[1]
owners = {}
if os.path.exists(root + ".owners"):
    for line in open(root + ".owners"):
        path, uid = line.split()
        owners[path] = int(uid)
def entry(info):
    rel = info.name[2:] if info.name.startswith("./") else info.name
    uid = owners.get(rel, 0)
    info.uid = info.gid = uid
    info.uname = info.gname = ""
    info.mtime = 0
    return info
with tarfile.open(fileobj=sys.stdout.buffer, mode="w|") as tar:
    tar.add(root, arcname=".", filter=entry)
PY
  rm -rf "$root" "$root.owners"
}
