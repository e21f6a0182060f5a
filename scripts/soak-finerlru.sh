#!/bin/bash
# Soak test for the 'finerlru' kernel variant: boot the kernel under QEMU (TCG)
# once per FinerLRU factor and iteration, run workloads/lrustress.c in the guest
# and count lockdep / BUG / WARN / data-mismatch reports on the console.
#
# Two ways to boot:
#  - by hand (default, used for the first safety runs): the script builds its
#    own initramfs (busybox + lrustress, static) and a fresh ext2 disk image
#    (the writers need a disk-backed fs: page cache on tmpfs/ramfs is not
#    reclaimable) and runs qemu-system-* on the kernel given with --kernel;
#  - --lab: through the lab CLI, 'manylab boot --variant finerlru --fragment
#    debug --fs ext2', which builds the kernel from kernel-patches/finerlru
#    and its own image; its ext2 work disk is 1G, so keep --mem at 512M or
#    pass --args with a smaller -s.
#
# Usage: scripts/soak-finerlru.sh (--kernel PATH | --lab) [options]
#   --kernel PATH        vmlinux (x86_64, PVH boot) or Image (arm64); use a
#                        kernel built with the debug fragment (lockdep etc.)
#   --lab                boot with the lab CLI (.venv/bin/manylab) instead
#   --arch ARCH          x86_64 (default) or arm64
#   --factors "LIST"     FinerLRU factors to boot with (default "1 8 64")
#   --iterations N       rounds over the factor list (default 1; 0 = forever)
#   --smp N              vCPUs (default 8)
#   --mem SIZE           guest memory (default 1G)
#   --disk-size SIZE     ext2 disk for the writers (default 4G, sparse)
#   --args "ARGS"        lrustress arguments (default: -D 60 plus sizes
#                        derived from the guest memory, see below)
#   --timeout SEC        per boot (default 1200)
#   --outdir DIR         logs and summary (default runs/soak-finerlru-<time>)
#   --busybox PATH       static busybox (default /bin/busybox)
#   --cc CC              compiler for lrustress (default gcc / aarch64-linux-gnu-gcc)
# Output: one console log per boot and summary.tsv with, per boot: factor,
# iteration, factor read back from sysfs, lockdep reports, BUG lines,
# WARNING lines, other problems (Oops/panic/list corruption/stalls/OOM),
# lrustress verified flag, debug_locks at the end (0 = lockdep turned itself
# off after a report), pages still isolated from the LRU after the run and
# drop_caches (must be 0), lrustress exit status.
# Exit status 0 only if every boot verified its data and reported nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
kernel= lab=0 arch=x86_64 factors="1 8 64" iterations=1 smp=8 mem=1G disk_size=4G
args= timeout_s=1200 outdir= busybox=/bin/busybox cc=
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--lab) lab=1; shift ;;
	--arch) arch=$2; shift 2 ;;
	--factors) factors=$2; shift 2 ;;
	--iterations) iterations=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--disk-size) disk_size=$2; shift 2 ;;
	--args) args=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--outdir) outdir=$2; shift 2 ;;
	--busybox) busybox=$2; shift 2 ;;
	--cc) cc=$2; shift 2 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "soak-finerlru: unknown option $1" >&2; exit 2 ;;
	esac
done
if [ "$lab" = 0 ]; then
	[ -n "$kernel" ] && [ -f "$kernel" ] || { echo "soak-finerlru: --kernel PATH or --lab required" >&2; exit 2; }
fi
outdir=${outdir:-$here/runs/soak-finerlru-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$outdir"
work=$(mktemp -d "${TMPDIR:-/tmp}/soak-finerlru.XXXXXX")
trap 'rm -rf "$work"' EXIT

case "$arch" in
x86_64)
	cc=${cc:-gcc}
	qemu=(qemu-system-x86_64 -M q35 -accel tcg,thread=single)
	console=ttyS0 ;;
arm64)
	cc=${cc:-aarch64-linux-gnu-gcc}
	qemu=(qemu-system-aarch64 -M virt,gic-version=3 -cpu max,pauth-impdef=on
	      -accel tcg,thread=single)
	console=ttyAMA0 ;;
*) echo "soak-finerlru: unknown arch $arch" >&2; exit 2 ;;
esac

# Default lrustress load: 1.5 x guest memory of buffered writes by 4 writers
# (one in a memory cgroup), mmap/mlock and THP workers, compaction, for 60 s.
if [ -z "$args" ]; then
	args="-d /mnt -w 4 -m 2 -t 2 -c 1 -D 60"
fi

# ---- initramfs: busybox + lrustress + /init ----
root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,mnt,tmp}
cp "$busybox" "$root/bin/busybox"
"$cc" -static -O2 -I"$here/workloads/include" -o "$root/bin/lrustress" \
	"$here/workloads/lrustress.c"
cat > "$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
echo "SOAK-FACTOR \$(cat /sys/module/finer_lru/parameters/factor 2>/dev/null || echo none)"
if mount -t ext2 /dev/vda /mnt; then
	/bin/lrustress $args
	echo "SOAK-LRUSTRESS-EXIT \$?"
	umount /mnt
else
	echo "SOAK-LRUSTRESS-EXIT nodisk"
fi
# at rest nothing may stay isolated from the LRU
sync; echo 3 > /proc/sys/vm/drop_caches
echo "SOAK-ISOLATED \$(awk '/^nr_isolated_(anon|file) /{s+=\$2} END{print s+0}' /proc/vmstat)"
grep -E "^nr_(inactive|active)_(anon|file) |^nr_unevictable |^nr_isolated|^pgscan_(kswapd|direct) |^pgsteal_(kswapd|direct) |^pgrefill |^pgdeactivate |^thp_fault_alloc |^thp_split_page |^thp_deferred_split_page |^compact_(migrate_scanned|isolated|stall) |^unevictable_pgs_(culled|mlocked|munlocked|rescued) " /proc/vmstat | sed 's/^/SOAK-VMSTAT /'
grep -E "debug_locks:" /proc/lockdep_stats 2>/dev/null | sed 's/^ */SOAK-/'
echo SOAK-DONE
sync
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) > "$work/initramfs.cpio"

# Guest command for --lab (the lab's run script has cd'ed into MANYLAB_WORKDIR)
lab_args=${args//-d \/mnt/-d .}
lab_cmd="echo SOAK-FACTOR \$(cat /sys/module/finer_lru/parameters/factor 2>/dev/null || echo none);
/manylab/bin/lrustress $lab_args; echo SOAK-LRUSTRESS-EXIT \$?;
sync; echo 3 > /proc/sys/vm/drop_caches;
echo SOAK-ISOLATED \$(awk '/^nr_isolated_(anon|file) /{s+=\$2} END{print s+0}' /proc/vmstat);
grep -E 'debug_locks:' /proc/lockdep_stats | sed 's/^ */SOAK-/'"

printf 'factor\titeration\tfactor_sysfs\tlockdep\tbug\twarning\tother\tverified\tdebug_locks\tisolated_at_rest\tlrustress_exit\tseconds\tlog\n' \
	> "$outdir/summary.tsv"
status=0
it=0
while [ "$iterations" -eq 0 ] || [ "$it" -lt "$iterations" ]; do
	it=$((it + 1))
	for f in $factors; do
		log=$outdir/console-f$f-i$it.log
		extra="finer_lru.factor=$f watchdog_thresh=60 rcupdate.rcu_cpu_stall_timeout=300 transparent_hugepage=madvise"
		t0=$(date +%s)
		if [ "$lab" = 1 ]; then
			"$here/.venv/bin/manylab" boot --variant finerlru --fragment debug \
				--arch "$arch" --vcpus "$smp" --memory "$mem" --fs ext2 \
				--timeout "$timeout_s" --cmdline "$extra" -- "$lab_cmd" \
				> "$log" 2>&1 < /dev/null || true
		else
			rm -f "$work/disk.img"
			truncate -s "$disk_size" "$work/disk.img"
			mkfs.ext2 -q -F "$work/disk.img"
			timeout --foreground -k 10 "$timeout_s" \
				"${qemu[@]}" -smp "$smp" -m "$mem" -nographic -no-reboot \
				-kernel "$kernel" -initrd "$work/initramfs.cpio" \
				-drive "file=$work/disk.img,format=raw,if=virtio" \
				-append "console=$console panic=-1 $extra" \
				> "$log" 2>&1 < /dev/null || true
		fi
		secs=$(( $(date +%s) - t0 ))
		tr -d '\r' < "$log" > "$log.tmp" && mv "$log.tmp" "$log"
		sysfs=$(sed -n 's/^SOAK-FACTOR //p' "$log" | tail -1)
		lockdep=$(grep -cE 'possible (circular|recursive) locking|inconsistent lock state|possible irq lock inversion|bad unlock balance|lock held when returning|held lock freed|DEBUG_LOCKS_WARN_ON|suspicious RCU usage' "$log" || true)
		bug=$(grep -c 'BUG:\|kernel BUG at' "$log" || true)
		warn=$(grep -c 'WARNING:' "$log" || true)
		other=$(grep -cE 'Oops:|Kernel panic|list_(add|del) corruption|soft lockup|self-detected stall|blocked for more than|[Oo]ut of memory' "$log" || true)
		verified=$(grep -o '"verified": [a-z]*' "$log" | tail -1 | awk '{print $2}')
		dlocks=$(sed -n 's/^SOAK-debug_locks: *//p' "$log" | tail -1)
		lexit=$(sed -n 's/^SOAK-LRUSTRESS-EXIT //p' "$log" | tail -1)
		isol=$(sed -n 's/^SOAK-ISOLATED //p' "$log" | tail -1)
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$f" "$it" "${sysfs:-?}" \
			"$lockdep" "$bug" "$warn" "$other" "${verified:-none}" "${dlocks:-?}" \
			"${isol:-?}" "${lexit:-none}" "$secs" "$(basename "$log")" | tee -a "$outdir/summary.tsv"
		if [ "$lockdep" != 0 ] || [ "$bug" != 0 ] || [ "$warn" != 0 ] || [ "$other" != 0 ] ||
		   [ "${verified:-}" != true ] || [ "${sysfs:-}" != "$f" ] || [ "${isol:-}" != 0 ] ||
		   { [ -n "$dlocks" ] && [ "$dlocks" != 1 ]; }; then
			status=1
		fi
	done
done
echo "soak-finerlru: summary in $outdir/summary.tsv (status $status)"
exit $status
