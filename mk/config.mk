# config/: DAQIRI YAML schema v1 loader and validator.
.PHONY: test-config

test-config:
	$(GO) test $(GOTESTFLAGS) ./config
