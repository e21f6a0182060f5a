// SPDX-License-Identifier: MIT
/*
 * stream: a STREAM-like memory bandwidth workload (copy, scale, add, triad on three arrays of
 * doubles), split over threads pinned one per CPU, each owning a contiguous slice.
 *
 * The arrays are allocated and first touched by the threads that use them (so the pages land
 * on their NUMA node, or on the node the workload is bound to), then each kernel runs REPS
 * times between barriers. Region 0 holds the threads' start and first touch (phase 0) and the
 * timed kernels; kernel k is phase k (copy 1, scale 2, add 3, triad 4), so the plugin reports
 * each kernel's traffic apart; phase 5 holds the threads' exit and join. Bytes count as
 * STREAM counts them: 16 per element for copy and scale, 24 for add and triad. One result line:
 *   MANYLAB-RESULT {"workload":"stream","threads":...,"elements":...,"reps":...,
 *                   "kernels":[{"phase":1,"name":"copy","bytes":...,"seconds":...,
 *                   "mib_s":...},...],"verified":true}
 * seconds and mib_s are guest time (under the lab's instruction time they count instructions).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manylab_roi.h"
#include "manylab_threads.h"
#include "manylab_util.h"

#define MAX_THREADS 1024
#define SCALAR 3.0

enum kernel { COPY, SCALE, ADD, TRIAD, NKERNELS };
static const char *const kernel_names[NKERNELS] = { "copy", "scale", "add", "triad" };
static const int kernel_arrays[NKERNELS] = { 2, 2, 3, 3 };

struct options {
	int threads;
	uint64_t size;
	int reps;
	int no_pin;
};

struct shared {
	const struct options *o;
	uint64_t elements;
	double *a, *b, *c;
	pthread_barrier_t barrier;
	double seconds[NKERNELS];
};

struct worker {
	struct shared *s;
	int id;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: stream [options]\n"
		"  --threads N    threads, one per CPU (default 1, max %d)\n"
		"  --size BYTES   bytes per array, K/M/G allowed (default 8M)\n"
		"  --reps N       repetitions of each kernel (default 3)\n"
		"  --no-pin       do not pin thread i to CPU i\n",
		MAX_THREADS);
}

static void slice(const struct shared *s, int id, uint64_t *lo, uint64_t *hi)
{
	uint64_t per = s->elements / (uint64_t)s->o->threads;

	*lo = per * (uint64_t)id;
	*hi = id == s->o->threads - 1 ? s->elements : *lo + per;
}

static void run_kernel(struct shared *s, enum kernel k, uint64_t lo, uint64_t hi)
{
	double *a = s->a, *b = s->b, *c = s->c;

	switch (k) {
	case COPY:
		for (uint64_t i = lo; i < hi; i++)
			c[i] = a[i];
		break;
	case SCALE:
		for (uint64_t i = lo; i < hi; i++)
			b[i] = SCALAR * c[i];
		break;
	case ADD:
		for (uint64_t i = lo; i < hi; i++)
			c[i] = a[i] + b[i];
		break;
	case TRIAD:
		for (uint64_t i = lo; i < hi; i++)
			a[i] = b[i] + SCALAR * c[i];
		break;
	default:
		break;
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct shared *s = w->s;
	uint64_t lo, hi;

	if (!s->o->no_pin)
		manylab_pin_self(w->id);
	slice(s, w->id, &lo, &hi);
	for (uint64_t i = lo; i < hi; i++) {	/* first touch by the user of the slice */
		s->a[i] = 1.0;
		s->b[i] = 2.0;
		s->c[i] = 0.0;
	}
	pthread_barrier_wait(&s->barrier);
	for (int k = 0; k < NKERNELS; k++) {
		for (int r = 0; r < s->o->reps; r++) {
			pthread_barrier_wait(&s->barrier);
			if (w->id == 0 && r == 0) {
				manylab_roi_phase_at(k + 1);
				s->seconds[k] = -manylab_now();
			}
			pthread_barrier_wait(&s->barrier);
			run_kernel(s, (enum kernel)k, lo, hi);
		}
		pthread_barrier_wait(&s->barrier);
		if (w->id == 0)
			s->seconds[k] += manylab_now();
	}
	if (w->id == 0)		/* the threads' exit and join: not part of the last kernel */
		manylab_roi_phase_at(NKERNELS + 1);
	return NULL;
}

static double magnitude(double x)
{
	return x < 0 ? -x : x;
}

/* The values STREAM's kernels leave after reps rounds, from a=1, b=2, c=0. */
static int check(const struct shared *s)
{
	double a = 1.0, b = 2.0, c = 0.0;

	for (int r = 0; r < s->o->reps; r++)
		c = a;
	for (int r = 0; r < s->o->reps; r++)
		b = SCALAR * c;
	for (int r = 0; r < s->o->reps; r++)
		c = a + b;
	for (int r = 0; r < s->o->reps; r++)
		a = b + SCALAR * c;
	for (uint64_t i = 0; i < s->elements; i++)
		if (magnitude(s->a[i] - a) > 1e-9 * a || magnitude(s->b[i] - b) > 1e-9 * b ||
		    magnitude(s->c[i] - c) > 1e-9 * c)
			return 0;
	return 1;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	*o = (struct options){ .threads = 1, .size = 8 << 20, .reps = 3 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--threads") && i + 1 < argc)
			o->threads = (int)manylab_size_arg("stream", a, argv[++i]);
		else if (!strcmp(a, "--size") && i + 1 < argc)
			o->size = manylab_size_arg("stream", a, argv[++i]);
		else if (!strcmp(a, "--reps") && i + 1 < argc)
			o->reps = (int)manylab_size_arg("stream", a, argv[++i]);
		else if (!strcmp(a, "--no-pin"))
			o->no_pin = 1;
		else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else
			goto bad;
	}
	if (o->threads < 1 || o->threads > MAX_THREADS || o->reps < 1 ||
	    o->size / sizeof(double) < (uint64_t)o->threads)
		goto bad;
	return 0;
bad:
	return manylab_bad_args(usage, "stream: bad arguments (1 <= threads <= %d, reps >= 1, at "
				"least one element per thread)\n", MAX_THREADS);
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_THREADS];
	pthread_t tids[MAX_THREADS];
	struct options o;
	struct shared s;
	int verified;

	if (parse_options(argc, argv, &o))
		return 2;
	memset(&s, 0, sizeof(s));
	s.o = &o;
	s.elements = o.size / sizeof(double);
	s.a = malloc(s.elements * sizeof(double));
	s.b = malloc(s.elements * sizeof(double));
	s.c = malloc(s.elements * sizeof(double));
	if (!s.a || !s.b || !s.c) {
		fprintf(stderr, "stream: cannot allocate 3 x %" PRIu64 " bytes\n", o.size);
		return 1;
	}
	pthread_barrier_init(&s.barrier, NULL, (unsigned int)o.threads);
	manylab_roi_begin(0);
	for (int i = 0; i < o.threads; i++) {
		workers[i] = (struct worker){ &s, i };
		if (pthread_create(&tids[i], NULL, work, &workers[i])) {
			fprintf(stderr, "stream: pthread_create failed\n");
			return 1;
		}
	}
	for (int i = 0; i < o.threads; i++)
		pthread_join(tids[i], NULL);
	manylab_roi_end(0);
	verified = check(&s);

	printf("MANYLAB-RESULT {\"workload\":\"stream\",\"threads\":%d,\"elements\":%" PRIu64
	       ",\"reps\":%d,\"kernels\":[", o.threads, s.elements, o.reps);
	for (int k = 0; k < NKERNELS; k++) {
		double bytes = (double)kernel_arrays[k] * sizeof(double) * (double)s.elements *
			       o.reps;

		printf("%s{\"phase\":%d,\"name\":\"%s\",\"bytes\":%.0f,\"seconds\":%.6f,"
		       "\"mib_s\":%.3f}", k ? "," : "", k + 1, kernel_names[k], bytes,
		       s.seconds[k], s.seconds[k] > 0 ? bytes / (1 << 20) / s.seconds[k] : 0.0);
	}
	printf("],\"verified\":%s}\n", verified ? "true" : "false");
	return verified ? 0 : 1;
}
