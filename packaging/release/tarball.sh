#!/bin/sh
# Builds one release tarball: tarball.sh VERSION TARGET BINARY OUTDIR
# -> OUTDIR/tinylet-VERSION-TARGET.tar.gz holding, under tinylet-VERSION-TARGET/:
#   bin/tinylet                 the binary given (make release passes the static one)
#   board-configs/              every board config and its README
#   openwrt/                    procd init scripts, UCI default, containerd config, CNI
#                               network, firewall uci-defaults, sysupgrade keep list,
#                               and the feed Makefile (packaging/openwrt/tinylet)
#   systemd/                    tinylet.service and containerd's config.toml
#   cni/10-tinylet.conflist     the pod network (same file as in openwrt/files)
#   README.md, docs/, packaging.md   the project README, its documents (linked from
#                               it) and the install guide
#   NOTICE                      licenses of tinylet and of what is compiled into it
#   SHA256SUMS                  checksums of every file above
# The archive is reproducible: sorted names, root owner, mtime of the last commit.
set -eu

version=$1
target=$2
binary=$3
outdir=$4

repo=$(cd "$(dirname "$0")/../.." && pwd)
name="tinylet-$version-$target"
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
stage="$outdir/$name"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/board-configs" "$stage/openwrt" "$stage/systemd" "$stage/cni"

install -m 0755 "$binary" "$stage/bin/tinylet"
cp "$repo"/board-configs/*.json "$repo/board-configs/README.md" "$stage/board-configs/"
cp "$repo/packaging/openwrt/tinylet/Makefile" "$stage/openwrt/"
cp -R "$repo/packaging/openwrt/tinylet/files" "$stage/openwrt/files"
cp "$repo/packaging/systemd/tinylet.service" "$repo/packaging/systemd/containerd.toml" "$stage/systemd/"
cp "$repo/packaging/openwrt/tinylet/files/10-tinylet.conflist" "$stage/cni/"
cp "$repo/README.md" "$stage/README.md"
cp -R "$repo/docs" "$stage/docs"
cp "$repo/packaging/README.md" "$stage/packaging.md"

{
	echo "tinylet $version ($target)"
	echo "License: Apache-2.0"
	echo
	echo "The binary is statically linked with musl libc (MIT) and contains these crates:"
	(cd "$repo" && cargo tree --locked --edges normal,no-proc-macro --prefix none --target "$target" \
		--format '{p} {l}') | sed 's/ (\*)$//' | sort -u
} >"$stage/NOTICE"

sums="$outdir/$name.sums"
(cd "$stage" && find . -type f | LC_ALL=C sort | sed 's|^\./||' | xargs sha256sum) >"$sums"
mv "$sums" "$stage/SHA256SUMS"

mtime=$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)
tar -C "$outdir" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" \
	-cf - "$name" | gzip -9n >"$outdir/$name.tar.gz"
rm -rf "$stage"
echo "$outdir/$name.tar.gz"
