package daqiri

import (
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// openers maps resolved engine names to their implementations. Each engine's file adds its
// entry in init (engines_<name>.go), so the set is fixed at build time.
var openers = map[string]engine.Opener{}

// opener picks the engine implementation for a resolved engine name.
func opener(cfg *config.Config, name string, ports []*engine.Port) (engine.Opener, error) {
	path := ports[0].Path()
	if o, ok := openers[name]; ok {
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

// hooks are registered in init by the services' files, so the set is fixed at build time.
var hooks []sessionHook
