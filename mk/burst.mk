# The whole burst path without I/O (software loopback, 64 B frames: TX burst get → fill → send
# → RX burst → free), ns per packet and allocations per packet, engine cost alone ("lengths"),
# with Ethernet/IPv4/UDP headers written by the three helpers as a sender does ("headers"), and
# the same headers from one prepared with NewUDPv4Header ("template"), and both with the
# burst-wide calls a sender of one flow's equal frames makes ("lengths-all": SetAllPacketLengths,
# "template-all": SetAllUDPv4Headers + SetAllPacketLengths). The raw output goes to
# $(BIN)/bench-burst.txt, then a table (mk/benchtable.awk). The benchmark goroutine is pinned to
# the last allowed core (DAQIRI_BENCH_CORE=n or off), the collector is off during each case
# (gcs: collections during the run, 0 expected); BURST_COUNT runs of BURST_BENCHTIME each.
# ctl-ratio says which of the GPU host's two speeds a run met at its ends (≈ 0.7 fast, ≥ 1.0
# slow: another hardware thread busy on the core; BENCHMARKS.md, issue 31 fourth round).
.PHONY: bench-burst
BURST_BENCHTIME ?= 0.5s
BURST_COUNT ?= 5

bench-burst:
	@mkdir -p $(BIN)
	$(call bench_run,.,daqiri,-test.run '^$$' -test.bench LoopbackBurstPath -test.benchtime $(BURST_BENCHTIME) -test.count $(BURST_COUNT)) > $(BIN)/bench-burst.txt || { cat $(BIN)/bench-burst.txt; exit 1; }
	@cat $(BIN)/bench-burst.txt
	@echo
	@awk -f mk/benchtable.awk $(BIN)/bench-burst.txt
