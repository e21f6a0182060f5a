/* SPDX-License-Identifier: MIT */
/*
 * contention: the lab's check that vCPUs interleave finely enough for contention to exist.
 * Three loops, each ROI region 0 with its own phase:
 *   phase 1, atomic: every thread exchanges its id into one shared word back to back; a
 *            handoff is an exchange whose previous value came from another thread.
 *   phase 2, lock:   a test-and-test-and-set spin lock (pause/yield while waiting) around a
 *            short critical section on the lock's own cache line, with some local work
 *            between two acquisitions as real lock users have; an acquisition is
 *            contended when the thread found the lock held, a handoff when the previous
 *            holder was another thread.
 *   phase 3, padded: the same lock loop with one lock per thread on its own line (no sharing:
 *            contended acquisitions and handoffs must be 0).
 *
 * Build: gcc -static -O2 -pthread -Iworkloads/include workloads/contention.c -o contention
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "manylab_roi.h"
#include "manylab_threads.h"

#define LINE 64
#define MAX_THREADS 512

enum phase { ATOMIC = 1, LOCK = 2, PADDED = 4 };

struct options {
	int threads;
	long iters;
	int phases; /* bit mask of enum phase */
	int cs;
	int think;
	int pin;
};

struct guarded {
	int locked;
	int owner;
	uint64_t count;
	uint64_t data[5];
} __attribute__((aligned(LINE)));

struct tally {
	uint64_t handoffs;
	uint64_t contended;
} __attribute__((aligned(LINE)));

struct worker {
	pthread_t tid;
	int id;
	const struct options *o;
	enum phase phase;
	pthread_barrier_t *start;
	uint64_t *word;
	struct guarded *lock;
	struct tally tally;
};

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s [--threads N] [--iters N] [--mode atomic|lock|padded|all] [--cs N] [--think N] [--no-pin]\n"
		"  --threads N  worker threads (default: online CPUs, at most %d)\n"
		"  --iters N    operations per thread and loop (default 200000)\n"
		"  --mode M     which loop(s) to run (default all)\n"
		"  --cs N       increments inside each critical section (default 10)\n"
		"  --think N    local loop iterations between two lock acquisitions (default 50)\n"
		"  --no-pin     do not pin thread i to CPU i mod ncpus\n"
		"Each loop is manylab ROI region 0; phase 1 = atomic, 2 = lock, 3 = padded.\n"
		"Prints one line: MANYLAB-RESULT {json} with handoffs and contended acquisitions.\n",
		prog, MAX_THREADS);
}

static void parse(int argc, char **argv, struct options *o)
{
	static const struct manylab_choice modes[] = {
		{ "atomic", ATOMIC }, { "lock", LOCK }, { "padded", PADDED }, { "all", ATOMIC | LOCK | PADDED },
	};

	*o = (struct options){ .threads = manylab_default_threads(MAX_THREADS), .iters = 200000,
			       .phases = ATOMIC | LOCK | PADDED, .cs = 10, .think = 50, .pin = 1 };
	for (int i = 1; i < argc; i++)
		if (!manylab_thread_opt("contention", usage, argc, argv, &i, MAX_THREADS, &o->threads, &o->pin) &&
		    !manylab_long_opt("contention", argc, argv, &i, "--iters", 1, 1L << 40, &o->iters) &&
		    !manylab_int_opt("contention", argc, argv, &i, "--cs", 0, 1 << 20, &o->cs) &&
		    !manylab_int_opt("contention", argc, argv, &i, "--think", 0, 1 << 20, &o->think) &&
		    !manylab_choice_opt("contention", argc, argv, &i, "--mode", modes, 4, &o->phases))
			manylab_bad_arg("contention", usage, argv, i);
}

static void think(int n)
{
	for (volatile int i = 0; i < n; i++)
		;
}

static void atomic_loop(struct worker *w)
{
	uint64_t me = (uint64_t)w->id + 1;

	for (long i = 0; i < w->o->iters; i++) {
		uint64_t before = __atomic_exchange_n(w->word, me, __ATOMIC_ACQ_REL);

		if (before && before != me)
			w->tally.handoffs++;
	}
}

static void lock_loop(struct worker *w)
{
	struct guarded *g = w->lock;

	for (long i = 0; i < w->o->iters; i++) {
		w->tally.contended += manylab_ttas_acquire(&g->locked);
		if (g->owner && g->owner != w->id + 1)
			w->tally.handoffs++;
		g->owner = w->id + 1;
		g->count++;
		for (int k = 0; k < w->o->cs; k++)
			g->data[k % 5]++;
		manylab_ttas_release(&g->locked);
		think(w->o->think);
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;

	if (w->o->pin)
		manylab_pin_self(w->id);
	pthread_barrier_wait(w->start);
	if (w->phase == ATOMIC)
		atomic_loop(w);
	else
		lock_loop(w);
	return NULL;
}

struct outcome {
	double seconds;
	uint64_t handoffs;
	uint64_t contended;
	int verified;
};

static struct outcome run(const struct options *o, enum phase p)
{
	int n = o->threads;
	int locks = p == PADDED ? n : 1;
	struct worker *workers = calloc(n, sizeof(*workers));
	struct guarded *guarded = aligned_alloc(LINE, sizeof(struct guarded) * locks);
	uint64_t *word = aligned_alloc(LINE, LINE);
	struct outcome out = { 0 };
	pthread_barrier_t start;

	if (!workers || !guarded || !word) {
		fprintf(stderr, "contention: out of memory\n");
		exit(1);
	}
	memset(guarded, 0, sizeof(struct guarded) * locks);
	memset(word, 0, LINE);
	pthread_barrier_init(&start, NULL, n + 1);
	for (int i = 0; i < n; i++) {
		workers[i] = (struct worker){ .id = i, .o = o, .phase = p, .start = &start, .word = word,
					      .lock = &guarded[p == PADDED ? i : 0] };
		if (pthread_create(&workers[i].tid, NULL, work, &workers[i])) {
			fprintf(stderr, "contention: pthread_create failed\n");
			exit(1);
		}
	}
	manylab_roi_begin(0);
	if (p == ATOMIC)
		manylab_roi_phase(1);
	else if (p == LOCK)
		manylab_roi_phase(2);
	else
		manylab_roi_phase(3);
	double t0 = manylab_now();

	pthread_barrier_wait(&start);
	for (int i = 0; i < n; i++)
		pthread_join(workers[i].tid, NULL);
	out.seconds = manylab_now() - t0;
	manylab_roi_end(0);
	uint64_t counted = 0;

	for (int i = 0; i < n; i++) {
		out.handoffs += workers[i].tally.handoffs;
		out.contended += workers[i].tally.contended;
	}
	for (int i = 0; i < locks; i++)
		counted += guarded[i].count;
	out.verified = p == ATOMIC || counted == (uint64_t)n * o->iters;
	pthread_barrier_destroy(&start);
	free(workers);
	free(guarded);
	free(word);
	return out;
}

/* Lock loops also report their contended acquisitions; the atomic loop has none to count. */
static void print_phase(const char *name, const struct outcome *r, uint64_t ops, int is_lock)
{
	printf("\"%s_s\":%.6f,\"%s_handoffs\":%llu,\"%s_handoffs_per_1000\":%.3f,",
	       name, r->seconds, name, (unsigned long long)r->handoffs, name,
	       ops ? 1000.0 * r->handoffs / ops : 0.0);
	if (is_lock)
		printf("\"%s_contended\":%llu,\"%s_contended_share\":%.5f,", name,
		       (unsigned long long)r->contended, name, ops ? (double)r->contended / ops : 0.0);
}

int main(int argc, char **argv)
{
	static const struct { enum phase phase; const char *name; } phases[] = {
		{ ATOMIC, "atomic" }, { LOCK, "lock" }, { PADDED, "padded" },
	};
	struct options o;
	struct outcome results[3] = { 0 };
	int verified = 1, chosen = 0, printed = 0;

	parse(argc, argv, &o);
	for (int i = 0; i < 3; i++) {
		if (!(o.phases & phases[i].phase))
			continue;
		results[i] = run(&o, phases[i].phase);
		verified &= results[i].verified;
		chosen++;
	}
	uint64_t ops = (uint64_t)o.threads * o.iters;

	printf("MANYLAB-RESULT {\"workload\":\"contention\",\"threads\":%d,\"iters\":%ld,\"cs\":%d,"
	       "\"think\":%d,\"pin\":%s,\"ops_per_loop\":%llu,",
	       o.threads, o.iters, o.cs, o.think, o.pin ? "true" : "false", (unsigned long long)ops);
	for (int i = 0; i < 3; i++) {
		if (!(o.phases & phases[i].phase))
			continue;
		print_phase(phases[i].name, &results[i], ops, phases[i].phase != ATOMIC);
		printed++;
	}
	printf("\"verified\":%s}\n", verified && printed == chosen ? "true" : "false");
	fflush(stdout);
	return verified ? 0 : 1;
}
