package tune

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// truncateConfig cuts a fixture function's config space file to n bytes (what a non-root
// reader sees is the first 64).
func truncateConfig(t *testing.T, s *System, bdf string, n int) {
	t.Helper()
	d, err := s.PCIDevice(bdf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(d.Dir, "config"), int64(n)); err != nil {
		t.Fatal(err)
	}
}

func TestParseCPUList(t *testing.T) {
	cases := map[string]string{
		"":                       "",
		"0":                      "0",
		"0-3,8,10-11\n":          "0-3,8,10-11",
		"3,1,2,2":                "1-3",
		"managed_irq,domain,2-5": "2-5",
		"nohz,4-5":               "4-5",
		"0-7:2/4":                "0-7", // the group syntax keeps the range
	}
	for in, want := range cases {
		got, err := ParseCPUList(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseCPUList(%q) = %q, %v; want %q", in, got.String(), err, want)
		}
	}
	for _, bad := range []string{"a-b", "3-1", "1-", "99999999", "0-70000", "-1"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) accepted", bad)
		}
	}
	// Random sets survive String → Parse.
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for i := 0; i < 200; i++ {
		var set CPUSet
		for c := 0; c < 256; c++ {
			if r.IntN(3) == 0 {
				set = append(set, c)
			}
		}
		back, err := ParseCPUList(set.String())
		if err != nil || !slices.Equal(back, set) {
			t.Fatalf("round trip of %v via %q gave %v, %v", set, set.String(), back, err)
		}
	}
}

func TestParsePCIeCap(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for i := 0; i < 200; i++ {
		e := pcie{typ: r.IntN(10), mpsCap: r.IntN(6), mps: r.IntN(6), mrrs: r.IntN(6), gen: 1 + r.IntN(6), lns: 1 << r.IntN(5)}
		b := configSpace(0x15b3, 0x1021, 0x020000, false, e)
		c, err := ParsePCIeCap(b)
		if err != nil {
			t.Fatal(err)
		}
		if c.Offset != 0x70 || c.Type != e.typ || c.MPSSupported() != 128<<e.mpsCap || c.MPS() != 128<<e.mps ||
			c.MRRS() != 128<<e.mrrs || c.LinkGen() != e.gen || c.LinkWidth() != e.lns {
			t.Fatalf("decoded %+v from %+v", c, e)
		}
		// 256 bytes (what root reads of a conventional header) is enough.
		if _, err := ParsePCIeCap(b[:256]); err != nil {
			t.Fatal(err)
		}
	}
	b := configSpace(0x15b3, 0x1021, 0x020000, false, pcie{mrrs: 5})
	if _, err := ParsePCIeCap(b[:64]); !errors.Is(err, ErrConfigTruncated) {
		t.Errorf("64-byte config: %v, want ErrConfigTruncated", err)
	}
	if _, err := ParsePCIeCap(b[:32]); err == nil {
		t.Error("32-byte config accepted")
	}
	noList := slices.Clone(b)
	binary.LittleEndian.PutUint16(noList[cfgStatus:], 0)
	if _, err := ParsePCIeCap(noList); !errors.Is(err, ErrNoPCIeCap) {
		t.Errorf("no capability list: %v", err)
	}
	loop := slices.Clone(b)
	loop[0x51] = 0x40 // MSI → PM → MSI …
	if _, err := ParsePCIeCap(loop); err == nil || !strings.Contains(err.Error(), "loops") {
		t.Errorf("looping capability list: %v", err)
	}
	noExp := slices.Clone(b)
	noExp[0x51] = 0 // list ends before PCIe
	if _, err := ParsePCIeCap(noExp); !errors.Is(err, ErrNoPCIeCap) {
		t.Errorf("list without PCIe: %v", err)
	}
	// Random garbage never panics and never loops.
	for i := 0; i < 500; i++ {
		g := make([]byte, 64+r.IntN(4096))
		for j := range g {
			g[j] = byte(r.Uint32())
		}
		_, _ = ParsePCIeCap(g)
	}
}

func TestNormalizeBDF(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:17:00.0": "0000:17:00.0",
		"0000:3B:00.0":     "0000:3b:00.0",
		"17:00.0":          "0000:17:00.0",
		"0002:01:00.1":     "0002:01:00.1",
		"eth0":             "eth0",
		"00010000:01:00.0": "00010000:01:00.0", // a domain above 0xffff stays as is (VMD)
	} {
		if got := NormalizeBDF(in); got != want {
			t.Errorf("NormalizeBDF(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseSMI(t *testing.T) {
	out := []byte(`0, NVIDIA H100 80GB HBM3, 00000000:19:00.0, 580.65.06, 345, 1980, 2619, 2619
1, NVIDIA GB10, 0000000F:01:00.0, 580.95.05, 2418, 3003, [N/A], [N/A]
`)
	f, err := ParseSMI(out)
	if err != nil {
		t.Fatal(err)
	}
	if f.Source != "nvidia-smi" || f.Driver != "580.95.05" || len(f.GPUs) != 2 {
		t.Fatalf("facts %+v", f)
	}
	h, gb := f.GPUs[0], f.GPUs[1]
	if h.BusID != "0000:19:00.0" || h.SMClockMHz != 345 || h.SMClockMaxMHz != 1980 || h.MemClockMHz != 2619 || h.Integrated != Unknown {
		t.Errorf("H100 %+v", h)
	}
	if gb.BusID != "000f:01:00.0" || gb.MemClockMHz != -1 || gb.MemClockMaxMHz != -1 || gb.Integrated != Yes {
		t.Errorf("GB10 %+v", gb)
	}
	ParseSMIBar1(&f, []byte("00000000:19:00.0, 131072\n0000000F:01:00.0, [N/A]\n"))
	if f.GPUs[0].BAR1MiB != 131072 || f.GPUs[1].BAR1MiB != -1 {
		t.Errorf("bar1 %d %d", f.GPUs[0].BAR1MiB, f.GPUs[1].BAR1MiB)
	}
	if f, err := ParseSMI([]byte("No devices were found\n")); err != nil || len(f.GPUs) != 0 {
		t.Errorf("no devices: %+v %v", f, err)
	}
	if _, err := ParseSMI([]byte("0, H100, 0000:19:00.0\n")); err == nil {
		t.Error("short line accepted")
	}
	if _, err := ParseSMI([]byte("x, H100, 0000:19:00.0, 1, 2, 3, 4, 5\n")); err == nil {
		t.Error("bad index accepted")
	}

	// SMISource runs nvidia-smi through the injected runner and asks BAR1 separately.
	var calls []string
	src := SMISource{Run: func(args ...string) ([]byte, error) {
		calls = append(calls, strings.Join(args, " "))
		if strings.Contains(args[0], "memory.bar1.total") {
			return []byte("00000000:19:00.0, 131072\n"), nil
		}
		return out[:bytes.IndexByte(out, '\n')+1], nil
	}}
	f, err = src.GPUFacts()
	if err != nil || len(f.GPUs) != 1 || f.GPUs[0].BAR1MiB != 131072 || len(calls) != 2 {
		t.Errorf("SMISource: %+v %v %q", f, err, calls)
	}
}

func TestGPUFactsJSON(t *testing.T) {
	var f GPUFacts
	if err := json.Unmarshal([]byte(`{"gpus":[{"index":0,"name":"X","bus_id":"00000000:19:00.0","integrated":true,"gpudirect_rdma":"no"}]}`), &f); err != nil {
		t.Fatal(err)
	}
	g := f.GPUs[0]
	if g.BusID != "0000:19:00.0" || g.Integrated != Yes || g.GPUDirectRDMA != No || g.DMABuf != Unknown || g.SMClockMHz != -1 || g.BAR1MiB != -1 {
		t.Errorf("decoded %+v", g)
	}
	if err := json.Unmarshal([]byte(`{"gpus":[{"integrated":"maybe"}]}`), &f); err == nil {
		t.Error("bad tri value accepted")
	}
	if _, err := FileSource(filepath.Join(t.TempDir(), "missing.json")).GPUFacts(); err == nil {
		t.Error("missing facts file accepted")
	}
}

func TestOutputFormats(t *testing.T) {
	fs := []Finding{
		{Check: "mtu", Subject: "eth0", Status: StatusWarn, Measured: "1500", Recommended: "9000", Message: "small", Fix: "ip link set dev eth0 mtu 9000\nsecond line"},
		{Check: "numa", Status: StatusOK},
		{Check: "config", Status: StatusFail, Message: "bad"},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, fs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"CHECK", "mtu", "WARN", "fix: ip link set dev eth0 mtu 9000", "     second line", "1 OK, 1 WARN, 1 FAIL, 0 SKIP"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	b.Reset()
	if err := WriteJSON(&b, fs); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Findings []Finding      `json:"findings"`
		Summary  map[string]int `json:"summary"`
		Worst    Status         `json:"worst"`
	}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Findings, fs) || back.Worst != StatusFail || back.Summary["WARN"] != 1 {
		t.Errorf("JSON round trip: %+v", back)
	}
	if err := json.Unmarshal([]byte(`"BAD"`), new(Status)); err == nil {
		t.Error("bad status name accepted")
	}
	b.Reset()
	if err := WriteJSON(&b, nil); err != nil || !strings.Contains(b.String(), `"findings": []`) {
		t.Errorf("empty JSON: %s %v", b.String(), err)
	}
}
