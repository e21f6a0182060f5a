/* SPDX-License-Identifier: MIT */
/*
 * Region-of-interest markers for the manylab QEMU plugin.
 *
 * Each marker is one architectural no-op whose immediate carries an opcode and an argument:
 *   x86-64: nopl 0x4d4cOOAA(%rax,%rax,1)  = 0f 1f 84 00 AA OO 4c 4d
 *   arm64:  movz xzr, #0xOOAA, lsl #48     = 0xd2e00000 | (0xOOAA << 5) | 31
 * OO is the opcode (1 begin, 2 end, 3 phase, 4 end of run, 5 span begin, 6 span end) and AA
 * its argument (region, phase or span number; 0 for end of run, which the guest's init gives
 * through the run-end tool).
 * The plugin recognises the bytes at translation time; without the plugin they cost one cycle.
 *
 * Under gem5 (the guest's init exports MANYLAB_GEM5=1 when the kernel command line holds
 * manylab.backend=gem5) region 0's begin and end also issue gem5's work-begin/work-end
 * pseudo-instructions (manylab_gem5.h), which the lab's gem5 scripts turn into a switch to the
 * detailed CPU and a statistics reset and dump; a phase marker issues work-begin with work id
 * MANYLAB_GEM5_PHASE_WORK_ID + k, whose tick the gem5 scripts record as phase k's start. The
 * check is one load outside the marker.
 * Outside them too, region 0's edges snapshot kernel counters (manylab_kstats.h).
 */
#ifndef MANYLAB_ROI_H
#define MANYLAB_ROI_H

#define MANYLAB_ROI_OP_BEGIN 1
#define MANYLAB_ROI_OP_END 2
#define MANYLAB_ROI_OP_PHASE 3
#define MANYLAB_ROI_OP_RUN_END 4
#define MANYLAB_ROI_OP_SPAN_BEGIN 5
#define MANYLAB_ROI_OP_SPAN_END 6

#include "manylab_gem5.h"
#include "manylab_kstats.h"

#define MANYLAB_ROI_STR2(x) #x
#define MANYLAB_ROI_STR(x) MANYLAB_ROI_STR2(x)

#if defined(__x86_64__)
#define MANYLAB_ROI_MARK(op, arg)                                                    \
	__asm__ __volatile__(".byte 0x0f, 0x1f, 0x84, 0x00, " MANYLAB_ROI_STR(arg) ", " \
			     MANYLAB_ROI_STR(op) ", 0x4c, 0x4d" ::: "memory")
#elif defined(__aarch64__)
#define MANYLAB_ROI_MARK(op, arg)                                          \
	__asm__ __volatile__("movz xzr, #((" MANYLAB_ROI_STR(op) " << 8) | " \
			     MANYLAB_ROI_STR(arg) "), lsl #48" ::: "memory")
#else
#define MANYLAB_ROI_MARK(op, arg) do { } while (0)
#endif

/* Begin and end of region n (0..255); region 0 is "roi". */
#define manylab_roi_begin(n)                              \
	do {                                              \
		if ((n) == 0)                             \
			manylab_kstats("roi_begin");      \
		if ((n) == 0 && manylab_gem5_enabled())   \
			manylab_gem5_op(M5_WORK_BEGIN, 0, 0); \
		MANYLAB_ROI_MARK(MANYLAB_ROI_OP_BEGIN, n);\
	} while (0)
#define manylab_roi_end(n)                              \
	do {                                            \
		MANYLAB_ROI_MARK(MANYLAB_ROI_OP_END, n); \
		if ((n) == 0 && manylab_gem5_enabled()) \
			manylab_gem5_op(M5_WORK_END, 0, 0); \
		if ((n) == 0)                           \
			manylab_kstats("roi_end");      \
	} while (0)
/* Start of named phase n (0..255) inside the current region. */
#define manylab_roi_phase(n)                                                      \
	do {                                                                      \
		if (manylab_gem5_enabled())                                       \
			manylab_gem5_op(M5_WORK_BEGIN,                            \
					MANYLAB_GEM5_PHASE_WORK_ID + (n), 0);     \
		MANYLAB_ROI_MARK(MANYLAB_ROI_OP_PHASE, n);                        \
	} while (0)

/* A marker whose number is known only at run time, 0..16 (others: no marker). */
#define MANYLAB_ROI_MARK_AT(op, k)                     \
	do {                                           \
		switch (k) {                           \
		case 0: MANYLAB_ROI_MARK(op, 0); break;   \
		case 1: MANYLAB_ROI_MARK(op, 1); break;   \
		case 2: MANYLAB_ROI_MARK(op, 2); break;   \
		case 3: MANYLAB_ROI_MARK(op, 3); break;   \
		case 4: MANYLAB_ROI_MARK(op, 4); break;   \
		case 5: MANYLAB_ROI_MARK(op, 5); break;   \
		case 6: MANYLAB_ROI_MARK(op, 6); break;   \
		case 7: MANYLAB_ROI_MARK(op, 7); break;   \
		case 8: MANYLAB_ROI_MARK(op, 8); break;   \
		case 9: MANYLAB_ROI_MARK(op, 9); break;   \
		case 10: MANYLAB_ROI_MARK(op, 10); break; \
		case 11: MANYLAB_ROI_MARK(op, 11); break; \
		case 12: MANYLAB_ROI_MARK(op, 12); break; \
		case 13: MANYLAB_ROI_MARK(op, 13); break; \
		case 14: MANYLAB_ROI_MARK(op, 14); break; \
		case 15: MANYLAB_ROI_MARK(op, 15); break; \
		case 16: MANYLAB_ROI_MARK(op, 16); break; \
		default: break;                        \
		}                                      \
	} while (0)

/* Phase k, k known only at run time (0..16). */
static inline void manylab_roi_phase_at(int k)
{
	if (manylab_gem5_enabled() && k >= 0 && k <= 16)
		manylab_gem5_op(M5_WORK_BEGIN, MANYLAB_GEM5_PHASE_WORK_ID + k, 0);
	MANYLAB_ROI_MARK_AT(MANYLAB_ROI_OP_PHASE, k);
}

/*
 * A span: the modelled time of the executing vCPU between begin and end of span n (0..255),
 * summed per span number in every open region (plugin README "Spans"), e.g. one request of a
 * task. A vCPU holds one open span per number; a task that migrates inside one loses it (the
 * plugin counts it lost), as do two tasks interleaving one number on a vCPU. gem5 runs them as
 * no-ops.
 */
#define manylab_span_begin(n) MANYLAB_ROI_MARK(MANYLAB_ROI_OP_SPAN_BEGIN, n)
#define manylab_span_end(n) MANYLAB_ROI_MARK(MANYLAB_ROI_OP_SPAN_END, n)

/* The same for a span number known only at run time (0..16). */
static inline void manylab_span_begin_at(int k)
{
	MANYLAB_ROI_MARK_AT(MANYLAB_ROI_OP_SPAN_BEGIN, k);
}

static inline void manylab_span_end_at(int k)
{
	MANYLAB_ROI_MARK_AT(MANYLAB_ROI_OP_SPAN_END, k);
}

#endif
