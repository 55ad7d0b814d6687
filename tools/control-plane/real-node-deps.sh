#!/usr/bin/env bash
# Installs what the real node of cluster.sh needs from Debian, when missing (root):
#   containerd 1.6 + runc (the CRI runtime; kubelet 1.36 accepts containerd 1.6, whose missing
#   RuntimeConfig call it only logs), containernetworking-plugins (bridge, host-local, loopback),
#   iptables + conntrack (kube-proxy), openssl (certificates), and for tools/images/build.sh gcc
#   (static pause), debootstrap and python3.
# Debian's packages, not builds from Go modules: they are the versions Debian maintains with security
# fixes, they install in seconds, and containerd/runc are what a Debian-based node runs.
set -euo pipefail
need=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
for pkg in containerd runc containernetworking-plugins iptables conntrack openssl gcc libc6-dev debootstrap python3; do
  have "$pkg" || need+=("$pkg")
done
if ((${#need[@]} == 0)); then
  exit 0
fi
[[ $(id -u) == 0 ]] || { echo "real-node-deps: need root to install: ${need[*]}" >&2; exit 1; }
echo "[real-node deps] installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian starts containerd as a service on install; the real node runs its own instance with its own
# state and socket, so the system one is not needed (and is left as the admin configured it).
