# The mlx5 conformance test (integration/mlx5conf, issue 20): the device model served over
# vfio-user to a VM guest and judged by rdma-core's mlx5 VFIO provider, mlx5_core and mlx5_ib,
# and (issue 26) DPDK 22.11's mlx5 driver through dpdk-testpmd, which the guest runs from the
# host's root file system (packages dpdk and librte-net-mlx5-23: .ci/apt.d/mlx5conf.txt).
# It needs qemu >= 10.1 (the vfio-user client); `make qemu` builds 10.2.2 from Debian's source
# package into $(QEMU_CACHE)/<version> (integration/vm/scripts/build-qemu.sh: 3 to 10 minutes
# on 2 cores, once; root, for apt-get). `make test` runs the conformance test only when that
# build is cached (its main go test run skips TestMLX5Conformance and runs the package's unit
# tests); test-mlx5-conformance builds it first when it is not.
.PHONY: qemu test-mlx5-conformance

QEMU_CACHE   ?= $(or $(DAQIRI_QEMU_CACHE),/var/cache/daqiri/qemu)
QEMU_VERSION := $(shell sed -n 's/^VERSION=[0-9]*://p' integration/vm/scripts/build-qemu.sh)
QEMU_CACHED  := $(QEMU_CACHE)/$(QEMU_VERSION)/bin/qemu-system-x86_64

qemu:
	DAQIRI_QEMU_CACHE=$(QEMU_CACHE) bash integration/vm/scripts/build-qemu.sh

test-mlx5-conformance: qemu
	DAQIRI_QEMU_CACHE=$(QEMU_CACHE) $(GO) test $(GOTESTFLAGS) -v -run '^TestMLX5Conformance$$' ./integration/mlx5conf
