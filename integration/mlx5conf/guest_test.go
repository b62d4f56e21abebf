package mlx5conf

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/daqiri-go/daqiri/integration/vm"
	"github.com/daqiri-go/daqiri/integration/vm/guest"
)

// The device the model presents: a ConnectX-5 (rdma-core's and the kernel's mlx5 id tables).
const (
	vendorMellanox = "0x15b3"
	deviceCX5      = "0x1017"
)

// The host attaches three model functions, told apart in the guest by their MAC: the
// first's port cabled to itself, the other two bridged to each other (a veth pair).
const (
	macLoop  = "02:00:00:00:00:01"
	macPortA = "02:00:00:00:00:0a"
	macPortB = "02:00:00:00:00:0b"
)

// probeBinary is where the host test puts the compiled testdata/mlx5probe.c: WorkDir/bin,
// which the guest sees under vm.GuestWork.
const probeBinary = vm.GuestWork + "/bin/mlx5probe"

// Bounds of the guest's waits. mlx5_core waits up to 120 s for the firmware's
// initializing bit and 60 s for each command (drivers/net/ethernet/mellanox/mlx5/core/
// main.c FW_PRE_INIT_TIMEOUT_MILI, cmd.c): a model that stops answering costs that long,
// and the part reports how far it got instead of waiting on.
const (
	probeTimeout    = 90 * time.Second
	modprobeTimeout = 150 * time.Second
	netdevWait      = 20 * time.Second
)

// TestGuestMLX5 runs in the VM (TestMLX5Conformance boots it) against the model attached
// as a vfio-user PCI device.
func TestGuestMLX5(t *testing.T) {
	guest.Require(t)
	devs := findDevices(t)
	bdf := devs[0]
	t.Logf("model devices at %s; parts (a) and (b) on %s", strings.Join(devs, " "), bdf)

	t.Run("a_vfio_provider", func(t *testing.T) {
		s := runProbe(t, bdf)
		s.ratchet(t, "rdma-core mlx5 VFIO provider", reachedProbe)
	})
	var core, ib *stageSet
	t.Run("b_mlx5_core", func(t *testing.T) {
		core = runCore(t, bdf)
		core.ratchet(t, "mlx5_core", reachedCore)
	})
	t.Run("b_mlx5e_bridged", func(t *testing.T) {
		s := newStageSet(bridgedStages)
		if core == nil || !core.has(stageModprobe) {
			s.fail(bridgedStages[0], "not tried: modprobe mlx5_core did not return")
		} else {
			runBridged(t, s, devs)
		}
		s.ratchet(t, "mlx5e over a bridged function", reachedBridged)
	})
	t.Run("c_mlx5_ib", func(t *testing.T) {
		if core == nil || !core.has(stageModprobe) {
			// modprobe mlx5_core never returned: loading another module would queue
			// behind it.
			s := newStageSet(ibStages)
			s.fail(stageModprobe, "not tried: modprobe mlx5_core did not return")
			s.ratchet(t, "mlx5_ib", reachedIB)
			return
		}
		ib = runIB(t, bdf)
		ib.ratchet(t, "mlx5_ib", reachedIB)
	})
	t.Run("c_devx_transport", func(t *testing.T) {
		if ib == nil || !ib.has("RDMA device present") {
			s := newStageSet(allDevXStages())
			s.fail(devxStages[0], "not tried: mlx5_ib registered no RDMA device")
			s.ratchet(t, "DevX transport", reachedDevX)
			return
		}
		loop := deviceWithMAC(devs, macLoop)
		if loop == "" {
			loop = bdf
			t.Logf("no function with MAC %s (the looped-back port): the engine runs on %s", macLoop, bdf)
		}
		s := runDevX(t, loop)
		s.ratchet(t, "DevX transport", reachedDevX)
	})
	t.Run("c_devx_two_ports", func(t *testing.T) {
		s := newStageSet(twoPortStages)
		if ib == nil || !ib.has("RDMA device present") {
			s.fail(twoPortStages[0], "not tried: mlx5_ib registered no RDMA device")
		} else {
			runTwoPorts(t, s, devs)
		}
		s.ratchet(t, "DevX two ports", reachedTwoPorts)
	})
	for _, r := range dpdkRuns {
		t.Run("d_dpdk_"+strings.ReplaceAll(r.name, " ", "_"), func(t *testing.T) {
			s := newStageSet(dpdkStages)
			if ib == nil || !ib.has("RDMA device present") {
				s.fail(dpdkStages[0], "not tried: mlx5_ib registered no RDMA device (DPDK's mlx5 driver runs on it)")
			} else {
				runDPDK(t, s, devs, r)
			}
			s.ratchet(t, "DPDK "+r.name, reachedDPDK[r.name])
		})
	}
}

// findDevices returns the PCI addresses of the model's functions, in bus order.
func findDevices(t *testing.T) []string {
	t.Helper()
	devs, _ := filepath.Glob("/sys/bus/pci/devices/*")
	var seen, found []string
	for _, d := range devs {
		v, _ := os.ReadFile(d + "/vendor")
		id, _ := os.ReadFile(d + "/device")
		vid := strings.TrimSpace(string(v)) + ":" + strings.TrimSpace(string(id))
		seen = append(seen, filepath.Base(d)+"="+vid)
		if vid == vendorMellanox+":"+deviceCX5 {
			found = append(found, filepath.Base(d))
		}
	}
	if len(found) == 0 {
		t.Fatalf("no PCI device %s:%s in the guest (vfio-user-pci not attached?); devices: %s", vendorMellanox, deviceCX5, strings.Join(seen, " "))
	}
	return found
}

// deviceWithMAC returns the function of devs whose netdev (mlx5_core's) has the address
// mac, "" for none.
func deviceWithMAC(devs []string, mac string) string {
	for _, d := range devs {
		if n := netdevOf(d); n != "" {
			a, _ := os.ReadFile("/sys/class/net/" + n + "/address")
			if strings.TrimSpace(string(a)) == mac {
				return d
			}
		}
	}
	return ""
}

// runProbe binds the device to vfio-pci and runs mlx5probe against it.
func runProbe(t *testing.T, bdf string) *stageSet {
	s := newStageSet(probeStages)
	group, err := bindVFIO(bdf)
	if err != nil {
		s.fail(probeStages[0], err.Error())
		return s
	}
	t.Logf("%s bound to vfio-pci, IOMMU group %s", bdf, group)
	// The provider reports each failed command (opcode, op_mod, status, syndrome) to its
	// debug file only; without MLX5_DEBUG_FILE that is nowhere in a release build
	// (rdma-core providers/mlx5/mlx5.c, mlx5_open_debug_file).
	t.Setenv("MLX5_DEBUG_FILE", "/dev/stderr")
	out, err, done := runBounded(probeTimeout, probeBinary, bdf)
	t.Logf("mlx5probe output (with the provider's own messages):\n%s", out)
	if !done {
		t.Logf("mlx5probe did not end within %v", probeTimeout)
	} else if err != nil {
		t.Logf("mlx5probe: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "STEP ")
		if !ok {
			continue
		}
		verdict, rest, _ := strings.Cut(rest, " ")
		for _, st := range probeStages {
			after, ok := strings.CutPrefix(rest, st)
			if !ok || (after != "" && after[0] != ' ' && after[0] != ':') {
				continue
			}
			switch verdict {
			case "ok":
				s.ok(st, strings.TrimSpace(after))
			case "fail":
				s.fail(st, strings.TrimSpace(strings.TrimPrefix(after, ":")))
			}
		}
	}
	return s
}

// bindVFIO hands the device to vfio-pci and waits (bounded) for its group node.
func bindVFIO(bdf string) (group string, err error) {
	dev := "/sys/bus/pci/devices/" + bdf
	if err := os.WriteFile(dev+"/driver_override", []byte("vfio-pci"), 0); err != nil {
		return "", fmt.Errorf("driver_override: %w", err)
	}
	if _, err := os.Stat(dev + "/driver"); err == nil {
		if err := os.WriteFile(dev+"/driver/unbind", []byte(bdf), 0); err != nil {
			return "", fmt.Errorf("unbind the current driver: %w", err)
		}
	}
	if err := os.WriteFile("/sys/bus/pci/drivers_probe", []byte(bdf), 0); err != nil {
		return "", fmt.Errorf("bind to vfio-pci: %w", err)
	}
	link, err := os.Readlink(dev + "/iommu_group")
	if err != nil {
		return "", fmt.Errorf("no IOMMU group (is the guest's intel_iommu on?): %w", err)
	}
	group = filepath.Base(link)
	for i := 0; i < 50; i++ {
		if _, err := os.Stat("/dev/vfio/" + group); err == nil {
			return group, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", fmt.Errorf("/dev/vfio/%s did not appear within 5 s", group)
}

// runCore unbinds the device from vfio-pci and loads mlx5_core, which probes it.
func runCore(t *testing.T, bdf string) *stageSet {
	s := newStageSet(coreStages)
	dev := "/sys/bus/pci/devices/" + bdf
	if _, err := os.Stat(dev + "/driver"); err == nil {
		if err := os.WriteFile(dev+"/driver/unbind", []byte(bdf), 0); err != nil {
			s.fail(stageModprobe, "unbind from vfio-pci: "+err.Error())
			return s
		}
	}
	// An empty override lets the id tables match again.
	if err := os.WriteFile(dev+"/driver_override", []byte("\n"), 0); err != nil {
		s.fail(stageModprobe, "clear driver_override: "+err.Error())
		return s
	}
	klogBefore := kernelLog()
	out, err, done := runBounded(modprobeTimeout, "modprobe", "mlx5_core")
	switch {
	case !done:
		s.fail(stageModprobe, fmt.Sprintf("still running after %v (the probe waits on the device)", modprobeTimeout))
	case err != nil:
		s.fail(stageModprobe, fmt.Sprintf("%v: %s", err, out))
	default:
		s.ok(stageModprobe, "")
	}
	var netdev string
	if done {
		// The Ethernet netdev comes from the auxiliary mlx5_core.eth driver; give it time.
		for deadline := time.Now().Add(netdevWait); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			if netdev = netdevOf(bdf); netdev != "" {
				break
			}
		}
	}
	klog := newLines(klogBefore, kernelLog())
	t.Logf("kernel log since modprobe mlx5_core:\n%s", klog)
	if m := regexp.MustCompile(`(?m)^.*` + regexp.QuoteMeta(bdf) + `.*firmware version: (\S+)`).FindStringSubmatch(klog); m != nil {
		s.ok("firmware version read", m[1])
	} else {
		s.fail("firmware version read", "no \"firmware version\" line for "+bdf)
	}
	drv, _ := os.Readlink(dev + "/driver")
	failLine := regexp.MustCompile(`(?m)^.*(mlx5_init_one failed|probe_one.*failed|mlx5_load_one failed).*$`).FindString(klog)
	switch {
	case filepath.Base(drv) == "mlx5_core" && failLine == "":
		s.ok("probe finished", "driver mlx5_core bound")
	case failLine != "":
		s.fail("probe finished", failLine)
	case !done:
		s.fail("probe finished", "the probe has not returned")
	default:
		s.fail("probe finished", fmt.Sprintf("driver is %q, not mlx5_core", filepath.Base(drv)))
	}
	ipOut, _, _ := runBounded(10*time.Second, "ip", "link")
	t.Logf("ip link:\n%s", ipOut)
	if netdev == "" {
		s.fail("netdev present", "no netdev under "+dev+"/net")
		return s
	}
	if !strings.Contains(ipOut, " "+netdev+":") {
		s.fail("netdev present", netdev+" is in sysfs but not in `ip link`")
		return s
	}
	s.ok("netdev present", netdev)
	if out, err, done := runBounded(30*time.Second, "ip", "link", "set", netdev, "up"); !done || err != nil {
		s.fail("netdev up", fmt.Sprintf("ip link set %s up: %v %s", netdev, err, out))
	} else {
		s.ok("netdev up", "")
		logNetdevTraffic(t, netdev)
		if d, err := netdevLoopback(netdev); err != nil {
			s.fail("netdev received", err.Error())
		} else {
			s.ok("netdev received", d)
		}
	}
	return s
}

// Bounds of the mlx5e receive check.
const (
	loopFrames = 16
	loopWait   = 10 * time.Second
)

// netdevLoopback sends loopFrames broadcast frames (a local experimental EtherType, which
// the stack then drops after counting) out of netdev through a packet socket; the port is
// cabled to itself, so mlx5e must receive them: its rx_packets has to grow by as many
// within loopWait.
func netdevLoopback(netdev string) (string, error) {
	ifi, err := net.InterfaceByName(netdev)
	if err != nil {
		return "", err
	}
	rx := func() (uint64, error) {
		b, err := os.ReadFile("/sys/class/net/" + netdev + "/statistics/rx_packets")
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	before, err := rx()
	if err != nil {
		return "", err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		return "", fmt.Errorf("packet socket: %w", err)
	}
	defer unix.Close(fd)
	bcast := [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	sa := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6, Addr: bcast}
	f := make([]byte, 60)
	copy(f, bcast[:6])
	copy(f[6:], ifi.HardwareAddr)
	f[12], f[13] = 0x88, 0xb5 // IEEE 802 local experimental EtherType 1
	for i := 0; i < loopFrames; i++ {
		f[14] = byte(i)
		if err := unix.Sendto(fd, f, 0, sa); err != nil {
			return "", fmt.Errorf("send frame %d on %s: %w", i, netdev, err)
		}
	}
	var now uint64
	for end := time.Now().Add(loopWait); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if now, err = rx(); err != nil {
			return "", err
		}
		if now-before >= loopFrames {
			return fmt.Sprintf("%d broadcast frames sent, rx_packets %d → %d", loopFrames, before, now), nil
		}
	}
	return "", fmt.Errorf("%d broadcast frames sent through the looped-back port; rx_packets %d → %d within %v", loopFrames, before, now, loopWait)
}

// logNetdevTraffic logs what the mlx5e netdev sent and received in its first seconds up:
// on the looped-back port the kernel's own frames (IPv6 duplicate address detection,
// router solicitations) come back to it. Only logged: mlx5e's receive is not one of
// part (b)'s stages yet.
func logNetdevTraffic(t *testing.T, netdev string) {
	stat := func(name string) string {
		b, _ := os.ReadFile("/sys/class/net/" + netdev + "/statistics/" + name)
		return strings.TrimSpace(string(b))
	}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if r := stat("rx_packets"); r != "" && r != "0" {
			break
		}
	}
	t.Logf("%s after up: tx_packets %s rx_packets %s rx_dropped %s rx_errors %s", netdev, stat("tx_packets"), stat("rx_packets"), stat("rx_dropped"), stat("rx_errors"))
}

// runIB loads mlx5_ib and looks for the RDMA device it registers on the PCI device.
func runIB(t *testing.T, bdf string) *stageSet {
	s := newStageSet(ibStages)
	klogBefore := kernelLog()
	out, err, done := runBounded(modprobeTimeout, "modprobe", "mlx5_ib")
	switch {
	case !done:
		s.fail(stageModprobe, fmt.Sprintf("still running after %v", modprobeTimeout))
	case err != nil:
		s.fail(stageModprobe, fmt.Sprintf("%v: %s", err, out))
	default:
		s.ok(stageModprobe, "")
	}
	var ibdev string
	for deadline := time.Now().Add(netdevWait); done && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if ents, _ := os.ReadDir("/sys/bus/pci/devices/" + bdf + "/infiniband"); len(ents) > 0 {
			ibdev = ents[0].Name()
			break
		}
	}
	t.Logf("kernel log since modprobe mlx5_ib:\n%s", newLines(klogBefore, kernelLog()))
	if ibdev == "" {
		s.fail("RDMA device present", "no entry under /sys/bus/pci/devices/"+bdf+"/infiniband")
	} else {
		s.ok("RDMA device present", ibdev)
	}
	return s
}

// netdevOf returns the first network interface of the PCI device, or "".
func netdevOf(bdf string) string {
	ents, _ := os.ReadDir("/sys/bus/pci/devices/" + bdf + "/net")
	if len(ents) == 0 {
		return ""
	}
	return ents[0].Name()
}

// kernelLog returns the kernel's message buffer.
func kernelLog() string {
	out, _, _ := runBounded(10*time.Second, "dmesg")
	return out
}

// newLines returns the lines of after that follow the last line of before (the kernel log
// only grows, unless its ring wraps; then all of after).
func newLines(before, after string) string {
	before = strings.TrimRight(before, "\n")
	if i := strings.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	if before != "" {
		if i := strings.Index(after, before+"\n"); i >= 0 {
			return after[i+len(before)+1:]
		}
	}
	return after
}

// runBounded runs a command for at most d. done is false when it did not end in time: it
// is then killed, but a process stuck in the kernel (a probe waiting on a device) may
// linger, so the wait for it is abandoned rather than blocking the test.
func runBounded(d time.Duration, name string, args ...string) (out string, err error, done bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return "", err, true
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	select {
	case err = <-ch:
		if ctx.Err() != nil {
			return buf.String(), errors.New("timed out"), false
		}
		return buf.String(), err, true
	case <-time.After(d + 5*time.Second):
		return "(output not collected: the process did not exit when killed)", errors.New("timed out"), false
	}
}
