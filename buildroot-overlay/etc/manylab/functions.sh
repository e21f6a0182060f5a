# Helpers for run scripts (sourced by the lab's generated /etc/manylab/run.sh).

# manylab_workdir FS: prepare the workload's directory on tmpfs or on an ext2 file system on
# the machine's storage node or else the first virtio disk, and print its path.
manylab_workdir() {
	case "$1" in
	tmpfs)
		mkdir -p /tmp/work && echo /tmp/work ;;
	ext2)
		# /dev/pmem0: a storage node of the machine (memmap=!), else the virtio disk
		for dev in /dev/pmem0 /dev/vda /dev/sda; do
			if [ -b "$dev" ]; then
				mke2fs -q "$dev" >/dev/null 2>&1 || { echo "manylab: mke2fs $dev failed" >&2; return 1; }
				mount -t ext2 "$dev" /mnt/work || return 1
				echo /mnt/work
				return 0
			fi
		done
		echo "manylab: fs=ext2 needs a disk (/dev/pmem0 or /dev/vda): none found" >&2
		return 1 ;;
	*)
		echo "manylab: unknown fs '$1' (tmpfs or ext2)" >&2
		return 1 ;;
	esac
}
