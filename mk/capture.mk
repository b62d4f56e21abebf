# capture/ (raw, pcap, GDS via cuFile, S3), metrics/ and tools/daqiri-capture.
#
# test-capture runs the capture, metrics and daqiri-capture tests, then the integration tests
# that capture real traffic across a namespace pair and check it with tshark/capinfos
# (root; .ci/apt.d/capture.txt installs tshark) and the S3 tests against a local versitygw
# (built from the module cache by `go tool versitygw`).
# The GDS tests need a GPU and libcufile: they are built by `make gpu-test` (bin/gpu/).
.PHONY: test-capture capture

GPU_TEST_PKGS += ./capture/gds

test-capture:
	$(GO) test $(GOTESTFLAGS) ./capture/... ./metrics/... ./tools/daqiri-capture/...
	$(GO) test $(GOTESTFLAGS) -run 'Metrics' . ./tools/daqiri-bench
	$(GO) test $(GOTESTFLAGS) -run 'Capture' ./integration

# capture builds daqiri-capture into $(BIN)/.
capture:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./tools/daqiri-capture
