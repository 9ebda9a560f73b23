#!/usr/bin/env bash
# make demo / make demo-down: tinylet on a private containerd (the test harness) with an
# example pod, left running for you to play with.
#
#   scripts/demo.sh up   [DIR]   deps (tests/harness/install-deps.sh --demo: only what the
#                                demo runs, only when missing),
#                                private containerd in DIR, release build, agent started in
#                                the background with board-configs/x86_64-demo.json (its
#                                /tmp/tinylet-dev paths moved to DIR), examples/pods/hello.json
#                                applied, waits until Running, shows pods, page and logs
#   scripts/demo.sh down [DIR]   stops the agent (pods stay in containerd's state) and tears
#                                down the private containerd with everything in it
#
# DIR defaults to /tmp/tinylet-dev, the directory the board config names. Needs root.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
HARNESS=$ROOT/tests/harness
ACTION=${1:-up}
DIR=${2:-${DEMO_DIR:-/tmp/tinylet-dev}}
CONFIG=$DIR/tinylet-demo.json
BIN=${TINYLET_BIN:-$ROOT/target/release/tinylet}
POD=default/hello
# shellcheck source-path=SCRIPTDIR source=long-step.sh
. "$ROOT/scripts/long-step.sh"

say() { printf '\n== %s\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

# `tinylet CMD ARGS...` with our config (before ARGS: after `--` it would belong to exec).
tinylet() {
	local cmd=$1
	shift
	"$BIN" "$cmd" --config "$CONFIG" "$@"
}

# The pid of the demo's agent when it runs, else nothing. Only our agent: the pid must
# still be a tinylet run with our config.
agent_pid() {
	local pid
	[ -f "$DIR/agent.pid" ] || return 0
	pid=$(cat "$DIR/agent.pid")
	if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "tinylet run --config $CONFIG"; then
		echo "$pid"
	fi
}

stop_agent() {
	local pid
	pid=$(agent_pid)
	if [ -n "$pid" ]; then
		kill "$pid"
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -f "$DIR/agent.pid"
}

down() {
	if [ ! -d "$DIR" ]; then
		echo "demo: nothing running (no demo in $DIR)"
		return 0
	fi
	local was
	was=$([ -n "$(agent_pid)" ] && echo "stopped the agent" || echo "the agent was not running")
	stop_agent
	"$HARNESS/containerd.sh" down "$DIR"
	remove_pod_cgroups
	echo "demo: $was; removed $DIR"
}

# The demo's pods' cgroups (its config's podsCgroupName, below the root of every
# hierarchy), empty once containerd is down: removed, deepest first.
remove_pod_cgroups() {
	local d
	for d in /sys/fs/cgroup/tinylet_demo /sys/fs/cgroup/*/tinylet_demo; do
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	return 0
}

# The pod's phase from `get pod -o json` (no jq on a fresh machine: the first "phase").
phase() {
	tinylet get pod "$POD" -o json 2>/dev/null |
		sed -n 's/^ *"phase": *"\([A-Za-z]*\)".*/\1/p' | head -n1
}

# The release build. On a terminal cargo shows its own progress; elsewhere (CI, a pipe)
# its output goes to a log and a line says every 30 s that it is still going.
build() {
	if [ -t 1 ]; then
		(cd "$ROOT" && "${CARGO:-cargo}" build --release)
	else
		(cd "$ROOT" && long_step "$DIR/build.log" "demo: cargo build --release" \
			"${CARGO:-cargo}" build --release)
	fi
}

up() {
	[ "$(id -u)" -eq 0 ] || die "must run as root (private containerd, CNI bridge)"
	[ -z "$(agent_pid)" ] || die "already running (agent pid $(agent_pid), $DIR); \`make demo-down\` first"
	# What the demo runs only: no test harness, no Kubernetes control plane.
	"$HARNESS/install-deps.sh" --demo
	say "private containerd in $DIR"
	"$HARNESS/containerd.sh" up "$DIR"
	say "building tinylet (release)"
	build
	stop_agent
	sed "s#/tmp/tinylet-dev#$DIR#g" "$ROOT/board-configs/x86_64-demo.json" >"$CONFIG"
	"$BIN" check-config "$CONFIG" >/dev/null || die "config $CONFIG refused"
	say "starting tinylet run --config $CONFIG (log: $DIR/agent.log)"
	setsid "$BIN" run --config "$CONFIG" >>"$DIR/agent.log" 2>&1 </dev/null &
	echo $! >"$DIR/agent.pid"
	say "tinylet apply -f examples/pods/hello.json"
	tinylet apply -f "$ROOT/examples/pods/hello.json"
	local p=''
	for _ in $(seq 120); do
		p=$(phase)
		[ "$p" = Running ] && break
		kill -0 "$(cat "$DIR/agent.pid")" 2>/dev/null || die "the agent exited; see $DIR/agent.log"
		sleep 0.25
	done
	[ "$p" = Running ] || die "pod $POD not Running within 30 s (phase '$p'); see $DIR/agent.log"
	say "tinylet get pods -o wide"
	tinylet get pods -o wide
	say "the page it serves (tinylet exec $POD -- wget -qO- http://127.0.0.1:8080/)"
	for _ in $(seq 20); do
		tinylet exec "$POD" -- wget -qO- http://127.0.0.1:8080/ 2>/dev/null && break
		sleep 0.25
	done
	say "its logs"
	if "$BIN" help 2>&1 | grep -qw logs; then
		tinylet logs "$POD"
	else
		cat "$DIR"/agent/pod-logs/default_hello_*/web/0.log
	fi
	ending "$(cat "$DIR/agent.pid")"
}

# What the demo leaves running and the one line that points the bare `tinylet` of the
# README at it (agent pid $1).
ending() {
	cat <<-MSG

	The demo keeps running: agent pid $1, containerd in $DIR.
	Stop everything with: make demo-down$([ "$DIR" = /tmp/tinylet-dev ] || echo " DEMO_DIR=$DIR")
	To use the README's bare tinylet commands on it, paste this line into your shell:

	export TINYLET_CONFIG=$CONFIG PATH="$(dirname "$BIN"):\$PATH"

	then: tinylet get pods; tinylet describe pod $POD; tinylet exec $POD -- ps
	MSG
}

case $ACTION in
up) up ;;
down) down ;;
*) die "usage: $0 up|down [DIR]" ;;
esac
