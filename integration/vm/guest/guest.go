// Package guest is the guest side of the VM test harness (package
// integration/vm): tests that need the VM's kernel (VFIO on the qemu edu
// device, Soft-RoCE on rxe0) call Require, which skips them everywhere else,
// and read what the harness set up through the helpers below.
//
// It imports nothing but the standard library so that any package's tests can
// use it without pulling the harness in.
package guest

import (
	"net/netip"
	"os"
	"strconv"
	"testing"
)

// Environment variables the harness sets for every guest test binary.
const (
	// EnvGuest is "1" inside the VM and unset elsewhere.
	EnvGuest = "DAQIRI_VM_GUEST"
	// EnvEduBDF is the PCI address (0000:00:03.0) of the qemu edu device,
	// already bound to vfio-pci.
	EnvEduBDF = "DAQIRI_VM_EDU_BDF"
	// EnvEduGroup is the IOMMU group number of the edu device (/dev/vfio/N).
	EnvEduGroup = "DAQIRI_VM_EDU_GROUP"
	// EnvRxe is the Soft-RoCE device name (rxe0).
	EnvRxe = "DAQIRI_VM_RXE"
	// EnvRxeNetdev is the dummy netdev under the rxe device (d0).
	EnvRxeNetdev = "DAQIRI_VM_RXE_NETDEV"
	// EnvRxeAddr is the IPv4 address of that netdev (10.7.0.1).
	EnvRxeAddr = "DAQIRI_VM_RXE_ADDR"
	// EnvSetupErrors lists, separated by ';', the setup steps that failed in
	// the guest (empty when all succeeded).
	EnvSetupErrors = "DAQIRI_VM_SETUP_ERRORS"
)

// skipMessage says where guest tests do run, so that a skip on a developer's
// machine points at the right command.
const skipMessage = "needs the VM guest kernel (" + EnvGuest + "=1); runs inside the VM via `go test ./integration/vm`"

// Active reports whether this process runs inside the harness's VM.
func Active() bool { return os.Getenv(EnvGuest) == "1" }

// Require skips t unless it runs inside the harness's VM.
func Require(t testing.TB) {
	t.Helper()
	if !Active() {
		t.Skip(skipMessage)
	}
}

// Getenv returns the harness-provided variable key. Inside the guest a
// missing value means the harness's setup failed, so t fails (it does not
// skip: a silent skip would hide a broken setup); outside the guest t skips.
func Getenv(t testing.TB, key string) string {
	t.Helper()
	Require(t)
	v := os.Getenv(key)
	if v == "" {
		t.Fatalf("%s is not set in the guest: the harness's setup failed (setup errors: %q)", key, os.Getenv(EnvSetupErrors))
	}
	return v
}

// Edu returns the PCI address and IOMMU group of the qemu edu device that the
// harness bound to vfio-pci.
func Edu(t testing.TB) (bdf string, group int) {
	t.Helper()
	bdf = Getenv(t, EnvEduBDF)
	g := Getenv(t, EnvEduGroup)
	n, err := strconv.Atoi(g)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q is not an IOMMU group number", EnvEduGroup, g)
	}
	return bdf, n
}

// Rxe returns the Soft-RoCE device, its netdev and the netdev's IPv4 address.
func Rxe(t testing.TB) (dev, netdev, addr string) {
	t.Helper()
	return Getenv(t, EnvRxe), Getenv(t, EnvRxeNetdev), Getenv(t, EnvRxeAddr)
}

// RxeAddr returns the Soft-RoCE device and its netdev's IPv4 address, parsed; t fails when
// the harness set an address that is not IPv4.
func RxeAddr(t testing.TB) (dev string, addr netip.Addr) {
	t.Helper()
	dev, _, a := Rxe(t)
	addr, err := netip.ParseAddr(a)
	if err != nil || !addr.Is4() {
		t.Fatalf("harness rxe address %q is not IPv4: %v", a, err)
	}
	return dev, addr
}
