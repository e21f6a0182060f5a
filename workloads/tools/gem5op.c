// SPDX-License-Identifier: MIT
/*
 * gem5op: the guest side of the lab's gem5 tier.
 *
 *   gem5op readfile        copy the host file gem5 was given (the run's script) to stdout
 *   gem5op exit [CODE]     end the simulation (gem5 sees the guest's exit status)
 *   gem5op checkpoint      ask gem5 for a checkpoint here; a restore continues after it
 *   gem5op resetstats | dumpstats | workbegin | workend
 *
 * Under QEMU or on real hardware the instructions fault: the tool refuses to run unless
 * MANYLAB_GEM5=1 (set by the guest's init when booted with manylab.backend=gem5).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "manylab_gem5.h"

#define CHUNK 4096

static uint64_t read_file(char *buf, uint64_t len, uint64_t offset)
{
#if defined(__x86_64__)
	register uint64_t rdi_ __asm__("rdi") = (uint64_t)buf;
	register uint64_t rsi_ __asm__("rsi") = len;
	register uint64_t rdx_ __asm__("rdx") = offset;
	uint64_t rax_;

	__asm__ __volatile__(".byte 0x0f, 0x04\n\t.word " MANYLAB_GEM5_STR(M5_READ_FILE)
			     : "=a"(rax_), "+r"(rdi_), "+r"(rsi_), "+r"(rdx_)
			     :
			     : "memory");
	return rax_;
#elif defined(__aarch64__)
	register uint64_t x0_ __asm__("x0") = (uint64_t)buf;
	register uint64_t x1_ __asm__("x1") = len;
	register uint64_t x2_ __asm__("x2") = offset;

	__asm__ __volatile__(".inst 0xff000110 | (" MANYLAB_GEM5_STR(M5_READ_FILE) " << 16)"
			     : "+r"(x0_), "+r"(x1_), "+r"(x2_)
			     :
			     : "memory");
	return x0_;
#else
	(void)buf;
	(void)len;
	(void)offset;
	return 0;
#endif
}

static int cat_readfile(void)
{
	static char buf[CHUNK];
	uint64_t offset = 0;

	for (;;) {
		/* gem5 copies through the guest's page tables: the buffer must be mapped. */
		memset(buf, 0, sizeof(buf));
		uint64_t got = read_file(buf, sizeof(buf), offset);

		if (got == 0)
			return 0;
		if (got > sizeof(buf) || fwrite(buf, 1, got, stdout) != got)
			return 1;
		offset += got;
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: gem5op readfile | exit [CODE] | checkpoint | resetstats | "
			"dumpstats | workbegin | workend\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help")) {
		usage();
		return argc < 2 ? 2 : 0;
	}
	if (!manylab_gem5_enabled()) {
		fprintf(stderr, "gem5op: not under gem5 (MANYLAB_GEM5 is not 1); refusing to "
				"execute gem5 pseudo-instructions\n");
		return 2;
	}
	const char *op = argv[1];

	if (!strcmp(op, "readfile"))
		return cat_readfile();
	if (!strcmp(op, "exit")) {
		fflush(NULL);
		manylab_gem5_op(M5_EXIT, 0, 0);
		return argc > 2 ? atoi(argv[2]) : 0;
	}
	if (!strcmp(op, "checkpoint")) {
		fflush(NULL);
		manylab_gem5_op(M5_CHECKPOINT, 0, 0);
	} else if (!strcmp(op, "resetstats"))
		manylab_gem5_op(M5_RESET_STATS, 0, 0);
	else if (!strcmp(op, "dumpstats"))
		manylab_gem5_op(M5_DUMP_STATS, 0, 0);
	else if (!strcmp(op, "workbegin"))
		manylab_gem5_op(M5_WORK_BEGIN, 0, 0);
	else if (!strcmp(op, "workend"))
		manylab_gem5_op(M5_WORK_END, 0, 0);
	else {
		usage();
		return 2;
	}
	return 0;
}
