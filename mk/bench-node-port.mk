# make bench-node-port (part of make bench): the kubelet API's node port under a bounded
# flood of strangers on loopback (idle connects, slow TLS handshakes, ClientHellos at
# full speed, from 100 addresses each), while kubectl logs and exec go through the API
# server and a pod is probed every second (benches/node_port.rs; its header says what
# is measured). The agent is the release build (glibc), with the default features.
#   TINYLET_BENCH_FLOOD_SECS=10 make bench-node-port       shorter scenarios (default 20 s)
#   TINYLET_BENCH_COMPARE_BIN=/path/to/tinylet make bench-node-port   another build beside
.PHONY: bench-node-port
bench: bench-node-port

# A copy, as for bench-agent: cargo bench rebuilds target/release/tinylet (opt-level 3).
BENCH_NODE_PORT_BIN := $(CURDIR)/target/bench-node-port/tinylet

bench-node-port:
	$(CARGO) build --release
	mkdir -p $(dir $(BENCH_NODE_PORT_BIN)) && cp target/release/tinylet $(BENCH_NODE_PORT_BIN)
	TINYLET_BIN=$(BENCH_NODE_PORT_BIN) $(CARGO) bench --bench node_port
