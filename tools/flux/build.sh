#!/usr/bin/env bash
# Build (or reuse) Flux's source-controller and kustomize-controller (versions.env) from the Go
# wrapper module next to this script, for the real tier's GitOps test (tests/real/flux.rs), plus
# their CRDs, copied from config/crd/bases of the two modules in the Go module cache. Cached under
#   ${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}/flux-<hash of versions.env, go.mod, go.sum>/
#     {source-controller,kustomize-controller,crds/}
# so a warm run only checks that the build finished.
#
# Usage: build.sh            build what is missing; prints "source-controller=/path",
#                            "kustomize-controller=/path" and "crds=/dir"
#        build.sh --print    only print the paths (exit 1 if the build is missing)
# Env:   BPO_GO_BUILD_P      go build -p (default 2);  BPO_GO_NICE  nice level (default 10)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache="${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}"
key="$(cat "$here/versions.env" "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)"
dir="$cache/flux-$key"
done_mark="$dir/.complete"
p="${BPO_GO_BUILD_P:-2}"
nice_lvl="${BPO_GO_NICE:-10}"

log() { echo "[flux build] $*" >&2; }
print() {
  echo "source-controller=$dir/source-controller"
  echo "kustomize-controller=$dir/kustomize-controller"
  echo "crds=$dir/crds"
}

if [[ "${1:-}" == "--print" ]]; then
  print
  [[ -f "$done_mark" ]]
  exit
fi

if [[ ! -f "$done_mark" ]]; then
  command -v go >/dev/null || { log "go toolchain not found; cannot build Flux"; exit 1; }
  export CGO_ENABLED=0
  export GOFLAGS="-mod=readonly -buildvcs=false"
  export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
  mkdir -p "$cache"
  # One build at a time (test binaries and tools/test.sh may call this concurrently).
  exec 9>"$cache/flux.lock"
  flock 9
  if [[ ! -f "$done_mark" ]]; then
    start=$SECONDS
    log "building source-controller v$SOURCE_CONTROLLER_VERSION and kustomize-controller v$KUSTOMIZE_CONTROLLER_VERSION with go $(go env GOVERSION), go build -p $p (first build ~15 min on 2 cores)"
    (cd "$here" && go mod download) || { log "FAILED to download the modules of $here"; exit 1; }
    rm -rf "$dir"
    mkdir -p "$dir"
    tmp="$(mktemp -d "$dir/.build.XXXXXX")"
    trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
    for m in source-controller kustomize-controller; do
      (
        cd "$here"
        nice -n "$nice_lvl" go build -p "$p" -trimpath -ldflags "-s -w" \
          -o "$tmp/$m" "github.com/fluxcd/$m"
      ) || { log "FAILED to build $m"; exit 1; }
      log "built $m after $((SECONDS - start))s"
    done
    mkdir -p "$tmp/crds"
    modcache="$(go env GOMODCACHE)"
    cp "$modcache/github.com/fluxcd/source-controller@v$SOURCE_CONTROLLER_VERSION"/config/crd/bases/*.yaml \
      "$modcache/github.com/fluxcd/kustomize-controller@v$KUSTOMIZE_CONTROLLER_VERSION"/config/crd/bases/*.yaml \
      "$tmp/crds/"
    chmod -R u+w "$tmp/crds"
    mv -f "$tmp/source-controller" "$tmp/kustomize-controller" "$tmp/crds" "$dir/"
    touch "$done_mark"
    log "built Flux in $((SECONDS - start))s"
  fi
fi
print
