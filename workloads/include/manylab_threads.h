/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the lab's multi-threaded micro-workloads (falseshare, contention): a
 * range-checked integer argument, the spin-wait hint and pinning to a CPU (sizes and the clock:
 * manylab_util.h).
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
#include <time.h>
#include <unistd.h>

#include "manylab_util.h"

/* The integer value of an option in [min, max]; anything else exits 2 naming the option. */
static inline long manylab_parse_long(const char *prog, const char *flag, const char *text,
				      long min, long max)
{
	char *end;

	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno || *end || end == text || v < min || v > max) {
		fprintf(stderr, "%s: bad value '%s' for %s (expected %ld..%ld)\n", prog, text, flag,
			min, max);
		exit(2);
	}
	return v;
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
