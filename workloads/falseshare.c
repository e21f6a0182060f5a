/* SPDX-License-Identifier: MIT */
/*
 * falseshare: N threads increment their own counter, either packed into one cache line
 * (false sharing) or each on its own line (padded). The measured loop of each variant is
 * region 0 ("roi"), with phase 1 = shared and phase 2 = padded, so the manylab plugin
 * reports roi.phase1 and roi.phase2 separately (or one variant per run with --mode).
 *
 * Build: gcc -static -O2 -pthread -Iworkloads/include workloads/falseshare.c -o falseshare
 *        aarch64-linux-gnu-gcc -static -O2 -pthread -Iworkloads/include ... (same)
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
#define MAX_THREADS 256

enum variant { SHARED = 1, PADDED = 2 };

struct options {
	int threads;
	long iters;
	int variants; /* bit mask of enum variant */
	int pin;
	long pause_every;
};

struct worker {
	pthread_t tid;
	int id;
	volatile uint64_t *counter;
	long iters;
	pthread_barrier_t *start;
	int pin;
	long pause_every;
};

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s [--threads N] [--iters N] [--mode shared|padded|both] [--pause-every N] [--no-pin]\n"
		"  N threads each increment their own 8-byte counter ITERS times.\n"
		"  shared: the counters are adjacent words of one 64-byte line (false sharing)\n"
		"  padded: each counter has its own 64-byte line\n"
		"  --threads N   worker threads (default: online CPUs, at most %d)\n"
		"  --iters N     increments per thread (default 1000000)\n"
		"  --mode M      which variant(s) to run (default both)\n"
		"  --pause-every N  spin-wait hint (x86 pause, arm64 yield) every N increments\n"
		"                (default 1; 0 = never). Under single-threaded TCG the hint hands the\n"
		"                host thread to the next vCPU, so the threads' accesses interleave\n"
		"                finely as on real hardware; without it each vCPU runs a whole time\n"
		"                slice alone and false sharing hardly shows in the emulated caches.\n"
		"  --no-pin      do not pin thread i to CPU i mod ncpus\n"
		"Each measured loop is manylab ROI region 0; phase 1 = shared, phase 2 = padded.\n"
		"Prints one line: MANYLAB-RESULT {json} with the parameters and timings.\n",
		prog, MAX_THREADS);
}

static void parse(int argc, char **argv, struct options *o)
{
	static const struct manylab_choice modes[] = {
		{ "shared", SHARED }, { "padded", PADDED }, { "both", SHARED | PADDED },
	};

	o->threads = manylab_default_threads(MAX_THREADS);
	o->iters = 1000000;
	o->variants = SHARED | PADDED;
	o->pin = 1;
	o->pause_every = 1;
	for (int i = 1; i < argc; i++)
		if (!manylab_thread_opt("falseshare", usage, argc, argv, &i, MAX_THREADS, &o->threads, &o->pin) &&
		    !manylab_long_opt("falseshare", argc, argv, &i, "--pause-every", 0, 1L << 40, &o->pause_every) &&
		    !manylab_long_opt("falseshare", argc, argv, &i, "--iters", 1, 1L << 40, &o->iters) &&
		    !manylab_choice_opt("falseshare", argc, argv, &i, "--mode", modes, 3, &o->variants))
			manylab_bad_arg("falseshare", usage, argv, i);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	if (w->pin)
		manylab_pin_self(w->id);
	pthread_barrier_wait(w->start);
	volatile uint64_t *c = w->counter;
	long every = w->pause_every, until_pause = every;
	for (long i = 0; i < w->iters; i++) {
		*c = *c + 1;
		if (every && --until_pause == 0) {
			manylab_spin_hint();
			until_pause = every;
		}
	}
	return NULL;
}

/* Runs one variant; returns its wall time in seconds. */
static double run(const struct options *o, enum variant v, uint64_t *checksum)
{
	size_t stride = v == SHARED ? sizeof(uint64_t) : LINE;
	size_t bytes = ((stride * o->threads + LINE - 1) / LINE) * LINE;
	unsigned char *area = aligned_alloc(LINE, bytes);
	struct worker *workers = calloc(o->threads, sizeof(*workers));
	pthread_barrier_t start;
	if (!area || !workers) {
		fprintf(stderr, "falseshare: out of memory\n");
		exit(1);
	}
	memset(area, 0, bytes);
	pthread_barrier_init(&start, NULL, o->threads + 1);
	for (int i = 0; i < o->threads; i++) {
		workers[i] = (struct worker){ .id = i, .counter = (volatile uint64_t *)(area + i * stride),
					      .iters = o->iters, .start = &start, .pin = o->pin,
					      .pause_every = o->pause_every };
		if (pthread_create(&workers[i].tid, NULL, work, &workers[i])) {
			fprintf(stderr, "falseshare: pthread_create failed\n");
			exit(1);
		}
	}
	manylab_roi_begin(0);
	if (v == SHARED)
		manylab_roi_phase(1);
	else
		manylab_roi_phase(2);
	double t0 = manylab_now();
	pthread_barrier_wait(&start);
	for (int i = 0; i < o->threads; i++)
		pthread_join(workers[i].tid, NULL);
	double t1 = manylab_now();
	manylab_roi_end(0);
	for (int i = 0; i < o->threads; i++)
		*checksum += *workers[i].counter;
	pthread_barrier_destroy(&start);
	free(workers);
	free(area);
	return t1 - t0;
}

int main(int argc, char **argv)
{
	struct options o;
	parse(argc, argv, &o);
	double shared = -1, padded = -1;
	uint64_t checksum = 0;
	if (o.variants & SHARED)
		shared = run(&o, SHARED, &checksum);
	if (o.variants & PADDED)
		padded = run(&o, PADDED, &checksum);
	uint64_t expect = (uint64_t)o.threads * o.iters * ((o.variants & SHARED ? 1 : 0) + (o.variants & PADDED ? 1 : 0));
	printf("MANYLAB-RESULT {\"workload\":\"falseshare\",\"threads\":%d,\"iters\":%ld,\"mode\":\"%s\",\"pin\":%s,\"pause_every\":%ld,"
	       "\"shared_s\":%.6f,\"padded_s\":%.6f,\"slowdown\":%.3f,\"checksum_ok\":%s}\n",
	       o.threads, o.iters, o.variants == SHARED ? "shared" : o.variants == PADDED ? "padded" : "both",
	       o.pin ? "true" : "false", o.pause_every, shared, padded, (shared > 0 && padded > 0) ? shared / padded : 0.0,
	       checksum == expect ? "true" : "false");
	fflush(stdout);
	return checksum == expect ? 0 : 1;
}
