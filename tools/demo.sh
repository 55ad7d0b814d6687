#!/usr/bin/env bash
# The demo (README "Two commands: the demo and the tests", docs/development.md "The demo").
#
#   tools/demo.sh                       the real node (root): a real PostgreSQL in a StatefulSet on
#                                       the real kubelet node, the operator installed from its image
#                                       with the README's kustomize commands, an ActionSchedule
#                                       backing the database up with the corpus Blueprint
#                                       kanister-examples/postgresql/postgres-blueprint.yaml (as
#                                       written) through kando to an S3 object store, then a restore
#                                       (rows inserted, backed up, table dropped, restored from the
#                                       newest run's artifacts, read back); then the schedule goes on
#                                       until Ctrl-C.
#   tools/demo.sh --exit-after-restore  the same, ending (exit 0, everything stopped) after the restore
#   tools/demo.sh --kwok                a local control plane with kwok's fake node: the webhook and the
#                                       controller on 127.0.0.1, examples/ applied, ActionSets created,
#                                       run with their deferPhase, rotated and cleaned up. Also what runs
#                                       when the real node cannot (not root, no Kanister corpus, the node
#                                       does not start); the demo says why.
# Ctrl-C stops everything the demo started and exits 0 (the real node's `cluster.sh down` restores
# the host's routes, iptables and sysctls).
#
# The real node is one per machine: the demo takes the lock of `tools/test.sh --real`
# (/run/bpo-real-tier.lock) and waits, saying so, while a test run holds it.
#
# Environment:
#   BPO_CLUSTER_DIR      the control plane's state directory (default ${TMPDIR:-/tmp}/bpo-demo-real,
#                        or bpo-demo with --kwok; the demo's own files go to "$BPO_CLUSTER_DIR.run").
#                        Ports are picked free, so a kwok demo runs beside other clusters.
#   BPO_DEMO_BIN         use this blueprint-operator binary on the host instead of building one.
#   KANISTER_CORPUS      the Kanister corpus (default ../shared/kanister-corpus): the PostgreSQL
#                        Blueprint and Kanister's CRDs.
#   BPO_DEMO_KUBECONFIG  (tests) a running cluster with the real node, e.g. the one of
#                        `tools/test.sh --real`, whose runner holds the lock: the demo uses it instead
#                        of starting one, and removes only its namespace and object store at the end.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export KANISTER_CORPUS="${KANISTER_CORPUS:-$root/../shared/kanister-corpus}"

mode=real
exit_after_restore=false
for arg in "$@"; do
  case "$arg" in
    --kwok) mode=kwok ;;
    --exit-after-restore) exit_after_restore=true ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "tools/demo.sh: unknown argument $arg (see tools/demo.sh --help)" >&2
      exit 2
      ;;
  esac
done
if [[ $mode == kwok ]]; then
  export BPO_CLUSTER_DIR="${BPO_CLUSTER_DIR:-${TMPDIR:-/tmp}/bpo-demo}"
else
  export BPO_CLUSTER_DIR="${BPO_CLUSTER_DIR:-${TMPDIR:-/tmp}/bpo-demo-real}"
fi
work="$BPO_CLUSTER_DIR.run"
mkdir -p "$work"
pids=()        # processes to TERM on exit
step_pgid=""   # the build step running in its own process group
cluster_up=false
attached=false # BPO_DEMO_KUBECONFIG: a cluster the demo did not start
demo_ns=""
started=$SECONDS
times=()

say() { printf '\033[1m[demo]\033[0m %s\n' "$*" >&2; }
# duration SECONDS -> "1m05s" or "42s"
duration() { (($1 >= 60)) && printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)) || printf '%ds' "$1"; }
part_start=$SECONDS
part() { # NAME: a part of the demo begins (its time is said when the next one begins)
  part_end
  part_name="$1"
  part_start=$SECONDS
  say "== $1"
}
part_name=""
part_end() {
  [[ -n $part_name ]] || return 0
  say "   $part_name took $(duration $((SECONDS - part_start)))"
  times+=("$part_name: $(duration $((SECONDS - part_start)))")
  part_name=""
}

any_alive() {
  local p
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
  return 1
}
# Stops what the demo started: a build step, the processes of pids (TERM, then KILL after 10 s),
# the cluster (cluster.sh down) or, on a cluster the demo did not start, its namespace; then
# removes the work directory. Ctrl-C (INT) and TERM end the demo with exit 0.
stop_all() {
  say "stopping"
  local p
  if [[ -n $step_pgid ]]; then
    kill -TERM -- "-$step_pgid" 2>/dev/null || true
    step_pgid=""
  fi
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 100); do
    any_alive || break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  pids=()
  wait 2>/dev/null || true
  if $attached; then
    [[ -z $demo_ns ]] || k delete namespace "$demo_ns" --wait=false >/dev/null 2>&1 || true
  elif $cluster_up || [[ $mode == kwok ]]; then
    tools/control-plane/cluster.sh down >/dev/null 2>&1 || true
    cluster_up=false
  fi
  rm -rf "$work"
  say "stopped"
}
cleanup() {
  trap - EXIT INT TERM
  stop_all
}
trap cleanup EXIT
trap 'cleanup; exit 0' INT TERM

# build_step WHAT FIRST_TIME CMD...: runs CMD (a build) in its own process group with its output in
# a log, saying what it builds and, every 20 s, that it is still at it with the log's last line.
build_step() {
  local what=$1 first=$2 t0=$SECONDS last=$SECONDS log
  shift 2
  log="$work/build-$(tr -c 'a-zA-Z0-9\n' - <<<"${what%% (*}" | cut -c1-40).log"
  say "$what ($first the first time, cached after; log: $log)"
  setsid "$@" </dev/null >"$log" 2>&1 9>&- &
  step_pgid=$!
  while kill -0 "$step_pgid" 2>/dev/null; do
    sleep 1
    if ((SECONDS - last >= 20)); then
      last=$SECONDS
      say "   ... $what, $(duration $((SECONDS - t0))) so far: $(tail -n 1 "$log" | cut -c1-110)"
    fi
  done
  if ! wait "$step_pgid"; then
    step_pgid=""
    say "$what FAILED; the last lines of $log:"
    tail -n 25 "$log" >&2
    return 1
  fi
  step_pgid=""
  say "   $what: ready in $(duration $((SECONDS - t0)))"
}

# cached WHAT CMD...: says "WHAT: cached" when CMD (a build script's --print) succeeds.
cached() {
  local what=$1
  shift
  "$@" >/dev/null 2>&1 || return 1
  say "$what: cached"
}

# ================================ kwok: the fake node ===========================================

run_kwok() {
  if [[ -n "${BPO_DEMO_BIN:-}" ]]; then
    bin="$BPO_DEMO_BIN"
    say "using $bin"
  else
    build_step "cargo build of blueprint-operator" "a few minutes" cargo build --bin blueprint-operator
    bin="${CARGO_TARGET_DIR:-$root/target}/debug/blueprint-operator"
    [[ $bin == /* ]] || bin="$root/$bin"
  fi
  cached "the control plane (Kubernetes, etcd, kwok)" tools/control-plane/build.sh --print ||
    build_step "building the control plane from Go modules" "13-45 minutes" tools/control-plane/build.sh
  export BPO_WATCH_PID=$$
  eval "$(tools/control-plane/cluster.sh up)"
  k() { "$BPO_KUBECTL" "$@"; }

  say "installing CRDs"
  k apply -k manifests/crds >/dev/null && k apply -k manifests/kanister-crds >/dev/null

  say "starting the webhook on 127.0.0.1"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  "$bin" certs --out "$work/certs" --dns-name 127.0.0.1 --force >"$work/ca-bundle"
  ca="$(tail -n1 "$work/ca-bundle")"
  "$bin" webhook --listen "127.0.0.1:$port" --probe-listen "" --shutdown-delay 0 \
    --tls-cert-file "$work/certs/tls.crt" --tls-key-file "$work/certs/tls.key" \
    >"$work/webhook.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  hook() { # NAME PATH RESOURCE GROUP
    printf -- '- name: %s\n  clientConfig: {url: "https://127.0.0.1:%s%s", caBundle: "%s"}\n  rules: [{apiGroups: ["%s"], apiVersions: [v1alpha1], operations: [CREATE, UPDATE], resources: ["%s"]}]\n  sideEffects: None\n  admissionReviewVersions: [v1]\n  failurePolicy: Fail\n  timeoutSeconds: 5\n' \
      "$1" "$port" "$2" "$ca" "$4" "$3"
  }
  {
    printf 'apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: blueprint-operator}\nwebhooks:\n'
    hook mutate.blueprints.cr.kanister.io /mutate/blueprint blueprints cr.kanister.io
    printf -- '---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: blueprint-operator}\nwebhooks:\n'
    hook validate.blueprints.cr.kanister.io /validate/blueprint blueprints cr.kanister.io
    hook validate.actionschedules.blueprint-operator.io /validate/actionschedule actionschedules blueprint-operator.io
  } | k apply -f - >/dev/null

  say "starting the controller (ActionSet executor + ActionSchedule controller)"
  "$bin" controller --metrics-addr 127.0.0.1:0 --no-leader-election >"$work/controller.log" 2>&1 &
  pids+=($!)

  say "applying examples/"
  k apply -f examples/namespace.yaml >/dev/null
  k apply -f examples/deployment.yaml -f examples/blueprint.yaml -f examples/actionschedule.yaml -f examples/actionschedule-verify.yaml
  say "a Blueprint written with unnamed phases and a one-element deferPhase list is stored normalized:"
  printf 'apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {name: normalized, namespace: blueprint-demo}\nactions:\n  backup:\n    phases: [{func: KubeTask, args: {image: x, command: [x]}}, {func: KubeTask, args: {image: x, command: [y]}}]\n    deferPhase: [{func: KubeTask, args: {image: x, command: [z]}}]\n' |
    k apply -f - >/dev/null
  k get blueprint normalized -n blueprint-demo -o jsonpath='{range .actions.backup.phases[*]}  phase {.name}: {.func}{"\n"}{end}  deferPhase {.actions.backup.deferPhase.name}: {.actions.backup.deferPhase.func}{"\n"}' >&2
  say "a Blueprint with two deferPhases is refused:"
  printf 'apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {name: bad, namespace: blueprint-demo}\nactions:\n  backup:\n    phases: [{func: KubeTask, name: a, args: {image: x, command: [x]}}]\n    deferPhase: [{func: KubeTask, args: {image: x, command: [x]}}, {func: KubeTask, args: {image: x, command: [y]}}]\n' |
    k apply -f - 2>&1 | sed 's/^/  /' >&2 || true

  say "watching (logs: $work/*.log); Ctrl-C to stop"
  cols='NAME:.metadata.name,ACTION:.spec.actions[0].name,STATE:.status.state,RUNNING:.status.progress.runningPhase,DEFERPHASE:.status.actions[0].deferPhase.state,ERROR:.status.error.message'
  while true; do
    printf '\n\033[1m%s\033[0m\n' "$(date +%T)"
    k get actionschedule -n blueprint-demo 2>&1 | sed 's/^/  /'
    k get actionsets -n blueprint-demo --sort-by=.metadata.creationTimestamp -o custom-columns="$cols" 2>&1 | sed 's/^/  /'
    k get deployment demo-app -n blueprint-demo --no-headers -o custom-columns='APP:.metadata.name,REPLICAS:.spec.replicas' 2>&1 | sed 's/^/  /'
    sleep 5
  done
}

# ============================== real: PostgreSQL on the real node ===============================

NODE_IP=10.245.0.1 # the real node's bridge address (tools/control-plane/real-node.sh)
PG=shop-postgresql # the Blueprint derives the Secret's and Service's names from the instance label
BUCKET=bpo-demo
LOCK=/run/bpo-real-tier.lock

# Why the real node cannot run here, or nothing.
real_unavailable() {
  [[ $(id -u) == 0 ]] || { echo "the real node needs root (network bridge, containerd, kubelet)"; return; }
  [[ -f "$KANISTER_CORPUS/kanister-examples/postgresql/postgres-blueprint.yaml" ]] || {
    echo "no Kanister corpus at KANISTER_CORPUS=$KANISTER_CORPUS (the PostgreSQL Blueprint and Kanister's CRDs come from it: see docs/development.md)"
    return
  }
  command -v flock >/dev/null || { echo "flock (util-linux) is missing"; return; }
  [[ "$(uname -m)" == x86_64 ]] || echo "the real node's images are built for x86-64"
}

# fall_back WHY: the kwok demo instead, saying why (with --exit-after-restore there is no restore
# to show: exit 1).
fall_back() {
  say "cannot show the real node: $1"
  trap - EXIT INT TERM
  stop_all
  if $exit_after_restore; then
    say "--exit-after-restore: no restore to show without the real node"
    exit 1
  fi
  say "showing the kwok demo instead (tools/demo.sh --kwok: the same operator, pods on a fake node)"
  exec 9>&-
  exec bash "$0" --kwok
}

# Shown while an ActionSet runs: its pods on the node and the ActionSets, when they change.
snapshot() {
  local cols='NAME:.metadata.name,ACTION:.spec.actions[0].name,STATE:.status.state,PHASE:.status.progress.runningPhase,ERROR:.status.error.message'
  {
    k get pods -n "$demo_ns" -o wide 2>&1 || true
    k get actionsets.cr.kanister.io -n "$demo_ns" --sort-by=.metadata.creationTimestamp -o custom-columns="$cols" 2>&1 || true
  } | sed 's/^/    /'
}

# wait_actionset NAME: shows pods and ActionSets as they change until NAME ends; fails unless it
# is complete.
wait_actionset() {
  local name=$1 state="" last="" now t0=$SECONDS
  while true; do
    state="$(k get actionsets.cr.kanister.io -n "$demo_ns" "$name" -o jsonpath='{.status.state}' 2>/dev/null || true)"
    now="$(snapshot)"
    if [[ "$now" != "$last" ]]; then
      printf '  \033[1m%s\033[0m\n%s\n' "$(date +%T)" "$now" >&2
      last="$now"
    fi
    [[ $state == complete ]] && return 0
    if [[ $state == failed ]]; then
      say "ActionSet $name failed:"
      k describe actionsets.cr.kanister.io -n "$demo_ns" "$name" >&2 || true
      return 1
    fi
    if ((SECONDS - t0 > 600)); then
      say "ActionSet $name did not end within 10 minutes"
      return 1
    fi
    sleep 2
  done
}

# One password for both PostgreSQL servers: pg_dumpall's dump carries the roles, so restoring it
# sets the scratch server's password to the dumped one, and psql's next \connect uses the Secret's.
PG_PASSWORD="demo-$RANDOM$RANDOM"
pg_manifest() { # INSTANCE: Secret, Service and StatefulSet INSTANCE-postgresql, as Bitnami's chart names them
  local pg="$1-postgresql"
  cat <<EOF
apiVersion: v1
kind: Secret
metadata: {name: $pg}
stringData: {postgres-password: $PG_PASSWORD}
---
apiVersion: v1
kind: Service
metadata: {name: $pg}
spec:
  selector: {app.kubernetes.io/instance: $1}
  ports: [{name: tcp-postgresql, port: 5432, targetPort: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: $pg
  labels: {app.kubernetes.io/instance: $1}
spec:
  serviceName: $pg
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/instance: $1}}
  template:
    metadata: {labels: {app.kubernetes.io/instance: $1}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: postgresql
        image: postgres-db:15
        imagePullPolicy: IfNotPresent
        env:
        - name: POSTGRES_PASSWORD
          valueFrom: {secretKeyRef: {name: $pg, key: postgres-password}}
        ports: [{containerPort: 5432}]
        readinessProbe:
          exec: {command: [pg_isready, -h, 127.0.0.1, -U, postgres]}
          periodSeconds: 2
        volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 256Mi}}
EOF
}

psql_demo() { # SQL [POD]: runs it in the database `shop` in the PostgreSQL pod (default $PG-0)
  k exec -n "$demo_ns" "${2:-$PG-0}" -- psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U postgres -At -c "$1" shop
}
ROWS_DIGEST="SELECT count(*) || ' rows, md5 ' || md5(string_agg(id || ',' || name || ',' || price || ',' || coalesce(note, '<null>'), '|' ORDER BY id)) FROM items"

store_listing() { # the bucket's objects: key and size
  python3 - "$store_url" "$BUCKET" <<'EOF'
import re, sys, urllib.request
url, bucket = sys.argv[1], sys.argv[2]
xml = urllib.request.urlopen(f"{url}/{bucket}?list-type=2").read().decode()
objects = re.findall(r"<Key>(.*?)</Key>.*?<Size>(\d+)</Size>", xml, re.S)
for key, size in objects:
    print(f"    {bucket}/{key}  {size} bytes")
if not objects:
    print(f"    (bucket {bucket} is empty)")
EOF
}

run_real() {
  local why
  why="$(real_unavailable)"
  [[ -z $why ]] || fall_back "$why"

  if [[ -n "${BPO_DEMO_KUBECONFIG:-}" ]]; then
    attached=true
    say "using the running cluster of BPO_DEMO_KUBECONFIG=$BPO_DEMO_KUBECONFIG (its runner holds $LOCK)"
  else
    # One real node per machine, shared with tools/test.sh --real.
    exec 9>"$LOCK"
    if ! flock -n 9; then
      say "another real-node run (tools/test.sh --real or a demo) holds $LOCK; waiting for it to finish"
      flock 9
    fi
  fi

  part "build (Debian packages, control plane, test data plane, images)"
  build_step "Debian packages of the real node (containerd, runc, CNI plugins, iptables)" "under a minute" \
    tools/control-plane/real-node-deps.sh
  cached "the control plane (Kubernetes 1.36.3, etcd, kwok, CoreDNS)" tools/control-plane/build.sh --print ||
    build_step "building the control plane from Go modules" "13-45 minutes on 2 cores" tools/control-plane/build.sh
  cached "the test data plane (restic, the S3 object store gofakes3)" tools/data-plane/build.sh --print ||
    build_step "building the test data plane from Go modules" "2-4 minutes" tools/data-plane/build.sh
  cached "the images (operator, tools, PostgreSQL, the corpus Blueprint's tools image)" tools/images/build.sh --print ||
    build_step "building the images (cargo build --release, Debian packages)" "about 10 minutes on 2 cores" \
      tools/images/build.sh
  # The host's binary, for `blueprint-operator certs`: the images' release build, or a debug one.
  local bin="${BPO_DEMO_BIN:-}" target="${CARGO_TARGET_DIR:-$root/target}"
  [[ $target == /* ]] || target="$root/$target"
  if [[ -z $bin ]]; then
    bin="$target/release/blueprint-operator"
    [[ -x $bin ]] || bin="$target/debug/blueprint-operator"
    [[ -x $bin ]] || build_step "cargo build of blueprint-operator (for its certs command)" "a few minutes" \
      cargo build --bin blueprint-operator
  fi

  part "cluster with the real node"
  if $attached; then
    export KUBECONFIG="$BPO_DEMO_KUBECONFIG"
    BPO_KUBECTL="${BPO_KUBECTL:-$(tools/control-plane/build.sh --print | sed -n 's/^kubectl=//p')}"
  else
    export BPO_WATCH_PID=$$
    cluster_up=true
    local env
    if ! env="$(tools/control-plane/cluster.sh up --real-node 9>&-)"; then
      fall_back "the real node did not start (its messages are above)"
    fi
    eval "$env"
  fi
  k() { "$BPO_KUBECTL" "$@"; }
  k get nodes -o wide 2>&1 | sed 's/^/    /' >&2

  part "S3 object store on the node's bridge"
  local gofakes3 port
  gofakes3="$(tools/data-plane/build.sh --print | sed -n 's/^gofakes3=//p')"
  port="$(python3 -c "import socket; s=socket.socket(); s.bind(('$NODE_IP',0)); print(s.getsockname()[1])")"
  store_url="http://$NODE_IP:$port"
  setpriv --pdeathsig KILL -- "$gofakes3" -backend memory -quiet -host "$NODE_IP:$port" \
    >"$work/object-store.log" 2>&1 9>&- &
  pids+=($!)
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/$NODE_IP/$port") 2>/dev/null && break
    sleep 0.1
  done
  python3 -c "import urllib.request as u; u.urlopen(u.Request('$store_url/$BUCKET', method='PUT'))"
  say "object store (gofakes3, S3 API) on $store_url, bucket $BUCKET"

  part "the operator, installed from its image (README: Install, With kustomize)"
  if k get deployment -n blueprint-operator blueprint-operator-webhook >/dev/null 2>&1; then
    say "already installed in this cluster: using it"
  else
    say "Kanister's CRDs (Kanister installed), a webhook certificate, kubectl apply -k manifests/overlays/self-signed"
    k apply -f "$KANISTER_CORPUS/crds" >/dev/null
    k wait --for=condition=Established --timeout=60s crd/blueprints.cr.kanister.io \
      crd/actionsets.cr.kanister.io crd/profiles.cr.kanister.io >/dev/null
    # A copy of manifests/: the certificate goes beside the overlay, as the README does.
    cp -r manifests "$work/manifests"
    "$bin" certs --force --out "$work/manifests/overlays/self-signed/certs" \
      --dns-name blueprint-operator-webhook.blueprint-operator.svc >"$work/certs.log" 2>&1 ||
      { cat "$work/certs.log" >&2; return 1; }
    k apply -k "$work/manifests/overlays/self-signed" | sed 's/^/    /' >&2
  fi
  k rollout status -n blueprint-operator deployment/blueprint-operator-webhook --timeout=180s >&2
  k rollout status -n blueprint-operator deployment/blueprint-operator-controller --timeout=180s >&2
  k get pods -n blueprint-operator -o wide | sed 's/^/    /' >&2

  part "PostgreSQL 15 in a StatefulSet with a PersistentVolume"
  demo_ns="$(k create -o jsonpath='{.metadata.name}' -f - <<EOF
apiVersion: v1
kind: Namespace
metadata: {generateName: bpo-demo-pg-}
EOF
)"
  say "namespace $demo_ns: the Secret, Service and StatefulSet $PG as the Blueprint expects them"
  pg_manifest shop | k apply -n "$demo_ns" -f - >/dev/null
  say "and scratch-postgresql, empty: the schedule proves each backup by restoring it there"
  pg_manifest scratch | k apply -n "$demo_ns" -f - >/dev/null
  k rollout status -n "$demo_ns" "statefulset/$PG" --timeout=180s >&2
  k rollout status -n "$demo_ns" statefulset/scratch-postgresql --timeout=180s >&2
  snapshot >&2
  k exec -n "$demo_ns" "$PG-0" -- psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U postgres -qc 'CREATE DATABASE shop'
  psql_demo "CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(10,2), note text);
    INSERT INTO items VALUES (1, 'it''s', 9.99, NULL), (2, E'tab\\there', 0.01, 'Grüße');
    INSERT INTO items SELECT g, 'item ' || g, g * 1.25, md5(g::text) FROM generate_series(3, 502) g;" >/dev/null
  local before
  before="$(psql_demo "$ROWS_DIGEST")"
  say "rows written: $before"

  part "backup: an ActionSchedule runs the corpus Blueprint (pg_dumpall | gzip | kando location push)"
  say "Blueprint postgres-bp: $KANISTER_CORPUS/kanister-examples/postgresql/postgres-blueprint.yaml, unmodified"
  k apply -n "$demo_ns" -f "$KANISTER_CORPUS/kanister-examples/postgresql/postgres-blueprint.yaml" >&2
  # The Profile on the object store, as Kanister users write it (gofakes3 takes any key).
  # Rotation runs the Blueprint's delete action on the namespace (deleteActionKind: Namespace,
  # as `kanctl --namespacetargets`): that action renders .Namespace.Name, which Kanister sets
  # only for a Namespace object, and would fail on the schedule's object (the StatefulSet).
  k apply -n "$demo_ns" -f - >&2 <<EOF
apiVersion: v1
kind: Secret
metadata: {name: s3-creds}
type: secrets.kanister.io/aws
stringData: {aws_access_key_id: demo-access-key, aws_secret_access_key: demo-secret-key}
---
apiVersion: cr.kanister.io/v1alpha1
kind: Profile
metadata: {name: s3}
location: {type: s3Compliant, bucket: $BUCKET, endpoint: "$store_url", region: us-east-1}
credential:
  type: keyPair
  keyPair:
    idField: aws_access_key_id
    secretField: aws_secret_access_key
    secret: {apiVersion: v1, kind: Secret, name: s3-creds, namespace: $demo_ns}
skipSSLVerify: false
---
apiVersion: blueprint-operator.io/v1alpha1
kind: ActionSchedule
metadata: {name: pg-backup}
spec:
  schedule: "* * * * *"
  concurrencyPolicy: Forbid
  actionSetTemplate:
    actions:
    - name: backup
      blueprint: postgres-bp
      object: {kind: StatefulSet, name: $PG, namespace: $demo_ns}
      profile: {name: s3, namespace: $demo_ns}
  retention: {keepLast: 3, keepFailed: 5, deleteAction: delete, deleteActionKind: Namespace}
  verify: {every: 1, action: restore, object: {kind: StatefulSet, name: scratch-postgresql, namespace: $demo_ns}}
EOF
  say "a backup every minute; the first one now (annotation blueprint-operator.io/run-now)"
  say "the newest 3 complete runs are kept; older ones are rotated: the Blueprint's delete action removes their dumps from the store"
  k annotate actionschedule -n "$demo_ns" pg-backup --overwrite blueprint-operator.io/run-now=demo >/dev/null
  local run="" t0=$SECONDS
  until [[ -n $run ]]; do
    run="$(k get actionsets.cr.kanister.io -n "$demo_ns" -l blueprint-operator.io/schedule=pg-backup \
      --sort-by=.metadata.creationTimestamp -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true)"
    ((SECONDS - t0 < 120)) || { say "the schedule created no ActionSet within 2 minutes"; return 1; }
    [[ -n $run ]] || sleep 1
  done
  say "the schedule created ActionSet $run"
  wait_actionset "$run"
  say "the dump in the object store:"
  store_listing >&2
  k get actionschedule -n "$demo_ns" pg-backup 2>&1 | sed 's/^/    /' >&2

  part "verify: the run's dump restored into scratch-postgresql (spec.verify), the rows compared"
  local verified="" t1=$SECONDS
  until [[ -n $verified ]]; do
    verified="$(k get actionsets.cr.kanister.io -n "$demo_ns" "$run" \
      -o jsonpath='{.metadata.labels.blueprint-operator\.io/verified}' 2>/dev/null || true)"
    ((SECONDS - t1 < 300)) || { say "run $run was not verified within 5 minutes"; return 1; }
    [[ -n $verified ]] || sleep 2
  done
  say "ActionSet $run-verify restored the dump: $run is labelled blueprint-operator.io/verified=$verified"
  [[ $verified == true ]] || return 1
  say "rows in scratch-postgresql: $(psql_demo "$ROWS_DIGEST" scratch-postgresql-0)"
  k get actionschedule -n "$demo_ns" pg-backup \
    -o jsonpath='{"    lastVerifiedRun: "}{.status.lastVerifiedRun}{", lastVerifiedTime: "}{.status.lastVerifiedTime}{"\n"}' >&2

  part "restore: drop the table, restore from the newest run's artifacts, read the rows back"
  local newest location
  # The schedule's backups, not its verifications (label trigger: scheduled or run-now).
  newest="$(k get actionsets.cr.kanister.io -n "$demo_ns" \
    -l 'blueprint-operator.io/schedule=pg-backup,blueprint-operator.io/trigger in (scheduled,run-now)' \
    --sort-by=.metadata.creationTimestamp \
    -o jsonpath='{range .items[?(@.status.state=="complete")]}{.metadata.name}{"\n"}{end}' | tail -n 1)"
  location="$(k get actionsets.cr.kanister.io -n "$demo_ns" "$newest" \
    -o jsonpath='{.status.actions[0].artifacts.cloudObject.keyValue.backupLocation}')"
  say "the newest complete run: $newest, artifact cloudObject.backupLocation=$location"
  psql_demo "DROP TABLE items" >/dev/null
  say "table dropped: $(psql_demo "SELECT count(*) FROM pg_tables WHERE tablename = 'items'") tables named items"
  local restore
  restore="$(k create -o jsonpath='{.metadata.name}' -f - <<EOF
apiVersion: cr.kanister.io/v1alpha1
kind: ActionSet
metadata:
  generateName: restore-
  namespace: $demo_ns
  labels: {blueprint-operator.io/executor: blueprint-operator}
spec:
  actions:
  - name: restore
    blueprint: postgres-bp
    object: {kind: StatefulSet, name: $PG, namespace: $demo_ns}
    profile: {name: s3, namespace: $demo_ns}
    artifacts:
      cloudObject: {keyValue: {backupLocation: "$location"}}
EOF
)"
  say "ActionSet $restore (kando location pull | gunzip | psql)"
  wait_actionset "$restore"
  local after
  after="$(psql_demo "$ROWS_DIGEST")"
  say "rows read back: $after"
  if [[ "$after" != "$before" ]]; then
    say "RESTORE MISMATCH: written $before, read back $after"
    return 1
  fi
  say "restored: exactly the rows written before the backup"
  part_end
  say "times: ${times[*]/%/;} total $(duration $((SECONDS - started)))"

  if $exit_after_restore; then
    say "done (--exit-after-restore)"
    return 0
  fi
  say "watching the schedule (a backup every minute); Ctrl-C to stop"
  while true; do
    printf '\n  \033[1m%s\033[0m\n' "$(date +%T)" >&2
    k get actionschedule -n "$demo_ns" pg-backup 2>&1 | sed 's/^/    /' >&2
    snapshot >&2
    store_listing >&2
    sleep 10
  done
}

if [[ $mode == kwok ]]; then
  run_kwok
else
  run_real
fi
