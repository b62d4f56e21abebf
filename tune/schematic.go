package tune

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// The schematic check (upstream tune_system.py --check schematic) draws the machine's PCIe
// tree and summarises how each GPU reaches each NIC and NVMe drive. Upstream walks
// /sys/bus/pci/devices, /sys/class/net, /sys/class/infiniband, /sys/block and lspci; here
// everything comes from sysfs (the link attributes sysfs shows are what lspci decodes from
// the same registers), so the check runs unprivileged and against fixture trees alike.

// DeviceKind is what a box in the PCIe schematic stands for.
type DeviceKind string

// Device kinds. Only GPUs, NICs and NVMe drives (and other functions owning a named
// netdev, RDMA or block device) are drawn, with every bridge on the way to them.
const (
	KindRootComplex DeviceKind = "root complex" // a PCI host bridge (sysfs pciDDDD:BB)
	KindBridge      DeviceKind = "bridge"       // root port, switch port or other PCI bridge
	KindGPU         DeviceKind = "GPU"          // NVIDIA display or 3D controller
	KindNIC         DeviceKind = "NIC"          // network controller of any vendor
	KindNVMe        DeviceKind = "NVMe"         // NVM Express controller (class 0x0108)
	KindStorage     DeviceKind = "storage"      // other mass storage controller (virtio-blk, SATA, ...)
	KindOther       DeviceKind = "other"        // anything else
)

// ErrNoPCITree says the machine (or the --root tree) shows no PCI devices to draw. The
// wrapping error names what was missing.
var ErrNoPCITree = errors.New("no PCI device tree")

// PCILink is the speed and width of a PCIe link.
type PCILink struct {
	GTs   float64 // transfer rate per lane in GT/s (2.5, 5, 8, 16, 32, 64); 0 when unknown
	Width int     // lanes; 0 when unknown
}

// Known reports whether both the speed and the width are known.
func (l PCILink) Known() bool { return l.GTs > 0 && l.Width > 0 }

// String formats the link as "16 GT/s x16" (or only the half that is known, or "").
func (l PCILink) String() string {
	var parts []string
	if l.GTs > 0 {
		parts = append(parts, strconv.FormatFloat(l.GTs, 'f', -1, 64)+" GT/s")
	}
	if l.Width > 0 {
		parts = append(parts, fmt.Sprintf("x%d", l.Width))
	}
	return strings.Join(parts, " ")
}

// Gbps is the link's usable bandwidth per direction in Gb/s after line encoding (8b/10b up
// to 5 GT/s, 128b/130b from 8 GT/s); 0 when the link is not fully known. It only ranks
// links: protocol overhead is left out.
func (l PCILink) Gbps() float64 {
	if !l.Known() {
		return 0
	}
	eff := 128.0 / 130
	if l.GTs <= 5 {
		eff = 0.8
	}
	return l.GTs * float64(l.Width) * eff
}

// genGTs maps the PCIe link speed codes of LnkCap/LnkSta (1 = 2.5 GT/s …) to GT/s.
var genGTs = [...]float64{0, 2.5, 5, 8, 16, 32, 64}

// TopoNode is one box of the schematic: a root complex or a PCI function.
type TopoNode struct {
	Name      string      // PCI address (0000:01:00.0), or the host bridge's sysfs name (pci0000:00)
	Kind      DeviceKind  // what it is
	Port      string      // bridges: "root port", "switch upstream port", "switch downstream port", "PCIe-PCI bridge" or "bridge"
	Vendor    uint16      // PCI vendor id
	Device    uint16      // PCI device id
	Class     uint32      // 24-bit class code
	NUMANode  int         // -1 when the firmware does not say
	Driver    string      // bound driver, "" when none
	NVIDIA    bool        // an NVIDIA GPU or an NVIDIA (Mellanox, vendor 0x15b3) NIC
	Link      PCILink     // link as trained now (current_link_*): an endpoint's or upstream port's own link, a root or downstream port's link below it
	MaxLink   PCILink     // the most the function supports (max_link_*)
	NetDevs   []string    // network interfaces
	RDMADevs  []string    // RDMA (infiniband class) devices
	BlockDevs []string    // block devices (NVMe namespaces, virtio disks, ...)
	VFs       int         // SR-IOV virtual functions of this function (not drawn one by one)
	Parent    *TopoNode   // the bridge or root complex above; nil for a root complex
	Children  []*TopoNode // what is drawn below it, by name

	pci PCIDevice // the sysfs function (Dir alone for a root complex), for PCIeDistance
}

// Names lists the node's netdevs, RDMA devices and block devices, in that order.
func (n *TopoNode) Names() []string {
	return slices.Concat(n.NetDevs, n.RDMADevs, n.BlockDevs)
}

// Label is how findings name the node: its first netdev, RDMA or block device, then the
// address (the same form the other checks use for NICs).
func (n *TopoNode) Label() string {
	var parts []string
	for _, l := range [][]string{n.NetDevs, n.RDMADevs, n.BlockDevs} {
		if len(l) > 0 {
			parts = append(parts, l[0])
		}
	}
	return strings.Join(append(parts, n.Name), " ")
}

// TopoPath is the PCIe relationship between a GPU and a NIC or NVMe drive.
type TopoPath struct {
	GPU       *TopoNode // an NVIDIA GPU
	Peer      *TopoNode // a NIC or an NVMe drive
	Class     string    // PIX, PXB, PHB, NODE or SYS, as nvidia-smi topo -m names them
	Slowest   PCILink   // slowest known link the traffic crosses; zero when none is known
	SlowestAt string    // the function whose link that is
}

// PCITopology is the machine's PCIe tree, pruned to what matters for packet I/O, and the
// GPU↔I/O paths through it.
type PCITopology struct {
	Host    string      // host name, when the tree shows one
	Roots   []*TopoNode // root complexes with something drawn below them, by name
	Devices []*TopoNode // every drawn PCI function, by address
	Paths   []TopoPath  // every GPU with every NIC and NVMe drive: by GPU, then nearest first
}

// maxTopoDepth bounds walks up the sysfs directory chain (real trees are < 10 deep).
const maxTopoDepth = 64

// PCITopology reads the PCIe tree from sysfs under the System root. The error wraps
// ErrNoPCITree when there is nothing to draw and names what was missing.
func (s *System) PCITopology() (*PCITopology, error) {
	const busDir = "/sys/bus/pci/devices"
	ents, err := os.ReadDir(s.path(busDir))
	switch {
	case err != nil && isNotExist(err):
		return nil, fmt.Errorf("%w: %s does not exist (no sysfs, or a container without /sys/bus/pci)", ErrNoPCITree, busDir)
	case err != nil:
		return nil, fmt.Errorf("%w: cannot read %s: %v", ErrNoPCITree, busDir, err)
	}
	devs, _ := s.PCIDevices() // the same directory, just read: an error here is a race
	if len(devs) == 0 {
		if len(ents) == 0 {
			return nil, fmt.Errorf("%w: %s is empty", ErrNoPCITree, busDir)
		}
		return nil, fmt.Errorf("%w: none of the %d entries of %s leads to a readable device directory (is /sys/devices missing or unreadable?)", ErrNoPCITree, len(ents), busDir)
	}

	byDir := map[string]*TopoNode{}
	var all []*TopoNode
	for _, d := range devs {
		n := s.topoNode(d)
		byDir[d.Dir] = n
		all = append(all, n)
	}
	// Parents come from the directory chain /sys/devices/pci0000:00/<root port>/<switch
	// ports>/<function>, the same chain PCIeDistance compares. A bridge missing from
	// /sys/bus/pci/devices (seen with some hot-plug controllers) is read in place; the
	// directory that is no PCI address is the host bridge, i.e. the root complex.
	roots := map[string]*TopoNode{}
	for i := 0; i < len(all); i++ { // all grows while missing bridges are added
		n := all[i]
		pdir := filepath.Dir(n.pci.Dir)
		if p, ok := byDir[pdir]; ok {
			n.Parent = p
			continue
		}
		if b := filepath.Base(pdir); IsBDF(b) {
			d, err := pciDeviceAt(b, pdir)
			if err != nil {
				d = PCIDevice{BDF: b, Dir: pdir, NUMANode: -1}
			}
			p := s.topoNode(d)
			byDir[pdir] = p
			all = append(all, p)
			n.Parent = p
			continue
		}
		rc := roots[pdir]
		if rc == nil {
			rc = &TopoNode{Name: filepath.Base(pdir), Kind: KindRootComplex, NUMANode: -1, pci: PCIDevice{Dir: pdir, NUMANode: -1}}
			roots[pdir] = rc
		}
		if rc.NUMANode < 0 && n.NUMANode >= 0 {
			// A host bridge has no numa_node file; the functions on its root bus share its node.
			rc.NUMANode = n.NUMANode
		}
		n.Parent = rc
	}
	for _, n := range all {
		if n.Kind == KindBridge && n.Port == "" {
			// Config space beyond 64 bytes (the port type) needs root; say what the tree shows.
			n.Port = "bridge"
			if n.Parent != nil && n.Parent.Kind == KindRootComplex {
				n.Port = "root port"
			}
		}
	}

	// Virtual functions are counted on their physical function rather than drawn: a NIC
	// with 127 VFs would otherwise bury the tree.
	for _, n := range all {
		if !n.pci.VF {
			continue
		}
		if pf, err := filepath.EvalSymlinks(filepath.Join(n.pci.Dir, "physfn")); err == nil {
			if p, ok := byDir[pf]; ok {
				p.VFs++
			}
		}
	}

	// Names: the device directory's own net/ and infiniband/ entries were read with the
	// function; the class directories add those that hang below an intermediate device
	// (virtio-net's virtioN/net/eth0) and the block devices.
	s.attachClassNames(byDir, "/sys/class/net", func(n *TopoNode, name string) { n.NetDevs = addName(n.NetDevs, name) })
	s.attachClassNames(byDir, "/sys/class/infiniband", func(n *TopoNode, name string) { n.RDMADevs = addName(n.RDMADevs, name) })
	s.attachClassNames(byDir, "/sys/block", func(n *TopoNode, name string) { n.BlockDevs = addName(n.BlockDevs, name) })
	for _, n := range all {
		if n.Kind == KindNVMe {
			// With native NVMe multipath /sys/block/nvme0n1 lives under
			// /sys/devices/virtual/nvme-subsystem; the controller keeps nvme0c0n1.
			for _, ns := range nvmeNamespaces(n.pci.Dir) {
				n.BlockDevs = addName(n.BlockDevs, ns)
			}
		}
	}

	// Keep what matters and every bridge on the way to it.
	kept := map[*TopoNode]bool{}
	for _, n := range all {
		if n.pci.VF || !interesting(n) {
			continue
		}
		for p, i := n, 0; p != nil && !kept[p] && i < maxTopoDepth; p, i = p.Parent, i+1 {
			kept[p] = true
		}
	}
	t := &PCITopology{}
	t.Host, _ = s.readString("/proc/sys/kernel/hostname")
	for _, n := range all {
		if !kept[n] {
			continue
		}
		t.Devices = append(t.Devices, n)
		if n.Parent != nil {
			n.Parent.Children = append(n.Parent.Children, n)
		}
	}
	for _, rc := range roots {
		if kept[rc] {
			t.Roots = append(t.Roots, rc)
		}
	}
	byName := func(a, b *TopoNode) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(t.Roots, byName)
	slices.SortFunc(t.Devices, byName)
	for _, n := range append(slices.Clone(t.Roots), t.Devices...) {
		slices.SortFunc(n.Children, byName)
	}
	t.Paths = topoPaths(t.Devices)
	return t, nil
}

// interesting reports the functions the schematic is drawn for.
func interesting(n *TopoNode) bool {
	switch n.Kind {
	case KindGPU, KindNIC, KindNVMe:
		return true
	case KindBridge, KindRootComplex:
		return false
	}
	// A virtio disk or an odd NIC-like function: whatever owns a named device is shown.
	return len(n.NetDevs)+len(n.RDMADevs)+len(n.BlockDevs) > 0
}

// kindOf classifies a function by vendor and class code.
func kindOf(d PCIDevice) DeviceKind {
	switch {
	case d.IsNVIDIAGPU():
		return KindGPU
	case d.BaseClass() == classNetwork:
		return KindNIC
	case d.Class>>8 == classNVMe:
		return KindNVMe
	case d.BaseClass() == classBridge:
		return KindBridge
	case d.BaseClass() == classStorage:
		return KindStorage
	}
	return KindOther
}

// Class codes the schematic tells apart beyond those in pci.go.
const (
	classStorage = 0x01   // mass storage controller
	classNVMe    = 0x0108 // non-volatile memory controller (base and sub class)
)

// topoNode builds the node of one function: kind, port type and links.
func (s *System) topoNode(d PCIDevice) *TopoNode {
	n := &TopoNode{Name: d.BDF, Kind: kindOf(d), Vendor: d.Vendor, Device: d.Device, Class: d.Class,
		NUMANode: d.NUMANode, Driver: d.Driver, NetDevs: slices.Clone(d.NetDevs), RDMADevs: slices.Clone(d.RDMADevs), pci: d}
	n.NVIDIA = d.IsNVIDIAGPU() || d.IsNVIDIANIC()
	n.Link = readLink(d.Dir, "current_link_speed", "current_link_width")
	n.MaxLink = readLink(d.Dir, "max_link_speed", "max_link_width")
	c, err := s.pcieCap(d)
	if err == nil {
		// Older kernels lack the sysfs link files; config space has the same registers.
		if n.Link.GTs == 0 && c.LinkGen() < len(genGTs) {
			n.Link.GTs = genGTs[c.LinkGen()]
		}
		if n.Link.Width == 0 {
			n.Link.Width = c.LinkWidth()
		}
		if g := int(c.LnkCap & 0xf); n.MaxLink.GTs == 0 && g < len(genGTs) {
			n.MaxLink.GTs = genGTs[g]
		}
		if n.MaxLink.Width == 0 {
			n.MaxLink.Width = int(c.LnkCap>>4) & 0x3f
		}
		if n.Kind == KindBridge {
			n.Port = portNames[c.Type]
		}
	}
	return n
}

// portNames names the PCI_EXP_FLAGS_TYPE values of bridges.
var portNames = map[int]string{
	expTypeRootPort:   "root port",
	expTypeUpstream:   "switch upstream port",
	expTypeDownstream: "switch downstream port",
	0x7:               "PCIe-PCI bridge",
	0x8:               "PCI-PCIe bridge",
}

// readLink reads a speed file ("16.0 GT/s PCIe", "8 GT/s", "Unknown") and a width file
// ("16") from a function's sysfs directory. Missing or odd values are left at zero.
func readLink(dir, speedFile, widthFile string) PCILink {
	var l PCILink
	if b, err := os.ReadFile(filepath.Join(dir, speedFile)); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil && v > 0 && v < 1000 {
				l.GTs = v
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, widthFile)); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 && v <= 32 {
			l.Width = v
		}
	}
	return l
}

// maxClassEntries bounds the scan of one class directory.
const maxClassEntries = 4096

// attachClassNames resolves every entry of a class directory (/sys/class/net/eth0 →
// /sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0) and gives its name to the nearest
// PCI function above it. Virtual devices (lo, loop0) have none and are skipped.
func (s *System) attachClassNames(byDir map[string]*TopoNode, class string, add func(*TopoNode, string)) {
	ents, err := os.ReadDir(s.path(class))
	if err != nil {
		return // a machine without RDMA has no /sys/class/infiniband
	}
	for i, e := range ents {
		if i >= maxClassEntries {
			break
		}
		dir, err := filepath.EvalSymlinks(filepath.Join(s.path(class), e.Name()))
		if err != nil {
			continue
		}
		for j := 0; j < maxTopoDepth; j++ {
			if n, ok := byDir[dir]; ok {
				if !n.pci.VF {
					add(n, e.Name())
				}
				break
			}
			up := filepath.Dir(dir)
			if up == dir {
				break
			}
			dir = up
		}
	}
}

// nvmeNsRe matches NVMe namespace directories below a controller: nvme0n1, or nvme0c0n1
// (controller 0's path to the multipath namespace nvme0n1).
var nvmeNsRe = regexp.MustCompile(`^nvme(\d+)(c\d+)?n(\d+)$`)

// nvmeNamespaces lists the block devices of an NVMe controller (dir/nvme/nvmeN/…),
// naming multipath paths by the namespace users see (nvme0c0n1 → nvme0n1).
func nvmeNamespaces(dir string) []string {
	var out []string
	for _, ctrl := range dirNames(filepath.Join(dir, "nvme")) {
		for _, e := range dirNames(filepath.Join(dir, "nvme", ctrl)) {
			if m := nvmeNsRe.FindStringSubmatch(e); m != nil {
				out = addName(out, "nvme"+m[1]+"n"+m[3])
			}
		}
	}
	return out
}

// addName adds a name to a sorted list unless it is there already.
func addName(list []string, name string) []string {
	i, found := slices.BinarySearch(list, name)
	if found {
		return list
	}
	return slices.Insert(list, i, name)
}

// topoPaths pairs every GPU with every NIC and NVMe drive.
func topoPaths(devs []*TopoNode) []TopoPath {
	var out []TopoPath
	for _, g := range devs {
		if g.Kind != KindGPU {
			continue
		}
		for _, p := range devs {
			if p.Kind != KindNIC && p.Kind != KindNVMe {
				continue
			}
			l, at := slowestLink(g, p)
			out = append(out, TopoPath{GPU: g, Peer: p, Class: PCIeDistance(g.pci, p.pci), Slowest: l, SlowestAt: at})
		}
	}
	slices.SortStableFunc(out, func(a, b TopoPath) int {
		if c := strings.Compare(a.GPU.Name, b.GPU.Name); c != 0 {
			return c
		}
		if c := topoRank[a.Class] - topoRank[b.Class]; c != 0 {
			return c
		}
		return strings.Compare(a.Peer.Name, b.Peer.Name)
	})
	return out
}

// slowestLink finds the slowest known link between two functions. A function's own link
// attributes describe the link to its upstream port (endpoints, switch upstream ports) or
// the link below it (root and downstream ports); either way every function on the way up
// to the nearest common ancestor, that ancestor excluded, names a link the traffic crosses.
func slowestLink(a, b *TopoNode) (PCILink, string) {
	chain := func(n *TopoNode) []*TopoNode {
		var out []*TopoNode
		for i := 0; n != nil && n.Kind != KindRootComplex && i < maxTopoDepth; n, i = n.Parent, i+1 {
			out = append(out, n)
		}
		return out
	}
	ca, cb := chain(a), chain(b)
	var common *TopoNode
	for _, n := range ca {
		if slices.Contains(cb, n) {
			common = n
			break
		}
	}
	var best PCILink
	at := ""
	for _, c := range [][]*TopoNode{ca, cb} {
		for _, n := range c {
			if n == common {
				break
			}
			if n.Link.Known() && (!best.Known() || n.Link.Gbps() < best.Gbps()) {
				best, at = n.Link, n.Name
			}
		}
	}
	return best, at
}

// SchematicFile is the file `daqiri-tune check schematic` writes when not told otherwise.
const SchematicFile = "pcie_schematic.svg"

// CheckSchematic reads the PCIe tree, writes it as an SVG picture to s.SchematicOutput
// (nothing is written when that is empty) and reports each GPU's nearest NVIDIA NIC
// (upstream --check schematic). The verdicts match the topo check: a GPU whose nearest
// NVIDIA NIC is not under a common PCIe switch is a warning.
func (s *System) CheckSchematic() []Finding {
	const name = "schematic"
	t, err := s.PCITopology()
	if err != nil {
		return []Finding{{Check: name, Subject: "PCIe tree", Status: StatusSkip, Measured: "no PCI tree", Message: err.Error()}}
	}
	count := map[DeviceKind]int{}
	nvidiaNICs := 0
	for _, n := range t.Devices {
		count[n.Kind]++
		if n.Kind == KindNIC && n.NVIDIA {
			nvidiaNICs++
		}
	}
	tree := Finding{Check: name, Subject: "PCIe tree", Status: StatusOK,
		Measured: fmt.Sprintf("%s under %s", plural(len(t.Devices), "device"), plural(len(t.Roots), "root complex"))}
	var kinds []string
	for _, k := range []DeviceKind{KindGPU, KindNIC, KindNVMe, KindStorage, KindOther, KindBridge} {
		if count[k] == 0 {
			continue
		}
		s := plural(count[k], string(k))
		if k == KindNIC {
			s += fmt.Sprintf(" (%d NVIDIA)", nvidiaNICs)
		}
		kinds = append(kinds, s)
	}
	tree.Message = strings.Join(kinds, ", ")
	if len(t.Devices) == 0 {
		tree.Measured = "no GPU, NIC or NVMe"
		tree.Message = "no PCI function under /sys/bus/pci/devices is a GPU, NIC, NVMe drive or owns a named network or block device"
	}
	if out := s.SchematicOutput; out != "" {
		if err := writeSchematic(out, t, s.SchematicNamed); err != nil {
			tree.Status, tree.Measured = StatusFail, "not written"
			tree.Message = fmt.Sprintf("cannot write the schematic: %v", err)
		} else {
			tree.Measured = fmt.Sprintf("wrote %s (%s)", out, plural(len(t.Devices), "device"))
			if !strings.EqualFold(filepath.Ext(out), ".svg") {
				tree.Message += "; the file is SVG whatever its name says"
			}
		}
	} else {
		tree.Message += "; no picture written (pass --schematic-output FILE.svg to draw the tree)"
	}
	out := []Finding{tree}

	gpus, why := s.gpus()
	if len(gpus) == 0 {
		return append(out, noGPU(name, why)...)
	}
	byName := map[string]*TopoNode{}
	for _, n := range t.Devices {
		byName[n.Name] = n
	}
	for _, g := range gpus {
		if g.PCI != nil && g.PCI.VF && !g.HasFacts {
			continue // an SR-IOV GPU function of a host: its physical function speaks for it
		}
		f := Finding{Check: name, Subject: g.subject()}
		node := byName[g.BusID]
		if node == nil || g.PCI == nil {
			f.Status, f.Measured = StatusSkip, "not in sysfs"
			f.Message = "the GPU's PCI function is not visible under /sys/bus/pci/devices (container or VM?)"
			out = append(out, f)
			continue
		}
		nic, other, nvme := nearestPaths(t.Paths, node)
		var notes []string
		switch {
		case g.Integrated == Yes:
			// As in the topo check: unified memory makes the PCIe path moot. Say what it is.
			f.Status, f.Measured = StatusSkip, "integrated GPU"
			notes = append(notes, sparkGuidance)
			if nic != nil {
				notes = append(notes, fmt.Sprintf("nearest NVIDIA NIC: %s to %s", nic.Class, nic.Peer.Label()))
			}
		case nic == nil:
			f.Status, f.Measured, f.Recommended = StatusSkip, "no NVIDIA NIC", "PIX or PXB"
			notes = append(notes, "no NVIDIA (Mellanox, vendor 0x15b3) NIC to pair this GPU with for GPUDirect RDMA")
			if other != nil {
				notes = append(notes, fmt.Sprintf("nearest NIC: %s to %s (not NVIDIA)", other.Class, other.Peer.Label()))
			}
		default:
			f.Measured, f.Recommended = nic.Class+" to "+nic.Peer.Label(), "PIX or PXB"
			if topoRank[nic.Class] <= topoRank[topoPXB] {
				f.Status = StatusOK
			} else {
				f.Status = StatusWarn
				notes = append(notes, "GPUDirect traffic between this GPU and the nearest NVIDIA NIC crosses the CPU; peer-to-peer bandwidth suffers")
				f.Fix = "hardware: put the GPU and the NIC under one PCIe switch (slots of one riser/switch)"
			}
			notes = append(notes, "slowest link on the path: "+linkNote(t, *nic))
		}
		if nvme != nil {
			notes = append(notes, fmt.Sprintf("nearest NVMe: %s to %s", nvme.Class, nvme.Peer.Label()))
		}
		f.Message = strings.Join(notes, "; ")
		out = append(out, f)
	}
	return out
}

// nearestPaths picks a GPU's nearest NVIDIA NIC, nearest other NIC and nearest NVMe drive
// (paths are sorted nearest first; among equals the faster slowest link wins).
func nearestPaths(paths []TopoPath, gpu *TopoNode) (nic, other, nvme *TopoPath) {
	better := func(cur *TopoPath, p *TopoPath) bool {
		return cur == nil || topoRank[p.Class] < topoRank[cur.Class] ||
			(topoRank[p.Class] == topoRank[cur.Class] && p.Slowest.Gbps() > cur.Slowest.Gbps())
	}
	for i := range paths {
		p := &paths[i]
		if p.GPU != gpu {
			continue
		}
		switch {
		case p.Peer.Kind == KindNVMe:
			if better(nvme, p) {
				nvme = p
			}
		case p.Peer.NVIDIA:
			if better(nic, p) {
				nic = p
			}
		default:
			if better(other, p) {
				other = p
			}
		}
	}
	return nic, other, nvme
}

// linkNote describes a path's slowest link, and says so when it runs below what it can do
// (GPUs lower their link speed when idle, so a slow link is not always a fault).
func linkNote(t *PCITopology, p TopoPath) string {
	if !p.Slowest.Known() {
		return "unknown (no link speed in sysfs)"
	}
	s := p.Slowest.String() + " at " + p.SlowestAt
	for _, n := range t.Devices {
		if n.Name == p.SlowestAt && n.MaxLink.Known() && n.MaxLink.Gbps() > p.Slowest.Gbps() {
			s += " (capable of " + n.MaxLink.String() + "; idle GPUs lower their link speed)"
		}
	}
	return s
}

// writeSchematic renders the SVG picture and then writes it to a file: rendering cannot
// fail half way through the file, and a device path (/dev/stdout) is written, not replaced.
// Unless named says the user chose the path, a symbolic link or a file that is not regular
// is refused (O_NOFOLLOW; O_NONBLOCK so that a FIFO is refused, not waited on).
func writeSchematic(path string, t *PCITopology, named bool) error {
	var b bytes.Buffer
	if err := t.WriteSVG(&b); err != nil {
		return err
	}
	if named {
		return os.WriteFile(path, b.Bytes(), 0o644)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("%s is a symbolic link; not writing through it (name the output with --schematic-output to write there)", path)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return err
	} else if !st.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file; not writing to it (name the output with --schematic-output to write there)", path)
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		return err
	}
	return f.Close()
}

// plural formats a count with its noun: "1 device", "2 devices", "3 root complexes",
// "2 NVMe" (abbreviations of mass nouns and mass nouns stay as they are).
func plural(n int, noun string) string {
	switch {
	case n == 1, noun == "NVMe", noun == "storage", noun == "other":
	case strings.HasSuffix(noun, "x"):
		noun += "es"
	default:
		noun += "s"
	}
	return fmt.Sprintf("%d %s", n, noun)
}
