#!/usr/bin/env bash
# make bench-socket: the daqiri socket engine and iperf3 side by side on loopback, same
# payload sizes, same duration, one after the other in one run. Prints a table with ratios.
#   DURATION=5 REPEATS=3 bash bench/socket/run.sh
# On a machine without Go or iperf3 (the GPU host), point it at prebuilt ones:
#   BIN=dir-holding-daqiri-bench IPERF3=path/to/iperf3 bash bench/socket/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-5}
REPEATS=${REPEATS:-3}
BIN=${BIN:-bin}
IPERF3=${IPERF3:-iperf3}
command -v "$IPERF3" >/dev/null || { echo "bench-socket: $IPERF3 not found (apt-get install iperf3, or set IPERF3)"; exit 1; }
command -v python3 >/dev/null || { echo "bench-socket: python3 not found"; exit 1; }
[ -x "$BIN/daqiri-bench" ] || go build -o "$BIN/" ./tools/daqiri-bench
out=$(mktemp -d)
srv=
trap 'rm -rf "$out"; [ -z "$srv" ] || kill "$srv" 2>/dev/null || true' EXIT

iperf() { # iperf3 client args...; prints JSON
  "$IPERF3" -s -p 5399 -1 >/dev/null 2>&1 &
  srv=$!
  sleep 0.3
  "$IPERF3" -c 127.0.0.1 -p 5399 -t "$DURATION" --json "$@" || true
  wait $srv 2>/dev/null || true
  srv=
}

goodput() { # iperf3 JSON file -> received goodput in Gb/s
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]; s=e.get("sum") or e["sum_received"]; print(s["bits_per_second"]*(1-s.get("lost_percent",0)/100)/1e9)' "$1"
}

run_case() { # name, iperf args, daqiri args
  local name=$1 iargs=$2 dargs=$3
  for r in $(seq "$REPEATS"); do
    iperf $iargs > "$out/$name.iperf.$r.json"
    "$BIN/daqiri-bench" $dargs --duration "${DURATION}s" --json > "$out/$name.daqiri.$r.json"
    if [[ $name == udp* ]]; then
      # Also run daqiri paced at 1.05x what iperf3 delivered: the claim is zero loss at (at
      # least) iperf3's goodput.
      rate=$(python3 -c "print(1.05*$(goodput "$out/$name.iperf.$r.json"))")
      "$BIN/daqiri-bench" $dargs --rate "$rate" --duration "${DURATION}s" --json > "$out/$name.paced.$r.json"
    fi
    echo "  $name: repeat $r done" >&2
  done
}

echo "bench-socket: ${DURATION}s per run, median of $REPEATS, $(nproc) cores, kernel $(uname -r), $("$IPERF3" --version | head -1)" >&2
run_case udp8000 "-u -b 0 -l 8000" "--config bench/socket/udp.yaml --payload 8000"
run_case udp1000 "-u -b 0 -l 1000" "--config bench/socket/udp.yaml --payload 1000"
run_case tcp8000 "-l 8000" "--config bench/socket/tcp.yaml --payload 8000"
run_case tcp64000 "-l 64000" "--config bench/socket/tcp.yaml --payload 64000"

python3 - "$out" "$REPEATS" <<'PY'
import json, sys, statistics
out, reps = sys.argv[1], int(sys.argv[2])
def load(p):
    with open(p) as f: return json.load(f)
def lost(d):
    return d["dropped_packets"] + max(d["unaccounted_packets"], 0)
def loss(d):
    return 100.0 * lost(d) / max(d["tx_packets"], 1)
rows, paced = [], []
for name in ["udp8000", "udp1000", "tcp8000", "tcp64000"]:
    ig, il, dg, dl, pg, pl, dn = [], [], [], [], [], [], 0
    for r in range(1, reps + 1):
        i = load(f"{out}/{name}.iperf.{r}.json")["end"]
        d = load(f"{out}/{name}.daqiri.{r}.json")
        if name.startswith("udp"):
            s = i["sum"]
            # iperf3's receiver goodput: bytes that arrived; loss from its own counters.
            ig.append(s["bits_per_second"] * (1 - s["lost_percent"] / 100) / 1e9)
            il.append(s["lost_percent"])
        else:
            ig.append(i["sum_received"]["bits_per_second"] / 1e9)
            il.append(0.0)
        dg.append(d["rx_gbps"])
        dl.append(loss(d))
        dn += lost(d)
        if name.startswith("udp"):
            p = load(f"{out}/{name}.paced.{r}.json")
            pg.append(p["rx_gbps"])
            pl.append(loss(p))
    rows.append((name, statistics.median(dg), statistics.median(dl), dn, statistics.median(ig), statistics.median(il)))
    if pg:
        paced.append((name, statistics.median(pg), max(pl), statistics.median(ig)))
print(f"\n{'case':<10} {'daqiri Gb/s':>12} {'loss %':>8} {'lost':>6} {'iperf3 Gb/s':>12} {'loss %':>8} {'ratio':>7}")
for n, dg, dl, dn, ig, il in rows:
    print(f"{n:<10} {dg:12.2f} {dl:8.3f} {dn:6d} {ig:12.2f} {il:8.3f} {dg/ig if ig else 0:6.2f}x")
print(f"\n{'paced at 1.05x iperf3':<22} {'daqiri Gb/s':>12} {'max loss %':>10} {'iperf3 Gb/s':>12} {'ratio':>7}")
for n, g, l, ig in paced:
    print(f"{n:<22} {g:12.2f} {l:10.3f} {ig:12.2f} {g/ig if ig else 0:6.2f}x")
print("\nGb/s = payload goodput received (medians); daqiri loss counts dropped + unaccounted packets")
print("(loss % the median, lost the packets over all repeats).")
PY
