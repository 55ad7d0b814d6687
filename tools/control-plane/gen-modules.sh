#!/usr/bin/env bash
# Regenerate the Go wrapper modules (k8s/, etcd/, kwok/, coredns/) for the versions in
# versions.env. Needs the Go module proxy. The k8s staging replaces are derived
# from the chosen k8s.io/kubernetes release's own go.mod (every
# `k8s.io/X => ./staging/...` line becomes `k8s.io/X => k8s.io/X v0.<minor>.<patch>`).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
export GOFLAGS=-mod=mod

gen_k8s() {
  local v="v$K8S_VERSION" s="v0.${K8S_VERSION#1.}"
  local dir="$here/k8s"
  local gomod
  gomod="$(go mod download -json "k8s.io/kubernetes@$v" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
  [[ -f "$gomod" ]] || { echo "cannot download go.mod of k8s.io/kubernetes@$v" >&2; exit 1; }
  local staging
  staging="$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod")"
  [[ -n "$staging" ]] || { echo "no staging replaces found in $gomod" >&2; exit 1; }
  if grep -E '=>' "$gomod" | grep -vq './staging/'; then
    echo "warning: k8s.io/kubernetes@$v has non-staging replaces; review:" >&2
    grep -E '=>' "$gomod" | grep -v './staging/' >&2
  fi
  rm -f "$dir/go.mod" "$dir/go.sum"
  (cd "$dir" && go mod init blueprint-operator.io/tools/control-plane/k8s >/dev/null 2>&1)
  local args=()
  for m in $staging; do args+=("-replace=$m=$m@$s"); done
  (cd "$dir" && go mod edit "${args[@]}" -require="k8s.io/kubernetes@$v" -go=1.26.0 -godebug=default=go1.26 && go mod tidy)
  echo "k8s: $v with $(wc -w <<<"$staging") staging modules at $s"
}

gen_simple() { # dir module version
  local dir="$here/$1"
  rm -f "$dir/go.mod" "$dir/go.sum"
  (cd "$dir" && go mod init "blueprint-operator.io/tools/control-plane/$1" >/dev/null 2>&1 &&
    go mod edit -require="$2@$3" -go=1.26.0 && go mod tidy)
  echo "$1: $2@$3"
}

gen_k8s
gen_simple etcd go.etcd.io/etcd/server/v3 "v$ETCD_VERSION"
gen_simple kwok sigs.k8s.io/kwok "v$KWOK_VERSION"
gen_simple coredns github.com/coredns/coredns "v$COREDNS_VERSION"
