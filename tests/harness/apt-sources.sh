#!/usr/bin/env bash
# Prints the machine's enabled apt `deb` sources as deb822 stanzas of type TYPE, so that
# what the project adds (deb-src entries for `apt-get source`, the arm64 tree of
# tests/arm_e2e) uses the archives, mirrors, proxies and keys the machine already uses:
# the project's files name no archive address.
#
#   tests/harness/apt-sources.sh deb-src|deb
#
# Read: deb822 files (/etc/apt/sources.list.d/*.sources: stanzas whose Types has `deb`,
# `Enabled: no` left out) and one-line files (/etc/apt/sources.list, sources.list.d/*.list:
# `deb [options] URI SUITE COMPONENTS...` lines; `signed-by` and `trusted` kept).
# Architectures are left out: the entries serve another architecture (arm64) or sources.
# APT_ETC (default /etc/apt) is where to read, for tests.
set -euo pipefail

TYPE=${1:-}
APT_ETC=${APT_ETC:-/etc/apt}
case $TYPE in
deb | deb-src) ;;
*)
	echo "usage: $0 deb-src|deb" >&2
	exit 2
	;;
esac

# The `deb` stanzas of deb822 files, as TYPE.
from_deb822() {
	awk -v type="$TYPE" '
	function flush(   i) {
		if (n > 0 && deb && enabled) {
			print "Types: " type
			for (i = 1; i <= n; i++) print kept[i]
			print ""
		}
		n = 0; deb = 0; enabled = 1; skip = 0
	}
	BEGIN { enabled = 1 }
	FNR == 1 { flush() }
	/^[ \t]*$/ { flush(); next }
	/^#/ { next }
	# A continuation line belongs to the field above it (a Signed-By key block).
	/^[ \t]/ { if (!skip) kept[++n] = $0; next }
	{
		key = tolower(substr($0, 1, index($0, ":") - 1))
		value = substr($0, index($0, ":") + 1)
		skip = 0
		if (key == "types") { deb = (" " value " " ~ /[ \t]deb[ \t]/); skip = 1; next }
		if (key == "enabled") { if (value ~ /[Nn][Oo]/) enabled = 0; skip = 1; next }
		if (key == "architectures") { skip = 1; next }
		kept[++n] = $0
	}
	END { flush() }
	' "$@"
}

# The `deb` lines of one-line files, as TYPE stanzas.
from_one_line() {
	awk -v type="$TYPE" '
	/^[ \t]*deb[ \t]/ {
		line = $0
		sub(/^[ \t]*deb[ \t]+/, "", line)
		sub(/[ \t]+#.*$/, "", line)
		signed = ""; trusted = ""
		if (substr(line, 1, 1) == "[") {
			opts = substr(line, 2, index(line, "]") - 2)
			line = substr(line, index(line, "]") + 1)
			k = split(opts, o, /[ \t]+/)
			for (i = 1; i <= k; i++) {
				if (o[i] ~ /^signed-by=/) signed = substr(o[i], 11)
				if (o[i] == "trusted=yes") trusted = "yes"
			}
		}
		sub(/^[ \t]+/, "", line)
		k = split(line, f, /[ \t]+/)
		if (k < 2) next
		print "Types: " type
		print "URIs: " f[1]
		print "Suites: " f[2]
		comps = ""
		for (i = 3; i <= k; i++) comps = comps (i > 3 ? " " : "") f[i]
		if (comps != "") print "Components: " comps
		if (signed != "") print "Signed-By: " signed
		if (trusted != "") print "Trusted: yes"
		print ""
	}
	' "$@"
}

main() {
	local sources=() lists=() f
	for f in "$APT_ETC"/sources.list.d/*.sources; do
		[ -f "$f" ] && sources+=("$f")
	done
	[ -f "$APT_ETC/sources.list" ] && lists+=("$APT_ETC/sources.list")
	for f in "$APT_ETC"/sources.list.d/*.list; do
		[ -f "$f" ] && lists+=("$f")
	done
	if [ "${#sources[@]}" -gt 0 ]; then from_deb822 "${sources[@]}"; fi
	if [ "${#lists[@]}" -gt 0 ]; then from_one_line "${lists[@]}"; fi
}

main
