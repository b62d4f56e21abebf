#!/bin/sh
# PID 1 of the harness's initramfs, run by busybox. It mounts the host's root
# file system (virtio-9p, read-only) and the harness's work folder
# (virtio-9p, read-write), then runs guest.sh chrooted into the host's root,
# so that the guest uses the host's module tree, tools and libraries.
# Whatever happens, it ends by powering the VM off (qemu then exits).
export PATH=/bin
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys

say() { echo "DAQIRI-VM: $*"; }
die() { say "init failed: $*"; sync; poweroff -f; exit 1; }

say "init: kernel up after $(cut -d' ' -f1 /proc/uptime)s"
for m in $(cat /modules.list); do
	insmod "/$m" || say "insmod $m failed"
done

# The virtio device may still be probing right after insmod: retry (bounded).
opts=trans=virtio,version=9p2000.L,msize=524288,cache=none
mkdir -p /host
i=0
until mount -t 9p -o "$opts,ro" hostroot /host 2>/dev/null; do
	i=$((i + 1))
	[ $i -ge 50 ] && die "cannot mount the host root (9p tag hostroot)"
	sleep 0.1
done

# The module under test may live under a folder the scratch mounts below
# cover (a clone in /tmp or /root): keep a bind of it to put back on top.
src=
for w in $(cat /proc/cmdline); do
	case "$w" in daqiri_src=*) src=${w#daqiri_src=} ;; esac
done
if [ -n "$src" ] && [ -d "/host$src" ]; then
	mkdir -p /src
	mount -o bind "/host$src" /src || die "bind the module root $src"
fi

# Writable scratch over the read-only host tree. The mount points exist on
# the host; mounting over them writes nothing there.
mount -t proc proc /host/proc || die "mount /host/proc"
mount -t sysfs sysfs /host/sys || die "mount /host/sys"
mount -t devtmpfs devtmpfs /host/dev || die "mount /host/dev"
mkdir -p /host/dev/pts /host/dev/shm /host/dev/hugepages
mount -t devpts devpts /host/dev/pts
mount -t tmpfs tmpfs /host/dev/shm
mount -t hugetlbfs hugetlbfs /host/dev/hugepages
mount -t tmpfs -o mode=1777 tmpfs /host/tmp || die "mount /host/tmp"
for d in /host/run /host/var/tmp /host/root; do
	[ -d $d ] && mount -t tmpfs tmpfs $d
done
if [ -n "$src" ] && [ -d /src ]; then
	mkdir -p "/host$src" 2>/dev/null
	mount -o bind /src "/host$src" || die "restore the module root $src"
fi
mkdir -p /host/tmp/daqiri-vm
mount -t 9p -o "$opts" work /host/tmp/daqiri-vm || die "cannot mount the work folder (9p tag work)"

chroot /host /bin/sh /tmp/daqiri-vm/guest.sh
say "guest.sh exited with status $?"
sync
poweroff -f
