package xsk

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Channels are a netdev's queue counts as ethtool reports them (ETHTOOL_GCHANNELS, struct
// ethtool_channels in include/uapi/linux/ethtool.h).
type Channels struct {
	RX, TX, Combined int
}

// RxQueues is the number of queues that receive: dedicated RX plus combined channels.
func (c Channels) RxQueues() int { return c.RX + c.Combined }

// TxQueues is the number of queues that transmit.
func (c Channels) TxQueues() int { return c.TX + c.Combined }

// GetChannels asks the driver of ifname (in the calling thread's network namespace) for its
// active channel counts. Drivers without the ethtool operation return an error wrapping
// unix.EOPNOTSUPP.
func GetChannels(ifname string) (Channels, error) {
	if len(ifname) >= unix.IFNAMSIZ {
		return Channels{}, fmt.Errorf("xsk: interface name %q too long", ifname)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return Channels{}, fmt.Errorf("xsk: socket for ethtool: %w", err)
	}
	defer unix.Close(fd)
	var ch struct {
		Cmd                                         uint32
		MaxRX, MaxTX, MaxOther, MaxCombined         uint32
		RXCount, TXCount, OtherCount, CombinedCount uint32
	}
	ch.Cmd = unix.ETHTOOL_GCHANNELS
	var ifr struct {
		Name [unix.IFNAMSIZ]byte
		Data unsafe.Pointer
		_    [16]byte // rest of struct ifreq's union
	}
	copy(ifr.Name[:], ifname)
	ifr.Data = unsafe.Pointer(&ch)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return Channels{}, fmt.Errorf("xsk: ETHTOOL_GCHANNELS on %s: %w", ifname, e)
	}
	return Channels{RX: int(ch.RXCount), TX: int(ch.TXCount), Combined: int(ch.CombinedCount)}, nil
}
