#!/bin/busybox sh
# shellcheck shell=dash disable=SC3043 # busybox ash has `local`
# PID 1 of the emulated aarch64 board (tests/arm_e2e/run.sh): starts containerd and the
# static tinylet with the repo's board config for its RAM (256 or 128 MB), checks what the phase
# (e2e.phase= on the kernel command line) asks, measures, writes checks, a summary and
# logs as a tar to /dev/vdc, and cuts the power (no clean shutdown, ever).
#   first   apply 3 pods -> Running; a container killed -> restartCount 1; the agent
#           SIGKILLed and started again -> no restart; get pods, logs, exec answer
#   second, third
#           after the power cut: no apply, no registry (no network at all): every pod
#           Running again
# Every wait polls a condition under a deadline of minutes (the board is emulated).
# The tree is unpacked packages only: no /proc, /sys, /run of its own.
/bin/busybox mkdir -p /proc /sys /run /tmp
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
/bin/busybox mount -t tmpfs -o mode=755 run /run
/bin/busybox mkdir -p /run/bb /run/results
/bin/busybox --install -s /run/bb
/bin/busybox ln -s /e2e/tinylet /run/bb/tinylet
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:/run/bb
R=/run/results
E=/e2e
PHASE=$(sed -n 's/.*e2e\.phase=\([a-z]*\).*/\1/p' /proc/cmdline 2>/dev/null || true)
exec >"$R/guest.log" 2>&1

up() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(up)" 'BEGIN { printf "%.1f", b - a }'; }
kb() { awk '/^VmRSS/ { print $2; exit }' "/proc/$1/status" 2>/dev/null || echo 0; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
threads() { awk '/^Threads/ { print $2 }' "/proc/$1/status"; }
# To the log and, as progress, to the serial console.
log() { echo "[$(up)] $*" | tee /dev/console; }

# Writes what there is to the results disk and cuts the power.
finish() {
	echo "$1" >"$R/verdict"
	cp /run/tinylet.log "$R/tinylet.log" 2>/dev/null
	tail -n 200 /run/containerd.log >"$R/containerd.log" 2>/dev/null
	free -m >"$R/free" 2>/dev/null
	tar -cf /dev/vdc -C "$R" . && sync
	echo 1 >/proc/sys/kernel/sysrq
	echo o >/proc/sysrq-trigger
	sleep 60
}

check() {
	echo "$PHASE: $1: $2" >>"$R/checks"
	log "check $1: $2"
	case $2 in ok*) ;; *) finish fail ;; esac
}

# Polls "$@" every second for up to $1 seconds; true once it succeeded.
within() {
	local limit=$1 t0
	shift
	t0=$(up)
	while ! "$@" >/dev/null 2>&1; do
		[ "$(awk -v a="$t0" -v b="$(up)" -v l="$limit" 'BEGIN { print (b - a > l) }')" = 1 ] && return 1
		sleep 1
	done
}

setup() {
	mkdir -p /dev/pts /dev/shm
	mount -t devpts devpts /dev/pts
	mount -t tmpfs shm /dev/shm
	mount -t tmpfs -o mode=1777 tmp /tmp
	mount -t cgroup2 cgroup2 /sys/fs/cgroup
	for c in cpu memory pids io; do echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control; done
	hostname arm-e2e
	ip link set lo up
	for m in overlay bridge veth br_netfilter; do modprobe "$m"; done
	mkdir -p /etc/tinylet /etc/cni/net.d /etc/containerd /var/log /srv/tinylet
	: >/etc/resolv.conf
	# containerd copies the host's into every sandbox.
	printf '127.0.0.1 localhost arm-e2e\n' >/etc/hosts
	# The board config for this RAM (its reservations and node allocatable would leave
	# the pods of a 128 MB board almost no memory with the 256 MB board's numbers).
	local board=256
	[ "$(awk '/^MemTotal/ { print $2 }' /proc/meminfo)" -lt 196608 ] && board=128
	cp "$E/config-$board.json" /etc/tinylet/config.json
	cat >/etc/containerd/e2e.toml <<'EOF'
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "e2e.local/pause:1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
EOF
	cat >/etc/cni/net.d/10-e2e.conflist <<'EOF'
{"cniVersion": "1.0.0", "name": "e2e", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/24"}]],
            "dataDir": "/run/cni-ipam"}}]}
EOF
}

start_containerd() {
	containerd --config /etc/containerd/e2e.toml >/run/containerd.log 2>&1 &
	CONTAINERD=$!
	within 180 ctr --address /run/containerd/containerd.sock version ||
		check containerd "FAIL: not answering within 3 min"
}

agent_starts() { grep -c "(CRI v1)" /run/tinylet.log 2>/dev/null; }

start_agent() {
	local n
	n=$(agent_starts)
	tinylet run >>/run/tinylet.log 2>&1 &
	AGENT=$!
	within 180 sh -c "[ \"\$(grep -c '(CRI v1)' /run/tinylet.log)\" -gt ${n:-0} ]" ||
		check agent "FAIL: the agent found no runtime within 3 min"
}

# Pods of namespace e2e in STATUS $1 (NAME READY STATUS RESTARTS AGE).
count() { tinylet get pods -n e2e | awk -v s="$1" 'NR > 1 && $3 == s' | wc -l; }
# Running in the status and on the runtime: after a power cut the status files still
# say Running until the agent has looked.
all_running() {
	[ "$(count Running)" = 3 ] && [ -n "$(pid_of 2147483641)" ] &&
		[ -n "$(pid_of 2147483642)" ] && [ -n "$(pid_of 2147483643)" ]
}
restarts() { tinylet get pods -n e2e | awk -v n="$1" '$1 == n { print $4 }'; }
# Pids whose command line starts with $1 (Debian's busybox has no pgrep).
pids_of() {
	local d
	for d in /proc/[0-9]*; do
		tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -q "^$1" && echo "${d#/proc/}"
	done
}
pid_of() { pids_of "sleep $1" | head -n 1; }

shims() {
	local p total=0 n=0
	for p in $(pids_of /usr/bin/containerd-shim); do
		total=$((total + $(kb "$p")))
		n=$((n + 1))
	done
	echo "shims=$n shim_rss_mib=$(mib $((total / (n > 0 ? n : 1))))"
}

first() {
	ctr --address /run/containerd/containerd.sock -n k8s.io images import "$E/images.tar" ||
		check images "FAIL: import"
	local t0
	start_agent
	sleep 2
	local rss0 th0
	rss0=$(mib "$(kb "$AGENT")")
	th0=$(threads "$AGENT")
	t0=$(up)
	tinylet apply -f "$E/pods/" || check apply "FAIL: apply"
	within 600 all_running || check running "FAIL: not all Running within 10 min: $(tinylet get pods -n e2e)"
	local took
	took=$(since "$t0")
	check running "ok in ${took}s"
	echo "first: apply_to_running_s=$took tinylet_rss0_mib=$rss0 threads0=$th0 tinylet_rss3_mib=$(mib "$(kb "$AGENT")") threads3=$(threads "$AGENT") containerd_rss_mib=$(mib "$(kb "$CONTAINERD")") $(shims) mem_used_mib=$(free -m | awk '/^Mem/ { print $3 }')" >"$R/summary"
	free -m

	local victim
	victim=$(pid_of 2147483641)
	[ -n "$victim" ] || check kill "FAIL: no process of alpha"
	kill -9 "$victim"
	within 300 sh -c "[ \"\$(tinylet get pods -n e2e | awk '\$1 == \"alpha\" && \$3 == \"Running\" { print \$4 }')\" = 1 ]" ||
		check restart "FAIL: alpha not Running with restartCount 1: $(tinylet get pods -n e2e)"
	check restart "ok: alpha restartCount 1"

	tinylet logs e2e/alpha | grep -q hello-alpha || check logs "FAIL: $(tinylet logs e2e/alpha 2>&1)"
	check logs ok
	[ "$(tinylet exec e2e/gamma -- echo exec-ok)" = exec-ok ] || check exec "FAIL: $(tinylet exec e2e/gamma -- echo exec-ok 2>&1)"
	check exec ok
	tinylet get pods -n e2e -o wide

	local before
	before="$(pid_of 2147483641) $(pid_of 2147483642) $(pid_of 2147483643)"
	kill -9 "$AGENT"
	start_agent
	# The new agent adopts: for 30 s the same processes run and no count moves.
	local i=0
	while [ $i -lt 15 ]; do
		[ "$(pid_of 2147483641) $(pid_of 2147483642) $(pid_of 2147483643)" = "$before" ] ||
			check adopt "FAIL: processes changed after the agent restart"
		if ! all_running || [ "$(restarts alpha)$(restarts beta)$(restarts gamma)" != 100 ]; then
			check adopt "FAIL: $(tinylet get pods -n e2e)"
		fi
		sleep 2
		i=$((i + 1))
	done
	check adopt "ok: agent SIGKILL + restart, 0 restarts"
}

# After a power cut: no apply; every pod comes back on its own.
again() {
	local mem
	mem=$(sed -n 's/.*e2e\.mem=\([0-9]*\).*/\1/p' /proc/cmdline)
	start_agent
	local t0
	t0=$(up)
	within 900 all_running || check running "FAIL: not all Running within 15 min after the power cut: $(tinylet get pods -n e2e)"
	check running "ok: all Running $(since "$t0")s after the agent started, $(up)s after boot"
	echo "$PHASE(-m $mem): boot_to_all_running_s=$(up) agent_to_all_running_s=$(since "$t0") tinylet_rss3_mib=$(mib "$(kb "$AGENT")") containerd_rss_mib=$(mib "$(kb "$CONTAINERD")") $(shims) mem_used_mib=$(free -m | awk '/^Mem/ { print $3 }')" >"$R/summary"
	tinylet get pods -n e2e
	# beta counts its starts in its emptyDir: the power cut kept the data.
	local starts
	within 120 sh -c "tinylet logs e2e/beta | grep -q '^beta starts: '"
	starts=$(tinylet logs e2e/beta | sed -n 's/^beta starts: //p' | tail -n 1)
	[ "${starts:-0}" -ge 2 ] || check emptydir "FAIL: beta's emptyDir lost its data (starts: '$starts')"
	check emptydir "ok: beta started $starts times on the same emptyDir"
}

setup
log "phase $PHASE"
start_containerd
case $PHASE in
first) first ;;
second | third) again ;;
*) check phase "FAIL: unknown phase '$PHASE'" ;;
esac
finish ok
