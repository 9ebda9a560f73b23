#!/usr/bin/env bash
# Installs what the docker-less static ARM build needs (see cross/README.md), only what
# is missing, so a second run takes well under a second:
#   apt:  rustc-web cargo-web rust-web-src  Debian's rustc/cargo 1.96 + the std source
#                                           that -Zbuild-std compiles for the target
#         qemu-user-static                  runs the ARM binaries and unit tests
#         file                              checks that the result is static and stripped
#   pip:  ziglang cargo-zigbuild            a linker that knows musl for ARM
# Run as root on Debian 12 (bookworm); rustc-web comes from bookworm-security.
#
# Known-good versions (checked 2026-11): rustc-web/cargo-web/rust-web-src
# 1.96.0+dfsg1-1~deb12u2, qemu-user-static 1:7.2+dfsg-7+deb12u18, ziglang 0.17.1,
# cargo-zigbuild 0.24.1. The apt packages are not pinned: Debian's security archive
# keeps only the newest build, so a pin would break as soon as it is updated. The pip
# packages are pinned (PyPI keeps old releases); override with ZIGLANG_VERSION /
# CARGO_ZIGBUILD_VERSION.
#
# The pip packages go into a private venv ($CROSS_VENV, default /opt/tinylet-cross)
# unless cargo-zigbuild and zig are already usable from PATH: Debian's own python3
# refuses system-wide pip installs (PEP 668). cross/build.sh puts the venv on PATH.
set -euo pipefail

ZIGLANG_VERSION=${ZIGLANG_VERSION:-0.17.1}
CARGO_ZIGBUILD_VERSION=${CARGO_ZIGBUILD_VERSION:-0.24.1}
CROSS_VENV=${CROSS_VENV:-/opt/tinylet-cross}
APT_PKGS=(rustc-web cargo-web rust-web-src qemu-user-static file)

say() { echo "cross/install-deps: $*" >&2; }

# Runs a command as root: directly when we are root, else through sudo if there is one.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		say "need root to run: $*"
		exit 1
	fi
}

# Prints the apt packages from APT_PKGS that are not installed.
missing_apt() {
	local p
	for p in "${APT_PKGS[@]}"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
			echo "$p"
	done
}

# True when cargo-zigbuild runs and can find zig (on PATH, through python3 -m ziglang,
# or in the venv this script makes).
have_zigbuild() {
	local path=$CROSS_VENV/bin:$PATH
	PATH=$path command -v cargo-zigbuild >/dev/null || return 1
	PATH=$path command -v zig >/dev/null && return 0
	PATH=$path python3 -c 'import ziglang' 2>/dev/null
}

install_apt() {
	local missing
	mapfile -t missing < <(missing_apt)
	[ ${#missing[@]} -eq 0 ] && return 0
	say "apt-get install ${missing[*]}"
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}"
}

install_pip() {
	have_zigbuild && return 0
	if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
		say "apt-get install python3-venv"
		as_root apt-get update -qq
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
	fi
	say "pip install ziglang==$ZIGLANG_VERSION cargo-zigbuild==$CARGO_ZIGBUILD_VERSION into $CROSS_VENV"
	[ -x "$CROSS_VENV/bin/pip" ] || as_root python3 -m venv "$CROSS_VENV"
	as_root "$CROSS_VENV/bin/pip" install -q --disable-pip-version-check \
		"ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"
}

# The std source must match the compiler exactly, or build-std fails in odd ways.
check_toolchain() {
	local rustc_v src_v
	rustc_v=$(dpkg-query -W -f='${Version}' rustc-web)
	src_v=$(dpkg-query -W -f='${Version}' rust-web-src)
	if [ "$rustc_v" != "$src_v" ]; then
		say "rustc-web $rustc_v and rust-web-src $src_v differ; run apt-get install rustc-web rust-web-src"
		exit 1
	fi
	if [ ! -d /usr/lib/rustlib/src/rust/library/std ]; then
		say "/usr/lib/rustlib/src/rust/library/std missing (rust-web-src)"
		exit 1
	fi
}

install_apt
install_pip
check_toolchain
