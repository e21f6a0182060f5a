// SPDX-License-Identifier: MIT
/*
 * forkbench: process-creation throughput (manylab, LDU measurements).
 *
 * N worker processes run the selected mode in parallel for a duration or
 * a number of iterations each:
 *   fork    lmbench lat_proc "fork" in parallel: fork, child _exit(0), wait;
 *   exec    lmbench lat_proc "exec" in parallel: fork, child execs this
 *           program in a tiny no-op mode, wait;
 *   aim7    an AIM7-multiuser-like job mix: each operation forks a child
 *           that runs one small task, chosen round-robin with weights:
 *           exec of a small compute task, anonymous memory (malloc and
 *           touch), read of a shared file through mmap, write+read of a
 *           private temporary file, a pipe ping-pong, brk growth; the
 *           parent keeps a few MiB of anonymous and file-mapped memory, so
 *           every fork copies anon_vma chains and i_mmap entries as a
 *           shell-driven AIM7 run does.
 * Rates are operations per second of guest time (CLOCK_MONOTONIC), over
 * the measured phase only; a short warm-up runs first.  The measured
 * phase is the ROI (region 0).  Prints one line "MANYLAB-RESULT {json}".
 *
 * Build: gcc -static -O2 -Iworkloads/include -o forkbench forkbench.c
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
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "manylab_procs.h"
#include "manylab_roi.h"
#include "manylab_util.h"

#define MIB (1024UL * 1024UL)
#define MAX_WORKERS 1024

enum mode { M_FORK, M_EXEC, M_AIM7 };
static const char *mode_name[] = { "fork", "exec", "aim7" };

enum task { T_EXEC, T_ANON, T_FILEMAP, T_FILEIO, T_PIPE, T_BRK, T_NR };
static const char *task_name[T_NR] = {
	"exec", "anon", "filemap", "fileio", "pipe", "brk",
};
/* AIM7-like weights of the task mix (per 16 operations) */
static const int task_weight[T_NR] = { 4, 4, 3, 2, 2, 1 };

struct wstats {
	uint64_t ops;
	uint64_t failed;
	uint64_t tasks[T_NR];
	double t_start, t_end;
	int ready;
} __attribute__((aligned(64)));

struct ctl {
	volatile int go;	/* 1: warm-up done, measure; 2: stop */
};

static struct {
	enum mode mode;
	int workers;
	double duration;
	uint64_t iterations;
	double warmup;
	size_t parent_anon;
	size_t file_size;
	const char *dir;
} o = {
	.mode = M_AIM7, .workers = 0, .duration = 10, .iterations = 0,
	.warmup = 1, .parent_anon = 4 * MIB, .file_size = 1 * MIB,
	.dir = "/tmp",
};

static char self_exe[4096];
static char shared_path[4096];
static size_t pagesz;

/* ---- the small tasks of the AIM7-like mix (run in the child) ---- */

static int task_compute(int n)
{
	volatile uint64_t x = 1;

	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return (int)(x & 1) * 0;
}

static int task_anon(void)
{
	size_t len = 256 * 1024;
	char *p = malloc(len);

	if (!p)
		return 1;
	for (size_t i = 0; i < len; i += pagesz)
		p[i] = (char)i;
	free(p);
	return 0;
}

static int task_filemap(void)
{
	int fd = open(shared_path, O_RDONLY);
	volatile char sum = 0;
	char *m;

	if (fd < 0)
		return 1;
	m = mmap(NULL, o.file_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < o.file_size; i += pagesz)
		sum += m[i];
	munmap(m, o.file_size);
	return 0;
}

static int task_fileio(int w)
{
	char path[4200], buf[4096];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/forkbench.%d.%d", o.dir, w, getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 1;
	memset(buf, 'a' + w % 26, sizeof(buf));
	for (int i = 0; i < 4 && !rc; i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			rc = 1;
	if (!rc && pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
		rc = 1;
	close(fd);
	unlink(path);
	return rc;
}

static int task_pipe(void)
{
	int a[2], b[2];
	char c = 'x';
	pid_t pid;

	if (pipe(a) || pipe(b))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (int i = 0; i < 8; i++)
			if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	for (int i = 0; i < 8; i++)
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			break;
	close(a[0]); close(a[1]); close(b[0]); close(b[1]);
	return waitpid(pid, NULL, 0) == pid ? 0 : 1;
}

static int task_brk(void)
{
	char *p = sbrk(0);

	if (sbrk(64 * 1024) == (void *)-1)
		return 1;
	for (size_t i = 0; i < 64 * 1024; i += pagesz)
		p[i] = 1;
	return sbrk(-64 * 1024) == (void *)-1;
}

static enum task pick_task(uint64_t i)
{
	int slot = (int)(i % 16);

	for (int t = 0; t < T_NR; t++) {
		if (slot < task_weight[t])
			return t;
		slot -= task_weight[t];
	}
	return T_ANON;
}

/* One operation; returns 0 on success. */
static int one_op(int w, uint64_t i, struct wstats *st)
{
	enum task t = pick_task(i + w);
	pid_t pid;
	int s;

	if (o.mode == M_AIM7)
		st->tasks[t]++;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		if (o.mode == M_FORK)
			_exit(0);
		if (o.mode == M_EXEC || t == T_EXEC) {
			execl(self_exe, "forkbench", "--task",
			      o.mode == M_EXEC ? "noop" : "compute",
			      (char *)NULL);
			_exit(127);
		}
		switch (t) {
		case T_ANON: _exit(task_anon());
		case T_FILEMAP: _exit(task_filemap());
		case T_FILEIO: _exit(task_fileio(w));
		case T_PIPE: _exit(task_pipe());
		case T_BRK: _exit(task_brk());
		default: _exit(0);
		}
	}
	if (waitpid(pid, &s, 0) != pid)
		return 1;
	return !(WIFEXITED(s) && WEXITSTATUS(s) == 0);
}

static void worker(int w, struct wstats *st, struct ctl *ctl)
{
	char *anon = NULL, *fmap = NULL;
	uint64_t i = 0;
	int fd;

	/* the parent-side memory every fork duplicates (AIM7 shell-like) */
	if (o.mode == M_AIM7 && o.parent_anon) {
		anon = mmap(NULL, o.parent_anon, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (anon != MAP_FAILED)
			for (size_t off = 0; off < o.parent_anon; off += pagesz)
				anon[off] = 1;
	}
	if (o.mode == M_AIM7) {
		fd = open(shared_path, O_RDONLY);
		if (fd >= 0) {
			fmap = mmap(NULL, o.file_size, PROT_READ, MAP_PRIVATE,
				    fd, 0);
			close(fd);
		}
	}
	/* warm-up until the controller says go */
	st->ready = 1;
	while (ctl->go == 0)
		one_op(w, i++, st);
	memset(st->tasks, 0, sizeof(st->tasks));
	st->ops = 0;
	st->failed = 0;
	st->t_start = manylab_now();
	for (i = 0; ctl->go == 1; i++) {
		if (o.iterations && i >= o.iterations)
			break;
		if (one_op(w, i, st))
			st->failed++;
		st->ops++;
	}
	st->t_end = manylab_now();
	(void)fmap;
	_exit(0);
}

/* ---- the command line ---- */

static void usage(FILE *f);

static const struct option long_options[] = {
	{ "mode", 1, 0, 'M' }, { "workers", 1, 0, 'w' },
	{ "duration", 1, 0, 't' }, { "iterations", 1, 0, 'n' },
	{ "warmup", 1, 0, 'W' }, { "parent-anon", 1, 0, 'a' },
	{ "file-size", 1, 0, 'f' }, { "dir", 1, 0, 'd' },
	{ "task", 1, 0, 'T' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
};

/* One option for manylab_getopt: 0 when taken. */
static int take_option(int option, char *arg)
{
	switch (option) {
	case 'M': o.mode = manylab_name_arg(arg, mode_name, 3, usage); return 0;
	case 'w': o.workers = atoi(arg); return 0;
	case 't': o.duration = atof(arg); return 0;
	case 'n': o.iterations = strtoull(arg, 0, 10); return 0;
	case 'W': o.warmup = atof(arg); return 0;
	case 'a': o.parent_anon = manylab_size_arg("forkbench", "--parent-anon", arg); return 0;
	case 'f': o.file_size = manylab_size_arg("forkbench", "--file-size", arg); return 0;
	case 'd': o.dir = arg; return 0;
	default: return -1;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: forkbench [options]\n"
"  --mode M        fork | exec | aim7 (default aim7)\n"
"  --workers N     parallel worker processes (default: one per online CPU)\n"
"  --duration S    measured seconds (default 10); ignored with --iterations\n"
"  --iterations N  operations per worker instead of a duration\n"
"  --warmup S      warm-up seconds before measuring (default 1)\n"
"  --parent-anon SIZE  anonymous memory each aim7 worker holds (default 4M)\n"
"  --file-size SIZE    shared file mapped by the aim7 tasks (default 1M)\n"
"  --dir DIR       work directory (default /tmp)\n"
"Prints 'MANYLAB-RESULT {json}' with ops and ops_per_s (guest time).\n");
}

int main(int argc, char **argv)
{
	pid_t wp[MAX_WORKERS];
	struct wstats *stats, tot = { 0 };
	struct ctl *ctl;
	double t0, t1, tmin = 0, tmax = 0;
	int bad = 0;

	pagesz = sysconf(_SC_PAGESIZE);
	if (argc == 3 && !strcmp(argv[1], "--task")) {
		/* exec'd child: a no-op (lmbench exec) or a small compute */
		if (!strcmp(argv[2], "compute"))
			return task_compute(20000);
		return 0;
	}
	manylab_getopt(argc, argv, "h", long_options, usage, take_option);
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	o.workers = manylab_worker_count(o.workers, MAX_WORKERS);
	o.file_size = (o.file_size + pagesz - 1) & ~(pagesz - 1);
	if (!o.file_size)
		o.file_size = pagesz;
	if (readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1) < 0)
		snprintf(self_exe, sizeof(self_exe), "%s", argv[0]);
	snprintf(shared_path, sizeof(shared_path), "%s/forkbench.shared",
		 o.dir);
	{
		int fd = open(shared_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		char *buf = calloc(1, o.file_size);

		if (fd < 0 || !buf ||
		    write(fd, buf, o.file_size) != (ssize_t)o.file_size) {
			fprintf(stderr, "forkbench: %s: %s\n", shared_path,
				strerror(errno));
			return 2;
		}
		close(fd);
		free(buf);
	}
	stats = mmap(NULL, sizeof(*stats) * o.workers + 4096,
		     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (stats == MAP_FAILED)
		return 2;
	ctl = (struct ctl *)(stats + o.workers);

	for (int w = 0; w < o.workers; w++) {
		wp[w] = fork();
		if (wp[w] < 0) {
			perror("forkbench: fork");
			return 2;
		}
		if (wp[w] == 0)
			worker(w, &stats[w], ctl);
	}
	for (int w = 0; w < o.workers; w++)
		while (!stats[w].ready)
			usleep(1000);
	if (o.warmup > 0)
		usleep((useconds_t)(o.warmup * 1e6));

	manylab_roi_begin(0);
	t0 = manylab_now();
	ctl->go = 1;
	if (!o.iterations) {
		double end = t0 + o.duration;

		while (manylab_now() < end)
			usleep(10000);
		ctl->go = 2;
	}
	if (manylab_reap(wp, o.workers))
		bad = 1;
	t1 = manylab_now();
	manylab_roi_end(0);

	for (int w = 0; w < o.workers; w++) {
		struct wstats *s = &stats[w];

		tot.ops += s->ops;
		tot.failed += s->failed;
		for (int t = 0; t < T_NR; t++)
			tot.tasks[t] += s->tasks[t];
		if (!w || s->t_start < tmin)
			tmin = s->t_start;
		if (!w || s->t_end > tmax)
			tmax = s->t_end;
	}
	unlink(shared_path);
	if (tot.failed)
		bad = 1;

	printf("MANYLAB-RESULT {\"workload\": \"forkbench\", "
	       "\"params\": {\"mode\": \"%s\", \"workers\": %d, "
	       "\"duration_s\": %g, \"iterations\": %" PRIu64 ", "
	       "\"warmup_s\": %g, \"parent_anon_bytes\": %zu, "
	       "\"file_bytes\": %zu}, "
	       "\"ops\": %" PRIu64 ", \"failed\": %" PRIu64 ", "
	       "\"elapsed_s\": %.6f, \"ops_per_s\": %.3f, "
	       "\"ops_per_s_per_worker\": %.3f",
	       mode_name[o.mode], o.workers, o.duration, o.iterations,
	       o.warmup, o.parent_anon, o.file_size, tot.ops, tot.failed,
	       tmax - tmin, tmax > tmin ? tot.ops / (tmax - tmin) : 0.0,
	       tmax > tmin ? tot.ops / (tmax - tmin) / o.workers : 0.0);
	if (o.mode == M_AIM7) {
		printf(", \"tasks\": {");
		for (int t = 0; t < T_NR; t++)
			printf("%s\"%s\": %" PRIu64, t ? ", " : "",
			       task_name[t], tot.tasks[t]);
		printf("}");
	}
	printf(", \"wall_s\": %.6f, \"ok\": %s}\n", t1 - t0,
	       bad ? "false" : "true");
	fflush(stdout);
	return bad;
}
