#!/usr/bin/env bash
# An aarch64 guest for the kernel-facing tests on arm64 (make test-vm-arm64): Debian's arm64
# kernel under qemu-system-aarch64 -M virt,iommu=smmuv3,gic-version=3 -cpu max (TCG) with
# the edu device behind the SMMUv3, booted from an initramfs of Debian's static busybox
# (arm64), the kernel's VFIO modules and GOARCH=arm64 test binaries. No root file system:
# the tests here need only the kernel (rxe/rdmacm/roce, which exec rdma-core's tools, stay
# with the x86 guest of integration/vm).
#
#   arm64-guest.sh fetch         as root: download the kernel and busybox-static for arm64
#                                with apt (the arm64 architecture is added for the download
#                                and removed again) and unpack them into $DAQIRI_ARM64_CACHE
#   arm64-guest.sh run [PKG...]  build the packages' tests for arm64, boot, run them, print
#                                each test's result; exit 1 on a failure, 2 when something
#                                needed is missing
#
# Environment: DAQIRI_ARM64_CACHE (default /var/cache/daqiri/arm64), DAQIRI_ARM64_RUN
# (-test.run), DAQIRI_ARM64_TIMEOUT (seconds for the whole VM, default 300),
# DAQIRI_ARM64_KEEP=1 keeps the work folder.
set -euo pipefail

CACHE=${DAQIRI_ARM64_CACHE:-/var/cache/daqiri/arm64}
# Not among them: flow/xdp (its BPF_PROG_TEST_RUN tests take over 2 minutes under TCG) and the
# root package (over 2 minutes, and tests that read testdata from the source tree, which the
# initramfs does not hold).
DEFAULT_PKGS="./vfio ./vfio/edu ./hugepage ./internal/sockio ./socket"

fetch() {
	[ "$(id -u)" = 0 ] || { echo "arm64-guest fetch: needs root (dpkg --add-architecture)"; exit 2; }
	if [ -e "$CACHE/ready" ]; then
		echo "arm64-guest: kernel already in $CACHE"
		return
	fi
	local added=0
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		dpkg --add-architecture arm64
		added=1
	fi
	local tmp
	tmp=$(mktemp -d)
	chmod 755 "$tmp"
	chown _apt "$tmp" 2>/dev/null || true # apt-get download writes as _apt
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'; if [ $added = 1 ]; then dpkg --remove-architecture arm64; apt-get update -qq; fi" EXIT
	apt-get update -qq
	local kpkg
	kpkg=$(apt-cache depends linux-image-arm64:arm64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	[ -n "$kpkg" ] || { echo "arm64-guest fetch: no arm64 kernel package found"; exit 2; }
	(cd "$tmp" && apt-get download -q "$kpkg" busybox-static:arm64)
	rm -rf "$CACHE.new"
	mkdir -p "$CACHE.new"
	for d in "$tmp"/*.deb; do dpkg-deb -x "$d" "$CACHE.new"; done
	rm -rf "$CACHE"
	mv "$CACHE.new" "$CACHE"
	touch "$CACHE/ready"
	echo "arm64-guest: $kpkg and busybox-static unpacked into $CACHE"
}

run() {
	command -v qemu-system-aarch64 >/dev/null || { echo "arm64-guest: qemu-system-aarch64 not found (Debian: apt-get install qemu-system-arm; CI: .ci/apt.d/vm.txt)"; exit 2; }
	[ -e "$CACHE/ready" ] || { echo "arm64-guest: no arm64 kernel in $CACHE (run, as root: $0 fetch)"; exit 2; }
	local kernel rel mods root work
	kernel=$(ls "$CACHE"/boot/vmlinuz-*-arm64 | tail -1)
	rel=${kernel##*/vmlinuz-}
	mods=$CACHE/lib/modules/$rel/kernel
	work=$(mktemp -d)
	[ "${DAQIRI_ARM64_KEEP:-}" = 1 ] || trap "rm -rf '$work'" EXIT
	root=$work/root
	mkdir -p "$root"/{bin,proc,sys,dev,tmp,mod,t}
	cp "$CACHE/bin/busybox" "$root/bin/"
	for m in vfio/vfio_virqfd vfio/vfio vfio/vfio_iommu_type1 vfio/pci/vfio-pci-core vfio/pci/vfio-pci; do
		cp "$mods/drivers/$m.ko" "$root/mod/"
	done
	local pkgs=("$@")
	[ ${#pkgs[@]} -gt 0 ] || read -r -a pkgs <<<"$DEFAULT_PKGS"
	local name
	for p in "${pkgs[@]}"; do
		name=$(echo "${p#./}" | tr / _)
		[ -n "$name" ] && [ "$name" != . ] || name=daqiri # the root package
		# nocuda: static binaries (the initramfs has no dynamic loader; no GPU here anyway)
		GOARCH=arm64 CGO_ENABLED=0 go test -tags nocuda -c -o "$root/t/$name.test" "$p"
	done
	cat >"$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages
echo 32 > /proc/sys/vm/nr_hugepages
ip link set lo up
for m in vfio_virqfd vfio vfio_iommu_type1 vfio-pci-core vfio-pci; do insmod /mod/\$m.ko || echo "DAQIRI-A64: insmod \$m failed"; done
bdf=""
for d in /sys/bus/pci/devices/*; do
	if [ "\$(cat \$d/vendor)" = 0x1234 ] && [ "\$(cat \$d/device)" = 0x11e8 ]; then bdf=\${d##*/}; fi
done
if [ -n "\$bdf" ] && echo vfio-pci > /sys/bus/pci/devices/\$bdf/driver_override && echo \$bdf > /sys/bus/pci/drivers_probe; then
	group=\$(readlink /sys/bus/pci/devices/\$bdf/iommu_group)
	export DAQIRI_VM_EDU_BDF=\$bdf DAQIRI_VM_EDU_GROUP=\${group##*/}
else
	export DAQIRI_VM_SETUP_ERRORS="edu device (1234:11e8) not found or not bound to vfio-pci"
fi
export DAQIRI_VM_GUEST=1 GOTRACEBACK=all CI=${CI:-}
echo "DAQIRI-A64: kernel \$(uname -r) \$(uname -m), edu \$bdf"
cd /tmp
for b in /t/*.test; do
	echo "DAQIRI-A64: run \${b#/t/}"
	\$b -test.v -test.timeout 120s -test.run '${DAQIRI_ARM64_RUN:-.}' 2>&1
	echo "DAQIRI-A64: exit \${b#/t/} \$?"
done
echo "DAQIRI-A64: done"
poweroff -f
EOF
	chmod +x "$root/init"
	(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$work/initrd.gz")
	echo "== arm64 guest: $rel, qemu-system-aarch64 virt with SMMUv3 and GICv3, TCG; packages: ${pkgs[*]}"
	local start=$SECONDS
	timeout "${DAQIRI_ARM64_TIMEOUT:-300}" qemu-system-aarch64 -M virt,iommu=smmuv3,gic-version=3 -cpu max \
		-m 2048 -smp 2 -nographic -no-reboot -kernel "$kernel" -initrd "$work/initrd.gz" \
		-append "console=ttyAMA0 panic=-1 loglevel=4" -device edu >"$work/console.log" 2>&1 || true
	# Each test's result line; before a skip, the reason the test logged.
	tr -d '\r' <"$work/console.log" | awk '/^ *--- SKIP/ { print prev } /^(DAQIRI-A64:|--- |    --- |ok|FAIL|panic:)/ { print } { prev = $0 }'
	echo "== arm64 guest: $((SECONDS - start)) s"
	if ! grep -q '^DAQIRI-A64: done' "$work/console.log"; then
		echo "arm64 guest: the run did not finish; the console's end:"
		tail -40 "$work/console.log"
		exit 1
	fi
	if grep -qE '^(--- FAIL|FAIL|panic:)|^DAQIRI-A64: exit .* [1-9]' "$work/console.log"; then
		echo "== arm64 guest: output of the failures"
		grep -B2 -A20 -E -- '--- FAIL|^panic:' "$work/console.log" | tr -d '\r' | head -200
		exit 1
	fi
}

case "${1:-}" in
fetch) fetch ;;
run) shift; run "$@" ;;
*) echo "usage: $0 fetch | run [PKG...]"; exit 2 ;;
esac
