// SPDX-License-Identifier: MIT
/*
 * memlat: a pointer-chase latency ladder.
 *
 * For each working-set size the program links the buffer's lines into one random cycle
 * (Sattolo's shuffle, so every line is visited once per pass and no prefetcher can guess the
 * next one), walks the cycle once untimed to warm the caches, then times STEPS dependent loads.
 * A size that fits the L1 measures an L1 hit, one between L1 and L2 an L2 hit, one far beyond
 * the last cache a memory access (on the NUMA node the workload is bound to). With --remote a
 * last rung has another thread, pinned to CPU --owner, write every line of the first size just
 * before one timed pass: each load is then served from that CPU's cache (a dirty forward).
 *
 * Region 0 holds the ladder: rung k's timed loads (1-based) are phase k, its untimed warm-up
 * pass or the owner's writes are phase 0, so the plugin reports each rung's accesses and
 * modelled time apart. One result line on stdout:
 *   MANYLAB-RESULT {"workload":"memlat","rungs":[{"phase":1,"kind":"local","size":...,
 *                   "lines":...,"steps":...,"ns_per_load":...},...],"verified":true}
 * verified: every warm-up pass came back to its first line after visiting each line once.
 * ns_per_load is guest time: under the lab's instruction time it counts instructions, not
 * cycles; the plugin's per-phase modelled time is the latency figure there.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "manylab_roi.h"
#include "manylab_threads.h"
#include "manylab_util.h"

#define MAX_RUNGS 16

struct options {
	uint64_t sizes[MAX_RUNGS];
	int nsizes;
	uint64_t steps;
	uint64_t stride;
	int remote;
	int owner;
};

struct rung {
	const char *kind;
	uint64_t size;
	uint64_t lines;
	uint64_t steps;
	double seconds;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: memlat [options]\n"
		"  --sizes LIST   working-set sizes, comma separated, K/M/G allowed (default "
		"16K,256K,4M,256M; at most %d)\n"
		"  --steps N      timed dependent loads per size (default 100000)\n"
		"  --stride BYTES distance between chased lines, a multiple of 8 (default 64)\n"
		"  --remote       add a rung whose lines another CPU wrote just before one pass\n"
		"  --owner CPU    that CPU (default: the last online CPU)\n",
		MAX_RUNGS - 1);
}

/* Links `lines` lines of `stride` bytes into one random cycle; each holds the next's address. */
static void **build_cycle(uint64_t lines, uint64_t stride, uint64_t seed)
{
	uint64_t *order = malloc(lines * sizeof(*order));
	char *buf = mmap(NULL, lines * stride, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t state = seed;

	if (!order || buf == MAP_FAILED) {
		free(order);
		return NULL;
	}
	for (uint64_t i = 0; i < lines; i++)
		order[i] = i;
	for (uint64_t i = lines - 1; i > 0; i--) {	/* Sattolo: one cycle through all */
		uint64_t j = manylab_splitmix(&state) % i;
		uint64_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (uint64_t i = 0; i < lines; i++)
		*(void **)(buf + order[i] * stride) = buf + order[(i + 1) % lines] * stride;
	free(order);
	return (void **)buf;
}

static void **chase(void **p, uint64_t steps)
{
	while (steps--)
		p = *p;
	return p;
}

struct owner_job {
	void **start;
	uint64_t lines;
	int cpu;
};

/* Rewrites every line of the cycle (same value), leaving them dirty in the owner's cache. */
static void *own_lines(void *arg)
{
	struct owner_job *job = arg;
	void **p = job->start;

	manylab_pin_self(job->cpu);
	for (uint64_t i = 0; i < job->lines; i++) {
		void **next = *p;

		*(void *volatile *)p = next;
		p = next;
	}
	return NULL;
}

static int parse_sizes(const char *text, struct options *o)
{
	char *copy = strdup(text), *save = NULL;

	o->nsizes = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nsizes == MAX_RUNGS - 1 || manylab_parse_size(tok, &o->sizes[o->nsizes])) {
			free(copy);
			return -1;
		}
		o->nsizes++;
	}
	free(copy);
	return o->nsizes ? 0 : -1;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	*o = (struct options){ .steps = 100000, .stride = 64, .owner = -1 };
	parse_sizes("16K,256K,4M,256M", o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--sizes") && i + 1 < argc) {
			if (parse_sizes(argv[++i], o))
				goto bad;
		} else if (!strcmp(a, "--steps") && i + 1 < argc) {
			o->steps = manylab_size_arg("memlat", a, argv[++i]);
		} else if (!strcmp(a, "--stride") && i + 1 < argc) {
			o->stride = manylab_size_arg("memlat", a, argv[++i]);
		} else if (!strcmp(a, "--owner") && i + 1 < argc) {
			o->owner = (int)manylab_size_arg("memlat", a, argv[++i]);
		} else if (!strcmp(a, "--remote")) {
			o->remote = 1;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else {
			goto bad;
		}
	}
	if (o->stride < sizeof(void *) || o->stride % 8 || !o->steps)
		goto bad;
	for (int k = 0; k < o->nsizes; k++)
		if (o->sizes[k] / o->stride < 2)
			goto bad;
	return 0;
bad:
	fprintf(stderr, "memlat: bad arguments (sizes of at least two strides, stride a multiple "
		"of 8, steps > 0)\n");
	usage(stderr);
	return -1;
}

int main(int argc, char **argv)
{
	struct options o;
	struct rung rungs[MAX_RUNGS];
	void **cycles[MAX_RUNGS];
	void **volatile sink;
	int n = 0, verified = 1;

	if (parse_options(argc, argv, &o))
		return 2;
	if (o.owner < 0)
		o.owner = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
	manylab_pin_self(0);
	for (int k = 0; k < o.nsizes; k++) {
		uint64_t lines = o.sizes[k] / o.stride;

		cycles[k] = build_cycle(lines, o.stride, 1000003u * (uint64_t)(k + 1));
		if (!cycles[k]) {
			fprintf(stderr, "memlat: cannot allocate %" PRIu64 " bytes\n", o.sizes[k]);
			return 1;
		}
		rungs[n++] = (struct rung){ "local", lines * o.stride, lines, o.steps, 0 };
	}
	if (o.remote)
		rungs[n++] = (struct rung){ "remote", rungs[0].size, rungs[0].lines, rungs[0].lines, 0 };

	manylab_roi_begin(0);
	for (int k = 0; k < n; k++) {
		void **start = cycles[k < o.nsizes ? k : 0];
		double t0;

		manylab_roi_phase_at(0);
		if (k < o.nsizes) {
			verified &= chase(start, rungs[k].lines) == start;	/* warm, and check */
		} else {
			struct owner_job job = { start, rungs[k].lines, o.owner };
			pthread_t tid;

			if (pthread_create(&tid, NULL, own_lines, &job) || pthread_join(tid, NULL)) {
				fprintf(stderr, "memlat: owner thread failed\n");
				return 1;
			}
		}
		manylab_roi_phase_at(k + 1);
		t0 = manylab_now();
		sink = chase(start, rungs[k].steps);
		rungs[k].seconds = manylab_now() - t0;
	}
	manylab_roi_end(0);

	printf("MANYLAB-RESULT {\"workload\":\"memlat\",\"stride\":%" PRIu64 ",\"owner\":%d,"
	       "\"rungs\":[", o.stride, o.remote ? o.owner : -1);
	for (int k = 0; k < n; k++)
		printf("%s{\"phase\":%d,\"kind\":\"%s\",\"size\":%" PRIu64 ",\"lines\":%" PRIu64
		       ",\"steps\":%" PRIu64 ",\"ns_per_load\":%.3f}", k ? "," : "", k + 1,
		       rungs[k].kind, rungs[k].size, rungs[k].lines, rungs[k].steps,
		       rungs[k].seconds * 1e9 / (double)rungs[k].steps);
	(void)sink;
	printf("],\"verified\":%s}\n", verified ? "true" : "false");
	return verified ? 0 : 1;
}
