// SPDX-License-Identifier: MIT
/*
 * umountrace: file mappings torn down right before their file system goes away (manylab,
 * LDU issue #31, the timed drain against umount).
 *
 * W worker processes each own a mount point under --dir and loop until --duration ends:
 *   mount a fresh tmpfs; for each of F files: create it, size it to P pages, map it
 *   MAP_SHARED, write every page through the mapping, optionally fork a child that maps it
 *   too, writes its first page and exits (a second mm's removal from the file's i_mmap
 *   tree), read the pages back through the descriptor and compare, unmap, close; then
 *   unmount at once, with every file still linked, so the inodes are evicted by umount's
 *   evict_inodes() right after their mappings' removals were queued.
 * Under LDU those removals sit in the file's i_mmap queue and arm its timed drain; with
 * /sys/kernel/mm/ldu/drain_interval_ms at 1 the timed work runs while the umount tears the
 * inode down. A drain that keeps the inode past umount shows as the kernel's "Busy inodes
 * after unmount" warning and a use-after-free of the superblock (KASAN), never in this
 * program's own checks, which fail only on a failed system call or a wrong page.
 *
 * The loop is ROI region 0. Prints one line "MANYLAB-RESULT {json}" with the counts;
 * exit status 1 on any failure (the first one named in "failure"), 2 on bad arguments.
 * Needs CAP_SYS_ADMIN (mount).
 *
 * Build: gcc -static -O2 -Iworkloads/include -o umountrace umountrace.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "manylab_procs.h"
#include "manylab_roi.h"
#include "manylab_util.h"

#define PROG "umountrace"
#define PAGE 4096L
#define MAX_WORKERS 4096

struct wrec {
	uint64_t cycles;	/* mount .. umount rounds completed */
	uint64_t mappings;	/* files mapped, written, checked and unmapped */
	uint64_t children;	/* forked children that mapped a file and exited */
	char failure[96];	/* first failure, empty if none */
};

static struct {
	const char *dir;
	int workers;
	double duration;
	long files;
	long pages;
	int fork_child;
} o = { .dir = NULL, .workers = -1, .duration = 10, .files = 2, .pages = 4, .fork_child = 0 };

static int fail(struct wrec *r, const char *what, const char *path)
{
	size_t n = strlen(path);

	/* the path's last 40 characters name the worker's mount point and the file */
	if (!r->failure[0])
		snprintf(r->failure, sizeof(r->failure), "%.16s %.40s: %.32s", what,
			 n > 40 ? path + n - 40 : path, strerror(errno));
	return -1;
}

static unsigned char pattern(uint64_t cycle, long file, long page)
{
	return (unsigned char)(cycle * 131 + (uint64_t)file * 17 + (uint64_t)page + 1);
}

static int child_maps(const char *path, long len, unsigned char expect)
{
	int fd = open(path, O_RDWR);
	unsigned char *p;

	if (fd < 0)
		return 1;
	p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED || p[0] != expect)
		return 1;
	p[0] = expect;
	return 0;
}

/* One file of one cycle: 0, or -1 with the failure recorded. */
static int one_file(struct wrec *r, const char *mnt, uint64_t cycle, long k)
{
	long len = o.pages * PAGE;
	unsigned char buf[PAGE], *p;
	char path[4200];
	int fd;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/f%ld", mnt, k);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return fail(r, "open", path);
	if (ftruncate(fd, len))
		return fail(r, "ftruncate", path);
	p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return fail(r, "mmap", path);
	for (long i = 0; i < o.pages; i++)
		memset(p + i * PAGE, pattern(cycle, k, i), PAGE);
	if (o.fork_child) {
		pid = fork();
		if (pid < 0)
			return fail(r, "fork", path);
		if (pid == 0)
			_exit(child_maps(path, len, pattern(cycle, k, 0)));
		if (manylab_wait_ok(pid))
			return fail(r, "child mapping", path);
		r->children++;
	}
	for (long i = 0; i < o.pages; i++) {
		if (pread(fd, buf, PAGE, i * PAGE) != PAGE)
			return fail(r, "pread", path);
		for (long b = 0; b < PAGE; b++)
			if (buf[b] != pattern(cycle, k, i)) {
				errno = EILSEQ;
				return fail(r, "page contents", path);
			}
	}
	if (munmap(p, (size_t)len))
		return fail(r, "munmap", path);
	if (close(fd))
		return fail(r, "close", path);
	r->mappings++;
	return 0;
}

static void worker_main(int index, int results_fd, double deadline)
{
	struct wrec r = { 0 };
	char mnt[4096];

	snprintf(mnt, sizeof(mnt), "%s/m%d", o.dir, index);
	if (mkdir(mnt, 0700) && errno != EEXIST)
		fail(&r, "mkdir", mnt);
	while (!r.failure[0] && manylab_now() < deadline) {
		if (mount("umountrace", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=8m,mode=0700")) {
			fail(&r, "mount", mnt);
			break;
		}
		for (long k = 0; k < o.files && !r.failure[0]; k++)
			one_file(&r, mnt, r.cycles, k);
		if (umount(mnt)) {
			fail(&r, "umount", mnt);
			break;
		}
		r.cycles++;
	}
	rmdir(mnt);
	if (manylab_write_all(results_fd, &r, sizeof(r)))
		_exit(2);
	_exit(r.failure[0] ? 1 : 0);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: umountrace --dir DIR [options]\n"
"  --dir DIR        where the workers' mount points are made (DIR/m<i>)\n"
"  --workers N      worker processes (default: online CPUs)\n"
"  --duration S     seconds of mount/map/unmap/umount cycles (default 10)\n"
"  --files F        files per mount (default 2)\n"
"  --pages P        pages per file (default 4)\n"
"  --fork           a child maps each file too and exits before the unmap\n"
"Prints 'MANYLAB-RESULT {json}' with cycles, mappings and the first failure.\n");
}

static const struct option long_options[] = {
	{ "dir", 1, 0, 'd' }, { "workers", 1, 0, 'w' }, { "duration", 1, 0, 't' },
	{ "files", 1, 0, 'f' }, { "pages", 1, 0, 'p' }, { "fork", 0, 0, 'F' },
	{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
};

static int take_option(int option, char *arg)
{
	switch (option) {
	case 'd': o.dir = arg; return 0;
	case 'w': o.workers = (int)manylab_num_arg(PROG, "--workers", arg, 1, MAX_WORKERS); return 0;
	case 't': o.duration = (double)manylab_num_arg(PROG, "--duration", arg, 1, 1000000); return 0;
	case 'f': o.files = manylab_num_arg(PROG, "--files", arg, 1, 1024); return 0;
	case 'p': o.pages = manylab_num_arg(PROG, "--pages", arg, 1, 512); return 0;
	case 'F': o.fork_child = 1; return 0;
	default: return -1;
	}
}

int main(int argc, char **argv)
{
	struct wrec total = { 0 }, r;
	int results[2], bad = 0, reaped = 0, started = 0;
	double t0, t1, deadline;
	pid_t *pids;

	manylab_getopt(argc, argv, "h", long_options, usage, take_option);
	if (optind != argc || !o.dir) {
		if (!o.dir)
			fprintf(stderr, "%s: --dir is required\n", PROG);
		usage(stderr);
		return 2;
	}
	o.workers = manylab_worker_count(o.workers, MAX_WORKERS);
	pids = calloc((size_t)o.workers, sizeof(*pids));
	if (!pids || pipe2(results, O_CLOEXEC)) {
		fprintf(stderr, "%s: %s\n", PROG, strerror(errno));
		return 2;
	}
	manylab_roi_begin(0);
	t0 = manylab_now();
	deadline = t0 + o.duration;
	for (int i = 0; i < o.workers; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			fprintf(stderr, "%s: fork: %s\n", PROG, strerror(errno));
			bad = 1;
			break;
		}
		if (pids[i] == 0) {
			close(results[0]);
			worker_main(i, results[1], deadline);
		}
		started++;
	}
	close(results[1]);
	while (manylab_read_all(results[0], &r, sizeof(r)) == 0) {
		total.cycles += r.cycles;
		total.mappings += r.mappings;
		total.children += r.children;
		if (r.failure[0] && !total.failure[0])
			memcpy(total.failure, r.failure, sizeof(r.failure));
		reaped++;
	}
	if (manylab_reap(pids, started))
		bad = 1;
	t1 = manylab_now();
	manylab_roi_end(0);
	if (reaped != o.workers || total.failure[0] || !total.cycles)
		bad = 1;
	if (!total.failure[0] && bad)
		snprintf(total.failure, sizeof(total.failure), "%d of %d workers reported",
			 reaped, o.workers);
	for (char *c = total.failure; *c; c++)
		if (*c == '"' || *c == '\\')
			*c = '\'';
	printf("MANYLAB-RESULT {\"workload\": \"umountrace\", "
	       "\"params\": {\"workers\": %d, \"duration\": %.0f, \"files\": %ld, \"pages\": %ld, "
	       "\"fork\": %s}, \"cycles\": %" PRIu64 ", \"mappings\": %" PRIu64 ", "
	       "\"children\": %" PRIu64 ", \"elapsed_s\": %.3f, \"cycles_per_s\": %.1f, "
	       "\"failure\": \"%s\", \"verified\": %s}\n",
	       o.workers, o.duration, o.files, o.pages, o.fork_child ? "true" : "false",
	       total.cycles, total.mappings, total.children, t1 - t0,
	       t1 > t0 ? (double)total.cycles / (t1 - t0) : 0.0, total.failure,
	       bad ? "false" : "true");
	fflush(stdout);
	return bad;
}
