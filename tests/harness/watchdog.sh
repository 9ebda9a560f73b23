#!/usr/bin/env bash
# Tears a test process's harness session down once that process is gone.
#
#   watchdog.sh SESSION   (stdin: a pipe whose write end only the test process holds)
#
# Reads stdin until EOF, which comes when the test process exits for any reason (normal
# end, panic, abort, SIGKILL), then runs `kube.sh reap SESSION` and
# `containerd.sh reap SESSION`: every control plane, instance and registry still under
# SESSION is stopped and removed. Statics such as
# tests/common's shared containerd are never dropped; this is what cleans them up.
# Started by tests/common/mod.rs in its own process group, so Ctrl-C spares it.
set -euo pipefail
[ $# -eq 1 ] || {
	echo "usage: watchdog.sh SESSION" >&2
	exit 2
}
cat >/dev/null || true
"$(dirname "$0")/kube.sh" reap "$1" || true
exec "$(dirname "$0")/containerd.sh" reap "$1"
