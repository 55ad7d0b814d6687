# shellcheck shell=bash
# The real node of the test cluster (`cluster.sh up --real-node`), sourced by cluster.sh.
#
# One kubelet node "real-0" with containerd + runc (Debian packages), the CNI bridge, host-local and
# loopback plugins (Debian's containernetworking-plugins), kube-proxy (iptables mode) and CoreDNS
# behind the kube-dns Service, so Services and *.svc.cluster.local names work as in any cluster.
#
# Network: pods live on the host-only bridge bpo0 (10.245.0.0/24; the bridge address is the node IP).
# There is no masquerade and no default route in pods; their only extra route is the Service CIDR via
# the node. The Service CIDR is routed to the bridge on the host, so an untranslated ClusterIP packet
# stays on the bridge, and forwarding is allowed only from the bridge to the bridge. The API server
# listens on the node IP (not on any other interface), so pods reach it through the `kubernetes`
# Service like in any cluster.
#
# Only one real node can run on a machine at a time (one bridge, fixed addresses, kubelet's host
# paths). Everything it changes on the host is recorded under $dir/real-node and undone by `down`.

RN_NAME=real-0
RN_BRIDGE=bpo0
RN_NODE_IP=10.245.0.1
RN_POD_SUBNET=10.245.0.0/24
RN_POD_RANGE_START=10.245.0.10
RN_POD_RANGE_END=10.245.0.250
RN_SERVICE_CIDR=10.0.0.0/24
RN_DNS_IP=10.0.0.10
RN_OWNER=/run/bpo-real-node # names the cluster directory that owns the bridge
RN_FWD_CHAIN=BPO-REAL-FORWARD
# Host state the kubelet and containerd change whatever their flags say; restored by `down`.
RN_SYSCTLS=(net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
RN_HOST_PATHS=(/run/containerd /var/lib/cni /var/log/containers /var/log/pods /run/netns /var/lib/kubelet)

rn_dir() { echo "$dir/real-node"; }

# What the real node needs from the machine; says how to get what is missing.
real_node_preflight() {
  local missing=()
  [[ $(id -u) == 0 ]] || die "--real-node needs root (network, containerd, kubelet)"
  local c
  for c in containerd runc ctr iptables ip sysctl openssl; do
    command -v "$c" >/dev/null || missing+=("$c")
  done
  for c in bridge host-local loopback; do
    [[ -x /usr/lib/cni/$c ]] || missing+=("/usr/lib/cni/$c")
  done
  ((${#missing[@]} == 0)) ||
    die "the real node needs ${missing[*]}: run tools/control-plane/real-node-deps.sh (Debian packages)"
  if ip link show "$RN_BRIDGE" >/dev/null 2>&1; then
    local owner
    owner="$(cat "$RN_OWNER" 2>/dev/null || true)"
    if [[ -n "$owner" && -f "$owner/pids/kubelet" ]] && running "$(cat "$owner/pids/kubelet")"; then
      die "a real node already runs on this machine (cluster $owner); stop it first: BPO_CLUSTER_DIR=$owner $here/cluster.sh down"
    fi
    log "removing what a real node that was not stopped left behind (bridge $RN_BRIDGE, cluster ${owner:-unknown})"
    if [[ -n "$owner" && -d "$owner/real-node" ]]; then
      (dir="$owner" real_node_stop) || true
    else
      rn_network_down
    fi
  fi
}

# Before the API server starts: it listens on the node IP, which lives on the bridge.
real_node_network_up() {
  local rd
  rd="$(rn_dir)"
  mkdir -p "$rd/run"
  local k d
  for k in "${RN_SYSCTLS[@]}"; do echo "$k=$(sysctl -n "$k")"; done >"$rd/run/sysctl-before"
  for d in "${RN_HOST_PATHS[@]}"; do [[ -e $d ]] && echo "$d"; done >"$rd/run/host-paths-before" || true
  echo "$dir" >"$RN_OWNER"
  ip link add "$RN_BRIDGE" type bridge
  ip addr add "$RN_NODE_IP/${RN_POD_SUBNET#*/}" dev "$RN_BRIDGE"
  ip link set "$RN_BRIDGE" up
  # ClusterIPs that kube-proxy did not translate (yet) stay on the bridge instead of following the
  # machine's default route.
  ip route add "$RN_SERVICE_CIDR" dev "$RN_BRIDGE"
  # Routing between pods through a Service needs forwarding; allow it from the bridge to the bridge
  # only, so nothing a pod sends is ever forwarded to another interface (and nothing comes in).
  iptables -N "$RN_FWD_CHAIN"
  iptables -A "$RN_FWD_CHAIN" -i "$RN_BRIDGE" -o "$RN_BRIDGE" -j ACCEPT
  iptables -A "$RN_FWD_CHAIN" -i "$RN_BRIDGE" -j DROP
  iptables -A "$RN_FWD_CHAIN" -o "$RN_BRIDGE" -j DROP
  iptables -I FORWARD 1 -j "$RN_FWD_CHAIN"
  sysctl -qw net.ipv4.ip_forward=1
  # Replies between two pods on the bridge must pass conntrack to be un-DNATed (Service traffic).
  [[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] ||
    die "the kernel has no br_netfilter (net.bridge.bridge-nf-call-iptables): Services between pods cannot work"
  [[ "$(sysctl -n net.bridge.bridge-nf-call-iptables)" == 1 ]] || {
    echo "net.bridge.bridge-nf-call-iptables=0" >>"$rd/run/sysctl-before"
    sysctl -qw net.bridge.bridge-nf-call-iptables=1
  }
  log "real node network: bridge $RN_BRIDGE $RN_NODE_IP, pods $RN_POD_SUBNET, Services $RN_SERVICE_CIDR routed to the bridge"
}

# fill TEMPLATE OUT: replace the @NAME@ placeholders of the real-node templates.
rn_fill() {
  sed -e "s#@NODE_DIR@#$(rn_dir)#g" -e "s#@CLUSTER_DIR@#$dir#g" -e "s#@NODE_IP@#$RN_NODE_IP#g" \
    -e "s#@NODE_NAME@#$RN_NAME#g" -e "s#@BRIDGE@#$RN_BRIDGE#g" -e "s#@POD_SUBNET@#$RN_POD_SUBNET#g" \
    -e "s#@POD_RANGE_START@#$RN_POD_RANGE_START#g" -e "s#@POD_RANGE_END@#$RN_POD_RANGE_END#g" \
    -e "s#@SERVICE_CIDR@#$RN_SERVICE_CIDR#g" -e "s#@DNS_IP@#$RN_DNS_IP#g" \
    -e "s#@HEALTHZ_PORT@#$RN_HEALTHZ_PORT#g" -e "s#@PROXY_HEALTHZ_PORT@#$RN_PROXY_HEALTHZ_PORT#g" \
    -e "s#@PROXY_METRICS_PORT@#$RN_PROXY_METRICS_PORT#g" -e "s#@DNS_HEALTH_PORT@#$RN_DNS_HEALTH_PORT#g" \
    -e "s#@DNS_READY_PORT@#$RN_DNS_READY_PORT#g" "$here/real-node/$1" >"$2"
}

rn_ctr() { ctr -a "$(rn_dir)/run/containerd.sock" -n k8s.io "$@"; }

# After the API server and the controller manager: containerd, images, CoreDNS, kubelet, kube-proxy.
real_node_start() {
  local rd p="$dir/pki"
  rd="$(rn_dir)"
  mkdir -p "$rd"/{pki,cni/net.d,pod-logs,kubelet}
  : >"$rd/dns-hosts"
  # kubelet serving certificate signed by the cluster CA, so the API server can verify it.
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$rd/pki/kubelet.key" \
    -out "$rd/pki/kubelet.csr" -subj "/O=system:nodes/CN=system:node:$RN_NAME" 2>/dev/null
  openssl x509 -req -in "$rd/pki/kubelet.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
    -CAserial "$rd/pki/ca.srl" -days 3650 -out "$rd/pki/kubelet.crt" -extfile <(printf '%s\n' \
      "subjectAltName=IP:$RN_NODE_IP,DNS:$RN_NAME" "extendedKeyUsage=serverAuth" \
      "keyUsage=critical,digitalSignature,keyEncipherment") 2>/dev/null
  rm -f "$rd/pki/kubelet.csr" "$rd/pki/ca.srl"

  RN_HEALTHZ_PORT="$(free_port)"
  RN_PROXY_HEALTHZ_PORT="$(free_port)"
  RN_PROXY_METRICS_PORT="$(free_port)"
  RN_DNS_HEALTH_PORT="$(free_port)"
  RN_DNS_READY_PORT="$(free_port)"
  # released with the cluster's own ports (cluster.sh release_ports)
  printf '%s\n' "RN_HEALTHZ_PORT=$RN_HEALTHZ_PORT" "RN_PROXY_HEALTHZ_PORT=$RN_PROXY_HEALTHZ_PORT" \
    "RN_PROXY_METRICS_PORT=$RN_PROXY_METRICS_PORT" "RN_DNS_HEALTH_PORT=$RN_DNS_HEALTH_PORT" \
    "RN_DNS_READY_PORT=$RN_DNS_READY_PORT" >>"$dir/ports"
  rn_fill containerd.toml.in "$rd/containerd.toml"
  rn_fill cni.conflist.in "$rd/cni/net.d/10-bpo-real.conflist"
  rn_fill kubelet-config.yaml.in "$rd/kubelet-config.yaml"
  rn_fill kube-proxy.yaml.in "$rd/kube-proxy.yaml"
  rn_fill Corefile.in "$rd/Corefile"

  # No registry is ever reached: every pull goes to a closed port on loopback through this proxy
  # and fails at once (ErrImagePull), before any name is resolved.
  start containerd env HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY= \
    containerd --config "$rd/containerd.toml"
  wait_until "containerd" containerd rn_ctr version
  rn_load_images

  # CoreDNS on the node IP, behind the kube-dns Service like in any cluster.
  start coredns "${BIN[coredns]}" -conf "$rd/Corefile"
  kctl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  clusterIP: $RN_DNS_IP
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kube-dns-node
  namespace: kube-system
  labels:
    kubernetes.io/service-name: kube-dns
    endpointslice.kubernetes.io/managed-by: cluster.sh.blueprint-operator.io
addressType: IPv4
endpoints:
- addresses: [$RN_NODE_IP]
  conditions: {ready: true}
ports:
- {name: dns, port: 53, protocol: UDP}
- {name: dns-tcp, port: 53, protocol: TCP}
EOF
  wait_until "CoreDNS" coredns http_ok "$RN_DNS_READY_PORT" /ready

  start kubelet "${BIN[kubelet]}" --config="$rd/kubelet-config.yaml" --kubeconfig="$dir/kubeconfig" \
    --root-dir="$rd/kubelet" --cert-dir="$rd/pki" --hostname-override="$RN_NAME" \
    --node-ip="$RN_NODE_IP" --node-labels=blueprint-operator.io/test-node=real --v=1
  wait_until "node $RN_NAME Ready" kubelet kctl wait --for=condition=Ready --timeout=2s "node/$RN_NAME"
  # kube-proxy after the node exists: it waits for its Node object before it reports healthy.
  start kube-proxy "${BIN[kube-proxy]}" --config="$rd/kube-proxy.yaml"
  wait_until "kube-proxy" kube-proxy http_ok "$RN_PROXY_HEALTHZ_PORT" /healthz

  # Dynamic volumes: the controller manager's hostPath provisioner (single-node test clusters only).
  kctl apply -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
}

# http_ok PORT PATH: a GET on 127.0.0.1:PORT answers 200.
http_ok() {
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
    IFS= read -r -t 5 status <&3 && [[ $status == *" 200 "* ]]
  ) 2>/dev/null
}

# Every image archive tools/images/build.sh made (pause among them), plus $BPO_NODE_IMAGES.
rn_load_images() {
  local list=() line
  if [[ -x "$here/../images/build.sh" ]]; then
    local out
    out="$("$here/../images/build.sh" --print)" || die "the node images are not built: run tools/images/build.sh"
    while IFS= read -r line; do [[ $line == *=* ]] && list+=("${line#*=}"); done <<<"$out"
  fi
  for line in ${BPO_NODE_IMAGES:-}; do list+=("$line"); done
  ((${#list[@]} > 0)) || die "no images for the real node (tools/images/build.sh)"
  for line in "${list[@]}"; do
    rn_ctr images import "$line" >/dev/null || die "could not import $line into containerd"
  done
  # (the list is read whole: grep -q on a pipe would SIGPIPE ctr, a failure under pipefail)
  local names
  names="$(rn_ctr images ls -q | grep -v '^sha256:')"
  grep -qx 'registry.k8s.io/pause:3.10' <<<"$names" ||
    die "no registry.k8s.io/pause:3.10 among the node images (tools/images/build.sh builds it)"
  log "real node images: $(tr '\n' ' ' <<<"$names")"
}

# Stop the real node and undo every change to the host; safe to call more than once.
real_node_stop() {
  local rd
  rd="$(rn_dir)"
  [[ -d "$rd" ]] || return 0
  stop_one kubelet
  local sock="$rd/run/containerd.sock" t c
  if alive containerd; then
    # Pods keep running in their shims after the kubelet stops: kill them.
    # (a task may end by itself meanwhile: failures here are expected and ignored)
    for t in $(rn_ctr tasks ls -q 2>/dev/null); do rn_ctr tasks kill -s KILL "$t" >/dev/null 2>&1 || true; done
    for t in $(rn_ctr tasks ls -q 2>/dev/null); do rn_ctr tasks rm -f "$t" >/dev/null 2>&1 || true; done
    for c in $(rn_ctr containers ls -q 2>/dev/null); do rn_ctr containers rm "$c" >/dev/null 2>&1 || true; done
  fi
  stop_one containerd
  local pr cmd
  for pr in /proc/[0-9]*; do # shims of our containerd only (their command line names our socket)
    { cmd="$(tr '\0' ' ' <"$pr/cmdline")"; } 2>/dev/null || continue
    if [[ $cmd == *containerd-shim*"-address $sock"* ]]; then kill -KILL "${pr#/proc/}" 2>/dev/null || true; fi
  done
  stop_one kube-proxy
  stop_one coredns
  if [[ -n "${BIN[kube-proxy]:-}" && -x "${BIN[kube-proxy]}" ]]; then
    "${BIN[kube-proxy]}" --cleanup >/dev/null 2>&1 || true
  fi
  local m
  for m in $(awk -v r="$rd/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  local cg
  for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/unified/kubepods /sys/fs/cgroup/kubepods; do
    if [[ -d $cg ]]; then find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true; fi
  done
  rn_network_down
  if [[ -f "$rd/run/sysctl-before" ]]; then
    local k v
    while IFS='=' read -r k v; do
      [[ "$(sysctl -n "$k" 2>/dev/null)" == "$v" ]] || sysctl -qw "$k=$v" || true
    done <"$rd/run/sysctl-before"
    rm -f "$rd/run/sysctl-before"
  fi
  if [[ -f "$rd/run/host-paths-before" ]]; then
    local d
    for d in "${RN_HOST_PATHS[@]}"; do
      grep -qx "$d" "$rd/run/host-paths-before" || rm -rf "$d"
    done
    rm -f "$rd/run/host-paths-before"
  fi
  [[ "$(cat "$RN_OWNER" 2>/dev/null)" == "$dir" ]] && rm -f "$RN_OWNER"
  return 0
}

rn_network_down() {
  local v
  for v in $(ip -o link show master "$RN_BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$v" 2>/dev/null || true
  done
  ip route del "$RN_SERVICE_CIDR" dev "$RN_BRIDGE" 2>/dev/null || true
  ip link del "$RN_BRIDGE" 2>/dev/null || true
  while iptables -D FORWARD -j "$RN_FWD_CHAIN" 2>/dev/null; do :; done
  iptables -F "$RN_FWD_CHAIN" 2>/dev/null && iptables -X "$RN_FWD_CHAIN" 2>/dev/null
  return 0
}
