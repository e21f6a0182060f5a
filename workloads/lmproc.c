// SPDX-License-Identifier: MIT
/*
 * lmproc: lmbench-like process creation (manylab, LDU measurements, issue #31).
 *
 * lmbench's lat_proc run with parallelism P (-P): P copies, each timing its own
 * loop of one of
 *   fork   fork; the child exits at once; the parent waits         ("fork+exit")
 *   exec   fork; the child closes stdout and execs a tiny program  ("fork+execve")
 *   shell  fork; the child closes stdout and runs /bin/sh -c <that program>
 *                                                                  ("fork+/bin/sh -c")
 * The tiny program ("hello") is this binary with the single argument --hello: it
 * writes a line to its (closed) stdout and exits, as lmbench's hello does. lmbench
 * uses a separate hello (dynamic, or static as hello-s); this image holds static
 * programs only.
 *
 * The copies are forked first and each runs --warmup untimed iterations; then all
 * start together on one signal to the process group, run --iterations timed
 * iterations and send their time back through a pipe. The timed part is ROI region
 * 0, from the signal to the last copy's exit. Reported:
 *   us_per_op   the median over copies of (copy's time / iterations), in
 *               microseconds: lmbench's figure with -P (median of the copies'
 *               results);
 *   ops_per_s   all copies' iterations / the ROI's elapsed time (guest time);
 * and /proc/stat's count of forks (kernel_forks) and idle share over the ROI.
 * Prints one line "MANYLAB-RESULT {json}"; exit status 1 on any failed iteration.
 *
 * Build: gcc -static -O2 -Iworkloads/include -o lmproc lmproc.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "manylab_procs.h"
#include "manylab_roi.h"
#include "manylab_util.h"

#define MAX_PARALLEL 65536
#define PROG "lmproc"

enum mode { M_FORK, M_EXEC, M_SHELL };
static const char *mode_name[] = { "fork", "exec", "shell" };
static const char *test_name[] = {
	"Process fork+exit", "Process fork+execve", "Process fork+/bin/sh -c",
};

struct crec {
	int32_t copy;
	int32_t failed;
	int32_t fail_errno;
	int32_t pad;
	double elapsed;
};

static struct {
	enum mode mode;
	int parallel;
	long iterations;
	long warmup;
} o = { .mode = M_FORK, .parallel = -1, .iterations = 100, .warmup = 0 };

static char self_exe[4096];
static char shell_cmd[4200];

/* one iteration; 0 on success */
static int one_op(void)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (o.mode == M_FORK)
			_exit(0);
		close(1);
		if (o.mode == M_EXEC)
			execl(self_exe, "lmproc", "--hello", (char *)NULL);
		else
			execl("/bin/sh", "sh", "-c", shell_cmd, (char *)NULL);
		_exit(127);
	}
	return manylab_wait_ok(pid);
}

static void copy_main(int index, int ready_fd, int results_fd)
{
	struct crec rec = { .copy = index };
	double t0;

	for (long i = 0; i < o.warmup; i++)
		if (one_op() && !rec.failed++)
			rec.fail_errno = errno;
	manylab_gun_wait(ready_fd);
	t0 = manylab_now();
	for (long i = 0; i < o.iterations; i++)
		if (one_op() && !rec.failed++)
			rec.fail_errno = errno;
	rec.elapsed = manylab_now() - t0;
	if (write(results_fd, &rec, sizeof(rec)) != (ssize_t)sizeof(rec))
		_exit(2);
	_exit(rec.failed ? 1 : 0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* ---- the command line ---- */

static void usage(FILE *f);

static const struct option long_options[] = {
	{ "mode", 1, 0, 'M' }, { "parallel", 1, 0, 'P' }, { "iterations", 1, 0, 'n' },
	{ "warmup", 1, 0, 'W' }, { "help", 0, 0, 'h' },
	{ 0, 0, 0, 0 },
};

/* One option for manylab_getopt: 0 when taken. */
static int take_option(int option, char *arg)
{
	switch (option) {
	case 'M': o.mode = manylab_name_arg(arg, mode_name, 3, usage); return 0;
	case 'P': o.parallel = (int)manylab_num_arg(PROG, "--parallel", arg, 1, MAX_PARALLEL); return 0;
	case 'n': o.iterations = manylab_num_arg(PROG, "--iterations", arg, 1, 1000000000L); return 0;
	case 'W': o.warmup = manylab_num_arg(PROG, "--warmup", arg, 0, 1000000000L); return 0;
	default: return -1;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: lmproc [options]\n"
"  --mode M        fork | exec | shell (default fork)\n"
"  --parallel N    copies running at once, lmbench's -P (default: online CPUs)\n"
"  --iterations N  timed iterations per copy (default 100)\n"
"  --warmup N      untimed iterations per copy before the start (default 0)\n"
"Prints 'MANYLAB-RESULT {json}' with us_per_op (median over copies) and\n"
"ops_per_s (all copies, guest time).\n");
}

int main(int argc, char **argv)
{
	int ready[2], results[2], bad = 0, own_group, ncpus, failed = 0, fail_errno = 0;
	struct manylab_gun_run run;
	struct crec *recs;
	double *per_op, elapsed, sum = 0, med;
	size_t want, nrec;
	pid_t *pids;
	uint64_t ops;

	if (argc == 2 && !strcmp(argv[1], "--hello")) {
		/* lmbench's hello: stdout is closed by the caller, the write fails */
		ssize_t r = write(1, "Hello world\n", 12);

		(void)r;
		return 0;
	}
	manylab_getopt(argc, argv, "h", long_options, usage, take_option);
	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (o.parallel == -1)
		o.parallel = ncpus;
	if (optind != argc || o.parallel < 1 || o.parallel > MAX_PARALLEL || o.iterations < 1 ||
	    o.warmup < 0) {
		usage(stderr);
		return 2;
	}
	if (readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1) < 0) {
		fprintf(stderr, "lmproc: /proc/self/exe: %s\n", strerror(errno));
		return 2;
	}
	snprintf(shell_cmd, sizeof(shell_cmd), "%s --hello", self_exe);

	pids = calloc((size_t)o.parallel, sizeof(pid_t));
	want = sizeof(struct crec) * (size_t)o.parallel;
	recs = malloc(want);
	per_op = malloc(sizeof(double) * (size_t)o.parallel);
	if (!pids || !recs || !per_op || pipe2(ready, O_CLOEXEC) || pipe2(results, O_CLOEXEC)) {
		fprintf(stderr, "lmproc: %s\n", strerror(errno));
		return 2;
	}
	own_group = manylab_gun_arm();
	if (manylab_gun_fork("lmproc", "copy", pids, o.parallel, ready, results, copy_main))
		return 2;
	manylab_gun_run("lmproc", "copy", own_group, pids, o.parallel, ready[0], results[0], recs,
			want, &run);
	if (run.not_ready || run.reaped_bad)
		bad = 1;

	nrec = run.got / sizeof(struct crec);
	for (size_t i = 0; i < nrec; i++) {
		per_op[i] = recs[i].elapsed / (double)o.iterations * 1e6;
		sum += per_op[i];
		if (recs[i].failed && !failed)
			fail_errno = recs[i].fail_errno;
		failed += recs[i].failed;
	}
	qsort(per_op, nrec, sizeof(double), cmp_double);
	med = !nrec ? 0 : nrec % 2 ? per_op[nrec / 2] : (per_op[nrec / 2 - 1] + per_op[nrec / 2]) / 2;
	if (nrec != (size_t)o.parallel || failed)
		bad = 1;
	if (failed)
		fprintf(stderr, "lmproc: %d failed iterations; first: %s\n", failed,
			strerror(fail_errno));
	elapsed = run.t1 - run.t0;
	ops = (uint64_t)nrec * (uint64_t)o.iterations;

	printf("MANYLAB-RESULT {\"workload\": \"lmproc\", "
	       "\"params\": {\"mode\": \"%s\", \"parallel\": %d, \"iterations\": %ld, "
	       "\"warmup\": %ld}, \"test\": \"%s\", "
	       "\"copies\": %zu, \"ops\": %" PRIu64 ", \"failed\": %d, "
	       "\"elapsed_s\": %.6f, \"ops_per_s\": %.3f, \"us_per_op\": %.4f, "
	       "\"us_per_op_mean\": %.4f, \"us_per_op_min\": %.4f, \"us_per_op_max\": %.4f, ",
	       mode_name[o.mode], o.parallel, o.iterations, o.warmup, test_name[o.mode],
	       nrec, ops, failed, elapsed, elapsed > 0 ? (double)ops / elapsed : 0.0, med,
	       nrec ? sum / (double)nrec : 0.0, nrec ? per_op[0] : 0.0,
	       nrec ? per_op[nrec - 1] : 0.0);
	manylab_print_procstat(&run.ps0, &run.ps1);
	printf("\"cpus\": %d, \"ok\": %s}\n", ncpus, bad ? "false" : "true");
	fflush(stdout);
	return bad;
}
