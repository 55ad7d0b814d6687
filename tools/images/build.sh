#!/usr/bin/env bash
# Build (or reuse) the container images of the real-node tests, on this machine, without a
# registry or a container engine: OCI image archives for `ctr -n k8s.io images import ARCHIVE`.
#   pause                     registry.k8s.io/pause:3.10, the kubelet's sandbox image: pause.c, static
#   blueprint-operator        docker.io/library/blueprint-operator:VERSION, what the Dockerfile builds:
#                             the release binary on glibc + libgcc_s, the CA bundle, user nonroot
#                             (65532) as in distroless, no shell (tests/dockerfile.rs compares them)
#   blueprint-operator-tools  docker.io/library/blueprint-operator-tools:VERSION, for Blueprints' pods:
#                             bash (also as sh), coreutils, gzip, tar, grep, sed, CA certificates,
#                             restic, the release binary and kando -> blueprint-operator; runs as root
#   kanister-tools            ghcr.io/kanisterio/kanister-tools:0.117.0: the same, under the name the
#                             corpus' RDS dump Blueprint gives its delete action's KubeTask
#   postgres-db               docker.io/library/postgres-db:15: Debian's PostgreSQL 15 server and
#                             client; first start initdb's $PGDATA (a volume) with the postgres
#                             user's password from POSTGRES_PASSWORD; serves 0.0.0.0:5432
#   mariadb-db                docker.io/library/mariadb-db:10.11: Debian's MariaDB 10.11 server; first
#                             start initializes the datadir (a volume) with root's password from
#                             MARIADB_ROOT_PASSWORD (root@'%' too); serves 0.0.0.0:3306
#   postgres-kanister-tools   ghcr.io/kanisterio/postgres-kanister-tools:0.117.0 and
#   mysql-sidecar             ghcr.io/kanisterio/mysql-sidecar:0.117.0: the images the corpus'
#                             PostgreSQL and MariaDB Blueprints name, under those names (a registry
#                             mirror would do the same), built here: Debian's postgresql-client-15
#                             or mariadb-client (10.11), bash, gzip, and our kando
#   postgres-kanister-tools-rds  ghcr.io/kanisterio/postgres-kanister-tools:0.119.0: the same as
#                             postgres-kanister-tools, the image of ExportRDSSnapshotToLocation's and
#                             RestoreRDSSnapshot's dump pods (the functions' default, Kanister's)
#   kanister-controller       ghcr.io/kanisterio/controller:0.119.0, Kanister's own controller, the
#                             name its Helm chart runs: the static binary tools/kanister/build.sh
#                             builds from Kanister's source, and the CA bundle
#   postgres-kanister-kando   docker.io/library/postgres-kanister-kando:0.119.0: postgres-kanister-tools
#                             with Kanister's own kando (tools/kanister/build.sh) instead of ours,
#                             for the PostgreSQL Blueprint run by Kanister's controller beside ours
#   bitnami-postgresql        docker.io/bitnamilegacy/postgresql:17, the backup pod of the corpus'
#                             postgres-start-stop Blueprint, under that name: Debian's PostgreSQL 15
#                             client (psql first on PATH, as Bitnami's), bash, coreutils (mkfifo,
#                             tee, tail), grep; runs as root (Bitnami's runs as 1001)
#   kanister-tools-0.110.0    ghcr.io/kanisterio/kanister-tools:0.110.0, :0.116.0 and :0.119.0: the
#   kanister-tools-0.116.0    same as blueprint-operator-tools, under the names that Blueprint's
#   kanister-tools-0.119.0    RestoreData names and that CopyVolumeData defaults to (ours, Kanister's)
# VERSION is Cargo.toml's package version. Images reference docker.io/library/NAME because that is
# what the kubelet asks containerd for when a pod says `image: NAME:TAG`.
#
# Debian packages come from this machine's apt sources: apt-get resolves and downloads them
# (cached in the images cache under debs/), dpkg-deb -x unpacks them; no maintainer script runs.
# Manuals, translations and documentation other than copyright files are left out.
# Archives are cached under ${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}/images/ as
# NAME-TAG-KEY.tar, KEY a hash of the inputs (this directory, the image's definition, the crate's
# sources and rustc version for images with the binary, restic's version), so a warm run only checks
# that the files exist. Newer Debian packages alone do not change KEY: BPO_IMAGES_REBUILD=1 rebuilds.
# NAME-TAG-KEY.packages lists the Debian package versions an archive holds. The three newest
# archives of each image are kept.
#
# Usage: build.sh [NAME...]          build what is missing; prints one line per image
#                                    "NAME=/path/NAME-TAG-KEY.tar" (all images, or the NAMEs given)
#        build.sh --print [NAME...]  only print them (exit 1 if one is missing)
# Env:   CARGO_TARGET_DIR  where `cargo build --release` puts the binary (default: target/ in the repo)
#        BPO_CARGO_NICE    nice level of the release build (default 5)
# Adding an image: one `image` call in define_images below (see the options of `image`).
set -euo pipefail
umask 022
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${BPO_CACHE_DIR:-$HOME/.cache/blueprint-operator}/images"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" == /* ]] || target="$PWD/$target"

print_only=false
if [[ "${1:-}" == "--print" ]]; then
  print_only=true
  shift
fi
selected=("$@")

log() { echo "[images build] $*" >&2; }
fail() {
  log "FAILED: $*"
  exit 1
}

version="$(sed -n '/^\[package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$repo/Cargo.toml")"
[[ -n "$version" ]] || fail "no version in the [package] section of $repo/Cargo.toml"

# hash_paths PATH... : short hash of the names and contents of the files under PATHs (relative to
# the repository, so every checkout of the same sources has the same hash).
hash_paths() {
  (cd "$repo" && find "$@" -type f ! -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16
}
hash_text() { printf '%s' "$1" | sha256sum | cut -c1-16; }

# Inputs of every image: this directory (script, helper, pause.c, files/).
tools_key="$(hash_paths tools/images)"
# The release binary is what the Dockerfile's build stage compiles: the same files (Cargo.toml,
# Cargo.lock, src, benches) and the compiler.
crate_key="$(hash_paths Cargo.toml Cargo.lock src benches)-$(cd "$repo" && rustc -V 2>/dev/null | tr ' ' _ || echo no-rustc)"
operator_bin="$target/release/blueprint-operator"
restic_bin="$("$repo/tools/data-plane/build.sh" --print 2>/dev/null | sed -n 's/^restic=//p')" || true
# Kanister's controller is cached by Kanister's version (tools/kanister/build.sh): the path names it.
kanister_controller="$("$repo/tools/kanister/build.sh" --print 2>/dev/null | sed -n 's/^controller=//p')" || true
kanister_kando="$("$repo/tools/kanister/build.sh" --print 2>/dev/null | sed -n 's/^kando=//p')" || true

# ---- prerequisites (run only when an image that needs them is built) ----------------------------

# apt_install CMD_OR_FILE PACKAGE : install a Debian package when the command (or file) is missing.
apt_install() {
  if [[ "$1" == /* ]]; then [[ -e "$1" ]] && return 0; else command -v "$1" >/dev/null && return 0; fi
  [[ $EUID -eq 0 ]] || fail "$1 is missing: install the Debian package $2 (needs root)"
  log "installing $2 (for $1)"
  apt-get install -y -q --no-install-recommends "$2" >&2 || {
    apt-get update -q >&2 && apt-get install -y -q --no-install-recommends "$2" >&2
  } || fail "apt-get install $2"
}

release_binary_done=false
release_binary() {
  $release_binary_done && return 0
  command -v cargo >/dev/null || fail "cargo not found: the images hold the release binary"
  local start=$SECONDS
  log "cargo build --release --locked --bin blueprint-operator (first build takes several minutes)"
  (cd "$repo" && CARGO_TARGET_DIR="$target" nice -n "${BPO_CARGO_NICE:-5}" \
    cargo build --release --locked --bin blueprint-operator >&2) || fail "cargo build --release"
  [[ -x "$operator_bin" ]] || fail "cargo built no $operator_bin"
  log "release binary ready in $((SECONDS - start))s: $operator_bin"
  release_binary_done=true
}

restic_ready() {
  [[ -n "$restic_bin" && -x "$restic_bin" ]] && return 0
  log "restic missing: building the data plane (tools/data-plane/build.sh)"
  restic_bin="$("$repo/tools/data-plane/build.sh" | sed -n 's/^restic=//p')"
  [[ -x "$restic_bin" ]] || fail "tools/data-plane/build.sh printed no restic"
}

kanister_ready() {
  [[ -n "$kanister_controller" && -x "$kanister_controller" ]] && return 0
  log "Kanister's controller missing: building it (tools/kanister/build.sh)"
  kanister_controller="$("$repo/tools/kanister/build.sh" | sed -n 's/^controller=//p')"
  [[ -x "$kanister_controller" ]] || fail "tools/kanister/build.sh printed no controller"
}

kanister_kando_ready() {
  [[ -n "$kanister_kando" && -x "$kanister_kando" ]] && return 0
  log "Kanister's kando missing: building it (tools/kanister/build.sh)"
  kanister_kando="$("$repo/tools/kanister/build.sh" | sed -n 's/^kando=//p')"
  [[ -x "$kanister_kando" ]] || fail "tools/kanister/build.sh printed no kando"
}

pause_bin() { echo "$work/pause"; }
build_pause() {
  apt_install gcc gcc
  apt_install /usr/lib/x86_64-linux-gnu/libc.a libc6-dev
  gcc -O2 -Wall -Werror -static -s -o "$(pause_bin)" "$here/pause.c" || fail "gcc pause.c"
}

# ---- Debian packages ------------------------------------------------------------------------------

debs="$cache/debs"
# apt with an empty dpkg status: it resolves as for an empty system (every dependency), and it
# neither locks nor touches this machine's package state.
apt_opts=(-q -o "Dir::State::status=$cache/.empty-status" -o "Dir::Cache::archives=$debs"
  -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Install-Recommends=false
  -o APT::Sandbox::User=root)
apt_updated=false

# resolve WITH_DEPS PKG... : prints "package=version" for PKGs (and with WITH_DEPS=true every
# package they depend on), from apt's candidates.
resolve() {
  local deps=$1 out
  shift
  mkdir -p "$debs/partial"
  : >"$cache/.empty-status"
  while true; do
    if $deps; then
      out="$(apt-get -s "${apt_opts[@]}" install "$@" 2>&1)" &&
        out="$(sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1=\2/p' <<<"$out")" && [[ -n "$out" ]] && break
    else
      out="$(for p in "$@"; do
        v="$(apt-cache "${apt_opts[@]}" policy "$p" | sed -n 's/^ *Candidate: //p')"
        [[ -n "$v" && "$v" != "(none)" ]] || exit 1
        echo "$p=$v"
      done)" && break
    fi
    if $apt_updated; then
      log "apt cannot resolve Debian packages: $*"
      [[ -n "$out" ]] && echo "$out" >&2
      return 1
    fi
    log "apt-get update (apt knows none of: $*)"
    apt-get update -q >&2 || return 1
    apt_updated=true
  done
  echo "$out"
}

# deb_file PKG=VERSION : the downloaded .deb (apt-get download's file name), downloading it if needed.
deb_file() {
  local pkg="${1%%=*}" ver="${1#*=}" f
  ver="${ver//:/%3a}"
  for f in "$debs/${pkg}_${ver}_"*.deb; do [[ -f "$f" ]] && echo "$f" && return 0; done
  (cd "$debs" && apt-get "${apt_opts[@]}" download "$1" >&2) || return 1
  for f in "$debs/${pkg}_${ver}_"*.deb; do [[ -f "$f" ]] && echo "$f" && return 0; done
  return 1
}

# unpack ROOTFS WITH_DEPS PKG... : unpacks the packages into ROOTFS, prints their versions.
unpack() {
  local root=$1 deps=$2 list p f
  shift 2
  list="$(resolve "$deps" "$@")" || fail "resolving Debian packages $*"
  for p in $list; do
    f="$(deb_file "$p")" || fail "downloading $p (apt-get update if the mirror no longer has that version)"
    dpkg-deb -x "$f" "$root" || fail "dpkg-deb -x $f"
  done
  echo "$list"
}

# ca_bundle FROM TO : writes TO/etc/ssl/certs/ca-certificates.crt from the certificates the
# ca-certificates package unpacked in FROM, in update-ca-certificates' order (its postinst, which
# makes the bundle on a Debian system, does not run here).
ca_bundle() {
  local crt
  mkdir -p "$2/etc/ssl/certs"
  (cd "$1/usr/share/ca-certificates" && find . -name '*.crt' | sed 's#^\./##' | LC_ALL=C sort) |
    while read -r crt; do sed -e '$a\' "$1/usr/share/ca-certificates/$crt"; done \
      >"$2/etc/ssl/certs/ca-certificates.crt"
  [[ -s "$2/etc/ssl/certs/ca-certificates.crt" ]] || fail "no certificates in the ca-certificates package"
}

# ---- images -------------------------------------------------------------------------------------

print_lines=()
missing=false

# image NAME REF [OPTION...] : one image, REF its full reference (host/path:tag). Options:
#   --packages "P..."          Debian packages, with everything they depend on
#   --packages-no-deps "P..."  Debian packages alone
#   --ca-bundle                only /etc/ssl/certs/ca-certificates.crt of the ca-certificates package
#                              (with ca-certificates among --packages the bundle is made as well)
#   --file DEST=SRC            copy SRC (mode kept); SRC must be in this directory or covered by --key
#   --link DEST=TARGET         symlink
#   --dir DEST:MODE[:UID:GID]  directory
#   --check-elf PATH           fail unless PATH's interpreter and libraries are in the image
#   --before FUNCTION          run before building (e.g. build a file that --file copies)
#   --key TEXT                 more cache key (inputs that are built elsewhere: versions, hashes)
#   anything else goes to `oci.py pack`: --entrypoint JSON, --cmd JSON, --user, --workdir, --env K=V
# The cache key hashes every argument except --file sources, so changing the definition rebuilds.
image() {
  local name=$1 ref=$2
  shift 2
  if ((${#selected[@]})) && [[ " ${selected[*]} " != *" $name "* ]]; then return 0; fi
  local args=("$@") key_args=() a prev=""
  for a in "$@"; do
    if [[ "$prev" == --file ]]; then key_args+=("${a%%=*}"); else key_args+=("$a"); fi
    prev=$a
  done
  local key tag="${ref##*:}"
  key="$(hash_text "$tools_key $name $ref ${key_args[*]}")"
  local archive="$cache/$name-$tag-$key.tar"
  print_lines+=("$name=$archive")
  [[ -f "$archive" && "${BPO_IMAGES_REBUILD:-}" != 1 ]] && return 0
  if $print_only; then
    missing=true
    return 0
  fi

  local start=$SECONDS root pack=() checks=() versions=""
  log "building $name ($ref)"
  root="$(mktemp -d "$work/rootfs-$name.XXXX")"
  set -- "${args[@]}"
  while (($#)); do
    case "$1" in
      --before) "$2" ;;
      --packages) versions+="$(unpack "$root" true $2)"$'\n' ;;
      --packages-no-deps) versions+="$(unpack "$root" false $2)"$'\n' ;;
      --ca-bundle)
        local ca
        ca="$(mktemp -d "$work/ca.XXXX")"
        versions+="$(unpack "$ca" false ca-certificates)"$'\n'
        ca_bundle "$ca" "$root"
        shift
        continue
        ;;
      --file)
        mkdir -p "$root$(dirname "${2%%=*}")"
        cp --preserve=mode "${2#*=}" "$root${2%%=*}" || fail "$name: --file $2"
        chmod go-w "$root${2%%=*}"
        ;;
      --link)
        mkdir -p "$root$(dirname "${2%%=*}")"
        ln -sfn "${2#*=}" "$root${2%%=*}"
        ;;
      --dir)
        local d mode uid gid
        IFS=: read -r d mode uid gid <<<"$2"
        mkdir -p "$root$d"
        chmod "$mode" "$root$d"
        [[ -n "${uid:-}" ]] && pack+=(--chown "$d=$uid:$gid")
        ;;
      --check-elf) checks+=("$2") ;;
      --key) ;;
      *) pack+=("$1" "$2") ;;
    esac
    shift 2
  done
  if [[ -d "$root/usr/share/ca-certificates" && ! -e "$root/etc/ssl/certs/ca-certificates.crt" ]]; then
    ca_bundle "$root" "$root"
  fi
  # As Debian's slim images: no manuals, translations or lintian overrides; the licences stay.
  rm -rf "$root"/usr/share/{man,info,locale,lintian}
  [[ ! -d "$root/usr/share/doc" ]] || find "$root/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  ((${#checks[@]})) && { python3 "$here/oci.py" check-elf "$root" "${checks[@]}" || fail "$name: libraries"; }
  python3 "$here/oci.py" pack "$root" "$archive" --name "$ref" "${pack[@]}" || fail "$name: oci.py pack"
  [[ -z "${versions//$'\n'/}" ]] || grep -v '^$' <<<"$versions" | LC_ALL=C sort -u >"${archive%.tar}.packages"
  rm -rf "$root"
  # Keep the three newest archives of NAME (other checkouts may use older ones), drop the rest.
  local old
  ls -t "$cache/$name-$tag-"*.tar | tail -n +4 | while read -r old; do rm -f "$old" "${old%.tar}.packages"; done
  log "built $name in $((SECONDS - start))s: $(du -h "$archive" | cut -f1) $archive"
}

# busybox's applets as links in the image being built (image() runs this with its $root).
busybox_applets() {
  local applet
  [[ "$("$root/bin/busybox" --help | head -1)" == "BusyBox v1.35"* ]] ||
    fail "busybox: Debian's busybox-static is not 1.35 any more; update the tag in build.sh and examples/"
  for applet in $("$root/bin/busybox" --list); do
    [[ $applet == busybox || -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
  done
}

# tools_image NAME REF : Blueprints' shell tools, restic and kando (our binary), run as root.
tools_image() {
  image "$1" "$2" \
    --packages "bash coreutils gzip tar grep sed ca-certificates curl jq netcat-openbsd procps libc-bin hostname" \
    --link /bin/sh=bash \
    --file "/etc/passwd=$here/files/root/passwd" --file "/etc/group=$here/files/root/group" \
    --file "/etc/nsswitch.conf=$here/files/nsswitch.conf" \
    --dir /tmp:1777 --dir /var/tmp:1777 --dir /root:700 \
    --before restic_ready --key "restic:$restic_bin" --file "/usr/local/bin/restic=$restic_bin" \
    --before release_binary --key "$crate_key" \
    --file "/usr/local/bin/blueprint-operator=$operator_bin" \
    --link /usr/local/bin/kando=blueprint-operator \
    --check-elf /bin/bash --check-elf /bin/tar --check-elf /bin/gzip --check-elf /bin/grep \
    --check-elf /bin/sed --check-elf /bin/ls --check-elf /usr/local/bin/blueprint-operator \
    --cmd '["/bin/bash"]' --workdir /root \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
}

# postgres_tools_image NAME REF : PostgreSQL 15's client programs, bash, gzip, tar, sed and kando.
postgres_tools_image() {
  image "$1" "$2" \
    --packages "bash postgresql-client-15 gzip tar sed coreutils grep ca-certificates" \
    --link /bin/sh=bash \
    --file "/etc/passwd=$here/files/root/passwd" --file "/etc/group=$here/files/root/group" \
    --file "/etc/nsswitch.conf=$here/files/nsswitch.conf" \
    --dir /tmp:1777 --dir /var/tmp:1777 --dir /root:700 \
    --before release_binary --key "$crate_key" \
    --file "/usr/local/bin/blueprint-operator=$operator_bin" \
    --link /usr/local/bin/kando=blueprint-operator \
    --check-elf /bin/bash --check-elf /bin/gzip --check-elf /bin/tar --check-elf /bin/sed \
    --check-elf /usr/lib/postgresql/15/bin/pg_dumpall --check-elf /usr/lib/postgresql/15/bin/pg_dump \
    --check-elf /usr/lib/postgresql/15/bin/psql \
    --check-elf /usr/local/bin/blueprint-operator \
    --cmd '["/bin/bash"]' --workdir /root \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/lib/postgresql/15/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
}

define_images() {
  image pause registry.k8s.io/pause:3.10 \
    --before build_pause --file "/pause=$(pause_bin)" \
    --entrypoint '["/pause"]' --user 65535:65535

  # The Dockerfile's final stage: gcr.io/distroless/cc-debian12:nonroot + the binary. Distroless
  # unpacks the same Debian packages (files where the packages put them) and the same user files.
  image blueprint-operator "docker.io/library/blueprint-operator:$version" \
    --packages-no-deps "libc6 libgcc-s1" --ca-bundle \
    --file "/etc/passwd=$here/files/nonroot/passwd" --file "/etc/group=$here/files/nonroot/group" \
    --file "/etc/nsswitch.conf=$here/files/nsswitch.conf" \
    --dir /tmp:1777 --dir /root:700 --dir /home:755 --dir /home/nonroot:700:65532:65532 \
    --before release_binary --key "$crate_key" \
    --file "/usr/local/bin/blueprint-operator=$operator_bin" \
    --check-elf /usr/local/bin/blueprint-operator \
    --entrypoint '["/usr/local/bin/blueprint-operator"]' --user 65532:65532 --workdir /home/nonroot \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt

  # Blueprints' shell tools (Kanister's tools image has the same and runs as root too).
  tools_image blueprint-operator-tools "docker.io/library/blueprint-operator-tools:$version"
  # The same under the name of Kanister's tools image that the corpus' RDS dump Blueprint names
  # (kanister-examples/aws-rds/postgresql/rds-postgres-dump-blueprint.yaml: kando location delete).
  tools_image kanister-tools ghcr.io/kanisterio/kanister-tools:0.117.0

  # The README's examples run busybox:1.35 (Docker Hub has it); Debian's busybox-static is 1.35.
  image busybox docker.io/library/busybox:1.35 \
    --packages-no-deps busybox-static --before busybox_applets \
    --file "/etc/passwd=$here/files/root/passwd" --file "/etc/group=$here/files/root/group" \
    --dir /tmp:1777 --dir /root:700 --check-elf /bin/busybox --cmd '["sh"]'

  # PostgreSQL 15 server and client for database Blueprints: postgres/entrypoint.sh initializes
  # $PGDATA with POSTGRES_PASSWORD on first start and serves on 0.0.0.0:5432.
  image postgres-db docker.io/library/postgres-db:15 \
    --packages "postgresql-15 postgresql-client-15 bash coreutils findutils util-linux" \
    --link /bin/sh=bash \
    --file "/etc/passwd=$here/files/postgres/passwd" --file "/etc/group=$here/files/postgres/group" \
    --file "/etc/nsswitch.conf=$here/files/nsswitch.conf" \
    --dir /tmp:1777 --dir /var/tmp:1777 --dir /root:700 \
    --dir /var/lib/postgresql:755:999:999 --dir /var/run/postgresql:2775:999:999 \
    --file "/usr/local/bin/postgres-entrypoint=$here/postgres/entrypoint.sh" \
    --check-elf /bin/bash --check-elf /usr/bin/setpriv \
    --check-elf /usr/lib/postgresql/15/bin/postgres --check-elf /usr/lib/postgresql/15/bin/initdb \
    --check-elf /usr/lib/postgresql/15/bin/psql --check-elf /usr/lib/postgresql/15/bin/pg_dump \
    --entrypoint '["/usr/local/bin/postgres-entrypoint"]' \
    --env PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env PGDATA=/var/lib/postgresql/data

  # MariaDB server for database Blueprints: mariadb/entrypoint.sh initializes the datadir with
  # MARIADB_ROOT_PASSWORD (root@localhost and root@'%') on first start, serves 0.0.0.0:3306.
  image mariadb-db docker.io/library/mariadb-db:10.11 \
    --packages "mariadb-server bash coreutils findutils util-linux sed grep mawk" \
    --link /bin/sh=bash \
    --file "/etc/passwd=$here/files/mysql/passwd" --file "/etc/group=$here/files/mysql/group" \
    --file "/etc/nsswitch.conf=$here/files/nsswitch.conf" \
    --dir /tmp:1777 --dir /var/tmp:1777 --dir /root:700 \
    --dir /var/lib/mysql:755:999:999 --dir /run/mysqld:755:999:999 \
    --file "/usr/local/bin/mariadb-entrypoint=$here/mariadb/entrypoint.sh" \
    --check-elf /bin/bash --check-elf /usr/bin/setpriv --check-elf /usr/sbin/mariadbd \
    --check-elf /usr/bin/mariadb \
    --entrypoint '["/usr/local/bin/mariadb-entrypoint"]' \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

  # The images the corpus' database Blueprints name, under those names (as a registry mirror
  # would serve them), built here: Kanister's own are not reachable and the Blueprints run as
  # written. Each has the Blueprint's tools from Debian and our kando.
  # kanister-examples/postgresql/postgres-blueprint.yaml: pg_dumpall, psql, gzip, sed, kando.
  postgres_tools_image postgres-kanister-tools ghcr.io/kanisterio/postgres-kanister-tools:0.117.0
  # The image ExportRDSSnapshotToLocation and RestoreRDSSnapshot run their dump and restore in
  # (Kanister's default postgres tools image, src/functions/rds/dump.rs): pg_dump, psql, tar,
  # gzip, base64, kando.
  postgres_tools_image postgres-kanister-tools-rds ghcr.io/kanisterio/postgres-kanister-tools:0.119.0

  # kanister-examples/maria/maria-blueprint.yaml: mysql, mysqldump (mysql-sidecar/mysqldump drops
  # MySQL 8's --column-statistics=0, which MariaDB's dump refuses), gzip, kando.
  image mysql-sidecar ghcr.io/kanisterio/mysql-sidecar:0.117.0 \
    --packages "bash mariadb-client gzip coreutils ca-certificates" \
    --link /bin/sh=bash \
    --file "/etc/passwd=$here/files/root/passwd" --file "/etc/group=$here/files/root/group" \
    --file "/etc/nsswitch.conf=$here/files/nsswitch.conf" \
    --dir /tmp:1777 --dir /var/tmp:1777 --dir /root:700 \
    --file "/usr/local/bin/mysqldump=$here/mysql-sidecar/mysqldump" \
    --before release_binary --key "$crate_key" \
    --file "/usr/local/bin/blueprint-operator=$operator_bin" \
    --link /usr/local/bin/kando=blueprint-operator \
    --check-elf /bin/bash --check-elf /bin/gzip --check-elf /usr/bin/mariadb \
    --check-elf /usr/bin/mariadb-dump --check-elf /usr/local/bin/blueprint-operator \
    --cmd '["/bin/bash"]' --workdir /root \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt

  # Kanister's own controller, the peer tests/real/kanister.rs installs with Kanister's Helm chart
  # (which names this image). Kanister's Dockerfile adds the static binary to ubi-minimal as
  # /controller; the chart sets the user (1000) and a read-only root filesystem.
  image kanister-controller ghcr.io/kanisterio/controller:0.119.0 \
    --ca-bundle --dir /tmp:1777 \
    --before kanister_ready --key "kanister:$kanister_controller" \
    --file "/controller=$kanister_controller" \
    --entrypoint '["/controller"]' \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt

  # The corpus PostgreSQL Blueprint's tools with Kanister's own kando (a static Go binary), so
  # that a dump Kanister's controller makes is pushed and pulled by Kanister's code
  # (tests/real/kanister_parity.rs restores it with ours and the other way round).
  image postgres-kanister-kando docker.io/library/postgres-kanister-kando:0.119.0 \
    --packages "bash postgresql-client-15 gzip tar sed coreutils grep ca-certificates" \
    --link /bin/sh=bash \
    --file "/etc/passwd=$here/files/root/passwd" --file "/etc/group=$here/files/root/group" \
    --file "/etc/nsswitch.conf=$here/files/nsswitch.conf" \
    --dir /tmp:1777 --dir /var/tmp:1777 --dir /root:700 \
    --before kanister_kando_ready --key "kanister:$kanister_kando" \
    --file "/usr/local/bin/kando=$kanister_kando" \
    --check-elf /bin/bash --check-elf /bin/gzip --check-elf /usr/lib/postgresql/15/bin/pg_dumpall \
    --check-elf /usr/lib/postgresql/15/bin/psql \
    --cmd '["/bin/bash"]' --workdir /root \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/lib/postgresql/15/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt

  # kanister-examples/postgresql/postgres-start-stop-blueprint.yaml: its KubeOps pod keeps a psql
  # session open through a FIFO (mkfifo, tee, tail -f, grep) into which its KubeExec phases write
  # pg_backup_start and pg_backup_stop; PostgreSQL 15 has both (Bitnami's 17 too).
  image bitnami-postgresql docker.io/bitnamilegacy/postgresql:17 \
    --packages "bash postgresql-client-15 coreutils grep" \
    --link /bin/sh=bash \
    --file "/etc/passwd=$here/files/root/passwd" --file "/etc/group=$here/files/root/group" \
    --file "/etc/nsswitch.conf=$here/files/nsswitch.conf" \
    --dir /tmp:1777 --dir /var/tmp:1777 --dir /root:700 \
    --check-elf /bin/bash --check-elf /usr/bin/mkfifo --check-elf /usr/bin/tee \
    --check-elf /usr/bin/tail --check-elf /bin/grep --check-elf /usr/lib/postgresql/15/bin/psql \
    --cmd '["/bin/bash"]' --workdir /root \
    --env PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  # That Blueprint's restore names kanister-tools:0.110.0 for RestoreData; its CopyVolumeData
  # names no image, so each controller runs its default (ours 0.116.0, Kanister 0.119.0's own).
  tools_image kanister-tools-0.110.0 ghcr.io/kanisterio/kanister-tools:0.110.0
  tools_image kanister-tools-0.116.0 ghcr.io/kanisterio/kanister-tools:0.116.0
  tools_image kanister-tools-0.119.0 ghcr.io/kanisterio/kanister-tools:0.119.0
}

known=" pause blueprint-operator blueprint-operator-tools kanister-tools busybox postgres-db mariadb-db postgres-kanister-tools postgres-kanister-tools-rds mysql-sidecar kanister-controller postgres-kanister-kando bitnami-postgresql kanister-tools-0.110.0 kanister-tools-0.116.0 kanister-tools-0.119.0 "
for n in "${selected[@]}"; do
  [[ "$known" == *" $n "* ]] || fail "unknown image $n (images:$known)"
done

if ! $print_only; then
  mkdir -p "$cache"
  apt_install python3 python3
  apt_install dpkg-deb dpkg
  work="$(mktemp -d "$cache/.work.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
else
  work="$cache/.work"
fi
define_images
printf '%s\n' "${print_lines[@]}"
! $missing
