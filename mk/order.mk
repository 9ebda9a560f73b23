# make hot-functions: regenerates cross/order/hot-functions.txt, the functions the agent
# runs in its steady state, which the static release builds lay out first (cross/order/).
# Builds the static x86_64 agent unstripped (its own target dir: the release binaries
# stay as they are) and runs it under callgrind against the harness's control plane and
# containerd (benches/hot_code.rs). Takes ~15 min; needs valgrind. Commit the list.
#   TINYLET_PROFILE_SECS=330 make hot-functions
.PHONY: hot-functions
PROFILE_TARGET_DIR := $(CURDIR)/target/cross-profile

hot-functions:
	command -v valgrind >/dev/null || apt-get install -y valgrind
	CROSS_TARGET_DIR=$(PROFILE_TARGET_DIR) STATIC_STRIP=0 LINK_ORDER=0 \
		cross/build.sh static $(BENCH_MUSL_TARGET)
	TINYLET_PROFILE_BIN=$(PROFILE_TARGET_DIR)/$(BENCH_MUSL_TARGET)/release/tinylet \
		$(CARGO) bench --bench hot_code
