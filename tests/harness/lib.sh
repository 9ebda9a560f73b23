# shellcheck shell=bash
# Shared helpers for the tests/harness scripts. Sourced, never run.
#
# Names the whole project agrees on (tinylet configs use TINYLET_SANDBOX_IMAGE as their
# `sandboxImage`) and small functions: messages, preflight checks, process lookup by
# command line, unmounting everything below a directory, the per-machine slot table that
# keeps concurrent instances' bridges and subnets apart.

# shellcheck disable=SC2034 # used by the scripts that source this file
HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Image names the harness builds and imports into every instance ("localhost/" keeps them
# fully qualified, so nothing ever tries docker.io for them).
TINYLET_SANDBOX_IMAGE=${TINYLET_SANDBOX_IMAGE:-localhost/tinylet/pause:1}
TINYLET_TEST_IMAGE=${TINYLET_TEST_IMAGE:-localhost/tinylet/busybox:1}
# Machine-wide table of taken slots (slot N owns bridge tlhN and subnet 10.99.N.0/24).
HARNESS_SLOTS=${HARNESS_SLOTS:-/run/tinylet-harness}
# Marker files: `down`/`reap` refuse to delete a directory that lacks them.
INSTANCE_MARK=.tinylet-harness
SESSION_MARK=.tinylet-harness-session
# Seconds to wait for containerd to answer after start.
HARNESS_START_TIMEOUT=${HARNESS_START_TIMEOUT:-20}

say() { printf 'harness: %s\n' "$*" >&2; }
die() {
	printf 'harness: error: %s\n' "$*" >&2
	exit 1
}

# Fails with a message naming install-deps.sh when not root or a tool is missing.
preflight() {
	if [ "$(id -u)" -ne 0 ]; then
		die "must run as root (containerd, mounts, network namespaces); install the tools once with tests/harness/install-deps.sh"
	fi
	local t missing=()
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || missing+=("$t")
	done
	if [ "${#missing[@]}" -gt 0 ]; then
		die "missing ${missing[*]}: run tests/harness/install-deps.sh (as root) first"
	fi
}

# Absolute path of $1 (which need not exist yet; its parent must).
abspath() {
	local d b
	d=$(dirname "$1")
	b=$(basename "$1")
	mkdir -p "$d"
	printf '%s/%s\n' "$(cd "$d" && pwd)" "$b"
}

# Pids of processes whose program (basename of argv[0]) is $1 and whose argument list holds
# each further argument as one whole word, e.g. `pids_with_args containerd-shim-runc-v2
# -address "$sock"`.
pids_with_args() {
	local prog=$1 p want found a candidates
	shift
	local -a argv
	# One grep finds the few processes having the first argument at all (-z: NUL-separated
	# arguments, -x: a whole argument); only those are checked in detail.
	candidates=$(grep -lzxF -- "${1:-$prog}" /proc/[0-9]*/cmdline 2>/dev/null || true)
	for p in $candidates; do
		p=${p%/cmdline}
		mapfile -d "" -t argv 2>/dev/null <"$p/cmdline" || continue
		if [ "${#argv[@]}" -eq 0 ] || [ "${argv[0]##*/}" != "$prog" ]; then continue; fi
		for want in "$@"; do
			found=0
			for a in "${argv[@]:1}"; do
				if [ "$a" = "$want" ]; then
					found=1
					break
				fi
			done
			[ "$found" -eq 1 ] || continue 2
		done
		printf '%s\n' "${p#/proc/}"
	done
}

# All descendants of the given pids, found through the ppid field of /proc/*/stat.
descendants() {
	local -A kids=()
	local p stat pid c
	for p in /proc/[0-9]*; do
		read -r stat 2>/dev/null <"$p/stat" || continue
		stat=${stat##*) }
		read -r _ pid _ <<<"$stat"
		kids[$pid]+=" ${p#/proc/}"
	done
	local -a queue=("$@")
	while [ "${#queue[@]}" -gt 0 ]; do
		pid=${queue[0]}
		queue=("${queue[@]:1}")
		for c in ${kids[$pid]:-}; do
			printf '%s\n' "$c"
			queue+=("$c")
		done
	done
}

# True when pid $1 is alive and its command line mentions $2.
pid_matches() {
	[ -n "$1" ] && [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"
}

# Sends SIGTERM to pid $1, waits up to $2 tenths of a second, then SIGKILL.
stop_pid() {
	local pid=$1 tenths=${2:-100} i
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < tenths; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
}

# Mount points at or below directory $1, deepest first (mountinfo's \ooo escapes decoded;
# written for mawk, which has no strtonum).
mounts_under() {
	local dir=${1%/}
	awk -v d="$dir" '
	function unoct(s,   out, i, c) {
		out = ""
		while ((i = index(s, "\\")) > 0) {
			c = substr(s, i + 1, 3)
			out = out substr(s, 1, i - 1) sprintf("%c", substr(c, 1, 1) * 64 + substr(c, 2, 1) * 8 + substr(c, 3, 1))
			s = substr(s, i + 4)
		}
		return out s
	}
	{
		m = unoct($5)
		if (m == d || index(m, d "/") == 1) print length(m) "\t" m
	}' /proc/self/mountinfo | sort -rn | cut -f2-
}

# Unmounts everything at or below $1 (lazily when busy); loops for stacked mounts.
unmount_under() {
	local m round
	for _ in 1 2 3 4 5; do
		local any=0
		while IFS= read -r m; do
			[ -n "$m" ] || continue
			any=1
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done < <(mounts_under "$1")
		[ "$any" -eq 1 ] || return 0
	done
	if [ -n "$(mounts_under "$1")" ]; then
		say "warning: mounts left under $1: $(mounts_under "$1" | tr '\n' ' ')"
	fi
}

# Takes a free slot for instance directory $1 and prints its number. A slot whose
# recorded directory no longer exists is stale and reused (its bridge is removed).
slot_take() {
	local dir=$1 n owner
	mkdir -p "$HARNESS_SLOTS"
	exec 8>"$HARNESS_SLOTS/.lock"
	flock 8
	for ((n = 1; n <= 254; n++)); do
		if [ -e "$HARNESS_SLOTS/slot.$n" ]; then
			owner=$(cat "$HARNESS_SLOTS/slot.$n" 2>/dev/null || true)
			if [ -n "$owner" ] && [ -d "$owner" ]; then continue; fi
		fi
		# Something else (not a stale harness bridge) uses this subnet: leave it alone.
		if ip -o -4 addr show 2>/dev/null | grep -v " tlh$n " | grep -qF " 10.99.$n."; then
			continue
		fi
		ip link del "tlh$n" 2>/dev/null || true
		printf '%s\n' "$dir" >"$HARNESS_SLOTS/slot.$n"
		flock -u 8
		exec 8>&-
		printf '%s\n' "$n"
		return 0
	done
	flock -u 8
	exec 8>&-
	die "no free slot in $HARNESS_SLOTS (254 instances running?)"
}

# Frees slot $2 if it is still recorded for directory $1.
slot_free() {
	local dir=$1 n=$2
	[ -n "$n" ] || return 0
	if [ "$(cat "$HARNESS_SLOTS/slot.$n" 2>/dev/null || true)" = "$dir" ]; then
		rm -f "$HARNESS_SLOTS/slot.$n"
	fi
}

# Cache of built helpers and images, keyed by the harness sources and the host busybox,
# so only the first instance on a machine pays for gcc and tar.
cache_dir() {
	local key bb
	bb=$(readlink -f "$(command -v busybox)")
	key=$({
		cat "$HARNESS_DIR/image.sh" "$HARNESS_DIR/pause.c" "$HARNESS_DIR/reaper.c"
		stat -c '%s %Y' "$bb"
		printf '%s %s\n' "$TINYLET_SANDBOX_IMAGE" "$TINYLET_TEST_IMAGE"
	} | sha256sum | cut -c1-16)
	printf '%s/%s\n' "${HARNESS_CACHE:-/tmp/tinylet-harness-cache}" "$key"
}

# Builds the reaper (reaper.c) into cache dir $1 when missing.
ensure_reaper() {
	mkdir -p "$1"
	[ -x "$1/reaper" ] && return 0
	command -v gcc >/dev/null || die "gcc not found: run tests/harness/install-deps.sh"
	gcc -static -Os -s -o "$1/reaper.tmp.$$" "$HARNESS_DIR/reaper.c" ||
		die "gcc -static failed building reaper.c (libc6-dev? tests/harness/install-deps.sh)"
	mv "$1/reaper.tmp.$$" "$1/reaper"
}

# Runs "$@" (a daemon) in the background under the reaper, its pid written to file $1,
# all output appended to file $2. The reaper reaps whatever the daemon leaves orphaned.
spawn_reaped() {
	local pidfile=$1 log=$2 c
	shift 2
	c=$(cache_dir)
	ensure_reaper "$c"
	"$c/reaper" "$pidfile" "$@" </dev/null >>"$log" 2>&1 &
}

# Random lowercase hex string of $1 bytes.
random_hex() {
	od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'
}

# HARNESS_TRACE=1: trace every command with a timestamp (to find where time goes).
if [ -n "${HARNESS_TRACE:-}" ]; then
	PS4='+ ${EPOCHREALTIME} '
	set -x
fi

# Prints the header comment of script $1 (its usage) to stderr.
usage_text() {
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$1" >&2
}
