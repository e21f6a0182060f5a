// SPDX-License-Identifier: MIT
/*
 * mobileapps: mobile-like page-cache requests by apps of Android importance (issue #28 item 4,
 * the hybrid DRAM/PCM page-cache study: seeds digest section 4, docs/pcm-policy.md).
 *
 * Each app is a process with its own files in --dir. It requests pages of its files one page
 * at a time with pread()/pwrite(), picking pages by a Zipf-like popularity (exponent --zipf)
 * over all of its own pages, so a hybrid-pcm kernel's page-cache request recorder (pagereq)
 * sees one request per page, made by a task with the app's oom_score_adj.
 *
 * Importance is Linux oom_score_adj with Android's ProcessList values (the scale Android
 * writes since 7.0): FOREGROUND_APP_ADJ 0, VISIBLE_APP_ADJ 100, SERVICE_ADJ 500,
 * PREVIOUS_APP_ADJ 700, CACHED_APP_MIN_ADJ 900 .. CACHED_APP_MAX_ADJ 999. Each app writes its
 * first value to /proc/self/oom_score_adj; the controller (the parent, standing in for
 * ActivityManager and lmkd) changes them by writing /proc/<pid>/oom_score_adj when the
 * foreground app changes: the new foreground app gets 0, the old one PREVIOUS_APP_ADJ, and the
 * earlier ones move down the cached slots 900, 910, ... (at most 999) in order of last use, as
 * Android's OomAdjuster spreads cached processes over slots of 10 (an approximation of it).
 *
 * The request phase runs in slices of --slice requests: the controller gives each app its
 * share of the slice, releases the apps (together, or one after another with --serial), waits
 * for all, and between slices (all apps parked) switches the foreground. Of each slice the
 * foreground app makes round(fg_share x requests so far) - (its requests so far); the rest go
 *   push    to one push service drawn per slice (a push arrives, that app syncs): app 0 is the
 *           foreground app for the whole run, apps 1.. are services (SERVICE_ADJ); the
 *           digest's trace 1, a browser with Hangouts and Gmail pushing (fg:bg about 15:1);
 *   switch  to the background apps, each request to one drawn at random; every
 *           --switch-every slices a random other app comes to the foreground; the digest's
 *           trace 2, many apps switched between foreground and background (about 3:1).
 * The ratio is measured, not assumed: each app reads its own /proc/self/oom_score_adj at the
 * start of each slice and counts its requests under that value; the result gives the counts
 * per oom_score_adj value and per class (pcmsim's mapping of oom_score_adj to Android process
 * states: 0 foreground, 1-299 visible, 300-599 service, 600-899 background, 900+ empty,
 * negative service), and the foreground share.
 *
 * A page is write-prone with probability --write-pages (a hash of app and page); a request to
 * such a page is a write with probability --write-prob (defaults 0.25 and 0.5: about 12% writes,
 * the shape of pcmsim's trace generator). Hits: before each request the app asks mincore()
 * whether the page is in the page cache (a mapping of each file, never touched, so it adds no
 * request); --no-mincore leaves hits to the recorder.
 *
 * Files: app a has --files files mobileapps.<a>.<f> of --pages pages in all. Before the ROI
 * the controller writes them, fsyncs them and drops them from the page cache (cold start).
 * Under a recorder those setup writes would be recorded too: run `mobileapps --prepare ...`
 * first, start the recorder, then the same command with --reuse (files checked, dropped from
 * the cache, not written).
 *
 * --replay FILE reads a pcmsim CSV trace (columns by the header, in any order: index, op and
 * oom_score_adj, oom_adj or state required; dev, ino, pid optional) and issues each record in
 * order as one page request: file replay.<k> for the k-th distinct (dev, ino), by worker
 * process <k> for the k-th distinct pid, which sets its oom_score_adj to the record's first.
 * The workers pass the turn to each other (a futex per worker), so requests never overlap, and
 * all are pinned to one CPU (--no-pin: not) so the recorder's per-CPU clock orders them as the
 * trace does. Files are sized (sparse, ftruncate) to cover their largest index before the ROI,
 * so a read of a page never written is a request to a hole, which the recorder records as a
 * read. An oom_adj column (Android's old scale) becomes oom_score_adj x 100 (at most 1000); a
 * state alone becomes 0, 100, 500, 700 or 900. Keep FILE off the recorded file system (it is
 * read before the ROI, but it is read). Capturing the replay gives the trace's stream back.
 *
 * Each request's transfer (the pread or pwrite, not the mincore) is a span numbered by the
 * requester's class (0 foreground .. 4 empty): the plugin sums the modelled time of the vCPU
 * that ran it per class (time.span<k>.cycles; plugin README "Spans"), so the foreground time
 * is span 0's. A request whose task migrates between vCPUs is counted lost there.
 *
 * The request phase is ROI region 0, phase 1. One line on stdout:
 *   MANYLAB-RESULT {json}
 * Exit status 1 on an I/O error or a failed oom_score_adj write, 2 on bad arguments.
 * Deterministic given --seed: each app's requests, the slices' shares and the switches (the
 * interleaving of apps inside a slice is the scheduler's, unless --serial).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "manylab_procs.h"
#include "manylab_roi.h"
#include "manylab_util.h"

#define PROG "mobileapps"
#define PAGE 4096
#define MAX_APPS 64
#define MAX_ADJS 16		/* distinct oom_score_adj values one app counts */
#define MAX_WORKERS 1024	/* replay: distinct pids */
#define ADJ_UNKNOWN (-32768)	/* pcmsim's "not recorded" */

/* Android's ProcessList (frameworks/base/services/core/java/com/android/server/am/) */
#define FOREGROUND_APP_ADJ 0
#define VISIBLE_APP_ADJ 100
#define SERVICE_ADJ 500
#define PREVIOUS_APP_ADJ 700
#define CACHED_APP_MIN_ADJ 900
#define CACHED_APP_MAX_ADJ 999
#define CACHED_SLOT 10

enum scenario { S_PUSH, S_SWITCH, S_REPLAY };
static const char *scenario_name[] = { "push", "switch", "replay" };

static struct options {
	enum scenario scenario;
	long requests;
	int apps;
	long pages;
	int files;
	double zipf;
	double fg_share;
	long slice;
	long switch_every;
	double write_pages;
	double write_prob;
	uint64_t seed;
	int serial;
	int mincore;
	int prepare;
	int reuse;
	int keep;
	int pin;
	const char *replay;
	const char *dir;
} o = {
	.scenario = S_PUSH, .requests = 20000, .apps = -1, .pages = 2048, .files = 4,
	.zipf = 0.9, .fg_share = -1, .slice = 500, .switch_every = -1, .write_pages = 0.25,
	.write_prob = 0.5, .seed = 1, .mincore = 1, .pin = 1, .dir = "/tmp",
};

/* ---- small helpers ---- */

static pid_t controller;

/* A fatal error; in an app or worker it ends the controller too (and so, through
 * PR_SET_PDEATHSIG, every other child), rather than leaving them parked. */
static void fail(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", PROG, what, strerror(errno));
	if (controller && getpid() != controller)
		kill(controller, SIGTERM);
	exit(1);
}

/* A child that dies with the controller: its pid in the controller, 0 in the child. */
static pid_t fork_child(void)
{
	pid_t pid = fork();

	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != controller)
			_exit(1);
	}
	return pid;
}

/* Reaps child pid of the controller; 1 when it did not exit with status 0 or reported error
 * (named on stderr as WHAT index), else 0. */
static int child_failed(pid_t pid, int error, const char *what, unsigned int index)
{
	int status, failed = 0;

	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		failed = 1;
	if (error) {
		fprintf(stderr, "%s: %s %u: %s\n", PROG, what, index, strerror(error));
		failed = 1;
	}
	return failed;
}

/* uniform in [0, 1) */
static double uniform(uint64_t *state)
{
	return (double)(manylab_splitmix(state) >> 11) * 0x1.0p-53;
}

static uint64_t hash2(uint64_t a, uint64_t b)
{
	uint64_t s = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	return manylab_splitmix(&s);
}

static int write_adj_path(const char *path, int adj)
{
	char text[16];
	int fd = open(path, O_WRONLY | O_CLOEXEC), len, ok;

	if (fd < 0)
		return -1;
	len = snprintf(text, sizeof(text), "%d\n", adj);
	ok = write(fd, text, (size_t)len) == len;
	close(fd);
	return ok ? 0 : -1;
}

/* Set a process's oom_score_adj (pid 0: this one's); on failure say why, return errno. */
static int set_adj(pid_t pid, int adj)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/oom_score_adj");
	if (write_adj_path(path, adj)) {
		static int told;	/* once per process */
		int error = errno ? errno : EIO;

		if (!told++)
			fprintf(stderr, "%s: cannot write %d to %s: %s (below the process's "
				"minimum it needs CAP_SYS_RESOURCE)\n", PROG, adj, path,
				strerror(error));
		return error;
	}
	return 0;
}

static int read_adj(void)
{
	char text[16] = "";
	int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		fail("/proc/self/oom_score_adj");
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		fail("/proc/self/oom_score_adj");
	return atoi(text);
}

/* pcmsim's classes of oom_score_adj (docs/pcm-policy.md, "Process state") */
enum { C_FOREGROUND, C_VISIBLE, C_SERVICE, C_BACKGROUND, C_EMPTY, NCLASSES };
static const char *class_name[] = { "foreground", "visible", "service", "background", "empty" };

static int adj_class(int adj)
{
	if (adj == 0)
		return C_FOREGROUND;
	if (adj < 0)
		return C_SERVICE;
	if (adj < 300)
		return C_VISIBLE;
	if (adj < 600)
		return C_SERVICE;
	if (adj < 900)
		return C_BACKGROUND;
	return C_EMPTY;
}

/* ---- counts per oom_score_adj value ---- */

struct adj_count {
	int adj;
	int used;
	uint64_t requests, reads, writes, hits;
};

struct counts {
	struct adj_count by[MAX_ADJS];
	uint64_t errors;
};

static struct adj_count *count_slot(struct counts *c, int adj)
{
	for (int i = 0; i < MAX_ADJS; i++) {
		if (c->by[i].used && c->by[i].adj == adj)
			return &c->by[i];
		if (!c->by[i].used) {
			c->by[i].used = 1;
			c->by[i].adj = adj;
			return &c->by[i];
		}
	}
	return NULL;
}

static void count_merge(struct counts *into, const struct counts *from)
{
	into->errors += from->errors;
	for (int i = 0; i < MAX_ADJS; i++) {
		const struct adj_count *f = &from->by[i];
		struct adj_count *t;

		if (!f->used)
			continue;
		t = count_slot(into, f->adj);
		if (!t) {
			into->errors++;
			continue;
		}
		t->requests += f->requests;
		t->reads += f->reads;
		t->writes += f->writes;
		t->hits += f->hits;
	}
}

/* One page request: mincore first (hit = already in the page cache), then the transfer. */
static int request(int fd, const unsigned char *map, uint64_t index, int write_page,
		   unsigned char *buf, struct adj_count *slot)
{
	off_t at = (off_t)(index * PAGE);
	unsigned char resident = 0;
	int span = adj_class(slot->adj);
	ssize_t n;

	if (map && !mincore((void *)(map + index * PAGE), PAGE, &resident))
		slot->hits += resident & 1;
	if (write_page)
		memcpy(buf, &index, sizeof(index));
	manylab_span_begin_at(span);
	if (write_page)
		n = pwrite(fd, buf, PAGE, at);
	else
		n = pread(fd, buf, PAGE, at);
	manylab_span_end_at(span);
	if (write_page)
		slot->writes++;
	else
		slot->reads++;
	slot->requests++;
	return n == PAGE ? 0 : -1;
}

static unsigned char *map_for_mincore(int fd, uint64_t pages)
{
	void *map;

	if (!o.mincore || !pages)
		return NULL;
	map = mmap(NULL, pages * PAGE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		fail("mmap for mincore");
	return map;
}

static void pin_to_first_cpu(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, &set)) {
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
			return;
		}
	}
}

/* ---- the scenarios ---- */

struct app_slot {
	_Alignas(64) int go;		/* slice number + 1 to run; -1: exit */
	long quota;			/* requests in the current slice */
	pid_t pid;
	int error;
	struct counts counts;
};

struct shared {
	_Alignas(64) int done;		/* apps done with the current slice */
	_Alignas(64) int ready;		/* apps started and parked */
	struct app_slot apps[MAX_APPS];
};

static long app_pages(int f)
{
	long per = o.pages / o.files;

	return f == o.files - 1 ? o.pages - per * (o.files - 1) : per;
}

static void app_file(char *out, size_t len, int app, int f)
{
	snprintf(out, len, "%s/mobileapps.%d.%d", o.dir, app, f);
}

/* Write (or, with --reuse, check) app's files, fsync them and drop them from the page cache. */
static void setup_files(int app)
{
	static unsigned char chunk[64 * PAGE];
	char path[4096];

	for (int f = 0; f < o.files; f++) {
		off_t size = (off_t)app_pages(f) * PAGE;
		struct stat st;
		int fd;

		app_file(path, sizeof(path), app, f);
		if (o.reuse) {
			fd = open(path, O_RDWR);
			if (fd < 0 || fstat(fd, &st))
				fail(path);
			if (st.st_size != size) {
				fprintf(stderr, "%s: %s has %lld bytes, not %lld: --prepare it with the "
					"same --apps, --pages and --files\n", PROG, path,
					(long long)st.st_size, (long long)size);
				exit(1);
			}
		} else {
			fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
			if (fd < 0)
				fail(path);
			for (off_t at = 0; at < size; at += (off_t)sizeof(chunk)) {
				size_t len = size - at < (off_t)sizeof(chunk) ? (size_t)(size - at)
									      : sizeof(chunk);

				for (size_t p = 0; p < len; p += PAGE)
					snprintf((char *)chunk + p, PAGE, "mobileapps %d %d %lld", app,
						 f, (long long)((at + (off_t)p) / PAGE));
				if (pwrite(fd, chunk, len, at) != (ssize_t)len)
					fail(path);
			}
		}
		if (manylab_drop_cached(fd))
			fail(path);
		close(fd);
	}
}

/* x^-s for x >= 1, s >= 0, without libm (the image links no -lm): exp(-s ln x) by series. */
static double pow_neg(double x, double s)
{
	static const double ln2 = 0.69314718055994530942;
	double ln = 0, z, z2, term, sum, y, e = 1;
	long k;

	while (x >= 2) {	/* x = m 2^n, m in [1, 2) */
		x /= 2;
		ln += ln2;
	}
	z = (x - 1) / (x + 1);	/* ln m = 2 atanh z, z <= 1/3 */
	z2 = z * z;
	term = z;
	sum = 0;
	for (int i = 1; i < 60; i += 2) {
		sum += term / i;
		term *= z2;
	}
	ln += 2 * sum;
	y = -s * ln;		/* <= 0: y = -k ln2 + r, r in (-ln2, 0] */
	k = (long)(-y / ln2);
	y += (double)k * ln2;
	term = 1;
	sum = 1;
	for (int i = 1; i < 30; i++) {
		term *= y / i;
		sum += term;
	}
	while (k-- > 0)
		e /= 2;
	return sum * e;
}

/* The Zipf CDF over ranks 0..pages-1: P(rank r) proportional to 1 / (r + 1)^s. */
static double *zipf_cdf(long pages, double s)
{
	double *cdf = malloc((size_t)pages * sizeof(*cdf)), sum = 0;

	if (!cdf)
		fail("malloc");
	for (long r = 0; r < pages; r++) {
		sum += pow_neg((double)(r + 1), s);
		cdf[r] = sum;
	}
	for (long r = 0; r < pages; r++)
		cdf[r] /= sum;
	return cdf;
}

static long zipf_rank(const double *cdf, long pages, uint64_t *rng)
{
	double u = uniform(rng);
	long lo = 0, hi = pages - 1;

	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;

		if (cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void app_main(int app, struct shared *sh, const double *cdf)
{
	struct app_slot *me = &sh->apps[app];
	int fds[o.files], seen = 0;
	unsigned char *maps[o.files];
	long *perm = malloc((size_t)o.pages * sizeof(*perm));
	unsigned char *buf = aligned_alloc(PAGE, PAGE);
	uint64_t rng = o.seed * 0x2545f4914f6cdd1dull + (uint64_t)app + 1;
	char path[4096];

	if (!perm || !buf)
		fail("malloc");
	/* rank -> page: the app's hot pages scattered over its files */
	for (long i = 0; i < o.pages; i++)
		perm[i] = i;
	for (long i = o.pages; i > 1; i--) {
		long j = (long)(manylab_splitmix(&rng) % (uint64_t)i), t = perm[i - 1];

		perm[i - 1] = perm[j];
		perm[j] = t;
	}
	memset(buf, 0, PAGE);
	for (int f = 0; f < o.files; f++) {
		app_file(path, sizeof(path), app, f);
		fds[f] = open(path, O_RDWR | O_CLOEXEC);
		if (fds[f] < 0)
			fail(path);
		maps[f] = map_for_mincore(fds[f], (uint64_t)app_pages(f));
	}
	manylab_count_done(&sh->ready, o.apps);
	for (;;) {
		struct adj_count *slot;
		int go;

		manylab_futex_wait_while(&me->go, seen);
		go = __atomic_load_n(&me->go, __ATOMIC_ACQUIRE);
		if (go < 0)
			break;
		seen = go;
		slot = count_slot(&me->counts, read_adj());
		for (long i = 0; i < me->quota && slot; i++) {
			long page = perm[zipf_rank(cdf, o.pages, &rng)];
			long per = o.pages / o.files;
			int f = (int)(page / per < o.files ? page / per : o.files - 1);
			uint64_t index = (uint64_t)(page - (long)f * per);
			int write_page = (double)(hash2((uint64_t)app, (uint64_t)page) >> 11) *
						 0x1.0p-53 < o.write_pages &&
					 uniform(&rng) < o.write_prob;

			if (request(fds[f], maps[f], index, write_page, buf, slot) && !me->error)
				me->error = errno ? errno : EIO;
		}
		if (!slot)
			me->counts.errors++;
		__atomic_add_fetch(&sh->done, 1, __ATOMIC_ACQ_REL);
		manylab_futex(&sh->done, FUTEX_WAKE, 1);	/* the controller waits for its count */
	}
	_exit(0);
}

struct plan {
	long switches;
	double elapsed;
};

static int run_scenario(struct counts *total, struct plan *plan)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int adj[MAX_APPS], lru[MAX_APPS], fg = 0, failed = 0;
	uint64_t rng = o.seed * 0x9e3779b97f4a7c15ull + 0x5eed;
	long fg_so_far = 0, total_so_far = 0, slices = 0;
	double *cdf, t0;

	if (sh == MAP_FAILED)
		fail("mmap");
	for (int a = 0; a < o.apps; a++)
		setup_files(a);
	if (o.prepare)
		return 0;
	cdf = zipf_cdf(o.pages, o.zipf);
	/* first importance: push: app 0 foreground, the rest services; switch: apps launched
	 * in the order apps-1 .. 0, so app 0 is foreground, app 1 previous, then cached */
	for (int a = 0; a < o.apps; a++) {
		lru[a] = a;
		if (a == 0)
			adj[a] = FOREGROUND_APP_ADJ;
		else if (o.scenario == S_PUSH)
			adj[a] = SERVICE_ADJ;
		else if (a == 1)
			adj[a] = PREVIOUS_APP_ADJ;
		else
			adj[a] = CACHED_APP_MIN_ADJ + CACHED_SLOT * (a - 2) > CACHED_APP_MAX_ADJ ?
					 CACHED_APP_MAX_ADJ : CACHED_APP_MIN_ADJ + CACHED_SLOT * (a - 2);
	}
	fflush(stdout);
	for (int a = 0; a < o.apps; a++) {
		pid_t pid = fork_child();

		if (pid == 0) {
			/* the app sets its own, as it starts */
			sh->apps[a].error = set_adj(0, adj[a]);
			app_main(a, sh, cdf);
		}
		sh->apps[a].pid = pid;
	}
	manylab_wait_count(&sh->ready, o.apps);

	manylab_roi_begin(0);
	manylab_roi_phase(1);
	t0 = manylab_now();
	while (total_so_far < o.requests) {
		long n = o.requests - total_so_far < o.slice ? o.requests - total_so_far : o.slice;
		long fg_target = (long)(o.fg_share * (double)(total_so_far + n) + 0.5);
		long fq = fg_target - fg_so_far, bq;
		int released = 0;

		if (fq < 0)
			fq = 0;
		if (fq > n)
			fq = n;
		bq = n - fq;
		if (o.scenario == S_SWITCH && slices > 0 && o.switch_every > 0 &&
		    slices % o.switch_every == 0 && o.apps > 1) {
			/* a random other app comes to the foreground */
			int to = (int)(manylab_splitmix(&rng) % (uint64_t)(o.apps - 1)), pos = 0;

			if (to >= fg)
				to++;
			while (lru[pos] != to)
				pos++;
			memmove(&lru[1], &lru[0], (size_t)pos * sizeof(lru[0]));
			lru[0] = to;
			for (int k = 0; k < o.apps; k++) {
				int a = lru[k], want = k == 0 ? FOREGROUND_APP_ADJ :
						       k == 1 ? PREVIOUS_APP_ADJ :
						       CACHED_APP_MIN_ADJ + CACHED_SLOT * (k - 2);

				if (want > CACHED_APP_MAX_ADJ)
					want = CACHED_APP_MAX_ADJ;
				if (want != adj[a]) {
					failed |= set_adj(sh->apps[a].pid, want) != 0;
					adj[a] = want;
				}
			}
			fg = to;
			plan->switches++;
		}
		for (int a = 0; a < o.apps; a++)
			sh->apps[a].quota = a == fg ? fq : 0;
		if (o.apps > 1 && bq > 0) {
			if (o.scenario == S_PUSH) {
				int to = 1 + (int)(manylab_splitmix(&rng) % (uint64_t)(o.apps - 1));

				sh->apps[to].quota += bq;
			} else {
				for (long i = 0; i < bq; i++) {
					int to = (int)(manylab_splitmix(&rng) % (uint64_t)(o.apps - 1));

					sh->apps[to >= fg ? to + 1 : to].quota++;
				}
			}
		} else {
			sh->apps[fg].quota += bq;
		}
		__atomic_store_n(&sh->done, 0, __ATOMIC_RELEASE);
		for (int a = 0; a < o.apps; a++) {
			if (!sh->apps[a].quota)
				continue;
			manylab_futex_set(&sh->apps[a].go, (int)slices + 1);
			released++;
			if (o.serial)
				manylab_wait_count(&sh->done, released);
		}
		manylab_wait_count(&sh->done, released);
		fg_so_far += fq;
		total_so_far += n;
		slices++;
	}
	plan->elapsed = manylab_now() - t0;
	manylab_roi_end(0);

	for (int a = 0; a < o.apps; a++)
		manylab_futex_set(&sh->apps[a].go, -1);
	for (int a = 0; a < o.apps; a++) {
		failed |= child_failed(sh->apps[a].pid, sh->apps[a].error, "app", (unsigned int)a);
		count_merge(total, &sh->apps[a].counts);
	}
	if (!o.keep) {
		char path[4096];

		for (int a = 0; a < o.apps; a++)
			for (int f = 0; f < o.files; f++) {
				app_file(path, sizeof(path), a, f);
				unlink(path);
			}
	}
	free(cdf);
	return failed;
}

/* ---- replay ---- */

struct rec {
	uint64_t index;
	uint32_t file;
	uint32_t worker;
	int16_t adj;
	uint8_t write;
};

/* interning of 128-bit keys (dev/ino, pid) into 0, 1, 2, ... in order of first appearance */
struct intern {
	uint64_t *a, *b;
	uint32_t *id;
	size_t cap, n;
};

static uint32_t intern(struct intern *t, uint64_t a, uint64_t b)
{
	size_t i;

	if ((t->n + 1) * 2 > t->cap) {
		struct intern g = { .cap = t->cap ? t->cap * 2 : 64 };

		g.a = calloc(g.cap, sizeof(*g.a));
		g.b = calloc(g.cap, sizeof(*g.b));
		g.id = calloc(g.cap, sizeof(*g.id));
		if (!g.a || !g.b || !g.id)
			fail("malloc");
		for (i = 0; i < t->cap; i++) {
			if (t->id[i]) {
				size_t j = hash2(t->a[i], t->b[i]) & (g.cap - 1);

				while (g.id[j])
					j = (j + 1) & (g.cap - 1);
				g.a[j] = t->a[i];
				g.b[j] = t->b[i];
				g.id[j] = t->id[i];
			}
		}
		g.n = t->n;
		free(t->a);
		free(t->b);
		free(t->id);
		*t = g;
	}
	i = hash2(a, b) & (t->cap - 1);
	while (t->id[i]) {
		if (t->a[i] == a && t->b[i] == b)
			return t->id[i] - 1;
		i = (i + 1) & (t->cap - 1);
	}
	t->a[i] = a;
	t->b[i] = b;
	t->id[i] = (uint32_t)++t->n;
	return t->id[i] - 1;
}

enum { K_TIME, K_DEV, K_INO, K_INDEX, K_PID, K_STATE, K_OOM_ADJ, K_OOM_SCORE_ADJ, K_OP, NKEYS };
static const char *column_name[] = { "time", "dev", "ino", "index", "pid", "state", "oom_adj",
				     "oom_score_adj", "op" };

static int parse_u64(const char *text, uint64_t *out)
{
	char *end;

	errno = 0;
	if (*text < '0' || *text > '9')
		return -1;
	*out = strtoull(text, &end, 10);
	return errno || *end ? -1 : 0;
}

static int state_adj(const char *s)
{
	static const int adj[] = { FOREGROUND_APP_ADJ, VISIBLE_APP_ADJ, SERVICE_ADJ,
				   PREVIOUS_APP_ADJ, CACHED_APP_MIN_ADJ };

	for (int c = 0; c < NCLASSES; c++)
		if (!strcmp(s, class_name[c]))
			return adj[c];
	return INT_MIN;
}

struct trace {
	struct rec *recs;
	size_t n, cap;
	uint64_t *max_index;	/* per file */
	uint32_t files, workers;
};

static void load_trace(const char *path, struct trace *tr)
{
	struct intern files = { 0 }, pids = { 0 };
	int col[NKEYS], header = 0, ncols = 0;
	char line[4096];
	unsigned long lineno = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		fail(path);
	memset(tr, 0, sizeof(*tr));
	for (int k = 0; k < NKEYS; k++)
		col[k] = -1;
	while (fgets(line, sizeof(line), f)) {
		char *fields[32], *p = line, *end;
		int nf = 0, adj;
		uint64_t v[NKEYS] = { 0 };
		struct rec r = { 0 };

		lineno++;
		end = line + strcspn(line, "\r\n");
		*end = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		while (nf < 32) {
			fields[nf++] = p;
			p = strchr(p, ',');
			if (!p)
				break;
			*p++ = '\0';
		}
		if (!header) {
			for (int i = 0; i < nf; i++)
				for (int k = 0; k < NKEYS; k++)
					if (!strcmp(fields[i], column_name[k]))
						col[k] = i;
			ncols = nf;
			header = 1;
			if (col[K_INDEX] < 0 || col[K_OP] < 0 ||
			    (col[K_STATE] < 0 && col[K_OOM_ADJ] < 0 && col[K_OOM_SCORE_ADJ] < 0)) {
				fprintf(stderr, "%s: %s line %lu: the header must name 'index', 'op' "
					"and 'oom_score_adj', 'oom_adj' or 'state'\n", PROG, path,
					lineno);
				exit(2);
			}
			continue;
		}
		if (nf != ncols)
			goto bad;
		for (int k = 0; k < NKEYS; k++) {
			if (k == K_STATE || k == K_OP || k == K_OOM_ADJ || k == K_OOM_SCORE_ADJ ||
			    col[k] < 0)
				continue;
			if (parse_u64(fields[col[k]], &v[k]))
				goto bad;
		}
		adj = INT_MIN;
		if (col[K_OOM_SCORE_ADJ] >= 0 && fields[col[K_OOM_SCORE_ADJ]][0])
			adj = atoi(fields[col[K_OOM_SCORE_ADJ]]);
		else if (col[K_OOM_ADJ] >= 0 && fields[col[K_OOM_ADJ]][0])
			adj = atoi(fields[col[K_OOM_ADJ]]) * 100;
		else if (col[K_STATE] >= 0 && fields[col[K_STATE]][0])
			adj = state_adj(fields[col[K_STATE]]);
		if (adj == INT_MIN)
			goto bad;
		if (adj > 1000)
			adj = 1000;
		if (adj < -1000)
			adj = -1000;
		if (!strcmp(fields[col[K_OP]], "R") || !strcmp(fields[col[K_OP]], "r") ||
		    !strcmp(fields[col[K_OP]], "read"))
			r.write = 0;
		else if (!strcmp(fields[col[K_OP]], "W") || !strcmp(fields[col[K_OP]], "w") ||
			 !strcmp(fields[col[K_OP]], "write"))
			r.write = 1;
		else
			goto bad;
		if (v[K_INDEX] >= (1ull << 40))
			goto bad;
		r.index = v[K_INDEX];
		r.adj = (int16_t)adj;
		r.file = intern(&files, v[K_DEV], v[K_INO]);
		r.worker = intern(&pids, v[K_PID], 0);
		if (pids.n > MAX_WORKERS) {
			fprintf(stderr, "%s: %s: more than %d processes\n", PROG, path, MAX_WORKERS);
			exit(2);
		}
		if (tr->n == tr->cap) {
			tr->cap = tr->cap ? tr->cap * 2 : 4096;
			tr->recs = realloc(tr->recs, tr->cap * sizeof(*tr->recs));
			if (!tr->recs)
				fail("malloc");
		}
		if (r.file >= tr->files) {
			tr->max_index = realloc(tr->max_index, (r.file + 1) * sizeof(uint64_t));
			if (!tr->max_index)
				fail("malloc");
			tr->max_index[r.file] = 0;
			tr->files = r.file + 1;
		}
		if (r.index > tr->max_index[r.file])
			tr->max_index[r.file] = r.index;
		tr->recs[tr->n++] = r;
		continue;
bad:
		fprintf(stderr, "%s: %s line %lu (record %zu): bad record (index < 2^40, op R or W, "
			"an oom value or state)\n", PROG, path, lineno, tr->n + 1);
		exit(2);
	}
	if (ferror(f))
		fail(path);
	fclose(f);
	tr->workers = (uint32_t)pids.n;
	free(files.a);
	free(files.b);
	free(files.id);
	free(pids.a);
	free(pids.b);
	free(pids.id);
}

struct replay_shared {
	_Alignas(64) int finished;
	_Alignas(64) int ready;
	_Alignas(64) size_t next;	/* the next record to issue */
	struct {
		_Alignas(64) int go;	/* 1: your turn; -1: exit */
		int error;
		struct counts counts;
	} w[];
};

static void replay_worker(uint32_t me, struct replay_shared *sh, const struct trace *tr,
			  const int *fds, unsigned char *const *maps)
{
	unsigned char *buf = aligned_alloc(PAGE, PAGE);
	int adj = read_adj();

	if (!buf)
		fail("malloc");
	memset(buf, 0, PAGE);
	manylab_count_done(&sh->ready, (int)tr->workers);
	for (;;) {
		size_t i;

		manylab_futex_wait_while(&sh->w[me].go, 0);
		if (__atomic_load_n(&sh->w[me].go, __ATOMIC_ACQUIRE) < 0)
			break;
		i = sh->next;
		while (i < tr->n && tr->recs[i].worker == me) {
			const struct rec *r = &tr->recs[i];
			struct adj_count *slot;

			if (r->adj != adj) {
				int error = set_adj(0, r->adj);

				if (error && !sh->w[me].error)
					sh->w[me].error = error;
				adj = error ? read_adj() : r->adj;	/* count what it is */
			}
			slot = count_slot(&sh->w[me].counts, adj);
			if (!slot)
				sh->w[me].counts.errors++;
			else if (request(fds[r->file], maps[r->file], r->index, r->write, buf, slot) &&
				 !sh->w[me].error)
				sh->w[me].error = errno ? errno : EIO;
			i++;
		}
		sh->next = i;
		__atomic_store_n(&sh->w[me].go, 0, __ATOMIC_RELAXED);
		if (i == tr->n)
			manylab_futex_set(&sh->finished, 1);
		else
			manylab_futex_set(&sh->w[tr->recs[i].worker].go, 1);
	}
	_exit(0);
}

static int run_replay(struct counts *total, struct plan *plan)
{
	struct trace tr;
	struct replay_shared *sh;
	size_t size;
	int *fds, failed = 0;
	unsigned char **maps;
	pid_t *pids;
	double t0;

	load_trace(o.replay, &tr);
	if (o.pin)
		pin_to_first_cpu();
	fds = calloc(tr.files + 1, sizeof(*fds));
	maps = calloc(tr.files + 1, sizeof(*maps));
	pids = calloc(tr.workers + 1, sizeof(*pids));
	if (!fds || !maps || !pids)
		fail("malloc");
	for (uint32_t f = 0; f < tr.files; f++) {
		char path[4096];
		uint64_t pages = tr.max_index[f] + 1;

		snprintf(path, sizeof(path), "%s/replay.%u", o.dir, f);
		fds[f] = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fds[f] < 0)
			fail(path);
		if (ftruncate(fds[f], (off_t)(pages * PAGE)))
			fail(path);
		maps[f] = map_for_mincore(fds[f], pages);
	}
	size = sizeof(*sh) + (tr.workers + 1) * sizeof(sh->w[0]);
	sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		fail("mmap");
	fflush(stdout);
	for (uint32_t w = 0; w < tr.workers; w++) {
		pid_t pid = fork_child();

		if (pid == 0)
			replay_worker(w, sh, &tr, fds, maps);
		pids[w] = pid;
	}
	manylab_wait_count(&sh->ready, (int)tr.workers);

	manylab_roi_begin(0);
	manylab_roi_phase(1);
	t0 = manylab_now();
	if (tr.n) {
		manylab_futex_set(&sh->w[tr.recs[0].worker].go, 1);
		manylab_futex_wait_while(&sh->finished, 0);
	}
	plan->elapsed = manylab_now() - t0;
	manylab_roi_end(0);

	for (uint32_t w = 0; w < tr.workers; w++)
		manylab_futex_set(&sh->w[w].go, -1);
	for (uint32_t w = 0; w < tr.workers; w++) {
		failed |= child_failed(pids[w], sh->w[w].error, "replay worker", w);
		count_merge(total, &sh->w[w].counts);
	}
	for (uint32_t f = 0; f < tr.files; f++) {
		close(fds[f]);
		if (!o.keep) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/replay.%u", o.dir, f);
			unlink(path);
		}
	}
	o.apps = (int)tr.workers;
	o.files = (int)tr.files;
	return failed;
}

/* ---- the result ---- */

static int cmp_adj(const void *a, const void *b)
{
	const struct adj_count *x = a, *y = b;

	return (x->adj > y->adj) - (x->adj < y->adj);
}

static void print_result(struct counts *c, const struct plan *plan, int failed)
{
	uint64_t req = 0, reads = 0, writes = 0, hits = 0, fg = 0;
	uint64_t cls_req[NCLASSES] = { 0 }, cls_hits[NCLASSES] = { 0 };
	int n = 0, first = 1;

	for (int i = 0; i < MAX_ADJS; i++)
		if (c->by[i].used)
			c->by[n++] = c->by[i];
	qsort(c->by, (size_t)n, sizeof(c->by[0]), cmp_adj);
	for (int i = 0; i < n; i++) {
		int k = adj_class(c->by[i].adj);

		req += c->by[i].requests;
		reads += c->by[i].reads;
		writes += c->by[i].writes;
		hits += c->by[i].hits;
		cls_req[k] += c->by[i].requests;
		cls_hits[k] += c->by[i].hits;
	}
	fg = cls_req[C_FOREGROUND];
	printf("MANYLAB-RESULT {\"workload\":\"mobileapps\",\"scenario\":\"%s\",\"seed\":%" PRIu64,
	       scenario_name[o.scenario], o.seed);
	if (o.scenario == S_REPLAY) {
		printf(",\"processes\":%d,\"files\":%d", o.apps, o.files);
	} else {
		printf(",\"apps\":%d,\"pages\":%ld,\"files\":%d,\"zipf\":%.3f,\"fg_share_target\":%.6f,"
		       "\"slice\":%ld,\"switch_every\":%ld,\"switches\":%ld,\"serial\":%s",
		       o.apps, o.pages, o.files, o.zipf, o.fg_share, o.slice, o.switch_every,
		       plan->switches, o.serial ? "true" : "false");
	}
	printf(",\"requests\":%" PRIu64 ",\"reads\":%" PRIu64 ",\"writes\":%" PRIu64, req, reads,
	       writes);
	if (o.mincore)
		printf(",\"hits\":%" PRIu64 ",\"hit_ratio\":%.6f", hits,
		       req ? (double)hits / (double)req : 0.0);
	else
		printf(",\"hits\":null,\"hit_ratio\":null");
	printf(",\"fg_requests\":%" PRIu64 ",\"bg_requests\":%" PRIu64 ",\"fg_share\":%.6f", fg,
	       req - fg, req ? (double)fg / (double)req : 0.0);
	if (req > fg)
		printf(",\"fg_bg_ratio\":%.4f", (double)fg / (double)(req - fg));
	else
		printf(",\"fg_bg_ratio\":null");
	printf(",\"by_class\":{");
	for (int k = 0; k < NCLASSES; k++) {
		printf("%s\"%s\":{\"requests\":%" PRIu64, k ? "," : "", class_name[k], cls_req[k]);
		if (o.mincore)
			printf(",\"hits\":%" PRIu64, cls_hits[k]);
		printf("}");
	}
	printf("},\"by_oom_score_adj\":{");
	for (int i = 0; i < n; i++) {
		const struct adj_count *a = &c->by[i];

		printf("%s\"%d\":{\"requests\":%" PRIu64 ",\"reads\":%" PRIu64 ",\"writes\":%" PRIu64,
		       first ? "" : ",", a->adj, a->requests, a->reads, a->writes);
		if (o.mincore)
			printf(",\"hits\":%" PRIu64, a->hits);
		printf("}");
		first = 0;
	}
	printf("},\"elapsed_s\":%.6f,\"requests_per_s\":%.1f,\"dir\":\"%s\",\"ok\":%s}\n",
	       plan->elapsed, plan->elapsed > 0 ? (double)req / plan->elapsed : 0.0, o.dir,
	       failed ? "false" : "true");
	fflush(stdout);
}

/* ---- options ---- */

static void usage(FILE *out)
{
	fprintf(out,
"usage: mobileapps [options]\n"
"  --scenario S       push (one foreground app, background push services; fg share 15/16)\n"
"                     or switch (apps take turns in the foreground; fg share 3/4)\n"
"  --replay FILE      issue a pcmsim CSV trace's records as page requests, in order\n"
"  --requests N       requests in the request phase (default 20000)\n"
"  --apps N           apps, one process each (default: push 3, switch 8; max %d)\n"
"  --pages N          pages per app, over its files (default 2048)\n"
"  --files N          files per app (default 4)\n"
"  --zipf S           Zipf exponent of page popularity (default 0.9)\n"
"  --fg-share F       foreground share of the requests (default: push 0.9375, switch 0.75)\n"
"  --slice N          requests per slice (default 500)\n"
"  --switch-every N   switch: slices between foreground switches (default 4)\n"
"  --write-pages F    share of write-prone pages (default 0.25)\n"
"  --write-prob F     chance that a request to one is a write (default 0.5)\n"
"  --seed N           seed of everything random (default 1)\n"
"  --serial           apps take turns inside a slice instead of running together\n"
"  --no-mincore       do not measure hits with mincore()\n"
"  --prepare          only write the files (and keep them)\n"
"  --reuse            use the files a --prepare run wrote (same apps, pages, files)\n"
"  --keep             keep the files\n"
"  --no-pin           replay: do not pin the processes to one CPU\n"
"  --dir DIR          directory for the files (default /tmp)\n"
"Prints one line: MANYLAB-RESULT {json}.\n", MAX_APPS);
}

static double double_arg(const char *flag, const char *text, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || *end || !(v >= min && v <= max)) {
		fprintf(stderr, "%s: %s wants a number from %g to %g, not '%s'\n", PROG, flag, min,
			max, text);
		exit(2);
	}
	return v;
}

static void parse_options(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "scenario", 1, 0, 's' }, { "replay", 1, 0, 'R' }, { "requests", 1, 0, 'n' },
		{ "apps", 1, 0, 'a' }, { "pages", 1, 0, 'p' }, { "files", 1, 0, 'f' },
		{ "zipf", 1, 0, 'z' }, { "fg-share", 1, 0, 'F' }, { "slice", 1, 0, 'l' },
		{ "switch-every", 1, 0, 'w' }, { "write-pages", 1, 0, 'W' },
		{ "write-prob", 1, 0, 'P' }, { "seed", 1, 0, 'S' }, { "serial", 0, 0, 'e' },
		{ "no-mincore", 0, 0, 'M' }, { "prepare", 0, 0, 'r' }, { "reuse", 0, 0, 'u' },
		{ "keep", 0, 0, 'k' }, { "no-pin", 0, 0, 'N' }, { "dir", 1, 0, 'd' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	int c, scenario_given = 0;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			scenario_given = 1;
			if (!strcmp(optarg, "push")) {
				o.scenario = S_PUSH;
			} else if (!strcmp(optarg, "switch")) {
				o.scenario = S_SWITCH;
			} else {
				fprintf(stderr, "%s: --scenario is push or switch\n", PROG);
				exit(2);
			}
			break;
		case 'R': o.replay = optarg; break;
		case 'n': o.requests = manylab_num_arg(PROG, "--requests", optarg, 0, LONG_MAX / 2); break;
		case 'a': o.apps = (int)manylab_num_arg(PROG, "--apps", optarg, 1, MAX_APPS); break;
		case 'p': o.pages = manylab_num_arg(PROG, "--pages", optarg, 1, 1L << 28); break;
		case 'f': o.files = (int)manylab_num_arg(PROG, "--files", optarg, 1, 256); break;
		case 'z': o.zipf = double_arg("--zipf", optarg, 0, 10); break;
		case 'F': o.fg_share = double_arg("--fg-share", optarg, 0, 1); break;
		case 'l': o.slice = manylab_num_arg(PROG, "--slice", optarg, 1, LONG_MAX / 2); break;
		case 'w': o.switch_every = manylab_num_arg(PROG, "--switch-every", optarg, 0, LONG_MAX); break;
		case 'W': o.write_pages = double_arg("--write-pages", optarg, 0, 1); break;
		case 'P': o.write_prob = double_arg("--write-prob", optarg, 0, 1); break;
		case 'S': o.seed = (uint64_t)manylab_num_arg(PROG, "--seed", optarg, 0, LONG_MAX); break;
		case 'e': o.serial = 1; break;
		case 'M': o.mincore = 0; break;
		case 'r': o.prepare = 1; o.keep = 1; break;
		case 'u': o.reuse = 1; break;
		case 'k': o.keep = 1; break;
		case 'N': o.pin = 0; break;
		case 'd': o.dir = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc || (o.replay && (scenario_given || o.prepare || o.reuse)) ||
	    (o.prepare && o.reuse)) {
		fprintf(stderr, "%s: bad arguments (--replay takes no scenario, --prepare no "
			"--reuse)\n", PROG);
		usage(stderr);
		exit(2);
	}
	if (o.replay) {
		o.scenario = S_REPLAY;
		return;
	}
	if (o.apps < 0)
		o.apps = o.scenario == S_PUSH ? 3 : 8;
	if (o.fg_share < 0)
		o.fg_share = o.scenario == S_PUSH ? 15.0 / 16.0 : 3.0 / 4.0;
	if (o.switch_every < 0)
		o.switch_every = o.scenario == S_SWITCH ? 4 : 0;
	if (o.scenario == S_PUSH)
		o.switch_every = 0;
	if (o.pages < o.files) {
		fprintf(stderr, "%s: --pages (%ld) must be at least --files (%d)\n", PROG, o.pages,
			o.files);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct counts total;
	struct plan plan = { 0 };
	int failed;

	parse_options(argc, argv);
	controller = getpid();
	memset(&total, 0, sizeof(total));
	mkdir(o.dir, 0755);
	failed = o.scenario == S_REPLAY ? run_replay(&total, &plan) : run_scenario(&total, &plan);
	if (o.prepare) {
		/* not a result: the run that --reuse's the files prints it */
		printf("mobileapps: prepared %d apps x %d files, %ld pages each app, in %s\n", o.apps,
		       o.files, o.pages, o.dir);
		return 0;
	}
	if (total.errors) {
		fprintf(stderr, "%s: more than %d oom_score_adj values in one process\n", PROG,
			MAX_ADJS);
		failed = 1;
	}
	print_result(&total, &plan, failed);
	return failed ? 1 : 0;
}
