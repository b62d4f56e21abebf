# rdmacm/ (rdma_cm in pure Go) and roce/ (the RoCE engine), issue 4.
# Unit tests run anywhere; the Soft-RoCE tests (TestGuest*) run inside the VM
# harness, which `make test` boots once for every package (TestGuest in
# ./integration/vm). rdma-core's tools (rping, perftest) come from the host:
# .ci/apt.d/roce.txt lists the Debian packages.
.PHONY: test-roce test-roce-full bench-roce

# Host unit tests, then the rdmacm and roce guest tests in one VM boot.
test-roce:
	$(GO) test $(GOTESTFLAGS) ./rdmacm/... ./roce/...
	DAQIRI_VM_PKGS=./rdmacm/...,./roce/... $(GO) test $(GOTESTFLAGS) -v -run '^TestGuest$$' ./integration/vm

# The issue's full-size runs, which TCG makes too slow for `make test`:
# 100,000 messages of 1 KiB–1 MiB (SEND/RECV, every byte checked) and 64 MiB
# moved by RDMA WRITE and READ (checked on both ends). Expect tens of minutes.
ROCE_FULL_TIMEOUT ?= 3h
test-roce-full:
	$(GO) run ./bench/roce/vmrun -pkgs ./roce -run '^TestGuestFull(SendRecv|WriteRead)$$' -test-timeout $(ROCE_FULL_TIMEOUT)

# daqiri-go next to perftest (ib_send_bw, ib_write_bw) on the same Soft-RoCE
# device in the same VM, same message sizes; prints a table with ratios.
bench-roce:
	bash bench/roce/run.sh
