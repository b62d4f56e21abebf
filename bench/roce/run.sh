#!/usr/bin/env bash
# make bench-roce: daqiri-go's RoCE engine next to perftest (ib_send_bw for SEND/RECV,
# ib_write_bw for RDMA WRITE) on the same Soft-RoCE device (rxe0) in the same VM, one RC QP
# each, same message sizes (4 KiB, 64 KiB, 1 MiB), one after the other in one run. Prints
# the table (Gb/s and the daqiri-go/perftest ratio) and the command; RESULTS.md keeps one.
#   CPUS=1 bash bench/roce/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
CPUS=${CPUS:-1}
for t in ib_send_bw ib_write_bw qemu-system-x86_64; do
  command -v "$t" >/dev/null || { echo "bench-roce: $t not found (apt-get install perftest qemu-system-x86; see .ci/apt.d/)"; exit 1; }
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "bench-roce: booting the VM (TCG, $CPUS vCPU) and running TestGuestBenchRoCE; this takes a few minutes" >&2
if ! go run ./bench/roce/vmrun -pkgs ./roce -run '^TestGuestBenchRoCE$' -cpus "$CPUS" -test-timeout 30m >"$log" 2>&1; then
  cat "$log"
  echo "bench-roce: FAILED" >&2
  exit 1
fi
echo "## RoCE: daqiri-go vs perftest on Soft-RoCE (rxe) in the VM"
echo
echo "guest kernel $(grep -o 'kernel [0-9][^ ]*' "$log" | head -1 | cut -d' ' -f2) under qemu TCG, $CPUS vCPU, rxe0 on a dummy netdev (MTU 1500, RoCE MTU 1024); host $(nproc) CPUs; medians of 3 runs; command: make bench-roce"
sed -n '/BENCH-ROCE/,/^$/p' "$log" | sed '1d' | sed 's/^ *//'
