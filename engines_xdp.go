package daqiri

import (
	"github.com/daqiri-go/daqiri/afxdp"
	"github.com/daqiri-go/daqiri/config"
)

func init() { openers[config.EngineXDP] = afxdp.Open }
