package daqiri

import (
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/socket"
)

func init() { openers[config.EngineSocket] = socket.Open }
