/* SPDX-License-Identifier: MIT */
/*
 * serialprobe: the lab's serialisation probe. Does the modelled clock charge lock waiting?
 *
 * The same work, threads x sections critical sections of --work iterations of register-only
 * arithmetic each, runs four ways inside ROI region 0, one phase each (numbers fixed):
 *   phase 1, serial: thread 0 alone runs all (threads x sections) sections, no lock; the other
 *            threads sleep in a barrier, parked before the marker.
 *   phase 2, spin:   every thread runs its sections under one test-and-test-and-set spin lock
 *            (pause/yield while it reads held), the lock alone on its cache line.
 *   phase 3, mutex:  the same under one pthread mutex (waiters sleep in futex).
 *   phase 4, none:   the same without a lock (each thread its own sections).
 * On hardware a lock that serialises the sections makes phases 2 and 3 take as long as phase
 * 1 (ratio 1.0, plus the handoffs), and phase 4 about 1/threads of it. A clock that does not
 * charge waiting shows the locked phases near 1/threads too.
 *
 * Between phases the threads meet outside them: the last thread to finish a phase marks phase 0
 * (the gaps), all sleep in a barrier, then announce themselves on a counter; thread 0 marks the
 * next phase once all have, and releases them with a start flag they spin on. --lock picks
 * which of phases 2-4 run (the serial phase always does; phase numbers never change).
 *
 * A section touches registers only: xorshift64 from a seed of (thread, section), so every phase
 * computes the same sum, which each thread stores once per phase in its own padded slot. One
 * result line:
 *   MANYLAB-RESULT {"workload":"serialprobe","threads":...,"sections":...,"work":...,
 *                   "lock":"all","pin":true,"sections_per_phase":...,"phases":["serial",...],
 *                   "serial_phase":1,"serial_s":...,"spin_phase":2,"spin_s":...,
 *                   "spin_contended":...,"spin_contended_share":...,"mutex_...":...,
 *                   "none_phase":4,"none_s":...,"checksum":"<16 hex digits>","verified":true}
 * <phase>_s is guest time (under the lab's instruction time it counts instructions); the
 * plugin's stats.roi.phase<k>.time.modelled_ns is the figure to compare. A spin acquisition is
 * contended when the thread found the lock held at least once, a mutex acquisition when
 * pthread_mutex_trylock failed. verified: every phase's checksum equals the serial phase's.
 *
 * Build: gcc -static -O2 -pthread -Iworkloads/include workloads/serialprobe.c -o serialprobe
 *        aarch64-linux-gnu-gcc -static -O2 -pthread -Iworkloads/include ... (same)
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "manylab_roi.h"
#include "manylab_threads.h"
#include "manylab_util.h"

#define LINE 64
#define MAX_THREADS 512
#define NPHASES 5 /* slot 0 unused: phase numbers index the arrays */

enum phase { SERIAL = 1, SPIN = 2, MUTEX = 3, NONE = 4 };

static const char *const phase_names[NPHASES] = { "", "serial", "spin", "mutex", "none" };

struct options {
	int threads;
	long sections;
	long work;
	int phases; /* bit mask of 1 << enum phase; serial is always in it */
	const char *lock; /* --lock as given */
	int pin;
};

/* Written by its thread once per phase, read by main after the join. */
struct slot {
	uint64_t sum[NPHASES];
	uint64_t contended[NPHASES];
} __attribute__((aligned(LINE)));

struct ttas_lock {
	int locked;
} __attribute__((aligned(LINE)));

struct padded_mutex {
	pthread_mutex_t mutex;
} __attribute__((aligned(LINE)));

struct counter {
	long value;
} __attribute__((aligned(LINE)));

struct shared {
	struct options o __attribute__((aligned(LINE)));	/* read only while threads run */
	struct ttas_lock spin;		/* alone on its line */
	struct padded_mutex mutex;	/* alone on its line(s) */
	struct counter parked;		/* threads parked before the serial phase */
	struct counter arrived;		/* threads ready for the next phase, cumulative */
	struct counter go;		/* rounds thread 0 has started */
	struct counter finished;	/* threads done with a phase, cumulative */
	pthread_barrier_t barrier;
	double start[NPHASES];
	double end[NPHASES];
	struct slot *slots;
};

struct worker {
	pthread_t tid;
	int id;
	struct shared *s;
};

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s [--threads N] [--sections N] [--work N] [--lock spin|mutex|none|all] [--no-pin]\n"
		"  --threads N   worker threads (default: online CPUs, at most %d)\n"
		"  --sections N  critical sections per thread and phase (default 10)\n"
		"  --work N      arithmetic iterations (registers only) per section (default 20000)\n"
		"  --lock L      which of the phases 2-4 run besides the serial one (default all)\n"
		"  --no-pin      do not pin thread i to CPU i mod ncpus\n"
		"Everything is manylab ROI region 0; phase 1 = serial (thread 0 runs threads x\n"
		"sections sections alone), 2 = spin, 3 = mutex, 4 = none (all threads, sections each);\n"
		"phase 0 holds the gaps between them. Locked phase / serial phase modelled time is the\n"
		"measure: 1.0 on hardware for spin and mutex, about 1/threads for none.\n"
		"Prints one line: MANYLAB-RESULT {json} with guest times, contended acquisitions and\n"
		"the checksum of the arithmetic (the same in every phase).\n",
		prog, MAX_THREADS);
}

static void parse(int argc, char **argv, struct options *o)
{
	static const struct manylab_choice locks[] = {
		{ "spin", 1 << SPIN }, { "mutex", 1 << MUTEX }, { "none", 1 << NONE },
		{ "all", (1 << SPIN) | (1 << MUTEX) | (1 << NONE) },
	};
	int lock_phases = (1 << SPIN) | (1 << MUTEX) | (1 << NONE);

	*o = (struct options){ .threads = manylab_default_threads(MAX_THREADS),
			       .sections = 10, .work = 20000, .lock = "all", .pin = 1 };
	for (int i = 1; i < argc; i++) {
		if (manylab_choice_opt("serialprobe", argc, argv, &i, "--lock", locks, 4, &lock_phases))
			o->lock = argv[i];
		else if (!manylab_thread_opt("serialprobe", usage, argc, argv, &i, MAX_THREADS, &o->threads,
					     &o->pin) &&
			 !manylab_long_opt("serialprobe", argc, argv, &i, "--sections", 1, 1L << 30,
					   &o->sections) &&
			 !manylab_long_opt("serialprobe", argc, argv, &i, "--work", 0, 1L << 40, &o->work))
			manylab_bad_arg("serialprobe", usage, argv, i);
	}
	o->phases = (1 << SERIAL) | lock_phases;
}

/* A nonzero xorshift seed for section `section` of thread `thread`: the same in every phase. */
static uint64_t seed(int thread, long section)
{
	uint64_t z = ((uint64_t)thread << 32 | (uint64_t)section) * 0x9e3779b97f4a7c15ull;

	return (z ^ (z >> 31)) | 1;
}

/*
 * One critical section's work: xorshift64 in registers, work rounds. The empty asm statements
 * take x in and out of a register with a memory clobber, so the loop can neither be folded nor
 * moved out of the section past the lock's acquire or release.
 */
static uint64_t section_work(uint64_t x, long work)
{
	__asm__ __volatile__("" : "+r"(x) : : "memory");
	for (long i = 0; i < work; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	__asm__ __volatile__("" : "+r"(x) : : "memory");
	return x;
}

/* Thread 0 alone: every thread's sections, one after another. */
static void serial_phase(struct shared *s)
{
	int threads = s->o.threads;
	long sections = s->o.sections, work = s->o.work;
	uint64_t sum = 0;

	for (int t = 0; t < threads; t++)
		for (long k = 0; k < sections; k++)
			sum += section_work(seed(t, k), work);
	s->slots[0].sum[SERIAL] = sum;
}

static void parallel_phase(struct worker *w, enum phase p)
{
	struct shared *s = w->s;
	long sections = s->o.sections, work = s->o.work;
	uint64_t sum = 0, contended = 0;

	for (long k = 0; k < sections; k++) {
		uint64_t x = seed(w->id, k);

		if (p == SPIN) {
			contended += (uint64_t)manylab_ttas_acquire(&s->spin.locked);
			sum += section_work(x, work);
			manylab_ttas_release(&s->spin.locked);
		} else if (p == MUTEX) {
			if (pthread_mutex_trylock(&s->mutex.mutex)) {
				contended++;
				pthread_mutex_lock(&s->mutex.mutex);
			}
			sum += section_work(x, work);
			pthread_mutex_unlock(&s->mutex.mutex);
		} else {
			sum += section_work(x, work);
		}
	}
	s->slots[w->id].sum[p] = sum;
	s->slots[w->id].contended[p] = contended;
}

static void wait_until(long *value, long target)
{
	while (__atomic_load_n(value, __ATOMIC_ACQUIRE) < target)
		manylab_spin_hint();
}

/*
 * Round `round` (1, 2, ...) of the parallel phases, called by every thread right after the
 * barrier: each announces itself; thread 0 marks phase p once all have and starts them.
 */
static void start_phase(struct worker *w, enum phase p, long round)
{
	struct shared *s = w->s;

	__atomic_add_fetch(&s->arrived.value, 1, __ATOMIC_ACQ_REL);
	if (w->id == 0) {
		wait_until(&s->arrived.value, round * s->o.threads);
		manylab_roi_phase_at(p);
		s->start[p] = manylab_now();
		__atomic_store_n(&s->go.value, round, __ATOMIC_RELEASE);
	} else {
		wait_until(&s->go.value, round);
	}
}

/* The last thread to finish phase p closes it (phase 0: the gap), then all sleep together. */
static void finish_phase(struct worker *w, enum phase p, long round)
{
	struct shared *s = w->s;

	if (__atomic_add_fetch(&s->finished.value, 1, __ATOMIC_ACQ_REL) == round * s->o.threads) {
		s->end[p] = manylab_now();
		manylab_roi_phase(0);
	}
	pthread_barrier_wait(&s->barrier);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct shared *s = w->s;
	long round = 0;

	if (s->o.pin)
		manylab_pin_self(w->id);
	if (w->id == 0) {
		wait_until(&s->parked.value, s->o.threads - 1);
		manylab_roi_begin(0);
		manylab_roi_phase(1);
		s->start[SERIAL] = manylab_now();
		serial_phase(s);
		s->end[SERIAL] = manylab_now();
		manylab_roi_phase(0);
	} else {
		__atomic_add_fetch(&s->parked.value, 1, __ATOMIC_ACQ_REL);
	}
	pthread_barrier_wait(&s->barrier);
	for (int p = SPIN; p <= NONE; p++) {
		if (!(s->o.phases & (1 << p)))
			continue;
		round++;
		start_phase(w, (enum phase)p, round);
		parallel_phase(w, (enum phase)p);
		finish_phase(w, (enum phase)p, round);
	}
	if (w->id == 0)
		manylab_roi_end(0);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct shared s;
	const struct options *o = &s.o;
	struct worker *workers;
	uint64_t sums[NPHASES] = { 0 }, contended[NPHASES] = { 0 };
	int verified = 1, first = 1;

	parse(argc, argv, &s.o);
	workers = calloc(o->threads, sizeof(*workers));
	s.slots = aligned_alloc(LINE, sizeof(struct slot) * o->threads);
	if (!workers || !s.slots) {
		fprintf(stderr, "serialprobe: out of memory\n");
		return 1;
	}
	memset(s.slots, 0, sizeof(struct slot) * o->threads);
	pthread_mutex_init(&s.mutex.mutex, NULL);
	pthread_barrier_init(&s.barrier, NULL, (unsigned int)o->threads);
	for (int i = 0; i < o->threads; i++) {
		workers[i] = (struct worker){ .id = i, .s = &s };
		if (i && pthread_create(&workers[i].tid, NULL, work, &workers[i])) {
			fprintf(stderr, "serialprobe: pthread_create failed\n");
			return 1;
		}
	}
	work(&workers[0]);	/* the main thread is thread 0 */
	for (int i = 1; i < o->threads; i++)
		pthread_join(workers[i].tid, NULL);

	for (int p = SERIAL; p <= NONE; p++)
		for (int i = 0; i < o->threads; i++) {
			sums[p] += s.slots[i].sum[p];
			contended[p] += s.slots[i].contended[p];
		}
	for (int p = SPIN; p <= NONE; p++)
		if ((o->phases & (1 << p)) && sums[p] != sums[SERIAL])
			verified = 0;
	uint64_t total = (uint64_t)o->threads * (uint64_t)o->sections;

	printf("MANYLAB-RESULT {\"workload\":\"serialprobe\",\"threads\":%d,\"sections\":%ld,"
	       "\"work\":%ld,\"lock\":\"%s\",\"pin\":%s,\"sections_per_phase\":%" PRIu64
	       ",\"phases\":[", o->threads, o->sections, o->work, o->lock, o->pin ? "true" : "false",
	       total);
	for (int p = SERIAL; p <= NONE; p++) {
		if (!(o->phases & (1 << p)))
			continue;
		printf("%s\"%s\"", first ? "" : ",", phase_names[p]);
		first = 0;
	}
	printf("],");
	for (int p = SERIAL; p <= NONE; p++) {
		if (!(o->phases & (1 << p)))
			continue;
		printf("\"%s_phase\":%d,\"%s_s\":%.6f,", phase_names[p], p, phase_names[p],
		       s.end[p] - s.start[p]);
		if (p == SPIN || p == MUTEX)
			printf("\"%s_contended\":%" PRIu64 ",\"%s_contended_share\":%.5f,",
			       phase_names[p], contended[p], phase_names[p],
			       (double)contended[p] / (double)total);
	}
	printf("\"checksum\":\"%016" PRIx64 "\",\"verified\":%s}\n", sums[SERIAL],
	       verified ? "true" : "false");
	fflush(stdout);
	pthread_barrier_destroy(&s.barrier);
	pthread_mutex_destroy(&s.mutex.mutex);
	free(s.slots);
	free(workers);
	return verified ? 0 : 1;
}
