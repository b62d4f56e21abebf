// Package mlx5conf is the mlx5 conformance test: the device model (mlx5/model), served as a
// PCI device over vfio-user by tools/daqiri-mlx5model, judged by NVIDIA's own drivers inside
// the VM harness's guest (package integration/vm): rdma-core's user-space mlx5 VFIO provider
// (libmlx5), the kernel's mlx5_core and mlx5_ib, and DPDK's mlx5 driver.
//
// It holds only tests. TestMLX5Conformance, on the host, builds the model server and starts
// it three times, each on a socket in a temporary folder (one port cabled to itself, two
// bridged to the ends of a veth pair in a namespace the test creates), compiles testdata/mlx5probe.c with gcc against
// Debian's libibverbs-dev, and boots the guest with the qemu that
// integration/vm/scripts/build-qemu.sh built (QEMU 10.2 with the vfio-user client; Debian
// 12's qemu 7.2 lacks it) and the model functions attached as -device vfio-user-pci, guest RAM a
// shared memfd so that the model's DMA lands in guest memory. In the guest,
// TestGuestMLX5:
//
//	(a) binds the device (15b3:1017) to vfio-pci and runs mlx5probe: device listed, context
//	    opened (the provider's whole function bring-up), general DevX commands, object
//	    creation, one line per step;
//	(b) unbinds it, loads mlx5_core, waits (bounded) for the probe and collects the kernel
//	    log lines and `ip link`; then (b2) gives the first bridged function's mlx5e netdev
//	    an address and talks to the veth's far end, which the host gives an address and a
//	    small UDP service (peer_test.go): ping and UDP both ways, no checksum errors;
//	(c) loads mlx5_ib and reports whether an RDMA device appears; runs this project's DevX
//	    transport on it, opens the engine on the looped-back function and moves frames
//	    through it, then opens the two bridged functions and moves frames both ways;
//	(d) runs Debian's dpdk-testpmd (DPDK 22.11, its mlx5 driver over mlx5_ib) with io
//	    forwarding on the looped-back function and between the two bridged ones, in DPDK's
//	    default mode and in Verbs mode (dv_flow_en=0): ports started, frames counted by
//	    testpmd, by the model (QUERY_VPORT_COUNTER through DevX) and by the veth's far end.
//
// Each part is a ratchet: the stages it reached when the test was last updated are listed
// in conformance_test.go (reachedProbe, reachedCore, reachedBridged, reachedIB, reachedDevX,
// reachedTwoPorts, reachedDPDK), a stage missing now fails
// the test, and a stage newly reached is logged so that the list can grow. The host test
// then prints the server's own account of the commands it did not know (the model answers
// them with the PRM's bad-opcode status): the model's to-do list.
//
// Running it: `make test-mlx5-conformance` builds the qemu first when it is not cached
// (`make qemu`: 3 to 10 minutes on 2 cores, once) and runs the test; `make test` runs it
// only when the cached qemu exists. The test skips when the cached qemu is missing, and
// fails instead under CI=true (internal/testutil). DAQIRI_QEMU_CACHE moves the cache
// (default /var/cache/daqiri/qemu); DAQIRI_VM_KEEP=1 keeps the VM work folder and the
// server log. docs/MLX5-CONFORMANCE.md has what the drivers reached and the command lists.
package mlx5conf
