#!/usr/bin/env bash
# The fuzz targets of fuzz/fuzz_targets (cargo fuzz, libFuzzer), driven the same way by
# `make fuzz-smoke` (CI) and `make fuzz` (by hand). Run from anywhere.
#
#   fuzz/run.sh install                   cargo-fuzz into the cache (once per machine)
#   fuzz/run.sh smoke [SECONDS]           every target SECONDS (default 30) from the
#                                         committed seeds only, fixed seed: repeatable
#   fuzz/run.sh long [SECONDS] [TARGET..] each (or the named) target SECONDS (default
#                                         600), growing fuzz/target/corpus/TARGET
#   fuzz/run.sh list                      the targets
#
# Environment:
#   TINYLET_CACHE     where tools are kept across clones (default /var/cache/tinylet)
#   FUZZ_TARGET_DIR   cargo's build directory for the fuzz crate (default fuzz/target)
#   FUZZ_SANITIZER    none (default: fastest; the targets are safe Rust) or address
#
# Every run prints one line per target: executions, seconds, coverage, corpus size.
# A crash, a panic, a timeout (10 s for one input) or an input needing more than
# 512 MiB stops the run with exit 1 and keeps the input under
# fuzz/target/artifacts/TARGET/ (reproduce: `fuzz/run.sh repro TARGET FILE`).
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.2
CACHE=${TINYLET_CACHE:-/var/cache/tinylet}
TOOL_DIR=$CACHE/cargo-fuzz-$CARGO_FUZZ_VERSION
BUILD_DIR=${FUZZ_TARGET_DIR:-fuzz/target}
SANITIZER=${FUZZ_SANITIZER:-none}
TARGETS=(manifest config quantity image_ref registry_key cri_list cri_log http_status ws_frames
	exec_status http_head kubelet_query dns_answer x509_subject watch_lines yaml pod_policy)
# Outputs live under fuzz/target (ignored by git, and by the shellcheck test's walk).
OUT=fuzz/target
export PATH=$TOOL_DIR/bin:$PATH
# cargo fuzz passes -Z flags to rustc (sanitizer coverage); stable rustc accepts them
# with this, so no nightly toolchain is needed.
export RUSTC_BOOTSTRAP=1

install() {
	if cargo-fuzz --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; then
		return
	fi
	echo "fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION into $TOOL_DIR"
	cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$TOOL_DIR"
}

build() {
	cargo fuzz build --sanitizer "$SANITIZER" --target-dir "$BUILD_DIR"
}

# run TARGET SECONDS SEED CORPUS_DIR: one bounded libFuzzer run, summarized.
run() {
	local target=$1 seconds=$2 seed=$3 corpus=$4
	local artifacts=$OUT/artifacts/$target log=$OUT/logs/$target.log
	local -a dict=()
	mkdir -p "$corpus" "$artifacts" "$OUT/logs"
	if [[ -f fuzz/dicts/$target.dict ]]; then
		dict=("-dict=fuzz/dicts/$target.dict")
	fi
	if ! cargo fuzz run --sanitizer "$SANITIZER" --target-dir "$BUILD_DIR" \
		"$target" "$corpus" "fuzz/seeds/$target" -- \
		-max_total_time="$seconds" -seed="$seed" -timeout=10 -rss_limit_mb=512 \
		-artifact_prefix="$artifacts/" -print_final_stats=1 "${dict[@]}" \
		>"$log" 2>&1; then
		tail -n 40 "$log" >&2
		echo "fuzz: $target FAILED; the input is in $artifacts/ (full log: $log)" >&2
		return 1
	fi
	summary "$target" "$log" "$corpus"
}

# summary TARGET LOG CORPUS: "TARGET: N execs in S s (R/s), cov C, ft F, corpus K".
summary() {
	local execs secs cov ft
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$2" | tail -n 1)
	secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$2" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$2" | tail -n 1 | cut -d' ' -f2)
	ft=$(grep -o 'ft: [0-9]*' "$2" | tail -n 1 | cut -d' ' -f2)
	execs=${execs:-0} secs=${secs:-0}
	printf 'fuzz: %-13s %9s execs in %4s s (%s/s), cov %s, ft %s, corpus %s files\n' \
		"$1" "$execs" "$secs" "$((execs / (secs > 0 ? secs : 1)))" \
		"${cov:-?}" "${ft:-?}" "$(find "$3" -type f | wc -l)"
}

case ${1:-} in
install)
	install
	;;
smoke)
	seconds=${2:-30}
	install
	build
	for t in "${TARGETS[@]}"; do
		# A fresh corpus each time: the run starts from the committed seeds only.
		rm -rf "$OUT/smoke-corpus/$t"
		run "$t" "$seconds" 1 "$OUT/smoke-corpus/$t"
	done
	;;
long)
	seconds=${2:-600}
	shift $(($# < 2 ? $# : 2))
	targets=("$@")
	if ((${#targets[@]} == 0)); then
		targets=("${TARGETS[@]}")
	fi
	install
	build
	for t in "${targets[@]}"; do
		run "$t" "$seconds" 0 "$OUT/corpus/$t"
	done
	;;
repro)
	install
	cargo fuzz run --sanitizer "$SANITIZER" --target-dir "$BUILD_DIR" "$2" "$3"
	;;
list)
	printf '%s\n' "${TARGETS[@]}"
	;;
*)
	sed -n '2,20p' "$0" >&2
	exit 2
	;;
esac
