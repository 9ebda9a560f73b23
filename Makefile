# tinylet — top-level targets. Pieces owned by one concern live in mk/*.mk.
#   make demo        run the agent on a private containerd with an example pod
#   make test        the whole host test suite (starts its own containerd)
#   make cross-test  static aarch64 + armv7 builds, unit tests under qemu
#   make arm-e2e     the static aarch64 agent on an emulated 256/128 MB board
#   make bench       performance numbers (CRI latency, RSS, CPU, sizes)
#   make bench-fleet what N tinylet nodes cost the control plane beside kubemark's (not in bench)
#   make hot-functions  cross/order/hot-functions.txt again (the code layout's profile)
#   make static TARGET=aarch64-unknown-linux-musl
#   make release     per-target tarballs in dist/
#   make install     target/release/tinylet as /usr/local/bin/tinylet

# The cargo to use: the one on PATH when it is new enough for Cargo.toml's rust-version,
# else Debian's, installed once when missing (scripts/ensure-rust.sh; rustfmt and clippy
# too only for the goals that run them: `make demo` needs neither). CARGO=... overrides;
# run once per make invocation.
ifndef CARGO
RUST_LINT := $(if $(filter test lint fmt,$(MAKECMDGOALS)),--lint)
CARGO := $(shell scripts/ensure-rust.sh $(RUST_LINT) || echo false)
endif
export CARGO
.DEFAULT_GOAL := build

.PHONY: build test test-deps lint fmt
build:
	$(CARGO) build --release

# Packages the tests (and lint's shellcheck) need: containerd, runc, CNI, registry, ...;
# installed only when missing, and the cluster tests' control plane, built once per
# machine (kube-build.sh): well under a second on a prepared machine.
# Then lint: it is cheap and catches most mistakes before the slow tests run.
test: test-deps lint
	$(CARGO) test --all-targets -- --test-threads=2

test-deps:
	tests/harness/install-deps.sh

lint:
	$(CARGO) fmt --all -- --check
	python3 scripts/import-cycles.py
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) clippy --no-default-features --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# The release agent on PATH (every command in the README uses a bare `tinylet`).
PREFIX ?= /usr/local
.PHONY: install
install: build
	install -D -m 0755 target/release/tinylet $(DESTDIR)$(PREFIX)/bin/tinylet
	@echo "installed $(DESTDIR)$(PREFIX)/bin/tinylet"

include $(wildcard mk/*.mk)
