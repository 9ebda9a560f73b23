#!/usr/bin/env bash
# make arm-e2e: the static aarch64 tinylet keeps pods running on an emulated aarch64
# board (qemu-system-aarch64, TCG, 2x cortex-a53, no network) with Debian's containerd.
#
#   tests/arm_e2e/run.sh        boot 1 (-m 256): apply 3 pods, kill a container, SIGKILL
#                               the agent; boot 2 (-m 256, same disk, a power cut before
#                               it): every pod Running again; boot 3 (-m 128, same disk,
#                               another power cut): every pod Running again.
#
# The board's root filesystem comes from the Debian archive only (mmdebstrap, arm64,
# packages unpacked: containerd, runc, CNI plugins, busybox-static, the arm64 kernel),
# through the machine's own apt sources (mirrors, proxies; tests/harness/apt-sources.sh),
# of the machine's release,
# cached in $ARM_E2E_CACHE (default /var/cache/tinylet/arm-e2e, outside the clone) with
# a tiny initramfs of our own (busybox + the virtio/ext4 modules): a warm run skips all
# of it. Per run: a fresh ext4 disk from that tree, a payload disk (tar: tinylet, board
# config, pods, images built here from Debian's arm64 busybox, guest.sh), a results disk
# the guest writes a tar to. The guest prints its measurements as one "arm-e2e:" line;
# a failed check fails this script with the guest's log tail.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/arm_e2e
CACHE=${ARM_E2E_CACHE:-/var/cache/tinylet/arm-e2e}
# The machine's release: its apt sources serve that one.
SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
TARGET=aarch64-unknown-linux-musl
# Everything the guest needs; a change of the list builds the tree again.
PACKAGES=busybox-static,containerd,runc,containernetworking-plugins,linux-image-arm64,libc6,libseccomp2,libgcc-s1
KEY="$SUITE $PACKAGES v1"
# The initramfs's own version: bump it when build_initrd changes.
INITRD_KEY=i2
RUN=$CACHE/run
start=$(date +%s)

# Messages go to stderr: stdout carries results only (and $(tinylet_binary) a path).
say() { echo "arm-e2e: $* ($(($(date +%s) - start))s)" >&2; }
die() {
	echo "arm-e2e: FAILED: $*" >&2
	exit 1
}

need_tools() {
	local missing=()
	command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
	command -v qemu-system-aarch64 >/dev/null || missing+=(qemu-system-arm)
	command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
	command -v depmod >/dev/null || missing+=(kmod)
	command -v cpio >/dev/null || missing+=(cpio)
	command -v busybox >/dev/null || missing+=(busybox-static)
	if [ ${#missing[@]} -gt 0 ]; then
		say "installing ${missing[*]}"
		apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
}

# Modules the board needs at all: the rest of the kernel's 250 MB is dropped.
prune_modules() {
	local k=$1/lib/modules/$2/kernel
	find "$k/drivers" -mindepth 1 -maxdepth 1 ! -name virtio ! -name block ! -name net ! -name char -exec rm -rf {} +
	find "$k/drivers/net" -mindepth 1 -maxdepth 1 ! -name veth.ko ! -name dummy.ko -exec rm -rf {} +
	rm -rf "$k/sound"
}

# The module files (paths under lib/modules/KVER) that $3... need, dependencies first.
module_closure() {
	local tree=$1 kver=$2
	shift 2
	local dep=$tree/lib/modules/$kver/modules.dep m
	for m in "$@"; do
		# modules.dep: "path/m.ko: dep1.ko dep2.ko" (deps in load order, reversed).
		grep -E "/$m\.ko(\.xz)?:" "$dep" | tr -d ':' | awk '{for (i = NF; i > 0; i--) print $i}'
	done | awk '!seen[$0]++'
}

build_tree() {
	[ -f "$CACHE/key" ] && [ "$(cat "$CACHE/key")" = "$KEY" ] && return 0
	say "building the arm64 tree from the Debian archive (cold)"
	rm -rf "$CACHE/root" "$CACHE/key" "$CACHE/initrd.key" "$CACHE/vmlinuz"
	mkdir -p "$CACHE"
	"$ROOT/tests/harness/apt-sources.sh" deb >"$CACHE/host.sources"
	[ -s "$CACHE/host.sources" ] || die "no apt deb sources on this machine to build the tree from"
	mmdebstrap --quiet --variant=extract --architectures=arm64 --include="$PACKAGES" \
		"$SUITE" "$CACHE/rootfs.tar" "$CACHE/host.sources"
	mkdir "$CACHE/root"
	tar -xf "$CACHE/rootfs.tar" -C "$CACHE/root" --exclude=./usr/share/doc \
		--exclude=./usr/share/man --exclude=./usr/share/locale
	rm -f "$CACHE/rootfs.tar"
	local kver
	kver=$(basename "$(ls -d "$CACHE"/root/lib/modules/*)")
	prune_modules "$CACHE/root" "$kver"
	depmod -b "$CACHE/root" "$kver"
	cp "$CACHE/root/boot/vmlinuz-$kver" "$CACHE/vmlinuz"
	echo "$KEY" >"$CACHE/key"
}

# initramfs: busybox, the modules to reach an ext4 root on virtio, an init that loads
# them, mounts /dev/vda and hands over to the payload's guest.sh.
build_initrd() {
	[ -f "$CACHE/initrd.key" ] && [ "$(cat "$CACHE/initrd.key")" = "$INITRD_KEY" ] && return 0
	local kver d=$CACHE/initrd m
	kver=$(basename "$(ls -d "$CACHE"/root/lib/modules/*)")
	rm -rf "$d"
	mkdir -p "$d/bin" "$d/dev" "$d/proc" "$d/sys" "$d/newroot" "$d/lib/modules"
	cp "$CACHE/root/bin/busybox" "$d/bin/busybox"
	ln -s busybox "$d/bin/sh"
	: >"$d/modules"
	for m in $(module_closure "$CACHE/root" "$kver" virtio_pci virtio_mmio virtio_blk crc32c_generic ext4); do
		cp "$CACHE/root/lib/modules/$kver/$m" "$d/lib/modules/"
		echo "/lib/modules/$(basename "$m")" >>"$d/modules"
	done
	cat >"$d/init" <<'EOF'
#!/bin/sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs dev /dev
for m in $(/bin/busybox cat /modules); do /bin/busybox insmod "$m"; done
i=0
while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do /bin/busybox sleep 0.1; i=$((i + 1)); done
/bin/busybox mount -t ext4 /dev/vda /newroot || /bin/busybox poweroff -f
/bin/busybox umount /proc
/bin/busybox mount --move /dev /newroot/dev
exec /bin/busybox switch_root /newroot /bin/busybox sh /e2e-boot.sh
EOF
	chmod 755 "$d/init"
	(cd "$d" && find . | cpio -o -H newc --quiet | gzip -1) >"$CACHE/initrd.gz"
	rm -rf "$d"
	echo "$INITRD_KEY" >"$CACHE/initrd.key"
}

tinylet_binary() {
	local bin=$ROOT/target/cross/$TARGET/release/tinylet
	if [ ! -x "$bin" ] || [ -n "$(find "$ROOT/src" "$ROOT/Cargo.toml" -newer "$bin" -print -quit)" ]; then
		say "building the static $TARGET tinylet"
		"$ROOT/cross/build.sh" static "$TARGET" >/dev/null
	fi
	echo "$bin"
}

# Payload: everything of this repo the guest runs, as a tar on a raw disk.
build_payload() {
	local p=$RUN/payload
	rm -rf "$p"
	mkdir -p "$p/pods"
	cp "$(tinylet_binary)" "$p/tinylet"
	cp "$HERE/guest.sh" "$p/guest.sh"
	cp "$HERE"/pods/*.json "$p/pods/"
	local mb
	for mb in 256 128; do
		python3 - "$ROOT/board-configs/openwrt-armv7-${mb}m.json" "$p/config-$mb.json" <<'EOF'
import json, sys
cfg = json.load(open(sys.argv[1]))
# The emulated board: the board config as it is, but for the node name, the sandbox
# image built here and a resolv.conf that exists without an uplink. The guest takes the
# one for its RAM, as a 128 MB board is flashed with the 128 MB config.
cfg.update(nodeName="arm-e2e", sandboxImage="e2e.local/pause:1", resolvConf="/etc/resolv.conf")
json.dump(cfg, open(sys.argv[2], "w"), indent=1)
EOF
	done
	local bb=$CACHE/root/bin/busybox img=$ROOT/tests/harness/image.sh
	IMAGE_ARCH=arm64 IMAGE_BUSYBOX=$bb "$img" busybox --name e2e.local/busybox:1 --out "$RUN/bb.tar" >/dev/null
	IMAGE_ARCH=arm64 IMAGE_BUSYBOX=$bb "$img" busybox --name e2e.local/pause:1 \
		--entrypoint '["/bin/sleep","2147483647"]' --out "$RUN/pause.tar" >/dev/null
	"$img" merge --out "$p/images.tar" "$RUN/bb.tar" "$RUN/pause.tar" >/dev/null
	rm -f "$RUN/bb.tar" "$RUN/pause.tar"
	tar -cf "$RUN/payload.img" -C "$p" .
	truncate -s %1M "$RUN/payload.img"
	rm -rf "$p"
}

build_disk() {
	rm -f "$RUN/disk.img"
	# The boot hook the initramfs hands over to: unpack the payload, run guest.sh.
	cat >"$CACHE/root/e2e-boot.sh" <<'EOF'
/bin/busybox mkdir -p /e2e && cd /e2e && /bin/busybox tar -xf /dev/vdb && exec /bin/busybox sh /e2e/guest.sh
EOF
	mkfs.ext4 -q -L root -d "$CACHE/root" "$RUN/disk.img" 1G
}

# Boots the disk with $1 MB of RAM in phase $2; the guest's results land in $RUN/out.$2.
boot() {
	local mem=$1 phase=$2 out=$RUN/out.$2
	rm -rf "$out" && mkdir -p "$out"
	truncate -s 0 "$RUN/results.img" && truncate -s 16M "$RUN/results.img"
	say "boot $phase with -m $mem"
	timeout "${ARM_E2E_BOOT_TIMEOUT:-1200}" qemu-system-aarch64 -M virt -cpu cortex-a53 -smp 2 \
		-m "$mem" -nic none -nographic -no-reboot \
		-kernel "$CACHE/vmlinuz" -initrd "$CACHE/initrd.gz" \
		-append "console=ttyAMA0 panic=-1 quiet e2e.phase=$phase e2e.mem=$mem" \
		-drive "file=$RUN/disk.img,format=raw,if=virtio" \
		-drive "file=$RUN/payload.img,format=raw,if=virtio,readonly=on" \
		-drive "file=$RUN/results.img,format=raw,if=virtio" \
		</dev/null >"$out/console.log" 2>&1 || true
	tar -xf "$RUN/results.img" -C "$out" 2>/dev/null || true
	if ! grep -q "^ok$" "$out/verdict" 2>/dev/null; then
		echo "--- guest checks ($phase)" >&2
		cat "$out/checks" >&2 2>/dev/null || true
		echo "--- guest log tail ($phase)" >&2
		tail -n 40 "$out/guest.log" >&2 2>/dev/null || true
		echo "--- tinylet log tail ($phase)" >&2
		tail -n 40 "$out/tinylet.log" >&2 2>/dev/null || true
		echo "--- console tail ($phase)" >&2
		tail -n 40 "$out/console.log" >&2
		die "boot $phase: a check failed (logs in $out)"
	fi
	cat "$out/checks"
}

need_tools
build_tree
build_initrd
say "arm64 tree ready"
mkdir -p "$RUN"
build_payload
build_disk
say "disks ready"
boot 256 first
boot 256 second
boot 128 third
summary=$(cat "$RUN/out.first/summary" "$RUN/out.second/summary" "$RUN/out.third/summary" | tr '\n' ' ')
echo "arm-e2e: $summary"
rm -f "$RUN/disk.img" "$RUN/payload.img" "$RUN/results.img"
say "passed"
