# shellcheck shell=bash
# A long set-up step (apt-get, a cold cargo build) run quietly with a heartbeat: its
# output goes to a log file, a line on stderr says it is still going at least every
# LONG_STEP_EVERY seconds (30 by default) whatever stdout is (a CI log or a pipe shows no
# progress bar), and when it fails the log's tail is shown. Sourced, never run.
#
#   long_step LOG LABEL CMD [ARGS...]    returns CMD's exit status

LONG_STEP_EVERY=${LONG_STEP_EVERY:-30}

long_step() {
	local log=$1 label=$2 pid start last=0 now status=0
	shift 2
	mkdir -p "$(dirname "$log")"
	start=$(date +%s)
	printf '%s (log: %s)\n' "$label" "$log" >&2
	"$@" >"$log" 2>&1 </dev/null &
	pid=$!
	# One check a second: sleep costs nothing, and a short step ends without a wait.
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		now=$(date +%s)
		if ((now - last >= LONG_STEP_EVERY && now - start >= LONG_STEP_EVERY)); then
			last=$now
			printf '%s: still running (%ss) %s\n' "$label" "$((now - start))" \
				"$(tail -n 1 "$log" 2>/dev/null | tr -d '\r' | cut -c1-100)" >&2
		fi
	done
	wait "$pid" || status=$?
	if [ "$status" -ne 0 ]; then
		printf '%s: failed (exit %s); the last lines of %s:\n' "$label" "$status" "$log" >&2
		tail -n 40 "$log" >&2
		return "$status"
	fi
	printf '%s: done in %ss\n' "$label" "$(($(date +%s) - start))" >&2
}
