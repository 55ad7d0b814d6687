#!/usr/bin/env bash
# Build (or reuse) Kanister's own controller and kando from its source, the reference peer the
# real tier runs beside ours (tests/real/kanister.rs). The module proxy does not serve
# github.com/kanisterio/kanister, so the source is a copy of the release tree (KANISTER_SRC,
# default ../shared/kanister-src beside the checkout; read-only, so it is copied first). Three of
# its pinned k8s.io modules (v0.33.11) are refused by the proxy; v0.33.10 builds the same code.
# The binaries are cached by version under
#   ${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}/kanister/$KANISTER_VERSION/{controller,kando}
# so a warm run only checks that the files exist.
#
# Usage: build.sh            build what is missing; prints "controller=/path" and "kando=/path"
#        build.sh --print    only print the paths (exit 1 if one is missing)
# Env:   BPO_GO_BUILD_P      go build -p (default 2);  BPO_GO_NICE  nice level (default 10)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
KANISTER_VERSION=0.119.0
src="${KANISTER_SRC:-$repo/../shared/kanister-src}"
dir="${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}/kanister/$KANISTER_VERSION"
p="${BPO_GO_BUILD_P:-2}"
nice_lvl="${BPO_GO_NICE:-10}"

log() { echo "[kanister build] $*" >&2; }
print() { echo "controller=$dir/controller" && echo "kando=$dir/kando"; }

if [[ "${1:-}" == "--print" ]]; then
  print
  [[ -x "$dir/controller" && -x "$dir/kando" ]]
  exit
fi

if [[ ! -x "$dir/controller" || ! -x "$dir/kando" ]]; then
  command -v go >/dev/null || { log "go toolchain not found; cannot build Kanister"; exit 1; }
  [[ -f "$src/go.mod" ]] || { log "no Kanister source at KANISTER_SRC=$src"; exit 1; }
  grep -q "^module github.com/kanisterio/kanister$" "$src/go.mod" || { log "$src is not Kanister's source"; exit 1; }
  start=$SECONDS
  log "building Kanister $KANISTER_VERSION (controller, kando) with go $(go env GOVERSION) from $src (first build 5-10 min on 2 cores)"
  mkdir -p "$dir"
  tmp="$(mktemp -d "$dir/.build.XXXXXX")"
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
  cp -r "$src" "$tmp/src"
  chmod -R u+w "$tmp/src"
  (
    cd "$tmp/src"
    go mod edit -replace k8s.io/code-generator=k8s.io/code-generator@v0.33.10 \
      -replace k8s.io/cli-runtime=k8s.io/cli-runtime@v0.33.10 \
      -replace k8s.io/kubectl=k8s.io/kubectl@v0.33.10
    GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 GOTOOLCHAIN="${GOTOOLCHAIN:-local}" \
      nice -n "$nice_lvl" go build -p "$p" -trimpath \
      -ldflags "-s -w -X github.com/kanisterio/kanister/pkg/version.Version=$KANISTER_VERSION" \
      -o "$tmp/" ./cmd/controller ./cmd/kando
  ) || { log "FAILED to build Kanister"; exit 1; }
  mv -f "$tmp/controller" "$dir/controller"
  mv -f "$tmp/kando" "$dir/kando"
  log "built Kanister $KANISTER_VERSION in $((SECONDS - start))s"
fi
print
