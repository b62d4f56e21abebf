# config/: DAQIRI YAML schema v1 loader and validator.
.PHONY: test-config

test-config:
	$(GO) test $(GOTESTFLAGS) ./config

# fuzz runs the config loader's fuzz target (corpus in config/testdata/fuzz/FuzzParse).
FUZZTIME ?= 60s
fuzz:
	$(GO) test ./config -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME)
