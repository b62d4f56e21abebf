# integration/vm: qemu guest (Debian kernel, TCG) for VFIO and Soft-RoCE tests; vfio/.
# `make test` (go test ./...) already runs TestGuest; these targets show each guest test.
.PHONY: test-vm test-vfio

# test-vm boots the VM once and lists every guest test with its result.
# Narrow it with DAQIRI_VM_PKGS=./verbs or DAQIRI_VM_RUN=TestX (see integration/vm/doc.go).
test-vm:
	$(GO) test $(GOTESTFLAGS) -v -run '^TestGuest$$' ./integration/vm

# test-vfio runs vfio's host-side unit tests, then its guest tests in the VM.
test-vfio:
	$(GO) test $(GOTESTFLAGS) ./vfio/...
	DAQIRI_VM_PKGS=./vfio/... $(GO) test $(GOTESTFLAGS) -v -run '^TestGuest$$' ./integration/vm
