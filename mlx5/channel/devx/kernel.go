package devx

import (
	"github.com/daqiri-go/daqiri/verbs"
	"github.com/daqiri-go/daqiri/verbs/mlx5dv"
)

// kernel is what the channel asks of a DevX context: package mlx5dv's typed calls, behind an
// interface so that the channel's own logic (ids, errors, the root rule, release order) is
// tested without a ConnectX.
type kernel interface {
	device() string
	General(in, out []byte) error
	CreateObj(in, out []byte) (kobj, error)
	RegUMEM(mem []byte, access verbs.Access) (kumem, error)
	RegUMEMDMABuf(fd int, offset, length uint64, access verbs.Access) (kumem, error)
	AllocUAR(t mlx5dv.UARType) (kuar, error)
	QueryEQN(vector uint32) (uint32, error)
	// RootRule creates a match-all NIC RX matcher and a rule forwarding to table; release
	// deletes both.
	RootRule(table kobj) (release func() error, err error)
	AllocPP(ctx []byte, dedicated bool) (kpp, error)
	// ClockInfo reads the kernel's clock information page (mlx5dv_get_clock_info).
	ClockInfo() (mlx5dv.ClockInfo, error)
	Close() error
}

type kobj interface {
	Modify(in, out []byte) error
	Query(in, out []byte) error
	Destroy() error
}

type kumem interface {
	id() uint32
	Close() error
}

type kuar interface {
	index() uint32
	Write64(off uint32, v uint64)
	Write32(off uint32, v uint32)
	Close() error
}

type kpp interface {
	index() uint16
	Close() error
}

// verbsKernel is the real kernel: an mlx5dv.DevX.
type verbsKernel struct{ d *mlx5dv.DevX }

func (k verbsKernel) device() string               { return k.d.Context().Device().Name }
func (k verbsKernel) General(in, out []byte) error { return k.d.General(in, out) }
func (k verbsKernel) QueryEQN(v uint32) (uint32, error) {
	return k.d.QueryEQN(v)
}
func (k verbsKernel) Close() error { return k.d.Close() }
func (k verbsKernel) ClockInfo() (mlx5dv.ClockInfo, error) {
	return k.d.ClockInfo()
}

func (k verbsKernel) CreateObj(in, out []byte) (kobj, error) {
	o, err := k.d.CreateObj(in, out)
	if err != nil {
		return nil, err
	}
	return o, nil
}

type verbsUMEM struct{ *mlx5dv.UMEM }

func (u verbsUMEM) id() uint32 { return u.ID }

func (k verbsKernel) RegUMEM(mem []byte, a verbs.Access) (kumem, error) {
	u, err := k.d.RegUMEM(mem, a)
	if err != nil {
		return nil, err
	}
	return verbsUMEM{u}, nil
}

func (k verbsKernel) RegUMEMDMABuf(fd int, offset, length uint64, a verbs.Access) (kumem, error) {
	u, err := k.d.RegUMEMDMABuf(fd, offset, length, a)
	if err != nil {
		return nil, err
	}
	return verbsUMEM{u}, nil
}

type verbsUAR struct{ *mlx5dv.UARPage }

func (u verbsUAR) index() uint32 { return u.PageID }

func (k verbsKernel) AllocUAR(t mlx5dv.UARType) (kuar, error) {
	p, err := k.d.AllocUAR(t)
	if err != nil {
		return nil, err
	}
	return verbsUAR{p}, nil
}

func (k verbsKernel) RootRule(table kobj) (func() error, error) {
	m, err := k.d.CreateFlowMatcher(mlx5dv.MatcherSpec{Table: mlx5dv.FlowTableNICRX})
	if err != nil {
		return nil, err
	}
	f, err := m.CreateFlow(mlx5dv.FlowSpec{Dest: table.(*mlx5dv.DevXObj)})
	if err != nil {
		m.Close()
		return nil, err
	}
	return func() error {
		if err := f.Close(); err != nil {
			return err
		}
		return m.Close()
	}, nil
}

type verbsPP struct{ *mlx5dv.PP }

func (p verbsPP) index() uint16 { return p.Index }

func (k verbsKernel) AllocPP(ctx []byte, dedicated bool) (kpp, error) {
	p, err := k.d.AllocPP(ctx, dedicated)
	if err != nil {
		return nil, err
	}
	return verbsPP{p}, nil
}
