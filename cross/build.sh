#!/usr/bin/env bash
# Static musl builds for the gateway targets, and their tests on an emulated ARM CPU.
#
#   cross/build.sh static TARGET...   release binary -> target/cross/TARGET/release/tinylet,
#                                     checked static + stripped, copied to dist/tinylet-TARGET;
#                                     TARGET may also be x86_64-unknown-linux-musl (the
#                                     device-like static build make bench-agent measures;
#                                     it runs natively, no qemu). The local-only build
#                                     without the uplink: STATIC_FEATURES=--no-default-features
#   cross/build.sh test TARGET...     the library's unit tests, run under qemu-user
#   cross/build.sh cross-test         both targets: static, --version under qemu, unit
#                                     tests under qemu, then "size TARGET BYTES" lines
#
# Two ways to build, picked per run (force one with STATIC_VIA=cross|zigbuild):
#   cross     `cross` (cross-rs) in Docker, configured by cross/Cross.toml; used when
#             `cross` is installed and `docker info` succeeds.
#   zigbuild  no Docker: Debian's rustc 1.96 builds std from source for the target
#             (-Zbuild-std), cargo-zigbuild links with zig's musl, qemu-user-static runs
#             the results. cross/install-deps.sh installs the tools when one is missing.
# Both write to target/cross (CROSS_TARGET_DIR), apart from the host's target/, so host
# and cross builds never invalidate each other.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
ALL_TARGETS=(aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf)
export CARGO_TARGET_DIR=${CROSS_TARGET_DIR:-$ROOT/target/cross}
export CROSS_CONFIG=${CROSS_CONFIG:-$ROOT/cross/Cross.toml}
CROSS_VENV=${CROSS_VENV:-/opt/tinylet-cross}
# std's own crates (core, alloc, std, compiler_builtins...) plus panic_abort, which the
# release profile's panic = "abort" links against.
BUILD_STD=("-Zbuild-std=std,panic_abort")
# The release binary's std features replace std's defaults (backtrace, panic-unwind):
# without `backtrace` std carries no symbolizer (addr2line, gimli, object, miniz_oxide)
# and a panic still prints its message; `optimize_for_size` picks std's small
# algorithms (sorts, formatting). Measured in Cargo.toml's release-profile comment.
# Unit tests keep the defaults: the test harness needs unwinding.
RELEASE_STD_FEATURES=${RELEASE_STD_FEATURES-optimize_for_size}
# Cargo feature flags for the release binaries, e.g. STATIC_FEATURES=--no-default-features
# for a local-only firmware build without the cluster uplink.
read -ra FEATURE_ARGS <<<"${STATIC_FEATURES-}"
# Code-generation flags of the release binaries only (docker-less path). No unwind tables:
# with panic = "abort" nothing unwinds, and std without `backtrace` cannot symbolize a
# backtrace anyway, yet .eh_frame and its index were 277 KB of the 1.54 MB aarch64
# local-only binary (2026-12-01). A panic still prints its message and aborts.
# Unit tests keep the tables (their harness unwinds). Empty it to build with them.
RELEASE_RUSTFLAGS=${RELEASE_RUSTFLAGS-"-C force-unwind-tables=no"}
# The release binaries' code laid out for the agent's steady state (cross/order/): v0
# symbol names (only the link sees them: the binary is stripped), so the list of hot
# functions names them the same in every build and target, and a linker that orders
# .text by that list. LINK_ORDER=0 links as zig cc alone would.
LINK_ORDER=${LINK_ORDER:-1}
# An unstripped release build (make hot-functions profiles it by its symbols): STATIC_STRIP=0.
STATIC_STRIP=${STATIC_STRIP:-1}

say() { echo "cross/build: $*" >&2; }
die() {
	say "$*"
	exit 1
}

# Prints "cross" or "zigbuild": the way to build on this machine.
pick_path() {
	case ${STATIC_VIA:-auto} in
	cross | zigbuild) echo "$STATIC_VIA" ;;
	auto)
		if command -v cross >/dev/null && command -v docker >/dev/null &&
			docker info >/dev/null 2>&1; then
			echo cross
		else
			echo zigbuild
		fi
		;;
	*) die "STATIC_VIA must be cross, zigbuild or auto, not '$STATIC_VIA'" ;;
	esac
}

# The qemu-user binary that runs TARGET's code; empty for x86_64 (runs natively).
qemu_for() {
	case $1 in
	aarch64-*) echo qemu-aarch64-static ;;
	armv7-*) echo qemu-arm-static ;;
	x86_64-*) echo "" ;;
	*) die "no qemu known for target $1" ;;
	esac
}

# TARGET in the form cargo's environment variables use: ARMV7_UNKNOWN_LINUX_MUSLEABIHF.
env_triple() { echo "$1" | tr 'a-z-' 'A-Z_'; }

# Sets up the environment of the docker-less path for TARGETs, installing what is missing.
zigbuild_env() {
	local t T qemu missing=
	export PATH=$CROSS_VENV/bin:$PATH
	for t in "$@"; do
		qemu=$(qemu_for "$t")
		if [ -n "$qemu" ] && ! command -v "$qemu" >/dev/null; then missing=1; fi
	done
	if [ -n "$missing" ] || ! command -v cargo-zigbuild >/dev/null ||
		[ ! -x /usr/bin/rustc ] || [ ! -d /usr/lib/rustlib/src/rust/library/std ] ||
		! command -v file >/dev/null; then
		"$ROOT/cross/install-deps.sh"
	fi
	# Debian's compiler pair, whose std source is installed (rustup's has none here).
	export CARGO=/usr/bin/cargo RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
	unset RUSTC_WRAPPER RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
	# -Zbuild-std is unstable: let this stable cargo accept it.
	export RUSTC_BOOTSTRAP=1
	for t in "$@"; do
		T=$(env_triple "$t")
		qemu=$(qemu_for "$t")
		# zig provides crt1.o and libc for musl; rustc must not add its own copies.
		export "CARGO_TARGET_${T}_RUSTFLAGS=-C link-self-contained=no"
		if [ -n "$qemu" ]; then
			export "CARGO_TARGET_${T}_RUNNER=$qemu"
		fi
	done
}

bin_path() { echo "$CARGO_TARGET_DIR/$1/release/tinylet"; }

# Builds the release binaries for TARGETs and checks that each is static and stripped.
# The docker-less path builds all targets in one cargo run: one job graph, so one
# target's single-threaded LTO link overlaps the other's compiles (2 cores in CI).
static() {
	local t
	say "static $* ($(pick_path))"
	case $(pick_path) in
	cross) for t in "$@"; do cross build --release --locked "${FEATURE_ARGS[@]}" --target "$t"; done ;;
	zigbuild)
		zigbuild_env "$@"
		release_rustflags "$@"
		target_args "$@"
		cargo-zigbuild build --release --locked "${FEATURE_ARGS[@]}" "${TARGET_ARGS[@]}" "${BUILD_STD[@]}" \
			"-Zbuild-std-features=$RELEASE_STD_FEATURES"
		;;
	esac
	for t in "$@"; do check_static "$t"; done
}

# Adds RELEASE_RUSTFLAGS and the ordering linker to the per-target flags zigbuild_env set
# for TARGETs.
release_rustflags() {
	local t var
	for t in "$@"; do
		var=CARGO_TARGET_$(env_triple "$t")_RUSTFLAGS
		export "$var=${!var} $RELEASE_RUSTFLAGS -C symbol-mangling-version=v0$(order_linker "$t")"
	done
	if [ "$STATIC_STRIP" = 0 ]; then export CARGO_PROFILE_RELEASE_STRIP=false; fi
}

# Where cross/order/link.sh leaves its summary of TARGET's last link.
order_log() { echo "$CARGO_TARGET_DIR/link-order-$1.log"; }

# " -C linker=SHIM" for TARGET: a shim naming the target for cross/order/link.sh, which
# finds cargo-zigbuild's linker wrapper for it in CARGO_TARGET_<T>_LINKER at link time
# (cargo-zigbuild sets that; a -C linker in the target's rustflags comes after it and wins).
order_linker() {
	local t=$1 shim
	[ "$LINK_ORDER" = 1 ] || return 0
	shim=$CARGO_TARGET_DIR/link-$t.sh
	mkdir -p "$CARGO_TARGET_DIR"
	printf '#!/bin/sh\nTINYLET_ZIGCC_VAR=CARGO_TARGET_%s_LINKER TINYLET_ORDER_LOG=%s exec %s "$@"\n' \
		"$(env_triple "$t")" "$(order_log "$t")" "$ROOT/cross/order/link.sh" >"$shim"
	chmod +x "$shim"
	printf ' -C linker=%s' "$shim"
}

# Fails unless TARGET's binary is static and stripped; copies it to dist/.
check_static() {
	local t=$1 bin info
	bin=$(bin_path "$t")
	info=$(file -b "$bin")
	case $info in
	*"statically linked"* | *"static-pie linked"*) ;;
	*) die "$bin is not statically linked: $info" ;;
	esac
	case $STATIC_STRIP:$info in
	0:*) ;;
	*"not stripped"* | *"with debug_info"*) die "$bin is not stripped: $info" ;;
	*stripped*) ;;
	*) die "$bin: file does not say stripped: $info" ;;
	esac
	# An unstripped build is for reading, not shipping: dist/ keeps the release binary.
	[ "$STATIC_STRIP" = 0 ] && return 0
	mkdir -p dist
	cp "$bin" "dist/tinylet-$t"
	say "$bin: $info"
	if [ -f "$(order_log "$t")" ]; then say "$t code layout: $(cat "$(order_log "$t")")"; fi
}

# Sets TARGET_ARGS to "--target A --target B ..." for cargo.
target_args() {
	local t
	TARGET_ARGS=()
	for t in "$@"; do TARGET_ARGS+=(--target "$t"); done
}

# Runs the static binary's --version on the emulated CPU; fails unless it names tinylet.
version() {
	local t=$1 out
	case $(pick_path) in
	cross) out=$(cross run --release --locked --target "$t" -- --version) ;;
	zigbuild)
		zigbuild_env "$t"
		# shellcheck disable=SC2046 # no qemu word at all for x86_64
		out=$($(qemu_for "$t") "$(bin_path "$t")" --version)
		;;
	esac
	echo "$t: $out"
	case $out in
	"tinylet "*) ;;
	*) die "$t: --version printed '$out'" ;;
	esac
}

# Builds the library's unit tests for TARGETs (dev profile: overflow checks on) and runs
# them under qemu-user. Every test runs: a failing or unrunnable test fails the target.
unit_tests() {
	local t
	say "unit tests $* ($(pick_path))"
	case $(pick_path) in
	cross) for t in "$@"; do cross test --locked --lib --target "$t"; done ;;
	zigbuild)
		zigbuild_env "$@"
		target_args "$@"
		# `cargo zigbuild test` is not accepted; the binary itself takes `test`.
		# No debug info: it only slows the link (zig) and the std build; overflow checks
		# stay on (dev profile). cargo runs each target's tests with its qemu runner.
		# Emulated: tests that bound their time allow this many times more.
		TINYLET_TEST_TIME_FACTOR=${TINYLET_TEST_TIME_FACTOR:-20} \
			CARGO_PROFILE_DEV_DEBUG=0 cargo-zigbuild test --locked --lib "${TARGET_ARGS[@]}" \
			"${BUILD_STD[@]}"
		;;
	esac
}

size_line() { echo "size $1 $(stat -c %s "$(bin_path "$1")")"; }

# The project's size budget of the device binary with every feature on (the cluster
# uplink included): 2.5 MiB. Fails the run when the aarch64 binary is over it.
SIZE_BUDGET=${SIZE_BUDGET:-2621440}
check_budget() {
	local t=aarch64-unknown-linux-musl bytes
	bytes=$(stat -c %s "$(bin_path "$t")")
	[ "$bytes" -le "$SIZE_BUDGET" ] || die "$t binary is $bytes bytes, over the budget of $SIZE_BUDGET"
	echo "size budget: $t $bytes of $SIZE_BUDGET bytes"
}

cross_test() {
	local t
	static "${ALL_TARGETS[@]}"
	for t in "${ALL_TARGETS[@]}"; do version "$t"; done
	unit_tests "${ALL_TARGETS[@]}"
	for t in "${ALL_TARGETS[@]}"; do
		size_line "$t"
	done
	check_budget
}

cmd=${1:-}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")
case $cmd in
version | size)
	for t in "${targets[@]}"; do
		case $cmd in
		version) version "$t" ;;
		size) size_line "$t" ;;
		esac
	done
	;;
static) static "${targets[@]}" ;;
test) unit_tests "${targets[@]}" ;;
cross-test) cross_test ;;
*) die "usage: cross/build.sh static|version|test|size [TARGET...] | cross-test" ;;
esac
