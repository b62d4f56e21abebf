#!/usr/bin/env bash
# make bench-xdp: RX Mpps of daqiri's xdp engine next to DPDK testpmd (af_xdp vdev, rxonly)
# on the same veth, with the same traffic source (daqiri-bench --mode tx, engine xdp AF_XDP
# TX in the peer namespace), for 64-byte and 1500-byte frames. ROUNDS rounds (default 3), each
# running daqiri and testpmd back to back per frame size (in alternating order); prints every
# round, the median ratio and the median share of the offered frames each received. Then
# measures the software pacer (pacing_mbps) over the same veth.
#
# The daqiri receiver is bench/xdp/rxonly (built by make bench-xdp as $BIN/xdp-rxonly): one
# goroutine polling RxBurst and freeing each burst, as testpmd's rxonly lcore does.
# daqiri-bench --mode rx is not used: with no TX queue its progress loop spins on the
# receiver's core.
#
# Both receivers get the same ring depth: 2048 buffers on the fill ring and 2048 RX ring
# entries (RXBUFS=4096 in rx.yaml, testpmd --rxd=2048; see rx.yaml). RXBUFS=16384 gives the
# daqiri queue 4096-entry rings, which testpmd's PMD cannot be configured to match.
#
# Needs root, iproute2, dpdk-testpmd (Debian dpdk-dev) with the af_xdp PMD
# (librte-net-af-xdp23). Hugepages (for testpmd and the daqiri regions) are set up here and
# restored on exit. BENCH_SECONDS (default 5) is the length of each sending period. The load
# average is printed before and after: other work on the receiver's core makes it miss its
# rings for milliseconds at a time, and both receivers then drop what their rings cannot hold.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${BENCH_SECONDS:-5}
BIN=${BIN:-bin}
BENCH=$BIN/daqiri-bench
RXONLY=${RXONLY:-$BIN/xdp-rxonly}
ROUNDS=${ROUNDS:-3}
TESTPMD=${TESTPMD:-dpdk-testpmd}
[ "$(id -u)" = 0 ] || { echo "bench-xdp: needs root (namespaces, XDP, hugepages)"; exit 1; }
command -v "$TESTPMD" >/dev/null || { echo "bench-xdp: $TESTPMD not found (apt-get install dpdk-dev librte-net-af-xdp23)"; exit 1; }
[ -x "$BENCH" ] || { echo "bench-xdp: $BENCH missing (make tools)"; exit 1; }
[ -x "$RXONLY" ] || { echo "bench-xdp: $RXONLY missing (go build -o $RXONLY ./bench/xdp/rxonly)"; exit 1; }

ID=$$
NSA=dqbench-a-$ID NSB=dqbench-b-$ID VA=dqxa$ID VB=dqxb$ID
WORK=$(mktemp -d)
HP=/proc/sys/vm/nr_hugepages
HP_OLD=$(cat $HP)
MOUNTED=""
AG_OLD=""
cleanup() {
  [ -n "$AG_OLD" ] && echo "$AG_OLD" > /proc/$$/autogroup
  ip netns del "$NSA" 2>/dev/null || true
  ip netns del "$NSB" 2>/dev/null || true
  [ -n "$MOUNTED" ] && umount "$MOUNTED" 2>/dev/null && rmdir "$MOUNTED" 2>/dev/null
  echo "$HP_OLD" > $HP
  rm -rf "$WORK"
}
trap cleanup EXIT
[ -n "${KEEP_LOG:-}" ] && trap "cp \"\$WORK/pmd.log\" /tmp/pmd.log 2>/dev/null; cleanup" EXIT

# BENCH_NICE (opt-in, e.g. -10): the nice value of this session's scheduling group while the
# script runs (/proc/PID/autogroup; restored on exit). With sched_autogroup, plain nice does
# not reach across sessions, so this is what keeps other sessions' work off the receiver's
# core; it takes that CPU time from them, for both receivers alike.
if [ -n "${BENCH_NICE:-}" ] && [ -w /proc/$$/autogroup ]; then
  AG_OLD=$(sed -n 's/.* nice *//p' /proc/$$/autogroup)
  echo "$BENCH_NICE" > /proc/$$/autogroup
fi

# 256 × 2 MiB hugepages for testpmd (through a hugetlbfs mount of our own) and the daqiri
# regions (rx.yaml, tx.yaml: kind huge).
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

RXBUFS=${RXBUFS:-4096}
sed -e "s/IFACE/$VB/" -e "s/RXBUFS/$RXBUFS/" bench/xdp/rx.yaml > "$WORK/rx.yaml"
txcfg() { sed -e "s/IFACE/$VA/" -e "s/PACING/$1/" bench/xdp/tx.yaml > "$WORK/tx.yaml"; }

# The sender runs on core 0, each receiver gets core 1 (testpmd's forwarding lcore is 1, its
# main lcore 0 only prints statistics once a second).
# send SIZE SECONDS: the traffic source, in namespace A; prints its JSON result to $WORK/tx.json.
send() {
  ip netns exec "$NSA" taskset -c 0 "$BENCH" --config "$WORK/tx.yaml" --mode tx --payload "$1" --duration "${2}s" --json --quiet > "$WORK/tx.json"
}
jnum() { sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }

# daqiri SIZE: one daqiri receiver run; sets GOT, SENTN, DROPS.
daqiri() {
  # The receiver runs 2 s longer than the sender, which starts 1 s after it.
  ip netns exec "$NSB" taskset -c 1 "$RXONLY" --config "$WORK/rx.yaml" --duration "$((SECS + 2))s" > "$WORK/rx.json" &
  local rxpid=$!
  sleep 1
  send "$1" "$SECS"
  wait $rxpid
  GOT=$(jnum "$WORK/rx.json" rx_packets)
  SENTN=$(jnum "$WORK/tx.json" tx_packets)
  DROPS=$(sed -n 's/.*"drops_text": *"\([^"]*\)".*/\1/p' "$WORK/rx.json")
  DROPS="${DROPS:-none}; $(jnum "$WORK/rx.json" full_bursts) bursts of $(jnum "$WORK/rx.json" max_burst)"
}

# testpmd SIZE: one testpmd rxonly run on the same veth; sets GOT, SENTN, DROPS.
testpmd() {
  ip netns exec "$NSB" timeout -s INT $((SECS + 30)) "$TESTPMD" -l 0,1 --no-pci --huge-dir "$MOUNTED" --file-prefix "dqbench$ID" \
      --vdev "net_af_xdp0,iface=$VB,start_queue=0,queue_count=1" -- \
      --forward-mode=rxonly --auto-start --nb-cores=1 --rxq=1 --txq=1 --rxd="$PMD_RXD" --stats-period 1 > "$WORK/pmd.log" 2>&1 < /dev/null &
  local pmdpid=$!
  for i in $(seq 150); do grep -q 'NIC statistics for port' "$WORK/pmd.log" 2>/dev/null && break; sleep 0.2; done
  [ -n "${KEEP_LOG:-}" ] && ip -n "$NSB" -d link show "$VB" >> "$WORK/pmd.log"
  send "$1" "$SECS"
  sleep 1.5 # a last statistics period after the sender stopped
  kill -INT $pmdpid 2>/dev/null || true
  wait $pmdpid || true
  GOT=$(grep -A2 'Accumulated forward statistics' "$WORK/pmd.log" | sed -n 's/.*RX-packets: *\([0-9]*\).*/\1/p' | head -1)
  if [ -z "$GOT" ]; then
    GOT=$(sed -n 's/.*RX-packets: *\([0-9]*\).*/\1/p' "$WORK/pmd.log" | tail -1)
  fi
  SENTN=$(jnum "$WORK/tx.json" tx_packets)
  DROPS="RX-missed $(sed -n 's/.*RX-missed: *\([0-9]*\).*/\1/p' "$WORK/pmd.log" | tail -1)"
  if [ -z "$GOT" ]; then
    echo "testpmd ${1} B: no RX-packets line; log:"; tail -30 "$WORK/pmd.log"; GOT=0
  fi
}

mpps() { awk -v n="$1" -v s="$SECS" 'BEGIN{printf "%.3f", n/s/1e6}'; }

# testpmd's RX ring: 2048 entries, as the daqiri socket's RX ring with RXBUFS=4096 (see
# rx.yaml; the PMD's fill ring holds 2048 buffers whatever --rxd says).
PMD_RXD=${PMD_RXD:-2048}
declare -A RATIOS DQPCT PMDPCT
txcfg 0
echo "rings: daqiri num_bufs $RXBUFS, testpmd --rxd $PMD_RXD; $(cat /proc/$$/autogroup 2>/dev/null); load average $(cut -d' ' -f1-3 /proc/loadavg)"
# median FORMAT: the median of the numbers on stdin (n/a skipped), printed with FORMAT.
median() { tr ' ' '\n' | grep -v -e n/a -e '^$' | sort -g | awk -v f="$1" '{a[NR]=$1} END{ if (NR == 0) print "n/a"; else printf f, (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2 }'; }
pct() { awk -v n="$1" -v s="$2" 'BEGIN{ if (s > 0) printf "%.1f", 100*n/s; else print "n/a"}'; }
for round in $(seq "$ROUNDS"); do
  for size in 64 1500; do
    # Alternate which receiver goes first, so a drift in the machine's load during a round
    # does not always favour the same one.
    order="daqiri testpmd"
    [ $((round % 2)) = 0 ] && order="testpmd daqiri"
    for who in $order; do
      "$who" "$size"
      if [ "$who" = daqiri ]; then
        ours=$(mpps "$GOT")
        DQPCT[$size]="${DQPCT[$size]:-} $(pct "$GOT" "$SENTN")"
        echo "round $round  daqiri xdp     ${size} B: received $GOT of $SENTN sent in ${SECS} s = $ours Mpps (offered $(mpps "$SENTN") Mpps; drops: $DROPS)"
      else
        pmd=$(mpps "$GOT")
        PMDPCT[$size]="${PMDPCT[$size]:-} $(pct "$GOT" "$SENTN")"
        echo "round $round  testpmd af_xdp ${size} B: received $GOT of $SENTN sent in ${SECS} s = $pmd Mpps (offered $(mpps "$SENTN") Mpps; $DROPS)"
      fi
    done
    r=$(awk -v a="$ours" -v b="$pmd" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "n/a"}')
    echo "round $round  ${size} B ratio ${r}x"
    RATIOS[$size]="${RATIOS[$size]:-} $r"
  done
done

# The ratio is of received Mpps. Where both receivers keep up, it is the ratio of what the
# shared sender core managed to offer in the two runs; the share of the offered frames each
# received shows which receiver lost frames.
echo
printf "%-8s %-32s %8s %18s %18s\n" "frame" "ratio daqiri/testpmd per round" "median" "daqiri received" "testpmd received"
for size in 64 1500; do
  printf "%-8s %-32s %8s %17s%% %17s%%\n" "${size} B" "${RATIOS[$size]}" "$(echo ${RATIOS[$size]} | median %.2fx)" \
    "$(echo ${DQPCT[$size]} | median %.1f)" "$(echo ${PMDPCT[$size]} | median %.1f)"
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"

# Pacer: 1500-byte frames at pacing_mbps 200 and 1000; the achieved rate is the frames the
# TX queue put on the wire (its counter) × bits over the sending time.
echo
for mbps in 200 1000; do
  txcfg $mbps
  send 1500 3
  mpps=$(jnum "$WORK/tx.json" tx_mpps)
  awk -v p="$mpps" -v m="$mbps" 'BEGIN{g=p*1e6*1500*8/1e6; printf "pacer: pacing_mbps %d -> %.1f Mb/s on the wire (%+.2f %%)\n", m, g, (g-m)/m*100}'
done
