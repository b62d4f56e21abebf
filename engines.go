package daqiri

import (
	"github.com/daqiri-go/daqiri/afxdp"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/mlx5"
	"github.com/daqiri-go/daqiri/roce"
	"github.com/daqiri-go/daqiri/socket"
	"github.com/daqiri-go/daqiri/swloop"
)

// builtin is the table of engines this library has, by resolved engine name
// (config.ResolveEngine). A new engine plugs in here with one line: its package's Open, which
// returns an engine.Engine plus whichever capabilities it has (engine.FlowEngine,
// engine.Connector, engine.RDMA, ...).
func builtin(name string) engine.Opener {
	switch name {
	case config.EngineSocket:
		return socket.Open
	case config.EngineXDP:
		return afxdp.Open
	case config.EngineLoopback:
		return swloop.Open
	case config.EngineRoCE:
		return roce.Open
	case config.EngineMLX5:
		return mlx5.Open
	}
	return nil
}

// opener picks the engine implementation for a resolved engine name: the session's override
// (withEngine) or the built-in one.
func opener(cfg *config.Config, name string, ports []*engine.Port, override map[string]engine.Opener) (engine.Opener, error) {
	path := ports[0].Path()
	if o := override[name]; o != nil {
		return o, nil
	}
	if o := builtin(name); o != nil {
		return o, nil
	}
	switch name {
	case config.EngineDPDK:
		return nil, cfg.Errorf("engine", "engine dpdk: daqiri-go has no DPDK engine; raw streams run on engine xdp (AF_XDP on any Linux netdev)")
	case "":
		return nil, cfg.Errorf(path+".address", "cannot tell which engine serves interface %s from address %q", ports[0].Name, ports[0].Config.Address)
	}
	return nil, cfg.Errorf(path, "interface %s needs engine %s, which is not available in this build", ports[0].Name, name)
}

// sessionHook lets an optional service (reorder, metrics, ...) attach to sessions. open runs
// after queues exist and before engines start; close runs after engines stopped.
type sessionHook struct {
	name  string
	open  func(*Session) error
	close func(*Session)
}

// services are the optional services every session attaches, in the order they open
// (metrics first, then reorder; they close in reverse). Each keeps its per-session state in
// the Session (fields metricsReg, reorder).
func services() []sessionHook {
	return []sessionHook{
		{name: "metrics", open: openMeterMetrics, close: closeMeterMetrics},
		{name: "reorder", open: openReorder, close: closeReorder},
	}
}
