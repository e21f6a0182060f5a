// SPDX-License-Identifier: MIT
/*
 * forkstress: safety stress for reverse-map changes (manylab, LDU).
 *
 * Runs, at the same time, in separate processes:
 *   - W workers, each looping over rounds until the deadline:
 *       * refill a private anonymous region with a pattern that is a
 *         function of (worker, round, offset);
 *       * write the worker's own pages of one shared file through a
 *         MAP_SHARED mapping (all workers map the same file);
 *       * fork F children, each of which checks the inherited (COW-shared)
 *         anonymous pattern, writes half of it and checks both halves,
 *         checks the worker's file pages through the inherited and a new
 *         MAP_SHARED mapping, dirties a MAP_PRIVATE mapping of the file
 *         (file vma with anon pages), splits vmas with mprotect, moves one
 *         with mremap, optionally forks a grandchild doing the same (deep
 *         anon_vma chains) and optionally execs this program, which checks
 *         the file again; the parent then checks its own pattern is intact;
 *       * truncates a mapped file (its own) while a child also maps it and
 *         checks that both get SIGBUS beyond the new end and zeroes after
 *         re-extension;
 *       * munmap/mremap/mprotect splits and merges of its own mappings;
 *   - optionally a memory hog that keeps touching more memory than is
 *     free, with zram swap set up by this program (--zram), so that
 *     reclaim walks the reverse maps of all of the above;
 *   - optionally the workers inside a cgroup v2 memory cgroup (--memcg);
 *   - optionally a shared anonymous region (--shared) that the main process
 *     fills before it forks anything, so that every process of the run maps
 *     it COW-shared under one root anon_vma, into whose tree every fork and
 *     exit logs its chains; each worker reads a window of it before it
 *     forks (its children inherit those mappings and check some pages), so
 *     that reclaim walks folios mapped by many processes in that one busy
 *     tree (LDU: try-lock rmap walkers meet queued updates); --shared-holders
 *     idle processes map it from the start and make those walks longer;
 *   - a compaction trigger writing 1 to /proc/sys/vm/compact_memory
 *     (page migration walks the reverse maps too).
 *
 * Prints one line "MANYLAB-RESULT {json}" and exits non-zero on any data
 * mismatch, unexpected signal or failed child.  The parallel phase is the
 * ROI (region 0).
 *
 * Build: gcc -static -O2 -Iworkloads/include -o forkstress forkstress.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "manylab_procs.h"
#include "manylab_roi.h"
#include "manylab_util.h"

#define MIB (1024UL * 1024UL)
#define CG_DIR "/sys/fs/cgroup"
#define CG_NAME "forkstress"
#define MAX_WORKERS 1024

/* Child exit codes: 0 ok, otherwise the first failed check. */
enum fail {
	F_PASS = 0,
	F_ANON_INHERIT = 11,	/* COW-shared anon pattern wrong in child */
	F_ANON_WRITE = 12,	/* child's own anon writes wrong */
	F_FILE_SHARED = 13,	/* shared file pages wrong */
	F_FILE_PRIVATE = 14,	/* MAP_PRIVATE file COW wrong */
	F_SPLIT = 15,		/* data wrong after mprotect split/merge */
	F_MREMAP = 16,		/* data wrong after mremap */
	F_GRANDCHILD = 17,	/* grandchild failed */
	F_EXEC = 18,		/* exec failed or exec'd check failed */
	F_SIGBUS = 19,		/* SIGBUS missing or unexpected */
	F_TRUNC = 20,		/* data wrong after truncate/extend */
	F_SYSCALL = 21,		/* a system call failed unexpectedly */
	F_SHARED_ANON = 22,	/* the --shared region's pattern wrong */
};

static const char *fail_name(int code)
{
	switch (code) {
	case F_ANON_INHERIT: return "anon_inherit";
	case F_ANON_WRITE: return "anon_write";
	case F_FILE_SHARED: return "file_shared";
	case F_FILE_PRIVATE: return "file_private";
	case F_SPLIT: return "split";
	case F_MREMAP: return "mremap";
	case F_GRANDCHILD: return "grandchild";
	case F_EXEC: return "exec";
	case F_SIGBUS: return "sigbus";
	case F_TRUNC: return "truncate";
	case F_SYSCALL: return "syscall";
	case F_SHARED_ANON: return "shared_anon";
	default: return "other";
	}
}

struct wstats {			/* one per worker, in shared memory */
	uint64_t rounds, forks, execs, children_ok, children_failed,
		 children_signaled, parent_mismatch, splits, remaps,
		 truncates, sigbus_expected, sigbus_seen, syscall_errors;
	int first_fail;		/* first child failure code seen */
	int first_signal;
	int done;
};

struct opts {
	const char *dir;
	int workers;
	double duration;
	size_t anon;
	size_t file_size;
	int fanout;
	int depth;
	int exec;
	size_t hog;
	size_t zram;
	size_t memcg;
	double compact;
	size_t shared;
	int shared_pages;
	int shared_holders;
	unsigned seed;
};

static struct opts o = {
	.dir = "/tmp", .workers = 0, .duration = 30, .anon = 1 * MIB,
	.file_size = 1 * MIB, .fanout = 4, .depth = 2, .exec = 1, .hog = 0,
	.zram = 0, .memcg = 0, .compact = 1.0, .shared = 0, .shared_pages = 256,
	.seed = 1,
};

static size_t pagesz;
static char shared_path[4096];
static char self_exe[4096];
static struct wstats *stats;
static volatile int *stop_flag;
static char *shared_anon;	/* --shared: mapped by main, never written after */

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "forkstress: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

/* The pattern word at byte offset off of a region tagged (who, gen). */
static inline uint64_t pat(uint64_t who, uint64_t gen, uint64_t off)
{
	uint64_t x = (who << 40) ^ (gen << 20) ^ (off >> 3);

	x *= 0x9e3779b97f4a7c15ULL;
	return x ^ (x >> 29);
}

static void fill(void *p, size_t len, uint64_t who, uint64_t gen, size_t base)
{
	uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = pat(who, gen, base + i * 8);
}

static int check(const void *p, size_t len, uint64_t who, uint64_t gen,
		 size_t base)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		if (w[i] != pat(who, gen, base + i * 8))
			return 0;
	return 1;
}

static int check_zero(const void *p, size_t len)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		if (w[i])
			return 0;
	return 1;
}

/* ---- SIGBUS probing ---- */

static sigjmp_buf bus_jb;
static volatile sig_atomic_t bus_armed;

static void bus_handler(int sig)
{
	(void)sig;
	if (bus_armed)
		siglongjmp(bus_jb, 1);
	signal(SIGBUS, SIG_DFL);
	raise(SIGBUS);
}

/* Returns 1 if reading *p raised SIGBUS, 0 if it did not. */
static int probe_sigbus(volatile const char *p)
{
	if (sigsetjmp(bus_jb, 1)) {
		bus_armed = 0;
		return 1;
	}
	bus_armed = 1;
	(void)*p;
	bus_armed = 0;
	return 0;
}

/* ---- the shared file: page p is owned by worker p % workers ---- */

static size_t file_pages(void)
{
	return o.file_size / pagesz;
}

static void write_own_pages(char *map, int w, uint64_t gen)
{
	for (size_t p = w; p < file_pages(); p += o.workers)
		fill(map + p * pagesz, pagesz, 1000 + w, gen, p * pagesz);
}

static int check_own_pages(const char *map, int w, uint64_t gen)
{
	for (size_t p = w; p < file_pages(); p += o.workers)
		if (!check(map + p * pagesz, pagesz, 1000 + w, gen, p * pagesz))
			return 0;
	return 1;
}

/* ---- the --shared region: tagged (4000, 1), read-only after main's fill ---- */

#define SHARED_SAMPLE 8	/* pages of the window a child checks */

/* Page i of the window every worker reads in round gen (--shared-pages long). */
static size_t shared_page(uint64_t gen, size_t i)
{
	size_t n = o.shared / pagesz;

	return ((gen - 1) * o.shared_pages + i) % n;
}

static int check_shared_page(size_t p)
{
	return check(shared_anon + p * pagesz, pagesz, 4000, 1, p * pagesz);
}

/*
 * A worker reads the round's window before it forks, so that its children
 * and grandchildren inherit those mappings: reclaim then walks folios
 * mapped by many processes, in a tree that their forks and exits update.
 */
static int check_shared_window(uint64_t gen)
{
	if (!shared_anon)
		return 1;
	for (size_t i = 0; i < (size_t)o.shared_pages; i++)
		if (!check_shared_page(shared_page(gen, i)))
			return 0;
	return 1;
}

/* A child checks SHARED_SAMPLE pages of the window, picked by its tag. */
static int check_shared_sample(uint64_t tag, uint64_t gen)
{
	if (!shared_anon)
		return 1;
	for (int i = 0; i < SHARED_SAMPLE; i++) {
		uint64_t x = pat(tag, gen, (uint64_t)i << 3);

		if (!check_shared_page(shared_page(gen, x % o.shared_pages)))
			return 0;
	}
	return 1;
}

/* ---- what a forked child checks ---- */

struct childctx {
	int w;
	uint64_t gen;
	char *anon;		/* parent's region, COW-shared */
	char *fmap;		/* parent's MAP_SHARED mapping of the file */
	int depth;
};

static int child_body(struct childctx *c, uint64_t tag);

static int child_checks(struct childctx *c, uint64_t tag)
{
	size_t half = (o.anon / 2) & ~(pagesz - 1);
	int fd, rc;
	char *m, *p, *q;

	/* 0. the --shared window the worker mapped before it forked us */
	if (!check_shared_sample(tag, c->gen))
		return F_SHARED_ANON;

	/* 1. inherited anonymous memory, COW-shared with the parent */
	if (!check(c->anon, o.anon, c->w, c->gen, 0))
		return F_ANON_INHERIT;
	fill(c->anon, half, tag, c->gen, 0);
	if (!check(c->anon, half, tag, c->gen, 0))
		return F_ANON_WRITE;
	if (!check(c->anon + half, o.anon - half, c->w, c->gen, half))
		return F_ANON_INHERIT;

	/* 2. the worker's pages of the shared file, inherited and new map */
	if (!check_own_pages(c->fmap, c->w, c->gen))
		return F_FILE_SHARED;
	fd = open(shared_path, O_RDWR);
	if (fd < 0)
		return F_SYSCALL;
	m = mmap(NULL, o.file_size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return F_SYSCALL;
	}
	rc = check_own_pages(m, c->w, c->gen) ? 0 : F_FILE_SHARED;
	munmap(m, o.file_size);
	if (rc) {
		close(fd);
		return rc;
	}

	/* 3. MAP_PRIVATE of the file: COW a page, others stay file pages */
	p = mmap(NULL, o.file_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return F_SYSCALL;
	fill(p + c->w * pagesz, pagesz, tag, 7, 0);
	if (!check(p + c->w * pagesz, pagesz, tag, 7, 0) ||
	    !check_own_pages(c->fmap, c->w, c->gen)) {
		munmap(p, o.file_size);
		return F_FILE_PRIVATE;
	}

	/* 4. split the private file vma and the anon vma, then merge back */
	if (file_pages() >= 3) {
		if (mprotect(p + pagesz, pagesz, PROT_READ))
			return F_SYSCALL;
		if (mprotect(p + pagesz, pagesz, PROT_READ | PROT_WRITE))
			return F_SYSCALL;
	}
	if (o.anon >= 3 * pagesz) {
		if (mprotect(c->anon + pagesz, pagesz, PROT_READ))
			return F_SYSCALL;
		if (!check(c->anon, half, tag, c->gen, 0))
			return F_SPLIT;
		if (mprotect(c->anon + pagesz, pagesz, PROT_READ | PROT_WRITE))
			return F_SYSCALL;
	}
	if (!check(p + c->w * pagesz, pagesz, tag, 7, 0))
		return F_SPLIT;

	/* 5. move the private file mapping (copy_vma/move_vma) */
	q = mremap(p, o.file_size, 2 * o.file_size, MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		return F_SYSCALL;
	if (!check(q + c->w * pagesz, pagesz, tag, 7, 0))
		rc = F_MREMAP;
	munmap(q, 2 * o.file_size);
	if (rc)
		return rc;

	/* 6. a grandchild: one more level of anon_vma */
	if (c->depth > 1) {
		pid_t pid = fork();
		int st;

		if (pid < 0)
			return F_SYSCALL;
		if (pid == 0) {
			struct childctx g = *c;

			/* inherited from the child: its half, then the worker's */
			if (!check(c->anon, half, tag, c->gen, 0) ||
			    !check(c->anon + half, o.anon - half, c->w, c->gen,
				   half))
				_exit(F_ANON_INHERIT);
			/* start over from the worker's pattern (COW again) */
			fill(c->anon, o.anon, c->w, c->gen, 0);
			g.depth = c->depth - 1;
			_exit(child_body(&g, tag + 1));
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			return F_GRANDCHILD;
		/* our copy must not see the grandchild's writes */
		if (!check(c->anon, half, tag, c->gen, 0) ||
		    !check(c->anon + half, o.anon - half, c->w, c->gen, half))
			return F_ANON_WRITE;
	}
	return F_PASS;
}

static int child_body(struct childctx *c, uint64_t tag)
{
	return child_checks(c, tag);
}

/* Executed image: check the worker's file pages, then exit. */
static int exec_child_main(int w, uint64_t gen, int workers, size_t fsize)
{
	int fd = open(shared_path, O_RDONLY);
	char *m;
	int ok;

	o.workers = workers;
	o.file_size = fsize;
	if (fd < 0)
		return F_EXEC;
	m = mmap(NULL, fsize, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return F_EXEC;
	ok = check_own_pages(m, w, gen);
	munmap(m, fsize);
	return ok ? F_PASS : F_FILE_SHARED;
}

/* ---- truncate of a mapped file ---- */

static int truncate_test(int w, uint64_t gen, struct wstats *st)
{
	char path[4200];
	size_t len = 4 * pagesz;
	int fd, pfd[2], rc = 0, s;
	char *m;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/forkstress.trunc.%d", o.dir, w);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, len))
		return F_SYSCALL;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return F_SYSCALL;
	}
	fill(m, len, 2000 + w, gen, 0);
	if (pipe(pfd)) {
		munmap(m, len);
		close(fd);
		return F_SYSCALL;
	}
	pid = fork();
	if (pid == 0) {
		char c;
		int r = F_PASS;

		close(pfd[1]);
		if (read(pfd[0], &c, 1) != 1)
			_exit(F_SYSCALL);
		/* truncated to one page: page 0 kept, pages 1..3 SIGBUS */
		if (!check(m, pagesz, 2000 + w, gen, 0))
			r = F_TRUNC;
		else if (!probe_sigbus(m + 2 * pagesz))
			r = F_SIGBUS;
		_exit(r);
	}
	close(pfd[0]);
	if (pid < 0) {
		close(pfd[1]);
		munmap(m, len);
		close(fd);
		return F_SYSCALL;
	}
	st->truncates++;
	if (ftruncate(fd, pagesz))
		rc = F_SYSCALL;
	if (write(pfd[1], "x", 1) != 1)
		rc = F_SYSCALL;
	close(pfd[1]);
	st->sigbus_expected += 2;
	if (!rc && !check(m, pagesz, 2000 + w, gen, 0))
		rc = F_TRUNC;
	if (!rc) {
		if (probe_sigbus(m + 3 * pagesz))
			st->sigbus_seen++;
		else
			rc = F_SIGBUS;
	}
	if (waitpid(pid, &s, 0) != pid)
		rc = rc ? rc : F_SYSCALL;
	else if (WIFEXITED(s) && WEXITSTATUS(s) == 0)
		st->sigbus_seen++;
	else if (!rc)
		rc = WIFEXITED(s) ? WEXITSTATUS(s) : F_SIGBUS;
	/* extend again: the lost pages come back as zeroes */
	if (!rc && ftruncate(fd, len))
		rc = F_SYSCALL;
	if (!rc && (!check(m, pagesz, 2000 + w, gen, 0) ||
		    !check_zero(m + pagesz, len - pagesz)))
		rc = F_TRUNC;
	munmap(m, len);
	close(fd);
	unlink(path);
	return rc;
}

/* ---- vma splits, merges and moves in the worker itself ---- */

static int split_test(int w, uint64_t gen, struct wstats *st)
{
	size_t n = 16, len = n * pagesz;
	char *m, *q;

	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return F_SYSCALL;
	fill(m, len, 3000 + w, gen, 0);
	/* punch alternate pages read-only: up to n vmas, then merge */
	for (size_t i = 1; i < n; i += 2)
		if (mprotect(m + i * pagesz, pagesz, PROT_READ))
			return F_SYSCALL;
	st->splits++;
	if (!check(m, len, 3000 + w, gen, 0))
		return F_SPLIT;
	if (mprotect(m, len, PROT_READ | PROT_WRITE))
		return F_SYSCALL;
	/* munmap a hole in the middle, then move the tail */
	if (munmap(m + 4 * pagesz, 2 * pagesz))
		return F_SYSCALL;
	q = mremap(m + 6 * pagesz, (n - 6) * pagesz, (n - 6) * pagesz,
		   MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		return F_SYSCALL;
	st->remaps++;
	if (!check(m, 4 * pagesz, 3000 + w, gen, 0) ||
	    !check(q, (n - 6) * pagesz, 3000 + w, gen, 6 * pagesz))
		return F_MREMAP;
	/* grow in place or move, the old part must survive */
	q = mremap(q, (n - 6) * pagesz, (n + 4) * pagesz, MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		return F_SYSCALL;
	if (!check(q, (n - 6) * pagesz, 3000 + w, gen, 6 * pagesz) ||
	    !check_zero(q + (n - 6) * pagesz, 10 * pagesz))
		return F_MREMAP;
	munmap(q, (n + 4) * pagesz);
	munmap(m, 4 * pagesz);
	return F_PASS;
}

static void note_fail(struct wstats *st, int code)
{
	if (!st->first_fail)
		st->first_fail = code;
}

static void cg_join(void)
{
	char path[256], buf[32];
	int fd;

	if (!o.memcg)
		return;
	snprintf(path, sizeof(path), CG_DIR "/" CG_NAME "/cgroup.procs");
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return;
	snprintf(buf, sizeof(buf), "%d\n", getpid());
	if (write(fd, buf, strlen(buf)) < 0)
		perror("forkstress: cgroup.procs");
	close(fd);
}

static void worker(int w)
{
	struct wstats *st = &stats[w];
	double deadline = manylab_now() + o.duration;
	uint64_t gen = 0;
	char *anon, *fmap;
	int fd;

	cg_join();
	srand(o.seed * 7919 + w);
	anon = mmap(NULL, o.anon, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fd = open(shared_path, O_RDWR);
	if (anon == MAP_FAILED || fd < 0)
		die("worker %d: setup: %s", w, strerror(errno));

	while (manylab_now() < deadline && !*stop_flag) {
		pid_t pids[64];
		int n = 0, rc;

		gen++;
		st->rounds++;
		fill(anon, o.anon, w, gen, 0);
		fmap = mmap(NULL, o.file_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd, 0);
		if (fmap == MAP_FAILED) {
			st->syscall_errors++;
			note_fail(st, F_SYSCALL);
			break;
		}
		write_own_pages(fmap, w, gen);
		if (!check_shared_window(gen)) {
			st->parent_mismatch++;
			note_fail(st, F_SHARED_ANON);
		}

		for (int i = 0; i < o.fanout && i < 64; i++) {
			int do_exec = o.exec && (rand() % 4 == 0);
			pid_t pid = fork();

			if (pid < 0) {
				st->syscall_errors++;
				continue;
			}
			if (pid == 0) {
				struct childctx c = {
					.w = w, .gen = gen, .anon = anon,
					.fmap = fmap, .depth = o.depth,
				};
				int r = child_body(&c, 100000 + w * 100 + i);

				if (!r && do_exec) {
					char a[4][32];

					snprintf(a[0], 32, "%d", w);
					snprintf(a[1], 32, "%" PRIu64, gen);
					snprintf(a[2], 32, "%d", o.workers);
					snprintf(a[3], 32, "%zu", o.file_size);
					execl(self_exe, "forkstress",
					      "--exec-child", a[0], a[1], a[2],
					      a[3], shared_path, (char *)NULL);
					_exit(F_EXEC);
				}
				_exit(r);
			}
			st->forks++;
			st->execs += do_exec;
			pids[n++] = pid;
		}
		for (int i = 0; i < n; i++) {
			int s;

			if (waitpid(pids[i], &s, 0) != pids[i]) {
				st->syscall_errors++;
				continue;
			}
			if (WIFEXITED(s) && WEXITSTATUS(s) == 0) {
				st->children_ok++;
			} else if (WIFEXITED(s)) {
				st->children_failed++;
				note_fail(st, WEXITSTATUS(s));
			} else {
				st->children_signaled++;
				if (!st->first_signal)
					st->first_signal = WTERMSIG(s);
			}
		}
		/* COW: nothing the children wrote may show up here */
		if (!check(anon, o.anon, w, gen, 0) ||
		    !check_own_pages(fmap, w, gen)) {
			st->parent_mismatch++;
			note_fail(st, F_ANON_INHERIT);
		}
		munmap(fmap, o.file_size);

		rc = split_test(w, gen, st);
		if (rc) {
			st->parent_mismatch++;
			note_fail(st, rc);
		}
		rc = truncate_test(w, gen, st);
		if (rc) {
			st->parent_mismatch++;
			note_fail(st, rc);
		}
	}
	close(fd);
	st->done = 1;
	_exit(0);
}

/* ---- memory pressure, swap, memcg, compaction ---- */

static int write_str(const char *path, const char *s);

static void hog(void)
{
	size_t chunk = 4 * MIB, n = o.hog / chunk, i = 0;
	char **bufs = calloc(n ? n : 1, sizeof(*bufs));

	/* if memory runs out, the OOM killer should pick the hog */
	write_str("/proc/self/oom_score_adj", "1000");
	cg_join();
	while (!*stop_flag) {
		if (!bufs[i]) {
			bufs[i] = mmap(NULL, chunk, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (bufs[i] == MAP_FAILED) {
				bufs[i] = NULL;
				usleep(10000);
				continue;
			}
		}
		for (size_t off = 0; off < chunk; off += pagesz)
			bufs[i][off]++;
		i = (i + 1) % (n ? n : 1);
	}
	_exit(0);
}

static void compactor(void)
{
	while (!*stop_flag) {
		int fd = open("/proc/sys/vm/compact_memory", O_WRONLY);

		if (fd >= 0) {
			if (write(fd, "1", 1) < 0)
				break;
			close(fd);
		}
		usleep((useconds_t)(o.compact * 1e6));
	}
	_exit(0);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

static int swap_active(const char *dev)
{
	char line[512];
	FILE *f = fopen("/proc/swaps", "r");
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, dev, strlen(dev)))
			found = 1;
	fclose(f);
	return found;
}

/* zram0 as swap: disksize, a SWAPSPACE2 header, swapon.  1 if active. */
static int setup_zram(void)
{
	const char *dev = "/dev/zram0";
	char buf[64];
	unsigned char *hdr;
	uint32_t *info;
	int fd;

	if (!o.zram)
		return 0;
	if (swap_active(dev))
		return 1;
	if (access("/sys/block/zram0", F_PASS))
		write_str("/sys/class/zram-control/hot_add", "1");
	snprintf(buf, sizeof(buf), "%zu", o.zram);
	if (write_str("/sys/block/zram0/disksize", buf))
		fprintf(stderr, "forkstress: zram disksize: %s\n",
			strerror(errno));
	fd = open(dev, O_WRONLY);
	if (fd < 0) {
		fprintf(stderr, "forkstress: %s: %s\n", dev, strerror(errno));
		return 0;
	}
	hdr = calloc(1, pagesz);
	info = (uint32_t *)(hdr + 1024);
	info[0] = 1;				/* version */
	info[1] = o.zram / pagesz - 1;		/* last_page */
	info[2] = 0;				/* nr_badpages */
	memcpy(hdr + pagesz - 10, "SWAPSPACE2", 10);
	if (write(fd, hdr, pagesz) != (ssize_t)pagesz)
		fprintf(stderr, "forkstress: swap header: %s\n", strerror(errno));
	fsync(fd);
	close(fd);
	free(hdr);
	if (swapon(dev, 0)) {
		fprintf(stderr, "forkstress: swapon: %s\n", strerror(errno));
		return 0;
	}
	return 1;
}

static int setup_memcg(void)
{
	char buf[64];

	if (!o.memcg)
		return 0;
	if (access(CG_DIR "/cgroup.controllers", F_PASS)) {
		mkdir(CG_DIR, 0755);
		if (mount("cgroup2", CG_DIR, "cgroup2", 0, NULL)) {
			fprintf(stderr, "forkstress: mount cgroup2: %s\n",
				strerror(errno));
			return 0;
		}
	}
	write_str(CG_DIR "/cgroup.subtree_control", "+memory");
	mkdir(CG_DIR "/" CG_NAME, 0755);
	snprintf(buf, sizeof(buf), "%zu", o.memcg);
	if (write_str(CG_DIR "/" CG_NAME "/memory.max", buf)) {
		fprintf(stderr, "forkstress: memory.max: %s\n", strerror(errno));
		return 0;
	}
	return 1;
}

/* ---- the command line ---- */

static const struct option long_options[] = {
	{ "dir", 1, 0, 'd' }, { "workers", 1, 0, 'w' },
	{ "duration", 1, 0, 't' }, { "anon", 1, 0, 'a' },
	{ "file-size", 1, 0, 'f' }, { "fanout", 1, 0, 'F' },
	{ "depth", 1, 0, 'D' }, { "exec", 0, 0, 'e' },
	{ "no-exec", 0, 0, 'E' }, { "hog", 1, 0, 'H' },
	{ "zram", 1, 0, 'z' }, { "memcg", 1, 0, 'm' },
	{ "compact", 1, 0, 'c' }, { "shared", 1, 0, 'S' },
	{ "shared-pages", 1, 0, 'P' }, { "shared-holders", 1, 0, 'O' },
	{ "seed", 1, 0, 's' },
	{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
};

/* One option for manylab_getopt: 0 when taken. */
static int take_option(int option, char *arg)
{
	switch (option) {
	case 'd': o.dir = arg; return 0;
	case 'w': o.workers = atoi(arg); return 0;
	case 't': o.duration = atof(arg); return 0;
	case 'a': o.anon = manylab_size_arg("forkstress", "--anon", arg); return 0;
	case 'f': o.file_size = manylab_size_arg("forkstress", "--file-size", arg); return 0;
	case 'F': o.fanout = atoi(arg); return 0;
	case 'D': o.depth = atoi(arg); return 0;
	case 'e': o.exec = 1; return 0;
	case 'E': o.exec = 0; return 0;
	case 'H': o.hog = manylab_size_arg("forkstress", "--hog", arg); return 0;
	case 'z': o.zram = manylab_size_arg("forkstress", "--zram", arg); return 0;
	case 'm': o.memcg = manylab_size_arg("forkstress", "--memcg", arg); return 0;
	case 'c': o.compact = atof(arg); return 0;
	case 'S': o.shared = manylab_size_arg("forkstress", "--shared", arg); return 0;
	case 'P': o.shared_pages = atoi(arg); return 0;
	case 'O': o.shared_holders = atoi(arg); return 0;
	case 's': o.seed = strtoul(arg, 0, 10); return 0;
	default: return -1;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: forkstress [options]\n"
"  --dir DIR        work directory for the files (default /tmp)\n"
"  --workers N      worker processes (default: one per online CPU)\n"
"  --duration S     seconds to run (default 30)\n"
"  --anon SIZE      private anonymous region per worker (default 1M)\n"
"  --file-size SIZE shared file mapped by every worker (default 1M)\n"
"  --fanout N       children forked per round (default 4, max 64)\n"
"  --depth N        fork depth per child: 2 = child + grandchild (default 2)\n"
"  --exec / --no-exec  exec this program in 1 of 4 children (default on)\n"
"  --hog SIZE       memory hog touching SIZE of anonymous memory (default 0)\n"
"  --zram SIZE      set up /dev/zram0 of SIZE as swap (default 0 = none)\n"
"  --memcg SIZE     run workers and hog in a cgroup with memory.max SIZE\n"
"  --compact S      write /proc/sys/vm/compact_memory every S s (0 = off,\n"
"                   default 1)\n"
"  --shared SIZE    anonymous region filled by the main process before it\n"
"                   forks: every process maps it COW-shared (one anon_vma\n"
"                   tree) (default 0 = none; with --memcg the main process\n"
"                   joins the cgroup first)\n"
"  --shared-pages N pages of it each worker reads per round before it\n"
"                   forks (a window moving round by round; the children\n"
"                   inherit the mappings and check 8 of them) (default 256)\n"
"  --shared-holders N  idle processes that map it from the start, so that\n"
"                   rmap walks of its tree visit N more vmas (default 0)\n"
"  --seed N         random seed (default 1)\n"
"Sizes take K/M/G suffixes.  Prints 'MANYLAB-RESULT {json}'; exit status\n"
"1 on any mismatch, failed or signaled child.\n");
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = bus_handler };
	pid_t wp[MAX_WORKERS], hp[MAX_WORKERS], hog_pid = 0, comp_pid = 0;
	int holders = 0;
	struct wstats tot = { 0 };
	int zram_on, memcg_on, bad = 0, first_fail = 0, first_signal = 0;
	double t0, t1;

	pagesz = sysconf(_SC_PAGESIZE);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGBUS, &sa, NULL);

	if (argc == 7 && !strcmp(argv[1], "--exec-child")) {
		snprintf(shared_path, sizeof(shared_path), "%s", argv[6]);
		return exec_child_main(atoi(argv[2]), strtoull(argv[3], 0, 10),
				       atoi(argv[4]), strtoull(argv[5], 0, 10));
	}

	manylab_getopt(argc, argv, "h", long_options, usage, take_option);
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	o.workers = manylab_worker_count(o.workers, MAX_WORKERS);
	if (o.fanout < 1 || o.fanout > 64 || o.depth < 1)
		die("--fanout must be 1..64 and --depth >= 1");
	if (o.shared_pages < 1)
		die("--shared-pages must be >= 1");
	o.shared = (o.shared + pagesz - 1) & ~(pagesz - 1);
	if (o.shared && (size_t)o.shared_pages > o.shared / pagesz)
		o.shared_pages = o.shared / pagesz;
	if (o.shared_holders < 0 || o.shared_holders > MAX_WORKERS)
		die("--shared-holders must be 0..%d", MAX_WORKERS);
	o.anon = (o.anon + pagesz - 1) & ~(pagesz - 1);
	if (o.anon < 4 * pagesz)
		o.anon = 4 * pagesz;
	o.file_size = (o.file_size + pagesz - 1) & ~(pagesz - 1);
	if (o.file_size < (size_t)o.workers * pagesz)
		o.file_size = (size_t)o.workers * pagesz;
	if (o.file_size < 4 * pagesz)
		o.file_size = 4 * pagesz;
	if (readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1) < 0)
		snprintf(self_exe, sizeof(self_exe), "%s", argv[0]);

	snprintf(shared_path, sizeof(shared_path), "%s/forkstress.shared",
		 o.dir);
	{
		int fd = open(shared_path, O_RDWR | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || ftruncate(fd, o.file_size))
			die("%s: %s", shared_path, strerror(errno));
		close(fd);
	}
	stats = mmap(NULL, sizeof(*stats) * o.workers + pagesz,
		     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (stats == MAP_FAILED)
		die("mmap stats");
	stop_flag = (volatile int *)((char *)stats + sizeof(*stats) * o.workers);
	zram_on = setup_zram();
	memcg_on = setup_memcg();
	if (o.shared) {
		/* charged to the cgroup, so that its reclaim walks these pages */
		if (memcg_on)
			cg_join();
		shared_anon = mmap(NULL, o.shared, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (shared_anon == MAP_FAILED)
			die("mmap shared: %s", strerror(errno));
		/* base pages: one rmap walk per page, not per THP */
		madvise(shared_anon, o.shared, MADV_NOHUGEPAGE);
		fill(shared_anon, o.shared, 4000, 1, 0);
	}

	/*
	 * Idle processes mapping the region from the start: their chains come
	 * first in its tree, so every rmap walk of a page that a later process
	 * maps visits them all (longer reader holds of the tree's lock).
	 */
	for (int h = 0; shared_anon && h < o.shared_holders; h++) {
		hp[h] = fork();
		if (hp[h] < 0)
			die("fork: %s", strerror(errno));
		if (hp[h] == 0) {
			while (!*stop_flag)
				usleep(100000);
			_exit(0);
		}
		holders++;
	}

	t0 = manylab_now();
	manylab_roi_begin(0);
	if (o.hog) {
		hog_pid = fork();
		if (hog_pid == 0)
			hog();
	}
	if (o.compact > 0) {
		comp_pid = fork();
		if (comp_pid == 0)
			compactor();
	}
	for (int w = 0; w < o.workers; w++) {
		wp[w] = fork();
		if (wp[w] < 0)
			die("fork: %s", strerror(errno));
		if (wp[w] == 0)
			worker(w);
	}
	for (int w = 0; w < o.workers; w++) {
		int s;

		if (waitpid(wp[w], &s, 0) != wp[w] || !WIFEXITED(s) ||
		    WEXITSTATUS(s)) {
			fprintf(stderr, "forkstress: worker %d died (status %#x)\n",
				w, s);
			bad = 1;
		}
	}
	*stop_flag = 1;
	for (int h = 0; h < holders; h++)
		waitpid(hp[h], NULL, 0);
	if (hog_pid > 0)
		waitpid(hog_pid, NULL, 0);
	if (comp_pid > 0)
		waitpid(comp_pid, NULL, 0);
	manylab_roi_end(0);
	t1 = manylab_now();

	for (int w = 0; w < o.workers; w++) {
		struct wstats *s = &stats[w];

		tot.rounds += s->rounds;
		tot.forks += s->forks;
		tot.execs += s->execs;
		tot.children_ok += s->children_ok;
		tot.children_failed += s->children_failed;
		tot.children_signaled += s->children_signaled;
		tot.parent_mismatch += s->parent_mismatch;
		tot.splits += s->splits;
		tot.remaps += s->remaps;
		tot.truncates += s->truncates;
		tot.sigbus_expected += s->sigbus_expected;
		tot.sigbus_seen += s->sigbus_seen;
		tot.syscall_errors += s->syscall_errors;
		if (!first_fail && s->first_fail)
			first_fail = s->first_fail;
		if (!first_signal && s->first_signal)
			first_signal = s->first_signal;
		if (!s->done)
			bad = 1;
	}
	unlink(shared_path);
	if (tot.children_failed || tot.children_signaled ||
	    tot.parent_mismatch || tot.sigbus_seen != tot.sigbus_expected ||
	    !tot.rounds)
		bad = 1;

	printf("MANYLAB-RESULT {\"workload\": \"forkstress\", "
	       "\"params\": {\"workers\": %d, \"duration_s\": %g, "
	       "\"anon_bytes\": %zu, \"file_bytes\": %zu, \"fanout\": %d, "
	       "\"depth\": %d, \"exec\": %s, \"hog_bytes\": %zu, "
	       "\"zram_bytes\": %zu, \"memcg_bytes\": %zu, \"compact_s\": %g, "
	       "\"shared_bytes\": %zu, \"shared_pages\": %d, "
	       "\"shared_holders\": %d, \"seed\": %u}, "
	       "\"swap_active\": %s, \"memcg_active\": %s, "
	       "\"elapsed_s\": %.3f, "
	       "\"counts\": {\"rounds\": %" PRIu64 ", \"forks\": %" PRIu64
	       ", \"execs\": %" PRIu64 ", \"children_ok\": %" PRIu64
	       ", \"children_failed\": %" PRIu64
	       ", \"children_signaled\": %" PRIu64
	       ", \"parent_mismatch\": %" PRIu64 ", \"splits\": %" PRIu64
	       ", \"remaps\": %" PRIu64 ", \"truncates\": %" PRIu64
	       ", \"sigbus_expected\": %" PRIu64 ", \"sigbus_seen\": %" PRIu64
	       ", \"syscall_errors\": %" PRIu64 "}, "
	       "\"first_failure\": \"%s\", \"first_signal\": %d, "
	       "\"verified\": %s}\n",
	       o.workers, o.duration, o.anon, o.file_size, o.fanout, o.depth,
	       o.exec ? "true" : "false", o.hog, o.zram, o.memcg, o.compact,
	       o.shared, o.shared_pages, o.shared_holders, o.seed,
	       zram_on ? "true" : "false", memcg_on ? "true" : "false",
	       t1 - t0, tot.rounds, tot.forks, tot.execs, tot.children_ok,
	       tot.children_failed, tot.children_signaled,
	       tot.parent_mismatch, tot.splits, tot.remaps, tot.truncates,
	       tot.sigbus_expected, tot.sigbus_seen, tot.syscall_errors,
	       first_fail ? fail_name(first_fail) : "none", first_signal,
	       bad ? "false" : "true");
	fflush(stdout);
	return bad;
}
