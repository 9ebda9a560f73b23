#!/usr/bin/env bash
# Provides the Kubernetes control plane the cluster tests run against (kube.sh), built from
# Debian's own `kubernetes` source package (upstream v1.20.2 with its vendor/ tree) by
# Debian's Go, offline, the way the Debian package builds it.
#
#   kube-build.sh     prints the directory holding kube-apiserver, kube-controller-manager,
#                     kube-scheduler and a matching kubectl on stdout; builds them when missing
#   kube-build.sh --source
#                     prints the unpacked source tree (fetched when missing), for builds of
#                     other programs of the same tree (tests/conformance/build.sh)
#
# KUBE_BIN_DIR   use this directory as is (nothing is built; it must hold the four programs)
# KUBE_CACHE     where the source, Go's caches and the result live (the 2.5 GB source tree
#                is removed after a build unless KUBE_KEEP_SRC=1); default
#                /var/cache/tinylet/kube-1.20.2, binaries in $KUBE_CACHE/bin. Outside the clone
#                and keyed by the version, so a warm run (same machine, another clone, CI)
#                skips the build; a fresh machine builds once (about 7 minutes on 2 cores).
#
# A cold build needs root and the packages from install-deps.sh (golang-go, rsync, jq,
# dpkg-dev, golang-github-modern-go-reflect2-dev) and the deb-src entry it writes. Concurrent runs wait for one build (flock).
set -euo pipefail

KUBE_VERSION=1.20.2
# Debian's source holding upstream v1.20.2 is versioned 1.20.5+really1.20.2-REVISION (a
# 1.20.5 upload was withdrawn); bookworm's security revisions change only REVISION.
# KUBE_DEB_VERSION pins an exact one; by default apt picks bookworm's current.
KUBE_DEB_VERSION=${KUBE_DEB_VERSION:-}
KUBE_PROGRAMS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
# Bumped when the way of building changes: a cache stamped with another recipe is rebuilt.
# 2: vendored reflect2 replaced by Debian's v1.0.2 (see fix_reflect2).
KUBE_RECIPE=2
REFLECT2=/usr/share/gocode/src/github.com/modern-go/reflect2
KUBE_CACHE=${KUBE_CACHE:-/var/cache/tinylet/kube-$KUBE_VERSION}
# shellcheck source=../../scripts/long-step.sh
. "$(dirname "$0")/../../scripts/long-step.sh"

msg() { printf 'kube-build: %s\n' "$*" >&2; }
die() {
	printf 'kube-build: error: %s\n' "$*" >&2
	exit 1
}

# True when directory $1 holds all four programs, executable.
complete_in() {
	local p
	for p in "${KUBE_PROGRAMS[@]}"; do
		[ -x "$1/$p" ] || return 1
	done
}

# True when directory $1 holds a finished build of this recipe.
cached_in() {
	complete_in "$1" && grep -qx "recipe $KUBE_RECIPE" "$1/.complete" 2>/dev/null
}

# The vendored reflect2 v1.0.1 reads Go runtime internals that changed in Go 1.18: built
# with Debian's Go 1.19, the API server panics encoding any map to JSON (a ConfigMap's
# data: "nil pointer dereference" in reflect2.Type2). v1.0.2, same API, supports Go 1.18+;
# Debian's golang-github-modern-go-reflect2-dev has it. Tree $1.
fix_reflect2() {
	local v=$1/vendor/github.com/modern-go/reflect2
	[ -f "$REFLECT2/go_above_118.go" ] ||
		die "$REFLECT2 (v1.0.2) missing: run tests/harness/install-deps.sh (golang-github-modern-go-reflect2-dev)"
	rm -rf "$v"
	mkdir -p "$v"
	cp -r "$REFLECT2/." "$v/"
}

# Seconds since $1 (an EPOCHREALTIME value), one decimal.
since() {
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

src=$KUBE_CACHE/src
tree=$src/kubernetes-1.20.5+really$KUBE_VERSION
pkg=kubernetes${KUBE_DEB_VERSION:+=$KUBE_DEB_VERSION}

# Fetches and unpacks Debian's source into $tree unless a whole unpacked tree is there.
fetch_source() {
	[ -f "$tree/.tinylet-unpacked" ] && return 0
	msg "fetching Debian source $pkg into $src"
	rm -rf "$src"
	mkdir -p "$src"
	(cd "$src" && long_step "$KUBE_CACHE/fetch.log" "kube-build: apt-get source $pkg" \
		apt-get source -q "$pkg") ||
		die "apt-get source $pkg failed (deb-src entry missing? run tests/harness/install-deps.sh)"
	[ -d "$tree" ] || die "apt-get source did not unpack $tree (not upstream v$KUBE_VERSION?): $(ls "$src")"
	fix_reflect2 "$tree"
	touch "$tree/.tinylet-unpacked"
}

# Takes the cache's lock (waiting for another build or fetch that holds it).
lock_cache() {
	mkdir -p "$KUBE_CACHE"
	exec 9>"$KUBE_CACHE/.lock"
	if ! flock -n 9; then
		msg "another build is running in $KUBE_CACHE; waiting for it"
		flock 9
	fi
}

t0=$EPOCHREALTIME

if [ "${1:-}" = --source ]; then
	[ "$(id -u)" -eq 0 ] || die "fetching the source needs root"
	lock_cache
	fetch_source
	printf '%s\n' "$tree"
	exit 0
fi

if [ -n "${KUBE_BIN_DIR:-}" ]; then
	complete_in "$KUBE_BIN_DIR" ||
		die "KUBE_BIN_DIR=$KUBE_BIN_DIR lacks one of ${KUBE_PROGRAMS[*]} (unset it to build them)"
	msg "using KUBE_BIN_DIR=$KUBE_BIN_DIR as is ($(since "$t0")s)"
	printf '%s\n' "$KUBE_BIN_DIR"
	exit 0
fi

bin=$KUBE_CACHE/bin
# The stamp is written last: a build that died half-way is never taken for a result.
if cached_in "$bin"; then
	msg "v$KUBE_VERSION cached in $bin, build skipped ($(since "$t0")s)"
	printf '%s\n' "$bin"
	exit 0
fi

[ "$(id -u)" -eq 0 ] || die "v$KUBE_VERSION is not built yet in $bin and building it needs root (or set KUBE_BIN_DIR)"
for t in go rsync jq dpkg-source make; do
	command -v "$t" >/dev/null 2>&1 || die "missing $t: run tests/harness/install-deps.sh (as root) first"
done

lock_cache
if cached_in "$bin"; then
	msg "v$KUBE_VERSION built by another run in $bin ($(since "$t0")s)"
	printf '%s\n' "$bin"
	exit 0
fi

fetch_source
deb_version=$(cd "$tree" && dpkg-parsechangelog -S Version)
msg "fetched and unpacked ($(since "$t0")s); building ${KUBE_PROGRAMS[*]} (about 7 minutes on 2 cores)"

# GOPATH layout as debian/rules sets it up; no network, no module proxy. Debian's tarball
# is a `git archive` export, so hack/lib/version.sh stamps v1.20.2 and its commit anyway.
cd "$tree"
mkdir -p .go/src/k8s.io "$KUBE_CACHE/home"
ln -sfn ../../.. .go/src/k8s.io/kubernetes
tb=$EPOCHREALTIME
GOPATH=$PWD/.go CGO_ENABLED=0 GOPROXY=off \
	HOME=$KUBE_CACHE/home GOCACHE=$KUBE_CACHE/gocache \
	long_step "$KUBE_CACHE/build.log" "kube-build: make" \
	make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubectl" ||
	die "make failed in $tree (its log's tail above)"

rm -rf "$bin.tmp"
mkdir -p "$bin.tmp"
for p in "${KUBE_PROGRAMS[@]}"; do
	cp "_output/bin/$p" "$bin.tmp/$p"
done
"$bin.tmp/kubectl" version --client --short 2>/dev/null | grep -qF "v$KUBE_VERSION" ||
	die "built kubectl does not report v$KUBE_VERSION: $("$bin.tmp/kubectl" version --client --short 2>&1)"
printf 'v%s from Debian kubernetes %s, built %s\nrecipe %s\n' "$KUBE_VERSION" "$deb_version" \
	"$(date -u +%FT%TZ)" "$KUBE_RECIPE" >"$bin.tmp/.complete"
rm -rf "$bin"
mv "$bin.tmp" "$bin"
# The tree with Go's caches is 2.5 GB; only the binaries are needed from now on.
[ -n "${KUBE_KEEP_SRC:-}" ] || rm -rf "$src" "${KUBE_CACHE:?}/gocache" "${KUBE_CACHE:?}/home"
msg "built v$KUBE_VERSION into $bin: make took $(since "$tb")s, $(since "$t0")s in all"
printf '%s\n' "$bin"
