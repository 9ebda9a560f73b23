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
#   etcd-server, openssl, socat      kube.sh's control plane: its store, certificates, the relay
#   curl                             kube.sh's readiness checks
#   prometheus                       promtool checks the status endpoint's /metrics
#   golang-go, rsync, jq, dpkg-dev   kube-build.sh builds the control plane from Debian's
#                                    `kubernetes` source package (needs the deb-src entry below)
#   golang-github-modern-go-reflect2-dev   reflect2 v1.0.2 for that build (kube-build.sh)
#
# Then it runs kube-build.sh, which builds kube-apiserver & co. once per machine (about 7
# minutes on 2 cores) into /var/cache/tinylet and skips in well under a second afterwards.
# TINYLET_NO_KUBE_BUILD=1 leaves that out (packages only).
#
# Package scripts are not allowed to start services while installing (policy-rc.d):
# the tests run private instances and want no system containerd or registry around.
set -euo pipefail

PACKAGES=(containerd runc containernetworking-plugins iptables busybox-static gcc libc6-dev
	docker-registry apache2-utils skopeo iproute2 file util-linux shellcheck systemd
	etcd-server openssl socat curl golang-go rsync jq dpkg-dev golang-github-modern-go-reflect2-dev
	prometheus python3)
# Debian's source packages (for `apt-get source kubernetes`); not enabled on these machines.
DEB_SRC=/etc/apt/sources.list.d/tinylet-debian-src.sources

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps.sh: must run as root" >&2
	exit 1
fi

# True when some apt source already offers bookworm's deb-src (ours or the admin's).
have_deb_src() {
	grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/
}

# Installs the missing packages (apt-get update once, only when something is missing).
install_packages() {
	local installed missing=() p need_update=0
	# One dpkg-query for all (packages it has never heard of are simply not listed).
	installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2>/dev/null |
		awk '$2 == "install" && $3 == "ok" && $4 == "installed" { print $1 }' || true)
	for p in "${PACKAGES[@]}"; do
		grep -qxF "$p" <<<"$installed" || missing+=("$p")
	done
	if ! have_deb_src; then
		echo "install-deps.sh: adding $DEB_SRC (deb-src for apt-get source kubernetes)"
		cat >"$DEB_SRC" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
		need_update=1
	fi
	if [ "${#missing[@]}" -eq 0 ] && [ "$need_update" -eq 0 ]; then
		echo "install-deps.sh: all harness packages present"
		return 0
	fi

	echo "install-deps.sh: installing ${missing[*]:-(nothing; refreshing apt lists)}"
	local policy=/usr/sbin/policy-rc.d
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\n# temporary, from tinylet tests/harness/install-deps.sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		own_policy=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	if [ "${#missing[@]}" -gt 0 ]; then
		apt-get install -y --no-install-recommends "${missing[@]}"
	fi
	echo "install-deps.sh: packages done"
}

own_policy=0
cleanup() {
	if [ "$own_policy" -eq 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
	own_policy=0
}
trap cleanup EXIT
install_packages
cleanup

# The control plane for the cluster tests: built once per machine, skipped when cached.
if [ -z "${TINYLET_NO_KUBE_BUILD:-}" ]; then
	"$(dirname "$0")/kube-build.sh" >/dev/null
fi
