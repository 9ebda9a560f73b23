#!/bin/bash
# Builds what the conformance run needs, from Debian's kubernetes source tree (upstream v1.20.2,
# fetched by tests/harness/kube-build.sh --source) and Debian packages only, into $CONF_BIN:
#   e2e.test, ginkgo (vendored), agnhost (test/images/agnhost), pause (build/pause/linux/pause.c,
#   static), nnp (test/images/nonewprivs), netcat-openbsd (unpacked from its .deb);
#   kubelet (cmd/kubelet) only with WITH_KUBELET=1 (the baseline: node-up.sh).
# Cached: a $CONF_BIN stamped with this recipe is used as it is (well under a second); a fresh
# machine builds once (~10 min on 2 cores after the control plane's build, whose Go cache it
# shares). Needs root and the packages of tests/harness/install-deps.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
. "$here/env.sh"
# Bumped when what is built changes: a cache with another stamp is rebuilt.
RECIPE=1
msg() { printf 'conformance build: %s\n' "$*" >&2; }

complete() {
	local b
	for b in e2e.test ginkgo agnhost pause nnp nc-openbsd/bin/nc.openbsd; do
		[ -x "$CONF_BIN/$b" ] || return 1
	done
	[ "${WITH_KUBELET:-0}" != 1 ] || [ -x "$CONF_BIN/kubelet" ] || return 1
	grep -qx "recipe $RECIPE" "$CONF_BIN/.complete" 2>/dev/null
}

if complete; then
	msg "cached in $CONF_BIN"
	exit 0
fi
t0=$(date +%s)
tree=$("$here/../harness/kube-build.sh" --source)
[ "$tree" = "$KUBE_SRC" ] || KUBE_SRC=$tree
mkdir -p "$CONF_BIN" "$GO_CACHE" "$GO_HOME"
exec 8>"$CONF_BIN/.lock"
flock 8
cd "$KUBE_SRC"
[ -e .go/src/k8s.io/kubernetes ] || { mkdir -p .go/src/k8s.io && ln -sfn ../../.. .go/src/k8s.io/kubernetes; }
gobuild() { GOPATH=$KUBE_SRC/.go CGO_ENABLED=0 GOPROXY=off HOME=$GO_HOME GOCACHE=$GO_CACHE "$@"; }
want=()
[ -x "$CONF_BIN/e2e.test" ] || want+=(test/e2e/e2e.test)
[ -x "$CONF_BIN/agnhost" ] || want+=(test/images/agnhost)
[ "${WITH_KUBELET:-0}" != 1 ] || [ -x "$CONF_BIN/kubelet" ] || want+=(cmd/kubelet)
if [ ${#want[@]} -gt 0 ]; then
	msg "building ${want[*]} (about 10 minutes on 2 cores)"
	# The make prints a line per stage; a line a minute says it is still going.
	(while sleep 60; do msg "still building ($(($(date +%s) - t0)) s)"; done) &
	ticker=$!
	gobuild make WHAT="${want[*]}" >&2 || {
		kill "$ticker"
		msg "make failed in $KUBE_SRC (output above)"
		exit 1
	}
	kill "$ticker"
fi
for b in e2e.test agnhost kubelet; do
	if [ -x "_output/bin/$b" ] && [ ! -x "$CONF_BIN/$b" ]; then cp "_output/bin/$b" "$CONF_BIN/"; fi
done
# The ginkgo CLI (parallel runs), from vendor/, without touching _output.
[ -x "$CONF_BIN/ginkgo" ] || (cd .go/src/k8s.io/kubernetes &&
	GO111MODULE=off gobuild go build -o "$CONF_BIN/ginkgo" ./vendor/github.com/onsi/ginkgo/ginkgo)
[ -x "$CONF_BIN/pause" ] || gcc -Os -Wall -Werror -static -DVERSION=v3.4.1 -o "$CONF_BIN/pause" build/pause/linux/pause.c
[ -x "$CONF_BIN/nnp" ] || (cd test/images/nonewprivs && GO111MODULE=off gobuild go build -o "$CONF_BIN/nnp" nnp.go)
# netcat-openbsd (`nc -u` for the UDP node-to-pod test), unpacked from its Debian package.
if [ ! -x "$CONF_BIN/nc-openbsd/bin/nc.openbsd" ]; then
	mkdir -p "$CONF_BIN/debs"
	(cd "$CONF_BIN/debs" && apt-get download -q netcat-openbsd >/dev/null)
	dpkg-deb -x "$CONF_BIN"/debs/netcat-openbsd_*.deb "$CONF_BIN/nc-openbsd"
fi
# The test images take files from the tree (agnhost's porter certificates): keep them too.
mkdir -p "$CONF_BIN/files"
cp "$KUBE_SRC/test/images/agnhost/porter/localhost.crt" "$KUBE_SRC/test/images/agnhost/porter/localhost.key" "$CONF_BIN/files/"
printf 'built %s from %s\nrecipe %s\n' "$(date -u +%FT%TZ)" "$KUBE_SRC" "$RECIPE" >"$CONF_BIN/.complete"
msg "built into $CONF_BIN in $(($(date +%s) - t0)) s"
