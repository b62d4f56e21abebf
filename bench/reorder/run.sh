#!/usr/bin/env bash
# make bench-reorder: a CPU reorder plan next to memcpy of the same bytes on this machine, then
# the GPU kernels next to a device-to-device copy of the same bytes and next to upstream's
# kernel (bench/reorder/upstream.sh) when an NVIDIA GPU is present (otherwise the GPU binary
# is only built, to be copied to a GPU machine; it needs no Go there). Results and the commands that produced them: bench/reorder/RESULTS.md.
#   bash bench/reorder/run.sh [bench/reorder/cpu flags, e.g. -batches 200 -repeats 7]
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
BIN=${BIN:-bin}
mkdir -p "$BIN"
echo "== CPU: reorder plan vs memcpy ($(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-))"
"$GO" run ./bench/reorder/cpu "$@"
CGO_ENABLED=0 "$GO" build -o "$BIN/reorder-gpubench" ./bench/reorder/gpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	echo "== GPU: reorder kernels vs device-to-device copy (and upstream's kernel, where built)"
	# Upstream's kernel beside ours: fetched by `bash bench/reorder/upstream.sh fetch` and built
	# here with nvcc (`... build`); without it the table compares ours with the copy only.
	up=${UPSTREAM_DIR:-.carry/upstream}
	if [ -f "$up/src/kernels.cu" ] && [ ! -f "$up/kernels.ptx" ] && command -v "${NVCC:-nvcc}" >/dev/null 2>&1; then
		bash bench/reorder/upstream.sh build "$up"
	fi
	args=()
	[ -f "$up/kernels.ptx" ] && args=(-upstream "$up/kernels.ptx")
	"$BIN/reorder-gpubench" ${args[@]+"${args[@]}"}
else
	echo "== GPU: no NVIDIA GPU here; run $BIN/reorder-gpubench on a GPU machine (see bench/reorder/RESULTS.md)"
fi
