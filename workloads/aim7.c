// SPDX-License-Identifier: MIT
/*
 * aim7: an AIM7-multiuser-like job mix (manylab, LDU measurements, issue #31).
 *
 * As AIM Suite VII's multiuser run ("multitask" with the workfile of the shared
 * multiuser mix) does, N "users" (tasks) are forked before the measurement; each
 * user is a process that runs its list of jobs one after another and exits. A
 * user's jobs are the workfile's 53 tests, each as many times as its weight's share
 * of the nominal load (--jobs, AIM7's LOADNUM, 100: 97 jobs after AIM7's rounding),
 * in an order drawn without replacement from a random generator seeded by (--seed,
 * user index). The tests run in the user process itself except where AIM7's fork
 * (fork_test, exec_test, shell_rtns_1): compute loops (add/mul/div of five types,
 * linear algebra, strings, sorts, series), memory (brk/sbrk, page faults, malloc
 * churn, a 1 MB sieve), files (create/close, links, directory reads and searches,
 * sequential/random reads and writes of files, O_SYNC ones), IPC (pipe, UNIX stream
 * and datagram socket pairs, loopback TCP and UDP, SysV shared memory with a
 * semaphore, signals to itself) and processes (fork+exit, fork+exec of a "#!/bin/sh"
 * script, system() of a shell script running ls -l).
 *
 * Each test's size is AIM7's (its loop count, or 1 KB blocks of a file of
 * 1 MB + 10 MB / users) times --scale: with scale < 1 a job's count is rounded
 * up or down at random (seeded), so each count keeps its expected value and the
 * mix keeps AIM7's proportions. A job whose count rounds to 0 does nothing.
 *
 * The users start together on one signal to the process group (AIM7's "gun"); the
 * run is ROI region 0, from the signal to the last user's exit. Results (jobs,
 * per-category counts, each user's end time) come back through a pipe, not shared
 * memory: a MAP_SHARED region would be one file mapping every fork duplicates.
 *   jobs_per_min = 60 * jobs_per_user * users / elapsed_s
 * (AIM7's formula; AIM7's elapsed time also holds a 10 s sleep before its start
 * signal, this one does not). JTI = (1 - std/mean) * 100 of the users' times.
 * Prints one line "MANYLAB-RESULT {json}"; exit status 1 if any job failed.
 *
 * Build: gcc -static -O2 -Iworkloads/include -o aim7 aim7.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/times.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "manylab_procs.h"
#include "manylab_roi.h"
#include "manylab_util.h"

#define MAX_USERS 65536
#define PROG "aim7"
#define MAX_DIRS 1024
#define BLOCK 1024		/* AIM7's disk block (NBUFSIZE) */
#define FILE_KB 1024		/* AIM7 workfile FILESIZE: 1M */
#define POOL_KB 10240		/* AIM7 workfile POOLSIZE: 10M */
#define MSG_MAX 2048		/* largest pipe/socket message */
#define FAKEH_STAT 57		/* files disk_src stats per pass */
#define FAKEH_CREAT 43		/* files it creates and removes per pass */
#define LINKS 8			/* a file and 7 more links (POSIX LINK_MAX minimum) */

enum cat { C_COMPUTE, C_MEMORY, C_FILE, C_IPC, C_PROCESS, C_NR };
static const char *cat_name[C_NR] = { "compute", "memory", "file", "ipc", "process" };

struct user;
typedef int (*test_fn)(struct user *u, uint64_t n);

enum count_kind { FIXED, DISK, DISK_HALF };

struct test {
	const char *name;
	int weight;		/* the workfile's weight */
	enum cat cat;
	enum count_kind kind;
	uint64_t count;		/* AIM7's iterations per job (FIXED) */
	test_fn fn;
};

/* what a user sends back through the results pipe (one atomic write) */
struct urec {
	int32_t user;
	int32_t failed;
	int32_t fail_test;
	int32_t fail_errno;
	double t_end;
	uint64_t jobs;
	uint64_t cjobs[C_NR];
	uint64_t forks, execs, shells;
	uint64_t iters[C_NR];
};

struct user {
	int index;
	uint64_t rng;
	int dj;			/* next data directory (AIM7: dkarr[dj % numdir]) */
	unsigned tmpseq;
	pid_t pid;
	struct urec rec;
};

static struct {
	int users;
	int users_per_cpu;
	int jobs;
	double scale;
	uint64_t seed;
	int dirs;
	const char *dir;
	int list;
	int keep;
} o = { .users = 0, .users_per_cpu = 0, .jobs = 100, .scale = 1.0, .seed = 1,
	.dirs = 0, .dir = "/tmp", .list = 0, .keep = 0 };

static char base[4096];		/* <dir>/aim7.<pid>: everything this run creates */
static char true_path[4200];	/* "#!/bin/sh" and nothing else (AIM7's ./true) */
static char shell_cmd[4300];	/* the script shell_rtns_1 runs, with the user load */
static char passwd_path[4200];	/* stands in for /etc/passwd and /etc/group lookups */
static uint64_t disk_blocks;	/* AIM7's disk_iteration_count: 1 KB blocks per file */
static uint64_t common_blocks;	/* size of each directory's tmpa.common (scaled) */
static volatile uint64_t sink;
static volatile int vone = 1;	/* loop inputs the compiler cannot fold */
static char nbuf[BLOCK];

/* ---- random numbers: splitmix64, one stream per user ---- */

static uint64_t rnd(struct user *u)
{
	return manylab_splitmix(&u->rng);
}

static double rnd01(struct user *u)
{
	return (double)(rnd(u) >> 11) * (1.0 / 9007199254740992.0);
}

/* count * scale, rounded down or up at random so that its mean is count * scale */
static uint64_t scaled(struct user *u, uint64_t count)
{
	double want = (double)count * o.scale;
	uint64_t whole = (uint64_t)want;

	if (rnd01(u) < want - (double)whole)
		whole++;
	return whole;
}

static const char *data_dir(struct user *u, char *out, size_t len)
{
	snprintf(out, len, "%s/aim7_%03d", base, u->dj % o.dirs);
	u->dj++;
	return out;
}

static void tmp_name(struct user *u, const char *dir, char *out, size_t len)
{
	snprintf(out, len, "%s/tmpb.%d.%u", dir, (int)u->pid, u->tmpseq++);
}

/* ---- compute tests (user mode only) ---- */

#define BARRIER(x) __asm__ __volatile__("" : "+r"(x))

/* 12 dependent operations per loop, as AIM7's arithmetic tests; integers wrap unsigned */
#define INT_TEST(fname, T, W, OP)                                                    \
	static int fname(struct user *u, uint64_t n)                                 \
	{                                                                            \
		T a = (T)(3 * vone), b = (T)(5 * vone), c = (T)(7 * vone);           \
		(void)u;                                                             \
		for (uint64_t i = 0; i < n; i++) {                                   \
			OP(a, b, W); OP(b, c, W); OP(c, a, W); OP(a, b, W);          \
			OP(b, c, W); OP(c, a, W); OP(a, b, W); OP(b, c, W);          \
			OP(c, a, W); OP(a, b, W); OP(b, c, W); OP(c, a, W);          \
			BARRIER(a);                                                  \
		}                                                                    \
		sink += (uint64_t)a + b + c;                                         \
		return 0;                                                            \
	}
#define IADD(x, y, W) x = (__typeof__(x))((W)x + (W)y)
#define IMUL(x, y, W) x = (__typeof__(x))((W)x * ((W)y | 1))
#define IDIV(x, y, W) x = (__typeof__(x))((W)x / (((W)y & 7) + 1) + (W)0x2345)

#define FP_TEST(fname, T, OP)                                                        \
	static int fname(struct user *u, uint64_t n)                                 \
	{                                                                            \
		T a = (T)(0.75 * vone), b = (T)(1.25 * vone), c = (T)(-0.5 * vone);  \
		(void)u;                                                             \
		for (uint64_t i = 0; i < n; i++) {                                   \
			OP(a, b); OP(b, c); OP(c, a); OP(a, b); OP(b, c); OP(c, a);  \
			OP(a, b); OP(b, c); OP(c, a); OP(a, b); OP(b, c); OP(c, a);  \
		}                                                                    \
		sink += (uint64_t)(int64_t)(a + b + c);                              \
		return 0;                                                            \
	}
/* bounded: x+y, y-(x+y) rotates with period 6; x*y and x/y stay near 1 */
#define FADD(x, y) x = x + y, y = y - x
#define FMUL(x, y) x = x * (y * y > 4 ? 0.5 : 1.5) + 0.125
#define FDIV(x, y) x = x / (y * y > 4 ? 2.5 : 0.75) + 0.25

INT_TEST(add_int, unsigned int, unsigned int, IADD)
INT_TEST(add_long, unsigned long, unsigned long, IADD)
INT_TEST(add_short, unsigned short, unsigned int, IADD)
INT_TEST(mul_int, unsigned int, unsigned int, IMUL)
INT_TEST(mul_long, unsigned long, unsigned long, IMUL)
INT_TEST(mul_short, unsigned short, unsigned int, IMUL)
INT_TEST(div_int, unsigned int, unsigned int, IDIV)
INT_TEST(div_long, unsigned long, unsigned long, IDIV)
INT_TEST(div_short, unsigned short, unsigned int, IDIV)
FP_TEST(add_double, double, FADD)
FP_TEST(add_float, float, FADD)
FP_TEST(mul_double, double, FMUL)
FP_TEST(mul_float, float, FMUL)
FP_TEST(div_double, double, FDIV)
FP_TEST(div_float, float, FDIV)

/* one iteration: solve a 100 x 100 linear system by Gaussian elimination */
#define AN 100
static double mat[AN][AN + 1];

static int array_rtns(struct user *u, uint64_t n)
{
	(void)u;
	for (uint64_t it = 0; it < n; it++) {
		for (int i = 0; i < AN; i++)
			for (int j = 0; j <= AN; j++)
				mat[i][j] = (i == j ? AN : 0) + 1.0 / (1 + i + j) * vone;
		for (int k = 0; k < AN; k++)
			for (int i = k + 1; i < AN; i++) {
				double f = mat[i][k] / mat[k][k];

				for (int j = k; j <= AN; j++)
					mat[i][j] -= f * mat[k][j];
			}
		for (int i = AN - 1; i >= 0; i--) {
			double s = mat[i][AN];

			for (int j = i + 1; j < AN; j++)
				s -= mat[i][j] * mat[j][AN];
			mat[i][AN] = s / mat[i][i];
		}
		sink += (uint64_t)(mat[0][AN] * 1e6);
	}
	return 0;
}

/* one iteration: multiply and transpose 4 x 4 matrices */
static int matrix_rtns(struct user *u, uint64_t n)
{
	double a[4][4], b[4][4], c[4][4];

	(void)u;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++) {
			a[i][j] = (i + 1) * 0.5 * vone + j;
			b[i][j] = (i == j) + 0.01 * j;
		}
	for (uint64_t it = 0; it < n; it++) {
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++) {
				double s = 0;

				for (int k = 0; k < 4; k++)
					s += a[i][k] * b[k][j];
				c[i][j] = s;
			}
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++)
				a[i][j] = c[j][i] * 0.5;
	}
	sink += (uint64_t)(a[1][2] * 1e3);
	return 0;
}

static const int op_sizes[] = {
	1, 3, 5, 7, 9, 11, 33, 65, 129, 1024, 1025, 1023, 8192, 4096, 4095,
	11, 33, 65, 129, 1024,
};
#define NSIZES (sizeof(op_sizes) / sizeof(op_sizes[0]))

/* one iteration: memset, memchr, memcmp, memcpy and memmove of one size */
static int mem_rtns_2(struct user *u, uint64_t n)
{
	static char b1[8192 + 16], b2[8192 + 16];

	(void)u;
	for (uint64_t it = 0; it < n; it++) {
		size_t size = (size_t)op_sizes[it % NSIZES];
		size_t o1 = it % 8, o2 = (it / 8) % 8;
		char *p;

		memset(b1 + o1, 'A', size);
		memset(b2 + o2, 'A', size);
		b1[o1 + it % size] = 'Z';
		p = memchr(b1 + o1, 'Z', size);
		if (p && memcmp(b1 + o1, b2 + o2, size) > 0)
			memcpy(b1 + o1, b2 + o2, size);
		memmove(b2 + o1, b1 + o2, size);
	}
	sink += (uint64_t)b2[3];
	return 0;
}

/* one iteration: a round of system calls about the process and its environment; three
 * small-file lookups stand in for AIM7's getpwnam/getpwuid/getgrgid (static binaries have
 * no NSS) */
static int misc_rtns_1(struct user *u, uint64_t n)
{
	char buf[512];
	gid_t groups[64];
	struct tms tms;
	struct utsname name;

	(void)u;
	for (uint64_t it = 0; it < n; it++) {
		uint64_t acc = (uint64_t)clock();

		if (!getcwd(buf, sizeof(buf)))
			return -1;
		acc += getuid() + geteuid() + getgid() + getegid();
		acc += getenv("PATH") != NULL;
		if (getgroups(64, groups) < 0)
			return -1;
		acc += (uint64_t)getpid() + (uint64_t)getpgrp() + (uint64_t)getppid();
		acc += (uint64_t)times(&tms);
		acc += (uint64_t)isatty(STDIN_FILENO) + (ttyname(STDIN_FILENO) != NULL);
		if (uname(&name) < 0)
			return -1;
		for (int k = 0; k < 3; k++) {
			int fd = open(passwd_path, O_RDONLY | O_CLOEXEC);
			ssize_t got;

			if (fd < 0)
				return -1;
			got = read(fd, buf, sizeof(buf));
			close(fd);
			if (got <= 0)
				return -1;
			acc += (uint64_t)got;
		}
		sink += acc;
	}
	return 0;
}

/* square root and exponential by iteration (the image has no libm) */
static double my_sqrt(double x)
{
	double r = x > 1 ? x / 2 : 1;

	for (int i = 0; i < 20; i++)
		r = 0.5 * (r + x / r);
	return r;
}

static double my_exp(double x)
{
	double term = 1, sum = 1;

	for (int k = 1; k < 24; k++) {
		term *= x / k;
		sum += term;
	}
	return sum;
}

/* one iteration: a zero of a cubic by Newton-Raphson */
static int new_raph(struct user *u, uint64_t n)
{
	double acc = 0;

	(void)u;
	for (uint64_t it = 0; it < n; it++) {
		double c = 1.0 + (double)(it % 50) * 0.1 * vone, x = 2.0;

		for (int k = 0; k < 100; k++) {
			double f = x * x * x - c, d = 3 * x * x, nx = x - f / d;

			if ((nx - x) * (nx - x) < 1e-24)
				break;
			x = nx;
		}
		acc += x;
	}
	sink += (uint64_t)(acc * 1e3);
	return 0;
}

/* one iteration: a few number functions of varying arguments */
static int num_rtns_1(struct user *u, uint64_t n)
{
	double acc = 0;

	(void)u;
	for (uint64_t it = 0; it < n; it++) {
		double x = 0.5 + (double)(it % 97) * 0.25 * vone;

		acc += my_sqrt(x) + my_exp(-x / 8) + (double)((int64_t)(x * 3) % 7);
	}
	sink += (uint64_t)(acc * 1e3);
	return 0;
}

/* one iteration: partial sums of three series, 100 terms each */
static int series_1(struct user *u, uint64_t n)
{
	double acc = 0;

	(void)u;
	for (uint64_t it = 0; it < n; it++) {
		double s1 = 0, s2 = 0, s3 = 0, sign = 1;

		for (int k = 1; k <= 100; k++) {
			s1 += 1.0 / ((double)k * k);
			s2 += sign / (2.0 * k - 1);
			s3 += 1.0 / ((double)k * (k + vone));
			sign = -sign;
		}
		acc += s1 + s2 + s3;
	}
	sink += (uint64_t)(acc * 1e3);
	return 0;
}

/* one iteration: 100 sines and cosines by Taylor polynomials */
static int trig_rtns(struct user *u, uint64_t n)
{
	double acc = 0;

	(void)u;
	for (uint64_t it = 0; it < n; it++)
		for (int k = 0; k < 100; k++) {
			double x = -3.0 + 0.06 * k * vone, x2 = x * x;
			double s = x * (1 - x2 / 6 * (1 - x2 / 20 * (1 - x2 / 42 * (1 - x2 / 72))));
			double c = 1 - x2 / 2 * (1 - x2 / 12 * (1 - x2 / 30 * (1 - x2 / 56)));

			acc += s * s + c * c;
		}
	sink += (uint64_t)acc;
	return 0;
}

/* one iteration: string copies, appends, compares and searches over 100 strings */
static int string_rtns(struct user *u, uint64_t n)
{
	char s[100][64], t[128];
	uint64_t acc = 0;

	(void)u;
	for (int i = 0; i < 100; i++)
		snprintf(s[i], sizeof(s[i]), "string %03d of an average length test", i * vone);
	for (uint64_t it = 0; it < n; it++)
		for (int i = 0; i < 100; i++) {
			strcpy(t, s[i]);
			strcat(t, s[(i + 1) % 100] + 7);
			acc += (uint64_t)strlen(t) + (strcmp(t, s[i]) > 0);
			acc += strchr(t, 'v') != NULL;
			acc += strstr(t, "length") != NULL;
		}
	sink += acc;
	return 0;
}

#define SORTN 10000
static int sort_table[SORTN];

static int cmp_up(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int cmp_down(const void *a, const void *b)
{
	return *(const int *)b - *(const int *)a;
}

/* one iteration: qsort 10,000 ints up, down and up again, then 2,000 binary searches */
static int sort_rtns_1(struct user *u, uint64_t n)
{
	uint64_t found = 0;

	(void)u;
	for (int i = 0; i < SORTN; i++)
		sort_table[i] = (i * 7919) % SORTN;
	for (uint64_t it = 0; it < n; it++) {
		qsort(sort_table, SORTN, sizeof(int), cmp_up);
		qsort(sort_table, SORTN, sizeof(int), cmp_down);
		qsort(sort_table, SORTN, sizeof(int), cmp_up);
		for (int key = 0; key < 2 * SORTN; key += 10)
			found += bsearch(&key, sort_table, SORTN, sizeof(int), cmp_up) != NULL;
	}
	sink += found;
	return 0;
}

static int depth_then_jump(jmp_buf env, int depth)
{
	if (depth < 0)		/* never: depth 0 jumps */
		return 0;
	if (depth == 0)
		longjmp(env, 1);
	return depth_then_jump(env, depth - 1) + 1;
}

/* setjmp, ten nested calls, longjmp back: 1 when the jump arrived */
static int one_jump(void)
{
	jmp_buf env;

	if (setjmp(env) == 0) {
		sink += (uint64_t)depth_then_jump(env, 10 * vone);
		return 0;
	}
	return 1;
}

/* one iteration: one jump */
static int jmp_test(struct user *u, uint64_t n)
{
	uint64_t jumps = 0;

	(void)u;
	for (uint64_t it = 0; it < n; it++)
		jumps += (uint64_t)one_jump();
	return jumps == n ? 0 : -1;
}

/* one iteration: one memcpy of a size from a table of mostly small copies */
static int ram_copy(struct user *u, uint64_t n)
{
	static const int sizes[] = {
		1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 8, 9, 11, 17, 33, 63, 127, 256, 1001, 1200,
		1492, 1500, 1024, 2048, 3172, 4096, 8192, 512, 7, 7,
	};
	static char from[8192 + 16], to[8192 + 16];

	(void)u;
	for (uint64_t it = 0; it < n; it++) {
		size_t size = (size_t)sizes[it % (sizeof(sizes) / sizeof(sizes[0]))];

		memcpy(to + it % 8, from + (it / 8) % 8, size);
	}
	sink += (uint64_t)to[5];
	return 0;
}

/* ---- memory tests ---- */

/* one iteration: give back 64 KB of the break, take it again 4 KB at a time (touch: each
 * page written every 128 bytes, AIM7's page_test) */
static int brk_rounds(uint64_t n, int touch)
{
	void *old = sbrk(0);

	if (!n)
		return 0;
	if (sbrk(1024 * 1024) == (void *)-1)
		return -1;
	for (uint64_t it = 0; it < n; it++) {
		if (sbrk(-16 * 4096) == (void *)-1)
			return -1;
		for (int i = 0; i < 16; i++) {
			char *p = sbrk(4096);

			if (p == (void *)-1)
				return -1;
			if (touch)
				for (int j = 0; j < 4096; j += 128)
					p[j] = ' ';
		}
	}
	return brk(old);
}

static int brk_test(struct user *u, uint64_t n)
{
	(void)u;
	return brk_rounds(n, 0);
}

static int page_test(struct user *u, uint64_t n)
{
	(void)u;
	return brk_rounds(n, 1);
}

/* one iteration: allocate 100 strings and 200 blocks of mixed sizes, read them, free them */
static int mem_rtns_1(struct user *u, uint64_t n)
{
	static const char *str = "Hello, this is an average length string 1234";
	char *blocks[300];
	uint64_t acc = 0;

	(void)u;
	for (uint64_t it = 0; it < n; it++) {
		for (int i = 0, j = 0; i < 100; i++) {
			blocks[j] = malloc(strlen(str) + 1);
			if (!blocks[j])
				return -1;
			strcpy(blocks[j++], str);
			blocks[j] = malloc((size_t)op_sizes[i % NSIZES]);
			blocks[j + 1] = calloc((size_t)op_sizes[(i + 1) % NSIZES], 1);
			if (!blocks[j] || !blocks[j + 1])
				return -1;
			blocks[j][0] = (char)i;
			j += 2;
		}
		for (int i = 0; i < 300; i++)
			acc += (uint64_t)(unsigned char)blocks[i][0];
		for (int i = 297; i >= 0; i -= 3) {
			free(blocks[i]);
			free(blocks[i + 2]);
			free(blocks[i + 1]);
		}
	}
	sink += acc;
	return 0;
}

/* one iteration: a sieve of Eratosthenes over 1,000,000 numbers in a fresh allocation
 * (malloc maps it, the sieve faults its pages in, free unmaps it) */
static int sieve(struct user *u, uint64_t n)
{
	const size_t max = 1000000;
	uint64_t primes = 0;

	(void)u;
	for (uint64_t it = 0; it < n; it++) {
		char *table = malloc(max);

		if (!table)
			return -1;
		memset(table, 1, max);
		for (size_t i = 2; i * i < max; i++)
			if (table[i])
				for (size_t j = i * i; j < max; j += i)
					table[j] = 0;
		for (size_t i = 2; i < max; i++)
			primes += table[i];
		free(table);
	}
	sink += primes;
	return primes == n * 78498 ? 0 : -1;
}

/* ---- file tests ---- */

static int write_blocks(int fd, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (write(fd, nbuf, BLOCK) != BLOCK)
			return -1;
	return 0;
}

/* create a file of n blocks, reopen it (flags), unlink it, n random-block reads or writes */
static int disk_random(struct user *u, uint64_t n, int do_write, int sync)
{
	char dir[4200], path[4300];
	int fd;

	if (!n)
		return 0;
	tmp_name(u, data_dir(u, dir, sizeof(dir)), path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0777);
	if (fd < 0)
		return -1;
	if (write_blocks(fd, n)) {
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	fd = open(path, (do_write ? O_WRONLY : O_RDONLY) | (sync ? O_SYNC : 0) | O_CLOEXEC);
	unlink(path);
	if (fd < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		off_t off = (off_t)(rnd(u) % n) * BLOCK;
		ssize_t done = do_write ? pwrite(fd, nbuf, BLOCK, off) : pread(fd, nbuf, BLOCK, off);

		if (done != BLOCK) {
			close(fd);
			return -1;
		}
	}
	return close(fd);
}

static int disk_rr(struct user *u, uint64_t n)
{
	return disk_random(u, n, 0, 0);
}

static int disk_rw(struct user *u, uint64_t n)
{
	return disk_random(u, n, 1, 0);
}

static int sync_disk_rw(struct user *u, uint64_t n)
{
	return disk_random(u, n, 1, 1);
}

/* read n blocks of the directory's common file */
static int disk_rd(struct user *u, uint64_t n)
{
	char dir[4200], path[4300];
	int fd;

	if (!n)
		return 0;
	data_dir(u, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/tmpa.common", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		if (read(fd, nbuf, BLOCK) != BLOCK) {
			close(fd);
			return -1;
		}
	return close(fd);
}

/* write n blocks to a new file, unlinked at once (sync: created O_SYNC) */
static int disk_write(struct user *u, uint64_t n, int sync)
{
	char dir[4200], path[4300];
	int fd, rc;

	if (!n)
		return 0;
	tmp_name(u, data_dir(u, dir, sizeof(dir)), path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (sync ? O_SYNC : 0), 0777);
	if (fd < 0)
		return -1;
	unlink(path);
	rc = write_blocks(fd, n);
	close(fd);
	return rc;
}

static int disk_wrt(struct user *u, uint64_t n)
{
	return disk_write(u, n, 0);
}

static int sync_disk_wrt(struct user *u, uint64_t n)
{
	return disk_write(u, n, 1);
}

/* copy n blocks of the common file into a new (unlinked) file */
static int disk_copy(struct user *u, uint64_t n, int sync)
{
	char dir[4200], from[4300], to[4300];
	int in, out, rc = 0;

	if (!n)
		return 0;
	data_dir(u, dir, sizeof(dir));
	snprintf(from, sizeof(from), "%s/tmpa.common", dir);
	tmp_name(u, dir, to, sizeof(to));
	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (sync ? O_SYNC : 0), 0777);
	if (out < 0) {
		close(in);
		return -1;
	}
	unlink(to);
	for (uint64_t i = 0; i < n && !rc; i++)
		if (read(in, nbuf, BLOCK) != BLOCK || write(out, nbuf, BLOCK) != BLOCK)
			rc = -1;
	close(in);
	close(out);
	return rc;
}

static int disk_cp(struct user *u, uint64_t n)
{
	return disk_copy(u, n, 0);
}

static int sync_disk_cp(struct user *u, uint64_t n)
{
	return disk_copy(u, n, 1);
}

/* one iteration: a stat of one of 57 files in the directory's fakeh/ tree, or a create,
 * close and unlink of a new name there (43 of every 100), in a random order */
static int disk_src(struct user *u, uint64_t n)
{
	char dir[4200], path[4400];

	if (!n)
		return 0;
	data_dir(u, dir, sizeof(dir));
	for (uint64_t i = 0; i < n; i++) {
		uint64_t k = rnd(u) % (FAKEH_STAT + FAKEH_CREAT);
		struct stat st;

		if (k < FAKEH_STAT) {
			snprintf(path, sizeof(path), "%s/fakeh/d%d/f%02d", dir, (int)(k % 3), (int)k);
			if (stat(path, &st) < 0)
				return -1;
		} else {
			int fd;

			snprintf(path, sizeof(path), "%s/fakeh/c%02d.%d", dir, (int)k, (int)u->pid);
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0777);
			if (fd < 0)
				return -1;
			close(fd);
			if (unlink(path) < 0)
				return -1;
		}
	}
	return 0;
}

/* one iteration: create (truncate) and close one file */
static int creat_clo(struct user *u, uint64_t n)
{
	char dir[4200], path[4300];

	if (!n)
		return 0;
	tmp_name(u, data_dir(u, dir, sizeof(dir)), path, sizeof(path));
	for (uint64_t i = 0; i < n; i++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0777);

		if (fd < 0 || close(fd) < 0)
			return -1;
	}
	return unlink(path);
}

/* a file with 7 more links; one iteration: unlink one of them and link it again */
static int link_test(struct user *u, uint64_t n)
{
	char dir[4200], names[LINKS][4300];
	int fd, rc = 0;

	if (!n)
		return 0;
	data_dir(u, dir, sizeof(dir));
	for (int i = 0; i < LINKS; i++)
		tmp_name(u, dir, names[i], sizeof(names[i]));
	fd = open(names[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0777);
	if (fd < 0)
		return -1;
	for (int i = 1; i < LINKS && !rc; i++)
		rc = link(names[0], names[i]);
	for (uint64_t it = 0; it < n && !rc; it++) {
		int i = 1 + (int)(it % (LINKS - 1));

		rc = unlink(names[i]) || link(names[0], names[i]);
	}
	for (int i = 0; i < LINKS; i++)
		unlink(names[i]);
	close(fd);
	return rc ? -1 : 0;
}

/* one iteration: read one entry of /bin (rewinding at its end) */
static int dir_rtns_1(struct user *u, uint64_t n)
{
	DIR *d;
	uint64_t ends = 0;

	(void)u;
	if (!n)
		return 0;
	d = opendir("/bin");
	if (!d)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		if (!readdir(d)) {
			ends++;
			rewinddir(d);
		}
	closedir(d);
	sink += ends;
	return 0;
}

/* ---- IPC tests ---- */

static const int msg_sizes[] = {
	1, 3, 5, 7, 16, 32, 64, 512, 1024, 2048, 1, 3, 5, 7, 16, 32, 64, 512, 1024, 2048,
	32, 32, 32, 32, 32, 32, 512, 512, 512, 512, 512,
};

/* n messages of varying sizes written on wr and read back on rd, then both closed */
static int messages(uint64_t n, int rd, int wr)
{
	static char buf[MSG_MAX];
	int rc = 0;

	for (uint64_t i = 0; i < n && !rc; i++) {
		size_t size = (size_t)msg_sizes[i % (sizeof(msg_sizes) / sizeof(msg_sizes[0]))];

		rc = manylab_write_all(wr, buf, size) || manylab_read_all(rd, buf, size);
	}
	close(rd);
	close(wr);
	return rc ? -1 : 0;
}

static int pipe_cpy(struct user *u, uint64_t n)
{
	int fds[2];

	(void)u;
	if (!n)
		return 0;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	return messages(n, fds[0], fds[1]);
}

static int socket_pair(uint64_t n, int type)
{
	int fds[2];

	if (!n)
		return 0;
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) < 0)
		return -1;
	return messages(n, fds[0], fds[1]);
}

static int stream_pipe(struct user *u, uint64_t n)
{
	(void)u;
	return socket_pair(n, SOCK_STREAM);
}

static int dgram_pipe(struct user *u, uint64_t n)
{
	(void)u;
	return socket_pair(n, SOCK_DGRAM);
}

static int loopback_socket(int type, struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)addr, sizeof(*addr)) < 0 ||
	    getsockname(fd, (struct sockaddr *)addr, &len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* a listening socket, a connection to it, n messages over the connection */
static int tcp_test(struct user *u, uint64_t n)
{
	struct sockaddr_in addr;
	int lfd, cfd, afd, one = 1;

	(void)u;
	if (!n)
		return 0;
	lfd = loopback_socket(SOCK_STREAM, &addr);
	if (lfd < 0)
		return -1;
	setsockopt(lfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen(lfd, 5) < 0 || cfd < 0 ||
	    connect(cfd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		close(lfd);
		if (cfd >= 0)
			close(cfd);
		return -1;
	}
	do
		afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (afd < 0 && errno == EINTR);
	close(lfd);
	if (afd < 0) {
		close(cfd);
		return -1;
	}
	return messages(n, cfd, afd);
}

/* two bound datagram sockets, the writer connected to the reader, n datagrams */
static int udp_test(struct user *u, uint64_t n)
{
	struct sockaddr_in wa, ra;
	int wr, rd;

	(void)u;
	if (!n)
		return 0;
	wr = loopback_socket(SOCK_DGRAM, &wa);
	if (wr < 0)
		return -1;
	rd = loopback_socket(SOCK_DGRAM, &ra);
	if (rd < 0 || connect(wr, (struct sockaddr *)&ra, sizeof(ra)) < 0) {
		close(wr);
		if (rd >= 0)
			close(rd);
		return -1;
	}
	return messages(n, rd, wr);
}

/* SysV shared memory guarded by a semaphore; one iteration: write a message into it and
 * read it back, each under the semaphore */
static int shared_memory(struct user *u, uint64_t n)
{
	static char buf[MSG_MAX];
	struct sembuf down = { 0, -1, 0 }, up = { 0, 1, 0 };
	int shmid, semid, rc = 0;
	char *shm;

	(void)u;
	if (!n)
		return 0;
	shmid = shmget(IPC_PRIVATE, MSG_MAX, IPC_CREAT | 0600);
	if (shmid < 0)
		return -1;
	semid = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	shm = shmat(shmid, NULL, 0);
	if (semid < 0 || shm == (void *)-1 || semctl(semid, 0, SETVAL, 1) < 0)
		rc = -1;
	for (uint64_t i = 0; i < n && !rc; i++) {
		size_t size = (size_t)msg_sizes[i % (sizeof(msg_sizes) / sizeof(msg_sizes[0]))];

		if (semop(semid, &down, 1) < 0)
			rc = -1;
		memcpy(shm, buf, size);
		if (semop(semid, &up, 1) < 0 || semop(semid, &down, 1) < 0)
			rc = -1;
		memcpy(buf, shm, size);
		if (semop(semid, &up, 1) < 0)
			rc = -1;
	}
	if (shm != (void *)-1)
		shmdt(shm);
	shmctl(shmid, IPC_RMID, NULL);
	if (semid >= 0)
		semctl(semid, 0, IPC_RMID);
	return rc;
}

static volatile sig_atomic_t sigcount;

static void on_usr2(int sig)
{
	if (sig == SIGUSR2)
		sigcount = sigcount + 1;
}

/* one iteration: send itself SIGUSR2 and catch it */
static int signal_test(struct user *u, uint64_t n)
{
	struct sigaction sa = { .sa_handler = on_usr2 };
	pid_t me = getpid();

	(void)u;
	if (!n)
		return 0;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, NULL) < 0)
		return -1;
	sigcount = 0;
	for (uint64_t i = 0; i < n; i++)
		if (kill(me, SIGUSR2) < 0)
			return -1;
	return sigcount == (sig_atomic_t)n ? 0 : -1;
}

/* ---- process tests ---- */

enum child { CHILD_EXIT, CHILD_EXEC, CHILD_SHELL };

/* n iterations: fork a child that does `what`, wait for it */
static int fork_loop(struct user *u, uint64_t n, enum child what)
{
	for (uint64_t i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return -1;
		if (pid == 0) {
			if (what == CHILD_EXEC) {
				execl(true_path, "true", (char *)NULL);
				_exit(127);
			}
			_exit(what == CHILD_SHELL && system(shell_cmd) != 0 ? 1 : 0);
		}
		u->rec.forks++;
		u->rec.execs += what == CHILD_EXEC;
		u->rec.shells += what == CHILD_SHELL;
		if (manylab_wait_ok(pid))
			return -1;
	}
	return 0;
}

/* one iteration: fork a child that exits at once, wait for it */
static int fork_test(struct user *u, uint64_t n)
{
	return fork_loop(u, n, CHILD_EXIT);
}

/* one iteration: fork a child that execs a script holding only "#!/bin/sh" */
static int exec_test(struct user *u, uint64_t n)
{
	return fork_loop(u, n, CHILD_EXEC);
}

/* one iteration: fork a child that runs a shell script through system() (sh -c; the
 * script runs ls -l), wait for it */
static int shell_rtns_1(struct user *u, uint64_t n)
{
	return fork_loop(u, n, CHILD_SHELL);
}

/* ---- the workfile: AIM7's multiuser shared-system mix ---- */

static const struct test tests[] = {
	{ "add_double", 30, C_COMPUTE, FIXED, 1500000, add_double },
	{ "add_float", 30, C_COMPUTE, FIXED, 1000000, add_float },
	{ "add_int", 30, C_COMPUTE, FIXED, 5000000, add_int },
	{ "add_long", 30, C_COMPUTE, FIXED, 5000000, add_long },
	{ "add_short", 30, C_COMPUTE, FIXED, 2000000, add_short },
	{ "array_rtns", 10, C_COMPUTE, FIXED, 20, array_rtns },
	{ "brk_test", 10, C_MEMORY, FIXED, 1000, brk_test },
	{ "creat-clo", 10, C_FILE, FIXED, 1000, creat_clo },
	{ "dgram_pipe", 10, C_IPC, FIXED, 99, dgram_pipe },
	{ "dir_rtns_1", 10, C_FILE, FIXED, 10000, dir_rtns_1 },
	{ "disk_cp", 20, C_FILE, DISK, 0, disk_cp },
	{ "disk_rd", 20, C_FILE, DISK, 0, disk_rd },
	{ "disk_rr", 20, C_FILE, DISK, 0, disk_rr },
	{ "disk_rw", 20, C_FILE, DISK, 0, disk_rw },
	{ "disk_src", 20, C_FILE, FIXED, 100, disk_src },
	{ "disk_wrt", 20, C_FILE, DISK, 0, disk_wrt },
	{ "div_double", 10, C_COMPUTE, FIXED, 250000, div_double },
	{ "div_float", 10, C_COMPUTE, FIXED, 250000, div_float },
	{ "div_int", 10, C_COMPUTE, FIXED, 75000, div_int },
	{ "div_long", 10, C_COMPUTE, FIXED, 75000, div_long },
	{ "div_short", 10, C_COMPUTE, FIXED, 75000, div_short },
	{ "exec_test", 20, C_PROCESS, FIXED, 5, exec_test },
	{ "fork_test", 10, C_PROCESS, FIXED, 100, fork_test },
	{ "jmp_test", 10, C_COMPUTE, FIXED, 1000, jmp_test },
	{ "link_test", 10, C_FILE, FIXED, 63, link_test },
	{ "matrix_rtns", 10, C_COMPUTE, FIXED, 100, matrix_rtns },
	{ "mem_rtns_1", 10, C_MEMORY, FIXED, 100, mem_rtns_1 },
	{ "mem_rtns_2", 10, C_COMPUTE, FIXED, 100, mem_rtns_2 },
	{ "misc_rtns_1", 10, C_COMPUTE, FIXED, 10, misc_rtns_1 },
	{ "mul_double", 20, C_COMPUTE, FIXED, 1000000, mul_double },
	{ "mul_float", 20, C_COMPUTE, FIXED, 1000000, mul_float },
	{ "mul_int", 20, C_COMPUTE, FIXED, 20000, mul_int },
	{ "mul_long", 20, C_COMPUTE, FIXED, 20000, mul_long },
	{ "mul_short", 20, C_COMPUTE, FIXED, 25000, mul_short },
	{ "new_raph", 10, C_COMPUTE, FIXED, 200, new_raph },
	{ "num_rtns_1", 10, C_COMPUTE, FIXED, 100, num_rtns_1 },
	{ "page_test", 10, C_MEMORY, FIXED, 100, page_test },
	{ "pipe_cpy", 10, C_IPC, FIXED, 99, pipe_cpy },
	{ "ram_copy", 10, C_COMPUTE, FIXED, 64, ram_copy },
	{ "series_1", 10, C_COMPUTE, FIXED, 100, series_1 },
	{ "shared_memory", 10, C_IPC, FIXED, 100, shared_memory },
	{ "shell_rtns_1", 20, C_PROCESS, FIXED, 1, shell_rtns_1 },
	{ "sieve", 10, C_MEMORY, FIXED, 5, sieve },
	{ "signal_test", 10, C_IPC, FIXED, 1000, signal_test },
	{ "sort_rtns_1", 10, C_COMPUTE, FIXED, 2, sort_rtns_1 },
	{ "stream_pipe", 10, C_IPC, FIXED, 99, stream_pipe },
	{ "string_rtns", 30, C_COMPUTE, FIXED, 100, string_rtns },
	{ "sync_disk_cp", 10, C_FILE, DISK_HALF, 0, sync_disk_cp },
	{ "sync_disk_rw", 10, C_FILE, DISK_HALF, 0, sync_disk_rw },
	{ "sync_disk_wrt", 10, C_FILE, DISK_HALF, 0, sync_disk_wrt },
	{ "tcp_test", 10, C_IPC, FIXED, 89, tcp_test },
	{ "trig_rtns", 10, C_COMPUTE, FIXED, 100, trig_rtns },
	{ "udp_test", 10, C_IPC, FIXED, 99, udp_test },
};
#define NTESTS ((int)(sizeof(tests) / sizeof(tests[0])))

static int jobs_of[NTESTS];	/* jobs per user of each test */
static int jobs_per_user;

/* AIM7's share of the nominal load per test: weight / total * load, rounded half up, and
 * at least 1 for a test whose share is not 0 */
static void compute_mix(void)
{
	int total = 0;

	for (int t = 0; t < NTESTS; t++)
		total += tests[t].weight;
	jobs_per_user = 0;
	for (int t = 0; t < NTESTS; t++) {
		double share = (double)tests[t].weight / total * o.jobs;
		int whole = (int)share;

		if (share - whole >= 0.5 || (whole == 0 && share > 0))
			whole++;
		jobs_of[t] = whole;
		jobs_per_user += whole;
	}
}

static uint64_t aim_count(int t)
{
	switch (tests[t].kind) {
	case DISK:
		return disk_blocks;
	case DISK_HALF:
		return disk_blocks / 2;
	default:
		return tests[t].count;
	}
}

/* ---- a user ---- */

static void user_main(int index, int ready_fd, int results_fd)
{
	struct user u = { .index = index, .pid = getpid() };
	int *order = malloc(sizeof(int) * (size_t)jobs_per_user);
	sigset_t old;
	int k = 0;

	u.rng = o.seed * 0x2545f4914f6cdd1dull + (uint64_t)index * 0x9e3779b97f4a7c15ull + 1;
	u.rec.user = index;
	u.rec.fail_test = -1;
	if (!order)
		_exit(2);
	for (int t = 0; t < NTESTS; t++)
		for (int j = 0; j < jobs_of[t]; j++)
			order[k++] = t;
	for (int i = jobs_per_user - 1; i > 0; i--) {	/* sampling without replacement */
		int j = (int)(rnd(&u) % (uint64_t)(i + 1)), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	u.dj = (int)(rnd(&u) % (uint64_t)o.dirs);

	manylab_gun_wait(ready_fd);
	sigprocmask(SIG_SETMASK, NULL, &old);
	sigdelset(&old, SIGUSR1);
	sigprocmask(SIG_SETMASK, &old, NULL);

	for (int i = 0; i < jobs_per_user; i++) {
		int t = order[i];
		uint64_t n = scaled(&u, aim_count(t));

		if (tests[t].fn(&u, n)) {
			if (!u.rec.failed++) {
				u.rec.fail_test = t;
				u.rec.fail_errno = errno;
			}
		}
		u.rec.jobs++;
		u.rec.cjobs[tests[t].cat]++;
		u.rec.iters[tests[t].cat] += n;
	}
	u.rec.t_end = manylab_now();
	if (write(results_fd, &u.rec, sizeof(u.rec)) != (ssize_t)sizeof(u.rec))
		_exit(2);
	_exit(u.rec.failed ? 1 : 0);
}

/* ---- setup ---- */

static int write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ssize_t len = (ssize_t)strlen(text);

	if (fd < 0)
		return -1;
	if (write(fd, text, (size_t)len) != len) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int setup_dirs(void)
{
	char path[4400];

	for (int d = 0; d < o.dirs; d++) {
		int fd;

		snprintf(path, sizeof(path), "%s/aim7_%03d", base, d);
		if (mkdir(path, 0777) < 0)
			return -1;
		snprintf(path, sizeof(path), "%s/aim7_%03d/tmpa.common", base, d);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (fd < 0 || write_blocks(fd, common_blocks)) {
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
		snprintf(path, sizeof(path), "%s/aim7_%03d/fakeh", base, d);
		if (mkdir(path, 0777) < 0)
			return -1;
		for (int s = 0; s < 3; s++) {
			snprintf(path, sizeof(path), "%s/aim7_%03d/fakeh/d%d", base, d, s);
			if (mkdir(path, 0777) < 0)
				return -1;
		}
		for (int k = 0; k < FAKEH_STAT; k++) {
			snprintf(path, sizeof(path), "%s/aim7_%03d/fakeh/d%d/f%02d", base, d, k % 3, k);
			if (write_file(path, "fake header\n", 0644))
				return -1;
		}
	}
	return 0;
}

static void cleanup(void)
{
	char path[4400];

	if (o.keep)
		return;
	for (int d = 0; d < o.dirs; d++) {
		for (int k = 0; k < FAKEH_STAT; k++) {
			snprintf(path, sizeof(path), "%s/aim7_%03d/fakeh/d%d/f%02d", base, d, k % 3, k);
			unlink(path);
		}
		for (int s = 0; s < 3; s++) {
			snprintf(path, sizeof(path), "%s/aim7_%03d/fakeh/d%d", base, d, s);
			rmdir(path);
		}
		snprintf(path, sizeof(path), "%s/aim7_%03d/fakeh", base, d);
		rmdir(path);
		snprintf(path, sizeof(path), "%s/aim7_%03d/tmpa.common", base, d);
		unlink(path);
		snprintf(path, sizeof(path), "%s/aim7_%03d", base, d);
		rmdir(path);
	}
	unlink(true_path);
	unlink(passwd_path);
	snprintf(path, sizeof(path), "%s/aim_1.sh", base);
	unlink(path);
	rmdir(base);
}

/* ---- the command line ---- */

static const struct option long_options[] = {
	{ "users", 1, 0, 'u' }, { "users-per-cpu", 1, 0, 'U' }, { "jobs", 1, 0, 'j' },
	{ "scale", 1, 0, 's' }, { "seed", 1, 0, 'S' }, { "dirs", 1, 0, 'D' },
	{ "dir", 1, 0, 'd' }, { "list", 0, 0, 'l' }, { "keep", 0, 0, 'k' },
	{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
};

/* One option for manylab_getopt: 0 when taken. */
static int take_option(int option, char *arg)
{
	char *end;

	switch (option) {
	case 'u': o.users = (int)manylab_num_arg(PROG, "--users", arg, 1, MAX_USERS); return 0;
	case 'U': o.users_per_cpu = (int)manylab_num_arg(PROG, "--users-per-cpu", arg, 1, MAX_USERS); return 0;
	case 'j': o.jobs = (int)manylab_num_arg(PROG, "--jobs", arg, 1, 100000); return 0;
	case 's':
		o.scale = strtod(arg, &end);
		if (*end || !(o.scale > 0) || o.scale > 100) {
			fprintf(stderr, "aim7: --scale must be a number in (0, 100]\n");
			exit(2);
		}
		return 0;
	case 'S': o.seed = (uint64_t)manylab_num_arg(PROG, "--seed", arg, 0, 0x7fffffffffffffffL); return 0;
	case 'D': o.dirs = (int)manylab_num_arg(PROG, "--dirs", arg, 1, MAX_DIRS); return 0;
	case 'd': o.dir = arg; return 0;
	case 'l': o.list = 1; return 0;
	case 'k': o.keep = 1; return 0;
	default: return -1;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: aim7 [options]\n"
"  --users N          users (AIM7 tasks), each a process running the job mix\n"
"                     (default: --users-per-cpu x online CPUs, or 1 per CPU)\n"
"  --users-per-cpu N  users per online CPU (the LDU thesis grew users with cores)\n"
"  --jobs N           nominal jobs per user (AIM7's LOADNUM, default 100: 97 jobs)\n"
"  --scale X          each job's size relative to AIM7's (default 1; e.g. 0.01)\n"
"  --seed N           seed of the job order and random choices (default 1)\n"
"  --dirs N           data directories the users rotate over (default: online CPUs)\n"
"  --dir DIR          work directory (default /tmp)\n"
"  --list             print the mix (tests, weights, jobs per user) as JSON and exit\n"
"  --keep             keep the files\n"
"Prints 'MANYLAB-RESULT {json}' with jobs, jobs_per_min (guest time) and JTI.\n");
}

static void print_list(void)
{
	printf("{\"jobs\": %d, \"jobs_per_user\": %d, \"tests\": [", o.jobs, jobs_per_user);
	for (int t = 0; t < NTESTS; t++)
		printf("%s{\"name\": \"%s\", \"weight\": %d, \"category\": \"%s\", "
		       "\"jobs\": %d, \"aim7_count\": %" PRIu64 "}", t ? ", " : "",
		       tests[t].name, tests[t].weight, cat_name[tests[t].cat], jobs_of[t],
		       aim_count(t));
	printf("]}\n");
}

int main(int argc, char **argv)
{
	int ncpus, ready[2], results[2], bad = 0, own_group;
	struct urec *recs, tot = { 0 };
	struct manylab_gun_run run;
	struct rusage ru;
	pid_t *pids;
	double sum = 0, sumsq = 0, umin = 0, umax = 0, cpu_s, elapsed, mean, jpm;
	size_t want;
	int jti, first_fail = -1, first_errno = 0;

	manylab_getopt(argc, argv, "h", long_options, usage, take_option);
	if (optind != argc || o.jobs < 1 || o.jobs > 100000 || o.users < 0 ||
	    o.users_per_cpu < 0 || o.dirs < 0 || o.dirs > MAX_DIRS) {
		usage(stderr);
		return 2;
	}
	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (!o.users)
		o.users = (o.users_per_cpu ? o.users_per_cpu : 1) * ncpus;
	if (o.users > MAX_USERS) {
		fprintf(stderr, "aim7: at most %d users\n", MAX_USERS);
		return 2;
	}
	if (!o.dirs)
		o.dirs = ncpus < MAX_DIRS ? ncpus : MAX_DIRS;
	compute_mix();
	disk_blocks = FILE_KB + POOL_KB / (uint64_t)o.users;
	common_blocks = (uint64_t)((double)disk_blocks * o.scale);
	if ((double)common_blocks < (double)disk_blocks * o.scale || !common_blocks)
		common_blocks++;
	if (o.list) {
		print_list();
		return 0;
	}

	snprintf(base, sizeof(base), "%s/aim7.%d", o.dir, (int)getpid());
	snprintf(true_path, sizeof(true_path), "%s/true", base);
	snprintf(passwd_path, sizeof(passwd_path), "%s/passwd", base);
	snprintf(shell_cmd, sizeof(shell_cmd), "%s/aim_1.sh %d", base, o.users);
	if (mkdir(base, 0777) < 0) {
		fprintf(stderr, "aim7: %s: %s\n", base, strerror(errno));
		return 2;
	}
	{
		char script[4400];

		snprintf(script, sizeof(script), "%s/aim_1.sh", base);
		if (write_file(true_path, "#!/bin/sh\n", 0755) ||
		    write_file(script, "#!/bin/sh\nls -l > /dev/null 2>&1\n", 0755) ||
		    write_file(passwd_path, "root:x:0:0:root:/root:/bin/sh\n"
					    "daemon:x:1:1:daemon:/usr/sbin:/bin/false\n", 0644) ||
		    setup_dirs() || chdir(base) < 0) {
			fprintf(stderr, "aim7: setup in %s: %s\n", base, strerror(errno));
			cleanup();
			return 2;
		}
	}
	memset(nbuf, 'a', sizeof(nbuf));
	pids = calloc((size_t)o.users, sizeof(pid_t));
	want = sizeof(struct urec) * (size_t)o.users;
	recs = malloc(want);
	if (!pids || !recs || pipe2(ready, O_CLOEXEC) || pipe2(results, O_CLOEXEC)) {
		fprintf(stderr, "aim7: %s\n", strerror(errno));
		cleanup();
		return 2;
	}
	own_group = manylab_gun_arm();
	if (manylab_gun_fork("aim7", "user", pids, o.users, ready, results, user_main)) {
		cleanup();
		return 2;
	}
	manylab_gun_run("aim7", "user", own_group, pids, o.users, ready[0], results[0], recs, want,
			&run);
	if (run.not_ready)
		bad = 1;
	getrusage(RUSAGE_CHILDREN, &ru);
	cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
		(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;

	for (size_t i = 0; i < run.got / sizeof(struct urec); i++) {
		struct urec *r = &recs[i];
		double el = r->t_end - run.t0;

		tot.jobs += r->jobs;
		tot.failed += r->failed;
		if (r->failed && first_fail < 0) {
			first_fail = r->fail_test;
			first_errno = r->fail_errno;
		}
		tot.forks += r->forks;
		tot.execs += r->execs;
		tot.shells += r->shells;
		for (int k = 0; k < C_NR; k++) {
			tot.cjobs[k] += r->cjobs[k];
			tot.iters[k] += r->iters[k];
		}
		sum += el;
		sumsq += el * el;
		if (!i || el < umin)
			umin = el;
		if (!i || el > umax)
			umax = el;
	}
	{
		size_t nrec = run.got / sizeof(struct urec);
		double sd, cov;

		mean = nrec ? sum / (double)nrec : 0;
		sd = nrec > 1 ? sumsq / (double)nrec - mean * mean : 0;
		sd = sd > 0 ? my_sqrt(sd) : 0;
		cov = mean > 0 ? sd / mean : 0;
		jti = nrec <= 1 ? 100 : cov > 1 ? 0 : (int)((1 - cov) * 100);
		if (nrec != (size_t)o.users)
			bad = 1;
	}
	if (tot.failed || run.reaped_bad)
		bad = 1;
	if (first_fail >= 0)
		fprintf(stderr, "aim7: %d failed jobs; first: %s (%s)\n", (int)tot.failed,
			tests[first_fail].name, strerror(first_errno));
	cleanup();

	elapsed = run.t1 - run.t0;
	jpm = elapsed > 0 ? 60.0 * jobs_per_user * o.users / elapsed : 0;
	printf("MANYLAB-RESULT {\"workload\": \"aim7\", "
	       "\"params\": {\"users\": %d, \"jobs\": %d, \"scale\": %g, \"seed\": %" PRIu64 ", "
	       "\"dirs\": %d}, "
	       "\"jobs_per_user\": %d, \"tests\": %d, \"expected_jobs\": %" PRIu64 ", "
	       "\"jobs\": %" PRIu64 ", \"ops\": %" PRIu64 ", \"failed\": %d, "
	       "\"elapsed_s\": %.6f, \"jobs_per_min\": %.3f, \"jobs_per_s\": %.3f, "
	       "\"ops_per_s\": %.3f, \"jobs_per_s_per_user\": %.6f, \"jti\": %d, "
	       "\"user_s\": {\"min\": %.6f, \"mean\": %.6f, \"max\": %.6f}, "
	       "\"disk_kb\": %" PRIu64 ", \"common_kb\": %" PRIu64 ", ",
	       o.users, o.jobs, o.scale, o.seed, o.dirs,
	       jobs_per_user, NTESTS, (uint64_t)jobs_per_user * (uint64_t)o.users,
	       tot.jobs, tot.jobs, tot.failed,
	       elapsed, jpm, jpm / 60.0, jpm / 60.0,
	       elapsed > 0 ? jobs_per_user / elapsed : 0.0, jti, umin, mean, umax,
	       disk_blocks, common_blocks);
	printf("\"categories\": {");
	for (int k = 0; k < C_NR; k++)
		printf("%s\"%s\": {\"jobs\": %" PRIu64 ", \"iterations\": %" PRIu64 "}", k ? ", " : "",
		       cat_name[k], tot.cjobs[k], tot.iters[k]);
	printf("}, \"forks\": %" PRIu64 ", \"execs\": %" PRIu64 ", \"shells\": %" PRIu64 ", ",
	       tot.forks, tot.execs, tot.shells);
	manylab_print_procstat(&run.ps0, &run.ps1);
	printf("\"cpus\": %d, \"cpu_s\": %.3f, \"ok\": %s}\n", ncpus, cpu_s,
	       bad ? "false" : "true");
	fflush(stdout);
	return bad;
}
