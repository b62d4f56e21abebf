# AF_XDP engine (afxdp/), flow steering (flow/) and its XDP program (flow/xdp/), the substrate (xsk/) and
# the software loopback engine (swloop/). Root-only tests skip with a message elsewhere.
.PHONY: test-xdp bench-xdp

test-xdp:
	$(GO) test $(GOTESTFLAGS) ./xsk/... ./flow/... ./afxdp/... ./swloop/...
	$(GO) test $(GOTESTFLAGS) -run 'XDP|Loopback' ./integration/ .

# RX Mpps of engine xdp vs DPDK testpmd (af_xdp vdev, rxonly) on the same veth, same sender,
# 64 B and 1500 B frames; prints the ratio per round and the median. Needs root, dpdk-testpmd
# and hugepages (set up and restored by the script). BENCH_SECONDS sets the length of each
# run, ROUNDS the number of back-to-back daqiri/testpmd rounds (default 3).
bench-xdp: tools
	$(GO) build -o $(BIN)/xdp-rxonly ./bench/xdp/rxonly
	bash bench/xdp/run.sh
