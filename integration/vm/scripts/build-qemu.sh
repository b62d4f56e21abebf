#!/bin/bash
# build-qemu.sh — build qemu-system-x86_64 with QEMU's vfio-user client from Debian's qemu
# source package and install it into a cache outside the tree, keyed by the source version.
#
# Debian 12's qemu is 7.2; the vfio-user client (-device vfio-user-pci) arrived in QEMU 10.1.
# The Debian archive serves the source of qemu 1:10.2.2+ds-1 from sid; this script fetches it
# with apt-get through a temporary sources list (the machine's apt configuration is not
# touched), takes meson >= 1.5 and python3-pycotap from sid as arch-all debs unpacked into the
# temp folder (not installed), installs the remaining build dependencies from the machine's own
# suite (.ci/apt.d/qemu.txt) and builds only the x86_64 system emulator.
#
#   integration/vm/scripts/build-qemu.sh                (or: make qemu)
#   integration/vm/scripts/build-qemu.sh --print-mirror (the archive it would use, and exit)
#
# The archive is the one the machine's own apt sources name for Debian (what apt-get
# indextargets reports, one-line and deb822 files alike), so the script works behind whatever
# mirror or proxy the machine uses; no host is named here.
#
# Environment: DAQIRI_QEMU_CACHE (default /var/cache/daqiri/qemu) — the binary lands in
# $DAQIRI_QEMU_CACHE/<version>/bin/qemu-system-x86_64, its firmware in .../share/qemu.
# DAQIRI_QEMU_JOBS (default: the number of CPUs), DAQIRI_QEMU_MIRROR (default: the machine's
# Debian archive, above). Idempotent: a cached build prints its path and exits 0 at once.
# Run as root (apt-get); the build itself runs under nice.
set -euo pipefail

VERSION=1:10.2.2+ds-1
KEY=${VERSION#*:}                 # 10.2.2+ds-1: the cache key has no epoch
CACHE_ROOT=${DAQIRI_QEMU_CACHE:-/var/cache/daqiri/qemu}
DEST=$CACHE_ROOT/$KEY
BIN=$DEST/bin/qemu-system-x86_64
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)

die() { echo "build-qemu: $*" >&2; exit 1; }

# machine_mirror prints the base URL of the Debian archive the machine's apt sources use. The
# Origin and Label fields come from the Release files of the last apt-get update and single
# out the archive proper (the security archive's label is Debian-Security); without lists
# yet, the first source whose suite is not a -security, -updates or -backports one.
machine_mirror() {
	local uri
	uri=$(apt-get indextargets --format '$(REPO_URI)' 'Identifier: Packages' 'Origin: Debian' 'Label: Debian' 2>/dev/null | head -n 1)
	if [ -z "$uri" ]; then
		uri=$(apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 'Identifier: Packages' 2>/dev/null |
			awk '$1 !~ /-(security|updates|backports)$/ { print $2; exit }')
	fi
	echo "${uri%/}"
}

MIRROR=${DAQIRI_QEMU_MIRROR:-}
if [ -z "$MIRROR" ] && command -v apt-get >/dev/null; then
	MIRROR=$(machine_mirror)
fi
if [ "${1:-}" = --print-mirror ]; then
	[ -n "$MIRROR" ] || die "the machine's apt sources name no Debian archive; set DAQIRI_QEMU_MIRROR"
	echo "$MIRROR"
	exit 0
fi

# firmware DIR links the guest firmware into DIR (the share/qemu next to the binary, where
# qemu looks first): the +ds source has no blobs and building the x86 option ROMs needs a
# 32-bit toolchain, so Debian's packages provide them (seabios, qemu-system-data, ipxe-qemu).
firmware() {
	local dir=$1 f src
	mkdir -p "$dir"
	for f in /usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin; do
		[ -f "$f" ] || die "guest firmware $f is missing (packages seabios, qemu-system-data: .ci/apt.d/qemu.txt)"
	done
	for src in /usr/share/seabios/*.bin /usr/share/qemu/*.bin /usr/lib/ipxe/qemu/*.rom; do
		[ -f "$src" ] && [ ! -e "$dir/${src##*/}" ] && ln -s "$src" "$dir/${src##*/}"
	done
	return 0
}

if [ -x "$BIN" ] && "$BIN" -device help 2>/dev/null | grep -q '"vfio-user-pci"'; then
	firmware "$DEST/share/qemu"
	echo "$BIN"
	exit 0
fi

start=$(date +%s)
[ "$(id -u)" = 0 ] || die "needs root to install the build dependencies with apt-get (or install .ci/apt.d/qemu.txt and run as root)"
command -v apt-get >/dev/null || die "apt-get not found: this script builds from Debian's source package"
[ -n "$MIRROR" ] || die "the machine's apt sources name no Debian archive (apt-get indextargets found none); set DAQIRI_QEMU_MIRROR to the archive's URL"

# Build dependencies from the machine's own suite.
mapfile -t deps < <(grep -v -e '^#' -e '^[[:space:]]*$' "$ROOT/.ci/apt.d/qemu.txt")
missing=()
for p in "${deps[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "build-qemu: installing build dependencies: ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
		die "apt-get install ${missing[*]} failed (the packages listed in .ci/apt.d/qemu.txt)"
fi

tmp=$(mktemp -d /tmp/daqiri-qemu-build.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# A private apt state that knows only sid: its own sources file, lists and cache, so
# nothing of the machine's apt configuration changes. Debian 12's keyring holds the keys
# sid is signed with (the trixie archive key).
mkdir -p apt/lists/partial apt/cache/archives/partial apt/etc
cat > apt/etc/sid.sources <<EOF
Types: deb deb-src
URIs: $MIRROR
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
aptopts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$tmp/apt/etc"
	-o Dir::State::Lists="$tmp/apt/lists" -o Dir::Cache="$tmp/apt/cache"
	-o Dir::State::status=/var/lib/dpkg/status -o APT::Sandbox::User=root -q)
echo "build-qemu: reading sid's package index from the machine's Debian archive (temporary sources list)"
apt-get "${aptopts[@]}" update >apt.log 2>&1 || { tail -20 apt.log >&2; die "apt-get update for sid failed (network, or the keyring in /usr/share/keyrings/debian-archive-keyring.gpg)"; }

echo "build-qemu: fetching the source package qemu=$VERSION"
apt-get "${aptopts[@]}" source --download-only "qemu=$VERSION" >>apt.log 2>&1 ||
	{ tail -20 apt.log >&2; die "apt-get source qemu=$VERSION failed: the registry no longer serves this version?"; }
dpkg-source -x --no-check qemu_*.dsc src >>apt.log 2>&1 || { tail -20 apt.log >&2; die "dpkg-source -x of qemu_*.dsc failed (dpkg-dev)"; }

# meson >= 1.5 and pycotap (its test runner, imported by meson.build's test setup) from sid.
echo "build-qemu: fetching meson and python3-pycotap from sid (unpacked, not installed)"
apt-get "${aptopts[@]}" download meson/sid python3-pycotap/sid >>apt.log 2>&1 ||
	{ tail -20 apt.log >&2; die "apt-get download meson python3-pycotap from sid failed"; }
mkdir py
for d in meson_*.deb python3-pycotap_*.deb; do dpkg -x "$d" py; done
pp=$(ls -d "$tmp"/py/usr/lib/python3/dist-packages)
export PYTHONPATH=$pp${PYTHONPATH:+:$PYTHONPATH}
mver=$(python3 -c 'import mesonbuild.coredata as c; print(c.version)') || die "meson from sid does not import with $(python3 --version)"
echo "build-qemu: meson $mver"

cd src
# The +ds tarball has no firmware blobs: do not unpack the edk2 ones; the guest boots with
# Debian's seabios (linked into the cache by firmware above).
grep -q "^unpack_edk2_blobs = " meson.build || die "meson.build of $VERSION has no unpack_edk2_blobs line to force off (source layout changed)"
sed -i 's/^unpack_edk2_blobs = .*/unpack_edk2_blobs = false/' meson.build

echo "build-qemu: configure"
mkdir build && cd build
# memory-backend-memfd and vfio-user-pci come with the Linux host and the q35 machine;
# virtfs is the harness's 9p root; tcg stays enabled (the harness runs under TCG).
../configure --python=/usr/bin/python3 \
	--target-list=x86_64-softmmu --without-default-features \
	--enable-kvm --enable-tcg --enable-virtfs --enable-attr --disable-docs --disable-werror \
	-Dinstall_blobs=false --prefix="$DEST" >../../configure.log 2>&1 ||
	{ tail -30 ../../configure.log >&2; die "configure failed (see above: a missing -dev package belongs in .ci/apt.d/qemu.txt)"; }

echo "build-qemu: building qemu-system-x86_64 (a few minutes on 2 cores)"
nice -n 10 ninja -j "${DAQIRI_QEMU_JOBS:-$(nproc)}" qemu-system-x86_64 >../../ninja.log 2>&1 ||
	{ tail -30 ../../ninja.log >&2; die "ninja qemu-system-x86_64 failed"; }
./qemu-system-x86_64 -device help 2>/dev/null | grep -q '"vfio-user-pci"' ||
	die "the built qemu-system-x86_64 has no vfio-user-pci device"

# Install: the binary, and links to the guest firmware next to it. Prepared next to the
# destination, then renamed into place, so a cache entry is whole or absent.
mkdir -p "$CACHE_ROOT"
stage=$(mktemp -d "$CACHE_ROOT/.stage.XXXXXX")
chmod 0755 "$stage"
mkdir -p "$stage/bin"
install -m 0755 qemu-system-x86_64 "$stage/bin/"
firmware "$stage/share/qemu"
cat > "$stage/BUILD-INFO" <<EOF
source: Debian qemu $VERSION (apt-get source from sid)
meson: $mver
configure: --target-list=x86_64-softmmu --without-default-features --enable-kvm --enable-tcg --enable-virtfs --enable-attr --disable-docs --disable-werror -Dinstall_blobs=false
built: $(date -u +%FT%TZ) on $(nproc) CPUs in $(( $(date +%s) - start )) s
firmware: share/qemu links to Debian's seabios, qemu-system-data and ipxe-qemu files
EOF
rm -rf "$DEST"
mv "$stage" "$DEST"
echo "build-qemu: built in $(( $(date +%s) - start )) s"
echo "$BIN"
