package daqiri

import (
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/roce"
)

func init() { openers[config.EngineRoCE] = roce.Open }
