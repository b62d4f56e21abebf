# reorder/: RX reorder and aggregation (CPU and GPU), memory kinds host_pinned/device (gpu.go).
.PHONY: test-reorder

# CPU property tests, conversions against math/big, the session hook and memory-kind checks.
test-reorder:
	$(GO) test $(GOTESTFLAGS) ./reorder ./engine
	$(GO) test $(GOTESTFLAGS) -run 'Reorder|GPUMemory' .
