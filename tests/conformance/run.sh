#!/bin/bash
# make conformance: Kubernetes v1.20.2's own [NodeConformance] e2e suite against tinylet as the
# only node of a loopback v1.20.2 cluster, on a private containerd, with test images from
# Debian packages in local registries. Builds what is missing (build.sh, cached), brings
# everything up (up.sh), runs the suite (run-e2e.sh), tears everything down (down.sh, also on
# failure or interrupt) and prints "N passed, N failed" with each failure; the specs in
# expected-failures.txt are counted apart. Exit 0 when no other spec failed.
# Env: TINYLET (the binary; default: target/release/tinylet, built when missing), NODES (4),
#      FOCUS/SKIP (see run-e2e.sh), KEEP_UP=1 (leave it all running), RESULTS.
# Results stay in $CONF_DIR/results/DATE-NODE (e2e.log, junit, specs.txt, summary.txt, the
# agent's log and config).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
. "$here/env.sh"
root=$(cd "$here/../.." && pwd)
t0=$(date +%s)
phase() { printf 'conformance: %s at %ss\n' "$1" "$(($(date +%s) - t0))" >&2; }

[ "$(id -u)" -eq 0 ] || { echo "conformance: must run as root (containerd, mounts, cgroups)" >&2; exit 2; }
"$here/build.sh"
phase "e2e binaries built or cached"
export TINYLET=${TINYLET:-$root/target/release/tinylet}
[ -x "$TINYLET" ] || { echo "conformance: no tinylet at $TINYLET (make build)" >&2; exit 2; }

# The node reports DiskPressure below 10 % free (kubelet's nodefs.available<10%, tinylet's
# default too) and then evicts the suite's pods: a full disk would read as a dozen
# unrelated failures. The suite itself writes ~2 GiB (images, containers, logs).
mkdir -p "$CONF_DIR"
read -r size avail < <(df -B1 --output=size,avail "$CONF_DIR" | tail -1)
need=$((size / 10 + 3 * 1024 * 1024 * 1024))
if [ "$avail" -lt "$need" ]; then
	echo "conformance: $CONF_DIR's filesystem has $((avail >> 30)) GiB free of $((size >> 30)) GiB;" \
		"the node would report DiskPressure (below 10 % free) and evict the suite's pods:" \
		"free at least $(((need - avail) >> 30)) GiB more" >&2
	exit 2
fi

down() { KEEP_IMAGES=1 "$here/down.sh" >/dev/null 2>&1 || true; }
# A run left over (interrupted) is stopped first: ports and the node name are fixed.
down
# Torn down on every way out: the end, a failure, or being stopped (INT, TERM).
if [ "${KEEP_UP:-0}" != 1 ]; then
	trap down EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
fi
NODE_AGENT=tinylet "$here/up.sh" >&2
phase "cluster, containerd and tinylet up"
export RESULTS=${RESULTS:-$CONF_DIR/results/$(date +%Y%m%d-%H%M%S)-$NODE_NAME}
set +e
"$here/run-e2e.sh" >/dev/null
set -e
cp "$NODE_DIR/tinylet/tinylet.log" "$NODE_DIR/tinylet/config.json" "$RESULTS/" 2>/dev/null || true
phase "suite ran"
python3 "$here/verdict.py" "$RESULTS" "$here/expected-failures.txt"
