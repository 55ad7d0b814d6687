#!/usr/bin/env bash
# The project's test command (README "Two commands: the demo and the tests").
#
#   tools/test.sh [CARGO TEST ARGS]   the fast tier: builds or reuses the test control plane, then runs
#                                     every test; the e2e binary (tests/e2e/) starts one cluster on
#                                     127.0.0.1 with a kwok node for all its tests (tests/support), the
#                                     few tests that own a cluster start theirs (docs/testing.md).
#                                     e.g. `tools/test.sh --test e2e executor::`
#   tools/test.sh --real [FILTER]     the real tier (root): installs the Debian packages the real node
#                                     needs, builds the images, starts ONE cluster with a real kubelet
#                                     node, and runs the tests of tests/real (everything a pod does,
#                                     Kanister's own controller beside ours) against it; FILTER
#                                     selects tests by name.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export KANISTER_CORPUS="${KANISTER_CORPUS:-$PWD/../shared/kanister-corpus}"

loud() { printf '\n!!!!!!!!!! %s\n' "$@" >&2; }

if [[ "${1:-}" != --real ]]; then
  # The Kanister corpus (Kanister's own Blueprints, examples and CRDs; docs/testing.md says where
  # it comes from): without it the tests that read it are skipped, listed at the end; under
  # CI=true that is a failure, before anything is built.
  if [[ ! -d $KANISTER_CORPUS ]]; then
    loud "The Kanister corpus is not at KANISTER_CORPUS=$KANISTER_CORPUS" \
      "The tests that read it are SKIPPED (listed at the end of the run)." \
      "Get it as docs/testing.md (\"The Kanister corpus\") says and set KANISTER_CORPUS to it."
    if [[ ${CI:-} == true ]]; then
      echo "CI=true: a missing prerequisite fails the run" >&2
      exit 1
    fi
  fi
  tools/control-plane/build.sh >/dev/null
  # restic + an S3-compatible object store + the VolumeSnapshot CRDs (data-mover and CSI tests).
  tools/data-plane/build.sh >/dev/null
  # moto's standalone server: the AWS API of the RDS function tests (tests/e2e/rds.rs) and the
  # strict S3 of the kando and data tests (tools/moto/strict_server.py).
  tools/moto/build.sh >/dev/null
  # helm for the chart tests (tests/helm_chart.rs).
  tools/helm/build.sh >/dev/null
  # Azurite: the Azure Blob store of the azure Profile tests (kando, LocationDelete, restic).
  tools/azurite/build.sh >/dev/null
  # Tests whose prerequisite is missing record themselves here (tests/support/prerequisite.rs).
  BPO_SKIPPED_LOG="$(mktemp "${TMPDIR:-/tmp}/bpo-skipped.XXXXXX")"
  export BPO_SKIPPED_LOG
  trap 'rm -f "$BPO_SKIPPED_LOG"' EXIT
  rc=0
  # --no-fail-fast: one failing test binary must not hide the results of the others.
  cargo test --no-fail-fast "$@" || rc=$?
  if [[ -s $BPO_SKIPPED_LOG ]]; then
    loud "$(sort -u "$BPO_SKIPPED_LOG" | wc -l) tests were SKIPPED (they passed without testing):"
    sort -u "$BPO_SKIPPED_LOG" >&2
  fi
  exit $rc
fi
shift

step() { printf '\n=== real tier: %s (%s) ===\n' "$*" "$(date -u +%T)"; }
start=$SECONDS
step "Debian packages of the real node"
tools/control-plane/real-node-deps.sh
step "control plane, data plane"
tools/control-plane/build.sh >/dev/null
tools/data-plane/build.sh >/dev/null
tools/moto/build.sh >/dev/null
tools/helm/build.sh >/dev/null
tools/azurite/build.sh >/dev/null
# Flux's source-controller and kustomize-controller (tests/real/flux.rs).
tools/flux/build.sh >/dev/null
# Kanister's own controller from its source (tests/real/kanister.rs installs it with its chart).
step "Kanister's controller and kando"
tools/kanister/build.sh >/dev/null
step "images (operator, tools, pause, databases, Kanister's controller)"
tools/images/build.sh >/dev/null
step "the assembled operator image against the Dockerfile"
cargo test --test dockerfile -- --ignored
# Build the test binary before the cluster starts, so the node does not wait on the compiler.
step "test binary"
cargo test --test real --no-run

step "cluster with the real node"
# One real node per machine: a second run waits here for the first to finish.
exec 9>/run/bpo-real-tier.lock
if ! flock -n 9; then
  echo "another real-tier run holds the real node; waiting for it to finish" >&2
  flock 9
fi
export BPO_CLUSTER_DIR="${TMPDIR:-/tmp}/bpo-real-$$"
trap 'tools/control-plane/cluster.sh down >/dev/null 2>&1 || true' EXIT
eval "$(tools/control-plane/cluster.sh up --real-node)"
export BPO_KUBECONFIG="$KUBECONFIG"
# Servers the tests start for pods (the object store) listen on the bridge, not on loopback.
export BPO_TEST_HOST_IP=10.245.0.1
up=$SECONDS

step "tests/real"
# One node, one set of cluster-wide objects (the operator's install): one test at a time.
rc=0
cargo test --test real -- --ignored --test-threads=1 "$@" || rc=$?
echo "real tier: cluster up in $((up - start))s after start, tests took $((SECONDS - up))s, total $((SECONDS - start))s"
if ((rc != 0)); then
  echo "real tier FAILED; the last lines of the cluster's logs:" >&2
  for f in "$BPO_CLUSTER_DIR"/logs/{kubelet,containerd,kube-proxy,coredns,kube-apiserver}.log; do
    [[ -f $f ]] && { echo "--- $f" >&2; tail -n 25 "$f" >&2; }
  done
fi
exit $rc
