package vfio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Group is an open VFIO group (/dev/vfio/<n>): the set of devices the IOMMU
// cannot isolate from each other, and the unit of ownership. A group file can
// be open only once at a time, system-wide.
type Group struct {
	mu        sync.Mutex
	fd        int
	num       int
	path      string
	container *Container
	devices   []*Device
}

// GroupStatus is what VFIO_GROUP_GET_STATUS reports.
type GroupStatus struct {
	Viable       bool // every device of the group is bound to vfio or to no driver
	ContainerSet bool // the group is attached to a container
}

// GroupPath is the device node of IOMMU group n.
func GroupPath(n int) string { return "/dev/vfio/" + strconv.Itoa(n) }

// IOMMUGroupOf returns the IOMMU group of a PCI device, given its address
// (0000:00:01.0), from sysfs.
func IOMMUGroupOf(bdf string) (int, error) {
	if err := checkDeviceName(bdf); err != nil {
		return 0, err
	}
	link, err := os.Readlink(filepath.Join("/sys/bus/pci/devices", bdf, "iommu_group"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, opErr("find IOMMU group", bdf, fmt.Errorf("%w: no such PCI device, or it has no IOMMU group (is the IOMMU on?)", ErrNotFound))
		}
		return 0, opErr("find IOMMU group", bdf, err)
	}
	n, err := strconv.Atoi(filepath.Base(link))
	if err != nil {
		return 0, opErr("find IOMMU group", bdf, fmt.Errorf("unexpected iommu_group link %q", link))
	}
	return n, nil
}

// OpenGroup opens IOMMU group n. ErrNotFound: no such group (or vfio-pci
// does not own it); ErrInUse: the group is open already.
func OpenGroup(n int) (*Group, error) {
	if n < 0 {
		return nil, invalid("open group", strconv.Itoa(n), "group numbers are not negative")
	}
	p := GroupPath(n)
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, opErr("open group", p, err)
	}
	return &Group{fd: fd, num: n, path: p}, nil
}

// Number is the IOMMU group number.
func (g *Group) Number() int { return g.num }

func (g *Group) ioctl(req uintptr, arg []byte, val uintptr) (uintptr, error) {
	if g.fd < 0 {
		return 0, ErrClosed
	}
	return ioctl(g.fd, req, arg, val)
}

// Status queries VFIO_GROUP_GET_STATUS.
func (g *Group) Status() (GroupStatus, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := argsz(sizeGroupStatus, 0)
	if _, err := g.ioctl(ioctlGroupGetStatus, b, 0); err != nil {
		return GroupStatus{}, opErr("VFIO_GROUP_GET_STATUS", g.path, err)
	}
	return decodeGroupStatus(b), nil
}

func decodeGroupStatus(b []byte) GroupStatus {
	f := ne.Uint32(b[4:])
	return GroupStatus{Viable: f&groupFlagsViable != 0, ContainerSet: f&groupFlagsContainerSet != 0}
}

// checkDeviceName rejects names the kernel could not match anyway.
func checkDeviceName(name string) error {
	if name == "" || len(name) > 255 || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return invalid("device name", strconv.Quote(name), "want a device address such as 0000:00:01.0")
	}
	return nil
}

// OpenDevice returns the device of this group named name (for PCI, its
// address: 0000:00:01.0). The group must be in a container.
// ErrNotFound: no such device in this group.
func (g *Group) OpenDevice(name string) (*Device, error) {
	if err := checkDeviceName(name); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.container == nil && g.fd >= 0 {
		return nil, opErr("VFIO_GROUP_GET_DEVICE_FD", name, fmt.Errorf("%w: group %d is not in a container (Container.AddGroup first)", ErrInvalid, g.num))
	}
	// The argument is a NUL-terminated string.
	arg := append([]byte(name), 0)
	fd, err := g.ioctl(ioctlGroupGetDeviceFD, arg, 0)
	if err != nil {
		return nil, opErr("VFIO_GROUP_GET_DEVICE_FD", name+" in "+g.path, err)
	}
	d := &Device{fd: int(fd), name: name, group: g}
	if err := d.loadInfo(); err != nil {
		unix.Close(d.fd)
		return nil, err
	}
	g.devices = append(g.devices, d)
	return d, nil
}

func (g *Group) removeDevice(d *Device) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.devices = slices.DeleteFunc(g.devices, func(x *Device) bool { return x == d })
}

// Close closes the group's open devices, detaches it from its container and
// closes it.
func (g *Group) Close() error {
	g.mu.Lock()
	devs := slices.Clone(g.devices)
	g.mu.Unlock()
	var errs []error
	for _, d := range devs {
		if err := d.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	g.mu.Lock()
	if g.fd < 0 {
		g.mu.Unlock()
		return errors.Join(errs...)
	}
	c := g.container
	if c != nil {
		if _, err := ioctl(g.fd, ioctlGroupUnsetContainer, nil, 0); err != nil {
			errs = append(errs, opErr("VFIO_GROUP_UNSET_CONTAINER", g.path, err))
		}
		g.container = nil
	}
	if err := unix.Close(g.fd); err != nil {
		errs = append(errs, opErr("close", g.path, err))
	}
	g.fd = -1
	g.mu.Unlock()
	if c != nil {
		c.removeGroup(g)
	}
	return errors.Join(errs...)
}
