#!/usr/bin/env bash
# Provides kubemark v1.20.2 (`cmd/kubemark`: the hollow node, kubelet's own code on a fake
# runtime) for `make bench-fleet`, built from the same Debian source tree and Go as the
# control plane (kube-build.sh), offline, the way kube-build.sh builds the control plane.
#
#   kubemark-build.sh     prints the path of the kubemark binary on stdout; builds it when
#                         missing (about 10 minutes on 2 cores with a cold Go cache)
#
# KUBEMARK_CACHE   where the binary lives (default /var/cache/tinylet/kubemark-1.20.2/bin),
#                  stamped with its recipe: a stamp of another recipe is built again.
# The build runs in kube-build.sh's source tree under that cache's lock (the tree's `make`
# is never run by two builds at once). Needs root and the packages of install-deps.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

KUBE_VERSION=1.20.2
# Bumped when the way of building changes (2: the FakeOS lock below).
KUBEMARK_RECIPE=2
KUBE_CACHE=${KUBE_CACHE:-/var/cache/tinylet/kube-$KUBE_VERSION}
KUBEMARK_CACHE=${KUBEMARK_CACHE:-/var/cache/tinylet/kubemark-$KUBE_VERSION/bin}

msg() { printf 'kubemark-build: %s\n' "$*" >&2; }
die() {
	printf 'kubemark-build: error: %s\n' "$*" >&2
	exit 1
}

cached() {
	[ -x "$KUBEMARK_CACHE/kubemark" ] &&
		grep -qx "recipe $KUBEMARK_RECIPE" "$KUBEMARK_CACHE/.complete" 2>/dev/null
}

if cached; then
	msg "v$KUBE_VERSION cached in $KUBEMARK_CACHE"
	printf '%s\n' "$KUBEMARK_CACHE/kubemark"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || die "kubemark is not built yet in $KUBEMARK_CACHE and building it needs root"
for t in go make flock; do
	command -v "$t" >/dev/null 2>&1 || die "missing $t: run tests/harness/install-deps.sh (as root) first"
done

t0=$(date +%s)
tree=$("$here/kube-build.sh" --source)
mkdir -p "$KUBE_CACHE/home" "$KUBE_CACHE/gocache"
exec 9>"$KUBE_CACHE/.lock"
if ! flock -n 9; then
	msg "another build holds $KUBE_CACHE/.lock; waiting for it"
	flock 9
fi
if cached; then
	msg "built by another run meanwhile"
	printf '%s\n' "$KUBEMARK_CACHE/kubemark"
	exit 0
fi
msg "building cmd/kubemark in $tree"
cd "$tree"
[ -e .go/src/k8s.io/kubernetes ] || { mkdir -p .go/src/k8s.io && ln -sfn ../../.. .go/src/k8s.io/kubernetes; }
# A line a minute: the make is quiet for long stretches.
(while sleep 60; do msg "still building ($(($(date +%s) - t0)) s)"; done) &
ticker=$!
# The hollow node's fake OS (pkg/kubelet/container/testing/os.go) writes a map in Create
# without a lock, and pod workers call it at once (makeMounts: the termination-log file of
# each container): with 5 pods per node, 100 hollow nodes died of Go's "concurrent map
# writes" in two runs out of two. Only for this build, the tree gets one lock around its
# Create, Remove and RemoveAll; the file is put back afterwards, for the other builds of
# the tree. kubelet's own code is untouched.
fake_os=pkg/kubelet/container/testing/os.go
fake_os_orig=$KUBE_CACHE/fake-os.go.orig
# A copy left behind means a build was killed before it put the file back: that copy is
# the tree's own file.
if [ -f "$fake_os_orig" ]; then
	msg "$fake_os: putting back the tree's file a build cut short left changed"
	cp "$fake_os_orig" "$fake_os"
fi
cp "$fake_os" "$fake_os_orig"
trap 'cp "$fake_os_orig" "$fake_os" && rm -f "$fake_os_orig"; kill "$ticker" 2>/dev/null || true' EXIT
sed -i -e '/^package testing$/a import "sync"' \
	-e '/^func (f \*FakeOS) \(Create\|Remove\|RemoveAll\)(/a \\tfakeFilesLock.Lock()\n\tdefer fakeFilesLock.Unlock()' \
	-e '$a \\n// One lock for the fake files (tinylet'"'"'s bench-fleet: pod workers call these at once).\nvar fakeFilesLock sync.Mutex' \
	"$fake_os"
[ "$(grep -c 'fakeFilesLock.Lock()' "$fake_os")" -eq 3 ] ||
	die "$fake_os: the lock did not go in where expected (was the file changed?)"
GOPATH=$PWD/.go CGO_ENABLED=0 GOPROXY=off HOME=$KUBE_CACHE/home GOCACHE=$KUBE_CACHE/gocache \
	make WHAT=cmd/kubemark >&2 || die "make WHAT=cmd/kubemark failed in $tree (output above)"

rm -rf "$KUBEMARK_CACHE.tmp"
mkdir -p "$KUBEMARK_CACHE.tmp"
cp _output/bin/kubemark "$KUBEMARK_CACHE.tmp/kubemark"
"$KUBEMARK_CACHE.tmp/kubemark" --version 2>/dev/null | grep -qF "v$KUBE_VERSION" ||
	die "built kubemark does not report v$KUBE_VERSION: $("$KUBEMARK_CACHE.tmp/kubemark" --version 2>&1)"
printf 'v%s from %s, built %s\nrecipe %s\n' "$KUBE_VERSION" "$tree" "$(date -u +%FT%TZ)" \
	"$KUBEMARK_RECIPE" >"$KUBEMARK_CACHE.tmp/.complete"
rm -rf "$KUBEMARK_CACHE"
mv "$KUBEMARK_CACHE.tmp" "$KUBEMARK_CACHE"
msg "built into $KUBEMARK_CACHE in $(($(date +%s) - t0)) s"
printf '%s\n' "$KUBEMARK_CACHE/kubemark"
