/* SPDX-License-Identifier: MIT */
/*
 * gem5 pseudo-instructions ("m5 ops") for guests that run under gem5.
 *
 * gem5 decodes them by opcode: on x86-64 the two bytes 0f 04 followed by a 16-bit function
 * number, arguments in rdi and rsi, result in rax; on arm64 the word 0xff000110 with the
 * function number in bits 16-23. Elsewhere (QEMU, real hardware) they fault, so callers check
 * manylab_gem5_enabled() first.
 */
#ifndef MANYLAB_GEM5_H
#define MANYLAB_GEM5_H

#include <stdint.h>
#include <stdlib.h>

/* gem5's function numbers (include/gem5/asm/generic/m5ops.h in gem5). */
#define M5_EXIT 0x21
#define M5_RESET_STATS 0x40
#define M5_DUMP_STATS 0x41
#define M5_CHECKPOINT 0x43
#define M5_READ_FILE 0x50
#define M5_WORK_BEGIN 0x5a
#define M5_WORK_END 0x5b

/* Work ids of work-begin: 0 opens the region of interest, this + k starts its phase k. */
#define MANYLAB_GEM5_PHASE_WORK_ID 0x100

#define MANYLAB_GEM5_STR2(x) #x
#define MANYLAB_GEM5_STR(x) MANYLAB_GEM5_STR2(x)

static inline int manylab_gem5_enabled(void)
{
	static int enabled = -1;

	if (enabled < 0) {
		const char *value = getenv("MANYLAB_GEM5");

		enabled = value && value[0] == '1';
	}
	return enabled;
}

#if defined(__x86_64__)
#define manylab_gem5_op(func, a, b)                                                     \
	({                                                                              \
		register uint64_t rdi_ __asm__("rdi") = (uint64_t)(a);                  \
		register uint64_t rsi_ __asm__("rsi") = (uint64_t)(b);                  \
		uint64_t rax_;                                                          \
		__asm__ __volatile__(".byte 0x0f, 0x04\n\t.word " MANYLAB_GEM5_STR(func) \
				     : "=a"(rax_), "+r"(rdi_), "+r"(rsi_)               \
				     :                                                  \
				     : "memory");                                       \
		rax_;                                                                   \
	})
#elif defined(__aarch64__)
#define manylab_gem5_op(func, a, b)                                                   \
	({                                                                            \
		register uint64_t x0_ __asm__("x0") = (uint64_t)(a);                  \
		register uint64_t x1_ __asm__("x1") = (uint64_t)(b);                  \
		__asm__ __volatile__(".inst 0xff000110 | (" MANYLAB_GEM5_STR(func)     \
				     " << 16)"                                        \
				     : "+r"(x0_), "+r"(x1_)                            \
				     :                                                \
				     : "memory");                                     \
		x0_;                                                                  \
	})
#else
#define manylab_gem5_op(func, a, b) ((uint64_t)0)
#endif

#endif
