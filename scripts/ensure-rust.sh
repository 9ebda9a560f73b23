#!/usr/bin/env bash
# Prints the cargo to build tinylet with, installing one from the Debian archive first
# when none is on PATH or the one found is older than Cargo.toml's `rust-version`, so
# `make demo` and `make test` work on a fresh Debian machine without a Rust toolchain.
#
#   scripts/ensure-rust.sh          cargo + rustc (what `make demo` and `make build` need)
#   scripts/ensure-rust.sh --lint   also rustfmt and clippy (`make test`, `make lint`)
#
# Debian 12 (bookworm) has a current toolchain as rustc-web/cargo-web (bookworm-security,
# the same packages cross/install-deps.sh uses), with rustfmt-web and rust-web-clippy;
# later releases have it as rustc/cargo/rustfmt/rust-clippy. Installed without
# recommends (they would bring LLVM's development packages, ~580 MB, unused), apt's
# output in $RUST_APT_LOG, shown only when it fails. Messages go to stderr: the one line
# on stdout is the cargo to use (Makefile: CARGO).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUST_APT_LOG=${RUST_APT_LOG:-/var/log/tinylet-ensure-rust.log}
# shellcheck source-path=SCRIPTDIR source=long-step.sh
. "$ROOT/scripts/long-step.sh"

say() { echo "ensure-rust: $*" >&2; }

# The minimum version, e.g. 1.85, from Cargo.toml.
wanted() {
	sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' "$ROOT/Cargo.toml" | head -n1
}

# True when version $1 (x.y[.z]) is at least $2 (x.y).
at_least() {
	local a b
	IFS=. read -r -a a <<<"$1"
	IFS=. read -r -a b <<<"$2"
	((a[0] > b[0] || (a[0] == b[0] && a[1] >= b[1])))
}

# The version of cargo at path $1, empty when it does not run.
version_of() {
	"$1" --version 2>/dev/null | sed -n 's/^cargo \([0-9][0-9.]*\).*/\1/p'
}

# A cargo new enough: the one on PATH, else Debian's in /usr/bin (installed earlier but
# shadowed by an older one on PATH); empty when there is none.
usable_cargo() {
	local c v
	for c in "$(command -v cargo || true)" /usr/bin/cargo; do
		if [ -z "$c" ] || [ ! -x "$c" ]; then continue; fi
		v=$(version_of "$c")
		if [ -n "$v" ] && at_least "$v" "$(wanted)"; then
			echo "$c"
			return
		fi
	done
}

# True when cargo $1 has working fmt and clippy subcommands.
has_lint() {
	"$1" fmt --version >/dev/null 2>&1 && "$1" clippy --version >/dev/null 2>&1
}

# Installs Debian's toolchain packages (rustfmt and clippy too with --lint).
install_debian() {
	local lint=$1 pkgs
	if [ "$(id -u)" != 0 ]; then
		say "no cargo >= $(wanted) found and not root: install Rust $(wanted) or newer (rustup, or apt-get install rustc-web cargo-web), then run make again"
		exit 1
	fi
	long_step "$RUST_APT_LOG" "ensure-rust: apt-get update" apt-get update -q || true
	if apt-cache show rustc-web >/dev/null 2>&1; then
		pkgs=(rustc-web cargo-web)
		[ "$lint" = 0 ] || pkgs+=(rustfmt-web rust-web-clippy)
	else
		pkgs=(rustc cargo)
		[ "$lint" = 0 ] || pkgs+=(rustfmt rust-clippy)
	fi
	say "installing Rust from the Debian archive (${pkgs[*]}); the first build then takes 5-20 minutes"
	long_step "$RUST_APT_LOG" "ensure-rust: apt-get install ${pkgs[*]}" \
		env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}"
}

main() {
	local lint=0 cargo
	[ "${1:-}" != --lint ] || lint=1
	cargo=$(usable_cargo)
	if [ -z "$cargo" ] || { [ "$lint" = 1 ] && ! has_lint "$cargo" && [ "$cargo" = /usr/bin/cargo ]; }; then
		install_debian "$lint"
		cargo=$(usable_cargo)
	fi
	if [ -z "$cargo" ]; then
		say "the Debian archive's Rust is older than $(wanted): install Rust $(wanted) or newer (rustup)"
		exit 1
	fi
	if [ "$lint" = 1 ] && ! has_lint "$cargo"; then
		say "$cargo has no fmt/clippy: add them (rustup component add rustfmt clippy)"
		exit 1
	fi
	echo "$cargo"
}

main "$@"
