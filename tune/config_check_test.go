package tune

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

func loadConfig(t *testing.T, name string) *config.Config {
	t.Helper()
	c, err := config.LoadFile(filepath.Join("testdata", "configs", name))
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return c
}

// findingFor returns the findings whose subject contains sub.
func findingsFor(fs []Finding, sub string) []Finding {
	var out []Finding
	for _, f := range fs {
		if strings.Contains(f.Subject, sub) {
			out = append(out, f)
		}
	}
	return out
}

func TestConfigGoodIGX(t *testing.T) {
	s := fixtureSystem(t, "igx")
	for _, name := range []string{"igx-good.yaml", "igx-netdev.yaml"} {
		got := s.CheckConfig(loadConfig(t, name))
		if len(got) == 0 {
			t.Fatalf("%s: no findings", name)
		}
		for _, f := range got {
			if f.Status != StatusOK {
				t.Errorf("%s: unexpected %s finding %s: %s %s", name, f.Status, f.Subject, f.Measured, f.Message)
			}
			if f.Check != "config" {
				t.Errorf("%s: finding for check %q", name, f.Check)
			}
		}
	}
	got := s.CheckConfig(loadConfig(t, "igx-good.yaml"))
	assertFindings(t, got, []want{
		{"config", "master_core", StatusOK, "0"},
		{"config", "data_port rx queue rx_q_0 cpu_core", StatusOK, "5 (isolated)"},
		{"config", "data_port tx queue tx_q_0 cpu_core", StatusOK, "6 (isolated)"},
		{"config", "hugepages (2 MiB pages)", StatusOK, "1024 reserved, 1024 available"},
		{"config", "interface data_port (0005:04:00.1)", StatusOK, "present: enP5p4s0f1np1 mlx5_1 0005:04:00.1"},
		{"config", "interface data_port mtu (enP5p4s0f1np1)", StatusOK, "9000"},
		{"config", "memory region data_gpu (device) GPU", StatusOK, "affinity 0 → GPU0 0005:03:00.0 (NVIDIA RTX 6000 Ada Generation)"},
	})
	// hdr: 51200 × 64 B = 2 pages; tx_host: 8192 × 8064 B = 32 pages.
	if h := findingsFor(got, "hugepages"); h[0].Recommended != "≥ 34 available" {
		t.Errorf("hugepages needed: %q", h[0].Recommended)
	}
}

// Each deliberately broken fixture configuration is flagged with the right finding.
func TestConfigBrokenFixtures(t *testing.T) {
	cases := []struct {
		file, box, subject string
		status             Status
		measured, message  string // message: substring
		fix                string // substring
	}{
		{"bad-core-missing.yaml", "igx", "rx queue rx_q_0 cpu_core", StatusFail, "64", "CPU 64 does not exist", ""},
		{"bad-core-not-isolated.yaml", "igx", "rx queue rx_q_0 cpu_core", StatusWarn, "1 (not isolated)", "shares CPU 1", "isolcpus=1,4-7"},
		{"bad-hugepages.yaml", "igx", "hugepages", StatusFail, "1024 reserved, 1024 available", "cannot be allocated", "echo 1156 | sudo tee /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"},
		{"bad-interface-missing.yaml", "igx", "interface data_port (0005:09:00.0)", StatusFail, "missing", "no PCI device 0005:09:00.0", ""},
		{"bad-netdev-missing.yaml", "igx", "interface data_port (ens9f0np0)", StatusFail, "missing", "no network interface \"ens9f0np0\"", ""},
		{"bad-mtu.yaml", "igx", "interface data_port mtu (enP5p4s0f0np0)", StatusFail, "1500", "frames of up to 8064 B", "sudo ip link set dev enP5p4s0f0np0 mtu 9000"},
		{"bad-gpu-ordinal.yaml", "igx", "memory region data_gpu (device) GPU", StatusFail, "affinity 3", "GPU ordinal 3 does not exist: this machine has 1 NVIDIA GPU(s)", ""},
		{"spark-device.yaml", "spark", "memory region Data_RX_GPU (device) GPU", StatusFail, "affinity 0", "host_pinned", ""},
		{"igx-good.yaml", "x86", "memory region data_gpu (device) GPU", StatusFail, "affinity 0", "no NVIDIA GPU", ""},
	}
	for _, c := range cases {
		t.Run(c.file+"@"+c.box, func(t *testing.T) {
			got := fixtureSystem(t, c.box).CheckConfig(loadConfig(t, c.file))
			fs := findingsFor(got, c.subject)
			if len(fs) != 1 {
				t.Fatalf("%d findings about %q in %+v", len(fs), c.subject, got)
			}
			f := fs[0]
			if f.Status != c.status || f.Measured != c.measured || !strings.Contains(f.Message, c.message) || !strings.Contains(f.Fix, c.fix) {
				t.Errorf("finding %+v, want %s measured %q message ~%q fix ~%q", f, c.status, c.measured, c.message, c.fix)
			}
			if Worst(got) < StatusWarn {
				t.Errorf("broken config passed: worst %s", Worst(got))
			}
			// Only the broken aspect is flagged on its own box (the x86 run flags several).
			if c.box != "x86" {
				for _, o := range got {
					if o.Status > StatusOK && o.Subject != f.Subject {
						t.Errorf("unrelated finding flagged: %+v", o)
					}
				}
			}
		})
	}
}

func TestConfigSparkGood(t *testing.T) {
	got := fixtureSystem(t, "spark").CheckConfig(loadConfig(t, "spark-good.yaml"))
	assertFindings(t, got, []want{
		{"config", "master_core", StatusOK, "8"},
		{"config", "tx_port tx queue tx_q_0 cpu_core", StatusOK, "17 (isolated)"},
		{"config", "rx_port rx queue rx_q_0 cpu_core", StatusOK, "18 (isolated)"},
		{"config", "interface tx_port (0000:01:00.0)", StatusOK, "*"},
		{"config", "interface tx_port mtu (enp1s0f0np0)", StatusOK, "9000"},
		{"config", "interface rx_port (0002:01:00.1)", StatusOK, "*"},
		{"config", "interface rx_port mtu (enP2p1s0f1np1)", StatusOK, "9000"},
		{"config", "memory region Data_TX_GPU (host_pinned) GPU", StatusOK, "affinity 0 → GPU0 000f:01:00.0 (NVIDIA GB10)"},
		{"config", "memory region Data_RX_GPU (host_pinned) GPU", StatusOK, "*"},
	})
}

func TestConfigSharedCoreAndBAR1(t *testing.T) {
	s := fixtureSystem(t, "igx")
	cfg := loadConfig(t, "igx-good.yaml")
	cfg.Interfaces[0].TX.Queues[0].CPUCore = "5" // same core as the RX worker
	cfg.MemoryRegions[1].NumBufs = 51200         // 51200 × 8000 B = 390 MiB of device memory > 256 MiB BAR1
	got := s.CheckConfig(cfg)
	tx := findingsFor(got, "tx queue tx_q_0 cpu_core")
	if len(tx) != 1 || tx[0].Status != StatusWarn || !strings.Contains(tx[0].Message, "also runs data_port rx queue rx_q_0") {
		t.Errorf("shared core: %+v", tx)
	}
	bar := findingsFor(got, "GPU 0 BAR1")
	if len(bar) != 1 || bar[0].Status != StatusWarn || bar[0].Measured != "390 MiB of device regions" {
		t.Errorf("BAR1 overflow: %+v", bar)
	}
}
