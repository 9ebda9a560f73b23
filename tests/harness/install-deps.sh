#!/usr/bin/env bash
# Installs what the test harness needs on Debian (bookworm), as root. Idempotent: runs
# `apt-get update` once and only when a package is missing; does nothing otherwise.
#
#   tests/harness/install-deps.sh          everything `make test` needs (below), then
#                                          kube-build.sh
#   tests/harness/install-deps.sh --demo   only what `make demo` runs (the first group)
#
# For the demo (and the tests):
#   containerd, runc                 the runtime (containerd 1.6, CRI runtime.v1)
#   containernetworking-plugins      CNI bridge, host-local, portmap, loopback (/usr/lib/cni)
#   iptables                         used by the portmap plugin
#   busybox-static                   the harness images' userland
#   gcc, libc6-dev                   the static pause and reaper programs
#   iproute2, file, util-linux       ip/ss, checking busybox is static, flock/setsid
# For the tests only:
#   docker-registry, apache2-utils   local registry with htpasswd auth (pull tests)
#   skopeo                           pushes OCI archives into that registry
#   the shellcheck package           `make lint` checks these scripts with it
#   systemd                          systemd-analyze verifies packaging/systemd/tinylet.service
#   etcd-server, openssl, socat      kube.sh's control plane: its store, certificates, the relay
#   curl                             kube.sh's readiness checks
#   prometheus                       promtool checks the status endpoint's /metrics
#   python3                          scripts/import-cycles.py, test helpers
#   golang-go, rsync, jq, dpkg-dev   kube-build.sh builds the control plane from Debian's
#                                    `kubernetes` source package (needs deb-src entries)
#   golang-github-modern-go-reflect2-dev   reflect2 v1.0.2 for that build (kube-build.sh)
#
# The deb-src entries for `apt-get source kubernetes` are the machine's own `deb` sources
# as deb-src (apt-sources.sh: same mirrors, proxies and keys), written to $DEB_SRC unless
# the machine has deb-src entries of its own; rewritten when the sources change.
#
# Then it runs kube-build.sh, which builds kube-apiserver & co. once per machine (about 7
# minutes on 2 cores) into /var/cache/tinylet and skips in well under a second afterwards.
# TINYLET_NO_KUBE_BUILD=1 leaves that out (packages only; --demo never builds it).
#
# apt's output goes to $APT_LOG, shown when a step fails; a line on stderr at least every
# 30 s says a long step is still going (scripts/long-step.sh). POLICY_RC_D (for tests):
# where the temporary policy-rc.d goes.
#
# Package scripts are not allowed to start services while installing (policy-rc.d):
# the tests run private instances and want no system containerd or registry around.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../scripts/long-step.sh
. "$HERE/../../scripts/long-step.sh"

DEMO_PACKAGES=(containerd runc containernetworking-plugins iptables busybox-static gcc libc6-dev
	iproute2 file util-linux)
TEST_PACKAGES=(docker-registry apache2-utils skopeo shellcheck systemd etcd-server openssl socat
	curl golang-go rsync jq dpkg-dev golang-github-modern-go-reflect2-dev prometheus python3)
DEB_SRC=/etc/apt/sources.list.d/tinylet-debian-src.sources
APT_LOG=${APT_LOG:-/var/log/tinylet-install-deps.log}
POLICY_RC_D=${POLICY_RC_D:-/usr/sbin/policy-rc.d}

demo=0
case ${1:-} in
--demo) demo=1 ;;
"") ;;
*)
	echo "usage: $0 [--demo]" >&2
	exit 2
	;;
esac
PACKAGES=("${DEMO_PACKAGES[@]}")
[ "$demo" -eq 1 ] || PACKAGES+=("${TEST_PACKAGES[@]}")

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps.sh: must run as root" >&2
	exit 1
fi

# True when an apt source other than ours offers deb-src entries (the admin's).
admin_has_deb_src() {
	grep -rqsE --exclude="$(basename "$DEB_SRC")" '^(Types:.*deb-src|deb-src )' \
		/etc/apt/sources.list /etc/apt/sources.list.d/
}

# Writes $DEB_SRC from the machine's deb sources when it is missing or out of date;
# true when it did (apt's lists must then be refreshed).
deb_src_written() {
	local want
	admin_has_deb_src && return 1
	want="# Written by tinylet's tests/harness/install-deps.sh: the deb sources as deb-src.
$("$HERE/apt-sources.sh" deb-src)"
	if [ "$want" = "$(cat "$DEB_SRC" 2>/dev/null)" ]; then
		return 1
	fi
	echo "install-deps.sh: writing $DEB_SRC (deb-src for apt-get source kubernetes)"
	printf '%s\n' "$want" >"$DEB_SRC"
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
	if [ "$demo" -eq 0 ] && deb_src_written; then
		need_update=1
	fi
	if [ "${#missing[@]}" -eq 0 ] && [ "$need_update" -eq 0 ]; then
		echo "install-deps.sh: all $([ "$demo" -eq 1 ] && echo demo || echo harness) packages present"
		return 0
	fi

	echo "install-deps.sh: installing ${missing[*]:-(nothing; refreshing apt lists)}"
	if [ ! -e "$POLICY_RC_D" ]; then
		printf '#!/bin/sh\n# temporary, from tinylet tests/harness/install-deps.sh\nexit 101\n' >"$POLICY_RC_D"
		chmod 755 "$POLICY_RC_D"
		own_policy=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	long_step "$APT_LOG" "install-deps.sh: apt-get update" apt-get update -q
	if [ "${#missing[@]}" -gt 0 ]; then
		long_step "$APT_LOG" "install-deps.sh: apt-get install (${#missing[@]} packages)" \
			apt-get install -y -q --no-install-recommends "${missing[@]}"
	fi
	echo "install-deps.sh: packages done"
}

own_policy=0
cleanup() {
	if [ "$own_policy" -eq 1 ]; then rm -f "$POLICY_RC_D"; fi
	own_policy=0
}
trap cleanup EXIT
install_packages
cleanup

# The control plane for the cluster tests: built once per machine, skipped when cached.
if [ "$demo" -eq 0 ] && [ -z "${TINYLET_NO_KUBE_BUILD:-}" ]; then
	"$(dirname "$0")/kube-build.sh" >/dev/null
fi
