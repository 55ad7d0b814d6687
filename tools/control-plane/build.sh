#!/usr/bin/env bash
# Build (or reuse) the test control plane binaries:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, and for the real node kubelet and
#   kube-proxy (Kubernetes $K8S_VERSION),
#   etcd ($ETCD_VERSION), kwok ($KWOK_VERSION) and, for the real node, CoreDNS ($COREDNS_VERSION, with
#   only the plugins coredns/main.go names)
# from the Go wrapper modules next to this script. Binaries are cached by version under
#   ${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}/{k8s-v$K8S_VERSION,etcd-v$ETCD_VERSION,kwok-v$KWOK_VERSION}/
# so a warm run only checks that the files exist.
#
# If KUBEBUILDER_ASSETS names a directory that already holds a binary (kube-apiserver, etcd, ...),
# that binary is used instead of building it.
#
# Usage: build.sh            build what is missing; prints one line per binary "name=/path"
#        build.sh --print    only print the paths that would be used (exit 1 if something is missing)
# Env:   BPO_GO_BUILD_P      go build -p (default 2);  BPO_GO_NICE  nice level (default 10)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache="${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}"
k8s_dir="$cache/k8s-v$K8S_VERSION"
etcd_dir="$cache/etcd-v$ETCD_VERSION"
kwok_dir="$cache/kwok-v$KWOK_VERSION"
# keyed by the plugin list too: a plugin added to main.go makes a new binary
coredns_dir="$cache/coredns-v$COREDNS_VERSION-$(sha256sum "$here/coredns/main.go" | cut -c1-12)"
p="${BPO_GO_BUILD_P:-2}"
nice_lvl="${BPO_GO_NICE:-10}"
print_only=false
[[ "${1:-}" == "--print" ]] && print_only=true

export CGO_ENABLED=0
export GOFLAGS="-mod=readonly -buildvcs=false"
# Never let go switch toolchains behind our back; the modules need go >= 1.26.0.
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

log() { echo "[control-plane build] $*" >&2; }

# path_for NAME DIR -> prints the binary to use (KUBEBUILDER_ASSETS first, then cache)
path_for() {
  if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "${KUBEBUILDER_ASSETS}/$1" ]]; then
    echo "${KUBEBUILDER_ASSETS}/$1"
  else
    echo "$2/$1"
  fi
}

# go_build DIR OUTDIR LDFLAGS PKG... : build with progress output; atomically installs into OUTDIR
go_build() {
  local moddir="$1" out="$2" ldflags="$3"; shift 3
  local tmp
  mkdir -p "$(dirname "$out")"
  tmp="$(mktemp -d "$(dirname "$out")/.build.XXXXXX")"
  local start=$SECONDS
  log "building $(basename "$out") ($*) with go build -p $p; first build takes long (k8s ~20 min, etcd ~3, kwok ~5 on 2 cores)"
  log "go $(go env GOVERSION), module dir $moddir"
  log "downloading modules (skipped when cached)"
  (cd "$moddir" && go mod download) || { log "FAILED to download the modules of $moddir"; return 1; }
  # -v prints each package as it is compiled: we turn that into a progress counter.
  local total
  total="$(cd "$moddir" && go list -deps "$@" 2>/dev/null | wc -l)" || total="?"
  (
    cd "$moddir"
    nice -n "$nice_lvl" go build -v -p "$p" -trimpath -tags "selinux,notest,grpcnotrace" \
      -ldflags "-s -w $ldflags" -o "$tmp/" "$@" 2>&1
  ) | {
    n=0
    while IFS= read -r line; do
      n=$((n + 1))
      if [[ "$line" == *.go:* || "$line" == "#"* || "$line" == go:* ]]; then
        echo "$line" >&2 # compiler errors and warnings
      elif (( n % 100 == 0 )); then
        log "$(basename "$out"): compiled $n/$total packages, $((SECONDS - start))s ($line)"
      fi
    done
  }
  local rc=${PIPESTATUS[0]}
  if [[ $rc -ne 0 ]] || [[ -z "$(ls -A "$tmp")" ]]; then
    rm -rf "$tmp"
    log "FAILED to build $*"
    return 1
  fi
  mkdir -p "$out"
  for f in "$tmp"/*; do
    local name
    name="$(basename "$f")"
    [[ "$name" == server || "$name" == v3 ]] && name=etcd # go.etcd.io/etcd/server/v3 builds as 'server'
    mv -f "$f" "$out/$name"
  done
  rmdir "$tmp"
  log "built $(basename "$out") in $((SECONDS - start))s"
}

k8s_bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
missing_k8s=false
for b in "${k8s_bins[@]}"; do
  [[ -x "$(path_for "$b" "$k8s_dir")" ]] || missing_k8s=true
done
missing_etcd=false
[[ -x "$(path_for etcd "$etcd_dir")" ]] || missing_etcd=true
missing_kwok=false
[[ -x "$(path_for kwok "$kwok_dir")" ]] || missing_kwok=true
missing_coredns=false
[[ -x "$coredns_dir/coredns" ]] || missing_coredns=true

if $print_only; then
  rc=0
  for b in "${k8s_bins[@]}"; do echo "$b=$(path_for "$b" "$k8s_dir")"; done
  echo "etcd=$(path_for etcd "$etcd_dir")"
  echo "kwok=$(path_for kwok "$kwok_dir")"
  echo "coredns=$coredns_dir/coredns"
  if $missing_k8s || $missing_etcd || $missing_kwok || $missing_coredns; then rc=1; fi
  exit $rc
fi

if $missing_k8s || $missing_etcd || $missing_kwok || $missing_coredns; then
  command -v go >/dev/null || { log "go toolchain not found; cannot build the control plane"; exit 1; }
fi

if $missing_etcd; then
  go_build "$here/etcd" "$etcd_dir" "" go.etcd.io/etcd/server/v3
fi

if $missing_kwok; then
  go_build "$here/kwok" "$kwok_dir" \
    "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$K8S_VERSION" \
    sigs.k8s.io/kwok/cmd/kwok
fi

if $missing_coredns; then
  go_build "$here/coredns" "$coredns_dir" "" .
fi

if $missing_k8s; then
  major="${K8S_VERSION%%.*}"
  minor="${K8S_VERSION#*.}"; minor="${minor%%.*}"
  build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  ldf=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldf+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
  done
  # One invocation for all of them: they share most compiled packages.
  go_build "$here/k8s" "$k8s_dir" "$ldf" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
fi

for b in "${k8s_bins[@]}"; do echo "$b=$(path_for "$b" "$k8s_dir")"; done
echo "etcd=$(path_for etcd "$etcd_dir")"
echo "kwok=$(path_for kwok "$kwok_dir")"
echo "coredns=$coredns_dir/coredns"
