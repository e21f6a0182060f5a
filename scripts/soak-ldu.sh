#!/bin/sh
# soak-ldu.sh: long safety soak of the LDU kernel variant (issue 5).
#
# Boots the ldu kernel with the lab's debug fragment (lockdep, DEBUG_VM,
# DEBUG_LIST, KFENCE, SLUB_DEBUG) again and again, each time running
# the workload (forkstress by default; umountrace for the timed drain
# against umount) with a different seed and parameter mix under the LDU modes
# in SOAK_MODE (by default alternating ldu=global and ldu=percpu, the
# global-queue and per-CPU-queue variants), and stops at the first failure.  A round fails if forkstress does not
# print "verified": true, if the guest does not finish, or if the console
# shows a kernel report (BUG, WARNING, lockdep, KFENCE, KASAN, slub
# corruption, busy inodes after unmount, soft lockup, hung task, Oops, panic).
#
# Two ways to boot:
#   lab    (default when the lab CLI exists): manylab boot --variant ldu
#          --fragment debug; the lab builds the kernel from
#          kernel-patches/ldu/series and the initramfs from workloads/*.c.
#   manual (SOAK_METHOD=manual): qemu-system-x86_64 directly with
#          SOAK_KERNEL (a vmlinux/bzImage built with the debug fragment)
#          and an initramfs built here from busybox and workloads/*.c.
#
# Usage: scripts/soak-ldu.sh [ROUNDS]        (default 20; 0 = forever)
# Environment:
#   SOAK_METHOD   lab | manual (default: lab if .venv/bin/manylab exists)
#   SOAK_VCPUS    guest vCPUs (default 8)
#   SOAK_MEMORY   guest memory in MiB (default 1024)
#   SOAK_SECONDS  workload duration per round (default 120)
#   SOAK_WORKLOAD forkstress (default: fork/exec/exit storms under memory
#                 pressure) | umountrace (tmpfs mounts whose shared file
#                 mappings are unmapped right before umount; the timed
#                 drain runs every SOAK_INTERVAL_MS)
#   SOAK_INTERVAL_MS  drain_interval_ms set in the guest before the workload
#                 (default: 1 for umountrace, the kernel's own otherwise)
#   SOAK_FRAGMENTS lab method: config fragments (default "debug"; "kasan debug"
#                 adds generic KASAN, a separate cold build of about 20 minutes)
#   SOAK_MODE     ldu= boot modes, rotated round by round (default
#                 "global percpu"; off soaks the stock path)
#   SOAK_VARIANT  lab method: kernel variant (default ldu; e.g. ldu+ldu-authors,
#                 ldu+ldu-race-window)
#   SOAK_CMDLINE  extra kernel parameters for every round (e.g. ldu_design=authors)
#   SOAK_QUANTUM  lab method: guest instructions per vCPU turn (default: the lab's,
#                 1,000; 0 with a kasan fragment: QEMU's own slices, since a KASAN
#                 kernel free-running with the 1,000-instruction switch had not
#                 reached init after 15 minutes, against 10 s on QEMU's slices)
#   SOAK_LOCKSTEP lab method: 1 = instruction time (icount, the lab's default quantum), where
#                 SOAK_SECONDS counts 10^9 instructions of the whole guest per second;
#                 default 0 = free-running (--free-running: host time, more interleavings)
#   SOAK_KERNEL   manual method: kernel image (default
#                 /work/kwork/ldu-build-x86/vmlinux)
#   SOAK_OUT      directory for console logs (default runs/soak-ldu-<date>)
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-20} in
-h|--help)
	sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0 ;;
*[!0-9]*)
	echo "soak-ldu.sh: ROUNDS must be a number, got '$1' (scripts/soak-ldu.sh --help)" >&2
	exit 2 ;;
esac
rounds=${1:-20}
vcpus=${SOAK_VCPUS:-8}
mem=${SOAK_MEMORY:-1024}
secs=${SOAK_SECONDS:-120}
modes=${SOAK_MODE:-global percpu}
out=${SOAK_OUT:-$here/runs/soak-ldu-$(date -u +%Y%m%dT%H%M%SZ)}
lab=$here/.venv/bin/manylab
if [ -z "${SOAK_METHOD:-}" ]; then
	if [ -x "$lab" ]; then SOAK_METHOD=lab; else SOAK_METHOD=manual; fi
fi
variant=${SOAK_VARIANT:-ldu}
workload=${SOAK_WORKLOAD:-forkstress}
case $workload in
forkstress) interval=${SOAK_INTERVAL_MS:-} ;;
umountrace) interval=${SOAK_INTERVAL_MS:-1} ;;
*)
	echo "soak-ldu.sh: SOAK_WORKLOAD must be forkstress or umountrace, got '$workload'" >&2
	exit 2 ;;
esac
fragments=
for f in ${SOAK_FRAGMENTS:-debug}; do fragments="$fragments --fragment $f"; done
case " ${SOAK_FRAGMENTS:-debug} " in
*" kasan "*) quantum=${SOAK_QUANTUM:-0} ;;
*) quantum=${SOAK_QUANTUM:-} ;;
esac
[ -z "$quantum" ] || quantum="--quantum $quantum"
extra=${SOAK_CMDLINE:-}
if [ "${SOAK_LOCKSTEP:-0}" = 1 ]; then free=; else free=--free-running; fi
kernel=${SOAK_KERNEL:-/work/kwork/ldu-build-x86/vmlinux}
mkdir -p "$out"

# Kernel reports that fail a round.
bad='BUG:|Busy inodes after unmount|WARNING:|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|DEBUG_LOCKS_WARN_ON|lock held when returning|KFENCE:|KASAN:|UBSAN:|Oops|Kernel panic|general protection fault|soft lockup|hung_task|blocked for more than|list_add corruption|list_del corruption|Redzone|Poison overwritten|Object padding|refcount_t:'

# Boot mode of round $1: the modes of SOAK_MODE in turn.
nmodes=$(echo $modes | wc -w)
mode_of() {
	set -- $(($1 - 1)) $modes
	shift $(($1 % ($# - 1) + 1))
	echo "$1"
}

# Parameter mix of round $1: each mix runs once under every mode in turn,
# so even a short soak gives every mode the same mixes.
mix_of() {
	echo $((($1 - 1) / nmodes))
}

# Per-mix parameters: vary fan-out, depth, sizes, pressure.
params() {
	case $(($1 % 4)) in
	0) echo "--workers $vcpus --fanout 4 --depth 2 --anon 1M --file-size 1M --zram 256M --hog $((mem * 3 / 4))M --compact 2" ;;
	1) echo "--workers $((vcpus * 2)) --fanout 8 --depth 3 --anon 256K --file-size 256K --compact 1" ;;
	2) echo "--workers $vcpus --fanout 2 --depth 4 --anon 4M --file-size 2M --zram 256M --memcg $((mem / 4))M --compact 3" ;;
	3) echo "--workers $vcpus --fanout 16 --depth 1 --anon 512K --file-size 4M --no-exec --zram 128M --hog $((mem / 2))M --compact 1" ;;
	esac
}
umountrace_params() {
	case $(($1 % 4)) in
	0) echo "--workers $vcpus --files 2 --pages 4" ;;
	1) echo "--workers $((vcpus * 2)) --files 1 --pages 1" ;;
	2) echo "--workers $vcpus --files 4 --pages 16 --fork" ;;
	3) echo "--workers $((vcpus * 2)) --files 8 --pages 2 --fork" ;;
	esac
}

# The guest command of round $1 (work directory $2): the drain interval, then the workload.
workload_cmd() {
	[ -z "$interval" ] || printf 'echo %s > /sys/kernel/mm/ldu/drain_interval_ms; ' "$interval"
	case $workload in
	forkstress) echo "forkstress --dir $2 --duration $secs --seed $1 $(params "$(mix_of "$1")")" ;;
	umountrace) echo "umountrace --dir $2 --duration $secs $(umountrace_params "$(mix_of "$1")")" ;;
	esac
}

build_manual_initrd() {
	d=$(mktemp -d)
	mkdir -p "$d/bin" "$d/proc" "$d/sys" "$d/dev" "$d/tmp" "$d/manylab/bin"
	cp /bin/busybox "$d/bin/busybox"
	for w in forkstress forkbench umountrace; do
		gcc -static -O2 -I"$here/workloads/include" \
			-o "$d/manylab/bin/$w" "$here/workloads/$w.c"
	done
	cat > "$d/init" <<'EOI'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/manylab/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs -o size=256m tmp /tmp
echo MANYLAB-BOOTED cpus=$(nproc) ldu=$(cat /sys/kernel/mm/ldu/mode 2>/dev/null)
cd /tmp
sh /cmd
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
sed "s/^/MANYLAB-LDU-STAT /" /sys/kernel/debug/ldu/stats 2>/dev/null
echo MANYLAB-DONE
poweroff -f
EOI
	chmod +x "$d/init"
	echo "$d"
}

round_manual() {
	i=$1 log=$2
	d=$(build_manual_initrd)
	workload_cmd "$i" /tmp > "$d/cmd"
	(cd "$d" && find . | cpio -o -H newc 2>/dev/null) > "$out/initrd.cpio"
	rm -rf "$d"
	timeout $((secs * 6 + 600)) qemu-system-x86_64 -M q35 \
		-accel tcg,thread=single -smp "$vcpus" -m "$mem" -nographic \
		-no-reboot -kernel "$kernel" -initrd "$out/initrd.cpio" \
		-append "console=ttyS0 panic=-1 ldu=$mode slub_debug=FZPU $extra" \
		> "$log" 2>&1 || true
}

round_lab() {
	i=$1 log=$2
	"$lab" boot --variant "$variant" $fragments --vcpus "$vcpus" $free $quantum \
		--memory "$mem" --cmdline "ldu=$mode slub_debug=FZPU $extra" \
		--timeout $((secs * 6 + 600)) -- \
		"echo MANYLAB-LDU-MODE ldu=\$(cat /sys/kernel/mm/ldu/mode) design=\$(cat /sys/kernel/mm/ldu/design 2>/dev/null); $(workload_cmd "$i" '$MANYLAB_WORKDIR'); [ -r /sys/kernel/debug/ldu/stats ] || mount -t debugfs debugfs /sys/kernel/debug; sed 's/^/MANYLAB-LDU-STAT /' /sys/kernel/debug/ldu/stats" \
		> "$log" 2>&1 || true
}

i=1
fails=0
while [ "$rounds" -eq 0 ] || [ "$i" -le "$rounds" ]; do
	log=$out/round-$i.log
	mode=$(mode_of "$i")
	echo "soak-ldu: round $i ($SOAK_METHOD, ldu=$mode): $(workload_cmd "$i" DIR)"
	"round_$SOAK_METHOD" "$i" "$log"
	if grep -Eq "$bad" "$log"; then
		echo "soak-ldu: round $i: kernel report on the console:"
		grep -E "$bad" "$log" | head -20
		fails=1
	elif ! grep -Eq "(MANYLAB-LDU-MODE|MANYLAB-BOOTED.*) ldu=$mode\b" "$log"; then
		echo "soak-ldu: round $i: guest did not report ldu mode $mode (see $log)"
		fails=1
	elif ! grep -q '"verified": true' "$log"; then
		echo "soak-ldu: round $i: $workload did not verify (see $log)"
		grep MANYLAB-RESULT "$log" | head -2
		fails=1
	else
		grep MANYLAB-RESULT "$log" | sed 's/^.*MANYLAB-RESULT /  /' | cut -c1-300
		# one line of LDU counters (debugfs ldu/stats "NAME VALUE" lines, prefixed
		# MANYLAB-LDU-STAT by the guest)
		grep -E '^MANYLAB-LDU-STAT [a-z_]+ -?[0-9]+' "$log" | tr -d '\r' |
			awk '{ printf "%s%s=%s", (NR > 1 ? " " : "  "), $2, $3 } END { print "" }'
	fi
	[ "$fails" -eq 0 ] || { echo "soak-ldu: FAILED, logs in $out"; exit 1; }
	i=$((i + 1))
done
echo "soak-ldu: $((i - 1)) rounds passed, logs in $out"
