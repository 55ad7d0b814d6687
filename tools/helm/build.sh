#!/usr/bin/env bash
# Build (or reuse) Helm $HELM_VERSION (helm.sh/helm/v4, from the Go wrapper module next to this
# script) for the chart tests. The binary is cached by version under
#   ${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}/helm-v$HELM_VERSION/helm
# so a warm run only checks that the file exists.
#
# Usage: build.sh            build it if missing; prints "helm=/path"
#        build.sh --print    only print the path that would be used (exit 1 if it is missing)
# Env:   BPO_GO_BUILD_P      go build -p (default 2);  BPO_GO_NICE  nice level (default 10)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache="${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}"
dir="$cache/helm-v$HELM_VERSION"
bin="$dir/helm"
p="${BPO_GO_BUILD_P:-2}"
nice_lvl="${BPO_GO_NICE:-10}"

log() { echo "[helm build] $*" >&2; }

if [[ "${1:-}" == "--print" ]]; then
  echo "helm=$bin"
  [[ -x "$bin" ]]
  exit
fi

if [[ ! -x "$bin" ]]; then
  command -v go >/dev/null || { log "go toolchain not found; cannot build helm"; exit 1; }
  export CGO_ENABLED=0
  export GOFLAGS="-mod=readonly -buildvcs=false"
  export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
  start=$SECONDS
  log "building helm v$HELM_VERSION with go $(go env GOVERSION), go build -p $p (first build ~5 min on 2 cores)"
  (cd "$here" && go mod download) || { log "FAILED to download the modules of $here"; exit 1; }
  mkdir -p "$dir"
  tmp="$(mktemp -d "$dir/.build.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  (
    cd "$here"
    nice -n "$nice_lvl" go build -p "$p" -trimpath \
      -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=v$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
      -o "$tmp/helm" helm.sh/helm/v4/cmd/helm
  ) || { log "FAILED to build helm"; exit 1; }
  mv -f "$tmp/helm" "$bin"
  log "built helm in $((SECONDS - start))s"
fi
echo "helm=$bin"
