# The whole burst path without I/O (software loopback, 64 B frames: TX burst get → fill → send
# → RX burst → free), ns per packet and allocations per packet, engine cost alone ("lengths"),
# with Ethernet/IPv4/UDP headers written by the three helpers as a sender does ("headers"), and
# the same headers from one prepared with NewUDPv4Header ("template"), and both with the
# burst-wide calls a sender of one flow's equal frames makes ("lengths-all": SetAllPacketLengths,
# "template-all": SetAllUDPv4Headers + SetAllPacketLengths). The raw output goes to
# $(BIN)/bench-burst.txt, then a table (mk/benchtable.awk). BURST_COUNT rounds, each running
# every case once for BURST_BENCHTIME, each run's benchmark goroutine pinned to the core that
# measured quietest just before it (DAQIRI_BENCH_CORE=quiet, benchtest.Pin: the GPU host's
# cores have spells of seconds with another tenant's hardware thread busy beside them, which a
# deployment's dedicated engine core does not; set DAQIRI_BENCH_CORE=last-r, n or off for the
# earlier schemes). The collector is off during each case (gcs: collections during the run,
# 0 expected).
# ctl-ratio says which of the GPU host's two speeds a run met at its ends (≈ 0.7 fast, ≥ 1.0
# slow: another hardware thread busy on the core; BENCHMARKS.md, issue 31 fourth round); the
# table gives the median of all runs and, apart, of the runs that kept the fast speed.
.PHONY: bench-burst
BURST_BENCHTIME ?= 0.5s
BURST_COUNT ?= 5
# The burst benchmarks again, built with profile-guided optimisation from this profile (what an
# application gets with it as its main package's default.pgo): the header helpers and
# SetUDPv4Header then inline into the caller's loop, which the plain build's inlining budget
# does not allow. `make burst-pgo-profile` rewrites it from the plain build's benchmarks.
BURST_PGO ?= bench/pgo/burst.pprof
burst_flags = -test.run '^$$' -test.bench LoopbackBurstPath -test.benchtime $(BURST_BENCHTIME) -test.count 1
burst_pgo_run = $(if $(BENCH_PREBUILT),$(abspath $(BENCH_BIN))/daqiri-pgo.test $(burst_flags),$(GO) test -pgo=$(BURST_PGO) $(burst_flags) .)

bench-burst:
	@mkdir -p $(BIN)
	@: > $(BIN)/bench-burst.txt; : > $(BIN)/bench-burst-pgo.txt
	@set -e; core=$${DAQIRI_BENCH_CORE:-}; for r in $$(seq 0 $$(($(BURST_COUNT) - 1))); do \
		export DAQIRI_BENCH_CORE=$${core:-quiet}; \
		echo "bench-burst: round $$((r + 1)) of $(BURST_COUNT), DAQIRI_BENCH_CORE=$$DAQIRI_BENCH_CORE"; \
		$(call bench_run,.,daqiri,$(burst_flags)) >> $(BIN)/bench-burst.txt || { cat $(BIN)/bench-burst.txt; exit 1; }; \
		$(burst_pgo_run) >> $(BIN)/bench-burst-pgo.txt || { cat $(BIN)/bench-burst-pgo.txt; exit 1; }; \
	done
	@cat $(BIN)/bench-burst.txt
	@echo
	@awk -f mk/benchtable.awk $(BIN)/bench-burst.txt
	@echo
	@echo "The same, built with -pgo=$(BURST_PGO) ($(BIN)/bench-burst-pgo.txt):"
	@echo
	@awk -f mk/benchtable.awk $(BIN)/bench-burst-pgo.txt

.PHONY: burst-pgo-profile
burst-pgo-profile:
	@mkdir -p $(BIN) $(dir $(BURST_PGO))
	$(GO) test -run '^$$' -bench LoopbackBurstPath -benchtime 0.3s -cpuprofile $(BURST_PGO) -o $(BIN)/burst-profile.test .
