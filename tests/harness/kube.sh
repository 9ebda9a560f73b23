#!/usr/bin/env bash
# A private Kubernetes control plane (v1.20.2) for the cluster tests: etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler on loopback, everything under one directory,
# ports chosen free at start, so several instances run side by side.
#
#   kube.sh up DIR [--bound-tokens=true|false]
#                         new instance in DIR (absent or empty): certificates, etcd, the three
#                         components; returns once /readyz answers ok and namespace default has
#                         its service account (with its token secret when bound tokens are
#                         off) and the kube-root-ca.crt ConfigMap. --bound-tokens (default true,
#                         or $KUBE_BOUND_TOKENS) sets the BoundServiceAccountTokenVolume gate:
#                         true gives pods the projected kube-api-access-* volume of current
#                         clusters, false v1.20's default-token-* secret volume
#   kube.sh down DIR      stop everything of DIR (relays too), remove DIR. Idempotent; works
#                         on a half-started instance; refuses a directory without the marker
#   kube.sh env DIR       print the instance's variables (KEY=value lines)
#   kube.sh kubeconfig DIR    print the path of the admin kubeconfig (system:masters)
#   kube.sh kubectl DIR ARG...    run the matching kubectl as admin
#   kube.sh wait-namespace DIR NS   wait until NS has its default service account (and token
#                         secret without bound tokens) and kube-root-ca.crt: pods can be made
#   kube.sh node-identity DIR NAME [RELAY]
#                         a node's credentials as a tinylet user makes them: client cert
#                         CN=system:node:NAME, O=system:nodes signed by the cluster CA (key
#                         mode 0600), a serving cert for its :10250 (SANs NAME, 127.0.0.1) and
#                         a kubeconfig (CA embedded, cert and key by path, like kubeadm's
#                         kubelet.conf) for the API server, or for relay RELAY when given;
#                         prints the kubeconfig's path
#   kube.sh node-certs DIR NAME...
#                         the same certificates (with P-256 keys, quick to make) for each NAME,
#                         without a kubeconfig: a fleet of nodes at once (make bench-fleet);
#                         names that have them already are skipped
#   kube.sh apiserver-restart DIR
#                         stops the API server (SIGTERM: its graceful shutdown, SIGKILL after
#                         60 s) and starts it again with the same flags and port; returns once
#                         /readyz answers ok again and prints when the old one was gone (Unix
#                         seconds): what the new one serves from then on, before /readyz too
#   kube.sh relay-up DIR [RELAY]      TCP relay (socat) on a free loopback port in front of the
#                         API server; prints its URL (RELAY names it, default 1)
#   kube.sh relay-cut DIR [RELAY]     uplink loss: live connections are dropped (closed) and
#                         new ones refused (nothing listens) until relay-restore
#   kube.sh relay-restore DIR [RELAY] listen again on the same port
#   kube.sh relay-down DIR [RELAY]    stop the relay and forget it
#   kube.sh reap SESSION  `down` every control plane directory below SESSION (the test
#                         watchdog runs this before containerd.sh reap removes SESSION)
#
# Binaries from kube-build.sh ($KUBE_BIN_DIR, else its cache; built there when missing);
# etcd from Debian's etcd-server. Layout of DIR: .tinylet-kube (marker), env, pki/ (CA,
# serving, client and service-account keys), *.kubeconfig, etcd/, log/*.log, *.pid,
# nodes/NAME/ (node identities), relay-RELAY/ (relays).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

KUBE_MARK=.tinylet-kube
# Seconds until the API server must be ready, and then the service accounts.
KUBE_START_TIMEOUT=${KUBE_START_TIMEOUT:-180}
KUBE_COMPONENTS=(kube-scheduler kube-controller-manager kube-apiserver etcd)
SA_ISSUER=https://kubernetes.default.svc.cluster.local

usage() {
	usage_text "$0"
	exit 2
}

# Instance directory from $1: must hold the marker (unless $2 = new), absolute.
kube_dir() {
	local dir
	[ -n "${1:-}" ] || usage
	dir=$(abspath "$1")
	case $dir in *[[:space:]]*) die "instance directory must not contain spaces: '$dir'" ;; esac
	if [ "${2:-}" != new ] && [ ! -f "$dir/$KUBE_MARK" ]; then
		die "$dir is not a kube harness instance (no $KUBE_MARK)"
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

# Seconds since $1 (an EPOCHREALTIME value), one decimal.
since() {
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

# A TCP port nobody listens on, outside the kernel's ephemeral range (outgoing connections
# never take it). Not reserved: a start that loses the race retries with new ports.
free_port() {
	local lo hi p used
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range
	used=$(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }' | sort -u)
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % 12000))
		if [ "$p" -ge "$lo" ] && [ "$p" -le "$hi" ]; then continue; fi
		grep -qxF "$p" <<<"$used" || {
			printf '%s\n' "$p"
			return 0
		}
	done
	die "no free TCP port found in 20000-31999"
}

# --- certificates -------------------------------------------------------------------------

# Signs a new key's certificate with the instance CA: pki dir, file name, subject,
# extensions (openssl x509v3 config lines), key type (rsa: RSA 2048, what clusters and
# their users make; ec: P-256, for the control plane's own clients, where RSA key
# generation would only cost start time). Random serials: no serial file that concurrent
# node-identity calls would race on.
issue_cert() {
	local pki=$1 name=$2 subj=$3 ext=$4 newkey=(-newkey rsa:2048)
	[ "${5:-rsa}" = rsa ] || newkey=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)
	openssl req -new "${newkey[@]}" -nodes -keyout "$pki/$name.key" -out "$pki/$name.csr" \
		-subj "$subj" 2>/dev/null || die "openssl req for $name failed"
	printf '%s\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n' "$ext" >"$pki/$name.ext"
	openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
		-set_serial "0x$(random_hex 16)" -out "$pki/$name.crt" -days 30 -sha256 -extfile "$pki/$name.ext" \
		2>/dev/null || die "openssl x509 for $name failed"
	chmod 600 "$pki/$name.key"
	rm -f "$pki/$name.csr" "$pki/$name.ext"
}

CLIENT_EXT='basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth'
SERVER_EXT='basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth'

# CA, API server serving cert, client certs of admin / controller-manager / scheduler /
# the API server towards kubelets, service-account signing key pair.
make_pki() {
	local pki=$1/pki
	mkdir -p "$pki"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" \
		-days 30 -sha256 -subj "/CN=tinylet-test-ca" 2>/dev/null || die "openssl: CA failed"
	chmod 600 "$pki/ca.key"
	issue_cert "$pki" apiserver "/CN=kube-apiserver" "$SERVER_EXT
subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	issue_cert "$pki" admin "/CN=admin/O=system:masters" "$CLIENT_EXT" ec
	issue_cert "$pki" controller-manager "/CN=system:kube-controller-manager" "$CLIENT_EXT" ec
	issue_cert "$pki" scheduler "/CN=system:kube-scheduler" "$CLIENT_EXT" ec
	issue_cert "$pki" apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client/O=system:masters" "$CLIENT_EXT" ec
	openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null || die "openssl: service-account key failed"
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
	chmod 600 "$pki/sa.key"
}

# Kubeconfig $1 for server $2 with client cert/key pair $3 (pki/$3.{crt,key}); paths.
write_kubeconfig() {
	local file=$1 server=$2 pki=${1%/*}/pki
	cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tinylet-test
  cluster:
    certificate-authority: $pki/ca.crt
    server: $server
contexts:
- name: $3@tinylet-test
  context: {cluster: tinylet-test, user: $3}
current-context: $3@tinylet-test
users:
- name: $3
  user:
    client-certificate: $pki/$3.crt
    client-key: $pki/$3.key
EOF
}

# --- processes ---------------------------------------------------------------------------

# Pids of component $2 of DIR $1: the pid file's process when its command line mentions
# DIR, else any process of that program mentioning DIR (a lost pid file).
component_pids() {
	local dir=$1 prog=$2 pid p
	pid=$(cat "$dir/$prog.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && pid_matches "$pid" "$dir/"; then
		printf '%s\n' "$pid"
		return 0
	fi
	for p in $(grep -lzF -- "$dir/" /proc/[0-9]*/cmdline 2>/dev/null || true); do
		p=${p#/proc/}
		p=${p%/cmdline}
		[ "$(basename "$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | head -n1)")" = "$prog" ] &&
			printf '%s\n' "$p"
	done
	return 0
}

# Starts component $2 of DIR $1 (command "${@:3}") under the reaper, log in DIR/log.
spawn() {
	local dir=$1 prog=$2
	shift 2
	rm -f "$dir/$prog.pid"
	spawn_reaped "$dir/$prog.pid" "$dir/log/$prog.log" "$@"
}

# Waits until "$@" succeeds, component $2's process staying alive; $1 is what is awaited
# (for the message). Fails with the component's log when it dies or time runs out.
await() {
	local what=$1 prog=$2 dir=$3 deadline pid=''
	shift 3
	deadline=$((SECONDS + KUBE_START_TIMEOUT))
	while ! "$@" >/dev/null 2>&1; do
		[ -n "$pid" ] || pid=$(cat "$dir/$prog.pid" 2>/dev/null || true)
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			start_failed "$dir" "$prog" "$prog exited before $what"
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			start_failed "$dir" "$prog" "no $what within ${KUBE_START_TIMEOUT}s"
		fi
		sleep 0.1
	done
}

start_failed() {
	say "$3; last lines of $1/log/$2.log:"
	tail -n 40 "$1/log/$2.log" >&2 2>/dev/null || true
	if grep -qs 'address already in use' "$1/log/$2.log"; then
		exit 75 # EX_TEMPFAIL: cmd_up retries with other ports
	fi
	die "$3 ($1/log/$2.log)"
}

# curl as admin against DIR's API server: path, then curl options.
admin_curl() {
	local dir=$1 path=$2
	shift 2
	curl -sSf --max-time 10 --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" \
		--key "$dir/pki/admin.key" "$@" "$KUBE_API_URL$path"
}

etcd_healthy() {
	curl -sf --max-time 2 "$KUBE_ETCD_URL/health" | grep -q '"health":"true"'
}

api_ready() {
	[ "$(admin_curl "$1" /readyz)" = ok ]
}

# Namespace $2 of DIR $1 has its default service account (with a token secret when bound
# tokens are off: the ServiceAccount admission plugin rejects pods until then) and the
# kube-root-ca.crt ConfigMap.
namespace_ready() {
	local dir=$1 ns=$2 sa
	sa=$(admin_curl "$dir" "/api/v1/namespaces/$ns/serviceaccounts/default") || return 1
	if [ "$KUBE_BOUND_TOKENS" = false ]; then
		[ "$(jq '.secrets | length' <<<"$sa")" -gt 0 ] || return 1
	fi
	admin_curl "$dir" "/api/v1/namespaces/$ns/configmaps/kube-root-ca.crt" >/dev/null
}

start_etcd() {
	local dir=$1
	spawn "$dir" etcd etcd --name default --data-dir "$dir/etcd" \
		--listen-client-urls "$KUBE_ETCD_URL" --advertise-client-urls "$KUBE_ETCD_URL" \
		--listen-peer-urls "http://127.0.0.1:$KUBE_ETCD_PEER_PORT" \
		--initial-advertise-peer-urls "http://127.0.0.1:$KUBE_ETCD_PEER_PORT" \
		--initial-cluster "default=http://127.0.0.1:$KUBE_ETCD_PEER_PORT" \
		--logger zap --log-level warn
	await "healthy etcd" etcd "$dir" etcd_healthy
}

start_apiserver() {
	local dir=$1 pki=$1/pki
	spawn "$dir" kube-apiserver "$KUBE_BIN_DIR/kube-apiserver" \
		--etcd-servers="$KUBE_ETCD_URL" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
		--secure-port="$KUBE_API_PORT" --insecure-port=0 --service-cluster-ip-range=10.96.0.0/16 \
		--client-ca-file="$pki/ca.crt" --tls-cert-file="$pki/apiserver.crt" \
		--tls-private-key-file="$pki/apiserver.key" \
		--kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$pki/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$pki/ca.crt" --kubelet-preferred-address-types=InternalIP \
		--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
		--service-account-issuer="$SA_ISSUER" --api-audiences="$SA_ISSUER" \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction,ServiceAccount \
		--feature-gates="BoundServiceAccountTokenVolume=$KUBE_BOUND_TOKENS" \
		--allow-privileged=true --profiling=false
	await "ready API server (/readyz)" kube-apiserver "$dir" api_ready "$dir"
}

start_controllers() {
	local dir=$1 pki=$1/pki
	spawn "$dir" kube-controller-manager "$KUBE_BIN_DIR/kube-controller-manager" \
		--kubeconfig="$dir/controller-manager.kubeconfig" --bind-address=127.0.0.1 \
		--secure-port=0 --port=0 --leader-elect=false --profiling=false \
		--service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
		--use-service-account-credentials \
		--cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
		--controllers='*,bootstrapsigner,tokencleaner' \
		--feature-gates="BoundServiceAccountTokenVolume=$KUBE_BOUND_TOKENS"
	spawn "$dir" kube-scheduler "$KUBE_BIN_DIR/kube-scheduler" \
		--kubeconfig="$dir/scheduler.kubeconfig" --bind-address=127.0.0.1 \
		--secure-port=0 --port=0 --leader-elect=false --profiling=false
	await "service account and kube-root-ca.crt in namespace default" \
		kube-controller-manager "$dir" namespace_ready "$dir" default
}

# SIGKILL, all at once: the instance's data is thrown away, a graceful stop buys nothing.
stop_components() {
	local dir=$1 prog pids='' pid i
	for prog in "${KUBE_COMPONENTS[@]}"; do
		pids+=" $(component_pids "$dir" "$prog" | tr '\n' ' ')"
	done
	# shellcheck disable=SC2086 # word splitting of the pid list is intended
	[ -z "${pids// /}" ] || kill -KILL $pids 2>/dev/null || true
	for pid in $pids; do
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		kill -0 "$pid" 2>/dev/null && die "process $pid of $dir does not die"
	done
	for prog in "${KUBE_COMPONENTS[@]}"; do rm -f "$dir/$prog.pid"; done
}

# --- up / down -----------------------------------------------------------------------------

# One start attempt with fresh ports; exit 75 when a port was taken meanwhile.
start_all() {
	local dir=$1 t0=$EPOCHREALTIME t1 api
	KUBE_ETCD_PORT=$(free_port)
	KUBE_ETCD_PEER_PORT=$(free_port)
	KUBE_API_PORT=$(free_port)
	KUBE_ETCD_URL=http://127.0.0.1:$KUBE_ETCD_PORT
	KUBE_API_URL=https://127.0.0.1:$KUBE_API_PORT
	cat >"$dir/env" <<EOF
KUBE_HARNESS_INSTANCE=$dir
KUBE_VERSION=v1.20.2
KUBE_BIN_DIR=$KUBE_BIN_DIR
KUBECTL=$KUBE_BIN_DIR/kubectl
KUBE_BOUND_TOKENS=$KUBE_BOUND_TOKENS
KUBE_API_URL=$KUBE_API_URL
KUBE_API_PORT=$KUBE_API_PORT
KUBE_ETCD_URL=$KUBE_ETCD_URL
KUBE_ETCD_PEER_PORT=$KUBE_ETCD_PEER_PORT
KUBE_CA_FILE=$dir/pki/ca.crt
KUBE_KUBECONFIG_ADMIN=$dir/admin.kubeconfig
KUBE_WAIT_NAMESPACE=$HARNESS_DIR/kube.sh wait-namespace $dir
EOF
	write_kubeconfig "$dir/admin.kubeconfig" "$KUBE_API_URL" admin
	write_kubeconfig "$dir/controller-manager.kubeconfig" "$KUBE_API_URL" controller-manager
	write_kubeconfig "$dir/scheduler.kubeconfig" "$KUBE_API_URL" scheduler
	start_etcd "$dir"
	start_apiserver "$dir"
	t1=$EPOCHREALTIME
	api=$(since "$t0")
	start_controllers "$dir"
	say "kube $dir: etcd + API server ready in ${api}s, service accounts $(since "$t1")s later"
}

cmd_up() {
	local dir=$1 opt attempt rc t0=$EPOCHREALTIME
	shift
	KUBE_BOUND_TOKENS=${KUBE_BOUND_TOKENS:-true}
	for opt in "$@"; do
		case $opt in
		--bound-tokens=true | --bound-tokens=false) KUBE_BOUND_TOKENS=${opt#*=} ;;
		*) die "unknown option '$opt' (expected --bound-tokens=true|false)" ;;
		esac
	done
	case $KUBE_BOUND_TOKENS in true | false) ;; *) die "KUBE_BOUND_TOKENS must be true or false, not '$KUBE_BOUND_TOKENS'" ;; esac
	dir=$(kube_dir "$dir" new)
	preflight etcd openssl curl jq socat ss
	if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
		die "$dir exists and is not empty"
	fi
	KUBE_BIN_DIR=$("$HARNESS_DIR/kube-build.sh")
	mkdir -p "$dir/log"
	: >"$dir/$KUBE_MARK"
	make_pki "$dir"
	say "kube $dir: certificates made in $(since "$t0")s"
	for attempt in 1 2 3; do
		# A plain subshell statement, so errexit holds inside it.
		set +e
		(
			set -e
			start_all "$dir"
		)
		rc=$?
		set -e
		[ "$rc" -eq 0 ] && break
		stop_components "$dir"
		[ "$rc" -eq 75 ] && [ "$attempt" -lt 3 ] || exit "$rc"
		say "kube $dir: a port was taken meanwhile; starting again on other ports"
		rm -rf "$dir/etcd"
	done
	load_env "$dir"
	say "kube $dir: up in $(since "$t0")s ($KUBE_API_URL, bound tokens $KUBE_BOUND_TOKENS)"
}

cmd_down() {
	local dir r
	[ -n "${1:-}" ] || usage
	dir=$(abspath "$1")
	[ -d "$dir" ] || return 0
	if [ ! -e "$dir/$KUBE_MARK" ] && [ -n "$(ls -A "$dir")" ]; then
		die "$dir is not a kube harness instance (no $KUBE_MARK): not touching it"
	fi
	for r in "$dir"/relay-*/; do
		[ -d "$r" ] && relay_stop "$r"
	done
	stop_components "$dir"
	rm -rf "$dir"
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
		if [ -e "$d/$KUBE_MARK" ]; then cmd_down "$d" || say "reap: down $d failed"; fi
	done
}

cmd_wait_namespace() {
	local dir=$1 ns=${2:-}
	[ -n "$ns" ] || usage
	load_env "$dir"
	await "service account and kube-root-ca.crt in namespace $ns" kube-apiserver "$dir" \
		namespace_ready "$dir" "$ns"
}

# --- node identities -------------------------------------------------------------------------

check_node_name() {
	case $1 in *[!a-z0-9.-]* | '' | [.-]*) die "node name '$1' is not a DNS subdomain (a-z, 0-9, '-', '.')" ;; esac
}

# Client and serving certificates of node $2 in DIR $1/nodes/$2 unless there, keys of type
# $3 (rsa or ec, see issue_cert).
node_certs() {
	local dir=$1 name=$2 nd=$1/nodes/$2
	[ -f "$nd/client.crt" ] && return 0
	mkdir -p "$nd"
	issue_cert "$dir/pki" "node-$name" "/CN=system:node:$name/O=system:nodes" "$CLIENT_EXT" "$3"
	mv "$dir/pki/node-$name.crt" "$nd/client.crt"
	mv "$dir/pki/node-$name.key" "$nd/client.key"
	issue_cert "$dir/pki" "node-$name-serving" "/CN=system:node:$name/O=system:nodes" "$SERVER_EXT
subjectAltName=DNS:$name,IP:127.0.0.1" "$3"
	mv "$dir/pki/node-$name-serving.crt" "$nd/serving.crt"
	mv "$dir/pki/node-$name-serving.key" "$nd/serving.key"
	cp "$dir/pki/ca.crt" "$nd/ca.crt"
}

cmd_node_certs() {
	local dir=$1 name
	shift
	[ $# -gt 0 ] || usage
	for name in "$@"; do check_node_name "$name"; done
	for name in "$@"; do node_certs "$dir" "$name" ec; done
}

cmd_node_identity() {
	local dir=$1 name=${2:-} relay=${3:-} nd server kc
	[ -n "$name" ] || usage
	check_node_name "$name"
	load_env "$dir"
	nd=$dir/nodes/$name
	node_certs "$dir" "$name" rsa
	server=$KUBE_API_URL
	kc=$nd/kubeconfig
	if [ -n "$relay" ]; then
		[ -f "$dir/relay-$relay/port" ] || die "no relay $relay in $dir (kube.sh relay-up $dir $relay first)"
		server=https://127.0.0.1:$(cat "$dir/relay-$relay/port")
		kc=$nd/kubeconfig-relay-$relay
	fi
	# Written by kubectl itself: the form `kubectl config` gives a user.
	rm -f "$kc"
	if ! {
		"$KUBECTL" config --kubeconfig="$kc" set-cluster tinylet-test --server="$server" \
			--certificate-authority="$nd/ca.crt" --embed-certs=true &&
			"$KUBECTL" config --kubeconfig="$kc" set-credentials "system:node:$name" \
				--client-certificate="$nd/client.crt" --client-key="$nd/client.key" &&
			"$KUBECTL" config --kubeconfig="$kc" set-context default --cluster=tinylet-test \
				--user="system:node:$name" &&
			"$KUBECTL" config --kubeconfig="$kc" use-context default
	} >/dev/null; then
		die "kubectl config could not write $kc"
	fi
	chmod 600 "$kc"
	printf '%s\n' "$kc"
}

# --- restarts -------------------------------------------------------------------------------

cmd_apiserver_restart() {
	local dir=$1 pid i gone
	load_env "$dir"
	pid=$(component_pids "$dir" kube-apiserver | head -n 1)
	[ -n "$pid" ] || die "no API server of $dir runs"
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 600; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	gone=$(date +%s.%N)
	start_apiserver "$dir"
	echo "$gone"
}

# --- relays ----------------------------------------------------------------------------------

relay_dir() {
	local id=${2:-1}
	case $id in *[!a-zA-Z0-9_-]* | '') die "relay name '$id': letters, digits, '-', '_' only" ;; esac
	printf '%s/relay-%s\n' "$1" "$id"
}

# Pids of the relay in directory $1: its socat and the per-connection socats it forked
# (all carry the tag `-lp relay:DIR`).
relay_pids() {
	pids_with_args socat -lp "relay:$1"
}

relay_listening() {
	[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

relay_start() {
	local rd=$1 port target deadline pid=''
	port=$(cat "$rd/port")
	target=$(cat "$rd/target")
	relay_listening "$port" && die "port $port of relay $rd is taken"
	rm -f "$rd/socat.pid"
	# -lp tags the processes (found again without the pid file); `fork`: one child per
	# connection, so killing the tree drops every live connection.
	spawn_reaped "$rd/socat.pid" "$rd/socat.log" socat -lp "relay:$rd" \
		"TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" "TCP:$target"
	deadline=$((SECONDS + 10))
	until relay_listening "$port"; do
		[ -n "$pid" ] || pid=$(cat "$rd/socat.pid" 2>/dev/null || true)
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			die "relay socat exited: $(tail -n 5 "$rd/socat.log")"
		fi
		[ "$SECONDS" -lt "$deadline" ] || die "relay on port $port not listening after 10s"
		sleep 0.05
	done
}

# Kills the relay's socats (listener and connections), waits until the port is closed.
relay_stop() {
	local rd=${1%/} pids port deadline
	port=$(cat "$rd/port" 2>/dev/null || true)
	pids=$(relay_pids "$rd" | sort -u)
	# shellcheck disable=SC2086 # word splitting of the pid list is intended
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
	deadline=$((SECONDS + 10))
	while [ -n "$port" ] && relay_listening "$port" && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.05
	done
	rm -f "$rd/socat.pid"
}

cmd_relay() {
	local cmd=$1 dir=$2 rd
	rd=$(relay_dir "$dir" "${3:-}")
	case $cmd in
	relay-up)
		load_env "$dir"
		if [ ! -d "$rd" ]; then
			mkdir -p "$rd"
			free_port >"$rd/port"
			printf '127.0.0.1:%s\n' "$KUBE_API_PORT" >"$rd/target"
		fi
		[ -n "$(relay_pids "$rd")" ] || relay_start "$rd"
		printf 'https://127.0.0.1:%s\n' "$(cat "$rd/port")"
		;;
	relay-cut)
		[ -d "$rd" ] || die "no relay $rd"
		relay_stop "$rd"
		;;
	relay-restore)
		[ -d "$rd" ] || die "no relay $rd"
		[ -n "$(relay_pids "$rd")" ] || relay_start "$rd"
		;;
	relay-down)
		[ -d "$rd" ] || return 0
		relay_stop "$rd"
		rm -rf "$rd"
		;;
	esac
}

main() {
	[ $# -ge 2 ] || usage
	local cmd=$1 dir
	shift
	case $cmd in
	up) cmd_up "$@" ;;
	down) cmd_down "$1" ;;
	reap) cmd_reap "$1" ;;
	env) cat "$(kube_dir "$1")/env" ;;
	kubeconfig) printf '%s/admin.kubeconfig\n' "$(kube_dir "$1")" ;;
	kubectl)
		dir=$(kube_dir "$1")
		shift
		load_env "$dir"
		exec "$KUBECTL" --kubeconfig="$dir/admin.kubeconfig" "$@"
		;;
	wait-namespace) cmd_wait_namespace "$(kube_dir "$1")" "${2:-}" ;;
	node-identity) cmd_node_identity "$(kube_dir "$1")" "${2:-}" "${3:-}" ;;
	node-certs)
		dir=$(kube_dir "$1")
		shift
		cmd_node_certs "$dir" "$@"
		;;
	apiserver-restart) cmd_apiserver_restart "$(kube_dir "$1")" ;;
	relay-up | relay-cut | relay-restore | relay-down) cmd_relay "$cmd" "$(kube_dir "$1")" "${2:-}" ;;
	*) usage ;;
	esac
}

main "$@"
