# Fuzz targets: the config loader, the TCP framing decoder, the vfio-user message handlers, the packet classifier (flow model
# and reference parser) and the reorder plans' bit-field extraction. Seed corpora live in each
# package's testdata/fuzz/<target>. `make fuzz` runs each for FUZZTIME (default 60s); `make
# test` runs each for 5 s. Go fuzzes one target per run, hence the loop.
FUZZTIME ?= 60s
# Extra flags for every run. `make test` bounds minimisation (-fuzzminimizetime): a run whose
# time ends while the fuzzer minimises a new input fails with "context deadline exceeded".
FUZZFLAGS ?=
FUZZ_TARGETS := ./config:FuzzParse ./socket:FuzzFramer ./flow:FuzzClassify ./reorder:FuzzReadField ./mlx5/model/vfiouser:FuzzParse

# Go's fuzzer can still end a run with "context deadline exceeded" and nothing found when its
# time runs out in the middle of its own bookkeeping (minimising, or a worker's last batch on
# a loaded machine): such a run, with no failing input written, is run once more; a real
# failure (an input written to testdata/fuzz) fails at once.
.PHONY: fuzz
fuzz:
	@set -e; log=$$(mktemp); trap 'rm -f "$$log"' EXIT; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		for try in 1 2; do \
			echo "== fuzz $$fn ($$pkg) for $(FUZZTIME)"; \
			if $(GO) test $$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) > "$$log" 2>&1; then cat "$$log"; break; fi; \
			cat "$$log"; \
			if [ $$try = 1 ] && grep -q "context deadline exceeded" "$$log" && ! grep -q "Failing input written" "$$log"; then \
				echo "== fuzz $$fn: the run's time ended inside the fuzzer's bookkeeping, nothing found; once more"; continue; fi; \
			exit 1; \
		done; \
	done
