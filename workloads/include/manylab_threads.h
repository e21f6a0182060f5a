/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the lab's multi-threaded micro-workloads (falseshare, contention,
 * serialprobe): their command line (range-checked integers, named choices, --threads, --no-pin,
 * --help), the spin-wait hint and pinning to a CPU (sizes and the clock: manylab_util.h).
 */
#ifndef MANYLAB_THREADS_H
#define MANYLAB_THREADS_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include (for pthread_setaffinity_np)"
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "manylab_util.h"

/* The integer value of an option in [min, max]; anything else exits 2 naming the option. */
static inline long manylab_parse_long(const char *prog, const char *flag, const char *text,
				      long min, long max)
{
	long v;

	if (manylab_parse_whole(text, min, max, &v)) {
		fprintf(stderr, "%s: bad value '%s' for %s (expected %ld..%ld)\n", prog, text, flag,
			min, max);
		exit(2);
	}
	return v;
}

/* The program's usage on out; prog is its argv[0]. */
typedef void manylab_usage_fn(FILE *out, const char *prog);

/* --threads' default: the online CPUs, at least 1 and at most max. */
static inline int manylab_default_threads(int max)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	return ncpu < 1 ? 1 : (ncpu > max ? max : (int)ncpu);
}

/*
 * The option-with-a-value helpers below: each takes argv[*i] when it is its option flag and a
 * value follows, moves *i onto the value and returns 1; otherwise it returns 0 and leaves *i.
 */
static inline int manylab_long_opt(const char *prog, int argc, char **argv, int *i,
				   const char *flag, long min, long max, long *out)
{
	if (*i + 1 >= argc || strcmp(argv[*i], flag))
		return 0;
	*out = manylab_parse_long(prog, flag, argv[++*i], min, max);
	return 1;
}

static inline int manylab_int_opt(const char *prog, int argc, char **argv, int *i,
				  const char *flag, int min, int max, int *out)
{
	long v;

	if (!manylab_long_opt(prog, argc, argv, i, flag, min, max, &v))
		return 0;
	*out = (int)v;
	return 1;
}

/* One value of an option that takes names. */
struct manylab_choice {
	const char *name;
	int value;
};

/* The value is one of the n choices' names: its value into *out; another exits 2, naming the
 * option and the choices ("a, b or c"). */
static inline int manylab_choice_opt(const char *prog, int argc, char **argv, int *i,
				     const char *flag, const struct manylab_choice *choices, int n,
				     int *out)
{
	char names[256];
	size_t len = 0;
	const char *text;

	if (*i + 1 >= argc || strcmp(argv[*i], flag))
		return 0;
	text = argv[++*i];
	for (int k = 0; k < n; k++) {
		if (!strcmp(text, choices[k].name)) {
			*out = choices[k].value;
			return 1;
		}
	}
	names[0] = '\0';
	for (int k = 0; k < n && len < sizeof(names); k++)
		len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
					!k ? "" : k == n - 1 ? " or " : ", ", choices[k].name);
	fprintf(stderr, "%s: bad value '%s' for %s (%s)\n", prog, text, flag, names);
	exit(2);
}

/*
 * The options every threaded micro-workload takes, at argv[*i]: --help or -h (the usage on
 * stdout, exit 0), --no-pin (*pin = 0) and --threads N (1..max_threads); 1 when argv[*i] was
 * one of them (*i then on its value), else 0.
 */
static inline int manylab_thread_opt(const char *prog, manylab_usage_fn *usage, int argc,
				     char **argv, int *i, int max_threads, int *threads, int *pin)
{
	const char *a = argv[*i];

	if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
		usage(stdout, argv[0]);
		exit(0);
	}
	if (!strcmp(a, "--no-pin")) {
		*pin = 0;
		return 1;
	}
	return manylab_int_opt(prog, argc, argv, i, "--threads", 1, max_threads, threads);
}

/* argv[i] is no option the program takes: named on stderr with the usage, exit 2. */
static inline void manylab_bad_arg(const char *prog, manylab_usage_fn *usage, char **argv, int i)
{
	fprintf(stderr, "%s: unknown argument '%s'\n", prog, argv[i]);
	usage(stderr, argv[0]);
	exit(2);
}

/* x86 pause, arm64 yield: under single-threaded TCG it also ends the vCPU's turn. */
static inline void manylab_spin_hint(void)
{
#if defined(__x86_64__)
	__asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/*
 * Test-and-test-and-set spin lock on the int *locked (0 free): reads while it is held, with the
 * spin hint, and exchanges only when it looks free. Returns 1 when the lock was found held
 * (the acquisition had to wait).
 */
static inline int manylab_ttas_acquire(int *locked)
{
	int waited = 0;

	for (;;) {
		if (!__atomic_load_n(locked, __ATOMIC_RELAXED) &&
		    !__atomic_exchange_n(locked, 1, __ATOMIC_ACQUIRE))
			return waited;
		waited = 1;
		while (__atomic_load_n(locked, __ATOMIC_RELAXED))
			manylab_spin_hint();
	}
}

static inline void manylab_ttas_release(int *locked)
{
	__atomic_store_n(locked, 0, __ATOMIC_RELEASE);
}

/* Pins the calling thread to CPU id modulo the online CPUs. */
static inline void manylab_pin_self(int id)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(id % (ncpu > 0 ? ncpu : 1), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

#endif
