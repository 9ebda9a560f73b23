#!/usr/bin/env bash
# A local image registry (distribution's `docker-registry serve`) with htpasswd auth, for
# pull tests through containerd's real pull path.
#
#   registry.sh up REGDIR INSTANCE   new registry in REGDIR on 127.0.0.1:<free port>, user
#                                    and password chosen here; INSTANCE (a containerd.sh
#                                    instance dir) gets certs.d/127.0.0.1:PORT/hosts.toml so
#                                    containerd pulls from it over plain http
#   registry.sh stop REGDIR          stop serving (data, port and credentials kept):
#                                    "offline" for tests
#   registry.sh start REGDIR         serve again on the same port
#   registry.sh freeze REGDIR        SIGSTOP the registry: connections are still accepted
#                                    (by the kernel) but never answered, as over an uplink
#                                    that drops packets; `stop`/`down` thaw it first
#   registry.sh thaw REGDIR          SIGCONT: it answers again, pending requests included
#   registry.sh down REGDIR          stop, remove REGDIR and the hosts.toml. Idempotent.
#   registry.sh push REGDIR TAR NAME:TAG   copy an OCI archive into it (skopeo); prints the
#                                    pullable reference 127.0.0.1:PORT/NAME:TAG. While it
#                                    is frozen or stopped the push goes through a second
#                                    registry process on the same storage (another port),
#                                    as a push from elsewhere would
#   registry.sh env REGDIR           TINYLET_REGISTRY_ADDR, _USER, _PASSWORD (KEY=value)
#
# Put REGDIR inside the instance dir (e.g. INSTANCE/reg-1): containerd.sh down then stops
# it with the instance.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

usage() {
	usage_text "$0"
	exit 2
}

load_env() {
	local k v
	[ -f "$1/env" ] || die "$1 is not a harness registry (no env file)"
	while IFS='=' read -r k v; do
		[ -n "$k" ] && printf -v "$k" '%s' "$v"
	done <"$1/env"
}

# Writes REG/config.yml serving on PORT the storage and users of HOME (default REG).
write_config() {
	local reg=$1 port=$2 home=${3:-$1}
	cat >"$reg/config.yml" <<EOF
# Local registry of the tinylet test harness (tests/harness/registry.sh).
version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $home/data
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:$port
  secret: $(random_hex 16)
auth:
  htpasswd:
    realm: tinylet-test-registry
    path: $home/htpasswd
EOF
}

# Starts the registry of REGDIR; returns 1 when its port was taken (caller may retry).
serve() {
	local reg=$1 TINYLET_REGISTRY_ADDR='' pid='' offset deadline
	load_env "$reg"
	touch "$reg/registry.log"
	offset=$(stat -c %s "$reg/registry.log")
	rm -f "$reg/registry.pid"
	spawn_reaped "$reg/registry.pid" "$reg/registry.log" docker-registry serve "$reg/config.yml"
	deadline=$((SECONDS + 15))
	while :; do
		if [ -z "$pid" ] && [ -s "$reg/registry.pid" ]; then pid=$(cat "$reg/registry.pid"); fi
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			if tail -c +"$((offset + 1))" "$reg/registry.log" | grep -q 'address already in use'; then
				return 1
			fi
			tail -n 30 "$reg/registry.log" >&2
			die "registry exited during start ($reg/registry.log)"
		fi
		if [ -n "$pid" ] && tail -c +"$((offset + 1))" "$reg/registry.log" | grep -qF "listening on $TINYLET_REGISTRY_ADDR"; then
			return 0
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			tail -n 30 "$reg/registry.log" >&2
			die "registry did not start within 15s ($reg/registry.log)"
		fi
		sleep 0.05
	done
}

registry_pid() {
	local reg=$1 pid
	pid=$(cat "$reg/registry.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && pid_matches "$pid" "$reg/config.yml"; then
		printf '%s\n' "$pid"
		return 0
	fi
	pid=$(pids_with_args docker-registry "$reg/config.yml" | head -n1)
	[ -n "$pid" ] || return 1
	printf '%s\n' "$pid"
}

# A free loopback port (checked with ss; a race with another process is possible, and
# serve() reports it).
free_port() {
	local port try
	for try in 1 2 3 4 5 6 7 8; do
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		if [ -z "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
			printf '%s\n' "$port"
			return 0
		fi
	done
	die "could not find a free port (tried $try)"
}

cmd_freeze() {
	local reg=$1 pid
	pid=$(registry_pid "$reg") || die "registry of $reg is not running"
	kill -STOP "$pid"
	touch "$reg/frozen"
}

cmd_thaw() {
	local reg=$1 pid
	rm -f "$reg/frozen"
	pid=$(registry_pid "$reg") || return 0
	kill -CONT "$pid" 2>/dev/null || true
}

cmd_stop() {
	local reg=$1 pid try
	# A stopped process would only see SIGTERM once continued.
	cmd_thaw "$reg"
	for try in 1 2 3; do
		pid=$(registry_pid "$reg") || break
		stop_pid "$pid" 5
	done
	if pid=$(registry_pid "$reg"); then
		die "registry of $reg (pid $pid) does not die (tried $try times)"
	fi
	rm -f "$reg/registry.pid"
}

cmd_up() {
	local reg inst port user pass hosts try
	reg=$(abspath "$1")
	inst=$(abspath "$2")
	preflight docker-registry htpasswd skopeo ss
	[ -f "$inst/config.toml" ] || die "$inst is not a containerd.sh instance"
	if [ -e "$reg" ] && [ -n "$(ls -A "$reg")" ]; then die "$reg exists and is not empty"; fi
	mkdir -p "$reg/data"
	user=tinylet
	pass=$(random_hex 12)
	htpasswd -Bbn "$user" "$pass" >"$reg/htpasswd" 2>/dev/null || die "htpasswd failed"
	for try in 1 2 3 4 5 6 7 8; do
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		[ -z "$(ss -Hltn "sport = :$port" 2>/dev/null)" ] || continue
		write_config "$reg" "$port"
		hosts=$inst/certs.d/127.0.0.1:$port
		cat >"$reg/env" <<EOF
TINYLET_REGISTRY_ADDR=127.0.0.1:$port
TINYLET_REGISTRY_USER=$user
TINYLET_REGISTRY_PASSWORD=$pass
TINYLET_REGISTRY_HOSTS_DIR=$hosts
EOF
		if serve "$reg"; then
			mkdir -p "$hosts"
			cat >"$hosts/hosts.toml" <<EOF
# Written by tests/harness/registry.sh for $reg
server = "http://127.0.0.1:$port"

[host."http://127.0.0.1:$port"]
  capabilities = ["pull", "resolve"]
EOF
			return 0
		fi
		say "port $port taken (try $try), choosing another"
	done
	die "could not find a free port for the registry"
}

cmd_down() {
	local reg TINYLET_REGISTRY_HOSTS_DIR=''
	reg=$(abspath "$1")
	[ -d "$reg" ] || return 0
	if [ ! -f "$reg/config.yml" ] && [ -n "$(ls -A "$reg")" ]; then
		die "$reg is not a harness registry (no config.yml): not touching it"
	fi
	if [ -d "$reg/beside" ]; then cmd_stop "$reg/beside"; fi
	cmd_stop "$reg"
	if [ -f "$reg/env" ]; then
		load_env "$reg"
		[ -z "$TINYLET_REGISTRY_HOSTS_DIR" ] || rm -rf "$TINYLET_REGISTRY_HOSTS_DIR"
	fi
	rm -rf "$reg"
}

# skopeo copy of OCI archive $2 to registry address $1 as $3.
copy_to() {
	skopeo --insecure-policy copy --quiet --dest-tls-verify=false \
		--dest-creds "$TINYLET_REGISTRY_USER:$TINYLET_REGISTRY_PASSWORD" \
		"oci-archive:$2" "docker://$1/$3" >&2 ||
		die "skopeo could not push $2 to $1/$3"
}

# Pushes through a second registry process on REG's storage (REG frozen or stopped).
push_beside() {
	local reg=$1 tar=$2 ref=$3 side=$1/beside port
	rm -rf "$side"
	mkdir -p "$side"
	port=$(free_port)
	write_config "$side" "$port" "$reg"
	printf 'TINYLET_REGISTRY_ADDR=127.0.0.1:%s\n' "$port" >"$side/env"
	serve "$side" || die "port $port of the side registry was taken"
	copy_to "127.0.0.1:$port" "$tar" "$ref"
	cmd_stop "$side"
	rm -rf "$side"
}

cmd_push() {
	local reg=$1 tar=$2 ref=$3 TINYLET_REGISTRY_ADDR='' TINYLET_REGISTRY_USER='' TINYLET_REGISTRY_PASSWORD=''
	load_env "$reg"
	[ -f "$tar" ] || die "no such image archive: $tar"
	if [ -e "$reg/frozen" ] || ! registry_pid "$reg" >/dev/null; then
		push_beside "$reg" "$tar" "$ref"
	else
		copy_to "$TINYLET_REGISTRY_ADDR" "$tar" "$ref"
	fi
	printf '%s/%s\n' "$TINYLET_REGISTRY_ADDR" "$ref"
}

main() {
	[ $# -ge 2 ] || usage
	local cmd=$1
	shift
	case $cmd in
	up)
		[ $# -eq 2 ] || usage
		cmd_up "$1" "$2"
		;;
	stop) cmd_stop "$(abspath "$1")" ;;
	start)
		local reg
		reg=$(abspath "$1")
		registry_pid "$reg" >/dev/null && die "registry of $reg is already running"
		serve "$reg" || die "port of $reg is taken by another process"
		;;
	down) cmd_down "$1" ;;
	freeze) cmd_freeze "$(abspath "$1")" ;;
	thaw) cmd_thaw "$(abspath "$1")" ;;
	push)
		[ $# -eq 3 ] || usage
		cmd_push "$(abspath "$1")" "$2" "$3"
		;;
	env)
		load_env "$(abspath "$1")"
		grep -v '^TINYLET_REGISTRY_HOSTS_DIR=' "$1/env"
		;;
	*) usage ;;
	esac
}

main "$@"
