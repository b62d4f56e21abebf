package daqiri

import "github.com/daqiri-go/daqiri/socket"

var socketOpen = socket.Open
