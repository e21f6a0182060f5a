# Helpers for run scripts (sourced by the lab's generated /etc/manylab/run.sh).

# manylab_workdir FS: prepare the workload's directory on tmpfs or on an ext2 file system on
# the first virtio disk, and print its path.
manylab_workdir() {
	case "$1" in
	tmpfs)
		mkdir -p /tmp/work && echo /tmp/work ;;
	ext2)
		for dev in /dev/vda /dev/sda; do
			if [ -b "$dev" ]; then
				mke2fs -q "$dev" >/dev/null 2>&1 || { echo "manylab: mke2fs $dev failed" >&2; return 1; }
				mount -t ext2 "$dev" /mnt/work || return 1
				echo /mnt/work
				return 0
			fi
		done
		echo "manylab: fs=ext2 needs a disk (/dev/vda): none found" >&2
		return 1 ;;
	*)
		echo "manylab: unknown fs '$1' (tmpfs or ext2)" >&2
		return 1 ;;
	esac
}
