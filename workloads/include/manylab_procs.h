/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the lab's multi-process workloads (aim7, lmproc, forkbench, forkstress, mobileapps,
 * pwriter): how many workers, the whole-number option rule, waiting for children, the start
 * "gun", futex gates in shared memory and /proc/stat's forks and idle ticks around a run (sizes
 * and the clock: manylab_util.h).
 *
 * The gun, as AIM7 and lmbench start their copies together: the parent blocks SIGUSR1 and
 * becomes its own process group leader (manylab_gun_arm), forks the children
 * (manylab_gun_fork), waits for one byte from each on a ready pipe (manylab_gun_ready) while
 * each child sends it and waits for SIGUSR1 (manylab_gun_wait), then fires: one signal to the
 * group, or one per child when it could not lead a group (manylab_gun_fire). manylab_gun_run
 * does the last two steps and times the run, as ROI region 0, to the last child's exit.
 */
#ifndef MANYLAB_PROCS_H
#define MANYLAB_PROCS_H

#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "manylab_kstats.h"
#include "manylab_roi.h"
#include "manylab_util.h"

/* Worker processes: the number asked for, or one per online CPU when that is not positive;
 * at most max. */
static inline int manylab_worker_count(int asked, int max)
{
	if (asked <= 0)
		asked = sysconf(_SC_NPROCESSORS_ONLN);
	return asked > max ? max : asked;
}

/* A whole decimal number in [min, max] for option flag; anything else exits 2. */
static inline long manylab_num_arg(const char *prog, const char *flag, const char *text,
				   long min, long max)
{
	long v;

	if (manylab_parse_whole(text, min, max, &v)) {
		fprintf(stderr, "%s: %s wants a whole number from %ld to %ld, not '%s'\n", prog,
			flag, min, max, text);
		exit(2);
	}
	return v;
}

/* Waits for child pid (through signals); 0 when it exited with status 0, else -1 (errno
 * ECHILD when it did exit, but not with 0). */
static inline int manylab_wait_ok(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	errno = ECHILD;
	return -1;
}

/* Waits for each of the n children; how many did not exit with status 0. */
static inline int manylab_reap(const pid_t *pids, int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		int s;

		if (waitpid(pids[i], &s, 0) != pids[i] || !WIFEXITED(s) || WEXITSTATUS(s))
			bad++;
	}
	return bad;
}

/* ---- the gun ---- */

/* The parent, before it forks: 1 when it leads its own process group. */
static inline int manylab_gun_arm(void)
{
	int own_group = setpgid(0, 0) == 0;
	sigset_t gun;

	sigemptyset(&gun);
	sigaddset(&gun, SIGUSR1);
	sigprocmask(SIG_BLOCK, &gun, NULL);
	fflush(stdout);
	return own_group;
}

/* A child: ready (one byte on ready_fd, then closed), then the signal; exits 2 on a failure. */
static inline void manylab_gun_wait(int ready_fd)
{
	sigset_t gun;
	int sig;
	char c = 'r';

	sigemptyset(&gun);
	sigaddset(&gun, SIGUSR1);
	if (write(ready_fd, &c, 1) != 1)
		_exit(2);
	close(ready_fd);
	if (sigwait(&gun, &sig))
		_exit(2);
}

/*
 * The parent: forks n children, child i running child(i, ready[1], results[1]) (it does not
 * return), and closes its own copies of those write ends. -1 when a fork failed: named on
 * stderr ("prog: fork of WHAT i: error") and the children forked so far killed.
 */
static inline int manylab_gun_fork(const char *prog, const char *what, pid_t *pids, int n,
				   const int ready[2], const int results[2],
				   void (*child)(int index, int ready_fd, int results_fd))
{
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			fprintf(stderr, "%s: fork of %s %d: %s\n", prog, what, i, strerror(errno));
			for (int j = 0; j < i; j++)
				kill(pids[j], SIGKILL);
			return -1;
		}
		if (pids[i] == 0) {
			close(ready[0]);
			close(results[0]);
			child(i, ready[1], results[1]);
		}
	}
	close(ready[1]);
	close(results[1]);
	return 0;
}

/* The parent: one byte from each of n children on ready_fd, then closed; -1 when one is
 * missing. */
static inline int manylab_gun_ready(int ready_fd, int n)
{
	int rc = 0;

	for (int i = 0; i < n; i++) {
		char r;

		if (read(ready_fd, &r, 1) != 1) {
			rc = -1;
			break;
		}
	}
	close(ready_fd);
	return rc;
}

static inline void manylab_gun_fire(int own_group, const pid_t *pids, int n)
{
	if (own_group)
		kill(0, SIGUSR1);	/* the parent has it blocked: it stays pending here */
	else
		for (int i = 0; i < n; i++)
			kill(pids[i], SIGUSR1);
}

/* ---- futex gates: ints in shared memory (MAP_SHARED) that processes sleep on ---- */

static inline long manylab_futex(int *word, int op, int value)
{
	return syscall(SYS_futex, word, op, value, NULL, NULL, 0);
}

/* Sleeps until *word is no longer value. */
static inline void manylab_futex_wait_while(int *word, int value)
{
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == value)
		manylab_futex(word, FUTEX_WAIT, value);
}

/* Sets *word and wakes every sleeper on it. */
static inline void manylab_futex_set(int *word, int value)
{
	__atomic_store_n(word, value, __ATOMIC_RELEASE);
	manylab_futex(word, FUTEX_WAKE, INT32_MAX);
}

/* Counts one more process done; the one that makes it target wakes the waiter. */
static inline void manylab_count_done(int *counter, int target)
{
	if (__atomic_add_fetch(counter, 1, __ATOMIC_ACQ_REL) == target)
		manylab_futex(counter, FUTEX_WAKE, 1);
}

/* The waiter: sleeps until target processes counted themselves done. */
static inline void manylab_wait_count(int *counter, int target)
{
	int seen;

	while ((seen = __atomic_load_n(counter, __ATOMIC_ACQUIRE)) < target)
		manylab_futex(counter, FUTEX_WAIT, seen);
}

/* ---- /proc/stat around the run: forks and CPU idle ticks, read with plain system calls ---- */

struct manylab_procstat {
	uint64_t processes;
	uint64_t busy, idle;	/* aggregate "cpu" line: idle + iowait vs the rest */
	int ok;
};

static inline void manylab_read_procstat(struct manylab_procstat *ps)
{
	static char buf[1 << 16];
	char *p;

	memset(ps, 0, sizeof(*ps));
	if (manylab_kstats_read("/proc/stat", buf, sizeof(buf)) < 0)
		return;
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

/* The run's "kernel_forks" and "idle_share" JSON members (each followed by ", "), when both
 * readings worked. */
static inline void manylab_print_procstat(const struct manylab_procstat *ps0,
					  const struct manylab_procstat *ps1)
{
	if (ps0->ok && ps1->ok) {
		uint64_t busy = ps1->busy - ps0->busy, idle = ps1->idle - ps0->idle;

		printf("\"kernel_forks\": %" PRIu64 ", \"idle_share\": %.4f, ",
		       ps1->processes - ps0->processes,
		       busy + idle ? (double)idle / (double)(busy + idle) : 0.0);
	}
}

/* ---- the run: from the gun to the last child's exit ---- */

/* What manylab_gun_run saw. */
struct manylab_gun_run {
	double t0, t1;			/* the gun, the last child reaped (guest time) */
	size_t got;			/* result bytes read */
	int not_ready;			/* a child did not report ready */
	int reaped_bad;			/* children that did not exit with status 0 */
	struct manylab_procstat ps0, ps1;	/* /proc/stat before and after */
};

/*
 * The parent, after manylab_gun_fork: waits for the n children to be ready (when one is not,
 * "prog: a WHAT did not start" on stderr), then, as ROI region 0 between two readings of
 * /proc/stat, fires, reads up to want bytes of results from results_fd and reaps the children.
 */
static inline void manylab_gun_run(const char *prog, const char *what, int own_group,
				   const pid_t *pids, int n, int ready_fd, int results_fd,
				   void *results, size_t want, struct manylab_gun_run *run)
{
	run->not_ready = manylab_gun_ready(ready_fd, n) != 0;
	if (run->not_ready)
		fprintf(stderr, "%s: a %s did not start\n", prog, what);

	manylab_read_procstat(&run->ps0);
	manylab_roi_begin(0);
	run->t0 = manylab_now();
	manylab_gun_fire(own_group, pids, n);
	run->got = manylab_read_upto(results_fd, results, want);
	run->reaped_bad = manylab_reap(pids, n);
	run->t1 = manylab_now();
	manylab_roi_end(0);
	manylab_read_procstat(&run->ps1);
}

#endif
