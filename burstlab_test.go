package daqiri

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/internal/osthread"
	"github.com/daqiri-go/daqiri/internal/testutil/benchtest"
)

// BenchmarkBurstLayout is a lab for the burst path's two speeds on the GPU host (issue 31,
// fourth round): it opens DAQIRI_LAB_RUNS sessions of the burst benchmark's form (batch 64,
// 1024 buffers of 128 B), each after a random amount of heap padding so that the arrays land
// at other addresses, and prints per session the ns/packet of every fill (each twice) beside
// the low 16 bits of the addresses the loop touches and two control loops that touch no
// engine memory, and the time of parts of the path (labParts). It asserts nothing;
// DAQIRI_LAB_RUNS (default 2) and DAQIRI_LAB_BURSTS (bursts per timing, default 20,000) size
// it, DAQIRI_LAB_HOG=cores runs store loops on other cores meanwhile, DAQIRI_LAB_PROF=dir
// writes a CPU profile. Its findings (BENCHMARKS.md, issue 31 fourth round): the slow speed
// comes and goes within one session, whose addresses do not change, and slows a control
// loop that touches no engine memory at the same time — it is not the layout.
//
//	go test -run '^$' -bench BurstLayout -benchtime 1x .
func BenchmarkBurstLayout(b *testing.B) {
	runs := labEnv("DAQIRI_LAB_RUNS", 2)
	bursts := labEnv("DAQIRI_LAB_BURSTS", 20000)
	pad := os.Getenv("DAQIRI_LAB_PAD") != "off"
	core := benchtest.Pin(b)
	benchtest.StopGC(b)
	fmt.Printf("lab pid=%d core=%d runs=%d bursts=%d pad=%v\n", os.Getpid(), core, runs, bursts, pad)
	if h := os.Getenv("DAQIRI_LAB_HOG"); h != "" {
		// Store loops pinned to the listed cores while the lab runs: neighbours that keep
		// their cores (and any hyperthread sibling of the lab's) busy.
		stop := make(chan struct{})
		defer close(stop)
		for _, c := range strings.Split(h, ",") {
			hc, _ := strconv.Atoi(c)
			go labHog(hc, stop)
		}
	}
	if dir := os.Getenv("DAQIRI_LAB_PROF"); dir != "" {
		f, err := os.Create(fmt.Sprintf("%s/lab-%d.prof", dir, os.Getpid()))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	r := rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(os.Getpid())))
	for run := 0; run < runs; run++ {
		var keep [][]byte
		if pad {
			// Random objects of the size classes the burst arrays and structs come from, so
			// the next session's allocations start at other slots of their spans.
			for _, sz := range []int{48, 64, 256, 512, 576, 1024, 2048} {
				for k := r.IntN(24); k > 0; k-- {
					keep = append(keep, make([]byte, sz))
				}
			}
		}
		labRun(b, run, core, bursts, start)
		runtime.KeepAlive(keep)
	}
}

func labEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// labFills are the benchmark's fills, in its order.
var labFills = []string{"lengths", "lengths-all", "template", "template-all", "headers"}

func labRun(b *testing.B, run, core, bursts int, labStart time.Time) {
	s, tmpl, rxq := labOpen(b)
	defer s.Close()
	const batch = 64
	loop := func(fill string, n int) float64 { return labLoop(b, s, tmpl, rxq, fill, n) }
	loop("template", 2000) // warm up
	// The addresses: two bursts, since TX and RX bursts swap their packet arrays every send.
	var addrs []string
	for k := 0; k < 2; k++ {
		t, _ := s.TxBurst(0, 0, batch)
		addrs = append(addrs, labBurst(fmt.Sprintf("tx%d", k), t)...)
		if k == 0 {
			offs, _ := t.SegmentArrays(0)
			var po []string
			for _, o := range offs[:4] {
				po = append(po, fmt.Sprintf("%x", o))
			}
			addrs = append(addrs, "bufoffs="+strings.Join(po, ","))
		}
		s.Send(t)
		rb, _ := s.RxBurst(0, rxq)
		addrs = append(addrs, labBurst(fmt.Sprintf("rx%d", k), rb)...)
		rb.Free()
	}
	addrs = append(addrs, labSession(s, tmpl)...)
	steal0 := labSteal(core)
	alu0, cp0 := labControls()
	var res []string
	for rep := 0; rep < 2; rep++ {
		for _, f := range labFills {
			res = append(res, fmt.Sprintf("%s=%.1f", labShort(f), loop(f, bursts)))
		}
	}
	res = append(res, labParts(b, s, tmpl, rxq, bursts)...)
	alu1, cp1 := labControls()
	fmt.Printf("run=%d at=%.1f steal=%d alu=%.3f/%.3f copy=%.2f/%.2f %s | %s\n", run, time.Since(labStart).Seconds(), labSteal(core)-steal0, alu0, alu1, cp0, cp1,
		strings.Join(res, " "), strings.Join(addrs, " "))
}

// labParts times the burst path's parts in the same session, ns per packet of a 64-packet
// burst: the fills alone on one held TX burst (fL per-packet lengths, fLA burst-wide
// lengths, fT per-packet template, fTA burst-wide template), get+free of a TX burst without
// sending (gf), the cycle get → send → receive → free without a fill (cyc), and one receive
// clock reading per burst (clk, ns per reading).
func labParts(b *testing.B, s *Session, tmpl *UDPv4Header, rxq, bursts int) []string {
	const payload = 64 - 14 - 20 - 8
	t, err := s.TxBurst(0, 0, 64)
	if err != nil {
		b.Fatal(err)
	}
	n := t.Len()
	timeIt := func(f func()) float64 {
		start := time.Now()
		for k := 0; k < bursts; k++ {
			f()
		}
		return float64(time.Since(start).Nanoseconds()) / float64(bursts*n)
	}
	var out []string
	out = append(out, fmt.Sprintf("fL=%.2f", timeIt(func() {
		for i := range t.Len() {
			t.SetPacketLen(i, 64)
		}
	})))
	out = append(out, fmt.Sprintf("fLA=%.2f", timeIt(func() { t.SetAllPacketLengths(64) })))
	out = append(out, fmt.Sprintf("fT=%.2f", timeIt(func() {
		for i := range t.Len() {
			t.SetUDPv4Header(i, tmpl, payload)
			t.SetPacketLen(i, 64)
		}
	})))
	out = append(out, fmt.Sprintf("fTA=%.2f", timeIt(func() {
		t.SetAllUDPv4Headers(tmpl, payload)
		t.SetAllPacketLengths(64)
	})))
	t.Free()
	out = append(out, fmt.Sprintf("gf=%.2f", timeIt(func() {
		t, err := s.TxBurst(0, 0, 64)
		if err != nil {
			b.Fatal(err)
		}
		t.Free()
	})))
	out = append(out, fmt.Sprintf("cyc=%.2f", timeIt(func() {
		t, err := s.TxBurst(0, 0, 64)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Send(t); err != nil {
			b.Fatal(err)
		}
		r, err := s.RxBurst(0, rxq)
		if err != nil {
			b.Fatal(err)
		}
		r.Free()
	})))
	t0 := time.Now()
	var x int64
	for k := 0; k < bursts; k++ {
		x += int64(time.Since(t0))
	}
	out = append(out, fmt.Sprintf("clk=%.1f", float64(time.Since(t0).Nanoseconds())/float64(bursts)))
	runtime.KeepAlive(x)
	return out
}

// labOpen opens a session of the burst benchmark's form (batch 64, 1024 buffers of 128 B)
// and prepares its header template.
func labOpen(b *testing.B) (*Session, *UDPv4Header, int) {
	cfg := loopbackConfig(1, false)
	for i := range cfg.MemoryRegions {
		cfg.MemoryRegions[i].NumBufs = 1024
		cfg.MemoryRegions[i].BufSize = 128
	}
	cfg.Interfaces[0].TX.Queues[0].BatchSize = 64
	cfg.Interfaces[0].RX.Queues[0].BatchSize = 64
	s, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	tmpl, err := NewUDPv4Header(net.HardwareAddr{2, 0, 0, 0, 0, 2}, nil, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), 4096, 4097)
	if err != nil {
		b.Fatal(err)
	}
	return s, tmpl, cfg.Interfaces[0].RX.Queues[0].ID
}

// labLoop runs n bursts of the benchmark's loop with one fill and returns ns per packet.
func labLoop(b *testing.B, s *Session, tmpl *UDPv4Header, rxq int, fill string, n int) float64 {
	loop := newBurstLoop(s, tmpl, rxq, 64, fill)
	start := time.Now()
	packets := 0
	for k := 0; k < n; k++ {
		packets += loop.cycle(b)
	}
	return float64(time.Since(start).Nanoseconds()) / float64(packets)
}

// BenchmarkBurstTimeline follows the two speeds over time: for DAQIRI_LAB_SECONDS (default
// 2) it repeats, in one session, a slice of the burst loop with lengths (L) and with the
// per-packet template (T), the two control loops of BenchmarkBurstLayout (alu, copy), a
// loop of uncontended atomic adds (lock, ns per add) and two throughput-bound loops (alu4,
// load; labThroughput), printing one line per round with the wall-clock time in ms, so that
// runs on several cores at once can be lined up.
func BenchmarkBurstTimeline(b *testing.B) {
	secs := labEnv("DAQIRI_LAB_SECONDS", 2)
	core := benchtest.Pin(b)
	benchtest.StopGC(b)
	s, tmpl, rxq := labOpen(b)
	defer s.Close()
	labLoop(b, s, tmpl, rxq, "template", 2000)
	var a atomic.Int64
	end := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(end) {
		at := time.Now().UnixMilli() % 1_000_000
		l := labLoop(b, s, tmpl, rxq, "lengths", 3000)
		t := labLoop(b, s, tmpl, rxq, "template", 2000)
		alu, cp := labControls()
		const adds = 200_000
		t0 := time.Now()
		for k := 0; k < adds; k++ {
			a.Add(1)
		}
		lock := float64(time.Since(t0).Nanoseconds()) / adds
		alu4, load := labThroughput()
		fmt.Printf("tl core=%d ms=%d L=%.2f T=%.2f alu=%.3f copy=%.2f lock=%.2f alu4=%.3f load=%.3f\n", core, at, l, t, alu, cp, lock, alu4, load)
	}
}

// labThroughput times two throughput-bound loops: eight independent chains of adds and
// xors (alu4, ns per step of all eight: the execution ports, which a hyperthread sibling
// shares) and sums over 8 KiB (load, ns per 8-byte load).
func labThroughput() (alu4, load float64) {
	var a, b, c, d, e, f, g, h uint64 = 1, 2, 3, 4, 5, 6, 7, 8
	const steps = 1_000_000
	t0 := time.Now()
	for i := uint64(0); i < steps; i++ {
		a, b, c, d = a+i, b^i, c+i, d^i
		e, f, g, h = e+i, f^i, g+i, h^i
	}
	alu4 = float64(time.Since(t0).Nanoseconds()) / steps
	runtime.KeepAlive(a + b + c + d + e + f + g + h)
	buf := make([]uint64, 1024)
	for i := range buf {
		buf[i] = uint64(i)
	}
	var s0, s1, s2, s3 uint64
	const rounds = 1000
	t0 = time.Now()
	for k := 0; k < rounds; k++ {
		for i := 0; i+4 <= len(buf); i += 4 {
			s0 += buf[i]
			s1 += buf[i+1]
			s2 += buf[i+2]
			s3 += buf[i+3]
		}
	}
	load = float64(time.Since(t0).Nanoseconds()) / (rounds * 1024)
	runtime.KeepAlive(s0 + s1 + s2 + s3)
	return alu4, load
}

func labShort(f string) string {
	return map[string]string{"lengths": "L", "lengths-all": "LA", "template": "T", "template-all": "TA", "headers": "H"}[f]
}

// labAddr is the low 16 bits of v's address: the data of a slice, the target of a pointer,
// the value itself for an addressable struct field.
func labAddr(v reflect.Value) string {
	var p uintptr
	switch v.Kind() {
	case reflect.Slice, reflect.Pointer, reflect.Map:
		p = v.Pointer()
	default:
		p = v.UnsafeAddr()
	}
	return fmt.Sprintf("%04x", p&0xffff)
}

// labField follows a path of field names (pointers and interfaces on the way).
func labField(v reflect.Value, path ...string) reflect.Value {
	for _, name := range path {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			v = v.Elem()
		}
		if i, err := strconv.Atoi(name); err == nil {
			v = v.Index(i)
			continue
		}
		v = v.FieldByName(name)
	}
	return v
}

func labBurst(name string, bu *Burst) []string {
	v := reflect.ValueOf(bu)
	seg := labField(v, "segs", "0")
	return []string{
		name + "=" + labAddr(v),
		name + ".off=" + labAddr(labField(seg, "off")),
		name + ".len=" + labAddr(labField(seg, "len")),
		name + ".flow=" + labAddr(labField(v, "flow")),
		name + ".ts=" + labAddr(labField(v, "ts")),
		name + ".freed=" + labAddr(labField(v, "freed")),
	}
}

func labSession(s *Session, tmpl *UDPv4Header) []string {
	v := reflect.ValueOf(s)
	p := labField(v, "ports", "0")
	tq, rq := labField(p, "Tx", "0"), labField(p, "Rx", "0")
	lb := labField(v, "byPort", "0")
	reg := labField(v, "regions").MapIndex(reflect.ValueOf("tx"))
	return []string{
		"tmpl=" + labAddr(reflect.ValueOf(tmpl)),
		"txbuf=" + labAddr(labField(reg, "buf")),
		"front=" + labAddr(labField(reg, "front")),
		"fstack=" + labAddr(labField(reg, "front", "stack")),
		"pool=" + labAddr(labField(reg, "pool")),
		"txq=" + labAddr(tq),
		"txq.stats=" + labAddr(labField(tq, "Stats")),
		"txq.gate=" + labAddr(labField(tq, "gate")),
		"rxq=" + labAddr(rq),
		"rxq.stats=" + labAddr(labField(rq, "Stats")),
		"rxq.gate=" + labAddr(labField(rq, "gate")),
		"rxring=" + labAddr(labField(rq, "ring")),
		"rxslots=" + labAddr(labField(rq, "ring", "slots")),
		"txmeta=" + labAddr(labField(v, "txMeta")),
		"txmslots=" + labAddr(labField(v, "txMeta", "r", "slots")),
		"lbmeta=" + labAddr(labField(lb, "meta")),
		"lbmslots=" + labAddr(labField(lb, "meta", "r", "slots")),
		"clock=" + labAddr(labField(lb, "clock")),
	}
}

// labSteal is the steal time of core (ticks of /proc/stat), -1 when unknown.
func labSteal(core int) int64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil || core < 0 {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 8 && f[0] == "cpu"+strconv.Itoa(core) {
			v, _ := strconv.ParseInt(f[8], 10, 64)
			return v
		}
	}
	return -1
}

// labHog stores to 32 KiB on core until stop closes.
func labHog(core int, stop chan struct{}) {
	osthread.LockAndPin(core)
	buf := make([]uint64, 4096)
	for k := uint64(0); ; k++ {
		for i := range buf {
			buf[i] += k
		}
		select {
		case <-stop:
			runtime.KeepAlive(buf)
			return
		default:
		}
	}
}

// labControls times two loops that touch no engine memory: a dependent chain of adds and
// multiplies (ns per step: the core's clock) and 42-byte copies into 64 buffers of 128 B
// (ns per copy: the template's store pattern at fixed addresses).
func labControls() (alu, cp float64) {
	x := uint64(1)
	const steps = 2_000_000
	t0 := time.Now()
	for i := 0; i < steps; i++ {
		x = x*3 + uint64(i)
	}
	alu = float64(time.Since(t0).Nanoseconds()) / steps
	runtime.KeepAlive(x)
	buf := make([]byte, 8192)
	var h [42]byte
	h[0] = byte(x)
	const rounds = 5_000
	t0 = time.Now()
	for k := 0; k < rounds; k++ {
		for o := 0; o+128 <= len(buf); o += 128 {
			*(*[42]byte)(buf[o : o+42]) = h
		}
		h[1]++
	}
	cp = float64(time.Since(t0).Nanoseconds()) / (rounds * 64)
	runtime.KeepAlive(buf)
	return alu, cp
}
