package main

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/daqiri-go/daqiri"
)

// plotter records every interface's counters over a run for --plot and writes them as an
// SVG chart (standard library only, so the bench links no plotting package): TX and RX
// Gb/s per interface over time in the upper panel, each interface's dropped packets
// (cumulative) in the lower one. The numbers are the interface counters the final table
// shows (Session.Stats: per queue, summed per interface and direction), sampled on a ticker
// of the plotter's own, so the last sample of a series is the table's total for it.
type plotter struct {
	path     string
	f        *os.File
	interval time.Duration

	mu      sync.Mutex
	samples []plotSample
	stop    chan struct{}
	done    chan struct{}
}

// plotSample is one snapshot: seconds since the start of sending, and Session.Stats.
type plotSample struct {
	t  float64
	st daqiri.Stats
}

// plotPoints is the number of samples a run aims for: one per interval of duration/200,
// between 50 ms and 1 s (the live line's period).
const plotPoints = 200

// newPlotter creates path at once, so that a path that cannot be written fails before the
// run rather than after it.
func newPlotter(path string, duration time.Duration) (*plotter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--plot: %w", err)
	}
	iv := min(max(duration/plotPoints, 50*time.Millisecond), time.Second)
	return &plotter{path: path, f: f, interval: iv}, nil
}

// begin takes the first sample (time zero) and starts sampling s every interval until end.
// A nil plotter (no --plot) does nothing.
func (p *plotter) begin(s *daqiri.Session, start time.Time) {
	if p == nil {
		return
	}
	p.add(0, s.Stats())
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		tick := time.NewTicker(p.interval)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case now := <-tick.C:
				p.add(now.Sub(start).Seconds(), s.Stats())
			}
		}
	}()
}

// end stops sampling and adds the final snapshot, the one the table prints, taken at
// elapsed seconds since the start.
func (p *plotter) end(elapsed float64, final daqiri.Stats) {
	if p == nil {
		return
	}
	if p.stop != nil {
		close(p.stop)
		<-p.done
		p.stop = nil
	}
	p.mu.Lock()
	if n := len(p.samples); n > 0 && p.samples[n-1].t >= elapsed {
		elapsed = p.samples[n-1].t + 1e-6 // keep time increasing (a tick raced the end)
	}
	p.mu.Unlock()
	p.add(elapsed, final)
}

func (p *plotter) add(t float64, st daqiri.Stats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.samples = append(p.samples, plotSample{t: t, st: st})
}

// close writes the chart and closes the file.
func (p *plotter) close(title string) error {
	if p == nil {
		return nil
	}
	w := bufio.NewWriter(p.f)
	p.mu.Lock()
	series := buildSeries(p.samples)
	p.mu.Unlock()
	writeSVG(w, title, series)
	err := w.Flush()
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--plot %s: %w", p.path, err)
	}
	return nil
}

// plotSeries is one interface and direction over the run: the times of its samples, its
// cumulative bytes, packets and drops at each, and the rate over the interval before each
// (0 at the first sample).
type plotSeries struct {
	iface, dir, engine string
	t                  []float64
	bytes, packets     []uint64
	dropped            []uint64
	gbps               []float64
}

// buildSeries turns snapshots into one series per interface and direction that has queues,
// in the table's order (ports, then rx before tx).
func buildSeries(samples []plotSample) []*plotSeries {
	if len(samples) == 0 {
		return nil
	}
	var out []*plotSeries
	byKey := map[string]*plotSeries{}
	for _, sm := range samples {
		for _, p := range sm.st.Ports {
			for _, d := range []struct {
				dir string
				qs  []daqiri.QueueStats
			}{{"rx", p.Rx}, {"tx", p.Tx}} {
				if len(d.qs) == 0 {
					continue
				}
				key := p.Name + "\x00" + d.dir
				s := byKey[key]
				if s == nil {
					s = &plotSeries{iface: p.Name, dir: d.dir, engine: p.Engine}
					byKey[key] = s
					out = append(out, s)
				}
				var b, n, dr uint64
				for _, q := range d.qs {
					b += q.Bytes
					n += q.Packets
					dr += q.Dropped
				}
				s.t = append(s.t, sm.t)
				s.bytes = append(s.bytes, b)
				s.packets = append(s.packets, n)
				s.dropped = append(s.dropped, dr)
			}
		}
	}
	for _, s := range out {
		s.gbps = make([]float64, len(s.t))
		for i := 1; i < len(s.t); i++ {
			dt := s.t[i] - s.t[i-1]
			if dt > 0 && s.bytes[i] >= s.bytes[i-1] {
				s.gbps[i] = float64(s.bytes[i]-s.bytes[i-1]) * 8 / dt / 1e9
			}
		}
	}
	return out
}

// Chart geometry (SVG user units).
const (
	svgW, svgH             = 960, 640
	plotLeft, plotRight    = 80, 200 // room for the axis labels and the legend
	rateTop, rateBottom    = 50, 380
	dropTop, dropBottom    = 430, 590
	plotWidth              = svgW - plotLeft - plotRight
	legendX                = svgW - plotRight + 20
	axisTicks              = 5
	svgFont                = "font-family=\"sans-serif\" font-size=\"12\""
	drawnSeriesStrokeWidth = 1.5
)

// palette: distinguishable colours (Okabe–Ito), cycled over the series.
var palette = [...]string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// niceMax rounds v up to a round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power
// of ten; 1 when v ≤ 0) for an axis range, so that the five ticks fall on readable values
// and the data fills most of the panel.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8} {
		if v <= m*e*(1+1e-9) {
			return m * e
		}
	}
	return 10 * e
}

// tickPrec is the number of decimals that shows a tick step exactly (up to 3).
func tickPrec(step float64) int {
	for p := 0; p < 3; p++ {
		scaled := step * math.Pow(10, float64(p))
		if math.Abs(scaled-math.Round(scaled)) < 1e-6*max(scaled, 1) {
			return p
		}
	}
	return 3
}

func fnum(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// joinF and joinU format a series' values for its data- attributes.
func joinF(vs []float64, prec int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fnum(v, prec)
	}
	return strings.Join(parts, " ")
}

func joinU(vs []uint64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.FormatUint(v, 10)
	}
	return strings.Join(parts, " ")
}

// writeSVG draws the chart. Each series is a <polyline class="series"> whose data-
// attributes carry the numbers it was drawn from (data-t seconds, data-gbps, data-bytes,
// data-packets, data-dropped), so that the file can be checked or re-plotted without
// reading coordinates back.
func writeSVG(w io.Writer, title string, series []*plotSeries) {
	tmax, gmax, dmax := 0.0, 0.0, 0.0
	for _, s := range series {
		for i := range s.t {
			tmax = max(tmax, s.t[i])
			gmax = max(gmax, s.gbps[i])
			dmax = max(dmax, float64(s.dropped[i]))
		}
	}
	// Drops are counts: at least 5 on the axis, so that its five ticks are whole numbers.
	tmax, gmax, dmax = niceMax(tmax), niceMax(gmax), niceMax(max(dmax, axisTicks))
	x := func(t float64) float64 { return plotLeft + t/tmax*plotWidth }
	y := func(v, vmax float64, top, bottom int) float64 { return float64(bottom) - v/vmax*float64(bottom-top) }

	esc := html.EscapeString
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s>`+"\n", svgW, svgH, svgW, svgH, svgFont)
	fmt.Fprintf(w, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(w, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgW, svgH)
	head, sub, _ := strings.Cut(title, ": ")
	fmt.Fprintf(w, `<text x="%d" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", plotLeft, esc(head))
	fmt.Fprintf(w, `<text x="%d" y="38" fill="#555">%s</text>`+"\n", plotLeft, esc(sub))

	panel := func(id, label string, top, bottom int, vmax float64, prec int) {
		fmt.Fprintf(w, `<g id="%s-axes" stroke="#888" fill="none">`+"\n", id)
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d"/>`+"\n", plotLeft, top, plotWidth, bottom-top)
		fmt.Fprintf(w, "</g>\n")
		fmt.Fprintf(w, `<g id="%s-ticks" fill="#333">`+"\n", id)
		for i := 0; i <= axisTicks; i++ {
			v := vmax * float64(i) / axisTicks
			yy := y(v, vmax, top, bottom)
			fmt.Fprintf(w, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#ddd"/>`+"\n", plotLeft, plotLeft+plotWidth, fnum(yy, 1), fnum(yy, 1))
			fmt.Fprintf(w, `<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", plotLeft-6, fnum(yy+4, 1), fnum(v, prec))
		}
		for i := 0; i <= axisTicks; i++ {
			t := tmax * float64(i) / axisTicks
			fmt.Fprintf(w, `<text x="%s" y="%d" text-anchor="middle">%s s</text>`+"\n", fnum(x(t), 1), bottom+16, fnum(t, tickPrec(tmax/axisTicks)))
		}
		fmt.Fprintf(w, `<text x="18" y="%d" transform="rotate(-90 18 %d)" text-anchor="middle">%s</text>`+"\n", (top+bottom)/2, (top+bottom)/2, esc(label))
		fmt.Fprintf(w, "</g>\n")
	}
	panel("rate", "Gb/s (TX and RX)", rateTop, rateBottom, gmax, tickPrec(gmax/axisTicks))
	panel("drops", "dropped packets (cumulative)", dropTop, dropBottom, dmax, tickPrec(dmax/axisTicks))

	for i, s := range series {
		color := palette[i%len(palette)]
		dash := ""
		if s.dir == "tx" {
			dash = ` stroke-dasharray="6 3"`
		}
		name := s.iface + " " + s.dir
		var rate, drop strings.Builder
		for k := range s.t {
			fmt.Fprintf(&rate, "%s,%s ", fnum(x(s.t[k]), 2), fnum(y(s.gbps[k], gmax, rateTop, rateBottom), 2))
			fmt.Fprintf(&drop, "%s,%s ", fnum(x(s.t[k]), 2), fnum(y(float64(s.dropped[k]), dmax, dropTop, dropBottom), 2))
		}
		fmt.Fprintf(w, `<polyline class="series" data-panel="rate" data-interface="%s" data-dir="%s" data-engine="%s" data-t="%s" data-gbps="%s" data-bytes="%s" data-packets="%s" fill="none" stroke="%s" stroke-width="%v"%s points="%s"><title>%s Gb/s</title></polyline>`+"\n",
			esc(s.iface), s.dir, esc(s.engine), joinF(s.t, 6), joinF(s.gbps, 6), joinU(s.bytes), joinU(s.packets), color, drawnSeriesStrokeWidth, dash, strings.TrimSpace(rate.String()), esc(name))
		fmt.Fprintf(w, `<polyline class="series" data-panel="drops" data-interface="%s" data-dir="%s" data-t="%s" data-dropped="%s" fill="none" stroke="%s" stroke-width="%v"%s points="%s"><title>%s dropped</title></polyline>`+"\n",
			esc(s.iface), s.dir, joinF(s.t, 6), joinU(s.dropped), color, drawnSeriesStrokeWidth, dash, strings.TrimSpace(drop.String()), esc(name))
		ly := rateTop + 10 + i*36
		last := len(s.t) - 1
		fmt.Fprintf(w, `<g class="legend"><line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text><text x="%d" y="%d" fill="#555">%s B, %d dropped</text></g>`+"\n",
			legendX, legendX+24, ly, ly, color, dash, legendX+30, ly+4, esc(name), legendX+30, ly+18, fnumBytes(s.bytes[last]), s.dropped[last])
	}
	if len(series) == 0 {
		fmt.Fprintf(w, `<text x="%d" y="%d">no samples</text>`+"\n", plotLeft+10, rateTop+20)
	}
	fmt.Fprintf(w, "</svg>\n")
}

// fnumBytes writes a byte count with an SI prefix for the legend.
func fnumBytes(v uint64) string {
	f := float64(v)
	for _, u := range []struct {
		div  float64
		name string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if f >= u.div {
			return fnum(f/u.div, 2) + " " + u.name
		}
	}
	return strconv.FormatUint(v, 10)
}

// discard removes the file of a run that failed.
func (p *plotter) discard() {
	if p == nil {
		return
	}
	if p.stop != nil {
		close(p.stop)
		<-p.done
		p.stop = nil
	}
	p.f.Close()
	os.Remove(p.path)
}

// plotTitle names the run in the chart.
func plotTitle(o *options, res *result) string {
	cfg := o.config
	if cfg == "" {
		cfg = "embedded default (UDP over loopback)"
	}
	return fmt.Sprintf("daqiri-bench, %s: %.2f s, payload %d B, sent %d, received %d, dropped %d packets",
		cfg, res.Seconds, res.PayloadSize, res.TxPackets, res.RxPackets, res.DroppedPackets)
}
