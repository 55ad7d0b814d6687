#!/usr/bin/env bash
# The main job (README "Set-up"): a local control plane on 127.0.0.1, the
# admission webhook and the controller, examples/ applied, and a live view of
# the ActionSets the schedule creates, runs (with their deferPhase), rotates
# and cleans up. Ctrl-C stops everything.
#
# Environment:
#   BPO_CLUSTER_DIR  the control plane's state directory (default ${TMPDIR:-/tmp}/bpo-demo; the
#                    demo's own files go to "$BPO_CLUSTER_DIR.run"). Ports are picked free, so a
#                    demo with its own directory runs beside other clusters (tests/e2e_demo.rs).
#   BPO_DEMO_BIN     use this blueprint-operator binary instead of `cargo build` (the tests).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export BPO_CLUSTER_DIR="${BPO_CLUSTER_DIR:-${TMPDIR:-/tmp}/bpo-demo}"
work="$BPO_CLUSTER_DIR.run"
mkdir -p "$work"
pids=()

any_alive() {
  local p
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
  return 1
}
say() { printf '\033[1m[demo]\033[0m %s\n' "$*" >&2; }
# Stops what the demo started: the webhook and the controller (TERM, then KILL after 10 s), the
# control plane (cluster.sh down), and removes the work directory. Ctrl-C (INT) and TERM end the
# demo with exit 0: that is how it is meant to stop.
cleanup() {
  trap - EXIT INT TERM
  say "stopping"
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 100); do
    any_alive || break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  tools/control-plane/cluster.sh down >/dev/null 2>&1 || true
  rm -rf "$work"
  say "stopped"
}
trap cleanup EXIT
trap 'cleanup; exit 0' INT TERM

if [[ -n "${BPO_DEMO_BIN:-}" ]]; then
  bin="$BPO_DEMO_BIN"
  say "using $bin; building the control plane (cached after the first run)"
else
  say "building blueprint-operator and the control plane (cached after the first run)"
  cargo build --quiet --bin blueprint-operator
  bin="$root/target/debug/blueprint-operator"
fi
tools/control-plane/build.sh >&2
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
