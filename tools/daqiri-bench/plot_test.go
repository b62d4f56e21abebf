package main

import (
	"bytes"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri"
)

// svgDoc is what the tests read back from a --plot file with encoding/xml.
type svgDoc struct {
	XMLName  xml.Name      `xml:"svg"`
	Width    string        `xml:"width,attr"`
	Height   string        `xml:"height,attr"`
	ViewBox  string        `xml:"viewBox,attr"`
	Title    string        `xml:"title"`
	Polyline []svgPolyline `xml:"polyline"`
}

type svgPolyline struct {
	Class   string `xml:"class,attr"`
	Panel   string `xml:"data-panel,attr"`
	Iface   string `xml:"data-interface,attr"`
	Dir     string `xml:"data-dir,attr"`
	T       string `xml:"data-t,attr"`
	Gbps    string `xml:"data-gbps,attr"`
	Bytes   string `xml:"data-bytes,attr"`
	Packets string `xml:"data-packets,attr"`
	Dropped string `xml:"data-dropped,attr"`
	Points  string `xml:"points,attr"`
	Title   string `xml:"title"`
}

// plotRow sums the final table's queue rows of one interface and direction.
type plotRow struct{ packets, bytes, dropped uint64 }

// parseTable reads the per-queue rows of daqiri-bench's table (interface engine dir queue
// packets bytes dropped [reasons]) and sums them per interface and direction.
func parseTable(t *testing.T, out string) map[string]plotRow {
	t.Helper()
	rows := map[string]plotRow{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || (f[2] != "rx" && f[2] != "tx") {
			continue
		}
		if _, err := strconv.Atoi(f[3]); err != nil {
			continue
		}
		var v [3]uint64
		for i := range v {
			n, err := strconv.ParseUint(f[4+i], 10, 64)
			if err != nil {
				t.Fatalf("table row %q: column %d: %v", line, 5+i, err)
			}
			v[i] = n
		}
		k := f[0] + " " + f[2]
		r := rows[k]
		r.packets += v[0]
		r.bytes += v[1]
		r.dropped += v[2]
		rows[k] = r
	}
	return rows
}

func floats(t *testing.T, what, s string) []float64 {
	t.Helper()
	var out []float64
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", what, f, err)
		}
		out = append(out, v)
	}
	return out
}

func uints(t *testing.T, what, s string) []uint64 {
	t.Helper()
	var out []uint64
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", what, f, err)
		}
		out = append(out, v)
	}
	return out
}

// points parses a polyline's points attribute.
func points(t *testing.T, what, s string) (xs, ys []float64) {
	t.Helper()
	for _, p := range strings.Fields(s) {
		a, b, ok := strings.Cut(p, ",")
		if !ok {
			t.Fatalf("%s: point %q", what, p)
		}
		xs = append(xs, floats(t, what, a)...)
		ys = append(ys, floats(t, what, b)...)
	}
	return xs, ys
}

// readSVG parses a plot file and checks its structure: an SVG root with a size, one rate
// and one drops polyline per series, each polyline's points consistent with the numbers
// in its data attributes (one point per sample, x increasing with time, y inside its panel
// and decreasing as the value grows). It returns the rate and drops polylines by
// "interface dir".
func readSVG(t *testing.T, data []byte) (rate, drops map[string]svgPolyline) {
	t.Helper()
	var doc svgDoc
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the plot is not well-formed XML: %v", err)
	}
	if doc.XMLName.Space != "http://www.w3.org/2000/svg" || doc.Width == "" || doc.Height == "" || doc.ViewBox == "" {
		t.Fatalf("root element %v width %q height %q viewBox %q: not a sized SVG", doc.XMLName, doc.Width, doc.Height, doc.ViewBox)
	}
	rate, drops = map[string]svgPolyline{}, map[string]svgPolyline{}
	for _, pl := range doc.Polyline {
		if pl.Class != "series" {
			continue
		}
		k := pl.Iface + " " + pl.Dir
		ts := floats(t, k+" data-t", pl.T)
		if len(ts) == 0 || ts[0] != 0 {
			t.Fatalf("%s: times %v: want a first sample at 0", k, ts)
		}
		for i := 1; i < len(ts); i++ {
			if ts[i] <= ts[i-1] {
				t.Fatalf("%s: times not increasing at %d: %v", k, i, ts)
			}
		}
		xs, ys := points(t, k+" points", pl.Points)
		if len(xs) != len(ts) {
			t.Fatalf("%s %s panel: %d points for %d samples", k, pl.Panel, len(xs), len(ts))
		}
		var vals []float64
		top, bottom := float64(rateTop), float64(rateBottom)
		switch pl.Panel {
		case "rate":
			vals = floats(t, k+" data-gbps", pl.Gbps)
			if _, dup := rate[k]; dup {
				t.Fatalf("two rate series for %s", k)
			}
			rate[k] = pl
		case "drops":
			for _, v := range uints(t, k+" data-dropped", pl.Dropped) {
				vals = append(vals, float64(v))
			}
			top, bottom = dropTop, dropBottom
			if _, dup := drops[k]; dup {
				t.Fatalf("two drops series for %s", k)
			}
			drops[k] = pl
		default:
			t.Fatalf("%s: unknown panel %q", k, pl.Panel)
		}
		if len(vals) != len(ts) {
			t.Fatalf("%s %s: %d values for %d samples", k, pl.Panel, len(vals), len(ts))
		}
		// The points are written to 0.01 px: two values closer than that on the panel's scale
		// (at most its height over the largest value per unit) may share a y.
		maxv := 0.0
		for _, v := range vals {
			maxv = max(maxv, v)
		}
		for i := range xs {
			if xs[i] < plotLeft || xs[i] > plotLeft+plotWidth || ys[i] < top-0.01 || ys[i] > bottom+0.01 {
				t.Fatalf("%s %s: point %d (%v,%v) outside its panel", k, pl.Panel, i, xs[i], ys[i])
			}
			if i > 0 && xs[i] <= xs[i-1] {
				t.Fatalf("%s %s: x not increasing at point %d", k, pl.Panel, i)
			}
			for j := range i {
				tied := ys[i] == ys[j] && (vals[i]-vals[j])*(bottom-top)/maxv < 0.02
				if vals[i] > vals[j] && ys[i] >= ys[j] && !tied || vals[i] == vals[j] && math.Abs(ys[i]-ys[j]) > 0.011 {
					t.Fatalf("%s %s: value %v at y %v against %v at y %v: y does not follow the value", k, pl.Panel, vals[i], ys[i], vals[j], ys[j])
				}
			}
		}
	}
	for k := range rate {
		if _, ok := drops[k]; !ok {
			t.Fatalf("%s has a rate series and no drops series", k)
		}
	}
	if len(drops) != len(rate) {
		t.Fatalf("%d drops series, %d rate series", len(drops), len(rate))
	}
	return rate, drops
}

// checkSeries compares every series with the table's totals: the last sample is the
// table's packets, bytes and drops of that interface and direction, counters never go
// back, and each interval's Gb/s is its bytes over its time.
func checkSeries(t *testing.T, rate, drops map[string]svgPolyline, table map[string]plotRow) {
	t.Helper()
	if len(rate) != len(table) {
		t.Fatalf("plot series %v, table rows %v", keys(rate), table)
	}
	for k, want := range table {
		pl, ok := rate[k]
		if !ok {
			t.Fatalf("the table has %s, the plot has no series for it (series %v)", k, keys(rate))
		}
		ts := floats(t, k, pl.T)
		gb := floats(t, k, pl.Gbps)
		by := uints(t, k, pl.Bytes)
		pk := uints(t, k, pl.Packets)
		dr := uints(t, k, drops[k].Dropped)
		if len(gb) != len(ts) || len(by) != len(ts) || len(pk) != len(ts) || len(dr) != len(ts) {
			t.Fatalf("%s: series lengths t %d gbps %d bytes %d packets %d dropped %d", k, len(ts), len(gb), len(by), len(pk), len(dr))
		}
		n := len(ts) - 1
		if by[n] != want.bytes || pk[n] != want.packets || dr[n] != want.dropped {
			t.Fatalf("%s: plot ends at %d bytes %d packets %d dropped; the table says %d, %d, %d", k, by[n], pk[n], dr[n], want.bytes, want.packets, want.dropped)
		}
		if gb[0] != 0 {
			t.Fatalf("%s: first sample's rate %v, want 0 (no interval before it)", k, gb[0])
		}
		var sum float64
		for i := 1; i <= n; i++ {
			if by[i] < by[i-1] || pk[i] < pk[i-1] || dr[i] < dr[i-1] {
				t.Fatalf("%s: a counter goes back at sample %d", k, i)
			}
			want := float64(by[i]-by[i-1]) * 8 / (ts[i] - ts[i-1]) / 1e9
			if math.Abs(gb[i]-want) > 1e-3*want+1e-5 {
				t.Fatalf("%s: interval %d: %v Gb/s, its bytes and time say %v", k, i, gb[i], want)
			}
			sum += gb[i] * 1e9 / 8 * (ts[i] - ts[i-1])
		}
		if got := float64(by[n] - by[0]); math.Abs(sum-got) > 1e-3*got+1 {
			t.Fatalf("%s: the rates integrate to %.0f bytes, the counters say %.0f", k, sum, got)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestPlotMatchesTable runs the embedded default (UDP over loopback) with --plot and checks
// the SVG, parsed with encoding/xml, against the table the same run printed.
func TestPlotMatchesTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.svg")
	var out, errb bytes.Buffer
	if rc := run([]string{"--duration", "500ms", "--quiet", "--plot", path}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	table := parseTable(t, out.String())
	if len(table) != 2 || table["server rx"].packets == 0 || table["client tx"].packets == 0 {
		t.Fatalf("table rows %v from:\n%s", table, out.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rate, drops := readSVG(t, data)
	checkSeries(t, rate, drops, table)
	t.Logf("%d samples per series", len(strings.Fields(rate["server rx"].T)))
}

// TestPlotSeries draws synthetic snapshots with drops, two directions on one interface and
// names that need escaping, and checks the file against the last snapshot as the table
// would print it.
func TestPlotSeries(t *testing.T) {
	qs := func(p, b, d uint64) []daqiri.QueueStats {
		return []daqiri.QueueStats{{Packets: p, Bytes: b, Dropped: d}, {Packets: 1, Bytes: 100}}
	}
	snap := func(k uint64) daqiri.Stats {
		return daqiri.Stats{Ports: []daqiri.PortStats{
			{Name: `a<&"b>`, Engine: "xdp", Rx: qs(k*1000, k*1_500_000, k*k), Tx: qs(k*10, k*15_000, 0)},
			{Name: "idle", Engine: "socket", Rx: qs(0, 0, 0)},
		}}
	}
	var samples []plotSample
	for k := uint64(0); k <= 20; k++ {
		samples = append(samples, plotSample{t: float64(k) * 0.25, st: snap(k)})
	}
	var buf bytes.Buffer
	writeSVG(&buf, "synthetic <run>", buildSeries(samples))
	rate, drops := readSVG(t, buf.Bytes())
	table := map[string]plotRow{}
	for _, p := range snap(20).Ports {
		for dir, q := range map[string][]daqiri.QueueStats{"rx": p.Rx, "tx": p.Tx} {
			if len(q) == 0 {
				continue
			}
			var r plotRow
			for _, s := range q {
				r.packets += s.Packets
				r.bytes += s.Bytes
				r.dropped += s.Dropped
			}
			table[p.Name+" "+dir] = r
		}
	}
	checkSeries(t, rate, drops, table)
	if g := floats(t, "gbps", rate[`a<&"b> rx`].Gbps); math.Abs(g[5]-(1_500_000*8/0.25/1e9)) > 1e-6 {
		t.Fatalf("rx rate %v, want 0.048 Gb/s", g[5])
	}
	// No samples at all (a run that failed before sending): still a valid, sized SVG.
	buf.Reset()
	writeSVG(&buf, "empty", buildSeries(nil))
	if r, _ := readSVG(t, buf.Bytes()); len(r) != 0 || !strings.Contains(buf.String(), "no samples") {
		t.Fatalf("empty plot: %d series\n%s", len(r), buf.String())
	}
}

// TestPlotBadPath: a --plot file that cannot be created fails before the run, naming the
// flag, and leaves nothing behind.
func TestPlotBadPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "run.svg")
	var out, errb bytes.Buffer
	if rc := run([]string{"--duration", "10s", "--plot", path}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "--plot") || !strings.Contains(errb.String(), "no-such-dir") {
		t.Fatalf("rc %d, stderr %q", rc, errb.String())
	}
	if out.Len() != 0 {
		t.Fatalf("the run started: %q", out.String())
	}
}

// TestNiceMax: axis ranges are round numbers at or above the data.
func TestNiceMax(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0, 1}, {-3, 1}, {math.NaN(), 1}, {1, 1}, {1.01, 1.2}, {2.05, 2.5}, {38.3, 40}, {0.048, 0.05}, {101, 120}, {9.1, 10},
	} {
		if got := niceMax(c.in); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("niceMax(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
