package flow

// Unexported helpers the external tests (package flow_test) check directly.
var (
	DecapOf    = decapOf
	IPChecksum = ipChecksum
)
