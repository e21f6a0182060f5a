// SPDX-License-Identifier: MIT
/*
 * ldustress: rmap walk-order stress (manylab, LDU issue L1).
 *
 * Stock rmap relies on walkers visiting a vma after the vma it was copied from (fork's child
 * after the parent, mremap's new vma after the old one): a walk that races with the copy of page
 * table entries then sees each entry either in the source or in the copy.  This program races
 * exactly those copies against the walks that depend on the order, in separate processes:
 *
 *   - F anon forkers, each owning a private anonymous region whose pages are COW-shared with
 *     M movers.  A forker mremaps its region back and forth between two places (no touching in
 *     between, so the previous move's insert may still be queued) and forks a child after each
 *     move; the child reads the region and exits, the forker re-reads it every round.
 *   - the movers migrate their (shared) copy of the region with move_pages(MPOL_MF_MOVE_ALL)
 *     between NUMA nodes 0 and 1 (or, with one node, trigger compaction), so migration's two
 *     walks (install, then remove migration entries) run over every mapping of the pages.
 *     A walk that misses a copy leaves a migration entry behind: touching it spins in the
 *     fault handler (caught by an alarm) and /proc/self/pagemap shows it as a swap entry.
 *   - one filer mapping a file MAP_PRIVATE afresh each round (dirtying one page so fork copies
 *     the entries), forking a child at once; a truncator process truncates the file to 0,
 *     holds it there, then re-extends and rewrites it.  A child that can still read a page of
 *     the file while the truncator holds it at size 0 (checked seqlock-style) kept an entry
 *     the truncate walk missed.
 *
 * At the end, with the movers stopped, every forker checks its region's pagemap for leftover
 * migration entries and its data once more.  Prints "MANYLAB-RESULT {json}" with counts and
 * exits 1 on any failure (the first is named in the JSON), 2 on bad arguments.
 *
 * Build: gcc -static -O2 -Iworkloads/include -o ldustress ldustress.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "manylab_roi.h"
#include "manylab_util.h"

#define PAGE 4096UL
#define MAX_PROCS 64
#define MPOL_MF_MOVE_ALL (1 << 2)
#define PM_SWAP (1ULL << 62)

/* Exit codes of the checking processes; the first nonzero one is reported. */
enum fail {
	F_PASS = 0,
	F_ANON_DATA = 11,	/* region content wrong in forker or child */
	F_HANG = 12,		/* a read spun in the fault handler until the alarm */
	F_LEFTOVER = 13,	/* a migration entry left in the page table at the end */
	F_FILE_STALE = 14,	/* a page readable while the file was truncated to 0 */
	F_SYSCALL = 15,		/* a system call failed unexpectedly */
};

static const char *const fail_names[] = {
	[F_ANON_DATA] = "anon_data", [F_HANG] = "hang", [F_LEFTOVER] = "leftover_migration_entry",
	[F_FILE_STALE] = "file_stale_mapping", [F_SYSCALL] = "syscall",
};

/* Shared between all processes (MAP_SHARED anonymous). */
struct shared {
	atomic_int stop;
	atomic_int first_fail;
	atomic_uint trunc_seq;	/* odd: the file is held at size 0 */
	atomic_ulong mremaps, forks, children_ok, pages_moved, move_calls, compactions;
	atomic_ulong trunc_cycles, file_forks, file_checks, file_inconclusive;
	atomic_ulong leftover_entries, hangs;
};

static struct shared *sh;
static const char *prog = "ldustress";
static const char *role = "main";	/* which process, for the hang report */
static const uint64_t *hang_region;	/* the region being read, for the hang report */
static size_t hang_bytes;
static unsigned int hang_s = 20;
static sigjmp_buf bus_jb;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static void note_fail(int code, const char *what)
{
	int none = 0;

	if (code < F_ANON_DATA || code > F_SYSCALL)
		code = F_SYSCALL;
	if (atomic_compare_exchange_strong(&sh->first_fail, &none, code))
		fprintf(stderr, "%s: FAIL %s: %s\n", prog, fail_names[code], what);
}

static size_t leftover_entries(const uint64_t *r, size_t bytes);

static void on_alarm(int sig)
{
	char what[160];

	(void)sig;
	atomic_fetch_add(&sh->hangs, 1);
	snprintf(what, sizeof(what), "a read by the %s did not complete in %u s "
		 "(%zu pages of the region are swap/migration entries now)", role, hang_s,
		 hang_region ? leftover_entries(hang_region, hang_bytes) : 0);
	note_fail(F_HANG, what);
	_exit(F_HANG);
}

static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_jb, 1);
}

static void handle(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		die("sigaction: %s", strerror(errno));
}

static inline uint64_t pattern(unsigned int owner, size_t word)
{
	return ((uint64_t)(owner + 1) << 48) ^ (word * 0x9e3779b97f4a7c15ULL);
}

/* Read every word of the region under an alarm; the number of wrong words. */
static size_t check_region(const volatile uint64_t *r, size_t bytes, unsigned int owner)
{
	size_t bad = 0;

	hang_region = (const uint64_t *)r;
	hang_bytes = bytes;
	alarm(hang_s);
	for (size_t w = 0; w < bytes / 8; w++)
		bad += r[w] != pattern(owner, w);
	alarm(0);
	return bad;
}

static int numa_nodes(void)
{
	return access("/sys/devices/system/node/node1", F_OK) == 0 ? 2 : 1;
}

static void mover(uint64_t *r, size_t bytes, unsigned int owner, unsigned int id)
{
	size_t n = bytes / PAGE;
	void **pages = calloc(n, sizeof(*pages));
	int *nodes = calloc(n, sizeof(*nodes)), *status = calloc(n, sizeof(*status));
	int two = numa_nodes() == 2, target = (int)(id & 1);

	role = "mover";
	if (!pages || !nodes || !status)
		die("out of memory");
	for (size_t i = 0; i < n; i++)
		pages[i] = (char *)r + i * PAGE;
	while (!atomic_load(&sh->stop)) {
		if (two) {
			target ^= 1;
			for (size_t i = 0; i < n; i++)
				nodes[i] = target;
			if (syscall(SYS_move_pages, 0, n, pages, nodes, status,
				    MPOL_MF_MOVE_ALL) < 0 &&
			    (errno == ENOSYS || errno == EINVAL || errno == EPERM)) {
				note_fail(F_SYSCALL, "move_pages");
				_exit(F_SYSCALL);
			}
			atomic_fetch_add(&sh->move_calls, 1);
			for (size_t i = 0; i < n; i++)
				if (status[i] == target)
					atomic_fetch_add(&sh->pages_moved, 1);
		} else {
			int fd = open("/proc/sys/vm/compact_memory", O_WRONLY);

			if (fd < 0 || write(fd, "1", 1) != 1) {
				note_fail(F_SYSCALL, "/proc/sys/vm/compact_memory");
				_exit(F_SYSCALL);
			}
			close(fd);
			atomic_fetch_add(&sh->compactions, 1);
		}
		if (check_region(r, bytes, owner)) {
			note_fail(F_ANON_DATA, "mover's copy of the region");
			_exit(F_ANON_DATA);
		}
	}
	_exit(F_PASS);
}

/* Present pages of the region whose pagemap entry is a swap/migration entry. */
static size_t leftover_entries(const uint64_t *r, size_t bytes)
{
	size_t n = bytes / PAGE, found = 0;
	uint64_t entry;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		die("/proc/self/pagemap: %s", strerror(errno));
	for (size_t i = 0; i < n; i++) {
		off_t at = (off_t)(((uintptr_t)r / PAGE + i) * sizeof(entry));

		if (pread(fd, &entry, sizeof(entry), at) != sizeof(entry))
			die("pagemap read: %s", strerror(errno));
		found += (entry & PM_SWAP) != 0;
	}
	close(fd);
	return found;
}

static int wait_child(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return F_SYSCALL;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return F_SYSCALL;
}

static void anon_forker(unsigned int owner, size_t bytes, unsigned int movers, unsigned int every)
{
	char *area = mmap(NULL, 3 * bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *places[2], *r;
	pid_t pids[MAX_PROCS];
	unsigned long round = 0;
	int side = 0;

	role = "forker";
	if (area == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	places[0] = (uint64_t *)area;
	places[1] = (uint64_t *)(area + 2 * bytes);	/* a PROT_NONE gap keeps them apart */
	r = mmap(places[0], bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (r == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	madvise(r, bytes, MADV_NOHUGEPAGE);
	for (size_t w = 0; w < bytes / 8; w++)
		r[w] = pattern(owner, w);
	for (unsigned int m = 0; m < movers; m++) {
		pids[m] = fork();
		if (pids[m] < 0)
			die("fork: %s", strerror(errno));
		if (pids[m] == 0)
			mover(r, bytes, owner, m);
	}
	while (!atomic_load(&sh->stop) && !atomic_load(&sh->first_fail)) {
		side ^= 1;
		r = mremap(r, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, places[side]);
		if (r == MAP_FAILED) {
			note_fail(F_SYSCALL, "mremap");
			break;
		}
		atomic_fetch_add(&sh->mremaps, 1);
		if (++round % every)
			continue;
		pid_t child = fork();

		if (child < 0) {
			note_fail(F_SYSCALL, "fork");
			break;
		}
		if (child == 0) {
			role = "forker's child";
			_exit(check_region(r, bytes, owner) ? F_ANON_DATA : F_PASS);
		}
		atomic_fetch_add(&sh->forks, 1);
		int code = wait_child(child);

		if (code) {
			note_fail(code, "anon child");
			break;
		}
		atomic_fetch_add(&sh->children_ok, 1);
		if (check_region(r, bytes, owner)) {
			note_fail(F_ANON_DATA, "forker's region");
			break;
		}
	}
	atomic_store(&sh->stop, 1);
	for (unsigned int m = 0; m < movers; m++) {
		int code = wait_child(pids[m]);

		if (code)
			note_fail(code, "mover");
	}
	size_t left = leftover_entries(r, bytes);

	if (left) {
		atomic_fetch_add(&sh->leftover_entries, left);
		note_fail(F_LEFTOVER, "pagemap shows migration entries after the movers stopped");
		_exit(F_LEFTOVER);
	}
	_exit(check_region(r, bytes, owner) ? F_ANON_DATA : F_PASS);
}

static void fill_file(int fd, size_t bytes, unsigned int gen)
{
	uint64_t buf[PAGE / 8];

	for (size_t off = 0; off < bytes; off += PAGE) {
		for (size_t w = 0; w < PAGE / 8; w++)
			buf[w] = pattern(1000 + gen, (off / 8) + w);
		if (pwrite(fd, buf, PAGE, (off_t)off) != (ssize_t)PAGE)
			die("pwrite: %s", strerror(errno));
	}
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static void truncator(int fd, size_t bytes, long hold_us)
{
	unsigned int gen = 0;

	while (!atomic_load(&sh->stop)) {
		if (ftruncate(fd, 0)) {
			note_fail(F_SYSCALL, "ftruncate");
			_exit(F_SYSCALL);
		}
		atomic_fetch_add(&sh->trunc_seq, 1);	/* odd: held at size 0 */
		sleep_us(hold_us);
		atomic_fetch_add(&sh->trunc_seq, 1);
		if (ftruncate(fd, (off_t)bytes)) {
			note_fail(F_SYSCALL, "ftruncate");
			_exit(F_SYSCALL);
		}
		fill_file(fd, bytes, ++gen);
		atomic_fetch_add(&sh->trunc_cycles, 1);
	}
	_exit(F_PASS);
}

/*
 * Child of the filer: one conclusive check while the file is held at size 0.
 * It reads the first page (the anon COW copy) and the last (page cache): each
 * SIGBUS costs a signal round trip, so reading every page would outlast the hold.
 */
static int file_child(volatile char *map, size_t bytes)
{
	const size_t probes[] = { 0, bytes - PAGE };

	role = "file child";
	hang_region = NULL;
	while (!atomic_load(&sh->stop)) {
		unsigned int seq = atomic_load(&sh->trunc_seq);
		volatile size_t readable = 0, i;

		if (!(seq & 1)) {
			sleep_us(1000);
			continue;
		}
		alarm(hang_s);
		for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
			if (sigsetjmp(bus_jb, 1) == 0) {
				(void)map[probes[i]];
				readable++;
			}
		}
		alarm(0);
		if (atomic_load(&sh->trunc_seq) != seq) {
			atomic_fetch_add(&sh->file_inconclusive, 1);
			continue;
		}
		atomic_fetch_add(&sh->file_checks, 1);
		return readable ? F_FILE_STALE : F_PASS;
	}
	return F_PASS;
}

/* Reap finished file children (all of them with @block); 0 or the first failure. */
static int reap_file_children(pid_t *kids, unsigned int *nkids, int block)
{
	int first = 0;

	for (unsigned int i = 0; i < *nkids;) {
		int st;
		pid_t got = waitpid(kids[i], &st, block ? 0 : WNOHANG);

		if (got == 0 || (got < 0 && errno == EINTR)) {
			i++;
			continue;
		}
		int code = got < 0 || !WIFEXITED(st) ? F_SYSCALL : WEXITSTATUS(st);

		if (code && !first)
			first = code;
		kids[i] = kids[--*nkids];
	}
	return first;
}

/* Forks a child per fresh mapping without waiting: up to MAX_FILE_KIDS check at once. */
#define MAX_FILE_KIDS 8

static void filer(int fd, size_t bytes)
{
	pid_t kids[MAX_FILE_KIDS];
	unsigned int nkids = 0;
	int code = 0;

	while (!atomic_load(&sh->stop) && !atomic_load(&sh->first_fail) && !code) {
		volatile char *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);

		if (map == MAP_FAILED) {
			note_fail(F_SYSCALL, "mmap of the file");
			_exit(F_SYSCALL);
		}
		if (sigsetjmp(bus_jb, 1) == 0) {
			map[0] = 1;	/* an anon COW page: fork copies this vma's entries */
			for (size_t off = PAGE; off < bytes; off += PAGE)
				(void)map[off];
			pid_t child = fork();

			if (child < 0) {
				note_fail(F_SYSCALL, "fork");
				_exit(F_SYSCALL);
			}
			if (child == 0)
				_exit(file_child(map, bytes));
			kids[nkids++] = child;
			atomic_fetch_add(&sh->file_forks, 1);
		}
		munmap((void *)map, bytes);
		code = reap_file_children(kids, &nkids, nkids == MAX_FILE_KIDS);
	}
	atomic_store(&sh->stop, 1);
	if (!code)
		code = reap_file_children(kids, &nkids, 1);
	if (code)
		note_fail(code, "file child");
	_exit(code);
}

static void usage(void)
{
	fprintf(stderr,
"usage: %s [--dir DIR] [--duration S] [--forkers N] [--movers N] [--region SIZE]\n"
"          [--fork-every N] [--filers N] [--file-size SIZE] [--hold-us US] [--hang S]\n"
"          [--min-file-checks N] [--min-forks N] [--min-pages-moved N]\n"
"Races fork and mremap page-table copies against migration and truncation walks and checks\n"
"that no copy was missed.  Prints 'MANYLAB-RESULT {json}'; exit status 1 on a failure.\n"
"The --min-* options run past --duration until that many conclusive truncation checks,\n"
"anonymous forks and migrated pages were made (at most ten times --duration), for hosts\n"
"too loaded to reach them in time.\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "duration", required_argument, NULL, 't' },
		{ "forkers", required_argument, NULL, 'f' },
		{ "movers", required_argument, NULL, 'm' },
		{ "region", required_argument, NULL, 'r' },
		{ "fork-every", required_argument, NULL, 'e' },
		{ "filers", required_argument, NULL, 'F' },
		{ "file-size", required_argument, NULL, 's' },
		{ "hold-us", required_argument, NULL, 'H' },
		{ "hang", required_argument, NULL, 'a' },
		{ "min-file-checks", required_argument, NULL, 'c' },
		{ "min-forks", required_argument, NULL, 'k' },
		{ "min-pages-moved", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = ".";
	unsigned int duration = 20, forkers = 2, movers = 2, every = 2, filers = 1;
	unsigned long min_file_checks = 0, min_forks = 0, min_pages_moved = 0;
	size_t region = 64 * 1024, file_size = 64 * 1024;
	long hold_us = 100000;
	pid_t pids[2 * MAX_PROCS + 1];
	unsigned int nprocs = 0;
	char path[4096];
	int opt, fd = -1;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 't': duration = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'f': forkers = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'm': movers = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'r': region = manylab_size_arg(prog, "--region", optarg); break;
		case 'e': every = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'F': filers = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 's': file_size = manylab_size_arg(prog, "--file-size", optarg); break;
		case 'H': hold_us = strtol(optarg, NULL, 10); break;
		case 'a': hang_s = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'c': min_file_checks = strtoul(optarg, NULL, 10); break;
		case 'k': min_forks = strtoul(optarg, NULL, 10); break;
		case 'p': min_pages_moved = strtoul(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (optind != argc || !duration || forkers > MAX_PROCS || movers > MAX_PROCS ||
	    filers > 1 || !every || !hang_s || hold_us < 0 || region < PAGE || region % PAGE ||
	    file_size < PAGE || file_size % PAGE || (min_file_checks && !filers) ||
	    (min_forks && !forkers) || (min_pages_moved && !(forkers && movers)))
		usage();
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	handle(SIGALRM, on_alarm);
	handle(SIGBUS, on_bus);
	if (filers) {
		snprintf(path, sizeof(path), "%s/ldustress.file", dir);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			die("%s: %s", path, strerror(errno));
		if (ftruncate(fd, (off_t)file_size))
			die("ftruncate: %s", strerror(errno));
		fill_file(fd, file_size, 0);
	}
	double start = manylab_now();

	manylab_roi_begin(0);
	for (unsigned int i = 0; i < forkers + 2 * filers; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			if (i < forkers)
				anon_forker(i, region, movers, every);
			else if (i == forkers)
				truncator(fd, file_size, hold_us);
			else
				filer(fd, file_size);
		}
		pids[nprocs++] = pid;
	}
	while (!atomic_load(&sh->first_fail)) {
		double ran = manylab_now() - start;

		if (ran >= 10.0 * duration ||
		    (ran >= duration && atomic_load(&sh->file_checks) >= min_file_checks &&
		     atomic_load(&sh->forks) >= min_forks &&
		     atomic_load(&sh->pages_moved) >= min_pages_moved))
			break;
		sleep_us(100000);
	}
	atomic_store(&sh->stop, 1);
	for (unsigned int i = 0; i < nprocs; i++) {
		int code = wait_child(pids[i]);

		if (code)
			note_fail(code, "worker process");
	}
	manylab_roi_end(0);
	if (fd >= 0)
		unlink(path);
	int fail = atomic_load(&sh->first_fail);

	printf("MANYLAB-RESULT {\"workload\": \"ldustress\", \"verified\": %s, "
	       "\"failure\": \"%s\", \"seconds\": %.3f, \"numa_nodes\": %d, "
	       "\"forkers\": %u, \"movers\": %u, \"region\": %zu, "
	       "\"mremaps\": %lu, \"forks\": %lu, \"children_ok\": %lu, "
	       "\"move_calls\": %lu, \"pages_moved\": %lu, \"compactions\": %lu, "
	       "\"trunc_cycles\": %lu, \"file_forks\": %lu, \"file_checks\": %lu, "
	       "\"file_inconclusive\": %lu, \"leftover_entries\": %lu, \"hangs\": %lu}\n",
	       fail ? "false" : "true", fail ? fail_names[fail] : "", manylab_now() - start,
	       numa_nodes(), forkers, movers, region,
	       atomic_load(&sh->mremaps), atomic_load(&sh->forks), atomic_load(&sh->children_ok),
	       atomic_load(&sh->move_calls), atomic_load(&sh->pages_moved),
	       atomic_load(&sh->compactions), atomic_load(&sh->trunc_cycles),
	       atomic_load(&sh->file_forks), atomic_load(&sh->file_checks),
	       atomic_load(&sh->file_inconclusive), atomic_load(&sh->leftover_entries),
	       atomic_load(&sh->hangs));
	return fail ? 1 : 0;
}
