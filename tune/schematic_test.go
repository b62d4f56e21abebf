package tune

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// treeText writes a topology as an indented outline, one node a line: name, kind or port,
// NVIDIA mark, names, VFs and link ("now/max" when they differ).
func treeText(t *PCITopology) string {
	var b strings.Builder
	var walk func(n *TopoNode, depth int)
	walk = func(n *TopoNode, depth int) {
		parts := []string{n.Name}
		if n.Kind == KindBridge {
			parts = append(parts, n.Port)
		} else {
			parts = append(parts, string(n.Kind))
		}
		if n.NVIDIA {
			parts = append(parts, "nvidia")
		}
		if names := n.Names(); len(names) > 0 {
			parts = append(parts, "["+strings.Join(names, " ")+"]")
		}
		if n.VFs > 0 {
			parts = append(parts, fmt.Sprintf("+%dVF", n.VFs))
		}
		if n.Kind != KindRootComplex {
			l := n.Link.String()
			if n.MaxLink != n.Link {
				l += "/" + n.MaxLink.String()
			}
			parts = append(parts, "<"+l+">")
		}
		if n.NUMANode >= 0 {
			parts = append(parts, fmt.Sprintf("node%d", n.NUMANode))
		}
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), strings.Join(parts, " "))
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	for _, r := range t.Roots {
		walk(r, 0)
	}
	return b.String()
}

// pathText lists the GPU↔I/O paths, one a line.
func pathText(t *PCITopology) string {
	var b strings.Builder
	for _, p := range t.Paths {
		fmt.Fprintf(&b, "%s %s %s %s %s@%s\n", p.GPU.Name, p.Peer.Kind, p.Peer.Name, p.Class, p.Slowest, p.SlowestAt)
	}
	return b.String()
}

// The device tree and paths of each committed fixture box.
func TestSchematicFixtureTrees(t *testing.T) {
	cases := []struct {
		name, tree, paths string
	}{
		{"igx", `pci0001:00 root complex
  0001:00:00.0 root port <8 GT/s x1>
    0001:01:00.0 NIC [eth0] <2.5 GT/s x1>
pci0005:00 root complex
  0005:00:00.0 root port <16 GT/s x16>
    0005:01:00.0 switch upstream port <16 GT/s x16>
      0005:02:00.0 switch downstream port <16 GT/s x16>
        0005:03:00.0 GPU nvidia <16 GT/s x16>
      0005:02:08.0 switch downstream port <16 GT/s x16>
        0005:04:00.0 NIC nvidia [enP5p4s0f0np0 mlx5_0] <16 GT/s x16>
        0005:04:00.1 NIC nvidia [enP5p4s0f1np1 mlx5_1] <16 GT/s x16>
`,
			// One NUMA node (-1 everywhere): the onboard NIC on the other root complex is NODE.
			`0005:03:00.0 NIC 0005:04:00.0 PIX 16 GT/s x16@0005:03:00.0
0005:03:00.0 NIC 0005:04:00.1 PIX 16 GT/s x16@0005:03:00.0
0005:03:00.0 NIC 0001:01:00.0 NODE 2.5 GT/s x1@0001:01:00.0
`},
		{"spark", `pci0000:00 root complex node0
  0000:00:00.0 root port <32 GT/s x4> node0
    0000:01:00.0 NIC nvidia [enp1s0f0np0 rocep1s0f0] <32 GT/s x4> node0
    0000:01:00.1 NIC nvidia [enp1s0f1np1 rocep1s0f1] <32 GT/s x4> node0
pci0002:00 root complex node0
  0002:00:00.0 root port <32 GT/s x4> node0
    0002:01:00.0 NIC nvidia [enP2p1s0f0np0 roceP2p1s0f0] <32 GT/s x4> node0
    0002:01:00.1 NIC nvidia [enP2p1s0f1np1 roceP2p1s0f1] <32 GT/s x4> node0
pci000f:00 root complex node0
  000f:00:00.0 root port <32 GT/s x8> node0
    000f:01:00.0 GPU nvidia <32 GT/s x8> node0
`, `000f:01:00.0 NIC 0000:01:00.0 NODE 32 GT/s x4@0000:01:00.0
000f:01:00.0 NIC 0000:01:00.1 NODE 32 GT/s x4@0000:01:00.1
000f:01:00.0 NIC 0002:01:00.0 NODE 32 GT/s x4@0002:01:00.0
000f:01:00.0 NIC 0002:01:00.1 NODE 32 GT/s x4@0002:01:00.1
`},
		// The host bridge function 00:00.0 and the Intel iGPU are left out; the NVMe drive's
		// x4 link trained at x2.
		{"x86", `pci0000:00 root complex node0
  0000:00:1d.0 root port <8 GT/s x4> node0
    0000:01:00.0 NVMe [nvme0n1] <8 GT/s x2/8 GT/s x4> node0
  0000:00:1f.6 NIC [eno1] <> node0
`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topo, err := fixtureSystem(t, c.name).PCITopology()
			if err != nil {
				t.Fatal(err)
			}
			if got := treeText(topo); got != c.tree {
				t.Errorf("tree:\n%s\nwant:\n%s", got, c.tree)
			}
			if got := pathText(topo); got != c.paths {
				t.Errorf("paths:\n%s\nwant:\n%s", got, c.paths)
			}
		})
	}
}

// decodeSVG checks that b is well-formed XML with an <svg> root and returns its text.
func decodeSVG(t *testing.T, b []byte) string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var text strings.Builder
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, b)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = x.Name.Local
				if x.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q", x.Name.Space)
				}
			}
		case xml.CharData:
			text.Write(x)
			text.WriteByte('\n')
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return text.String()
}

// The picture of each fixture parses as XML and names every GPU and NIC, and check
// schematic writes it when told where.
func TestSchematicSVG(t *testing.T) {
	for _, name := range []string{"igx", "spark", "x86"} {
		t.Run(name, func(t *testing.T) {
			s := fixtureSystem(t, name)
			topo, err := s.PCITopology()
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := topo.WriteSVG(&b); err != nil {
				t.Fatal(err)
			}
			text := decodeSVG(t, b.Bytes())
			for _, n := range topo.Devices {
				if (n.Kind == KindGPU || n.Kind == KindNIC || n.Kind == KindNVMe) && !strings.Contains(text, n.Name) {
					t.Errorf("SVG does not mention %s %s", n.Kind, n.Name)
				}
			}
			for _, p := range topo.Paths {
				if !strings.Contains(text, fmt.Sprintf("GPU %s ↔ %s %s: %s", p.GPU.Name, p.Peer.Kind, p.Peer.Label(), p.Class)) {
					t.Errorf("SVG lacks the path line for %s ↔ %s", p.GPU.Name, p.Peer.Name)
				}
			}

			out := filepath.Join(t.TempDir(), "tree.svg")
			s.SchematicOutput = out
			got := s.CheckSchematic()
			want := fmt.Sprintf("wrote %s (%d devices)", out, len(topo.Devices))
			if got[0].Status != StatusOK || got[0].Measured != want {
				t.Errorf("first finding %+v, want OK %q", got[0], want)
			}
			file, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(file, b.Bytes()) {
				t.Error("the written file differs from WriteSVG's output")
			}
		})
	}
	// The x86 NVMe link runs at x2 of x4: drawn in red.
	topo, _ := fixtureSystem(t, "x86").PCITopology()
	var b bytes.Buffer
	if err := topo.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `fill="#c00000" font-weight="bold">link: 8 GT/s x2 (max 8 GT/s x4)</text>`) {
		t.Errorf("downtrained NVMe link not highlighted:\n%s", b.String())
	}
}

// GPU findings match the topo check on machines with PXB, PHB, NODE and SYS paths, and the
// slowest link on the path is found wherever it is.
func TestSchematicPathClasses(t *testing.T) {
	gpu := func(parent, bdf string, numa int) dev {
		return dev{parent: parent, bdf: bdf, vendor: VendorNVIDIA, device: 0x2330, class: 0x030200, numa: numa, driver: "nvidia",
			exp: &pcie{typ: expTypeEndpoint, mpsCap: 2, mps: 2, mrrs: 2, gen: 5, lns: 16}}
	}
	nic := func(parent, bdf string, numa int) dev {
		return dev{parent: parent, bdf: bdf, vendor: VendorMellanox, device: 0x1021, class: 0x020000, numa: numa, driver: "mlx5_core",
			net: map[string]int{"ib" + strings.ReplaceAll(bdf[5:7], ":", ""): 9000},
			exp: &pcie{typ: expTypeEndpoint, mpsCap: 2, mps: 2, mrrs: 5, gen: 5, lns: 16}}
	}
	nvme := func(parent, bdf string, numa int) dev {
		return dev{parent: parent, bdf: bdf, vendor: 0x144d, device: 0xa80a, class: 0x010802, numa: numa, driver: "nvme",
			block: []string{"nvme0n1"}, exp: &pcie{typ: expTypeEndpoint, mpsCap: 2, mps: 2, mrrs: 2, gen: 4, lns: 4}}
	}
	port := func(parent, bdf string, typ, lns int) dev {
		return dev{parent: parent, bdf: bdf, vendor: 0x1000, device: 0xc030, class: 0x060400, numa: 0, driver: "pcieport",
			exp: &pcie{typ: typ, mpsCap: 2, mps: 2, gen: 5, lns: lns}}
	}
	cases := []struct {
		name    string
		devs    []dev
		nodes   []string
		want    string // measured
		stat    Status
		slowest string // in the message
	}{
		{
			name: "PXB through a narrow inner switch",
			devs: func() []dev {
				rp := port("/sys/devices/pci0000:00", "0000:00:01.0", expTypeRootPort, 16)
				u1 := port(rp.dir(), "0000:01:00.0", expTypeUpstream, 16)
				da := port(u1.dir(), "0000:02:00.0", expTypeDownstream, 8)
				db := port(u1.dir(), "0000:02:01.0", expTypeDownstream, 16)
				u2 := port(da.dir(), "0000:03:00.0", expTypeUpstream, 8)
				dc := port(u2.dir(), "0000:04:00.0", expTypeDownstream, 16)
				return []dev{rp, u1, da, db, u2, dc, gpu(dc.dir(), "0000:05:00.0", 0), nic(db.dir(), "0000:06:00.0", 0)}
			}(),
			nodes: []string{"0-3"}, want: "PXB to ib06 0000:06:00.0", stat: StatusOK,
			slowest: "slowest link on the path: 32 GT/s x8 at 0000:03:00.0", // the inner switch's upstream link
		},
		{
			name: "PHB with an NVMe drive on the same switch",
			devs: func() []dev {
				a := port("/sys/devices/pci0000:00", "0000:00:01.0", expTypeRootPort, 16)
				b := port("/sys/devices/pci0000:00", "0000:00:02.0", expTypeRootPort, 16)
				u := port(a.dir(), "0000:01:00.0", expTypeUpstream, 16)
				d1 := port(u.dir(), "0000:02:00.0", expTypeDownstream, 16)
				d2 := port(u.dir(), "0000:02:01.0", expTypeDownstream, 4)
				return []dev{a, b, u, d1, d2, gpu(d1.dir(), "0000:03:00.0", 0), nvme(d2.dir(), "0000:04:00.0", 0), nic(b.dir(), "0000:05:00.0", 0)}
			}(),
			nodes: []string{"0-3"}, want: "PHB to ib05 0000:05:00.0", stat: StatusWarn,
			slowest: "nearest NVMe: PIX to nvme0n1 0000:04:00.0",
		},
		{
			name: "NODE",
			devs: func() []dev {
				a := port("/sys/devices/pci0000:00", "0000:00:01.0", expTypeRootPort, 16)
				b := port("/sys/devices/pci0000:40", "0000:40:01.0", expTypeRootPort, 16)
				return []dev{a, b, gpu(a.dir(), "0000:01:00.0", 0), nic(b.dir(), "0000:41:00.0", 0)}
			}(),
			nodes: []string{"0-3", "4-7"}, want: "NODE to ib41 0000:41:00.0", stat: StatusWarn,
			slowest: "slowest link on the path: 32 GT/s x16",
		},
		{
			name: "SYS, with a nearer NIC that is not NVIDIA",
			devs: func() []dev {
				a := port("/sys/devices/pci0000:00", "0000:00:01.0", expTypeRootPort, 16)
				b := port("/sys/devices/pci0000:80", "0000:80:01.0", expTypeRootPort, 16)
				intel := dev{parent: a.dir(), bdf: "0000:00:1f.6", vendor: 0x8086, device: 0x15bc, class: 0x020000, numa: 0,
					net: map[string]int{"eno1": 1500}}
				intel.parent = "/sys/devices/pci0000:00"
				return []dev{a, b, intel, gpu(a.dir(), "0000:01:00.0", 0), nic(b.dir(), "0000:81:00.0", 1)}
			}(),
			nodes: []string{"0-3", "4-7"}, want: "SYS to ib81 0000:81:00.0", stat: StatusWarn,
			slowest: "slowest link on the path: 32 GT/s x16",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree()
			tr.cpus("0-7", "2-3", func(int) string { return "performance" }, "performance")
			tr.nodes(c.nodes...)
			for _, d := range c.devs {
				tr.pci(d)
			}
			var facts GPUFacts
			for _, d := range c.devs {
				if d.vendor == VendorNVIDIA {
					g := NewGPU()
					g.Name, g.BusID, g.Integrated = "NVIDIA H100", d.bdf, No
					facts.GPUs = append(facts.GPUs, g)
				}
			}
			s := buildSystem(t, tr, facts)
			got := s.CheckSchematic()
			if len(got) != 2 {
				t.Fatalf("findings %+v", got)
			}
			g := got[1]
			if g.Status != c.stat || g.Measured != c.want || !strings.Contains(g.Message, c.slowest) {
				t.Errorf("GPU finding {%s %q %q}, want {%s %q ~%q}", g.Status, g.Measured, g.Message, c.stat, c.want, c.slowest)
			}
			if c.stat == StatusWarn && g.Fix == "" {
				t.Error("a far GPU↔NIC path needs a fix line")
			}
			topo := s.CheckTopo()
			if topo[0].Status != g.Status || topo[0].Measured != g.Measured {
				t.Errorf("topo says {%s %q}, schematic {%s %q}", topo[0].Status, topo[0].Measured, g.Status, g.Measured)
			}
		})
	}
}

// Netdevs and disks that hang below an intermediate device (virtio), NVMe multipath
// namespaces and SR-IOV virtual functions, as on a VM or a server with native multipath.
func TestSchematicClassNames(t *testing.T) {
	tr := newTree()
	h := "/sys/devices/pci0000:00"
	tr.pci(dev{parent: h, bdf: "0000:00:00.0", vendor: 0x8086, device: 0x0d57, class: 0x060000, numa: -1})
	tr.pci(dev{parent: h, bdf: "0000:00:01.0", vendor: 0x1af4, device: 0x1045, class: 0xffff00, numa: -1, driver: "virtio-pci"})
	blk := dev{parent: h, bdf: "0000:00:02.0", vendor: 0x1af4, device: 0x1042, class: 0x018000, numa: -1, driver: "virtio-pci"}
	net := dev{parent: h, bdf: "0000:00:03.0", vendor: 0x1af4, device: 0x1041, class: 0x020000, numa: -1, driver: "virtio-pci"}
	tr.pci(blk)
	tr.pci(net)
	tr.file(blk.dir()+"/virtio1/block/vda/size", "100\n")
	tr.link("/sys/block/vda", blk.dir()+"/virtio1/block/vda")
	tr.file(net.dir()+"/virtio2/net/eth0/mtu", "1500\n")
	tr.link("/sys/class/net/eth0", net.dir()+"/virtio2/net/eth0")
	tr.file("/sys/devices/virtual/net/lo/mtu", "65536\n")
	tr.link("/sys/class/net/lo", "/sys/devices/virtual/net/lo")
	tr.link("/sys/class/net/dangling", "/sys/devices/nowhere/net/dangling")
	tr.file("/sys/devices/virtual/block/loop0/size", "0\n")
	tr.link("/sys/block/loop0", "/sys/devices/virtual/block/loop0")
	// Native NVMe multipath: the disk users see lives under nvme-subsystem, the controller
	// keeps nvme0c0n1.
	rp := dev{parent: h, bdf: "0000:00:04.0", vendor: 0x8086, device: 0xa330, class: 0x060400, numa: -1, driver: "pcieport",
		exp: &pcie{typ: expTypeRootPort, mpsCap: 1, mps: 1, gen: 4, lns: 4}}
	ssd := dev{parent: rp.dir(), bdf: "0000:01:00.0", vendor: 0x144d, device: 0xa80a, class: 0x010802, numa: -1, driver: "nvme",
		exp: &pcie{typ: expTypeEndpoint, mpsCap: 1, mps: 1, mrrs: 2, gen: 4, lns: 4}}
	tr.pci(rp)
	tr.pci(ssd)
	tr.file(ssd.dir()+"/nvme/nvme0/nvme0c0n1/size", "100\n")
	tr.file("/sys/devices/virtual/nvme-subsystem/nvme-subsys0/nvme0n1/size", "100\n")
	tr.link("/sys/block/nvme0n1", "/sys/devices/virtual/nvme-subsystem/nvme-subsys0/nvme0n1")
	// A ConnectX PF with two VFs: counted, not drawn.
	pf := dev{parent: rp.dir(), bdf: "0000:01:00.1", vendor: VendorMellanox, device: 0x101d, class: 0x020000, numa: -1, driver: "mlx5_core",
		net: map[string]int{"enp1s0f1np1": 9000}, rdma: []string{"mlx5_1"}}
	tr.pci(pf)
	for i, bdf := range []string{"0000:01:00.2", "0000:01:00.3"} {
		vf := dev{parent: rp.dir(), bdf: bdf, vendor: VendorMellanox, device: 0x101e, class: 0x020000, numa: -1, driver: "mlx5_core",
			net: map[string]int{fmt.Sprintf("enp1s0f1v%d", i): 1500}}
		tr.pci(vf)
		tr.link(vf.dir()+"/physfn", pf.dir())
	}
	tr.file("/proc/sys/kernel/hostname", "vm-test\n")
	s := buildSystem(t, tr, GPUFacts{})
	topo, err := s.PCITopology()
	if err != nil {
		t.Fatal(err)
	}
	wantTree := `pci0000:00 root complex
  0000:00:02.0 storage [vda] <>
  0000:00:03.0 NIC [eth0] <>
  0000:00:04.0 root port <16 GT/s x4>
    0000:01:00.0 NVMe [nvme0n1] <16 GT/s x4>
    0000:01:00.1 NIC nvidia [enp1s0f1np1 mlx5_1] +2VF <>
`
	if got := treeText(topo); got != wantTree {
		t.Errorf("tree:\n%s\nwant:\n%s", got, wantTree)
	}
	if topo.Host != "vm-test" {
		t.Errorf("host %q", topo.Host)
	}
	got := s.CheckSchematic()
	assertFindings(t, got, []want{
		{"schematic", "PCIe tree", StatusOK, "5 devices under 1 root complex"},
		{"schematic", "NVIDIA GPU", StatusSkip, "no NVIDIA GPU"},
	})
	if m := got[0].Message; !strings.HasPrefix(m, "2 NICs (1 NVIDIA), 1 NVMe, 1 storage, 1 bridge;") || !strings.Contains(m, "--schematic-output") {
		t.Errorf("tree message %q", m)
	}
}

// A GPU without an NVIDIA NIC, and a GPU the driver reports but sysfs does not show.
func TestSchematicGPUWithoutNVIDIANIC(t *testing.T) {
	tr := newTree()
	h := "/sys/devices/pci0000:00"
	tr.pci(dev{parent: h, bdf: "0000:01:00.0", vendor: VendorNVIDIA, device: 0x2330, class: 0x030200, numa: 0})
	tr.pci(dev{parent: h, bdf: "0000:00:1f.6", vendor: 0x8086, device: 0x15bc, class: 0x020000, numa: 0, net: map[string]int{"eno1": 1500}})
	g := NewGPU()
	g.Index, g.Name, g.BusID, g.Integrated = 1, "NVIDIA L4", "0000:b1:00.0", No
	got := buildSystem(t, tr, GPUFacts{GPUs: []GPU{g}}).CheckSchematic()
	assertFindings(t, got, []want{
		{"schematic", "PCIe tree", StatusOK, "2 devices under 1 root complex"},
		{"schematic", "GPU1 0000:b1:00.0", StatusSkip, "not in sysfs"},
		{"schematic", "GPU 0000:01:00.0", StatusSkip, "no NVIDIA NIC"},
	})
	if !strings.Contains(got[2].Message, "nearest NIC: PHB to eno1 0000:00:1f.6 (not NVIDIA)") {
		t.Errorf("message %q", got[2].Message)
	}
}

// Missing, empty, dangling and corrupt sysfs parts give a clear SKIP, never a panic; an
// unwritable output file is a FAIL that says why.
func TestSchematicBadInput(t *testing.T) {
	skip := func(t *testing.T, s *System, msg string) {
		t.Helper()
		got := s.CheckSchematic()
		if len(got) != 1 || got[0].Status != StatusSkip || got[0].Measured != "no PCI tree" || !strings.Contains(got[0].Message, msg) {
			t.Errorf("findings %+v, want one SKIP mentioning %q", got, msg)
		}
		if _, err := s.PCITopology(); !errors.Is(err, ErrNoPCITree) {
			t.Errorf("PCITopology error %v, want ErrNoPCITree", err)
		}
	}
	t.Run("no sysfs", func(t *testing.T) {
		skip(t, buildSystem(t, newTree(), GPUFacts{}), "/sys/bus/pci/devices does not exist")
	})
	t.Run("empty bus", func(t *testing.T) {
		s := buildSystem(t, newTree(), GPUFacts{})
		if err := os.MkdirAll(filepath.Join(s.Root, "sys/bus/pci/devices"), 0o755); err != nil {
			t.Fatal(err)
		}
		skip(t, s, "/sys/bus/pci/devices is empty")
	})
	t.Run("bus is a file", func(t *testing.T) {
		tr := newTree()
		tr.file("/sys/bus/pci/devices", "not a directory\n")
		skip(t, buildSystem(t, tr, GPUFacts{}), "/sys/bus/pci/devices")
	})
	t.Run("dangling links", func(t *testing.T) {
		tr := newTree()
		tr.link("/sys/bus/pci/devices/0000:00:01.0", "/sys/devices/pci0000:00/0000:00:01.0")
		tr.link("/sys/bus/pci/devices/0000:00:02.0", "/sys/devices/pci0000:00/0000:00:02.0")
		skip(t, buildSystem(t, tr, GPUFacts{}), "none of the 2 entries")
	})
	t.Run("corrupt attributes", func(t *testing.T) {
		s := writableFixture(t, "igx")
		gpuDir := filepath.Join(s.Root, "sys/devices/pci0005:00/0005:00:00.0/0005:01:00.0/0005:02:00.0/0005:03:00.0")
		nicDir := filepath.Join(s.Root, "sys/devices/pci0005:00/0005:00:00.0/0005:01:00.0/0005:02:08.0/0005:04:00.1")
		for p, content := range map[string]string{
			filepath.Join(gpuDir, "current_link_speed"): "fast\n",
			filepath.Join(gpuDir, "current_link_width"): "-3\n",
			filepath.Join(gpuDir, "config"):             "",
			filepath.Join(nicDir, "vendor"):             "garbage\n", // the function is dropped
		} {
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// A physfn link to nowhere and a class entry that loops.
		if err := os.Symlink("../nowhere", filepath.Join(gpuDir, "physfn")); err != nil {
			t.Fatal(err)
		}
		loop := filepath.Join(s.Root, "sys/class/net/loop")
		if err := os.Symlink("loop", loop); err != nil {
			t.Fatal(err)
		}
		topo, err := s.PCITopology()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range topo.Devices {
			names = append(names, n.Name)
		}
		if strings.Contains(strings.Join(names, " "), "0005:04:00.1") {
			t.Errorf("a function with an unreadable vendor id should be dropped: %v", names)
		}
		got := s.CheckSchematic()
		if len(got) < 1 || got[0].Status != StatusOK {
			t.Errorf("findings %+v", got)
		}
	})
	t.Run("unwritable output", func(t *testing.T) {
		s := fixtureSystem(t, "x86")
		s.SchematicOutput = filepath.Join(t.TempDir(), "no", "such", "dir", "tree.svg")
		got := s.CheckSchematic()
		if got[0].Status != StatusFail || got[0].Measured != "not written" || !strings.Contains(got[0].Message, "cannot write the schematic") {
			t.Errorf("finding %+v", got[0])
		}
	})
	t.Run("png name", func(t *testing.T) {
		s := fixtureSystem(t, "x86")
		s.SchematicOutput = filepath.Join(t.TempDir(), "pcie_schematic.png")
		got := s.CheckSchematic()
		if got[0].Status != StatusOK || !strings.Contains(got[0].Message, "SVG whatever its name says") {
			t.Errorf("finding %+v", got[0])
		}
	})
}

func TestPCILink(t *testing.T) {
	for _, c := range []struct {
		l    PCILink
		s    string
		gbps float64
	}{
		{PCILink{16, 16}, "16 GT/s x16", 16 * 16 * 128.0 / 130},
		{PCILink{2.5, 1}, "2.5 GT/s x1", 2},
		{PCILink{0, 4}, "x4", 0},
		{PCILink{8, 0}, "8 GT/s", 0},
		{PCILink{}, "", 0},
	} {
		if c.l.String() != c.s || c.l.Gbps() != c.gbps {
			t.Errorf("%#v: %q %v, want %q %v", c.l, c.l.String(), c.l.Gbps(), c.s, c.gbps)
		}
	}
	for _, c := range []struct{ n, noun, want string }{
		{"1", "device", "1 device"}, {"2", "device", "2 devices"}, {"3", "root complex", "3 root complexes"},
		{"2", "NVMe", "2 NVMe"}, {"2", "GPU", "2 GPUs"}, {"2", "storage", "2 storage"},
	} {
		var n int
		fmt.Sscan(c.n, &n)
		if got := plural(n, c.noun); got != c.want {
			t.Errorf("plural(%d, %q) = %q", n, c.noun, got)
		}
	}
}
