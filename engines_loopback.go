package daqiri

import (
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/swloop"
)

func init() { openers[config.EngineLoopback] = swloop.Open }
