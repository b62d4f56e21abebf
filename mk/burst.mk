# The whole burst path without I/O (software loopback, 64 B frames: TX burst get → fill → send
# → RX burst → free), ns per packet and allocations per packet, engine cost alone ("lengths"),
# with Ethernet/IPv4/UDP headers written by the three helpers as a sender does ("headers"), and
# the same headers from one prepared with NewUDPv4Header ("template"), and both with the
# burst-wide calls a sender of one flow's equal frames makes ("lengths-all": SetAllPacketLengths,
# "template-all": SetAllUDPv4Headers + SetAllPacketLengths). The raw output goes to
# $(BIN)/bench-burst.txt, then a table (mk/benchtable.awk). BURST_COUNT rounds, each running
# every case once for BURST_BENCHTIME, the benchmark goroutine pinned in round r to the r-th
# allowed core down from the last (DAQIRI_BENCH_CORE=last-r; set DAQIRI_BENCH_CORE=n or off to
# keep one core): a case's runs are seconds apart on different cores, so one core's slow spell
# (seconds long on the GPU host) meets one run of a case, not all of them — the median is
# taken over runs of the same code either way. The collector is off during each case (gcs:
# collections during the run, 0 expected).
# ctl-ratio says which of the GPU host's two speeds a run met at its ends (≈ 0.7 fast, ≥ 1.0
# slow: another hardware thread busy on the core; BENCHMARKS.md, issue 31 fourth round).
.PHONY: bench-burst
BURST_BENCHTIME ?= 0.5s
BURST_COUNT ?= 5

bench-burst:
	@mkdir -p $(BIN)
	@: > $(BIN)/bench-burst.txt
	@set -e; core=$${DAQIRI_BENCH_CORE:-}; for r in $$(seq 0 $$(($(BURST_COUNT) - 1))); do \
		export DAQIRI_BENCH_CORE=$${core:-last-$$r}; \
		echo "bench-burst: round $$((r + 1)) of $(BURST_COUNT), DAQIRI_BENCH_CORE=$$DAQIRI_BENCH_CORE"; \
		$(call bench_run,.,daqiri,-test.run '^$$' -test.bench LoopbackBurstPath -test.benchtime $(BURST_BENCHTIME) -test.count 1) >> $(BIN)/bench-burst.txt || { cat $(BIN)/bench-burst.txt; exit 1; }; \
	done
	@cat $(BIN)/bench-burst.txt
	@echo
	@awk -f mk/benchtable.awk $(BIN)/bench-burst.txt
