// SPDX-License-Identifier: MIT
/*
 * lrustress: safety stress for LRU locking changes (manylab, FinerLRU).
 *
 * Runs, at the same time, in separate processes:
 *   - W buffered writers, one file each, writing more data than memory in
 *     total so that reclaim runs, then reading the file back and checking
 *     every byte (the content is a function of file id and offset);
 *   - M mmap workers: map their own file, fill it through the mapping,
 *     mlock/munlock parts of it, msync, munmap, read back and check;
 *   - T THP workers: anonymous memory with MADV_HUGEPAGE, then THP splits
 *     by partial munmap, MADV_DONTNEED on sub-ranges, mlock of sub-ranges
 *     and MADV_COLD / MADV_PAGEOUT on sub-ranges (which split a THP that
 *     sits on the LRU at once), checking the surviving bytes each time;
 *   - a compaction trigger writing 1 to /proc/sys/vm/compact_memory;
 *   - optionally K of the writers inside a cgroup v2 memory cgroup whose
 *     memory.max is below their working set.
 *
 * Prints one line "MANYLAB-RESULT {json}" and exits non-zero on any data
 * mismatch or failed worker.  The parallel phase is the ROI (region 0).
 *
 * Build: gcc -static -O2 -Iworkloads/include -o lrustress lrustress.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "manylab_roi.h"
#include "manylab_util.h"

#define MIB (1024UL * 1024UL)
#define THP_SIZE (2 * MIB)
#define CHUNK (256 * 1024UL)
#define CG_DIR "/sys/fs/cgroup"
#define CG_NAME "lrustress"

enum kind { K_WRITER, K_MMAP, K_THP, K_COMPACT };

static const char *kind_name[] = { "writer", "mmap", "thp", "compact" };

struct stats {			/* one per worker, in shared memory */
	int kind;
	int id;
	int in_memcg;
	int done;
	uint64_t bytes_written;
	uint64_t bytes_verified;
	uint64_t mismatches;
	uint64_t first_bad_offset;
	uint64_t rounds;
	uint64_t mlock_ops;
	uint64_t munmap_splits;
	uint64_t dontneed_ops;
	uint64_t cold_splits;
	uint64_t compactions;
	uint64_t errors;
	char errmsg[96];
};

static struct {
	const char *dir;
	int writers, mmappers, thps, memcg_writers;
	uint64_t total_bytes;	/* over all writers */
	uint64_t mmap_bytes, thp_bytes;
	uint64_t memcg_max;
	double compact_interval;
	int rounds;
	double duration;
	int keep;
	uint64_t seed;
} opt = {
	.dir = ".",
	.writers = 4,
	.mmappers = 2,
	.thps = 2,
	.memcg_writers = 1,
	.mmap_bytes = 16 * MIB,
	.thp_bytes = 32 * MIB,
	.compact_interval = 1.0,
	.rounds = 1,
	.seed = 0x6c72757374726573ULL,
};

static volatile sig_atomic_t stop_flag;
static struct stats *st;

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Expected 8-byte word at byte offset off (multiple of 8) of stream id */
static inline uint64_t pattern(uint64_t id, uint64_t off)
{
	return mix64(opt.seed ^ (id << 44) ^ (off >> 3));
}

static void fill(uint64_t id, uint64_t off, void *buf, size_t len)
{
	uint64_t *w = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = pattern(id, off + 8 * i);
}

/* Returns the number of mismatching bytes; records the first bad offset */
static uint64_t check(struct stats *s, uint64_t id, uint64_t off,
		      const void *buf, size_t len)
{
	const uint64_t *w = buf;
	uint64_t bad = 0;
	size_t i;

	for (i = 0; i < len / 8; i++) {
		uint64_t want = pattern(id, off + 8 * i), got = w[i];

		if (got != want) {
			int b;

			for (b = 0; b < 8; b++)
				if (((got ^ want) >> (8 * b)) & 0xff)
					bad++;
			/* stored +1 so that 0 means "none" */
			if (!s->first_bad_offset)
				s->first_bad_offset = off + 8 * i + 1;
		}
	}
	s->mismatches += bad;
	s->bytes_verified += len;
	return bad;
}

static void fail(struct stats *s, const char *fmt, ...)
{
	va_list ap;

	s->errors++;
	if (s->errmsg[0])
		return;
	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

static uint64_t read_u64_file(const char *path, const char *key)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY);
	char *p;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (!key)
		return strtoull(buf, NULL, 10);
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		size_t kl = strlen(key);

		if (!strncmp(p, key, kl) && (p[kl] == ' ' || p[kl] == ':'))
			return strtoull(p + kl + 1 + strspn(p + kl + 1, " :"),
					NULL, 10);
	}
	return 0;
}

static int more_rounds(int round, double t0)
{
	if (stop_flag)
		return 0;
	if (opt.duration > 0)
		return round == 0 || manylab_now() - t0 < opt.duration;
	return round < opt.rounds;
}

/* Read [0, size) of fd back in CHUNK pieces through buf and check every byte. */
static void read_back(struct stats *s, int fd, uint64_t id, void *buf,
		      uint64_t size)
{
	uint64_t off;

	for (off = 0; off < size; off += CHUNK) {
		size_t len = size - off < CHUNK ? size - off : CHUNK;

		if (pread(fd, buf, len, off) != (ssize_t)len) {
			fail(s, "pread: %s", strerror(errno));
			break;
		}
		check(s, id, off, buf, len);
	}
}

/*
 * The rounds of a file worker (buffered writer or mmap worker) on its file <dir>/lrustress.<kind>
 * <worker id>, created afresh each round: fill_round writes it through fd (-1 from open, which
 * fill_round reports) and returns 0 to go on, -1 to stop (with fd closed); the file is then read
 * back from the start and closed. Each round's pattern is id_base | worker id << 8 | round's
 * low 8 bits.
 */
typedef int file_round_fn(struct stats *s, int fd, const char *path, uint64_t id, void *buf,
			  uint64_t size);

static void run_file_worker(struct stats *s, char kind, uint64_t id_base, uint64_t size,
			    file_round_fn *fill_round)
{
	char path[4096];
	double t0 = manylab_now();
	int round;
	void *buf;

	if (posix_memalign(&buf, 4096, CHUNK)) {
		fail(s, "posix_memalign");
		return;
	}
	snprintf(path, sizeof(path), "%s/lrustress.%c%d", opt.dir, kind, s->id);
	for (round = 0; more_rounds(round, t0); round++) {
		uint64_t id = id_base | (uint64_t)s->id << 8 | (round & 0xff);
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

		if (fill_round(s, fd, path, id, buf, size))
			break;
		/* read back from the start: the early part has been reclaimed */
		read_back(s, fd, id, buf, size);
		close(fd);
		s->rounds++;
	}
	if (!opt.keep)
		unlink(path);
	free(buf);
}

/* ---- buffered writer: write the whole file, then read and verify it ---- */
static int write_round(struct stats *s, int fd, const char *path, uint64_t id, void *buf,
		       uint64_t size)
{
	if (fd < 0) {
		fail(s, "open %s: %s", path, strerror(errno));
		return -1;
	}
	for (uint64_t off = 0; off < size; off += CHUNK) {
		size_t len = size - off < CHUNK ? size - off : CHUNK;

		fill(id, off, buf, len);
		if (pwrite(fd, buf, len, off) != (ssize_t)len) {
			fail(s, "pwrite: %s", strerror(errno));
			break;
		}
		s->bytes_written += len;
	}
	return 0;
}

static void run_writer(struct stats *s, uint64_t size)
{
	run_file_worker(s, 'w', 0, size, write_round);
}

/* ---- mmap worker: file mapping, mlock/munlock, munmap, read back ---- */
static int map_round(struct stats *s, int fd, const char *path, uint64_t id, void *buf,
		     uint64_t size)
{
	uint64_t off, step = size / 8;
	char *p;

	(void)buf;
	if (fd < 0 || ftruncate(fd, size)) {
		fail(s, "open/ftruncate %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		fail(s, "mmap: %s", strerror(errno));
		close(fd);
		return -1;
	}
	for (off = 0; off < size; off += step) {
		uint64_t len = size - off < step ? size - off : step;

		/* mlock every other slice before filling it */
		if ((off / step) % 2 == 0) {
			if (mlock(p + off, len))
				fail(s, "mlock: %s", strerror(errno));
			else
				s->mlock_ops++;
		}
		fill(id, off, p + off, len);
		s->bytes_written += len;
	}
	check(s, id, 0, p, size);	/* through the mapping */
	for (off = 0; off < size; off += step)
		if ((off / step) % 2 == 0 &&
		    !munlock(p + off, size - off < step ? size - off : step))
			s->mlock_ops++;
	if (msync(p, size, MS_SYNC))
		fail(s, "msync: %s", strerror(errno));
	/* drop the second half of the mapping first, then the rest */
	munmap(p + size / 2, size - size / 2);
	munmap(p, size / 2);
	posix_fadvise(fd, 0, size, POSIX_FADV_DONTNEED);
	return 0;
}

static void run_mmap(struct stats *s)
{
	run_file_worker(s, 'm', 1ULL << 40, opt.mmap_bytes & ~4095UL, map_round);
}

/* ---- THP worker: huge anonymous pages split in several ways ---- */
static void run_thp(struct stats *s)
{
	uint64_t size = (opt.thp_bytes + THP_SIZE - 1) & ~(THP_SIZE - 1);
	double t0 = manylab_now();
	int round;

	if (size < 4 * THP_SIZE)
		size = 4 * THP_SIZE;
	for (round = 0; more_rounds(round, t0); round++) {
		uint64_t id = 2ULL << 40 | (uint64_t)s->id << 8 | (round & 0xff);
		char *raw, *p;
		uint64_t off, nthp = size / THP_SIZE, i;

		raw = mmap(NULL, size + THP_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED) {
			fail(s, "mmap anon: %s", strerror(errno));
			break;
		}
		p = (char *)(((uintptr_t)raw + THP_SIZE - 1) & ~(THP_SIZE - 1));
		if (madvise(p, size, MADV_HUGEPAGE))
			fail(s, "madvise(MADV_HUGEPAGE): %s", strerror(errno));
		fill(id, 0, p, size);
		s->bytes_written += size;
		check(s, id, 0, p, size);

		for (i = 0; i < nthp; i++) {
			char *h = p + i * THP_SIZE;

			switch (i % 6) {
			case 0:	/* zap one 4 KiB page in the middle: split */
				munmap(h + THP_SIZE / 2, 4096);
				s->munmap_splits++;
				check(s, id, i * THP_SIZE, h, THP_SIZE / 2);
				check(s, id, i * THP_SIZE + THP_SIZE / 2 + 4096,
				      h + THP_SIZE / 2 + 4096,
				      THP_SIZE / 2 - 4096);
				break;
			case 1:	/* MADV_DONTNEED a sub-range: reads back zero */
				madvise(h + 64 * 1024, 256 * 1024, MADV_DONTNEED);
				s->dontneed_ops++;
				for (off = 0; off < 256 * 1024; off++)
					if (h[64 * 1024 + off]) {
						s->mismatches++;
						break;
					}
				check(s, id, i * THP_SIZE, h, 64 * 1024);
				check(s, id, i * THP_SIZE + 320 * 1024,
				      h + 320 * 1024, THP_SIZE - 320 * 1024);
				break;
			case 2:	/* mlock part of the huge page, then unlock */
				if (!mlock(h + 4096, 64 * 1024)) {
					s->mlock_ops++;
					check(s, id, i * THP_SIZE, h, THP_SIZE);
					munlock(h + 4096, 64 * 1024);
					s->mlock_ops++;
				} else {
					fail(s, "mlock: %s", strerror(errno));
				}
				break;
			case 4:	/* MADV_COLD on part: splits the THP in place */
			case 5:	/* MADV_PAGEOUT on part: split, try to reclaim */
				if (madvise(h + 8192, 64 * 1024,
					    i % 6 == 4 ? MADV_COLD : MADV_PAGEOUT))
					fail(s, "madvise(COLD/PAGEOUT): %s",
					     strerror(errno));
				else
					s->cold_splits++;
				check(s, id, i * THP_SIZE, h, THP_SIZE);
				break;
			default: /* unmap the tail half */
				munmap(h + THP_SIZE / 2, THP_SIZE / 2);
				s->munmap_splits++;
				check(s, id, i * THP_SIZE, h, THP_SIZE / 2);
				break;
			}
		}
		munmap(raw, size + THP_SIZE);
		s->rounds++;
	}
}

/* ---- compaction trigger ---- */
static void run_compact(struct stats *s)
{
	while (!stop_flag) {
		if (write_file("/proc/sys/vm/compact_memory", "1"))
			fail(s, "compact_memory: %s", strerror(errno));
		else
			s->compactions++;
		usleep((useconds_t)(opt.compact_interval * 1e6));
	}
}

static void on_term(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* ---- cgroup v2 set-up ---- */
static char cg_path[256];

static int memcg_setup(uint64_t max)
{
	char val[64];
	struct stat sb;

	if (stat(CG_DIR "/cgroup.controllers", &sb)) {
		mkdir(CG_DIR, 0755);
		if (mount("cgroup2", CG_DIR, "cgroup2", 0, NULL) &&
		    errno != EBUSY)
			return -1;
	}
	write_file(CG_DIR "/cgroup.subtree_control", "+memory");
	snprintf(cg_path, sizeof(cg_path), CG_DIR "/" CG_NAME);
	if (mkdir(cg_path, 0755) && errno != EEXIST)
		return -1;
	snprintf(val, sizeof(val), "%" PRIu64, max);
	{
		char p[320];

		snprintf(p, sizeof(p), "%s/memory.max", cg_path);
		if (write_file(p, val))
			return -1;
	}
	return 0;
}

static int memcg_enter(void)
{
	char p[320], pid[32];

	snprintf(p, sizeof(p), "%s/cgroup.procs", cg_path);
	snprintf(pid, sizeof(pid), "%d", getpid());
	return write_file(p, pid);
}

static uint64_t mem_total(void)
{
	return read_u64_file("/proc/meminfo", "MemTotal") * 1024;
}

/* ---- the command line ---- */

static const struct option long_options[] = {
	{ "dir", required_argument, 0, 'd' },
	{ "writers", required_argument, 0, 'w' },
	{ "size", required_argument, 0, 's' },
	{ "mmappers", required_argument, 0, 'm' },
	{ "mmap-size", required_argument, 0, 1 },
	{ "thp", required_argument, 0, 't' },
	{ "thp-size", required_argument, 0, 2 },
	{ "memcg-writers", required_argument, 0, 'c' },
	{ "memcg-max", required_argument, 0, 3 },
	{ "compact-interval", required_argument, 0, 4 },
	{ "rounds", required_argument, 0, 'r' },
	{ "duration", required_argument, 0, 'D' },
	{ "seed", required_argument, 0, 5 },
	{ "keep", no_argument, 0, 6 },
	{ "help", no_argument, 0, 'h' },
	{ 0, 0, 0, 0 }
};

/* One option for manylab_getopt: 0 when taken. */
static int take_option(int option, char *arg)
{
	switch (option) {
	case 'd': opt.dir = arg; return 0;
	case 'w': opt.writers = atoi(arg); return 0;
	case 's': opt.total_bytes = manylab_size_arg("lrustress", "--size", arg); return 0;
	case 'm': opt.mmappers = atoi(arg); return 0;
	case 1: opt.mmap_bytes = manylab_size_arg("lrustress", "--mmap-size", arg); return 0;
	case 't': opt.thps = atoi(arg); return 0;
	case 2: opt.thp_bytes = manylab_size_arg("lrustress", "--thp-size", arg); return 0;
	case 'c': opt.memcg_writers = atoi(arg); return 0;
	case 3: opt.memcg_max = manylab_size_arg("lrustress", "--memcg-max", arg); return 0;
	case 4: opt.compact_interval = atof(arg); return 0;
	case 'r': opt.rounds = atoi(arg); return 0;
	case 'D': opt.duration = atof(arg); return 0;
	case 5: opt.seed = strtoull(arg, NULL, 0); return 0;
	case 6: opt.keep = 1; return 0;
	default: return -1;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: lrustress [options]\n"
"Safety stress for LRU locking: parallel buffered writers (verified),\n"
"mmap+mlock workers, THP split workers, compaction and a memory cgroup.\n"
"  -d, --dir DIR           directory for the files, on a disk-backed fs (.)\n"
"  -w, --writers N         buffered writer processes (4)\n"
"  -s, --size BYTES        total bytes over all writers, k/M/G suffixes\n"
"                          (default 1.5 x MemTotal, so reclaim runs)\n"
"  -m, --mmappers N        mmap/mlock workers (2)\n"
"      --mmap-size BYTES   file size per mmap worker (16M)\n"
"  -t, --thp N             THP split workers (2)\n"
"      --thp-size BYTES    anonymous THP memory per worker (32M)\n"
"  -c, --memcg-writers N   writers run in cgroup " CG_NAME " (1; 0 = none)\n"
"      --memcg-max BYTES   its memory.max (default 1/4 of its writers' data)\n"
"      --compact-interval S seconds between compact_memory writes (1; 0 = off)\n"
"  -r, --rounds N          write+verify rounds per worker (1)\n"
"  -D, --duration S        instead of rounds: repeat for S seconds\n"
"      --seed N            pattern seed\n"
"      --keep              keep the files\n"
"  -h, --help              this text\n"
"Prints 'MANYLAB-RESULT {json}'; exit status 1 on any mismatch or failure.\n");
}

int main(int argc, char **argv)
{
	int nworkers, i, memcg_ok = 0, failed = 0, oom_kills = 0;
	uint64_t per_writer, tot_w = 0, tot_v = 0, tot_bad = 0, tot_err = 0;
	uint64_t tot_mlock = 0, tot_split = 0, tot_dn = 0, tot_comp = 0;
	uint64_t tot_cold = 0;
	uint64_t memcg_events_max = 0, memcg_events_oom = 0;
	pid_t *pids, cpid = -1;
	double t0, t1;
	const char *memcg_err = "";

	manylab_getopt(argc, argv, "d:w:s:m:t:c:r:D:h", long_options, usage, take_option);
	if (opt.writers < 0 || opt.mmappers < 0 || opt.thps < 0 ||
	    opt.memcg_writers < 0 || opt.rounds < 1) {
		usage(stderr);
		return 2;
	}
	if (opt.memcg_writers > opt.writers)
		opt.memcg_writers = opt.writers;
	if (!opt.total_bytes)
		opt.total_bytes = mem_total() / 2 * 3;
	per_writer = opt.writers ? (opt.total_bytes / opt.writers) & ~7UL : 0;
	if (opt.memcg_writers && !opt.memcg_max)
		opt.memcg_max = per_writer * opt.memcg_writers / 4;
	if (opt.memcg_writers) {
		if (memcg_setup(opt.memcg_max)) {
			memcg_err = strerror(errno);
			fprintf(stderr, "lrustress: memcg set-up failed: %s\n",
				memcg_err);
		} else {
			memcg_ok = 1;
		}
	}

	nworkers = opt.writers + opt.mmappers + opt.thps +
		   (opt.compact_interval > 0);
	st = mmap(NULL, sizeof(*st) * (nworkers + 1), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pids = calloc(nworkers + 1, sizeof(*pids));
	if (st == MAP_FAILED || !pids) {
		perror("lrustress: mmap");
		return 1;
	}
	for (i = 0; i < nworkers; i++) {
		st[i].id = i;
		if (i < opt.writers)
			st[i].kind = K_WRITER;
		else if (i < opt.writers + opt.mmappers)
			st[i].kind = K_MMAP;
		else if (i < opt.writers + opt.mmappers + opt.thps)
			st[i].kind = K_THP;
		else
			st[i].kind = K_COMPACT;
		st[i].in_memcg = memcg_ok && st[i].kind == K_WRITER &&
				 i < opt.memcg_writers;
	}

	fflush(NULL);
	t0 = manylab_now();
	manylab_roi_begin(0);
	for (i = 0; i < nworkers; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("lrustress: fork");
			stop_flag = 1;
			break;
		}
		if (pid == 0) {
			struct stats *s = &st[i];

			signal(SIGTERM, on_term);
			if (s->in_memcg && memcg_enter())
				fail(s, "memcg enter: %s", strerror(errno));
			switch (s->kind) {
			case K_WRITER: run_writer(s, per_writer); break;
			case K_MMAP: run_mmap(s); break;
			case K_THP: run_thp(s); break;
			default: run_compact(s); break;
			}
			s->done = 1;
			_exit(s->errors || s->mismatches ? 1 : 0);
		}
		pids[i] = pid;
		if (st[i].kind == K_COMPACT)
			cpid = pid;
	}
	/* wait for everything but the compaction trigger, then stop it */
	for (i = 0; i < nworkers; i++) {
		int status;

		if (!pids[i] || pids[i] == cpid)
			continue;
		if (waitpid(pids[i], &status, 0) < 0)
			continue;
		if (WIFSIGNALED(status)) {
			failed++;
			if (WTERMSIG(status) == SIGKILL && st[i].in_memcg)
				oom_kills++;
			snprintf(st[i].errmsg, sizeof(st[i].errmsg),
				 "killed by signal %d", WTERMSIG(status));
		} else if (WEXITSTATUS(status) || !st[i].done) {
			failed++;
		}
	}
	if (cpid > 0) {
		int status;

		kill(cpid, SIGTERM);
		waitpid(cpid, &status, 0);
	}
	manylab_roi_end(0);
	t1 = manylab_now();

	if (memcg_ok) {
		char p[320];

		snprintf(p, sizeof(p), "%s/memory.events", cg_path);
		memcg_events_max = read_u64_file(p, "max");
		memcg_events_oom = read_u64_file(p, "oom_kill");
	}

	for (i = 0; i < nworkers; i++) {
		tot_w += st[i].bytes_written;
		tot_v += st[i].bytes_verified;
		tot_bad += st[i].mismatches;
		tot_err += st[i].errors;
		tot_mlock += st[i].mlock_ops;
		tot_split += st[i].munmap_splits;
		tot_dn += st[i].dontneed_ops;
		tot_cold += st[i].cold_splits;
		tot_comp += st[i].compactions;
		if (st[i].mismatches || st[i].errors || st[i].errmsg[0])
			fprintf(stderr,
				"lrustress: %s %d: %" PRIu64 " bad bytes (first at %" PRIu64
				"), %" PRIu64 " errors %s\n",
				kind_name[st[i].kind], st[i].id, st[i].mismatches,
				st[i].first_bad_offset ? st[i].first_bad_offset - 1 : 0,
				st[i].errors, st[i].errmsg);
	}

	printf("MANYLAB-RESULT {\"workload\": \"lrustress\", "
	       "\"params\": {\"dir\": \"%s\", \"writers\": %d, \"total_bytes\": %" PRIu64
	       ", \"bytes_per_writer\": %" PRIu64 ", \"mmappers\": %d, \"mmap_bytes\": %" PRIu64
	       ", \"thp_workers\": %d, \"thp_bytes\": %" PRIu64 ", \"memcg_writers\": %d"
	       ", \"memcg_max\": %" PRIu64 ", \"compact_interval\": %.3f, \"rounds\": %d"
	       ", \"duration\": %.1f, \"mem_total\": %" PRIu64 "}, "
	       "\"elapsed_s\": %.3f, \"bytes_written\": %" PRIu64 ", \"bytes_verified\": %" PRIu64
	       ", \"mismatch_bytes\": %" PRIu64 ", \"errors\": %" PRIu64 ", \"failed_workers\": %d"
	       ", \"mlock_ops\": %" PRIu64 ", \"thp_munmap_splits\": %" PRIu64
	       ", \"thp_dontneed_ops\": %" PRIu64 ", \"thp_cold_pageout_ops\": %" PRIu64
	       ", \"compactions\": %" PRIu64
	       ", \"memcg\": {\"enabled\": %s, \"error\": \"%s\", \"events_max\": %" PRIu64
	       ", \"events_oom_kill\": %" PRIu64 ", \"oom_killed_workers\": %d}"
	       ", \"verified\": %s}\n",
	       opt.dir, opt.writers, opt.total_bytes, per_writer, opt.mmappers,
	       opt.mmap_bytes, opt.thps, opt.thp_bytes, opt.memcg_writers,
	       opt.memcg_max, opt.compact_interval, opt.rounds, opt.duration,
	       mem_total(), t1 - t0, tot_w, tot_v, tot_bad, tot_err, failed,
	       tot_mlock, tot_split, tot_dn, tot_cold, tot_comp,
	       memcg_ok ? "true" : "false", memcg_err, memcg_events_max,
	       memcg_events_oom, oom_kills,
	       (!tot_bad && !tot_err && !failed) ? "true" : "false");
	fflush(stdout);
	if (memcg_ok)
		rmdir(cg_path);
	return (tot_bad || tot_err || failed) ? 1 : 0;
}
