# guest.sh — runs inside the VM as root, chrooted into the host's root file
# system (read-only); /tmp is a tmpfs and /tmp/daqiri-vm is the harness's
# work folder (read-write, shared with the host). It sets up the devices the
# guest tests expect, runs every test binary in tests.list and leaves the
# results in out/ for the host: <name>.out (the binary's -test.v=test2json
# output), <name>.rc ("exit-status start-uptime end-uptime"), setup.log,
# guest-env and, last, done.
W=/tmp/daqiri-vm
OUT=$W/out
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
. $W/guest.conf
mkdir -p $OUT

up() { cut -d' ' -f1 /proc/uptime; }
say() { echo "DAQIRI-VM: $*"; }
errors=""
# step DESCRIPTION COMMAND... runs one setup step and records its outcome.
step() {
	desc=$1
	shift
	if msg=$("$@" 2>&1); then
		echo "ok   $desc" >>$OUT/setup.log
		return 0
	fi
	echo "FAIL $desc: $msg" >>$OUT/setup.log
	say "setup failed: $desc: $msg"
	errors="$errors$desc; "
	return 1
}
# wait_for PATH waits (bounded: 5 s) for a device node to appear.
wait_for() {
	i=0
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ $i -ge 50 ] && return 1
		sleep 0.1
	done
}

echo "script $(up)" >$OUT/times
say "guest script started at uptime $(up)s"

for m in $MODULES; do
	step "modprobe $m" modprobe "$m"
done
step "hugepages" sh -c "echo $HUGEPAGES > /proc/sys/vm/nr_hugepages"
step "lo up" ip link set lo up

env_rxe=""
if step "dummy netdev d0" ip link add d0 type dummy &&
	step "d0 up" ip link set d0 up &&
	step "d0 address 10.7.0.1/24" ip addr add 10.7.0.1/24 dev d0 &&
	step "rdma link add rxe0" rdma link add rxe0 type rxe netdev d0 &&
	step "uverbs device" wait_for /dev/infiniband/uverbs0; then
	env_rxe="export DAQIRI_VM_RXE=rxe0 DAQIRI_VM_RXE_NETDEV=d0 DAQIRI_VM_RXE_ADDR=10.7.0.1"
fi

env_edu=""
bdf=""
for d in /sys/bus/pci/devices/*; do
	if [ "$(cat $d/vendor)" = 0x1234 ] && [ "$(cat $d/device)" = 0x11e8 ]; then
		bdf=${d##*/}
		break
	fi
done
if [ -z "$bdf" ]; then
	step "find the edu device (1234:11e8)" false
elif step "bind $bdf to vfio-pci" sh -c "echo vfio-pci > /sys/bus/pci/devices/$bdf/driver_override && echo $bdf > /sys/bus/pci/drivers_probe"; then
	group=$(readlink /sys/bus/pci/devices/$bdf/iommu_group)
	group=${group##*/}
	if step "vfio group node /dev/vfio/$group" wait_for /dev/vfio/$group; then
		env_edu="export DAQIRI_VM_EDU_BDF=$bdf DAQIRI_VM_EDU_GROUP=$group"
	fi
fi

{
	echo "export DAQIRI_VM_GUEST=1 HOME=/tmp TMPDIR=/tmp GOTRACEBACK=all"
	echo "export CI='$CI'"
	echo "export DAQIRI_VM_SETUP_ERRORS='$errors'"
	echo "$env_rxe"
	echo "$env_edu"
} >$OUT/guest-env
echo "setup $(up)" >>$OUT/times
say "setup done at uptime $(up)s${errors:+ (failed: $errors)}"

while read -r name bin dir; do
	[ -n "$name" ] || continue
	say "begin $name"
	t0=$(up)
	(
		. $OUT/guest-env
		cd "$dir" || exit 125
		if [ -n "$RUN" ]; then set -- "-test.run=$RUN"; else set --; fi
		exec timeout -k 5 $((TEST_TIMEOUT + 10)) "$bin" -test.v=test2json -test.timeout=${TEST_TIMEOUT}s "$@"
	) >$OUT/$name.out 2>&1 </dev/null
	rc=$?
	echo "$rc $t0 $(up)" >$OUT/$name.rc
	say "end $name status $rc"
done <$W/tests.list

echo "end $(up)" >>$OUT/times
sync
echo done >$OUT/done
