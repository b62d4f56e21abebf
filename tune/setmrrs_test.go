package tune

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func asRoot() int { return 0 }

func configBytes(t *testing.T, s *System, bdf string) []byte {
	t.Helper()
	d, err := s.PCIDevice(bdf)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(d.Dir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSetMRRSRefusesWithoutRoot(t *testing.T) {
	s := writableFixture(t, "igx")
	s.Euid = func() int { return 1000 }
	before := configBytes(t, s, "0005:04:00.0")
	for _, targets := range [][]string{nil, {"0005:04:00.0"}, {"eth0"}} {
		got, err := s.SetMRRS(targets)
		if !errors.Is(err, ErrNotRoot) || got != nil || !strings.Contains(err.Error(), "uid 1000") {
			t.Errorf("SetMRRS(%v) as uid 1000 = %v, %v; want ErrNotRoot", targets, got, err)
		}
	}
	if !bytes.Equal(before, configBytes(t, s, "0005:04:00.0")) {
		t.Error("config space changed although the call was refused")
	}
}

func TestSetMRRSRefusesNonNVIDIA(t *testing.T) {
	s := writableFixture(t, "igx")
	s.Euid = asRoot
	before := configBytes(t, s, "0001:01:00.0")
	nvBefore := configBytes(t, s, "0005:04:00.0")
	for _, target := range []string{"0001:01:00.0", "eth0"} {
		// Even together with a valid NVIDIA NIC nothing is written.
		_, err := s.SetMRRS([]string{"0005:04:00.0", target})
		if !errors.Is(err, ErrNotNVIDIANIC) || !strings.Contains(err.Error(), "vendor 0x8086") || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("SetMRRS(%s) = %v, want a refusal naming vendor 0x8086", target, err)
		}
	}
	if !bytes.Equal(before, configBytes(t, s, "0001:01:00.0")) || !bytes.Equal(nvBefore, configBytes(t, s, "0005:04:00.0")) {
		t.Error("config space changed although the call was refused")
	}
	for _, target := range []string{"0005:09:00.0", "nosuch0", "../etc"} {
		if _, err := s.SetMRRS([]string{target}); err == nil {
			t.Errorf("SetMRRS(%q) accepted a missing device", target)
		}
	}
	// A box without any NVIDIA NIC refuses the default "all NICs" form.
	x := writableFixture(t, "x86")
	x.Euid = asRoot
	if _, err := x.SetMRRS(nil); !errors.Is(err, ErrNoNVIDIANIC) || !strings.Contains(err.Error(), "vendor 0x15b3") {
		t.Errorf("x86 set mrrs: %v", err)
	}
	if _, err := x.SetMRRS([]string{"eno1"}); !errors.Is(err, ErrNotNVIDIANIC) {
		t.Errorf("x86 set mrrs eno1: %v", err)
	}
}

func TestSetMRRSWritesOnlyTheField(t *testing.T) {
	s := writableFixture(t, "igx")
	s.Euid = asRoot
	before := configBytes(t, s, "0005:04:00.0")
	tuned := configBytes(t, s, "0005:04:00.1")
	got, err := s.SetMRRS(nil) // every NVIDIA NIC
	if err != nil {
		t.Fatal(err)
	}
	assertFindings(t, got, []want{
		{"set-mrrs", "enP5p4s0f0np0 mlx5_0 0005:04:00.0", StatusOK, "512 B → 4096 B"},
		{"set-mrrs", "enP5p4s0f1np1 mlx5_1 0005:04:00.1", StatusOK, "4096 B"},
	})
	after := configBytes(t, s, "0005:04:00.0")
	off := 0x70 + expDevCtl
	for i := range before {
		if i != off && i != off+1 && before[i] != after[i] {
			t.Errorf("byte 0x%x changed: 0x%02x → 0x%02x", i, before[i], after[i])
		}
	}
	old, val := binary.LittleEndian.Uint16(before[off:]), binary.LittleEndian.Uint16(after[off:])
	if val != old&^devCtlReadRq|devCtlRead4096 {
		t.Errorf("Device Control 0x%04x → 0x%04x, want only bits 14:12 set to 5", old, val)
	}
	if !bytes.Equal(tuned, configBytes(t, s, "0005:04:00.1")) {
		t.Error("a NIC already at 4096 B was written")
	}
	if m := s.CheckMRRS(); m[0].Status != StatusOK || m[0].Measured != "4096 B" {
		t.Errorf("check after set: %+v", m[0])
	}
	// By interface name too.
	s2 := writableFixture(t, "spark")
	s2.Euid = asRoot
	got, err = s2.SetMRRS([]string{"enP2p1s0f1np1"})
	if err != nil || len(got) != 1 || got[0].Status != StatusOK || got[0].Measured != "512 B → 4096 B" {
		t.Errorf("set by interface name: %+v %v", got, err)
	}
}

// droppingFile accepts writes and discards them, as config space does under lockdown on
// some platforms.
type droppingFile struct{ *os.File }

func (droppingFile) WriteAt(p []byte, off int64) (int, error) { return len(p), nil }

// deniedFile fails writes with EPERM, as the kernel does under lockdown.
type deniedFile struct{ *os.File }

func (deniedFile) WriteAt(p []byte, off int64) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "config", Err: os.ErrPermission}
}

func TestSetMRRSDetectsSilentFailure(t *testing.T) {
	s := writableFixture(t, "igx")
	s.Euid = asRoot
	if err := os.MkdirAll(filepath.Join(s.Root, "sys/kernel/security"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root, "sys/kernel/security/lockdown"), []byte("none [integrity] confidentiality\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.OpenConfig = func(p string) (ConfigFile, error) {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		return droppingFile{f}, err
	}
	got, err := s.SetMRRS([]string{"enP5p4s0f0np0"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Status != StatusFail || got[0].Measured != "512 B → 512 B" || !strings.Contains(got[0].Message, "did not stick") ||
		!strings.Contains(got[0].Message, `lockdown is "integrity"`) {
		t.Errorf("silent failure not reported: %+v", got[0])
	}
	s.OpenConfig = func(p string) (ConfigFile, error) {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		return deniedFile{f}, err
	}
	got, err = s.SetMRRS([]string{"0005:04:00.0"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Status != StatusFail || !strings.Contains(got[0].Message, "permission") || !strings.Contains(got[0].Message, "Secure Boot") {
		t.Errorf("EPERM not reported: %+v", got[0])
	}
}

// A virtio-net interface's device link names the virtio device below the PCI function; the
// refusal must still name the PCI function and its vendor.
func TestSetMRRSVirtioInterface(t *testing.T) {
	tr := newTree()
	d := dev{parent: "/sys/devices/pci0000:00", bdf: "0000:00:03.0", vendor: 0x1af4, device: 0x1000, class: 0x020000, numa: 0}
	tr.pci(d)
	tr.file(d.dir()+"/virtio2/net/eth1/mtu", "1500\n")
	tr.link(d.dir()+"/virtio2/net/eth1/device", d.dir()+"/virtio2")
	tr.link("/sys/class/net/eth1", d.dir()+"/virtio2/net/eth1")
	tr.file("/sys/devices/virtual/net/lo/mtu", "65536\n")
	tr.link("/sys/class/net/lo", "/sys/devices/virtual/net/lo")
	s := buildSystem(t, tr, GPUFacts{})
	s.Euid = asRoot
	if _, err := s.SetMRRS([]string{"eth1"}); !errors.Is(err, ErrNotNVIDIANIC) || !strings.Contains(err.Error(), "0000:00:03.0 (eth1)") {
		t.Errorf("virtio eth1: %v", err)
	}
	if _, err := s.SetMRRS([]string{"lo"}); !errors.Is(err, ErrNotNVIDIANIC) || !strings.Contains(err.Error(), "virtual interface") {
		t.Errorf("lo: %v", err)
	}
}
