/* SPDX-License-Identifier: MIT */
/*
 * Helpers every lab workload uses: one rule for sizes and a monotonic clock.
 *
 * A size is decimal digits with an optional K, M or G suffix (either case; powers of 1024)
 * and nothing after it: "4096", "64K", "8m", "2G". Signs, fractions, spaces, other suffixes
 * and values that overflow 64 bits are errors.
 */
#ifndef MANYLAB_UTIL_H
#define MANYLAB_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

static inline double manylab_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
