package model

import "github.com/daqiri-go/daqiri/mlx5/model/internal/datapath"

// DeviceKeys is the device's MKEY table as its datapath sees it (keys), for the tests of
// package model_test.
func DeviceKeys(d *Device) datapath.SpanTranslator { return keys{d} }
