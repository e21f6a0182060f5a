/* SPDX-License-Identifier: MIT */
/*
 * Helpers every lab workload uses: one rule for sizes, one for whole numbers, names, the
 * getopt loop and bad arguments, whole reads and writes, dropping a file from the page cache,
 * splitmix64 random numbers and a monotonic clock.
 *
 * A size is decimal digits with an optional K, M or G suffix (either case; powers of 1024)
 * and nothing after it: "4096", "64K", "8m", "2G". Signs, fractions, spaces, other suffixes
 * and values that overflow 64 bits are errors.
 */
#ifndef MANYLAB_UTIL_H
#define MANYLAB_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* 0 and *out set on a valid size, -1 otherwise (*out untouched). */
static inline int manylab_parse_size(const char *text, uint64_t *out)
{
	uint64_t value = 0;
	const char *p = text;
	unsigned int shift = 0;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (value > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -1;
		value = value * 10 + (uint64_t)(*p - '0');
	}
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	default: break;
	}
	if (*p != '\0' || (shift && value > (UINT64_MAX >> shift)))
		return -1;
	*out = value << shift;
	return 0;
}

/* The size given to option flag; anything else exits 2 naming the program and the option. */
static inline uint64_t manylab_size_arg(const char *prog, const char *flag, const char *text)
{
	uint64_t value;

	if (manylab_parse_size(text, &value)) {
		fprintf(stderr, "%s: bad size '%s' for %s (digits with an optional K/M/G suffix)\n",
			prog, text, flag);
		exit(2);
	}
	return value;
}

/* 0 and *out set when text is a whole decimal number (strtol's syntax) in [min, max], else -1. */
static inline int manylab_parse_whole(const char *text, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* The index of text among names[0..n-1], or -1. */
static inline int manylab_name_index(const char *text, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(text, names[i]))
			return i;
	return -1;
}

/* The index of text among names[0..n-1]; another text exits 2 after the usage on stderr. */
static inline int manylab_name_arg(const char *text, const char *const *names, int n,
				   void (*usage)(FILE *out))
{
	int i = manylab_name_index(text, names, n);

	if (i < 0) {
		usage(stderr);
		exit(2);
	}
	return i;
}

/*
 * The command line, by getopt_long with optstring and longopts: -h or --help (given as 'h')
 * prints the usage on stdout and exits 0; any other option goes to take(option, its argument),
 * which returns 0 when it took it; an unknown option, or one take refuses, prints the usage on
 * stderr and exits 2. Operands are left for the caller, from argv[optind].
 */
static inline void manylab_getopt(int argc, char **argv, const char *optstring,
				  const struct option *longopts, void (*usage)(FILE *out),
				  int (*take)(int option, char *arg))
{
	int c;

	while ((c = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == '?' || take(c, optarg)) {
			usage(stderr);
			exit(2);
		}
	}
}

/* Arguments the program refuses: the message (a printf format) and the usage on stderr; -1. */
static inline int __attribute__((format(printf, 2, 3)))
manylab_bad_args(void (*usage)(FILE *out), const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	vfprintf(stderr, format, ap);
	va_end(ap);
	usage(stderr);
	return -1;
}

/* Reads up to len bytes from fd (through signals) until end of file or an error; how many. */
static inline size_t manylab_read_upto(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* 0 when all len bytes were read from fd, -1 at end of file or on an error. */
static inline int manylab_read_all(int fd, void *buf, size_t len)
{
	return manylab_read_upto(fd, buf, len) == len ? 0 : -1;
}

/* 0 when all len bytes were written to fd (through signals), -1 on an error. */
static inline int manylab_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes fd's file back (fsync) and drops its pages from the page cache, so that the next
 * access reads the disk; -1 with errno set when either fails. */
static inline int manylab_drop_cached(int fd)
{
	if (fsync(fd))
		return -1;
	errno = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	return errno ? -1 : 0;
}

/* The next number of the splitmix64 stream whose state is *state. */
static inline uint64_t manylab_splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline double manylab_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
