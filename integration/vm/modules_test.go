package vm

import (
	"slices"
	"strings"
	"testing"
)

// A module index shaped like Debian 6.1's (kernel/…/x.ko: deps…).
const testModulesDep = `kernel/fs/netfs/netfs.ko:
kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko
kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko
kernel/net/9p/9pnet.ko:
kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/drivers/vfio/pci/vfio-pci.ko: kernel/drivers/vfio/pci/vfio-pci-core.ko kernel/drivers/vfio/vfio.ko
kernel/drivers/vfio/pci/vfio-pci-core.ko: kernel/drivers/vfio/vfio.ko
kernel/drivers/vfio/vfio.ko:
`

// virtio and virtio_ring are built in here.
const testModulesBuiltin = "kernel/drivers/virtio/virtio.ko\nkernel/drivers/virtio/virtio_ring.ko\n"

func TestModuleLoadOrder(t *testing.T) {
	mt, err := parseModuleTree("/lib/modules/x", []byte(testModulesDep), []byte(testModulesBuiltin))
	if err != nil {
		t.Fatal(err)
	}
	order, err := mt.loadOrder("virtio_pci", "9pnet_virtio", "9p", "vfio-pci", "vfio_pci")
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, f := range order {
		name := moduleName(f)
		if _, dup := pos[name]; dup {
			t.Errorf("%s listed twice", name)
		}
		pos[name] = i
	}
	for _, builtin := range []string{"virtio", "virtio_ring"} {
		if _, ok := pos[builtin]; ok {
			t.Errorf("built-in module %s listed", builtin)
		}
	}
	for mod, deps := range mt.deps {
		if _, ok := pos[mod]; !ok {
			continue
		}
		for _, d := range deps {
			if mt.builtin[d] {
				continue
			}
			if p, ok := pos[d]; !ok || p > pos[mod] {
				t.Errorf("%s loads before its dependency %s: %v", mod, d, order)
			}
		}
	}
	if len(order) != 11 {
		t.Errorf("got %d modules, want 11: %v", len(order), order)
	}
	if !slices.Contains(order, "kernel/drivers/vfio/pci/vfio-pci.ko") {
		t.Errorf("vfio-pci (asked for as vfio-pci and vfio_pci) missing: %v", order)
	}
}

func TestModuleLoadOrderBadInput(t *testing.T) {
	mt, err := parseModuleTree("/m", []byte(testModulesDep+"kernel/a.ko: kernel/b.ko\nkernel/b.ko: kernel/a.ko\nkernel/c.ko: kernel/nothere.ko\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ mod, want string }{
		{"nosuchmod", "nosuchmod is not in /m/modules.dep nor built in"},
		{"a", "cycle"},
		{"c", "nothere (needed by c)"},
	} {
		if _, err := mt.loadOrder(tc.mod); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("loadOrder(%s) = %v, want an error containing %q", tc.mod, err, tc.want)
		}
	}
	if _, err := parseModuleTree("/m", []byte("no colon here\n"), nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("malformed modules.dep: got %v, want an error naming line 1", err)
	}
}

func TestModuleName(t *testing.T) {
	for in, want := range map[string]string{
		"kernel/drivers/vfio/pci/vfio-pci.ko": "vfio_pci",
		"rdma_rxe.ko.xz":                      "rdma_rxe",
		"9p.ko.zst":                           "9p",
		"vfio-pci":                            "vfio_pci",
	} {
		if got := moduleName(in); got != want {
			t.Errorf("moduleName(%q) = %q, want %q", in, got, want)
		}
	}
}
