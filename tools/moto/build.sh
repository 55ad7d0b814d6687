#!/usr/bin/env bash
# Build (or reuse) moto's standalone server, the AWS API stand-in the RDS function tests talk to
# and, behind strict_server.py (AWS S3's request checks), the strict S3 of the data tests
# (tests/support/moto.rs): a Python venv with `moto[server]` and its dependencies at the exact
# versions of requirements.txt (from PyPI, through pip). A test dependency only, never a runtime
# one. Cached under ${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}/moto-KEY/, KEY a hash of
# requirements.txt and the Python version, so a warm run only checks that the server is there.
#
# Needs python3 with its venv module (Debian: python3-venv, installed here when missing and run
# as root, as tools/control-plane/real-node-deps.sh installs the real node's packages).
# Usage: build.sh            build what is missing; prints "moto_server=PATH"
#        build.sh --print    only print it (exit 1 if it is missing)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}"
log() { echo "[moto build] $*" >&2; }
has_venv() { command -v python3 >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null; }

if [[ "${1:-}" == "--print" ]]; then
  has_venv || { echo "moto_server="; exit 1; }
elif ! has_venv; then
  [[ $(id -u) == 0 ]] || { log "python3 with its venv module is missing: install python3-venv (as root)"; exit 1; }
  log "installing python3 and python3-venv from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null
fi

key="$( (cat "$here/requirements.txt"; python3 -c 'import sys; print(sys.version)') | sha256sum | cut -c1-16)"
dir="$cache/moto-$key"
server="$dir/bin/moto_server"
done_mark="$dir/.complete"

if [[ "${1:-}" == "--print" ]]; then
  echo "moto_server=$server"
  [[ -f "$done_mark" ]]
  exit
fi

if [[ ! -f "$done_mark" ]]; then
  start=$SECONDS
  mkdir -p "$cache"
  # One build at a time (test binaries may call this concurrently); a venv's scripts name their
  # interpreter by absolute path, so it is built in place and marked complete at the end.
  exec 9>"$cache/moto.lock"
  flock 9
  if [[ ! -f "$done_mark" ]]; then
    rm -rf "$dir"
    log "creating a venv with moto[server] (tools/moto/requirements.txt) from PyPI"
    python3 -m venv "$dir"
    if ! "$dir/bin/pip" install -q --no-input --disable-pip-version-check -r "$here/requirements.txt"; then
      rm -rf "$dir"
      log "FAILED: pip install -r $here/requirements.txt"
      exit 1
    fi
    touch "$done_mark"
    log "built in $((SECONDS - start))s"
  fi
fi
echo "moto_server=$server"
