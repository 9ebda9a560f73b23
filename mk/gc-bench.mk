# bench-gc: CPU time and allocations of one GC pass's policy computation over 100 images
# and 200 containers (benches/gc.rs; no runtime needed). Part of `make bench` (wired by
# the lead).
.PHONY: bench-gc
bench-gc:
	$(CARGO) bench --bench gc
