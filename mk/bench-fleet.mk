# make bench-fleet: what a fleet of nodes costs the control plane: NODES (default 100)
# tinylet agents on fake CRI runtimes beside as many kubemark v1.20.2 hollow nodes, one
# fleet after the other on the harness's control plane, through counting relays
# (benches/fleet.rs; its header lists the phases and the settings). Not part of
# `make bench` nor of CI: about an hour with the defaults; prints Markdown tables.
# kubemark is built once per machine from the control plane's source tree
# (tests/harness/kubemark-build.sh, cached in /var/cache/tinylet). The agent is the
# static musl x86_64 build when a static toolchain is here (bench-agent.mk's test), else
# the release build, as for bench-uplink.
#   NODES=500 make bench-fleet
#   FLEET_IDLE_SECS=60 FLEET_BASELINE_SECS=30 FLEET_CUT_SECS=60 make bench-fleet   (a quick run)
#   FLEET_KINDS=tinylet make bench-fleet                                            (no hollow nodes)
.PHONY: bench-fleet

# A copy, as for bench-agent: cargo bench rebuilds target/release/tinylet (opt-level 3).
BENCH_FLEET_BIN := $(CURDIR)/target/bench-fleet/tinylet

bench-fleet:
	$(CARGO) build --release
	mkdir -p $(dir $(BENCH_FLEET_BIN)) && cp target/release/tinylet $(BENCH_FLEET_BIN)
	@if $(BENCH_STATIC_TOOLCHAIN); then \
		$(MAKE) --no-print-directory static TARGET=$(BENCH_MUSL_TARGET) || exit 1; \
		export TINYLET_MUSL_BIN=$(CURDIR)/target/cross/$(BENCH_MUSL_TARGET)/release/tinylet; \
	else \
		echo "bench-fleet: no static toolchain (cross/install-deps.sh): the glibc build is measured"; \
	fi; \
	TINYLET_BIN=$(BENCH_FLEET_BIN) $(CARGO) bench --bench fleet
