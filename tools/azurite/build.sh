#!/usr/bin/env bash
# Install (or reuse) Azurite, the Azure Storage emulator that the tests' `azure` Profiles point at
# (tests/support/azurite.rs): the npm package at the exact versions of package-lock.json, through
# `npm ci`. A test dependency only, never a runtime one. Azurite checks SharedKey signatures, so
# the Azure Blob client and restic's azure backend are checked against a real verifier.
# Cached under ${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}/azurite-KEY/, KEY a hash of the
# lock file, so a warm run only checks that the server is there.
#
# Needs node and npm (Debian: nodejs, npm; installed here when missing and run as root).
# Azurite 3.35.0 is the last release that runs on Debian's Node.js 20 (3.36 wants Node 21+).
# Usage: build.sh            install what is missing; prints "azurite=PATH" (azurite-blob)
#        build.sh --print    only print it (exit 1 if it is missing)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}"
log() { echo "[azurite build] $*" >&2; }

key="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)"
dir="$cache/azurite-$key"
server="$dir/node_modules/.bin/azurite-blob"
done_mark="$dir/.complete"

if [[ "${1:-}" == "--print" ]]; then
  echo "azurite=$server"
  [[ -f "$done_mark" ]]
  exit
fi

if [[ ! -f "$done_mark" ]]; then
  start=$SECONDS
  if ! command -v npm >/dev/null; then
    [[ $(id -u) == 0 ]] || { log "node and npm are missing: install nodejs and npm (as root)"; exit 1; }
    log "installing nodejs and npm from Debian"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
  mkdir -p "$cache"
  # One install at a time (test binaries may call this concurrently).
  exec 9>"$cache/azurite.lock"
  flock 9
  if [[ ! -f "$done_mark" ]]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$here/package.json" "$here/package-lock.json" "$dir/"
    log "installing azurite (tools/azurite/package-lock.json) with npm ci"
    if ! (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2); then
      rm -rf "$dir"
      log "FAILED: npm ci in $dir"
      exit 1
    fi
    touch "$done_mark"
    log "installed in $((SECONDS - start))s"
  fi
fi
echo "azurite=$server"
