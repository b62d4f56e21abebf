package daqiri

import (
	"fmt"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// opener picks the engine implementation for a resolved engine name.
func opener(cfg *config.Config, name string, ports []*engine.Port) (engine.Opener, error) {
	path := ports[0].Path()
	switch name {
	case config.EngineSocket:
		return socketOpen, nil
	case config.EngineDPDK:
		return nil, cfg.Errorf("engine", "engine dpdk: daqiri-go has no DPDK engine; raw streams run on engine xdp (AF_XDP on any Linux netdev)")
	case config.EngineXDP, config.EngineLoopback, config.EngineRoCE, config.EngineMLX5:
		return nil, cfg.Errorf(path, "interface %s needs engine %s, which is not available in this build yet", ports[0].Name, name)
	case "":
		return nil, cfg.Errorf(path+".address", "cannot tell which engine serves interface %s from address %q", ports[0].Name, ports[0].Config.Address)
	}
	return nil, fmt.Errorf("unknown engine %q", name)
}
