#!/usr/bin/env bash
# Upstream's GPU reorder kernel (packet_reorder_copy_payload_by_sequence in src/kernels.cu of
# NVIDIA/daqiri), built from upstream's own source for bench/reorder/gpu to run beside ours on
# the same inputs (-upstream DIR/kernels.ptx). Nothing of it is committed or built into the
# project: it is fetched at bench time into an ignored folder.
#
#   bash bench/reorder/upstream.sh fetch [DIR]   where git can reach GitHub (or UPSTREAM_GIT=a
#                                                clone or mirror): src/kernels.{cu,h} at
#                                                UPSTREAM_REF (default HEAD) into DIR, with ORIGIN
#   bash bench/reorder/upstream.sh build [DIR]   on the GPU host (nvcc): DIR/kernels.ptx
#
# DIR defaults to .carry/upstream. The build targets compute_90 (Hopper), one of the
# architectures upstream's CMakeLists.txt builds for by default (80 and 90), with nvcc's
# default optimisation (-O3 for device code), as upstream's CMake build compiles it.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmd=${1:-}
dir=${2:-.carry/upstream}
case "$cmd" in
fetch)
	repo=${UPSTREAM_GIT:-https://github.com/NVIDIA/daqiri.git}
	ref=${UPSTREAM_REF:-HEAD}
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	if [ -d "$repo" ]; then
		gitdir=$repo
		[ -d "$repo/.git" ] && gitdir=$repo/.git
	else
		git clone -q --bare --depth 1 "$repo" "$tmp/repo.git"
		gitdir=$tmp/repo.git
	fi
	commit=$(git --git-dir="$gitdir" rev-parse "$ref^{commit}")
	mkdir -p "$dir/src"
	for f in src/kernels.cu src/kernels.h; do
		git --git-dir="$gitdir" show "$commit:$f" >"$dir/$f"
	done
	echo "github.com/NVIDIA/daqiri@$commit src/kernels.cu" >"$dir/ORIGIN"
	echo "upstream kernel source: $(cat "$dir/ORIGIN") -> $dir"
	;;
build)
	[ -f "$dir/src/kernels.cu" ] || { echo "upstream.sh build: no $dir/src/kernels.cu: run 'upstream.sh fetch' first"; exit 1; }
	command -v "${NVCC:-nvcc}" >/dev/null 2>&1 || { echo "upstream.sh build: ${NVCC:-nvcc} not found"; exit 1; }
	"${NVCC:-nvcc}" -ptx -arch=compute_90 -I "$dir" -o "$dir/kernels.ptx" "$dir/src/kernels.cu"
	ver=$("${NVCC:-nvcc}" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
	head -n1 "$dir/ORIGIN" >"$dir/ORIGIN.tmp"
	echo "built with nvcc $ver -ptx -arch=compute_90" >>"$dir/ORIGIN.tmp"
	mv "$dir/ORIGIN.tmp" "$dir/ORIGIN"
	;;
*)
	echo "usage: bash bench/reorder/upstream.sh fetch|build [DIR]" >&2
	exit 2
	;;
esac
