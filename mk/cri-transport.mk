# make bench, transport part (benches/cri_transport.rs): what a gRPC call costs the
# client itself - calls/s, client CPU per call, heap allocations per call - against the
# in-process fake server of tests/cri_fake on another thread. No containerd needed.
.PHONY: bench-transport
bench: bench-transport

bench-transport:
	$(CARGO) bench --bench cri_transport
