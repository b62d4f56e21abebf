# The whole burst path without I/O (software loopback, 64 B frames: TX burst get → fill → send
# → RX burst → free), ns per packet and allocations per packet, engine cost alone ("lengths")
# and with Ethernet/IPv4/UDP headers written as a sender does ("headers").
.PHONY: bench-burst
bench-burst:
	$(GO) test -run '^$$' -bench LoopbackBurstPath -benchtime 2s -count 3 .
