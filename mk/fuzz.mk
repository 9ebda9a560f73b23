# Fuzzing (fuzz/: cargo fuzz + libFuzzer, its own cargo workspace; fuzz/run.sh does the
# work and documents it). cargo-fuzz is installed once per machine under
# /var/cache/tinylet (TINYLET_CACHE), outside the clone.
#   make fuzz-smoke               every target 30 s from the committed seeds (CI)
#   make fuzz                     every target 10 min, growing fuzz/target/corpus
#   make fuzz FUZZ_SECONDS=3600 FUZZ_TARGETS="manifest cri_list"
#   make fuzz-lint                shellcheck fuzz/run.sh (part of make lint)
FUZZ_SMOKE_SECONDS ?= 30
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?=

.PHONY: fuzz fuzz-smoke fuzz-lint
fuzz-smoke:
	fuzz/run.sh smoke $(FUZZ_SMOKE_SECONDS)

fuzz:
	fuzz/run.sh long $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-lint:
	shellcheck fuzz/run.sh

lint: fuzz-lint
