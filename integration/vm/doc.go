// Package vm runs tests that need a real Linux kernel with VFIO and Soft-RoCE
// (which the development and CI machines' own kernel lacks) inside a qemu
// guest booted from the host's Debian kernel, and reports every guest test
// back into the host's `go test` output.
//
// # Contract for package owners
//
// Guest side. A test that needs the guest starts with guest.Require(t)
// (package integration/vm/guest, standard library only): it skips outside the
// VM with a message pointing here. Inside the VM every test binary runs as
// root, with GOTRACEBACK=all, in its package's source folder (like go test),
// with these already set up:
//
//   - modules vfio, vfio_iommu_type1, vfio-pci, rdma_rxe, ib_uverbs,
//     rdma_ucm, dummy, crc32_generic loaded (GuestModules);
//   - the qemu edu device (1234:11e8) behind an emulated Intel IOMMU, bound
//     to vfio-pci: guest.Edu(t) returns its PCI address and IOMMU group;
//   - Soft-RoCE rxe0 on the dummy netdev d0 with 10.7.0.1/24, lo up:
//     guest.Rxe(t);
//   - 32 hugepages of 2 MiB (hugetlbfs at /dev/hugepages), tmpfs /tmp;
//   - the host's whole root file system, read-only, as the guest's root:
//     tests can exec host programs by their usual paths (rdma, ip, and
//     rdma-core's rping, ib_send_bw … once installed on the host) and those
//     find their shared libraries and provider plug-ins.
//
// A failed setup step fails TestGuest/setup and is listed in
// $DAQIRI_VM_SETUP_ERRORS; guest.Getenv/Edu/Rxe then fail the test rather
// than skip it.
//
// Host side. TestGuest (run by `go test ./...` and so by `make test`) builds a
// static test binary (CGO_ENABLED=0 go test -c) for every package that
// DefaultPackages matches and that has tests, boots one VM for all of them,
// runs each binary with -test.v=test2json, and reports each guest test as
// TestGuest/<package path>/<Test>/<subtest>, with its result and its output
// (seen with go test -v, or on failure). A guest failure, a test that never
// ends, a binary that exits non-zero, a missing result or a VM that does not
// finish fails TestGuest; a package whose test binary does not build fails
// alone (TestGuest/<package>) while the others still run. To add a package, add its pattern to
// DefaultPackages. All of a package's tests run in the guest, unit tests
// included, so keep CPU-heavy ones out of it (skip them when guest.Active()).
//
// TestGuest skips, naming what is missing, where qemu-system-x86_64, a
// /boot/vmlinuz-<release> with /lib/modules/<release>, a static busybox,
// modprobe, ip or rdma is absent (Debian: AptPackages, also in
// .ci/apt.d/vm.txt). Environment variables for working on guest tests:
//
//	DAQIRI_VM_PKGS=./verbs      package patterns to run (space or comma separated)
//	DAQIRI_VM_RUN=TestGuestQP   -test.run for the guest binaries
//	DAQIRI_VM_TIMEOUT=360s      the whole VM run (boot to power-off), default 360 s
//	DAQIRI_VM_CPUS=1            guest vCPUs
//	DAQIRI_VM_KEEP=1            keep the work folder (console.log, out/, initramfs)
//	DAQIRI_VM_KERNEL=/boot/vmlinuz-6.1.0-56-amd64, DAQIRI_VM_QEMU=…
//
// for example `DAQIRI_VM_PKGS=./verbs go test -v -run TestGuest ./integration/vm`
// or `make test-vm`.
//
// # A newer qemu and vfio-user devices
//
// Options.QEMU boots another qemu-system-x86_64 than the host's, and
// Options.VFIOUser attaches out-of-process device servers as
// `-device vfio-user-pci` (QEMU 10.1 or later), with guest RAM a shared memfd
// backend so that a server's DMA lands in guest memory; each server's device
// sits on a PCIe root port of its own, behind the same emulated Intel IOMMU as
// the edu device. Debian 12's qemu is 7.2, so
// scripts/build-qemu.sh (`make qemu`) builds qemu 10.2.2 from Debian's source
// package into /var/cache/daqiri/qemu/10.2.2+ds-1 ($DAQIRI_QEMU_CACHE moves
// it), and CachedQEMU finds it. TestGuest and the package tests above keep
// the host's qemu; integration/mlx5conf is the one user of both options.
//
// # How it works
//
// qemu runs under TCG (-accel tcg -cpu max: KVM does not work in this nested
// setup) as a q35 machine with an Intel IOMMU (interrupt remapping, caching
// mode) and the edu device. The initramfs holds only a static busybox, the
// virtio-9p modules and init.sh; the guest mounts the host's root read-only
// and the work folder read-write over virtio-9p, mounts proc, sys, dev,
// tmpfs scratch folders over the host tree, and runs guest.sh chrooted into
// it: setup, then each binary under a timeout. Results travel through the
// work folder (out/<package>.out and .rc, then out/done), the serial console
// (console.log) shows progress lines starting with "DAQIRI-VM:". The whole
// run is bounded by a timeout after which qemu is killed; the guest's
// -test.timeout bounds each binary. Boot takes about 7 s, setup about 5 s.
//
// The guest kernel runs with no_timer_check: under TCG, qemu 10.2's emulated
// IO-APIC with interrupt remapping failed the kernel's early timer check, which
// then panics ("timer doesn't work through Interrupt-remapped IO-APIC").
//
// Limits: Debian 12 modules are plain .ko files, which busybox's insmod
// loads; a kernel whose 9p or virtio modules are compressed is refused with a
// clear error. VFIO here is the legacy container/group interface; the
// iommufd/cdev interface needs kernel 6.2 or later.
package vm
