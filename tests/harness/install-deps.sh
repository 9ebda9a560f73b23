#!/usr/bin/env bash
# Installs what the test harness needs on Debian (bookworm), as root. Idempotent: runs
# `apt-get update` once and only when a package is missing; does nothing otherwise.
#
#   containerd, runc                 the runtime under test (containerd 1.6, CRI runtime.v1)
#   containernetworking-plugins      CNI bridge, host-local, portmap, loopback (/usr/lib/cni)
#   iptables                         used by the portmap plugin
#   busybox-static                   the test images' userland
#   gcc, libc6-dev                   the static pause and reaper programs
#   docker-registry, apache2-utils   local registry with htpasswd auth (pull tests)
#   skopeo                           pushes OCI archives into that registry
#   iproute2, file, util-linux       ip/ss, checking busybox is static, flock/setsid
#   the shellcheck package           `make lint` checks these scripts with it
#   systemd                          systemd-analyze verifies packaging/systemd/tinylet.service
#
# Package scripts are not allowed to start services while installing (policy-rc.d):
# the tests run private instances and want no system containerd or registry around.
set -euo pipefail

PACKAGES=(containerd runc containernetworking-plugins iptables busybox-static gcc libc6-dev
	docker-registry apache2-utils skopeo iproute2 file util-linux shellcheck systemd)

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps.sh: must run as root" >&2
	exit 1
fi

# One dpkg-query for all (packages it has never heard of are simply not listed).
installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2>/dev/null |
	awk '$2 == "install" && $3 == "ok" && $4 == "installed" { print $1 }' || true)
missing=()
for p in "${PACKAGES[@]}"; do
	grep -qxF "$p" <<<"$installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps.sh: all harness packages present"
	exit 0
fi

echo "install-deps.sh: installing ${missing[*]}"
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# temporary, from tinylet tests/harness/install-deps.sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	own_policy=1
fi
cleanup() { if [ "$own_policy" -eq 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
echo "install-deps.sh: done"
