#!/bin/bash
# build-image.sh: builds the lab's guest from Debian packages into
# $LAB_CACHE (default /var/cache/rnic/lab, outside the repository):
#   vmlinuz      Debian bookworm's kernel, linux-image-$KVER
#   initrd.img   busybox and the modules that reach the root disk
#   rootfs.img   ext4: debootstrap minbase, the RDMA user space and tools,
#                the kernel's modules plus an out-of-tree siw.ko, labinit
#
# Each stage keeps a stamp holding the key of its inputs (kernel version,
# package list, guest files, ...) and runs again only when that key
# changes; with nothing changed a run takes seconds. A changed package list
# therefore builds a new root file system rather than reusing the old one.
# FORCE=1 rebuilds every stage. Run as root.
#
# Why siw is compiled here: Debian's bookworm kernels leave it out
# ("# CONFIG_RDMA_SIW is not set"; rxe is built, as a module). It is
# compiled from linux-source-6.1, the same 6.1 release, against
# linux-headers-$KVER, unsigned (the kernel is only tainted). Three of its
# compile-time constants (all false upstream) become read-only module
# parameters: mpa_crc_required, mpa_crc_strict and peer_to_peer.
set -euo pipefail

LAB=$(cd "$(dirname "$0")" && pwd)
LAB_CACHE=${LAB_CACHE:-/var/cache/rnic/lab}
KVER=${KVER:-6.1.0-56-amd64}
SUITE=${SUITE:-bookworm}
IMG_SIZE=${IMG_SIZE:-3G}

# The guest's packages. Besides rdma-core's providers and tools: perftest
# and rping (the interop rows), the stacks that run on rxe as on rnic (UCX,
# libfabric, qperf, pyverbs) and fio; then what the lab itself uses
# (ip, ss, tcpdump, modprobe, pgrep, ping).
GUEST_PACKAGES=(
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
	qperf ucx-utils libfabric-bin python3-pyverbs fio
	iproute2 tcpdump kmod procps iputils-ping netbase ethtool strace less psmisc
)
HOST_PACKAGES=(
	qemu-system-x86 debootstrap busybox-static e2fsprogs cpio gcc make
	linux-source-6.1 "linux-headers-$KVER" tcpdump socat
)
# Module trees a guest with virtio devices never loads; leaving them out
# keeps the image small.
DROP_MODULES=(
	drivers/gpu drivers/media drivers/net/wireless drivers/net/ethernet
	drivers/infiniband/hw drivers/staging drivers/scsi drivers/usb drivers/hid
	drivers/input drivers/bluetooth drivers/iio drivers/isdn sound
	net/bluetooth net/wireless net/mac80211
	fs/btrfs fs/xfs fs/ocfs2 fs/gfs2 fs/ntfs3 fs/f2fs fs/nls
)

say() { printf '[build-image %(%T)T] %s\n' -1 "$*" >&2; }
key() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }
# fresh OUTPUT STAGE KEY: the stage's output exists and was built from KEY.
# Otherwise the stage's stamp goes at once, so that a build interrupted
# half-way is never taken for a finished one.
fresh() {
	[ -e "$1" ] && [ "$(cat ".stamp-$2" 2>/dev/null)" = "$3" ] && return
	rm -f ".stamp-$2"
	return 1
}
stamp() { echo "$2" >".stamp-$1"; } # STAGE KEY

# mirror is the Debian mirror apt uses on this host (not the security one).
mirror() {
	local m
	m=$(grep -hsE '^(deb |URIs:)' /etc/apt/sources.list /etc/apt/sources.list.d/* |
		grep -v security | grep -oE 'https?://[^ ]*/debian/?' | head -1)
	echo "${MIRROR:-${m:-http://deb.debian.org/debian}}"
}

host_tools() {
	local missing=() p
	for p in "${HOST_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return
	say "installing on the host: ${missing[*]}"
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

kernel() {
	local k; k=$(key "$KVER")
	fresh vmlinuz kernel "$k" && [ -d "kernel/lib/modules/$KVER" ] && return
	say "fetching linux-image-$KVER"
	rm -rf debs kernel vmlinuz && mkdir debs kernel
	(cd debs && { apt-get download -q "linux-image-$KVER" || { apt-get update -q && apt-get download -q "linux-image-$KVER"; }; })
	dpkg -x debs/linux-image-"$KVER"_*.deb kernel
	cp "kernel/boot/vmlinuz-$KVER" vmlinuz
	stamp kernel "$k"
}

# patch_siw turns each named `const bool X;` of siw into a module parameter.
patch_siw() {
	local p
	for p in mpa_crc_required mpa_crc_strict peer_to_peer; do
		sed -i -e "s/^const bool $p;\$/bool $p;\\nmodule_param($p, bool, 0444);/" siw_main.c
		sed -i -e "s/^extern const bool $p;\$/extern bool $p;/" siw.h
		grep -q "module_param($p," siw_main.c || { say "siw: $p not found to patch"; return 1; }
	done
}

siw() {
	local src=/usr/src/linux-source-6.1.tar.xz k
	k=$(key "$KVER" "$(dpkg-query -W -f='${Version}' linux-source-6.1)" "$(declare -f patch_siw)")
	fresh siw.ko siw "$k" && return
	say "compiling siw.ko against linux-headers-$KVER"
	rm -rf siw-src siw.ko && mkdir siw-src
	tar -xJf "$src" -C siw-src --strip-components=4 linux-source-6.1/drivers/infiniband/sw/siw
	(cd siw-src/siw && patch_siw)
	make -s -C "/usr/src/linux-headers-$KVER" M="$PWD/siw-src/siw" CONFIG_RDMA_SIW=m modules
	strip --strip-debug -o siw.ko siw-src/siw/siw.ko
	rm -rf siw-src
	stamp siw "$k"
}

rootfs() {
	local k; k=$(key "$SUITE" "${GUEST_PACKAGES[@]}")
	fresh rootfs rootfs "$k" && return
	local pkgs; pkgs=$(IFS=,; echo "${GUEST_PACKAGES[*]}")
	say "debootstrap $SUITE minbase from $(mirror) with $pkgs"
	rm -rf rootfs .stamp-modules
	if ! debootstrap --variant=minbase --include="$pkgs" "$SUITE" rootfs "$(mirror)" >debootstrap.log 2>&1; then
		tail -20 debootstrap.log >&2
		return 1
	fi
	# Documentation, locales and apt's downloads are of no use in a guest.
	rm -rf rootfs/usr/share/{doc,man,info,locale}/* rootfs/var/cache/apt/archives/*.deb rootfs/var/lib/apt/lists/*
	stamp rootfs "$k"
}

modules() {
	local k; k=$(key "$(cat .stamp-rootfs .stamp-kernel .stamp-siw)" "${DROP_MODULES[@]}")
	fresh "rootfs/lib/modules/$KVER" modules "$k" && return
	say "copying the kernel's modules and siw.ko into the root file system"
	local m=rootfs/lib/modules/$KVER d
	rm -rf "$m" && mkdir -p rootfs/lib/modules
	cp -a "kernel/lib/modules/$KVER" "$m"
	for d in "${DROP_MODULES[@]}"; do rm -rf "$m/kernel/$d"; done
	mkdir -p "$m/extra" && cp siw.ko "$m/extra/"
	chroot rootfs depmod "$KVER"
	stamp modules "$k"
}

# guest_files writes the lab's own files and settings into the root file
# system; they are cheap, so they are written on every run.
guest_files() {
	install -m 0755 "$LAB/guest/labinit" rootfs/sbin/labinit
	install -D -m 0755 "$LAB/guest/lab-agent" rootfs/usr/local/sbin/lab-agent
	mkdir -p rootfs/lab
	echo lab >rootfs/etc/hostname
	: >rootfs/etc/fstab
	sed -i 's/^root:[^:]*:/root::/' rootfs/etc/shadow # the console logs in without a password
	printf 'PS1="\\h# "\n' >rootfs/root/.bashrc
	echo 'set enable-bracketed-paste off' >rootfs/root/.inputrc # no escape codes on the serial console
}

image() {
	local k; k=$(key "$(cat .stamp-modules)" "$IMG_SIZE" "$(cat "$LAB"/guest/labinit "$LAB"/guest/lab-agent)")
	fresh rootfs.img image "$k" && return
	say "writing rootfs.img ($IMG_SIZE sparse ext4)"
	rm -f rootfs.img.new
	truncate -s "$IMG_SIZE" rootfs.img.new
	mkfs.ext4 -q -F -L labroot -O ^has_journal -E root_owner=0:0 -d rootfs rootfs.img.new
	mv rootfs.img.new rootfs.img
	stamp image "$k"
}

# initrd holds busybox and the modules that mount /dev/vda, in load order.
initrd() {
	local k; k=$(key "$(cat .stamp-modules)" "$(cat "$LAB/guest/initrd-init")")
	fresh initrd.img initrd "$k" && return
	say "writing initrd.img"
	local t=initrd.d m ko
	rm -rf "$t" && mkdir -p "$t"/{bin,dev,proc,sys,newroot,modules}
	cp /bin/busybox "$t/bin/"
	for m in sh mount umount insmod switch_root sleep; do ln -s busybox "$t/bin/$m"; done
	install -m 0755 "$LAB/guest/initrd-init" "$t/init"
	: >"$t/modules/order"
	for m in virtio_pci virtio_blk ext4; do
		chroot rootfs modprobe -S "$KVER" --show-depends "$m" | awk '$1 == "insmod" { print $2 }' |
			while read -r ko; do
				grep -qx "${ko##*/}" "$t/modules/order" && continue
				cp "rootfs$ko" "$t/modules/"
				echo "${ko##*/}" >>"$t/modules/order"
			done
	done
	(cd "$t" && find . | cpio -o -H newc --quiet | gzip -1) >initrd.img
	rm -rf "$t"
	stamp initrd "$k"
}

mkdir -p "$LAB_CACHE"
cd "$LAB_CACHE"
[ "${FORCE:-0}" = 1 ] && rm -f .stamp-*
host_tools
kernel
siw
rootfs
modules
guest_files
image
initrd
say "ready: $LAB_CACHE/{vmlinuz,initrd.img,rootfs.img}"
