#!/usr/bin/env bash
# make bench-xdp: RX Mpps of daqiri's xdp engine next to DPDK testpmd (af_xdp vdev, rxonly)
# on the same veth, with the same traffic source (daqiri-bench --mode tx, engine xdp AF_XDP
# TX in the peer namespace), for 64-byte and 1500-byte frames. One run each; prints the
# ratio. Then measures the software pacer (pacing_mbps) over the same veth.
#
# Needs root, iproute2, dpdk-testpmd (Debian dpdk-dev) with the af_xdp PMD
# (librte-net-af-xdp23). Hugepages and a hugetlbfs mount for testpmd are set up here and
# restored on exit. BENCH_SECONDS (default 5) is the length of each sending period.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${BENCH_SECONDS:-5}
BIN=${BIN:-bin}
BENCH=$BIN/daqiri-bench
TESTPMD=${TESTPMD:-dpdk-testpmd}
[ "$(id -u)" = 0 ] || { echo "bench-xdp: needs root (namespaces, XDP, hugepages)"; exit 1; }
command -v "$TESTPMD" >/dev/null || { echo "bench-xdp: $TESTPMD not found (apt-get install dpdk-dev librte-net-af-xdp23)"; exit 1; }
[ -x "$BENCH" ] || { echo "bench-xdp: $BENCH missing (make tools)"; exit 1; }

ID=$$
NSA=dqbench-a-$ID NSB=dqbench-b-$ID VA=dqxa$ID VB=dqxb$ID
WORK=$(mktemp -d)
HP=/proc/sys/vm/nr_hugepages
HP_OLD=$(cat $HP)
MOUNTED=""
cleanup() {
  ip netns del "$NSA" 2>/dev/null || true
  ip netns del "$NSB" 2>/dev/null || true
  [ -n "$MOUNTED" ] && umount "$MOUNTED" 2>/dev/null && rmdir "$MOUNTED" 2>/dev/null
  echo "$HP_OLD" > $HP
  rm -rf "$WORK"
}
trap cleanup EXIT
[ -n "${KEEP_LOG:-}" ] && trap "cp \"\$WORK/pmd.log\" /tmp/pmd.log 2>/dev/null; cleanup" EXIT

# testpmd: 256 × 2 MiB hugepages and a hugetlbfs mount of our own.
echo $((HP_OLD + 256)) > $HP
MOUNTED=$WORK/huge
mkdir -p "$MOUNTED"
mount -t hugetlbfs nodev "$MOUNTED"

ip netns add "$NSA"
ip netns add "$NSB"
for ns in "$NSA" "$NSB"; do
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  ip -n "$ns" link set lo up
done
ip -n "$NSA" link add "$VA" mtu 1500 type veth peer name "$VB" netns "$NSB"
ip -n "$NSA" link set "$VA" up
ip -n "$NSB" link set "$VB" up

sed -e "s/IFACE/$VB/" bench/xdp/rx.yaml > "$WORK/rx.yaml"
txcfg() { sed -e "s/IFACE/$VA/" -e "s/PACING/$1/" bench/xdp/tx.yaml > "$WORK/tx.yaml"; }

# The sender runs on core 0, each receiver gets core 1 (testpmd's forwarding lcore is 1, its
# main lcore 0 only prints statistics once a second).
# send SIZE SECONDS: the traffic source, in namespace A; prints its JSON result to $WORK/tx.json.
send() {
  ip netns exec "$NSA" taskset -c 0 "$BENCH" --config "$WORK/tx.yaml" --mode tx --payload "$1" --duration "${2}s" --json --quiet > "$WORK/tx.json"
}
jnum() { sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }

declare -A OURS PMD SENT
txcfg 0
for size in 64 1500; do
  # daqiri: receiver runs 2 s longer than the sender, which starts 1 s after it.
  ip netns exec "$NSB" taskset -c 1 "$BENCH" --config "$WORK/rx.yaml" --mode rx --duration "$((SECS + 2))s" --json --quiet > "$WORK/rx.json" &
  rxpid=$!
  sleep 1
  send "$size" "$SECS"
  wait $rxpid
  got=$(jnum "$WORK/rx.json" rx_packets)
  sent=$(jnum "$WORK/tx.json" tx_packets)
  OURS[$size]=$(awk -v n="$got" -v s="$SECS" 'BEGIN{printf "%.3f", n/s/1e6}')
  SENT[$size]=$(awk -v n="$sent" -v s="$SECS" 'BEGIN{printf "%.3f", n/s/1e6}')
  echo "daqiri xdp  ${size} B: received $got of $sent sent in ${SECS} s = ${OURS[$size]} Mpps (offered ${SENT[$size]} Mpps)"

  # testpmd: rxonly on the same veth, printing port statistics every second until SIGINT.
  ip netns exec "$NSB" timeout -s INT $((SECS + 30)) "$TESTPMD" -l 0,1 --no-pci --huge-dir "$MOUNTED" --file-prefix "dqbench$ID" \
      --vdev "net_af_xdp0,iface=$VB,start_queue=0,queue_count=1" -- \
      --forward-mode=rxonly --auto-start --nb-cores=1 --rxq=1 --txq=1 --stats-period 1 > "$WORK/pmd.log" 2>&1 < /dev/null &
  pmdpid=$!
  for i in $(seq 150); do grep -q 'NIC statistics for port' "$WORK/pmd.log" 2>/dev/null && break; sleep 0.2; done
  [ -n "${KEEP_LOG:-}" ] && ip -n "$NSB" -d link show "$VB" >> "$WORK/pmd.log"
  send "$size" "$SECS"
  sleep 1.5 # a last statistics period after the sender stopped
  kill -INT $pmdpid 2>/dev/null || true
  wait $pmdpid || true
  pgot=$(grep -A2 'Accumulated forward statistics' "$WORK/pmd.log" | sed -n 's/.*RX-packets: *\([0-9]*\).*/\1/p' | head -1)
  if [ -z "$pgot" ]; then
    pgot=$(sed -n 's/.*RX-packets: *\([0-9]*\).*/\1/p' "$WORK/pmd.log" | tail -1)
  fi
  psent=$(jnum "$WORK/tx.json" tx_packets)
  if [ -z "$pgot" ]; then
    echo "testpmd ${size} B: no RX-packets line; log:"; tail -30 "$WORK/pmd.log"; PMD[$size]=0
  else
    PMD[$size]=$(awk -v n="$pgot" -v s="$SECS" 'BEGIN{printf "%.3f", n/s/1e6}')
    echo "testpmd af_xdp ${size} B: received $pgot of $psent sent in ${SECS} s = ${PMD[$size]} Mpps"
  fi
done

echo
printf "%-8s %14s %14s %8s\n" "frame" "daqiri Mpps" "testpmd Mpps" "ratio"
for size in 64 1500; do
  printf "%-8s %14s %14s %8s\n" "${size} B" "${OURS[$size]}" "${PMD[$size]}" \
    "$(awk -v a="${OURS[$size]}" -v b="${PMD[$size]}" 'BEGIN{ if (b > 0) printf "%.2fx", a/b; else print "n/a"}')"
done

# Pacer: 1500-byte frames at pacing_mbps 200 and 1000; the achieved rate is the frames the
# TX queue put on the wire (its counter) × bits over the sending time.
echo
for mbps in 200 1000; do
  txcfg $mbps
  send 1500 3
  mpps=$(jnum "$WORK/tx.json" tx_mpps)
  awk -v p="$mpps" -v m="$mbps" 'BEGIN{g=p*1e6*1500*8/1e6; printf "pacer: pacing_mbps %d -> %.1f Mb/s on the wire (%+.2f %%)\n", m, g, (g-m)/m*100}'
done
