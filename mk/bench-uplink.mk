# make bench-uplink (part of make bench): the agent joined as a Node to the project's
# control plane (tests/harness/kube.sh, v1.20.2) on a private containerd, measured from
# outside beside the project's targets and kubelet v1.20's figures (benches/uplink.rs;
# its header says what each phase does). The agent is the static musl x86_64 build when
# a static toolchain is here (bench-agent.mk's test), else the release build (glibc);
# both with the default features (`uplink`).
#   TINYLET_BENCH_UPLINK_SECS=120 make bench-uplink    shorter idle windows (default 300 s)
.PHONY: bench-uplink
bench: bench-uplink

# A copy, as for bench-agent: cargo bench rebuilds target/release/tinylet (opt-level 3).
BENCH_UPLINK_BIN := $(CURDIR)/target/bench-uplink/tinylet

bench-uplink:
	$(CARGO) build --release
	mkdir -p $(dir $(BENCH_UPLINK_BIN)) && cp target/release/tinylet $(BENCH_UPLINK_BIN)
	@if $(BENCH_STATIC_TOOLCHAIN); then \
		$(MAKE) --no-print-directory static TARGET=$(BENCH_MUSL_TARGET) || exit 1; \
		export TINYLET_MUSL_BIN=$(CURDIR)/target/cross/$(BENCH_MUSL_TARGET)/release/tinylet; \
	else \
		echo "bench-uplink: no static toolchain (cross/install-deps.sh): the glibc build is measured"; \
	fi; \
	TINYLET_BIN=$(BENCH_UPLINK_BIN) $(CARGO) bench --bench uplink
