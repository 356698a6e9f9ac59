# shellcheck shell=bash
# Cluster lifecycle for hostk8s (sourced by ./hostk8s): up, down, status,
# load-image, docker-up/down. Every process is started by this file, its PID
# written to $D/pids/NAME.pid, and stopped by that PID only.

KC() { "$RK_BIN/kubectl" --kubeconfig "$D/kubeconfig" "$@"; }
CTR() { ctr --address "$D/containerd/containerd.sock" -n k8s.io "$@"; }

# ---------------------------------------------------------------- processes
rk_start() { # NAME CMD...  (stdout/stderr -> $D/logs/NAME.log)
  local name=$1; shift
  setsid "$@" >"$D/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$D/pids/$name.pid"
}

rk_pid_alive() { [[ -n ${1:-} && -d /proc/$1 ]] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

rk_stop() { # NAME [timeout_s]
  local name=$1 t=${2:-10} f=$D/pids/$1.pid pid
  [[ -f $f ]] || return 0
  pid=$(<"$f")
  if rk_pid_alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < t * 10; i++)); do rk_pid_alive "$pid" || break; sleep 0.1; done
    if rk_pid_alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; sleep 0.2; fi
  fi
  rm -f "$f"
}

rk_kill_wait() { # SIGNAL PID... : signal, wait up to 5s, then SIGKILL and wait
  local sig=$1 pid i alive; shift
  (($#)) || return 0
  for pid in "$@"; do kill "-$sig" "$pid" 2>/dev/null || true; done
  for ((i = 0; i < 60; i++)); do
    alive=0
    for pid in "$@"; do rk_pid_alive "$pid" && alive=1; done
    ((alive)) || return 0
    ((i == 50)) && for pid in "$@"; do kill -KILL "$pid" 2>/dev/null || true; done
    sleep 0.1
  done
}

rk_wait() { # NAME TIMEOUT_S CMD... : poll CMD; give up early if process NAME died
  local name=$1 t=$2 pid; shift 2
  local end=$(($(date +%s) + t))
  until "$@" >/dev/null 2>&1; do
    (($(date +%s) < end)) || return 1
    if [[ -f $D/pids/$name.pid ]]; then pid=$(<"$D/pids/$name.pid"); rk_pid_alive "$pid" || return 1; fi
    sleep 0.2
  done
}

rk_ports_free() {
  local busy
  busy=$(ss -Hltnu 2>/dev/null | awk '{print $5}' | grep -E "(^|[:.])($API_PORT|$ETCD_PORT|$ETCD_PEER_PORT|10248|10249|10250|10256|10257|10259|$DNS_READY_PORT|$DNS_HEALTH_PORT)\$" || true)
  [[ -z $busy ]] || die "ports already in use on this host: $(echo $busy) (another cluster or service?)"
}

rk_check_proc() { # NAME : fail fast with the log tail when a component died
  local pid; pid=$(cat "$D/pids/$1.pid" 2>/dev/null || true)
  if ! rk_pid_alive "$pid"; then
    echo "---- tail of $D/logs/$1.log" >&2; tail -n 30 "$D/logs/$1.log" >&2 || true
    die "$1 exited"
  fi
}

# ---------------------------------------------------------------- pki
rk_pki() {
  local p=$D/pki
  mkdir -p "$p"; chmod 700 "$p"
  local ossl=(openssl)
  "${ossl[@]}" ecparam -name prime256v1 -genkey -noout -out "$p/ca.key" 2>/dev/null
  "${ossl[@]}" req -x509 -new -key "$p/ca.key" -subj "/CN=hostk8s-ca" -days 3650 -out "$p/ca.crt" 2>/dev/null
  # NAME CN O [SAN]
  rk_cert() {
    local n=$1 cn=$2 o=$3 san=${4:-} subj="/CN=$2"
    [[ -n $o ]] && subj="/O=$o/CN=$cn"
    "${ossl[@]}" ecparam -name prime256v1 -genkey -noout -out "$p/$n.key" 2>/dev/null
    "${ossl[@]}" req -new -key "$p/$n.key" -subj "$subj" -out "$p/$n.csr" 2>/dev/null
    {
      echo "basicConstraints=CA:FALSE"
      echo "keyUsage=critical,digitalSignature,keyEncipherment"
      if [[ -n $san ]]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"
      else echo "extendedKeyUsage=clientAuth"; fi
    } >"$p/$n.ext"
    "${ossl[@]}" x509 -req -in "$p/$n.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 3650 \
      -extfile "$p/$n.ext" -out "$p/$n.crt" 2>/dev/null
    rm -f "$p/$n.csr" "$p/$n.ext"
  }
  rk_cert apiserver kube-apiserver "" \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$SVC_APISERVER_IP,IP:$NODE_IP"
  rk_cert admin hostk8s-admin system:masters
  rk_cert controller-manager system:kube-controller-manager ""
  rk_cert scheduler system:kube-scheduler ""
  rk_cert kubelet "system:node:$NODE" system:nodes
  rk_cert kube-proxy system:kube-proxy ""
  rk_cert coredns system:hostk8s-coredns ""
  "${ossl[@]}" ecparam -name prime256v1 -genkey -noout -out "$p/sa.key" 2>/dev/null
  "${ossl[@]}" ec -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
  local n
  for n in admin controller-manager scheduler kubelet kube-proxy coredns; do
    rk_kubeconfig "$p/$n.kubeconfig" "$p/$n.crt" "$p/$n.key"
  done
  cp "$p/admin.kubeconfig" "$D/kubeconfig"
}

rk_kubeconfig() { # OUT CRT KEY
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: hostk8s
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 "$D/pki/ca.crt")
users:
- name: user
  user:
    client-certificate-data: $(base64 -w0 "$2")
    client-key-data: $(base64 -w0 "$3")
contexts:
- name: hostk8s
  context: {cluster: hostk8s, user: user}
current-context: hostk8s
EOF
  chmod 600 "$1"
}

# ---------------------------------------------------------------- host state
SYSCTLS=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
         vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
         kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

rk_save_sysctls() {
  local s
  : >"$D/sysctl.saved"
  for s in "${SYSCTLS[@]}"; do
    [[ -e /proc/sys/${s//.//} ]] && echo "$s=$(cat "/proc/sys/${s//.//}")" >>"$D/sysctl.saved"
  done
}

rk_restore_sysctls() {
  [[ -f $D/sysctl.saved ]] || return 0
  local line
  while IFS= read -r line; do sysctl -q -w "$line" >/dev/null 2>&1 || true; done <"$D/sysctl.saved"
  rm -f "$D/sysctl.saved"
}

rk_net_up() {
  touch "$D/net-up"
  ip link add "$BRIDGE" type bridge 2>/dev/null || true
  ip addr replace "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # service range is only ever local: never route it to eth0
  ip route replace "$SVC_CIDR" dev "$BRIDGE"
  sysctl -q -w net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1 >/dev/null
  # pods must never leave the machine
  # (1) nothing is forwarded out of eth0; (2) nothing that enters from the pod
  # bridge is forwarded anywhere but back into the bridge, whatever the uplink is called
  iptables -t mangle -C FORWARD "${EGRESS_GUARD[@]}" 2>/dev/null || iptables -t mangle -A FORWARD "${EGRESS_GUARD[@]}"
  iptables -t mangle -C FORWARD "${BRIDGE_GUARD[@]}" 2>/dev/null || iptables -t mangle -A FORWARD "${BRIDGE_GUARD[@]}"
  # traffic between pods (and pods and Services) crosses the bridge through the filter FORWARD
  # chain: accept it there even where its policy is DROP (a system dockerd sets that)
  iptables -C FORWARD "${BRIDGE_ACCEPT[@]}" 2>/dev/null || iptables -I FORWARD "${BRIDGE_ACCEPT[@]}"
  touch "$D/egress-guard"
}

rk_iptables_clean() { # remove every KUBE-*/CNI-* chain and the jumps to them
  local ipt tbl chain rule
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null || continue
    for tbl in filter nat mangle raw; do
      "$ipt-save" -t "$tbl" >/dev/null 2>&1 || continue
      # jumps from built-in chains
      while IFS= read -r rule; do
        [[ -n $rule ]] || continue
        eval "$ipt -t $tbl ${rule/#-A/-D}" 2>/dev/null || true
      done < <("$ipt-save" -t "$tbl" | grep -E '^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j (KUBE-|CNI-)')
      for chain in $("$ipt-save" -t "$tbl" | sed -n 's/^:\(\(KUBE\|CNI\)-[^ ]*\) .*/\1/p'); do
        "$ipt" -t "$tbl" -F "$chain" 2>/dev/null || true
      done
      for chain in $("$ipt-save" -t "$tbl" | sed -n 's/^:\(\(KUBE\|CNI\)-[^ ]*\) .*/\1/p'); do
        "$ipt" -t "$tbl" -X "$chain" 2>/dev/null || true
      done
    done
  done
}

# ---------------------------------------------------------------- configs
rk_write_configs() {
  mkdir -p "$D/containerd" "$D/cni/net.d" "$D/kubelet" "$D/coredns"
  local cni_bin=/usr/lib/cni
  [[ -x $cni_bin/bridge ]] || cni_bin=/opt/cni/bin
  cat >"$D/containerd/config.toml" <<EOF
version = 2
root = "$D/containerd/root"
state = "$D/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri.tracing", "io.containerd.internal.v1.tracing", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$D/containerd/containerd.sock"
[ttrpc]
  address = "$D/containerd/containerd.sock.ttrpc"
[debug]
  address = "$D/containerd/debug.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$D/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$cni_bin"
    conf_dir = "$D/cni/net.d"
EOF
  cat >"$D/cni/net.d/10-hostk8s.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "hostk8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$D/cni/ipam",
        "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "$SVC_CIDR"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  cat >"$D/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $D/pki/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$D/containerd/containerd.sock
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: ""
syncFrequency: 5s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
tlsCertFile: $D/pki/apiserver.crt
tlsPrivateKeyFile: $D/pki/apiserver.key
maxPods: 110
EOF
  cat >"$D/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
hostnameOverride: $NODE
clusterCIDR: $POD_CIDR
clientConnection: {kubeconfig: $D/pki/kube-proxy.kubeconfig}
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$NODE_IP/32"]
iptables: {localhostNodePorts: false, syncPeriod: 10s, minSyncPeriod: 0s}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
  cat >"$D/coredns/Corefile" <<EOF
.:53 {
    bind $NODE_IP
    errors
    health 127.0.0.1:$DNS_HEALTH_PORT
    ready 127.0.0.1:$DNS_READY_PORT
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $D/pki/coredns.kubeconfig hostk8s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
    loadbalance
}
EOF
}

rk_bootstrap_objects() {
  KC apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "hostk8s:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "hostk8s:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "hostk8s:coredns"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:hostk8s-coredns"}
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns, kubernetes.io/name: CoreDNS}
spec:
  clusterIP: $DNS_IP
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kube-dns-host
  namespace: kube-system
  labels: {kubernetes.io/service-name: kube-dns, endpointslice.kubernetes.io/managed-by: hostk8s}
addressType: IPv4
endpoints:
- addresses: ["$NODE_IP"]
  conditions: {ready: true}
  nodeName: $NODE
ports:
- {name: dns, port: 53, protocol: UDP}
- {name: dns-tcp, port: 53, protocol: TCP}
EOF
}

# ---------------------------------------------------------------- up
rk_any_running() {
  local f
  for f in "$D"/pids/*.pid; do [[ -f $f ]] && rk_pid_alive "$(<"$f")" && return 0; done
  return 1
}

cmd_up() {
  need_root
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy coredns; do
    [[ -x $RK_BIN/$b ]] || die "missing $RK_BIN/$b: run '$(basename "$RK_SELF") setup' first"
  done
  [[ -f $RK_IMAGES/pause.tar ]] || die "missing images: run setup first"
  if [[ -d $D/pids ]] && rk_any_running; then die "a cluster is already running in $D (run down first)"; fi
  if ip link show "$BRIDGE" >/dev/null 2>&1; then die "bridge $BRIDGE exists: another hostk8s cluster is up on this host (one per host)"; fi
  rk_ports_free
  rm -rf "$D"
  mkdir -p "$D/logs" "$D/pids"
  trap 'rc=$?; if ((rc)); then log "up failed (rc=$rc): tearing down"; cmd_down >&2 || true; fi' EXIT
  log "up: state dir $D"
  rk_save_sysctls
  rk_pki
  log "certificates and kubeconfigs written"
  rk_net_up
  rk_write_configs
  log "bridge $BRIDGE $NODE_IP/24 up, egress guard on, configs written"

  rk_start etcd etcd --name hostk8s --data-dir "$D/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "hostk8s=http://127.0.0.1:$ETCD_PEER_PORT" --quota-backend-bytes 2147483648 \
    --snapshot-count 100000
  rk_start containerd containerd --config "$D/containerd/config.toml"
  rk_wait etcd 30 curl -fsS "http://127.0.0.1:$ETCD_PORT/health" || { rk_check_proc etcd; die "etcd not healthy"; }
  log "etcd ready"

  local p=$D/pki
  rk_start_apiserver
  rk_wait kube-apiserver 60 KC get --raw /readyz || { rk_check_proc kube-apiserver; die "kube-apiserver not ready in 60s"; }
  log "kube-apiserver ready (https://127.0.0.1:$API_PORT)"

  rk_start kube-controller-manager "$RK_BIN/kube-controller-manager" \
    --kubeconfig "$p/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$p/controller-manager.kubeconfig" --authorization-kubeconfig "$p/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" \
    --service-cluster-ip-range "$SVC_CIDR" --allocate-node-cidrs=false --controllers '*,-nodeipam' --v=1
  rk_start kube-scheduler "$RK_BIN/kube-scheduler" \
    --kubeconfig "$p/scheduler.kubeconfig" \
    --authentication-kubeconfig "$p/scheduler.kubeconfig" --authorization-kubeconfig "$p/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --v=1
  rk_bootstrap_objects
  log "controller-manager, scheduler started; kube-dns service + RBAC created"

  rk_wait containerd 30 ctr --address "$D/containerd/containerd.sock" version || { rk_check_proc containerd; die "containerd not ready"; }
  local img
  for img in "$RK_IMAGES"/pause.tar "$RK_IMAGES"/busybox.tar; do
    CTR images import --platform linux/amd64 "$img" >/dev/null || die "ctr import $img failed"
  done
  log "containerd ready; imported $PAUSE_IMAGE, $BUSYBOX_IMAGE"

  rk_start kubelet "$RK_BIN/kubelet" --config "$D/kubelet/config.yaml" \
    --kubeconfig "$p/kubelet.kubeconfig" --hostname-override "$NODE" --node-ip "$NODE_IP" \
    --root-dir "$D/kubelet/root" --cert-dir "$D/kubelet/pki" --v=1
  rk_start kube-proxy "$RK_BIN/kube-proxy" --config "$D/kube-proxy.yaml" --v=1
  rk_start coredns "$RK_BIN/coredns" -conf "$D/coredns/Corefile"
  log "kubelet, kube-proxy, coredns started"

  rk_wait kubelet 90 bash -c "[[ \$('$RK_BIN/kubectl' --kubeconfig '$D/kubeconfig' get node '$NODE' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}') == True ]]" \
    || { rk_check_proc kubelet; die "node $NODE not Ready in 90s (see $D/logs/kubelet.log)"; }
  log "node $NODE Ready"
  rk_wait coredns 30 curl -fsS "http://127.0.0.1:$DNS_READY_PORT/ready" || { rk_check_proc coredns; die "coredns not ready"; }
  rk_wait kube-proxy 30 curl -fsS "http://127.0.0.1:10256/healthz" || { rk_check_proc kube-proxy; die "kube-proxy not healthy"; }
  rk_wait default-sa 30 KC -n default get serviceaccount default || die "default service account never appeared"
  local n
  for n in etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy coredns; do rk_check_proc "$n"; done
  trap - EXIT
  log "cluster up: kubernetes $K8S_VERSION, node $NODE, pods $POD_CIDR, services $SVC_CIDR, dns $DNS_IP"
  echo "export KUBECONFIG=$D/kubeconfig"
  echo "export PATH=$RK_BIN:\$PATH   # kubectl $K8S_VERSION"
}

# ---------------------------------------------------------------- the API server alone
rk_start_apiserver() {
  local p=$D/pki
  rk_start kube-apiserver "$RK_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 0.0.0.0 --secure-port "$API_PORT" --advertise-address "$NODE_IP" \
    --client-ca-file "$p/ca.crt" --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
    --kubelet-client-certificate "$p/admin.crt" --kubelet-client-key "$p/admin.key" \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range "$SVC_CIDR" --authorization-mode Node,RBAC \
    --allow-privileged=true --enable-admission-plugins NodeRestriction --profiling=false \
    --kubelet-preferred-address-types InternalIP,Hostname --v=1
}

# Stops or starts the API server alone (the rest of the cluster keeps running): the suite's test of
# clients that must ride out an API server outage.
cmd_apiserver() {
  need_root
  [[ -f $D/net-up ]] || die "no cluster is up in $D"
  case ${1:-} in
    stop)
      rk_stop kube-apiserver 10
      log "kube-apiserver stopped"
      ;;
    start)
      if [[ -f $D/pids/kube-apiserver.pid ]] && rk_pid_alive "$(<"$D/pids/kube-apiserver.pid")"; then
        log "kube-apiserver already running"; return 0
      fi
      # The first process's log is kept (rk_start truncates the log it writes to).
      mv "$D/logs/kube-apiserver.log" "$D/logs/kube-apiserver.log.1" 2>/dev/null || true
      rk_start_apiserver
      rk_wait kube-apiserver 60 KC get --raw /readyz || { rk_check_proc kube-apiserver; die "kube-apiserver not ready in 60s"; }
      log "kube-apiserver ready again (https://127.0.0.1:$API_PORT)"
      ;;
    *) die "usage: apiserver stop|start" ;;
  esac
}

# ---------------------------------------------------------------- down
rk_netns_of_containers() {
  [[ -S $D/containerd/containerd.sock ]] || return 0
  local c
  for c in $(CTR containers ls -q 2>/dev/null); do
    CTR containers info "$c" 2>/dev/null | grep -o '"/var/run/netns/cni-[0-9a-f-]*"' | tr -d '"' || true
  done | sort -u
}

cmd_down() {
  need_root
  if [[ ! -f $D/net-up ]] && ! compgen -G "$D/pids/*.pid" >/dev/null; then
    log "down: nothing running in $D"; return 0
  fi
  log "down: stopping cluster in $D"
  local n
  if [[ -f $D/pids/dockerd.pid ]]; then cmd_docker_down; fi
  for n in kube-proxy coredns kube-scheduler kube-controller-manager; do rk_stop "$n" 5; done
  rk_stop kubelet 10
  log "control loops stopped"
  local netns=() ns t ids=()
  mapfile -t netns < <(rk_netns_of_containers)
  if [[ -S $D/containerd/containerd.sock ]]; then mapfile -t ids < <(CTR containers ls -q 2>/dev/null || true); fi
  if [[ -S $D/containerd/containerd.sock ]] && rk_pid_alive "$(cat "$D/pids/containerd.pid" 2>/dev/null)"; then
    for t in $(CTR tasks ls -q 2>/dev/null); do CTR tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1 || true; done
    sleep 0.5
    for t in $(CTR tasks ls -q 2>/dev/null); do CTR tasks delete -f "$t" >/dev/null 2>&1 || true; done
  fi
  rk_stop containerd 10
  # shims started by our containerd outlive it: find them by our socket path
  local pid shims=()
  for pid in $(grep -l -s -F -- "$D/containerd/containerd.sock" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
    if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q 'containerd-shim'; then shims+=("$pid"); fi
  done
  rk_kill_wait KILL "${shims[@]}"
  log "containers and containerd stopped"
  rk_stop kube-apiserver 10
  rk_stop etcd 10
  log "apiserver and etcd stopped"
  for ns in "${netns[@]}"; do
    [[ -n $ns ]] || continue
    umount "$ns" 2>/dev/null || umount -l "$ns" 2>/dev/null || true
    rm -f "$ns"
  done
  # libcni's result cache (one file per sandbox) lives outside the state dir
  for t in "${ids[@]}"; do
    [[ -n $t ]] && rm -f /var/lib/cni/results/*-"$t"-* 2>/dev/null
    [[ -n $t ]] && rm -rf "/run/containerd/runc/k8s.io/$t" 2>/dev/null
  done
  if [[ -x $RK_BIN/kube-proxy ]]; then "$RK_BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true; fi
  rk_iptables_clean
  if [[ -f $D/egress-guard ]]; then
    while iptables -t mangle -C FORWARD "${EGRESS_GUARD[@]}" 2>/dev/null; do iptables -t mangle -D FORWARD "${EGRESS_GUARD[@]}"; done
    while iptables -t mangle -C FORWARD "${BRIDGE_GUARD[@]}" 2>/dev/null; do iptables -t mangle -D FORWARD "${BRIDGE_GUARD[@]}"; done
    while iptables -C FORWARD "${BRIDGE_ACCEPT[@]}" 2>/dev/null; do iptables -D FORWARD "${BRIDGE_ACCEPT[@]}"; done
    rm -f "$D/egress-guard"
  fi
  ip link del "$BRIDGE" 2>/dev/null || true
  if command -v conntrack >/dev/null; then
    for n in "-s $POD_CIDR" "-d $POD_CIDR" "-d $SVC_CIDR"; do conntrack -D $n >/dev/null 2>&1 || true; done
  fi
  rk_restore_sysctls
  rm -f "$D/net-up"
  log "network: netns, iptables rules, bridge $BRIDGE removed; sysctls restored"
  local m i
  for i in 1 2 3; do
    mapfile -t m < <(awk -v d="$D/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r)
    ((${#m[@]})) || break
    for n in "${m[@]}"; do umount "$n" 2>/dev/null || umount -l "$n" 2>/dev/null || true; done
  done
  # kubelet's cgroups (cgroup v1 cgroupfs driver)
  local cg
  for cg in /sys/fs/cgroup/*/kubepods; do
    [[ -d $cg ]] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  # keep logs, drop the rest
  find "$D" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} + 2>/dev/null || true
  log "down: done (logs kept in $D/logs)"
}

# ---------------------------------------------------------------- status
cmd_status() {
  local n pid any=0
  for n in etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy coredns dockerd; do
    pid=$(cat "$D/pids/$n.pid" 2>/dev/null || true)
    if rk_pid_alive "$pid"; then printf '%-24s running pid %s\n' "$n" "$pid"; any=1
    elif [[ -n $pid ]]; then printf '%-24s DEAD (pid %s)\n' "$n" "$pid"
    else printf '%-24s -\n' "$n"; fi
  done
  if ((any)) && [[ -f $D/kubeconfig ]]; then
    KC get nodes -o wide 2>&1 || true
    echo "export KUBECONFIG=$D/kubeconfig"
  fi
}

# ---------------------------------------------------------------- images
cmd_load_image() {
  need_root
  (($#)) || die "usage: load-image FILE.tar [FILE.tar...]  (docker save / OCI archive)"
  [[ -S $D/containerd/containerd.sock ]] || die "cluster is not up"
  local f
  for f in "$@"; do
    [[ -f $f ]] || die "no such file: $f"
    CTR images import --platform linux/amd64 "$f" | sed 's/^/  /'
    log "loaded $f"
  done
}

# ---------------------------------------------------------------- docker
# dockerd with its own private containerd (NOT the cluster's), data under
# $D/docker, socket $D/docker.sock; no iptables, no bridge => it cannot
# reach any network. Build with: docker -H unix://$D/docker.sock build --network=none ...
cmd_docker_up() {
  need_root
  command -v dockerd >/dev/null || die "dockerd not installed (apt-get install docker.io)"
  mkdir -p "$D/logs" "$D/pids" "$D/docker"
  if rk_pid_alive "$(cat "$D/pids/dockerd.pid" 2>/dev/null)"; then log "dockerd already running"; else
    rk_start dockerd dockerd --host "unix://$D/docker.sock" --data-root "$D/docker/data" \
      --exec-root "$D/docker/exec" --pidfile "$D/docker/dockerd.pid" \
      --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --bridge=none
    rk_wait dockerd 30 docker -H "unix://$D/docker.sock" version || { rk_check_proc dockerd; die "dockerd not ready"; }
  fi
  log "dockerd up (socket $D/docker.sock)"
  echo "export DOCKER_HOST=unix://$D/docker.sock"
}

cmd_docker_down() {
  need_root
  rk_stop dockerd 20
  # its private containerd and shims reference $D/docker in their command line
  local pids
  mapfile -t pids < <(grep -l -s -F -- "$D/docker/" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3)
  rk_kill_wait TERM "${pids[@]}"
  local m n
  mapfile -t m < <(awk -v d="$D/docker/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r)
  for n in "${m[@]}"; do umount "$n" 2>/dev/null || umount -l "$n" 2>/dev/null || true; done
  log "dockerd stopped"
}

