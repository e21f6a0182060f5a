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
	int status;

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
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	errno = ECHILD;
	return -1;
}

static void copy_main(int index, int ready_fd, int results_fd)
{
	struct crec rec = { .copy = index };
	sigset_t gun;
	int sig;
	double t0;
	char c = 'r';

	for (long i = 0; i < o.warmup; i++)
		if (one_op() && !rec.failed++)
			rec.fail_errno = errno;
	sigemptyset(&gun);
	sigaddset(&gun, SIGUSR1);
	if (write(ready_fd, &c, 1) != 1)
		_exit(2);
	close(ready_fd);
	if (sigwait(&gun, &sig))
		_exit(2);
	t0 = manylab_now();
	for (long i = 0; i < o.iterations; i++)
		if (one_op() && !rec.failed++)
			rec.fail_errno = errno;
	rec.elapsed = manylab_now() - t0;
	if (write(results_fd, &rec, sizeof(rec)) != (ssize_t)sizeof(rec))
		_exit(2);
	_exit(rec.failed ? 1 : 0);
}

/* ---- /proc/stat around the run: forks and CPU idle ticks ---- */

struct procstat {
	uint64_t processes;
	uint64_t busy, idle;
	int ok;
};

static void read_procstat(struct procstat *ps)
{
	static char buf[1 << 16];
	ssize_t got = 0, r;
	int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	char *p;

	memset(ps, 0, sizeof(*ps));
	if (fd < 0)
		return;
	while ((size_t)got < sizeof(buf) - 1 && (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += r;
	close(fd);
	buf[got] = '\0';
	if (!strncmp(buf, "cpu ", 4)) {
		uint64_t v[10] = { 0 };

		p = buf + 4;
		for (int i = 0; i < 10; i++)
			v[i] = strtoull(p, &p, 10);
		ps->idle = v[3] + v[4];
		ps->busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
		ps->ok = 1;
	}
	p = strstr(buf, "\nprocesses ");
	if (p)
		ps->processes = strtoull(p + 11, NULL, 10);
	else
		ps->ok = 0;
}

/* a whole decimal number in [min, max] for option flag; anything else exits 2 */
static long num_arg(const char *flag, const char *text, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < min || v > max) {
		fprintf(stderr, "%s: %s wants a whole number from %ld to %ld, not '%s'\n", PROG,
			flag, min, max, text);
		exit(2);
	}
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
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
	static const struct option lo[] = {
		{ "mode", 1, 0, 'M' }, { "parallel", 1, 0, 'P' }, { "iterations", 1, 0, 'n' },
		{ "warmup", 1, 0, 'W' }, { "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c, ready[2], results[2], bad = 0, own_group, ncpus, failed = 0, fail_errno = 0;
	struct procstat ps0, ps1;
	struct crec *recs;
	double *per_op, t0, t1, elapsed, sum = 0, med;
	size_t got = 0, want, nrec;
	sigset_t gun;
	pid_t *pids;
	uint64_t ops;

	if (argc == 2 && !strcmp(argv[1], "--hello")) {
		/* lmbench's hello: stdout is closed by the caller, the write fails */
		ssize_t r = write(1, "Hello world\n", 12);

		(void)r;
		return 0;
	}
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'M':
			if (!strcmp(optarg, "fork"))
				o.mode = M_FORK;
			else if (!strcmp(optarg, "exec"))
				o.mode = M_EXEC;
			else if (!strcmp(optarg, "shell"))
				o.mode = M_SHELL;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'P': o.parallel = (int)num_arg("--parallel", optarg, 1, MAX_PARALLEL); break;
		case 'n': o.iterations = num_arg("--iterations", optarg, 1, 1000000000L); break;
		case 'W': o.warmup = num_arg("--warmup", optarg, 0, 1000000000L); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
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
	own_group = setpgid(0, 0) == 0;
	sigemptyset(&gun);
	sigaddset(&gun, SIGUSR1);
	sigprocmask(SIG_BLOCK, &gun, NULL);
	fflush(stdout);
	for (int i = 0; i < o.parallel; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			fprintf(stderr, "lmproc: fork of copy %d: %s\n", i, strerror(errno));
			for (int j = 0; j < i; j++)
				kill(pids[j], SIGKILL);
			return 2;
		}
		if (pids[i] == 0) {
			close(ready[0]);
			close(results[0]);
			copy_main(i, ready[1], results[1]);
		}
	}
	close(ready[1]);
	close(results[1]);
	for (int i = 0; i < o.parallel; i++) {
		char r;

		if (read(ready[0], &r, 1) != 1) {
			fprintf(stderr, "lmproc: a copy did not start\n");
			bad = 1;
			break;
		}
	}
	close(ready[0]);

	read_procstat(&ps0);
	manylab_roi_begin(0);
	t0 = manylab_now();
	if (own_group)
		kill(0, SIGUSR1);	/* blocked here: stays pending in this process */
	else
		for (int i = 0; i < o.parallel; i++)
			kill(pids[i], SIGUSR1);
	while (got < want) {
		ssize_t r = read(results[0], (char *)recs + got, want - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	for (int i = 0; i < o.parallel; i++) {
		int s;

		if (waitpid(pids[i], &s, 0) != pids[i] || !WIFEXITED(s) || WEXITSTATUS(s))
			bad = 1;
	}
	t1 = manylab_now();
	manylab_roi_end(0);
	read_procstat(&ps1);

	nrec = got / sizeof(struct crec);
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
	elapsed = t1 - t0;
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
	if (ps0.ok && ps1.ok) {
		uint64_t busy = ps1.busy - ps0.busy, idle = ps1.idle - ps0.idle;

		printf("\"kernel_forks\": %" PRIu64 ", \"idle_share\": %.4f, ",
		       ps1.processes - ps0.processes,
		       busy + idle ? (double)idle / (double)(busy + idle) : 0.0);
	}
	printf("\"cpus\": %d, \"ok\": %s}\n", ncpus, bad ? "false" : "true");
	fflush(stdout);
	return bad;
}
