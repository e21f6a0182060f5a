// SPDX-License-Identifier: MIT
/*
 * pwriter: parallel file writer/reader, file per process (like IOR's file-per-process mode).
 *
 * N processes each write SIZE bytes to their own file in BLOCK-sized requests, sequentially or
 * in a random permutation of blocks, optionally fsync, then optionally read everything back and
 * verify every byte. As in IOR, the buffer is filled once: each block is the file's own body
 * pattern with a 16-byte header naming the file and the block's offset, so writing a block
 * costs the guest two stores and a system call, and reading one a compare per 8 bytes (a
 * misplaced block fails the header, a corrupted byte the body). `mismatches` counts 8-byte
 * words that differ. Throughput is measured in guest time (CLOCK_MONOTONIC): aggregate =
 * all bytes / (last finish - first start), as IOR reports it; each process creates (or, with
 * --read-only, opens) its file before the phases. One result line on stdout:
 *   MANYLAB-RESULT {json}
 * The write and read phases run inside ROI region 0, as phases 1 (write) and 2 (read).
 *
 * The processes start each phase together, as IOR's ranks leave a barrier: they sleep on a futex
 * that the parent releases with one FUTEX_WAKE; each counts itself done on a shared counter,
 * and the last one wakes the parent. (A pipe would make the released processes take the pipe's
 * mutex one after another, a serialisation of the harness, not of the file system.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "manylab_procs.h"
#include "manylab_roi.h"
#include "manylab_threads.h"
#include "manylab_util.h"

#define MAX_PROCS 1024

struct options {
	int procs;
	uint64_t size;
	uint32_t block;
	int random;
	int do_fsync;
	int do_write;
	int do_read;
	int keep;
	int pin;
	uint64_t seed;
	const char *dir;
};

struct phase_report {
	double start;
	double end;
	uint64_t bytes;
	uint64_t mismatches;
	int error;
};

struct proc_report {
	struct phase_report write;
	struct phase_report read;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: pwriter [options]\n"
		"  -n, --procs N      writer processes, one file each (default 1, max %d)\n"
		"  -s, --size BYTES   bytes per process, suffix K/M/G allowed (default 8M)\n"
		"  -b, --block BYTES  request size, a multiple of 8 from 16 (default 4096)\n"
		"  -p, --pattern P    seq or rand (random permutation of blocks) (default seq)\n"
		"  -d, --dir DIR      directory for the files (default /tmp)\n"
		"  -f, --fsync        fsync each file after writing\n"
		"  -r, --read         read back and verify after the write phase\n"
		"  -R, --read-only    only read and verify files a previous run kept\n"
		"  -k, --keep         keep the files\n"
		"  -S, --seed N       seed of the random block order (default 1)\n"
		"      --pin          pin process i to CPU i (modulo the CPUs), as MPI binds ranks\n"
		"  -h, --help         this text\n"
		"Prints one line: MANYLAB-RESULT {json}; exits 1 on any I/O error or mismatch.\n",
		MAX_PROCS);
}

#define HEADER_MAGIC 0x70777269746572ull	/* "pwriter" */

/* Byte `pos` of file `id`'s body pattern: differs between files and within a block. */
static inline uint8_t pattern_byte(int id, uint64_t pos)
{
	uint64_t x = pos * 0x9e3779b97f4a7c15ull + (uint64_t)id * 0xbf58476d1ce4e5b9ull;

	return (uint8_t)(x >> 56);
}

static void fill_body(uint8_t *buf, uint32_t len, int id)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = pattern_byte(id, i);
}

static void stamp_header(uint8_t *buf, int id, uint64_t offset)
{
	uint64_t header[2] = { HEADER_MAGIC ^ (uint64_t)id, offset };

	memcpy(buf, header, sizeof(header));
}

/* 8-byte words of `got` that differ from the block `want` would be with this header. */
static uint64_t count_mismatches(const uint8_t *got, uint8_t *want, uint32_t len, int id,
				 uint64_t offset)
{
	uint64_t bad = 0, a, b;

	stamp_header(want, id, offset);
	for (uint32_t i = 0; i < len; i += sizeof(a)) {
		memcpy(&a, got + i, sizeof(a));
		memcpy(&b, want + i, sizeof(b));
		bad += a != b;
	}
	return bad;
}

static uint64_t *block_order(const struct options *o, int id, uint64_t nblocks)
{
	uint64_t *order = malloc(nblocks * sizeof(*order));
	uint64_t state = o->seed * 1000003u + (uint64_t)id;

	if (!order)
		return NULL;
	for (uint64_t i = 0; i < nblocks; i++)
		order[i] = i;
	if (o->random) {
		for (uint64_t i = nblocks; i > 1; i--) {
			uint64_t j = manylab_splitmix(&state) % i;
			uint64_t t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
	}
	return order;
}

static void file_name(char *out, size_t len, const struct options *o, int id)
{
	snprintf(out, len, "%s/pwriter.%d", o->dir, id);
}

static void write_phase(const struct options *o, int id, int fd, const uint64_t *order,
			uint64_t nblocks, uint8_t *buf, struct phase_report *rep)
{
	rep->start = manylab_now();
	for (uint64_t i = 0; i < nblocks; i++) {
		uint64_t offset = order[i] * o->block;

		stamp_header(buf, id, offset);
		if (pwrite(fd, buf, o->block, (off_t)offset) != (ssize_t)o->block) {
			rep->error = errno ? errno : EIO;
			break;
		}
		rep->bytes += o->block;
	}
	if (o->do_fsync && !rep->error && fsync(fd) != 0)
		rep->error = errno;
	rep->end = manylab_now();
}

static void read_phase(const struct options *o, int id, int fd, const uint64_t *order,
		       uint64_t nblocks, uint8_t *buf, uint8_t *want, struct phase_report *rep)
{
	rep->start = manylab_now();
	for (uint64_t i = 0; i < nblocks; i++) {
		uint64_t offset = order[i] * o->block;

		if (pread(fd, buf, o->block, (off_t)offset) != (ssize_t)o->block) {
			rep->error = errno ? errno : EIO;
			break;
		}
		rep->mismatches += count_mismatches(buf, want, o->block, id, offset);
		rep->bytes += o->block;
	}
	rep->end = manylab_now();
}

/* Shared between the parent and its children (MAP_SHARED); each word on its own line. */
struct gates {
	_Alignas(64) int phase;		/* 0 before, 1 writing, 2 reading: the parent sets it */
	_Alignas(64) int written;	/* children done with the write phase */
	_Alignas(64) int reported;	/* children whose report is in reports[] */
	_Alignas(64) struct proc_report reports[MAX_PROCS];
};

static void child_main(const struct options *o, int id, struct gates *g)
{
	struct proc_report rep;
	uint64_t nblocks = o->size / o->block;
	uint64_t *order = block_order(o, id, nblocks);
	uint8_t *buf = malloc(o->block), *want = malloc(o->block);
	char path[4096];
	int fd;

	memset(&rep, 0, sizeof(rep));
	if (buf && want) {
		fill_body(buf, o->block, id);
		memcpy(want, buf, o->block);
	}
	/* Created before the phase: 64-256 creations in one directory contend on its lock,
	 * a cost that the papers' 8 GB amortise and the lab's smaller files would not. */
	file_name(path, sizeof(path), o, id);
	fd = o->do_write ? open(path, O_RDWR | O_CREAT | O_TRUNC, 0644) : open(path, O_RDONLY);
	manylab_futex_wait_while(&g->phase, 0);
	if (fd < 0)
		rep.write.error = rep.read.error = errno;
	else if (!order || !buf || !want)
		rep.write.error = ENOMEM;
	else if (o->do_write)
		write_phase(o, id, fd, order, nblocks, buf, &rep.write);
	manylab_count_done(&g->written, o->procs);
	manylab_futex_wait_while(&g->phase, 1);
	if (o->do_read && !rep.write.error && !rep.read.error)
		read_phase(o, id, fd, order, nblocks, buf, want, &rep.read);
	if (fd >= 0)
		close(fd);
	if (!o->keep)
		unlink(path);
	g->reports[id] = rep;
	manylab_count_done(&g->reported, o->procs);
	_exit(0);
}

struct phase_summary {
	double seconds;
	double aggregate_mib_s;
	uint64_t bytes;
	uint64_t mismatches;
	int errors;
};

static struct phase_summary summarise(const struct phase_report *reps[], int n)
{
	struct phase_summary s = { 0 };
	double first = 0, last = 0;

	for (int i = 0; i < n; i++) {
		const struct phase_report *r = reps[i];

		if (i == 0 || r->start < first)
			first = r->start;
		if (i == 0 || r->end > last)
			last = r->end;
		s.bytes += r->bytes;
		s.mismatches += r->mismatches;
		s.errors += r->error != 0;
	}
	s.seconds = last - first;
	s.aggregate_mib_s = s.seconds > 0 ? (double)s.bytes / (1 << 20) / s.seconds : 0;
	return s;
}

static void print_phase(const char *name, struct phase_summary s, const struct phase_report *reps[],
			int n)
{
	printf(",\"%s\":{\"seconds\":%.6f,\"bytes\":%" PRIu64 ",\"aggregate_mib_s\":%.3f,"
	       "\"errors\":%d,\"mismatches\":%" PRIu64 ",\"per_proc_mib_s\":[",
	       name, s.seconds, s.bytes, s.aggregate_mib_s, s.errors, s.mismatches);
	for (int i = 0; i < n; i++) {
		double secs = reps[i]->end - reps[i]->start;
		double rate = secs > 0 ? (double)reps[i]->bytes / (1 << 20) / secs : 0;

		printf("%s%.3f", i ? "," : "", rate);
	}
	printf("]}");
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "procs", required_argument, NULL, 'n' }, { "size", required_argument, NULL, 's' },
		{ "block", required_argument, NULL, 'b' }, { "pattern", required_argument, NULL, 'p' },
		{ "dir", required_argument, NULL, 'd' },   { "fsync", no_argument, NULL, 'f' },
		{ "read", no_argument, NULL, 'r' },        { "read-only", no_argument, NULL, 'R' },
		{ "keep", no_argument, NULL, 'k' },        { "seed", required_argument, NULL, 'S' },
		{ "pin", no_argument, NULL, 'P' },         { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t value;
	int c;

	*o = (struct options){ .procs = 1, .size = 8 << 20, .block = 4096, .do_write = 1,
			       .seed = 1, .dir = "/tmp" };
	while ((c = getopt_long(argc, argv, "n:s:b:p:d:frRkS:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': o->procs = atoi(optarg); break;
		case 's':
			if (manylab_parse_size(optarg, &o->size))
				goto bad;
			break;
		case 'b':
			if (manylab_parse_size(optarg, &value) || value < 16 || value % 8 ||
			    value > (1 << 26))
				goto bad;
			o->block = (uint32_t)value;
			break;
		case 'p':
			if (strcmp(optarg, "seq") && strcmp(optarg, "rand"))
				goto bad;
			o->random = !strcmp(optarg, "rand");
			break;
		case 'd': o->dir = optarg; break;
		case 'f': o->do_fsync = 1; break;
		case 'r': o->do_read = 1; break;
		case 'R': o->do_read = 1; o->do_write = 0; o->keep = 1; break;
		case 'k': o->keep = 1; break;
		case 'S': o->seed = strtoull(optarg, NULL, 10); break;
		case 'P': o->pin = 1; break;
		case 'h': usage(stdout); exit(0);
		default: goto bad;
		}
	}
	if (optind != argc || o->procs < 1 || o->procs > MAX_PROCS || o->size < o->block ||
	    o->size % o->block)
		goto bad;
	return 0;
bad:
	return manylab_bad_args(usage, "pwriter: bad arguments (size must be a multiple of block, "
				"block a multiple of 8 from 16, 1 <= procs <= %d)\n", MAX_PROCS);
}

int main(int argc, char **argv)
{
	const struct phase_report *wr[MAX_PROCS], *rd[MAX_PROCS];
	struct options o;
	struct gates *g;
	int failed = 0;

	if (parse_options(argc, argv, &o))
		return 2;
	mkdir(o.dir, 0755);
	g = mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g == MAP_FAILED) {
		perror("pwriter: mmap");
		return 1;
	}
	for (int i = 0; i < o.procs; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("pwriter: fork");
			return 1;
		}
		if (pid == 0) {
			if (o.pin)
				manylab_pin_self(i);
			child_main(&o, i, g);
		}
	}

	manylab_roi_begin(0);
	manylab_roi_phase(1);
	manylab_futex_set(&g->phase, 1);
	manylab_wait_count(&g->written, o.procs);
	manylab_roi_phase(2);
	manylab_futex_set(&g->phase, 2);
	manylab_wait_count(&g->reported, o.procs);
	manylab_roi_end(0);
	for (int i = 0; i < o.procs; i++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
		wr[i] = &g->reports[i].write;
		rd[i] = &g->reports[i].read;
	}

	struct phase_summary ws = summarise(wr, o.procs), rs = summarise(rd, o.procs);
	int verified = o.do_read && !rs.mismatches && !rs.errors;

	failed |= ws.errors || rs.errors || rs.mismatches;
	printf("MANYLAB-RESULT {\"workload\":\"pwriter\",\"procs\":%d,\"size\":%" PRIu64
	       ",\"block\":%u,\"pattern\":\"%s\",\"fsync\":%s,\"pin\":%s,\"dir\":\"%s\"",
	       o.procs, o.size, o.block, o.random ? "rand" : "seq", o.do_fsync ? "true" : "false",
	       o.pin ? "true" : "false", o.dir);
	if (o.do_write)
		print_phase("write", ws, wr, o.procs);
	if (o.do_read)
		print_phase("read", rs, rd, o.procs);
	printf(",\"verified\":%s,\"ok\":%s}\n", o.do_read ? (verified ? "true" : "false") : "null",
	       failed ? "false" : "true");
	fflush(stdout);
	return failed ? 1 : 0;
}
