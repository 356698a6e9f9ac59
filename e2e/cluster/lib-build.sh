# shellcheck shell=bash
# Build helpers for hostk8s (sourced by ./hostk8s). Builds Kubernetes, CoreDNS,
# a static pause binary and the local OCI image tarballs, all cached under
# $RK_CACHE so a second `setup` is instant.

rk_go() {
  local go=${GO:-}
  if [[ -z $go ]]; then
    if command -v go >/dev/null 2>&1; then go=$(command -v go)
    elif [[ -x /usr/local/go/bin/go ]]; then go=/usr/local/go/bin/go
    else die "no Go toolchain found (set GO=/path/to/go)"; fi
  fi
  "$go" "$@"
}

rk_apt_install() { # [EXTRA_PACKAGE...]
  local pkgs=(containerd runc etcd-server containernetworking-plugins iptables conntrack
              busybox-static openssl curl ca-certificates iproute2 util-linux "$@")
  [[ ${HOSTK8S_WITH_DOCKER:-1} == 1 ]] && pkgs+=(docker.io)
  # the image scripts write layers with python3
  command -v python3 >/dev/null || pkgs+=(python3)
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then log "apt: all packages present"; return 0; fi
  log "apt: installing ${missing[*]}"
  if [[ ! -e /var/lib/apt/lists/lock ]] || [[ -z $(ls /var/lib/apt/lists/ 2>/dev/null | grep -v -e lock -e partial) ]]; then
    apt-get update -q >"$RK_CACHE/apt-update.log" 2>&1 || die "apt-get update failed (see $RK_CACHE/apt-update.log)"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
    >"$RK_CACHE/apt-install.log" 2>&1 || {
      apt-get update -q >"$RK_CACHE/apt-update.log" 2>&1
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
        >"$RK_CACHE/apt-install.log" 2>&1 || die "apt-get install failed (see $RK_CACHE/apt-install.log)"
    }
  log "apt: done"
}

rk_build_k8s() {
  local want=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy)
  local b ok=1
  for b in "${want[@]}"; do [[ -x $RK_BIN/$b ]] || ok=0; done
  if ((ok)); then log "kubernetes $K8S_VERSION binaries cached"; return 0; fi
  local src=$RK_CACHE/build/k8s-$K8S_VERSION
  mkdir -p "$src" "$RK_BIN"
  log "kubernetes: resolving module k8s.io/kubernetes@$K8S_VERSION"
  local modjson gomod
  modjson=$(cd "$src" && rk_go mod download -json "k8s.io/kubernetes@$K8S_VERSION") || die "go mod download k8s.io/kubernetes failed"
  gomod=$(printf '%s\n' "$modjson" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p' | head -1)
  [[ -f $gomod ]] || die "cannot find go.mod of k8s.io/kubernetes"
  # Every staging module (replace k8s.io/x => ./staging/...) gets pinned to the
  # published v0.X.Y tag of the same release.
  local staging
  staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$gomod" | sort -u)
  {
    echo "module hostk8s.local/k8sbuild"
    echo
    echo "go 1.24.0"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    for m in $staging; do echo "	$m => $m $K8S_STAGING_VERSION"; done
    echo ")"
  } >"$src/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    for b in "${want[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$b\""; done
    echo ")"
  } >"$src/tools.go"
  log "kubernetes: go mod tidy ($(wc -w <<<"$staging") staging modules pinned to $K8S_STAGING_VERSION)"
  (cd "$src" && rk_go mod tidy) >"$RK_CACHE/build-k8s.log" 2>&1 || die "go mod tidy failed (see $RK_CACHE/build-k8s.log)"
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  local pkgs=() ldflags
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  for b in "${want[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  log "kubernetes: go build ${want[*]} (cold: several minutes on 2 cores)"
  (cd "$src" && CGO_ENABLED=0 rk_go build -trimpath -ldflags "$ldflags" -o "$RK_BIN/" "${pkgs[@]}") \
    >>"$RK_CACHE/build-k8s.log" 2>&1 || die "kubernetes build failed (see $RK_CACHE/build-k8s.log)"
  log "kubernetes: built $("$RK_BIN/kubectl" version --client 2>/dev/null | head -1)"
}

rk_build_coredns() {
  if [[ -x $RK_BIN/coredns ]]; then log "coredns $COREDNS_VERSION cached"; return 0; fi
  local src=$RK_CACHE/build/coredns-$COREDNS_VERSION
  mkdir -p "$src"
  # A slim CoreDNS: only the plugins a cluster.local-only resolver needs (no
  # cloud SDKs, no forward plugin => no upstream resolver at all).
  cat >"$src/go.mod" <<EOF
module hostk8s.local/coredns

go 1.24.0

require github.com/coredns/coredns $COREDNS_VERSION
EOF
  cat >"$src/main.go" <<'EOF'
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func init() {
	dnsserver.Directives = []string{"reload", "bind", "ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes"}
}

func main() { coremain.Run() }
EOF
  log "coredns: go build $COREDNS_VERSION (slim plugin set)"
  (cd "$src" && rk_go mod tidy && CGO_ENABLED=0 rk_go build -trimpath -ldflags "-s -w" -o "$RK_BIN/coredns" .) \
    >"$RK_CACHE/build-coredns.log" 2>&1 || die "coredns build failed (see $RK_CACHE/build-coredns.log)"
  log "coredns: built"
}

rk_build_pause() {
  if [[ -x $RK_BIN/pause ]]; then return 0; fi
  local src=$RK_CACHE/build/pause
  mkdir -p "$src"
  cat >"$src/go.mod" <<'EOF'
module hostk8s.local/pause

go 1.24.0
EOF
  cat >"$src/main.go" <<'EOF'
// pause: the sandbox process of every pod. Sleeps until SIGINT/SIGTERM and
// reaps zombies (it is PID 1 of the pod when the PID namespace is shared).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
EOF
  (cd "$src" && CGO_ENABLED=0 rk_go build -trimpath -ldflags "-s -w" -o "$RK_BIN/pause" .) \
    >"$RK_CACHE/build-pause.log" 2>&1 || die "pause build failed (see $RK_CACHE/build-pause.log)"
  log "pause: built"
}

# rk_docker_archive OUT.tar ROOTFS_DIR 'ENTRYPOINT_JSON' 'CMD_JSON' TAG...
# Writes a `docker save`-format archive (importable by `ctr images import`
# and `docker load`) holding one layer made from ROOTFS_DIR.
rk_docker_archive() {
  local out=$1 rootfs=$2 ep=$3 cmd=$4; shift 4
  local tmp; tmp=$(mktemp -d)
  tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -C "$rootfs" -cf "$tmp/layer.tar" .
  local diffid; diffid=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
  mkdir -p "$tmp/$diffid"; mv "$tmp/layer.tar" "$tmp/$diffid/layer.tar"
  local cfg
  cfg=$(printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":%s,"Cmd":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"hostk8s"}]}' "$ep" "$cmd" "$diffid")
  local cfgid; cfgid=$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1)
  printf '%s' "$cfg" >"$tmp/$cfgid.json"
  local tags="" t
  for t in "$@"; do tags+="${tags:+,}\"$t\""; done
  printf '[{"Config":"%s.json","RepoTags":[%s],"Layers":["%s/layer.tar"]}]' "$cfgid" "$tags" "$diffid" >"$tmp/manifest.json"
  tar -C "$tmp" -cf "$out" manifest.json "$cfgid.json" "$diffid"
  rm -rf "$tmp"
}

rk_build_images() {
  mkdir -p "$RK_IMAGES"
  if [[ ! -f $RK_IMAGES/pause.tar ]]; then
    local r; r=$(mktemp -d)
    install -m 0755 "$RK_BIN/pause" "$r/pause"
    rk_docker_archive "$RK_IMAGES/pause.tar" "$r" '["/pause"]' 'null' "$PAUSE_IMAGE"
    rm -rf "$r"
    log "image: $PAUSE_IMAGE -> pause.tar"
  fi
  if [[ ! -f $RK_IMAGES/busybox.tar || ! -f $RK_IMAGES/busybox-rootfs.tar ]]; then
    [[ -x /bin/busybox ]] || die "busybox-static not installed"
    local r; r=$(mktemp -d)
    mkdir -p "$r/bin" "$r/sbin" "$r/usr/bin" "$r/usr/sbin" "$r/etc" "$r/tmp" "$r/root" "$r/var/www" "$r/proc" "$r/sys" "$r/dev"
    chmod 1777 "$r/tmp"
    install -m 0755 /bin/busybox "$r/bin/busybox"
    local a
    for a in $(/bin/busybox --list); do [[ $a == busybox ]] || ln -sf busybox "$r/bin/$a"; done
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
    # plain rootfs tarball: `docker import` base for Dockerfile builds
    tar --numeric-owner --owner=0 --group=0 -C "$r" -cf "$RK_IMAGES/busybox-rootfs.tar" .
    rk_docker_archive "$RK_IMAGES/busybox.tar" "$r" 'null' '["sh"]' "$BUSYBOX_IMAGE" "$BUSYBOX_IMAGE_LATEST"
    rm -rf "$r"
    log "image: $BUSYBOX_IMAGE -> busybox.tar (+ busybox-rootfs.tar for docker import)"
  fi
}
