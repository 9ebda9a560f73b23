#!/usr/bin/env bash
# The static release builds' linker: links as cargo-zigbuild's zig cc does, then links
# the same inputs again with zig's ld.lld and a symbol order, so the functions the
# agent runs in its steady state sit together at the start of .text (see cross/README.md,
# "Code layout"). zig cc has no way to pass --symbol-ordering-file, hence the second link.
#
# cross/build.sh makes this the linker (-C linker) of the static release builds, through
# a shim per target that sets TINYLET_ZIGCC_VAR (the variable in which cargo-zigbuild
# left its zig cc wrapper for the target). Without the list, or with
# TINYLET_LINK_ORDER=0, the first link is the result. TINYLET_ORDER_LOG: a file for the
# summary line (how many of the listed functions were found).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# cargo-zigbuild's zig cc wrapper: TINYLET_ZIGCC, or the variable TINYLET_ZIGCC_VAR names.
zigcc_var=${TINYLET_ZIGCC_VAR:-TINYLET_ZIGCC}
zigcc=${!zigcc_var:-}
[ -n "$zigcc" ] || { echo "cross/order/link: no zig cc wrapper (TINYLET_ZIGCC)" >&2; exit 1; }
list=${TINYLET_HOT_LIST:-$here/hot-functions.txt}
zig=${TINYLET_ZIG:-${CROSS_VENV:-/opt/tinylet-cross}/bin/python-zig}

say() { echo "cross/order/link: $*" >&2; }

if [ "${TINYLET_LINK_ORDER:-1}" = 0 ] || [ ! -s "$list" ]; then
	if [ -n "${TINYLET_ORDER_LOG:-}" ]; then echo "not laid out (no list, or TINYLET_LINK_ORDER=0)" >"$TINYLET_ORDER_LOG"; fi
	exec "$zigcc" "$@"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The first link, as zig cc makes it; -v prints the ld.lld command it ran.
if ! "$zigcc" "$@" -v 2>"$tmp/zig.err"; then
	cat "$tmp/zig.err" >&2
	exit 1
fi
objects=()
for a in "$@"; do
	case $a in *.o) objects+=("$a") ;; esac
done
python3 "$here/order_file.py" "$list" "${objects[@]}" >"$tmp/order" 2>"$tmp/order.err" ||
	{
		cat "$tmp/order.err" >&2
		exit 1
	}
# ld.lld's command line as zig printed it, one argument a line.
python3 - "$tmp/zig.err" >"$tmp/ld.args" <<'PY'
import shlex, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("ld.lld ")]
if not lines:
    sys.exit("zig cc -v printed no ld.lld command")
for arg in shlex.split(lines[-1])[1:]:
    print(arg)
PY
mapfile -t ld_args <"$tmp/ld.args"
"$zig" ld.lld "${ld_args[@]}" --symbol-ordering-file="$tmp/order" --no-warn-symbol-ordering
# rustc shows a linker's output only when it fails: the summary also goes to a file.
say "$(cat "$tmp/order.err")"
if [ -n "${TINYLET_ORDER_LOG:-}" ]; then cp "$tmp/order.err" "$TINYLET_ORDER_LOG"; fi
