package selftest

import (
	"bytes"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/integration/vm/guest"
)

// TestGuestEnvironment checks the promises of the harness's contract.
func TestGuestEnvironment(t *testing.T) {
	guest.Require(t)
	if os.Geteuid() != 0 {
		t.Errorf("guest tests run as uid %d, want root", os.Geteuid())
	}
	if errs := os.Getenv(guest.EnvSetupErrors); errs != "" {
		t.Errorf("setup errors: %s", errs)
	}
	t.Run("cwd is the package folder", func(t *testing.T) {
		wd, _ := os.Getwd()
		if _, err := os.Stat(filepath.Join(wd, "selftest_test.go")); err != nil {
			t.Errorf("working folder %s is not this package's source folder: %v", wd, err)
		}
	})
	t.Run("writable tmp", func(t *testing.T) {
		want := make([]byte, 4096)
		rand.Read(want)
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, want, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read back: %v", err)
		}
	})
	t.Run("host root is read-only", func(t *testing.T) {
		if err := os.WriteFile("/usr/daqiri-vm-probe", nil, 0o600); err == nil {
			os.Remove("/usr/daqiri-vm-probe")
			t.Error("wrote into the shared host root")
		}
	})
	t.Run("edu bound to vfio-pci", func(t *testing.T) {
		bdf, group := guest.Edu(t)
		drv, err := os.Readlink("/sys/bus/pci/devices/" + bdf + "/driver")
		if err != nil || filepath.Base(drv) != "vfio-pci" {
			t.Errorf("%s driver: %q %v", bdf, drv, err)
		}
		if _, err := os.Stat("/dev/vfio/vfio"); err != nil {
			t.Error(err)
		}
		if st, err := os.Stat(filepath.Join("/dev/vfio", strconv.Itoa(group))); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			t.Errorf("/dev/vfio/%d: %v", group, err)
		}
	})
	t.Run("host programs run: rdma shows rxe0", func(t *testing.T) {
		dev, netdev, _ := guest.Rxe(t)
		out, err := exec.Command("rdma", "link", "show").CombinedOutput()
		if err != nil {
			t.Fatalf("rdma link show: %v: %s", err, out)
		}
		if !strings.Contains(string(out), dev+"/1") || !strings.Contains(string(out), "ACTIVE") || !strings.Contains(string(out), netdev) {
			t.Errorf("rdma link show:\n%s", out)
		}
	})
	t.Run("hugepages", func(t *testing.T) {
		b, err := os.ReadFile("/proc/sys/vm/nr_hugepages")
		if err != nil || strings.TrimSpace(string(b)) == "0" {
			t.Errorf("nr_hugepages %q %v", b, err)
		}
	})
}
