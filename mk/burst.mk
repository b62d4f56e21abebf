# The whole burst path without I/O (software loopback, 64 B frames: TX burst get → fill → send
# → RX burst → free), ns per packet and allocations per packet, engine cost alone ("lengths"),
# with Ethernet/IPv4/UDP headers written by the three helpers as a sender does ("headers"), and
# the same headers from one prepared with NewUDPv4Header ("template"), and both with the
# burst-wide calls a sender of one flow's equal frames makes ("lengths-all": SetAllPacketLengths,
# "template-all": SetAllUDPv4Headers + SetAllPacketLengths). The raw output goes to
# $(BIN)/bench-burst.txt, then a table (mk/benchtable.awk). BURST_COUNT rounds, each running
# every case once for BURST_BENCHTIME, the benchmark goroutine pinned in round r to the r-th
# allowed core down from the last (DAQIRI_BENCH_CORE=last-r; set DAQIRI_BENCH_CORE=n or off to
# keep one core). On the GPU host, DAQIRI_BENCH_WAIT=fast starts each run once the host shows
# its fast speed (at most 10 s): its cores all turn slow together about half of the time, in
# spells of seconds (benchtest.Pin; BENCHMARKS.md, issue 31 sixth round); the speed test is
# calibrated there (other machines' control ratios differ: ≈ 2 on the 2-vCPU dev VM, which would
# only wait). The collector is off during each case (gcs: collections during the run, 0
# expected).
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
		export DAQIRI_BENCH_CORE=$${core:-last-$$r}; \
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
