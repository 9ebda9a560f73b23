# make bench: performance numbers. The CRI client part (benches/cri.rs) starts its own
# private containerd through tests/harness and prints calls/s, p50/p99 latency, client
# CPU per call and peak RSS for Version, ListContainers and ListPodSandbox.
.PHONY: bench bench-cri
bench: bench-cri

bench-cri:
	$(CARGO) bench --bench cri
