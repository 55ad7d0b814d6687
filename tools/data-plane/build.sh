#!/usr/bin/env bash
# Build (or reuse) the test data plane, from the Go wrapper modules next to this script:
#   restic    (restic/)        the data mover Kanister's BackupData/RestoreData/... run
#   gofakes3  (s3/)            an S3-compatible object store for Kanister Profiles in tests
#   fake-gcs-server (gcs/)     a Google Cloud Storage emulator for gcs Profiles in tests
#   the VolumeSnapshot CRDs    (snapshot-crds/: snapshot.storage.k8s.io/v1 from the
#                               external-snapshotter client module's config/crd)
# Cached by module version under ${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}/data-plane/,
# so a warm run only checks that the files exist.
#
# Usage: build.sh            build what is missing; prints "restic=PATH", "gofakes3=PATH",
#                            "fake-gcs-server=PATH", "snapshot-crds=DIR"
#        build.sh --print    only print them (exit 1 if something is missing)
# Env:   BPO_GO_BUILD_P      go build -p (default 2);  BPO_GO_NICE  nice level (default 10)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}/data-plane"
p="${BPO_GO_BUILD_P:-2}"
nice_lvl="${BPO_GO_NICE:-10}"

export CGO_ENABLED=0
export GOFLAGS="-mod=readonly -buildvcs=false"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

log() { echo "[data-plane build] $*" >&2; }

# version MODDIR MODULE -> the version go.mod requires
version() { sed -n "s#^[[:space:]]*\(require \)\{0,1\}$2 \(v[^ ]*\).*#\2#p" "$1/go.mod" | head -1; }

restic_v="$(version "$here/restic" github.com/restic/restic)"
s3_v="$(version "$here/s3" github.com/johannesboyne/gofakes3)"
gcs_v="$(version "$here/gcs" github.com/fsouza/fake-gcs-server)"
crd_v="$(version "$here/snapshot-crds" github.com/kubernetes-csi/external-snapshotter/client/v8)"
restic_bin="$cache/restic-$restic_v/restic"
s3_bin="$cache/gofakes3-$s3_v/gofakes3"
gcs_bin="$cache/fake-gcs-server-$gcs_v/fake-gcs-server"
crd_dir="$cache/snapshot-crds-$crd_v"
crds=(volumesnapshotclasses volumesnapshotcontents volumesnapshots)

print() {
  echo "restic=$restic_bin"
  echo "gofakes3=$s3_bin"
  echo "fake-gcs-server=$gcs_bin"
  echo "snapshot-crds=$crd_dir"
}
complete() {
  [[ -x "$restic_bin" && -x "$s3_bin" && -x "$gcs_bin" ]] || return 1
  for c in "${crds[@]}"; do [[ -f "$crd_dir/snapshot.storage.k8s.io_$c.yaml" ]] || return 1; done
}

if [[ "${1:-}" == "--print" ]]; then
  print
  complete
  exit
fi

# go_build MODDIR OUT PKG: build into a temporary file, then move it into place (atomic).
go_build() {
  local moddir="$1" out="$2" pkg="$3" start=$SECONDS tmp
  command -v go >/dev/null || { log "go toolchain not found; cannot build $pkg"; return 1; }
  mkdir -p "$(dirname "$out")"
  tmp="$(mktemp "$(dirname "$out")/.build.XXXXXX")"
  log "building $(basename "$out") ($pkg) with go build -p $p (first build ~2-4 min on 2 cores)"
  (cd "$moddir" && go mod download) || { log "FAILED to download the modules of $moddir"; rm -f "$tmp"; return 1; }
  if ! (cd "$moddir" && nice -n "$nice_lvl" go build -p "$p" -trimpath -ldflags "-s -w" -o "$tmp" "$pkg"); then
    rm -f "$tmp"
    log "FAILED to build $pkg"
    return 1
  fi
  mv -f "$tmp" "$out"
  log "built $(basename "$out") in $((SECONDS - start))s"
}

[[ -x "$restic_bin" ]] || go_build "$here/restic" "$restic_bin" github.com/restic/restic/cmd/restic
[[ -x "$s3_bin" ]] || go_build "$here/s3" "$s3_bin" github.com/johannesboyne/gofakes3/cmd/gofakes3
[[ -x "$gcs_bin" ]] || go_build "$here/gcs" "$gcs_bin" github.com/fsouza/fake-gcs-server

if ! complete; then
  command -v go >/dev/null || { log "go toolchain not found; cannot fetch the VolumeSnapshot CRDs"; exit 1; }
  mod_dir="$(cd "$here/snapshot-crds" && go mod download -json github.com/kubernetes-csi/external-snapshotter/client/v8 |
    sed -n 's/.*"Dir": "\(.*\)",*/\1/p')"
  [[ -d "$mod_dir/config/crd" ]] || { log "FAILED: no config/crd in the external-snapshotter client module ($mod_dir)"; exit 1; }
  mkdir -p "$crd_dir"
  for c in "${crds[@]}"; do
    install -m 0644 "$mod_dir/config/crd/snapshot.storage.k8s.io_$c.yaml" "$crd_dir/"
  done
  log "VolumeSnapshot CRDs $crd_v in $crd_dir"
fi

print
