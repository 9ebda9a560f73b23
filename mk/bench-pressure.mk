# bench-pressure (part of make bench): CPU time and memory of the agent's pressure check
# at 50 pods, idle and under memory pressure (benches/pressure.rs; real pod cgroups under
# a private cgroupRoot, removed at the end; needs root, no runtime).
.PHONY: bench-pressure
bench: bench-pressure

bench-pressure:
	$(CARGO) bench --bench pressure
