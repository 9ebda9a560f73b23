# make bench-agent (part of make bench): the agent's numbers beside the project's
# targets (benches/agent.rs; read its header for the phases). Builds the release binary
# (glibc) and, when a static toolchain is here (Docker + cross, or the docker-less one of
# cross/install-deps.sh), the static musl builds (make static): x86_64, which the bench
# runs as the agent (the device's libc and linking; the glibc build's memory is shown
# beside it), and the ARM ones whose size it reports. Without one the static rows say
# "not built" instead of failing, and the glibc build is measured.
#   TINYLET_BENCH_IDLE_SECS=10 make bench-agent    shorter idle window (default 60 s)
.PHONY: bench-agent
bench: bench-agent

BENCH_MUSL_TARGET := x86_64-unknown-linux-musl
BENCH_STATIC_TARGETS := $(BENCH_MUSL_TARGET) aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf

# True when make static can build without installing anything (cross/build.sh's checks).
BENCH_STATIC_TOOLCHAIN = { command -v cross && docker info; } >/dev/null 2>&1 || \
	{ { command -v cargo-zigbuild || test -x /opt/tinylet-cross/bin/cargo-zigbuild; } && \
	  test -x /usr/bin/rustc && test -d /usr/lib/rustlib/src/rust/library/std && \
	  command -v qemu-aarch64-static && command -v qemu-arm-static && command -v file; } >/dev/null 2>&1

# cargo bench rebuilds target/release/tinylet with the bench profile (opt-level 3), so
# the agent runs from a copy of the release (size-optimised) build.
BENCH_AGENT_BIN := $(CURDIR)/target/bench-agent/tinylet

bench-agent:
	$(CARGO) build --release
	mkdir -p $(dir $(BENCH_AGENT_BIN)) && cp target/release/tinylet $(BENCH_AGENT_BIN)
	@if $(BENCH_STATIC_TOOLCHAIN); then \
		$(MAKE) --no-print-directory static TARGET="$(BENCH_STATIC_TARGETS)" || exit 1; \
		built="$(BENCH_STATIC_TARGETS)"; \
		export TINYLET_MUSL_BIN=$(CURDIR)/target/cross/$(BENCH_MUSL_TARGET)/release/tinylet; \
	else \
		echo "bench-agent: no static toolchain (cross/install-deps.sh): static builds not made"; \
		built=""; \
	fi; \
	TINYLET_BIN=$(BENCH_AGENT_BIN) TINYLET_BENCH_STATIC_BUILT="$$built" \
		$(CARGO) bench --bench agent
