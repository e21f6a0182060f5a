// SPDX-License-Identifier: MIT
/*
 * mmf: serving a file to a local client, read()+write() versus write() from an mmap'ed file.
 *
 * The memory-mapped-file (MMF) transfer benchmark: a server process sends a file to a client
 * process on the same machine over a pipe, a UNIX stream socket or a TCP loopback connection.
 *   normal  the server read()s the file into a user buffer, then write()s the buffer (two copies)
 *   mmf     the server mmap()s the file and write()s straight from the mapping (one copy)
 *   n_open  the server opens (and maps) the file for every request, and closes (unmaps) it after
 *   l_open  the server opens (and maps) the file once; requests only do the I/O
 * For every combination of the selected paths, methods, open modes and sizes, the client asks
 * for the file TRANSFERS times (after WARMUP untimed requests). One request: the client writes
 * an 8-byte request, the server answers with the whole file, the client reads all of it. The
 * per-transfer latency is request sent -> last byte received, in guest time (CLOCK_MONOTONIC);
 * throughput = bytes / sum of latencies. Every received byte is checked against the file's
 * pattern (a hash of the offset and the measurement) outside the timed part.
 *
 * The UNIX path is a socketpair(AF_UNIX, SOCK_STREAM) (the same kernel send path as a bound
 * socket, without a socket file); TCP connects to 127.0.0.1 on an ephemeral port with
 * TCP_NODELAY on both ends (no Nagle/delayed-ACK stalls on the small requests).
 *
 * One line per measurement on stdout:  MANYLAB-RESULT {json}
 * The client's timed transfers are ROI region 0, phase 1; verification is phase 2.
 *
 * Build: gcc -static -O2 -pthread -Iworkloads/include workloads/mmf.c -o mmf
 *        aarch64-linux-gnu-gcc -static -O2 -pthread -Iworkloads/include workloads/mmf.c -o mmf
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "manylab_roi.h"
#include "manylab_util.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mmf checks data a 64-bit word at a time and assumes a little-endian machine"
#endif

#define MAX_SIZES 64
#define MAX_BUFFER (64u << 20)

enum path { PIPE, UNIX_SOCK, TCP, NPATHS };
enum method { NORMAL, MMF, NMETHODS };
enum open_mode { N_OPEN, L_OPEN, NOPENS };

static const char *const path_names[NPATHS] = { "pipe", "unix", "tcp" };
static const char *const method_names[NMETHODS] = { "normal", "mmf" };
static const char *const open_names[NOPENS] = { "n_open", "l_open" };

struct options {
	unsigned paths;		/* bit masks of the enums above */
	unsigned methods;
	unsigned opens;
	uint64_t sizes[MAX_SIZES];
	int nsizes;
	long transfers;
	long warmup;
	uint32_t buffer;
	int verify_all;		/* 0: verify the first transfer of each measurement only */
	const char *dir;
};

/* What the server measured; sent to the client over a pipe when it is done. */
struct server_report {
	double setup_s;		/* sum over timed transfers: open (+mmap) and munmap (+close) */
	double step_s[4];	/* n_open: the same split by call: open, mmap, munmap, close */
	double send_s;		/* sum over timed transfers: read+write or write from the map */
	double setup_once_s;	/* l_open: the one open (+mmap) before the first request */
	long minflt;		/* minor page faults during the timed transfers */
	long majflt;
	long served;
	int error;		/* errno of the first failure, 0 if none */
	char what[48];		/* the call that failed */
};

/* One measurement as the client saw it. */
struct measurement {
	int index;
	enum path path;
	enum method method;
	enum open_mode open;
	uint64_t size;
	double *latency;	/* seconds, one per timed transfer */
	uint64_t verified_bytes;
	uint64_t mismatches;
	int error;
	char what[48];
	struct server_report server;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: mmf [options]\n"
		"  -p, --path LIST       pipe, unix, tcp, comma list or all (default all)\n"
		"  -m, --method LIST     normal (read+write), mmf (write from mmap), or all (default)\n"
		"  -o, --open LIST       n_open (open+map per request), l_open (once), or all (default)\n"
		"  -s, --sizes LIST      file sizes, comma list, suffix K/M/G (default 1K,1M,3M,5M)\n"
		"  -n, --transfers N     timed transfers per measurement (default 100)\n"
		"  -w, --warmup N        untimed transfers before them (default 1)\n"
		"  -b, --buffer BYTES    normal: user buffer of each read() (default 64K)\n"
		"  -v, --verify MODE     all (every transfer, default) or first (first of each)\n"
		"  -d, --dir DIR         directory for the served files (default /tmp)\n"
		"  -h, --help            this text\n"
		"One line per measurement: MANYLAB-RESULT {json}. Exit 1 on an I/O error or a byte\n"
		"that differs from what the server sent; 2 on bad arguments.\n");
}

/* "a,b" or "all" -> bit mask over names[]; -1 on an unknown word. */
static int parse_choices(const char *text, const char *const names[], int n)
{
	char copy[256], *rest = copy, *word;
	int mask = 0;

	if (!strcmp(text, "all"))
		return (1 << n) - 1;
	if (strlen(text) >= sizeof(copy))
		return -1;
	strcpy(copy, text);
	while ((word = strsep(&rest, ","))) {
		int found = -1;

		for (int i = 0; i < n; i++)
			if (!strcmp(word, names[i]))
				found = i;
		if (found < 0)
			return -1;
		mask |= 1 << found;
	}
	return mask ? mask : -1;
}

static int parse_sizes(const char *text, struct options *o)
{
	char copy[1024], *rest = copy, *word;

	if (strlen(text) >= sizeof(copy))
		return -1;
	strcpy(copy, text);
	o->nsizes = 0;
	while ((word = strsep(&rest, ","))) {
		if (o->nsizes == MAX_SIZES || manylab_parse_size(word, &o->sizes[o->nsizes]) ||
		    o->sizes[o->nsizes] == 0)
			return -1;
		o->nsizes++;
	}
	return o->nsizes ? 0 : -1;
}

static int bad(const char *what)
{
	return manylab_bad_args(usage, "mmf: bad arguments: %s\n", what);
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "path", required_argument, NULL, 'p' },      { "method", required_argument, NULL, 'm' },
		{ "open", required_argument, NULL, 'o' },      { "sizes", required_argument, NULL, 's' },
		{ "transfers", required_argument, NULL, 'n' }, { "warmup", required_argument, NULL, 'w' },
		{ "buffer", required_argument, NULL, 'b' },    { "verify", required_argument, NULL, 'v' },
		{ "dir", required_argument, NULL, 'd' },       { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t value;
	char *end;
	int c, mask;

	*o = (struct options){ .paths = 7, .methods = 3, .opens = 3, .transfers = 100, .warmup = 1,
			       .buffer = 64 << 10, .verify_all = 1, .dir = "/tmp" };
	parse_sizes("1K,1M,3M,5M", o);
	while ((c = getopt_long(argc, argv, "p:m:o:s:n:w:b:v:d:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((mask = parse_choices(optarg, path_names, NPATHS)) < 0)
				return bad("--path takes pipe, unix, tcp (comma list) or all");
			o->paths = (unsigned)mask;
			break;
		case 'm':
			if ((mask = parse_choices(optarg, method_names, NMETHODS)) < 0)
				return bad("--method takes normal, mmf (comma list) or all");
			o->methods = (unsigned)mask;
			break;
		case 'o':
			if ((mask = parse_choices(optarg, open_names, NOPENS)) < 0)
				return bad("--open takes n_open, l_open (comma list) or all");
			o->opens = (unsigned)mask;
			break;
		case 's':
			if (parse_sizes(optarg, o))
				return bad("--sizes takes a comma list of sizes like 1K,64K,3M");
			break;
		case 'n':
			o->transfers = strtol(optarg, &end, 10);
			if (*end || end == optarg || o->transfers < 1)
				return bad("--transfers must be at least 1");
			break;
		case 'w':
			o->warmup = strtol(optarg, &end, 10);
			if (*end || end == optarg || o->warmup < 0)
				return bad("--warmup must be 0 or more");
			break;
		case 'b':
			if (manylab_parse_size(optarg, &value) || value == 0 || value > MAX_BUFFER)
				return bad("--buffer must be 1 byte to 64M");
			o->buffer = (uint32_t)value;
			break;
		case 'v':
			if (strcmp(optarg, "all") && strcmp(optarg, "first"))
				return bad("--verify takes all or first");
			o->verify_all = !strcmp(optarg, "all");
			break;
		case 'd': o->dir = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: return bad("unknown option");
		}
	}
	if (optind != argc)
		return bad("unexpected operand");
	return 0;
}

/* The file's contents: 64-bit word k at offset 8k is a hash of k and the measurement. */
static inline uint64_t pattern_word(uint64_t k, uint64_t seed)
{
	uint64_t z = k * 0x9e3779b97f4a7c15ull + seed * 0xd1b54a32d192ed03ull + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Fill buf with bytes [offset, offset+len) of the pattern; offset is a multiple of 8. */
static void fill_pattern(uint8_t *buf, uint64_t offset, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t word = pattern_word((offset + i) / 8, seed);

		memcpy(buf + i, &word, len - i < 8 ? len - i : 8);
	}
}

static uint64_t count_mismatches(const uint8_t *buf, uint64_t len, uint64_t seed)
{
	uint64_t bad = 0, i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t got, want = pattern_word(i / 8, seed);

		memcpy(&got, buf + i, 8);
		if (got != want)
			for (int b = 0; b < 8; b++)
				bad += ((got ^ want) >> (8 * b) & 0xff) != 0;
	}
	if (i < len) {
		uint64_t want = pattern_word(i / 8, seed);

		for (uint64_t b = 0; i + b < len; b++)
			bad += buf[i + b] != (uint8_t)(want >> (8 * b));
	}
	return bad;
}

static void file_name(char *out, size_t len, const struct options *o, int index)
{
	snprintf(out, len, "%s/mmf.%d.%d", o->dir, (int)getpid(), index);
}

static int create_file(const char *name, uint64_t size, uint64_t seed)
{
	uint8_t *buf = malloc(1 << 16);
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int rc = 0;

	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (uint64_t off = 0; off < size && !rc; off += 1 << 16) {
		size_t len = size - off < (1 << 16) ? (size_t)(size - off) : 1 << 16;

		fill_pattern(buf, off, len, seed);
		rc = write(fd, buf, len) == (ssize_t)len ? 0 : -1;
	}
	free(buf);
	if (close(fd))
		rc = -1;
	return rc;
}

/* ---- the server ---- */

struct served_file {
	int fd;
	uint8_t *map;
};

static void fail(struct server_report *r, const char *what)
{
	if (!r->error) {
		r->error = errno ? errno : EIO;
		snprintf(r->what, sizeof(r->what), "%s", what);
	}
}

enum step { OPEN_STEP, MAP_STEP, UNMAP_STEP, CLOSE_STEP };

/* Open (and map) the file; adds each call's time to steps[] when steps is not NULL. */
static int open_file(const char *name, enum method method, uint64_t size, struct served_file *f,
		     struct server_report *r, double *steps)
{
	double t0 = manylab_now(), t1;

	f->map = NULL;
	f->fd = open(name, O_RDONLY);
	t1 = manylab_now();
	if (steps)
		steps[OPEN_STEP] += t1 - t0;
	if (f->fd < 0) {
		fail(r, "open");
		return -1;
	}
	if (method == MMF) {
		void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, f->fd, 0);

		if (steps)
			steps[MAP_STEP] += manylab_now() - t1;
		if (map == MAP_FAILED) {
			fail(r, "mmap");
			return -1;
		}
		f->map = map;
	}
	return 0;
}

static void close_file(struct served_file *f, uint64_t size, double *steps)
{
	double t0 = manylab_now(), t1 = t0;

	if (f->map) {
		munmap(f->map, size);
		t1 = manylab_now();
		if (steps)
			steps[UNMAP_STEP] += t1 - t0;
	}
	if (f->fd >= 0) {
		close(f->fd);
		if (steps)
			steps[CLOSE_STEP] += manylab_now() - t1;
	}
	f->fd = -1;
	f->map = NULL;
}

static int send_file(int out, const struct served_file *f, enum method method, uint64_t size,
		     uint8_t *buf, uint32_t buffer, struct server_report *r)
{
	if (method == MMF) {
		if (manylab_write_all(out, f->map, size)) {
			fail(r, "write from the mapping");
			return -1;
		}
		return 0;
	}
	for (uint64_t off = 0; off < size;) {
		size_t want = size - off < buffer ? (size_t)(size - off) : buffer;
		ssize_t n = pread(f->fd, buf, want, (off_t)off);

		if (n <= 0) {
			fail(r, "read");
			return -1;
		}
		if (manylab_write_all(out, buf, (size_t)n)) {
			fail(r, "write from the buffer");
			return -1;
		}
		off += (uint64_t)n;
	}
	return 0;
}

static void server_main(const struct options *o, const struct measurement *m, const char *name,
			int requests, int data, int report)
{
	struct server_report r = { 0 };
	struct served_file f = { .fd = -1, .map = NULL };
	uint8_t *buf = m->method == NORMAL ? malloc(o->buffer) : NULL;
	struct rusage before, after;
	uint64_t request;
	double t0;

	if (m->method == NORMAL && !buf)
		fail(&r, "malloc");
	if (m->open == L_OPEN && !r.error) {
		t0 = manylab_now();
		open_file(name, m->method, m->size, &f, &r, NULL);
		r.setup_once_s = manylab_now() - t0;
	}
	getrusage(RUSAGE_SELF, &before);
	while (!r.error && manylab_read_all(requests, &request, sizeof(request)) == 0) {
		int timed = request >= (uint64_t)o->warmup;
		double t1, t2, t3, steps[4] = { 0 };

		t0 = manylab_now();
		if (m->open == N_OPEN && open_file(name, m->method, m->size, &f, &r, steps))
			break;
		t1 = manylab_now();
		if (send_file(data, &f, m->method, m->size, buf, o->buffer, &r))
			break;
		t2 = manylab_now();
		if (m->open == N_OPEN)
			close_file(&f, m->size, steps);
		t3 = manylab_now();
		if (timed) {
			for (int i = 0; i < 4; i++)
				r.step_s[i] += steps[i];
			r.setup_s += (t1 - t0) + (t3 - t2);
			r.send_s += t2 - t1;
			r.served++;
		}
		if (request == (uint64_t)o->warmup - 1)
			getrusage(RUSAGE_SELF, &before);
	}
	getrusage(RUSAGE_SELF, &after);
	r.minflt = after.ru_minflt - before.ru_minflt;
	r.majflt = after.ru_majflt - before.ru_majflt;
	close_file(&f, m->size, NULL);
	close(data);
	if (manylab_write_all(report, &r, sizeof(r)))
		_exit(2);
	_exit(r.error ? 1 : 0);
}

/* ---- the channels ---- */

struct channel {
	int server_in, server_out;	/* the server reads requests, writes data */
	int client_in, client_out;	/* the client reads data, writes requests */
	int listener;			/* tcp: accepted by the server after fork */
};

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int open_channel(enum path path, struct channel *ch)
{
	int fds[2], back[2];

	ch->listener = -1;
	if (path == PIPE) {
		if (pipe(fds) || pipe(back))
			return -1;
		ch->client_in = fds[0];
		ch->server_out = fds[1];
		ch->server_in = back[0];
		ch->client_out = back[1];
		return 0;
	}
	if (path == UNIX_SOCK) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
			return -1;
		ch->client_in = ch->client_out = fds[0];
		ch->server_in = ch->server_out = fds[1];
		return 0;
	}
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = 0 };
	socklen_t len = sizeof(addr);

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ch->listener = socket(AF_INET, SOCK_STREAM, 0);
	if (ch->listener < 0 || bind(ch->listener, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(ch->listener, 1) || getsockname(ch->listener, (struct sockaddr *)&addr, &len))
		return -1;
	ch->client_in = ch->client_out = socket(AF_INET, SOCK_STREAM, 0);
	if (ch->client_in < 0 || connect(ch->client_in, (struct sockaddr *)&addr, sizeof(addr)))
		return -1;
	set_nodelay(ch->client_in);
	ch->server_in = ch->server_out = -1;	/* accepted in the server */
	return 0;
}

static int server_side(struct channel *ch)
{
	if (ch->listener >= 0) {
		ch->server_in = ch->server_out = accept(ch->listener, NULL, NULL);
		close(ch->listener);
		if (ch->server_in < 0)
			return -1;
		set_nodelay(ch->server_in);
	}
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- the client: one measurement ---- */

static void client_fail(struct measurement *m, const char *what)
{
	if (!m->error) {
		m->error = errno ? errno : EIO;
		snprintf(m->what, sizeof(m->what), "%s", what);
	}
}

static void client_transfers(const struct options *o, struct measurement *m, int in, int out,
			     uint8_t *recv_buf, uint64_t seed)
{
	long total = o->warmup + o->transfers;

	manylab_roi_begin(0);
	for (long t = 0; t < total && !m->error; t++) {
		uint64_t request = (uint64_t)t;
		double t0, t1;

		manylab_roi_phase(1);
		t0 = manylab_now();
		if (manylab_write_all(out, &request, sizeof(request))) {
			client_fail(m, "write request");
			break;
		}
		if (manylab_read_all(in, recv_buf, m->size)) {
			client_fail(m, "read data");
			break;
		}
		t1 = manylab_now();
		manylab_roi_phase(2);
		if (t >= o->warmup)
			m->latency[t - o->warmup] = t1 - t0;
		if (o->verify_all || t == 0) {
			m->mismatches += count_mismatches(recv_buf, m->size, seed);
			m->verified_bytes += m->size;
		}
	}
	manylab_roi_end(0);
}

static void measure(const struct options *o, struct measurement *m)
{
	char name[4096];
	uint64_t seed = (uint64_t)m->index + 1;
	uint8_t *recv_buf = malloc(m->size);
	struct channel ch = { -1, -1, -1, -1, -1 };
	int report[2] = { -1, -1 };
	pid_t pid = -1;
	int status;

	file_name(name, sizeof(name), o, m->index);
	if (!recv_buf || !m->latency) {
		client_fail(m, "malloc");
		goto out;
	}
	if (create_file(name, m->size, seed)) {
		client_fail(m, "create the file");
		goto out;
	}
	if (pipe(report) || open_channel(m->path, &ch)) {
		client_fail(m, "set up the channel");
		goto out;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		client_fail(m, "fork");
		goto out;
	}
	if (pid == 0) {
		close(report[0]);
		if (ch.client_in != ch.client_out)
			close(ch.client_out);
		close(ch.client_in);
		if (server_side(&ch))
			_exit(3);
		server_main(o, m, name, ch.server_in, ch.server_out, report[1]);
	}
	close_fd(&report[1]);
	close_fd(&ch.listener);
	if (ch.server_in != ch.server_out)
		close_fd(&ch.server_out);
	close_fd(&ch.server_in);
	client_transfers(o, m, ch.client_in, ch.client_out, recv_buf, seed);
	/* EOF on the request channel ends the server. */
	if (ch.client_in != ch.client_out) {
		close_fd(&ch.client_out);
		close_fd(&ch.client_in);
	} else {
		shutdown(ch.client_out, SHUT_WR);
		close_fd(&ch.client_in);
		ch.client_out = -1;
	}
	if (manylab_read_all(report[0], &m->server, sizeof(m->server)))
		client_fail(m, "the server's report");
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		if (!m->error && !m->server.error) {
			errno = ECHILD;
			client_fail(m, "the server exited abnormally");
		}
out:
	close_fd(&report[0]);
	close_fd(&report[1]);
	close_fd(&ch.client_in);
	if (ch.client_out != ch.client_in)
		close_fd(&ch.client_out);
	close_fd(&ch.listener);
	unlink(name);
	free(recv_buf);
}

/* ---- the report ---- */

/* Square root without libm (the lab links workloads with -static and no -lm). */
static double root(double x)
{
	double r = x > 1 ? x : 1;

	if (x <= 0)
		return 0;
	for (int i = 0; i < 200; i++) {
		double next = 0.5 * (r + x / r);

		if (next >= r)
			break;
		r = next;
	}
	return r;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void print_json_string(const char *text)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static int print_result(const struct options *o, const struct measurement *m)
{
	long n = o->transfers;
	double *sorted = malloc((size_t)n * sizeof(double));
	double sum = 0, sq = 0, mean, std;
	int ok = !m->error && !m->server.error && !m->mismatches && m->server.served == n;

	if (!sorted)
		return 0;
	for (long i = 0; i < n; i++) {
		sorted[i] = m->latency[i];
		sum += sorted[i];
	}
	mean = sum / (double)n;
	for (long i = 0; i < n; i++)
		sq += (sorted[i] - mean) * (sorted[i] - mean);
	std = n > 1 ? root(sq / (double)(n - 1)) : 0;
	qsort(sorted, (size_t)n, sizeof(double), cmp_double);

	uint64_t bytes = m->size * (uint64_t)n;
	double served = m->server.served ? (double)m->server.served : 1;

	printf("MANYLAB-RESULT {\"workload\":\"mmf\",\"index\":%d,\"path\":\"%s\",\"method\":\"%s\","
	       "\"open\":\"%s\",\"size\":%" PRIu64 ",\"transfers\":%ld,\"warmup\":%ld,"
	       "\"buffer\":%u,\"verify\":\"%s\",\"dir\":",
	       m->index, path_names[m->path], method_names[m->method], open_names[m->open], m->size,
	       n, o->warmup, o->buffer, o->verify_all ? "all" : "first");
	print_json_string(o->dir);
	printf(",\"bytes\":%" PRIu64 ",\"seconds\":%.9f,\"throughput_mib_s\":%.3f,"
	       "\"latency_us\":{\"mean\":%.3f,\"std\":%.3f,\"min\":%.3f,\"p50\":%.3f,\"p99\":%.3f,"
	       "\"max\":%.3f},",
	       bytes, sum, sum > 0 ? (double)bytes / (1 << 20) / sum : 0, mean * 1e6, std * 1e6,
	       sorted[0] * 1e6, sorted[(n - 1) / 2] * 1e6, sorted[(size_t)((double)(n - 1) * 0.99)] * 1e6,
	       sorted[n - 1] * 1e6);
	printf("\"server\":{\"setup_us_mean\":%.3f,\"open_us_mean\":%.3f,\"mmap_us_mean\":%.3f,"
	       "\"munmap_us_mean\":%.3f,\"close_us_mean\":%.3f,\"send_us_mean\":%.3f,"
	       "\"setup_once_us\":%.3f,\"minflt_per_transfer\":%.3f,\"majflt\":%ld,"
	       "\"served\":%ld},",
	       m->server.setup_s / served * 1e6, m->server.step_s[OPEN_STEP] / served * 1e6,
	       m->server.step_s[MAP_STEP] / served * 1e6,
	       m->server.step_s[UNMAP_STEP] / served * 1e6,
	       m->server.step_s[CLOSE_STEP] / served * 1e6, m->server.send_s / served * 1e6,
	       m->server.setup_once_s * 1e6, (double)m->server.minflt / served, m->server.majflt,
	       m->server.served);
	printf("\"verified_bytes\":%" PRIu64 ",\"mismatches\":%" PRIu64 ",\"verified\":%s,",
	       m->verified_bytes, m->mismatches, !m->mismatches && m->verified_bytes ? "true" : "false");
	if (m->error || m->server.error) {
		printf("\"error\":");
		print_json_string(m->error ? m->what : m->server.what);
		printf(",\"errno\":%d,", m->error ? m->error : m->server.error);
	}
	printf("\"ok\":%s}\n", ok ? "true" : "false");
	fflush(stdout);
	if (m->error || m->server.error)
		fprintf(stderr, "mmf: %s %s %s %" PRIu64 ": %s: %s\n", path_names[m->path],
			method_names[m->method], open_names[m->open], m->size,
			m->error ? m->what : m->server.what,
			strerror(m->error ? m->error : m->server.error));
	free(sorted);
	return ok;
}

int main(int argc, char **argv)
{
	struct options o;
	int index = 0, failed = 0;

	if (parse_options(argc, argv, &o))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	mkdir(o.dir, 0755);
	for (int p = 0; p < NPATHS; p++) {
		if (!(o.paths & (1u << p)))
			continue;
		for (int s = 0; s < o.nsizes; s++)
			for (int op = 0; op < NOPENS; op++) {
				if (!(o.opens & (1u << op)))
					continue;
				/* Methods innermost: normal and mmf of one case run back to back. */
				for (int me = 0; me < NMETHODS; me++) {
					struct measurement m = {
						.index = index, .path = (enum path)p,
						.method = (enum method)me, .open = (enum open_mode)op,
						.size = o.sizes[s],
					};

					if (!(o.methods & (1u << me)))
						continue;
					index++;
					m.latency = calloc((size_t)o.transfers, sizeof(double));
					measure(&o, &m);
					failed |= !print_result(&o, &m);
					free(m.latency);
				}
			}
	}
	return failed ? 1 : 0;
}
