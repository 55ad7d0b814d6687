#!/usr/bin/env bash
# The project's test command (README "Set-up"): builds or reuses the test
# control plane, then runs every test. Test binaries that need a cluster start
# their own on 127.0.0.1 (tests/support) and stop it when they exit.
# Extra arguments go to `cargo test`, e.g. `tools/test.sh --test e2e_executor`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export KANISTER_CORPUS="${KANISTER_CORPUS:-$PWD/../shared/kanister-corpus}"
tools/control-plane/build.sh
# restic + an S3-compatible object store + the VolumeSnapshot CRDs (data-mover and CSI tests).
tools/data-plane/build.sh
# --no-fail-fast: one failing test binary must not hide the results of the others.
cargo test --no-fail-fast "$@"
