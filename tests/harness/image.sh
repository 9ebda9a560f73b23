#!/usr/bin/env bash
# Builds small OCI images by hand (no docker) as OCI archive tars that
# `ctr -n k8s.io images import` and `skopeo copy oci-archive:FILE ...` accept.
#
#   image.sh busybox --name REF --out FILE.tar [--pad BYTES] [--entrypoint JSON]
#                    [--cmd JSON] [--workdir DIR] [--env K=V]...
#       Layer 1: bin/busybox (the host's static busybox) + a symlink per applet, /etc/passwd,
#       /etc/group, /tmp, /root, /var/www. Built reproducibly, so every busybox image shares
#       this layer. With --pad N a second layer holds /pad: N random bytes, which makes
#       images distinct and of known size (image-GC tests). Default Cmd ["sh"].
#   image.sh pause --name REF --out FILE.tar
#       One layer with /pause, a tiny static program (pause.c, built with gcc -static)
#       that sleeps, reaps children and exits 0 on SIGTERM/SIGINT. Entrypoint ["/pause"].
#   image.sh merge --out FILE.tar A.tar B.tar...
#       One OCI archive holding every image of the given archives (built by this script),
#       so a single `ctr images import` loads them all.
#
# --entrypoint/--cmd take JSON arrays, e.g. --cmd '["sleep","3600"]'. On success prints
# key=value lines: name, size (manifest + config + layers, bytes), config (the image id,
# sha256:...), manifest (digest).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

usage() {
	usage_text "$0"
	exit 2
}

# JSON string literal for $1 (escapes backslash, quote and control characters).
json_str() {
	local s=$1 out='' c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		'"') out+='\"' ;;
		\\) out+="\\\\" ;;
		$'\n') out+='\n' ;;
		$'\t') out+='\t' ;;
		$'\r') out+='\r' ;;
		[[:cntrl:]]) out+=$(printf '\\u%04x' "'$c") ;;
		*) out+=$c ;;
		esac
	done
	printf '"%s"' "$out"
}

# OCI architecture (and variant) of this host, or IMAGE_ARCH's (e.g. arm64: images for
# the emulated board of tests/arm_e2e, with IMAGE_BUSYBOX an arm64 static busybox).
oci_platform() {
	case ${IMAGE_ARCH:-$(uname -m)} in
	x86_64) echo '"architecture":"amd64","os":"linux"' ;;
	aarch64 | arm64) echo '"architecture":"arm64","os":"linux"' ;;
	armv7* | armv8l) echo '"architecture":"arm","os":"linux","variant":"v7"' ;;
	armv6*) echo '"architecture":"arm","os":"linux","variant":"v6"' ;;
	i?86) echo '"architecture":"386","os":"linux"' ;;
	*) die "unknown architecture $(uname -m)" ;;
	esac
}

# Reproducible tar of directory $1 into $2 (fixed owners, mtimes and order).
layer_tar() {
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu \
		-cf "$2" -C "$1" .
}

# Moves file $1 into the blob store $2 and prints "digest size".
add_blob() {
	local sum size
	sum=$(sha256sum "$1" | cut -d' ' -f1)
	size=$(stat -c %s "$1")
	mv "$1" "$2/blobs/sha256/$sum"
	printf 'sha256:%s %s\n' "$sum" "$size"
}

static_busybox() {
	local bb
	bb=${IMAGE_BUSYBOX:-$(command -v busybox || true)}
	[ -n "$bb" ] || die "busybox not found: run tests/harness/install-deps.sh (busybox-static)"
	bb=$(readlink -f "$bb")
	if ! file -L "$bb" | grep -q 'statically linked'; then
		die "$bb is not statically linked: install busybox-static (tests/harness/install-deps.sh)"
	fi
	printf '%s\n' "$bb"
}

rootfs_busybox() {
	local root=$1 bb
	bb=$(static_busybox)
	mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/var/www"
	chmod 1777 "$root/tmp"
	chmod 700 "$root/root"
	cp "$bb" "$root/bin/busybox"
	chmod 755 "$root/bin/busybox"
	# One process instead of a fork per applet: busybox makes its own symlinks, seen from
	# inside the new root so they point at /bin/busybox.
	if [ -n "${IMAGE_BUSYBOX:-}" ]; then
		# A foreign busybox cannot run here: the host's (same Debian package) lists the
		# applets.
		local a
		for a in $(busybox --list); do
			[ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
		done
	else
		chroot "$root" /bin/busybox --install -s /bin ||
			die "busybox --install in $root failed"
	fi
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
}

rootfs_pause() {
	local root=$1
	command -v gcc >/dev/null || die "gcc not found: run tests/harness/install-deps.sh"
	mkdir -p "$root"
	gcc -static -Os -s -o "$root/pause" "$HARNESS_DIR/pause.c" ||
		die "gcc -static failed building pause.c (is libc6-dev installed? tests/harness/install-deps.sh)"
	chmod 755 "$root/pause"
}

# Archives built here have index.json = PREFIX + manifest entries + "]}"; the merge
# concatenates the entries and the blob directories.
INDEX_PREFIX='{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":['

merge() {
	if [ "${1:-}" != --out ] || [ $# -lt 3 ]; then usage; fi
	local out a entries='' idx
	out=$(abspath "$2")
	shift 2
	local work
	work=$(mktemp -d "$out.merge.XXXXXX")
	# shellcheck disable=SC2064 # expand now: $work is local
	trap "rm -rf '$work'" EXIT
	for a in "$@"; do
		tar -xf "$a" -C "$work" || die "cannot read OCI archive $a"
		idx=$(cat "$work/index.json")
		case $idx in "$INDEX_PREFIX"*"]}") ;; *) die "$a: index.json not written by image.sh" ;; esac
		idx=${idx#"$INDEX_PREFIX"}
		entries+=${entries:+,}${idx%]\}}
	done
	printf '%s%s]}' "$INDEX_PREFIX" "$entries" >"$work/index.json"
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$work/image.tar" \
		-C "$work" oci-layout index.json blobs
	mv "$work/image.tar" "$out"
}

main() {
	[ $# -ge 1 ] || usage
	local kind=$1
	shift
	if [ "$kind" = merge ]; then
		merge "$@"
		return
	fi
	local name='' out='' pad=0 entrypoint='' cmd='' workdir='' envs=()
	while [ $# -gt 0 ]; do
		[ $# -ge 2 ] || usage
		case $1 in
		--name) name=$2 ;;
		--out) out=$2 ;;
		--pad) pad=$2 ;;
		--entrypoint) entrypoint=$2 ;;
		--cmd) cmd=$2 ;;
		--workdir) workdir=$2 ;;
		--env) envs+=("$2") ;;
		*) usage ;;
		esac
		shift 2
	done
	if [ -z "$name" ] || [ -z "$out" ]; then usage; fi
	[[ $pad =~ ^[0-9]+$ ]] || die "--pad must be a byte count, got '$pad'"
	local j
	for j in "$entrypoint" "$cmd"; do
		[ -z "$j" ] || [[ $j =~ ^\[.*\]$ ]] || die "--entrypoint/--cmd take a JSON array, got '$j'"
	done
	preflight tar sha256sum file

	out=$(abspath "$out")
	local work
	work=$(mktemp -d "$out.build.XXXXXX")
	# shellcheck disable=SC2064 # expand now: $work is local
	trap "rm -rf '$work'" EXIT
	mkdir -p "$work/blobs/sha256" "$work/rootfs"

	case $kind in
	busybox)
		rootfs_busybox "$work/rootfs"
		[ -n "$cmd$entrypoint" ] || cmd='["sh"]'
		;;
	pause)
		rootfs_pause "$work/rootfs"
		[ -n "$entrypoint" ] || entrypoint='["/pause"]'
		;;
	*) usage ;;
	esac

	local layers=() diff_ids=() d s
	layer_tar "$work/rootfs" "$work/layer.tar"
	read -r d s < <(add_blob "$work/layer.tar" "$work")
	diff_ids+=("$d") # uncompressed layers: diff_id == digest
	layers+=("{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"$d\",\"size\":$s}")
	local total=$s

	if [ "$pad" -gt 0 ]; then
		mkdir -p "$work/padfs"
		head -c "$pad" /dev/urandom >"$work/padfs/pad"
		layer_tar "$work/padfs" "$work/pad.tar"
		read -r d s < <(add_blob "$work/pad.tar" "$work")
		diff_ids+=("$d")
		layers+=("{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"$d\",\"size\":$s}")
		total=$((total + s))
	fi

	local platform conf envjson e
	platform=$(oci_platform)
	envjson='"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"'
	for e in "${envs[@]}"; do envjson+=",$(json_str "$e")"; done
	conf="\"Env\":[$envjson]"
	[ -z "$entrypoint" ] || conf+=",\"Entrypoint\":$entrypoint"
	[ -z "$cmd" ] || conf+=",\"Cmd\":$cmd"
	[ -z "$workdir" ] || conf+=",\"WorkingDir\":$(json_str "$workdir")"
	local ids
	ids=$(printf '"%s",' "${diff_ids[@]}")
	printf '{%s,"config":{%s},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
		"$platform" "$conf" "${ids%,}" >"$work/config.json"
	local cdig csize
	read -r cdig csize < <(add_blob "$work/config.json" "$work")
	total=$((total + csize))

	local ls
	ls=$(printf '%s,' "${layers[@]}")
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[%s]}' \
		"$cdig" "$csize" "${ls%,}" >"$work/manifest.json"
	local mdig msize
	read -r mdig msize < <(add_blob "$work/manifest.json" "$work")
	total=$((total + msize))

	local tag=${name##*/}
	case $tag in *:*) tag=${tag##*:} ;; *) tag=latest ;; esac
	printf '%s{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{%s},"annotations":{"io.containerd.image.name":%s,"org.opencontainers.image.ref.name":%s}}]}' \
		"$INDEX_PREFIX" "$mdig" "$msize" "$platform" "$(json_str "$name")" "$(json_str "$tag")" >"$work/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci-layout"

	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$work/image.tar" \
		-C "$work" oci-layout index.json blobs
	mv "$work/image.tar" "$out"
	printf 'name=%s\nsize=%s\nconfig=%s\nmanifest=%s\n' "$name" "$total" "$cdig" "$mdig"
}

main "$@"
