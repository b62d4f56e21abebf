# Fuzz targets: the config loader, the TCP framing decoder, the vfio-user message handlers, the packet classifier (flow model
# and reference parser) and the reorder plans' bit-field extraction. Seed corpora live in each
# package's testdata/fuzz/<target>. `make fuzz` runs each for FUZZTIME (default 60s); `make
# test` runs each for 5 s. Go fuzzes one target per run, hence the loop.
FUZZTIME ?= 60s
# Extra flags for every run. `make test` bounds minimisation (-fuzzminimizetime): a run whose
# time ends while the fuzzer minimises a new input fails with "context deadline exceeded".
FUZZFLAGS ?=
FUZZ_TARGETS := ./config:FuzzParse ./socket:FuzzFramer ./flow:FuzzClassify ./reorder:FuzzReadField ./vfiouser:FuzzParse

.PHONY: fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "== fuzz $$fn ($$pkg) for $(FUZZTIME)"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS); \
	done
