#!/usr/bin/env bash
# A real Kubernetes control plane on 127.0.0.1 for tests and the local demo:
# etcd, kube-apiserver (client-cert admin, RBAC), kube-controller-manager, kube-scheduler,
# and kwok managing one fake node ("kwok-node-0") plus a small log agent (see kwok-config.yaml.in
# for the pod annotations that choose exit code and log text).
#
# Usage:
#   cluster.sh up       build/reuse the binaries, start everything, wait until usable, print env
#   cluster.sh up --real-node
#                       the same plus a real kubelet node "real-0" (containerd, runc, CNI bridge,
#                       kube-proxy, CoreDNS) running the images of tools/images/build.sh; needs root
#                       and the Debian packages of real-node-deps.sh. See real-node.sh.
#   cluster.sh down     stop everything and delete the state directory
#   cluster.sh env      print `export KUBECONFIG=...` (eval "$(tools/control-plane/cluster.sh env)")
#   cluster.sh status   exit 0 when the cluster in the state directory answers
#   cluster.sh restart NAME [--kill] [--down SECONDS]
#                       stop one component (etcd, kube-apiserver, kubelet, containerd, ...) and
#                       start it again as `up` did: the fault tests of the real tier
#
# Environment:
#   BPO_CLUSTER_DIR   state directory (default: ${TMPDIR:-/tmp}/bpo-cluster). Use a different one
#                     per cluster to run several at once; ports are picked free at random.
#   BPO_WATCH_PID     with `up`: a watchdog tears the cluster down when this process exits.
#   BPO_START_TIMEOUT seconds to wait for each component (default 120).
#   BPO_APISERVER_EXTRA_ARGS
#                     with `up`: more kube-apiserver flags, split on whitespace, e.g.
#                     "--enable-priority-and-fairness=false --max-mutating-requests-inflight=1"
#                     (tests of the scheduler's back-off on 429).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${BPO_CLUSTER_DIR:-${TMPDIR:-/tmp}/bpo-cluster}"
timeout_s="${BPO_START_TIMEOUT:-120}"
node_name="kwok-node-0"
real_node=false
declare -A BIN=()
# shellcheck source=real-node.sh
source "$here/real-node.sh"

log() { echo "[cluster] $*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

kctl() { "$KUBECTL" --kubeconfig "$dir/kubeconfig" "$@"; }

# --- process management ---------------------------------------------------------------------
# start NAME CMD...: run CMD in its own session (so `down` can kill its whole process group),
# stdio to $dir/logs/NAME.log, pid in $dir/pids/NAME, the command in $dir/cmds/NAME (`restart`).
start() {
  local name="$1"
  shift
  mkdir -p "$dir/logs" "$dir/pids" "$dir/cmds"
  printf '%q ' "$@" >"$dir/cmds/$name"
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$dir/pids/$name" "$@" \
    </dev/null >>"$dir/logs/$name.log" 2>&1 &
  for _ in $(seq 50); do
    [[ -s "$dir/pids/$name" ]] && return 0
    sleep 0.1
  done
  die "$name did not start"
}

# running PID: exists and is not a zombie (orphans may stay unreaped for a while).
running() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat:0:1}" != Z ]]
}

alive() { [[ -s "$dir/pids/$1" ]] && running "$(cat "$dir/pids/$1")"; }

# stop_one NAME: TERM the process group started by `start NAME`, KILL it after 5 s.
stop_one() {
  local name="$1" pid
  [[ -s "$dir/pids/$name" ]] || return 0
  pid="$(cat "$dir/pids/$name")"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    running "$pid" || break
    sleep 0.1
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$dir/pids/$name"
}

stop_all() {
  [[ -d "$dir/pids" ]] || return 0
  # The real node first, while the API server still answers; it also restores the host's network.
  real_node_stop
  local name order=(log-agent kwok kube-scheduler kube-controller-manager kube-apiserver etcd watchdog)
  for name in "${order[@]}"; do
    [[ "$name" == watchdog && -n "${BPO_IN_WATCHDOG:-}" ]] && continue
    stop_one "$name"
  done
}

# BIN[name]=path from the binaries file of the state directory (written by `up`).
load_bins() {
  local key val
  [[ -f "$dir/binaries" ]] || return 0
  while IFS='=' read -r key val; do
    BIN[$key]="$val"
  done <"$dir/binaries"
}

# --- helpers --------------------------------------------------------------------------------
# Ports are reserved machine-wide (a symlink per port to the cluster directory): clusters that
# start at the same time pick their ports before any of them binds, so checking that nothing
# listens is not enough. A reservation whose cluster directory is gone is stale and taken over.
port_dir="${TMPDIR:-/tmp}/bpo-ports"
free_port() {
  local p
  mkdir -p "$port_dir"
  while true; do
    # below the kernel's ephemeral range (32768+), so outgoing connections don't take it meanwhile
    p=$((20000 + RANDOM % 12000))
    if [[ -L "$port_dir/$p" && ! -e "$port_dir/$p" ]]; then rm -f "$port_dir/$p"; fi
    ln -s "$dir" "$port_dir/$p" 2>/dev/null || continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
    rm -f "$port_dir/$p"
  done
}

release_ports() {
  local key p abs
  [[ -f "$dir/ports" ]] || return 0
  abs="$(cd "$dir" && pwd)"
  while IFS='=' read -r key p; do
    if [[ "$(readlink "$port_dir/$p" 2>/dev/null)" == "$abs" ]]; then rm -f "$port_dir/$p"; fi
  done <"$dir/ports"
}

# wait_until DESC NAME CMD...: poll CMD until it succeeds; fail when the process NAME died.
wait_until() {
  local desc="$1" name="$2"
  shift 2
  local start=$SECONDS
  until "$@" >/dev/null 2>&1; do
    if [[ -n "$name" ]] && ! alive "$name"; then
      tail -n 30 "$dir/logs/$name.log" >&2 || true
      die "$name exited while waiting for $desc (log: $dir/logs/$name.log)"
    fi
    if ((SECONDS - start > timeout_s)); then
      [[ -n "$name" ]] && tail -n 30 "$dir/logs/$name.log" >&2
      die "timed out after ${timeout_s}s waiting for $desc"
    fi
    sleep 0.3
  done
  log "$desc ready after $((SECONDS - start))s"
}

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

gen_pki() {
  local p="$dir/pki"
  mkdir -p "$p"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$p/ca.key" -out "$p/ca.crt" -days 3650 \
    -subj "/CN=blueprint-operator-test-ca" 2>/dev/null
  # serving cert for kube-apiserver and kwok's kubelet endpoint
  openssl req "${ec[@]}" -keyout "$p/serving.key" -out "$p/serving.csr" -subj "/CN=kube-apiserver" 2>/dev/null
  openssl x509 -req -in "$p/serving.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
    -days 3650 -out "$p/serving.crt" -extfile <(printf '%s\n' \
      "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.0.0.1,IP:$RN_NODE_IP" \
      "extendedKeyUsage=serverAuth" "keyUsage=critical,digitalSignature,keyEncipherment") 2>/dev/null
  # admin client cert: group system:masters bypasses RBAC
  openssl req "${ec[@]}" -keyout "$p/admin.key" -out "$p/admin.csr" -subj "/O=system:masters/CN=admin" 2>/dev/null
  openssl x509 -req -in "$p/admin.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
    -days 3650 -out "$p/admin.crt" -extfile <(printf '%s\n' \
      "extendedKeyUsage=clientAuth" "keyUsage=critical,digitalSignature,keyEncipherment") 2>/dev/null
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  rm -f "$p"/*.csr "$p"/*.srl
}

write_kubeconfig() {
  b64() { base64 -w0 <"$1"; }
  cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: bpo-test
  cluster:
    server: https://$API_HOST:$API_PORT
    certificate-authority-data: $(b64 "$dir/pki/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $(b64 "$dir/pki/admin.crt")
    client-key-data: $(b64 "$dir/pki/admin.key")
contexts:
- name: bpo-test
  context:
    cluster: bpo-test
    user: admin
    namespace: default
current-context: bpo-test
EOF
  chmod 600 "$dir/kubeconfig"
}

# --- log agent ------------------------------------------------------------------------------
# Serves the log chosen by annotation for each pod: writes a CRI-format log file, creates a kwok
# `Logs` object for the pod, checks that `pods/log` returns it, then marks the pod
# blueprint-operator.io/kwok-log-ready=true (which lets the exit stage finish the pod).
log_agent() {
  # Printed once per pod (initial list) and per change (watch events).
  local sel='{{if eq .status.phase "Running"}}{{if .metadata.annotations}}'
  sel+='{{if or (index .metadata.annotations "blueprint-operator.io/kwok-log") (index .metadata.annotations "blueprint-operator.io/kwok-log-file")}}'
  sel+='{{if not (index .metadata.annotations "blueprint-operator.io/kwok-log-ready")}}'
  sel+='{{.metadata.namespace}} {{.metadata.name}}{{"\n"}}{{end}}{{end}}{{end}}{{end}}'
  mkdir -p "$dir/pod-logs"
  while true; do
    # Restarted every minute: the fresh list retries pods whose log could not be served.
    timeout --foreground 60 "$KUBECTL" --kubeconfig "$dir/kubeconfig" get pods -A -w \
      --field-selector "spec.nodeName=$node_name" -o go-template="$sel" 2>/dev/null |
      while read -r ns name; do
        [[ -n "$name" ]] || continue
        # one worker per pod, so a slow pod does not hold up the others
        busy="$dir/pod-logs/.busy.$ns.$name"
        [[ -e "$busy" ]] && continue
        : >"$busy"
        (
          serve_pod_log "$ns" "$name" || log "log agent: could not serve log of $ns/$name (will retry)"
          rm -f "$busy"
        ) &
      done || true
    sleep 1
  done
}

serve_pod_log() {
  local ns="$1" name="$2"
  local f="$dir/pod-logs/$ns/$name.log" raw="$dir/pod-logs/$ns/$name.txt"
  mkdir -p "$dir/pod-logs/$ns"
  local text file
  text="$(kctl get pod -n "$ns" "$name" -o go-template='{{index .metadata.annotations "blueprint-operator.io/kwok-log"}}')" || return 1
  file="$(kctl get pod -n "$ns" "$name" -o go-template='{{index .metadata.annotations "blueprint-operator.io/kwok-log-file"}}')" || return 1
  if [[ -n "$file" && "$file" != "<no value>" ]]; then
    cp "$file" "$raw" || return 1
  elif [[ "$text" != "<no value>" ]]; then
    printf '%s' "$text" >"$raw"
  else
    : >"$raw"
  fi
  # CRI log format: "<RFC3339Nano> stdout F <line>"
  local ts
  ts="$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)"
  awk -v ts="$ts" '{ print ts " stdout F " $0 }' "$raw" >"$f.tmp" && mv -f "$f.tmp" "$f"
  kctl apply -f - >/dev/null <<EOF || return 1
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Logs
metadata:
  name: $name
  namespace: $ns
spec:
  logs:
  - logsFile: $f
EOF
  # wait until kwok serves it (its informer may lag behind the create)
  local first_line got
  first_line="$(head -n 1 "$raw")"
  for _ in $(seq 100); do
    # (no pipe into head: with pipefail a SIGPIPE'd kubectl would look like an error)
    got="$(kctl logs -n "$ns" "$name" --all-containers=true --tail=-1 2>/dev/null)" || got="__error__"
    got="${got%%$'\n'*}"
    if [[ "$got" == "$first_line" ]]; then
      kctl annotate --overwrite pod -n "$ns" "$name" blueprint-operator.io/kwok-log-ready=true >/dev/null || return 1
      return 0
    fi
    sleep 0.2
  done
  return 1
}

# --- commands -------------------------------------------------------------------------------
cmd_up() {
  if [[ -f "$dir/kubeconfig" ]] && alive kube-apiserver; then
    die "a cluster already runs in $dir (run: $0 down, or set BPO_CLUSTER_DIR)"
  fi
  $real_node && real_node_preflight
  stop_all
  rm -rf "$dir"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  # On any failure stop what was started; the state directory (logs) stays for inspection.
  trap 'stop_all; release_ports' EXIT

  local bins
  bins="$("$here/build.sh")" || die "could not build the control plane binaries (see above)"
  echo "$bins" >"$dir/binaries"
  load_bins
  KUBECTL="${BIN[kubectl]}"
  log "state directory: $dir"
  # With a real node the API server listens on the node IP, where pods reach it through the
  # `kubernetes` Service; without one, on loopback only.
  API_HOST=127.0.0.1
  local api_extra=(--endpoint-reconciler-type=none)
  local kcm_extra=()
  if $real_node; then
    mkdir -p "$dir/real-node"
    real_node_network_up
    API_HOST="$RN_NODE_IP"
    # aggregator routing: the API server calls webhooks at their endpoints' IPs on the bridge.
    api_extra=(--enable-aggregator-routing=true --kubelet-client-certificate="$dir/pki/admin.crt"
      --kubelet-client-key="$dir/pki/admin.key" --kubelet-certificate-authority="$dir/pki/ca.crt")
    kcm_extra=(--enable-hostpath-provisioner=true)
  fi
  local extra_words
  read -r -a extra_words <<<"${BPO_APISERVER_EXTRA_ARGS:-}"
  api_extra+=("${extra_words[@]}")

  ETCD_PORT="$(free_port)"
  ETCD_PEER_PORT="$(free_port)"
  API_PORT="$(free_port)"
  SCHED_PORT="$(free_port)"
  KCM_PORT="$(free_port)"
  KWOK_PORT="$(free_port)"
  cat >"$dir/ports" <<EOF
ETCD_PORT=$ETCD_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
API_PORT=$API_PORT
SCHED_PORT=$SCHED_PORT
KCM_PORT=$KCM_PORT
KWOK_PORT=$KWOK_PORT
EOF
  gen_pki

  if [[ -n "${BPO_WATCH_PID:-}" ]]; then
    # shellcheck disable=SC2016 # expanded by the inner shell
    start watchdog env BPO_CLUSTER_DIR="$dir" BPO_IN_WATCHDOG=1 bash -c \
      'while s="$(cat "/proc/$1/stat" 2>/dev/null)" && [[ "${s##*) }" != Z* ]]; do sleep 1; done; exec "$2" down' \
      _ "$BPO_WATCH_PID" "$here/cluster.sh"
  fi

  start etcd "${BIN[etcd]}" --name=default --data-dir="$dir/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="default=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --watch-progress-notify-interval=5s --log-level=warn
  wait_until "etcd" etcd tcp_open "$ETCD_PORT"

  local p="$dir/pki"
  start kube-apiserver "${BIN[kube-apiserver]}" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address="$API_HOST" --secure-port="$API_PORT" --advertise-address="$API_HOST" \
    "${api_extra[@]}" --cert-dir="$dir/apiserver-certs" \
    --tls-cert-file="$p/serving.crt" --tls-private-key-file="$p/serving.key" \
    --client-ca-file="$p/ca.crt" --authorization-mode=RBAC --allow-privileged=true \
    --service-cluster-ip-range=10.0.0.0/24 \
    --service-account-issuer="https://127.0.0.1:$API_PORT" \
    --service-account-key-file="$p/sa.key" --service-account-signing-key-file="$p/sa.key" \
    --kubelet-preferred-address-types=InternalIP --profiling=false
  write_kubeconfig
  wait_until "kube-apiserver" kube-apiserver kctl get --raw /readyz

  local kc="$dir/kubeconfig"
  start kube-controller-manager "${BIN[kube-controller-manager]}" --kubeconfig="$kc" \
    --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --leader-elect=false \
    --service-account-private-key-file="$p/sa.key" --root-ca-file="$p/ca.crt" \
    --kube-api-qps=200 --kube-api-burst=400 --profiling=false "${kcm_extra[@]}"
  start kube-scheduler "${BIN[kube-scheduler]}" --kubeconfig="$kc" \
    --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --leader-elect=false \
    --kube-api-qps=200 --kube-api-burst=400 --profiling=false

  # kwok: Logs come from the API (per pod, written by the log agent); stages and the default
  # (empty) ClusterLogs from the config file.
  : >"$dir/empty.log"
  sed "s#@EMPTY_LOG@#$dir/empty.log#" "$here/kwok-config.yaml.in" >"$dir/kwok.yaml"
  kctl apply -f "$here/kwok-logs-crd.yaml" >/dev/null
  wait_until "kwok Logs CRD" "" kctl wait --for condition=established --timeout=5s crd/logs.kwok.x-k8s.io
  # The test data plane (tools/data-plane): restic on the PATH of kwok's local exec, so the
  # data-mover functions run real restic; the VolumeSnapshot CRDs for the CSI functions.
  local kwok_path="$PATH" dp
  if dp="$("$here/../data-plane/build.sh" --print 2>/dev/null)"; then
    kwok_path="$(dirname "$(sed -n 's/^restic=//p' <<<"$dp")"):$PATH"
    kctl apply -f "$(sed -n 's/^snapshot-crds=//p' <<<"$dp")" >/dev/null
    wait_until "VolumeSnapshot CRDs" "" kctl wait --for condition=established --timeout=5s \
      crd/volumesnapshots.snapshot.storage.k8s.io crd/volumesnapshotcontents.snapshot.storage.k8s.io \
      crd/volumesnapshotclasses.snapshot.storage.k8s.io
  else
    log "no test data plane (tools/data-plane/build.sh): no restic for local exec, no VolumeSnapshot CRDs"
  fi
  start kwok env PATH="$kwok_path" "${BIN[kwok]}" --kubeconfig="$kc" --config="$dir/kwok.yaml" --enable-crds=Logs \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-ip=127.0.0.1 --node-port="$KWOK_PORT" --server-address="127.0.0.1:$KWOK_PORT" \
    --tls-cert-file="$p/serving.crt" --tls-private-key-file="$p/serving.key" \
    --cidr=10.244.0.0/24 --node-lease-duration-seconds=40

  kctl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $node_name
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: $node_name
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
EOF
  if $real_node; then
    # Pods go to the real node unless they ask for the fake one.
    kctl taint node "$node_name" kwok.x-k8s.io/node=fake:NoSchedule --overwrite >/dev/null
  fi
  wait_until "node $node_name Ready" kwok \
    kctl wait --for=condition=Ready --timeout=2s "node/$node_name"
  wait_until "kube-controller-manager" kube-controller-manager kctl get serviceaccount default -n default
  wait_until "kube-scheduler" kube-scheduler tcp_open "$SCHED_PORT"

  start log-agent env BPO_CLUSTER_DIR="$dir" "$here/cluster.sh" __log-agent
  $real_node && real_node_start

  trap - EXIT
  log "cluster is up (kubeconfig: $dir/kubeconfig)"
  cmd_env
}

# restart NAME [--kill] [--down SECONDS]: stop one component (TERM, or KILL with --kill, its
# process group: a containerd's shims live in their own and keep the pods running), leave it down
# SECONDS (default 0), start it again with the command `up` started it with. Fault tests use it.
cmd_restart() {
  local name="${1:-}" kill=false down=0 pid
  [[ -n $name ]] || die "usage: $0 restart NAME [--kill] [--down SECONDS]"
  shift
  while (($#)); do
    case "$1" in
    --kill) kill=true ;;
    --down)
      down="${2:?--down needs SECONDS}"
      shift
      ;;
    *) die "restart: unknown argument $1" ;;
    esac
    shift
  done
  [[ -s "$dir/cmds/$name" ]] || die "restart: no component $name was started in $dir"
  load_bins
  if $kill && [[ -s "$dir/pids/$name" ]]; then
    pid="$(cat "$dir/pids/$name")"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      running "$pid" || break
      sleep 0.1
    done
    rm -f "$dir/pids/$name"
  else
    stop_one "$name"
  fi
  log "$name stopped; starting it again in ${down}s"
  sleep "$down"
  local cmd
  cmd="$(cat "$dir/cmds/$name")"
  eval "start $(printf '%q' "$name") $cmd"
}

cmd_env() {
  [[ -f "$dir/kubeconfig" ]] || die "no cluster in $dir (run: $0 up)"
  echo "export KUBECONFIG=$dir/kubeconfig"
  echo "export BPO_CLUSTER_DIR=$dir"
  sed -n 's/^kubectl=\(.*\)$/export BPO_KUBECTL=\1/p' "$dir/binaries"
  [[ -d "$dir/real-node" ]] && echo "export BPO_REAL_NODE=$RN_NAME"
  return 0
}

cmd_down() {
  load_bins
  stop_all
  if [[ -d "$dir" ]]; then
    release_ports
    rm -rf "$dir"
    log "cluster in $dir stopped"
  fi
}

cmd_status() {
  [[ -f "$dir/binaries" ]] || die "no cluster in $dir"
  KUBECTL="$(sed -n 's/^kubectl=//p' "$dir/binaries")"
  local name ok=0
  local names=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok log-agent)
  [[ -d "$dir/real-node" ]] && names+=(containerd coredns kube-proxy kubelet)
  for name in "${names[@]}"; do
    if alive "$name"; then log "$name: running"; else
      log "$name: NOT running"
      ok=1
    fi
  done
  kctl get --raw /readyz >/dev/null || ok=1
  return $ok
}

case "${1:-}" in
up)
  case "${2:-}" in
  --real-node) real_node=true ;;
  "") ;;
  *)
    echo "usage: $0 up [--real-node]" >&2
    exit 2
    ;;
  esac
  cmd_up
  ;;
down) cmd_down ;;
restart)
  shift
  cmd_restart "$@"
  ;;
env) cmd_env ;;
status) cmd_status ;;
__log-agent)
  KUBECTL="$(sed -n 's/^kubectl=//p' "$dir/binaries")"
  log_agent
  ;;
*)
  echo "usage: $0 up [--real-node]|down|env|status|restart NAME [--kill] [--down SECONDS]" >&2
  exit 2
  ;;
esac
