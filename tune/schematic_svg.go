package tune

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// The picture is a left-to-right tree: root complexes in the first column, then bridges,
// then devices, one box per function, with elbow lines from each parent to its children.
// Below it come the GPU↔I/O path summary and a legend. Plain SVG written with fmt keeps the
// tool free of dependencies (upstream's PNG needs Pillow); every browser shows it.

// Layout in SVG user units (pixels).
const (
	svgMargin   = 20
	svgHeader   = 64  // title and legend above the tree
	svgBoxW     = 280 // box width: ~40 characters of 11 px monospace
	svgBoxH     = 82  // box height: five lines of text
	svgColGap   = 56
	svgRowGap   = 12
	svgLineH    = 14
	svgRootGap  = 16 // extra space between root complexes
	svgMaxChars = 40 // longest text line in a box
)

// boxStyle is the fill, stroke and text colour of a box.
type boxStyle struct{ fill, stroke, text string }

// nvidiaGreen is NVIDIA's brand colour: GPUs are filled with it, NVIDIA NICs outlined.
const nvidiaGreen = "#76b900"

func styleOf(n *TopoNode) boxStyle {
	switch {
	case n.Kind == KindRootComplex:
		return boxStyle{"#3c3c3c", "#3c3c3c", "#ffffff"}
	case n.Kind == KindGPU:
		return boxStyle{nvidiaGreen, "#4a7500", "#000000"}
	case n.Kind == KindNIC && n.NVIDIA:
		return boxStyle{"#d7f0a8", nvidiaGreen, "#000000"}
	case n.Kind == KindNIC:
		return boxStyle{"#d6e6f7", "#5b8ac4", "#000000"}
	case n.Kind == KindNVMe, n.Kind == KindStorage:
		return boxStyle{"#f7e1c0", "#c08a3e", "#000000"}
	case n.Kind == KindBridge:
		return boxStyle{"#eeeeee", "#999999", "#000000"}
	}
	return boxStyle{"#ffffff", "#999999", "#000000"}
}

// esc escapes text for XML character data and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}

// clip shortens a line to what fits in a box.
func clip(s string) string {
	r := []rune(s)
	if len(r) <= svgMaxChars {
		return s
	}
	return string(r[:svgMaxChars-1]) + "…"
}

// boxLines is the text of a node's box: heading, ids and driver, names, link, NUMA node.
func boxLines(n *TopoNode) (lines []string, slow bool) {
	numa := "NUMA node ?"
	if n.NUMANode >= 0 {
		numa = fmt.Sprintf("NUMA node %d", n.NUMANode)
	}
	if n.Kind == KindRootComplex {
		return []string{n.Name, "root complex (host bridge)", numa}, false
	}
	head := n.Name + "  " + string(n.Kind)
	if n.Kind == KindBridge {
		head = n.Name + "  " + n.Port
	}
	if n.NVIDIA {
		head += " (NVIDIA)"
	}
	ids := fmt.Sprintf("%04x:%04x class %06x", n.Vendor, n.Device, n.Class)
	if n.Driver != "" {
		ids += "  " + n.Driver
	}
	names := strings.Join(n.Names(), " ")
	if n.VFs > 0 {
		names = strings.TrimSpace(fmt.Sprintf("%s +%d VFs", names, n.VFs))
	}
	link := "link: " + n.Link.String()
	switch {
	case !n.Link.Known() && !n.MaxLink.Known():
		link = "link: not reported"
	case n.MaxLink.Known() && n.MaxLink != n.Link:
		link += " (max " + n.MaxLink.String() + ")"
		// A narrower link than both ends support is a seating or riser fault; a lower speed
		// alone is often power saving.
		slow = n.Link.Width > 0 && n.Link.Width < n.MaxLink.Width
	}
	return []string{head, ids, names, link, numa}, slow
}

// WriteSVG draws the tree and the GPU↔I/O path summary as an SVG document.
func (t *PCITopology) WriteSVG(w io.Writer) error {
	type pos struct{ x, y int }
	at := map[*TopoNode]pos{}
	y := svgMargin + svgHeader
	maxDepth := 0
	// place gives leaves consecutive rows and centres each parent on its children.
	var place func(n *TopoNode, depth int) int
	place = func(n *TopoNode, depth int) int {
		maxDepth = max(maxDepth, depth)
		x := svgMargin + depth*(svgBoxW+svgColGap)
		var top int
		if len(n.Children) == 0 || depth >= maxTopoDepth {
			top = y
			y += svgBoxH + svgRowGap
		} else {
			first := place(n.Children[0], depth+1)
			last := first
			for _, c := range n.Children[1:] {
				last = place(c, depth+1)
			}
			top = (first + last) / 2
		}
		at[n] = pos{x, top}
		return top
	}
	for _, r := range t.Roots {
		place(r, 0)
		y += svgRootGap
	}
	treeBottom := y

	var summary []string
	for _, p := range t.Paths {
		s := fmt.Sprintf("GPU %s ↔ %s %s: %s", p.GPU.Name, p.Peer.Kind, p.Peer.Label(), p.Class)
		if p.Slowest.Known() {
			s += fmt.Sprintf(", slowest link %s at %s", p.Slowest, p.SlowestAt)
		}
		summary = append(summary, s)
	}
	if len(summary) == 0 {
		summary = []string{"no NVIDIA GPU in the tree, so no GPU ↔ NIC/NVMe paths"}
		if len(t.Devices) == 0 {
			summary = []string{"no GPU, NIC or NVMe drive under /sys/bus/pci/devices"}
		}
	}
	width := max(2*svgMargin+(maxDepth+1)*(svgBoxW+svgColGap), 960)
	height := treeBottom + 2*svgLineH + (len(summary)+4)*svgLineH + svgMargin

	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="11">`+"\n", width, height, width, height)
	title := "PCIe topology"
	if t.Host != "" {
		title += " of " + t.Host
	}
	p("<title>%s</title>\n", esc(title))
	p(`<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	p(`<text x="%d" y="%d" font-size="16" font-weight="bold">%s</text>`+"\n", svgMargin, svgMargin+14, esc(title))
	p(`<text x="%d" y="%d" fill="#444444">%s</text>`+"\n", svgMargin, svgMargin+34,
		esc(fmt.Sprintf("%s under %s; drawn: GPUs, NICs, NVMe drives, functions with named network/block devices, and the bridges above them",
			plural(len(t.Devices), "device"), plural(len(t.Roots), "root complex"))))
	// Legend swatches.
	lx := svgMargin
	for _, l := range []struct {
		label string
		n     TopoNode
	}{
		{"NVIDIA GPU", TopoNode{Kind: KindGPU, NVIDIA: true}},
		{"NVIDIA NIC", TopoNode{Kind: KindNIC, NVIDIA: true}},
		{"other NIC", TopoNode{Kind: KindNIC}},
		{"NVMe / storage", TopoNode{Kind: KindNVMe}},
		{"bridge / port", TopoNode{Kind: KindBridge}},
		{"root complex", TopoNode{Kind: KindRootComplex}},
	} {
		st := styleOf(&l.n)
		p(`<rect x="%d" y="%d" width="12" height="12" fill="%s" stroke="%s"/>`, lx, svgMargin+42, st.fill, st.stroke)
		p(`<text x="%d" y="%d">%s</text>`+"\n", lx+16, svgMargin+52, esc(l.label))
		lx += 24 + 7*len(l.label) + 16
	}

	// Lines first, so boxes cover their ends.
	nodes := append(append([]*TopoNode(nil), t.Roots...), t.Devices...)
	p(`<g fill="none" stroke="#777777" stroke-width="1.2">` + "\n")
	for _, n := range nodes {
		a, ok := at[n]
		if !ok {
			continue
		}
		for _, c := range n.Children {
			b, ok := at[c]
			if !ok {
				continue
			}
			x1, y1 := a.x+svgBoxW, a.y+svgBoxH/2
			x2, y2 := b.x, b.y+svgBoxH/2
			xm := x1 + svgColGap/2
			p(`<path d="M%d %d H%d V%d H%d"/>`+"\n", x1, y1, xm, y2, x2)
		}
	}
	p("</g>\n")

	for _, n := range nodes {
		a, ok := at[n]
		if !ok {
			continue
		}
		st := styleOf(n)
		lines, narrow := boxLines(n)
		p(`<g id="%s">`, esc("dev-"+strings.NewReplacer(":", "_", ".", "_").Replace(n.Name)))
		p("<title>%s</title>", esc(strings.Join(append([]string{n.Name, string(n.Kind)}, n.Names()...), " ")))
		sw := "1"
		if n.NVIDIA {
			sw = "2.5"
		}
		p(`<rect x="%d" y="%d" width="%d" height="%d" rx="6" fill="%s" stroke="%s" stroke-width="%s"/>`, a.x, a.y, svgBoxW, svgBoxH, st.fill, st.stroke, sw)
		for i, l := range lines {
			attrs := fmt.Sprintf(`fill="%s"`, st.text)
			if i == 0 {
				attrs += ` font-weight="bold"`
			}
			if i == 3 && narrow {
				attrs = `fill="#c00000" font-weight="bold"`
			}
			p(`<text x="%d" y="%d" %s>%s</text>`, a.x+8, a.y+16+i*svgLineH, attrs, esc(clip(l)))
		}
		p("</g>\n")
	}

	ty := treeBottom + svgLineH
	p(`<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", svgMargin, ty, esc("GPU ↔ I/O paths (nvidia-smi topo terms)"))
	for i, s := range summary {
		p(`<text x="%d" y="%d">%s</text>`+"\n", svgMargin, ty+(i+1)*svgLineH+4, esc(s))
	}
	p(`<text x="%d" y="%d" fill="#444444">%s</text>`+"\n", svgMargin, ty+(len(summary)+2)*svgLineH+4,
		esc("PIX: under one PCIe switch · PXB: several switches, no host bridge · PHB: through the host bridge (one root complex)"))
	p(`<text x="%d" y="%d" fill="#444444">%s</text>`+"\n", svgMargin, ty+(len(summary)+3)*svgLineH+4,
		esc("NODE: across root complexes of one NUMA node · SYS: across NUMA nodes · a red link runs narrower than both ends support"))
	p("</svg>\n")
	return bw.Flush()
}
