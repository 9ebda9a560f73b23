#!/usr/bin/env bash
# A private containerd for tests, the demo and benches: everything lives under one scratch
# directory, so several instances run side by side and none touches a system containerd.
#
#   containerd.sh up DIR        new instance in DIR (absent or empty): config, CNI, images
#                               (pause + busybox test image imported), containerd started
#   containerd.sh down DIR      stop containerd, its shims and containers, registries started
#                               for it, unmount, remove the bridge, remove DIR. Idempotent.
#   containerd.sh stop DIR      stop containerd only (shims and containers keep running)
#   containerd.sh start DIR     start containerd again after stop
#   containerd.sh restart DIR   stop + start (like `systemctl restart containerd`)
#   containerd.sh reboot DIR    simulate a device reboot: stop containerd, kill shims and
#                               containers, drop pod networking, wipe DIR/state (what lives
#                               in /run on a device), keep DIR/root (images, snapshots,
#                               metadata), start again
#   containerd.sh env DIR       print the instance's variables (KEY=value lines)
#   containerd.sh import DIR TAR   import an OCI archive into namespace k8s.io
#   containerd.sh ctr DIR ARG...   run ctr against the instance
#   containerd.sh reap SESSION  `down` every instance directory below SESSION, remove it
#                               (SESSION must hold the file .tinylet-harness-session)
#
# Layout of DIR: .tinylet-harness (marker: down removes no directory without it), config.toml, containerd.sock (+ .ttrpc), containerd.log, containerd.pid,
# env, root/ (kept on reboot), state/ (runc root, pod netns, CNI IPAM: wiped on reboot),
# cni/{bin,conf}/, certs.d/ (registry hosts), opt/, reg-*/ (registries, see registry.sh).
# Each instance owns a machine-wide slot N: bridge tlhN, pod subnet 10.99.N.0/24.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

usage() {
	usage_text "$0"
	exit 2
}

# Makes sure the cache holds reaper and base.tar (pause + busybox test image, one archive
# so one import loads both); prints the cache dir.
ensure_cache() {
	local c
	c=$(cache_dir)
	ensure_reaper "$c"
	if [ ! -s "$c/base.tar" ]; then
		"$HARNESS_DIR/image.sh" pause --name "$TINYLET_SANDBOX_IMAGE" --out "$c/pause.tar" >/dev/null
		"$HARNESS_DIR/image.sh" busybox --name "$TINYLET_TEST_IMAGE" --out "$c/busybox.tar" >/dev/null
		"$HARNESS_DIR/image.sh" merge --out "$c/base.tar" "$c/pause.tar" "$c/busybox.tar"
	fi
	printf '%s\n' "$c"
}

# Instance directory from $1: must exist (unless $2 = new), absolute, socket path short.
instance_dir() {
	local dir
	[ -n "${1:-}" ] || usage
	dir=$(abspath "$1")
	case $dir in *[[:space:]]*) die "instance directory must not contain spaces: '$dir'" ;; esac
	# sun_path is 108 bytes with the NUL; containerd also listens on SOCK.ttrpc.
	if [ $((${#dir} + 22)) -ge 108 ]; then
		die "instance directory too long for a Unix socket path (<= 85 chars): $dir"
	fi
	if [ "${2:-}" != new ] && [ ! -f "$dir/config.toml" ]; then
		die "$dir is not a harness instance (no config.toml)"
	fi
	printf '%s\n' "$dir"
}

# Reads KEY=value lines of DIR/env into variables.
load_env() {
	local k v
	while IFS='=' read -r k v; do
		[ -n "$k" ] && printf -v "$k" '%s' "$v"
	done <"$1/env"
}

# overlayfs works on the filesystem holding $1 (else containerd needs native).
overlay_works() {
	local t=$1/.overlay-check ok=1
	mkdir -p "$t/lower" "$t/upper" "$t/work" "$t/merged"
	if mount -t overlay overlay -o "lowerdir=$t/lower,upperdir=$t/upper,workdir=$t/work" "$t/merged" 2>/dev/null; then
		umount "$t/merged"
	else
		ok=0
	fi
	rm -rf "$t"
	[ "$ok" -eq 1 ]
}

write_config() {
	local dir=$1 snap=$2
	cat >"$dir/config.toml" <<EOF
# Private containerd of the tinylet test harness (tests/harness/containerd.sh).
version = 2
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$dir/containerd.sock"

[ttrpc]
  address = "$dir/containerd.sock.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$TINYLET_SANDBOX_IMAGE"
  # Writing a negative oom_score_adj is denied on these machines; without this every
  # RunPodSandbox fails.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "$snap"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$dir/state/runc"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$dir/cni/bin"
    conf_dir = "$dir/cni/conf"
    max_conf_num = 1

  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$dir/certs.d"
EOF
}

write_cni() {
	local dir=$1 slot=$2 p
	mkdir -p "$dir/cni/bin" "$dir/cni/conf"
	for p in bridge host-local portmap loopback; do
		[ -x "/usr/lib/cni/$p" ] || die "/usr/lib/cni/$p missing: run tests/harness/install-deps.sh (containernetworking-plugins)"
		ln -sf "/usr/lib/cni/$p" "$dir/cni/bin/$p"
	done
	cat >"$dir/cni/conf/10-tinylet.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "tinylet-h$slot",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "tlh$slot",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "10.99.$slot.0/24"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$dir/state/cni-ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

ctr_in() {
	local dir=$1
	shift
	ctr --address "$dir/containerd.sock" "$@"
}

import_image() {
	local dir=$1 tar=$2 TINYLET_SNAPSHOTTER=overlayfs
	load_env "$dir"
	ctr_in "$dir" -n k8s.io images import --snapshotter "$TINYLET_SNAPSHOTTER" "$tar" >/dev/null ||
		die "importing $tar into $dir failed"
}

# Starts containerd for DIR under the reaper and waits until it serves CRI.
start_containerd() {
	local dir=$1 pid='' offset deadline
	if pid=$(containerd_pid "$dir"); then
		die "containerd of $dir is already running (pid $pid)"
	fi
	mkdir -p "$dir/state"
	touch "$dir/containerd.log"
	offset=$(stat -c %s "$dir/containerd.log")
	rm -f "$dir/containerd.pid"
	spawn_reaped "$dir/containerd.pid" "$dir/containerd.log" containerd --config "$dir/config.toml"
	deadline=$((SECONDS + HARNESS_START_TIMEOUT))
	while :; do
		if [ -z "$pid" ] && [ -s "$dir/containerd.pid" ]; then pid=$(cat "$dir/containerd.pid"); fi
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			start_failed "$dir" "$offset" "containerd exited during start"
		fi
		# CRI serves once its plugin logged the streaming server start (it sets itself
		# initialized right after) and the socket answers.
		if [ -n "$pid" ] && [ -S "$dir/containerd.sock" ] &&
			tail -c +"$((offset + 1))" "$dir/containerd.log" | grep -q 'Start streaming server' &&
			ctr_in "$dir" version >/dev/null 2>&1; then
			return 0
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			start_failed "$dir" "$offset" "containerd did not answer within ${HARNESS_START_TIMEOUT}s"
		fi
		sleep 0.05
	done
}

start_failed() {
	local dir=$1 offset=$2
	say "$3; containerd.log of $dir:"
	tail -c +"$(($2 + 1))" "$dir/containerd.log" | tail -n 60 >&2
	die "$3 ($dir/containerd.log)"
}

# Pid of DIR's running containerd (exit 1 when none).
containerd_pid() {
	local dir=$1 pid
	pid=$(cat "$dir/containerd.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && pid_matches "$pid" "$dir/config.toml"; then
		printf '%s\n' "$pid"
		return 0
	fi
	pid=$(pids_with_args containerd --config "$dir/config.toml" | head -n1)
	[ -n "$pid" ] || return 1
	printf '%s\n' "$pid"
}

stop_containerd() {
	local dir=$1 pid try
	for try in 1 2 3; do
		pid=$(containerd_pid "$dir") || break
		stop_pid "$pid" 100
	done
	if pid=$(containerd_pid "$dir"); then
		die "containerd of $dir (pid $pid) does not die (tried $try times)"
	fi
	rm -f "$dir/containerd.pid"
}

# Kills DIR's shims and every container they started; removes their runc state, cgroups
# and shim sockets. Used by down and reboot, after containerd is stopped.
kill_tasks() {
	local dir=$1
	local sock=$dir/containerd.sock shims kids b ns id root pid
	local -a socks=() argv
	shims=$(pids_with_args containerd-shim-runc-v2 -address "$sock")
	kids=''
	# shellcheck disable=SC2086 # word splitting of pid lists is intended
	[ -z "$shims" ] || kids=$(descendants $shims)
	for pid in $shims; do
		# The shim's socket is /run/containerd/s/sha256(address/namespace/id).
		mapfile -d '' -t argv 2>/dev/null <"/proc/$pid/cmdline" || continue
		ns='' id=''
		for ((b = 1; b < ${#argv[@]} - 1; b++)); do
			case ${argv[b]} in
			-namespace) ns=${argv[b + 1]} ;;
			-id) id=${argv[b + 1]} ;;
			esac
		done
		[ -n "$ns" ] && [ -n "$id" ] &&
			socks+=("/run/containerd/s/$(printf '%s' "$sock/$ns/$id" | sha256sum | cut -d' ' -f1)")
	done
	# shellcheck disable=SC2086
	[ -z "$shims" ] || kill -KILL $shims 2>/dev/null || true
	# runc kills each container's processes and removes its cgroups. CRI containers use
	# DIR/state/runc (config); `ctr run` ones the default root.
	for b in "$dir"/state/io.containerd.runtime.v2.task/*/*; do
		[ -d "$b" ] || continue
		id=${b##*/}
		ns=${b%/*}
		ns=${ns##*/}
		for root in "$dir/state/runc/$ns" "/run/containerd/runc/$ns"; do
			if [ -d "$root/$id" ]; then
				runc --root "$root" delete --force "$id" >/dev/null 2>&1 || true
			fi
		done
	done
	# Whatever runc did not know about (state already gone): kill what the shims started.
	# shellcheck disable=SC2086
	[ -z "$kids" ] || kill -KILL $kids 2>/dev/null || true
	for pid in $shims $kids; do
		for ((b = 0; b < 50; b++)); do
			if [ ! -e "/proc/$pid" ] || [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" = Z ]; then break; fi
			sleep 0.1
		done
	done
	[ "${#socks[@]}" -eq 0 ] || rm -f "${socks[@]}"
}

# The (empty) pod cgroups of DIR's agents: tests/agent_support puts them under
# /tinylet-e2e/SESSION-INSTANCE in every hierarchy. Only empty cgroups can go (rmdir);
# kill_tasks ended their processes.
drop_cgroups() {
	local dir=$1 tag h
	tag="$(basename "$(dirname "$dir")")-$(basename "$dir")"
	for h in /sys/fs/cgroup /sys/fs/cgroup/*; do
		[ -d "$h/tinylet-e2e/$tag" ] || continue
		find "$h/tinylet-e2e/$tag" -depth -type d -exec rmdir {} + 2>/dev/null || true
	done
}

# Pod networking of DIR: netns mounts live under state/ (unmounted with it); the bridge
# and the portmap plugin's per-pod NAT rules (hostPort) are removed here.
drop_network() {
	local dir=$1 TINYLET_CNI_BRIDGE='' TINYLET_HARNESS_SLOT=''
	[ -f "$dir/env" ] || return 0
	load_env "$dir"
	if [ -n "$TINYLET_CNI_BRIDGE" ]; then
		ip link del "$TINYLET_CNI_BRIDGE" 2>/dev/null || true
	fi
	[ -n "$TINYLET_HARNESS_SLOT" ] && command -v iptables-save >/dev/null || return 0
	drop_portmaps "tinylet-h$TINYLET_HARNESS_SLOT"
}

# Deletes portmap's DNAT rules tagged with CNI network $1 and the per-pod chains they
# jump to (what CNI DEL would have done had the pods been stopped).
drop_portmaps() {
	local rules script='' rule chain
	rules=$(iptables-save -t nat 2>/dev/null | grep -F -- "-A CNI-HOSTPORT-DNAT " |
		grep -F -- "name: \\\"$1\\\" " || true)
	[ -n "$rules" ] || return 0
	while IFS= read -r rule; do
		chain=${rule##* -j }
		script+="-D ${rule#-A }"$'\n'"-F $chain"$'\n'"-X $chain"$'\n'
	done <<<"$rules"
	printf '*nat\n%sCOMMIT\n' "$script" | iptables-restore --noflush ||
		say "warning: could not remove the NAT rules of CNI network $1"
}

cmd_up() {
	local dir c slot snap
	dir=$(instance_dir "$1" new)
	preflight containerd ctr runc gcc ip mount
	if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
		die "$dir exists and is not empty"
	fi
	mkdir -p "$dir"
	: >"$dir/$INSTANCE_MARK"
	mkdir -p "$dir/root" "$dir/state" "$dir/certs.d" "$dir/opt"
	c=$(ensure_cache)
	slot=$(slot_take "$dir")
	printf '%s\n' "$slot" >"$dir/slot"
	snap=overlayfs
	overlay_works "$dir/root" || snap=native
	write_config "$dir" "$snap"
	write_cni "$dir" "$slot"
	cat >"$dir/env" <<EOF
TINYLET_HARNESS_INSTANCE=$dir
CONTAINERD_ADDRESS=$dir/containerd.sock
CONTAINERD_ENDPOINT=unix://$dir/containerd.sock
CONTAINERD_NAMESPACE=k8s.io
TINYLET_SANDBOX_IMAGE=$TINYLET_SANDBOX_IMAGE
TINYLET_TEST_IMAGE=$TINYLET_TEST_IMAGE
TINYLET_SNAPSHOTTER=$snap
TINYLET_CNI_BRIDGE=tlh$slot
TINYLET_CNI_SUBNET=10.99.$slot.0/24
TINYLET_HARNESS_SLOT=$slot
EOF
	start_containerd "$dir"
	import_image "$dir" "$c/base.tar"
}

cmd_down() {
	local dir slot
	[ -n "${1:-}" ] || usage
	dir=$(abspath "$1")
	[ -d "$dir" ] || return 0
	if [ ! -e "$dir/$INSTANCE_MARK" ] && [ -n "$(ls -A "$dir")" ]; then
		die "$dir is not a harness instance (no $INSTANCE_MARK): not touching it"
	fi
	preflight runc ip umount
	# Registries started for this instance.
	local r
	for r in "$dir"/reg-*/; do
		if [ -d "$r" ]; then "$HARNESS_DIR/registry.sh" down "$r" || true; fi
	done
	[ -f "$dir/config.toml" ] && stop_containerd "$dir"
	kill_tasks "$dir"
	drop_cgroups "$dir"
	drop_network "$dir"
	unmount_under "$dir"
	slot=$(cat "$dir/slot" 2>/dev/null || true)
	if [ -n "$(mounts_under "$dir")" ]; then
		die "mounts left under $dir; not removing it"
	fi
	rm -rf "$dir"
	slot_free "$dir" "$slot"
}

cmd_reboot() {
	local dir=$1
	stop_containerd "$dir"
	kill_tasks "$dir"
	drop_network "$dir"
	unmount_under "$dir/state"
	[ -z "$(mounts_under "$dir/state")" ] || die "mounts left under $dir/state"
	rm -rf "$dir/state"
	start_containerd "$dir"
}

cmd_reap() {
	local session d
	[ -n "${1:-}" ] || usage
	session=$(abspath "$1")
	[ -d "$session" ] || return 0
	if [ ! -e "$session/$SESSION_MARK" ]; then
		die "$session is not a harness session (no $SESSION_MARK): not touching it"
	fi
	for d in "$session"/*/; do
		d=${d%/}
		if [ -e "$d/$INSTANCE_MARK" ]; then cmd_down "$d" || say "reap: down $d failed"; fi
	done
	unmount_under "$session"
	rm -rf "$session"
}

main() {
	[ $# -ge 2 ] || usage
	local cmd=$1
	shift
	case $cmd in
	up) cmd_up "$1" ;;
	down) cmd_down "$1" ;;
	stop) stop_containerd "$(instance_dir "$1")" ;;
	start) start_containerd "$(instance_dir "$1")" ;;
	restart)
		stop_containerd "$(instance_dir "$1")"
		start_containerd "$(instance_dir "$1")"
		;;
	reboot) cmd_reboot "$(instance_dir "$1")" ;;
	env) cat "$(instance_dir "$1")/env" ;;
	import)
		[ $# -eq 2 ] || usage
		import_image "$(instance_dir "$1")" "$2"
		;;
	ctr)
		local dir
		dir=$(instance_dir "$1")
		shift
		ctr_in "$dir" "$@"
		;;
	reap) cmd_reap "$1" ;;
	*) usage ;;
	esac
}

main "$@"
