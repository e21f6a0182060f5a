// SPDX-License-Identifier: MIT
/*
 * smtpload: a mail server's throughput under local SMTP load, as MOSBENCH's Exim benchmark
 * measures it (the LDU thesis's Exim workload).
 *
 * It starts the image's Exim (the `exim` bundle: Debian's exim4-daemon-light, configured by
 * /etc/exim4/exim4.conf) as a foreground daemon on 127.0.0.1:25 with its spool and the
 * per-user mailbox files in the work directory (tmpfs by default), waits for its banner, then
 * runs CONNECTIONS client processes at once. Client i sends MESSAGES messages of SIZE body
 * bytes to user<i mod USERS>@manylab.test over SMTP (HELO, then per message MAIL FROM, RCPT TO,
 * DATA, the message, "."; QUIT and a new connection every SESSION messages, 0 = one session),
 * waiting for each reply (after QUIT it closes its side first: see quit()). Exim receives each message into its spool and forks a delivery
 * process that appends it to the user's mailbox.
 *
 * ROI region 0: phase 1 is the sending (all clients from their start to their last reply),
 * phase 2 the drain (until Exim's spool holds no message, so every delivery has finished).
 * After the ROI the mailboxes are read: each message's "Subject: smtpload <client> <number>"
 * is counted once, and delivered == sent, with no message missing or twice, is the check.
 * The daemon is stopped (SIGTERM) at the end.
 *
 * One line on stdout: MANYLAB-RESULT {json} with sent, delivered, messages_per_s (sent over
 * the ROI, guest time: sending and drain), accepted_per_s (over phase 1), and ok. Exit status 0
 * when ok; 1 when a message is missing, doubled or a client failed; 2 on bad options; 3 when
 * the server does not start.
 *
 * Build: gcc -static -O2 -pthread -Iworkloads/include workloads/smtpload.c -o smtpload
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "manylab_roi.h"
#include "manylab_util.h"

#define MAX_CONNECTIONS 4096
#define MAX_SIZE (64u << 20)
#define DOMAIN "manylab.test"
#define LINE_MAX_LEN 1024

struct options {
	long connections;
	long messages;		/* per connection */
	uint64_t size;		/* body bytes per message */
	long session;		/* messages per SMTP session; 0 = all in one */
	long users;		/* recipients: client i mails user<i % users> */
	int port;
	int pin;
	double drain_timeout;	/* seconds without progress before the drain gives up */
	const char *exim;
	const char *config;
	const char *exim_user;
	const char *dir;
};

struct client_result {
	long sent;
	long sessions;
	int failed;
	char error[160];
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: smtpload [options]\n"
"  --connections N   client processes, each one SMTP connection at a time (default 1)\n"
"  --messages M      messages each client sends (default 10)\n"
"  --size SIZE       body bytes per message, K/M suffix allowed (default 100)\n"
"  --session K       messages per SMTP session before QUIT and a new connection (default 10,\n"
"                    MOSBENCH's client; 0 = all messages in one session)\n"
"  --users U         recipients user0..user<U-1>; client i mails user<i mod U> (default: one\n"
"                    per connection)\n"
"  --port P          server port on 127.0.0.1 (default 25)\n"
"  --pin             pin client i to CPU i mod CPUs\n"
"  --exim PATH       the daemon (default /usr/sbin/exim4)\n"
"  --config PATH     its configuration (default /etc/exim4/exim4.conf)\n"
"  --exim-user NAME  the user owning its spool (default Debian-exim, from /etc/passwd)\n"
"  --drain-timeout S seconds without a delivery before giving up (default 120)\n"
"  --dir DIR         work directory: spool/ and mail/ go there (default /tmp)\n"
"Prints 'MANYLAB-RESULT {json}' with sent, delivered and messages_per_s (guest time).\n");
}

static long long_arg(const char *flag, const char *text, long min, long max)
{
	long v;

	if (manylab_parse_whole(text, min, max, &v)) {
		fprintf(stderr, "smtpload: %s takes an integer in [%ld, %ld], not '%s'\n",
			flag, min, max, text);
		exit(2);
	}
	return v;
}

static void parse(int argc, char **argv, struct options *o)
{
	static const struct option lo[] = {
		{ "connections", 1, 0, 'c' }, { "messages", 1, 0, 'm' },
		{ "size", 1, 0, 's' }, { "session", 1, 0, 'S' }, { "users", 1, 0, 'u' },
		{ "port", 1, 0, 'p' }, { "pin", 0, 0, 'P' },
		{ "exim", 1, 0, 'e' }, { "config", 1, 0, 'C' }, { "exim-user", 1, 0, 'U' },
		{ "drain-timeout", 1, 0, 'T' }, { "dir", 1, 0, 'd' }, { "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;

	*o = (struct options){ .connections = 1, .messages = 10, .size = 100, .session = 10,
			       .users = 0, .port = 25, .drain_timeout = 120,
			       .exim = "/usr/sbin/exim4", .config = "/etc/exim4/exim4.conf",
			       .exim_user = "Debian-exim", .dir = "/tmp" };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o->connections = long_arg("--connections", optarg, 1, MAX_CONNECTIONS); break;
		case 'm': o->messages = long_arg("--messages", optarg, 1, 100000000); break;
		case 's': o->size = manylab_size_arg("smtpload", "--size", optarg); break;
		case 'S': o->session = long_arg("--session", optarg, 0, 100000000); break;
		case 'u': o->users = long_arg("--users", optarg, 1, 1000000); break;
		case 'p': o->port = (int)long_arg("--port", optarg, 1, 65535); break;
		case 'P': o->pin = 1; break;
		case 'e': o->exim = optarg; break;
		case 'C': o->config = optarg; break;
		case 'U': o->exim_user = optarg; break;
		case 'T': o->drain_timeout = (double)long_arg("--drain-timeout", optarg, 1, 86400);
			break;
		case 'd': o->dir = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "smtpload: unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}
	if (o->size > MAX_SIZE) {
		fprintf(stderr, "smtpload: --size at most %u bytes\n", MAX_SIZE);
		exit(2);
	}
	if (!o->users)
		o->users = o->connections;
}

/* ------------------------------------------------------------------ the message */

/*
 * Body of `size` bytes (CRLF line ends counted): lines of at most 78 characters, none starting
 * with '.' (SMTP dot-stuffing) or "From " (mbox quoting), so the bytes arrive unchanged.
 */
static char *make_body(uint64_t size)
{
	char *body = malloc(size + 1);
	uint64_t at = 0;
	long line = 0;

	if (!body)
		return NULL;
	while (at < size) {
		uint64_t left = size - at;
		uint64_t len = left < 78 ? left : 78;	/* with its CRLF */
		char head[32];
		int n = snprintf(head, sizeof(head), "line %ld ", line++);

		for (uint64_t k = 0; k < len; k++)
			body[at + k] = k < (uint64_t)n ? head[k] : (char)('a' + (k % 26));
		if (len >= 2) {
			body[at + len - 2] = '\r';
			body[at + len - 1] = '\n';
		} else {
			body[at] = 'x';
		}
		at += len;
	}
	body[size] = 0;
	return body;
}

/* ------------------------------------------------------------------ SMTP client */

struct conn {
	int fd;
	char buf[LINE_MAX_LEN * 4];
	size_t have;
};

/* Read one reply (its last line "NNN text"); its code, or -1 on EOF/error/timeout. */
static int read_reply(struct conn *c, char *last, size_t last_size)
{
	for (;;) {
		char *eol = memchr(c->buf, '\n', c->have);

		if (eol) {
			size_t len = (size_t)(eol - c->buf) + 1;
			int done = len >= 4 && c->buf[3] == ' ';
			int code = len >= 4 ? atoi(c->buf) : -1;

			if (last && last_size) {
				size_t copy = len < last_size - 1 ? len : last_size - 1;

				memcpy(last, c->buf, copy);
				last[copy] = 0;
				while (copy && (last[copy - 1] == '\n' || last[copy - 1] == '\r'))
					last[--copy] = 0;
			}
			memmove(c->buf, c->buf + len, c->have - len);
			c->have -= len;
			if (done || len < 4)
				return done ? code : -1;
			continue;
		}
		if (c->have == sizeof(c->buf))
			return -1;
		ssize_t n = read(c->fd, c->buf + c->have, sizeof(c->buf) - c->have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		c->have += (size_t)n;
	}
}

static int connect_local(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 600 };
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send `line` (CRLF added) and expect a reply with the given code. */
static int command(struct conn *c, const char *line, int want, char *reply, size_t size)
{
	char out[LINE_MAX_LEN];
	int n = snprintf(out, sizeof(out), "%s\r\n", line);

	if (n < 0 || (size_t)n >= sizeof(out) || manylab_write_all(c->fd, out, (size_t)n))
		return -1;
	return read_reply(c, reply, size) == want ? 0 : -1;
}

/*
 * QUIT, then close our side before reading the 221: Exim (4.95 on) corks the 221 and waits up
 * to 200 ms for the client's FIN ("so that the client gets the TIME_WAIT"), so a client that
 * waits for the 221 first stalls 200 ms per session; with our FIN sent it exits at once and
 * the 221 arrives with its FIN.
 */
static void quit(struct conn *c)
{
	char reply[256];

	if (manylab_write_all(c->fd, "QUIT\r\n", 6) == 0 && shutdown(c->fd, SHUT_WR) == 0)
		read_reply(c, reply, sizeof(reply));
}

static void fail(struct client_result *r, const char *what, const char *reply)
{
	r->failed = 1;
	snprintf(r->error, sizeof(r->error), "%.20s: %.130s", what,
		 reply && *reply ? reply : (errno ? strerror(errno) : "connection closed"));
}

static void client(int index, const struct options *o, const char *body,
		   struct client_result *r)
{
	char rcpt[128], reply[256], *msg;
	long user = index % o->users, m = 0;
	size_t body_len = strlen(body), cap = body_len + 512;

	msg = malloc(cap);
	if (!msg) {
		fail(r, "malloc", NULL);
		return;
	}
	snprintf(rcpt, sizeof(rcpt), "RCPT TO:<user%ld@" DOMAIN ">", user);
	while (m < o->messages) {
		struct conn c = { .fd = connect_local(o->port) };
		long in_session = 0;

		if (c.fd < 0) {
			fail(r, "connect", NULL);
			break;
		}
		r->sessions++;
		if (read_reply(&c, reply, sizeof(reply)) != 220) {
			fail(r, "banner", reply);
			close(c.fd);
			break;
		}
		if (command(&c, "HELO smtpload." DOMAIN, 250, reply, sizeof(reply))) {
			fail(r, "HELO", reply);
			close(c.fd);
			break;
		}
		while (m < o->messages && (!o->session || in_session < o->session)) {
			if (command(&c, "MAIL FROM:<smtpload@" DOMAIN ">", 250, reply, sizeof(reply))) {
				fail(r, "MAIL FROM", reply);
				break;
			}
			if (command(&c, rcpt, 250, reply, sizeof(reply))) {
				fail(r, "RCPT TO", reply);
				break;
			}
			if (command(&c, "DATA", 354, reply, sizeof(reply))) {
				fail(r, "DATA", reply);
				break;
			}
			int head = snprintf(msg, cap, "From: smtpload@" DOMAIN "\r\n"
					    "To: user%ld@" DOMAIN "\r\n"
					    "Subject: smtpload %d %ld\r\n\r\n", user, index, m);
			size_t len = (size_t)head;

			memcpy(msg + len, body, body_len);
			len += body_len;
			if (body_len && msg[len - 1] != '\n') {
				memcpy(msg + len, "\r\n", 2);
				len += 2;
			}
			memcpy(msg + len, ".\r\n", 3);
			len += 3;
			if (manylab_write_all(c.fd, msg, len) || read_reply(&c, reply, sizeof(reply)) != 250) {
				fail(r, "end of data", reply);
				break;
			}
			r->sent++;
			m++;
			in_session++;
		}
		if (!r->failed)
			quit(&c);
		close(c.fd);
		if (r->failed)
			break;
	}
	free(msg);
}

/* ------------------------------------------------------------------ the server */

static int lookup_user(const char *name, uid_t *uid, gid_t *gid)
{
	char line[512];
	size_t len = strlen(name);
	FILE *f = fopen("/etc/passwd", "r");
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long u, g;

		if (strncmp(line, name, len) || line[len] != ':')
			continue;
		if (sscanf(line + len, ":%*[^:]:%lu:%lu:", &u, &g) == 2) {
			*uid = (uid_t)u;
			*gid = (gid_t)g;
			found = 0;
		}
		break;
	}
	fclose(f);
	return found;
}

static void show_file(const char *path, const char *label)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return;
	fprintf(stderr, "smtpload: --- %s (%s) ---\n", label, path);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(f);
}

static void show_logs(const struct options *o)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/exim.out", o->dir);
	show_file(path, "exim's output");
	snprintf(path, sizeof(path), "%s/spool/log/paniclog", o->dir);
	show_file(path, "exim's panic log");
	snprintf(path, sizeof(path), "%s/spool/log/mainlog", o->dir);
	show_file(path, "exim's main log");
}

/* The first line "Exim version X ..." of `exim -bV`, as X, into out. */
static void exim_version(const struct options *o, char *out, size_t size)
{
	char cmd[8192], line[256];
	FILE *p;

	snprintf(out, size, "unknown");
	snprintf(cmd, sizeof(cmd), "'%s' -C '%s' -bV 2>/dev/null", o->exim, o->config);
	p = popen(cmd, "r");
	if (!p)
		return;
	if (fgets(line, sizeof(line), p) && !strncmp(line, "Exim version ", 13)) {
		char *end = strchr(line + 13, ' ');

		if (end)
			*end = 0;
		snprintf(out, size, "%.60s", line + 13);
		for (char *q = out; *q; q++)
			if (*q == '"' || *q == '\\' || *q < ' ')
				*q = '_';
	}
	while (fgets(line, sizeof(line), p))
		;
	pclose(p);
}

static pid_t start_exim(const struct options *o)
{
	char spool[4096], mail[4096], out[4096], port[32];
	char *argv[12];
	int argc = 0;
	pid_t pid;

	snprintf(spool, sizeof(spool), "-DMANYLAB_SPOOL=%s/spool", o->dir);
	snprintf(mail, sizeof(mail), "-DMANYLAB_MAIL=%s/mail", o->dir);
	snprintf(out, sizeof(out), "%s/exim.out", o->dir);
	snprintf(port, sizeof(port), "%d", o->port);
	argv[argc++] = (char *)o->exim;
	argv[argc++] = "-bdf";
	argv[argc++] = "-C";
	argv[argc++] = (char *)o->config;
	argv[argc++] = spool;
	argv[argc++] = mail;
	if (o->port != 25) {
		argv[argc++] = "-oX";
		argv[argc++] = port;
	}
	argv[argc] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execv(o->exim, argv);
		fprintf(stderr, "smtpload: cannot run %s: %s\n", o->exim, strerror(errno));
		_exit(127);
	}
	return pid;
}

/* Wait until the server greets on the port; 0, or -1 when it exits or takes 60 s. */
static int wait_ready(const struct options *o, pid_t server)
{
	double t0 = manylab_now();

	while (manylab_now() - t0 < 60) {
		struct conn c = { .fd = connect_local(o->port) };

		if (c.fd >= 0) {
			char reply[256];
			int code = read_reply(&c, reply, sizeof(reply));

			if (code == 220)
				quit(&c);
			close(c.fd);
			if (code == 220)
				return 0;
		}
		if (server > 0 && waitpid(server, NULL, WNOHANG) == server)
			return -1;
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	return -1;
}

/* Messages in the spool: files below input/ (split into one folder per id letter). */
static long spool_messages(const char *dir)
{
	char path[4096];
	long count = 0;
	DIR *top;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/spool/input", dir);
	top = opendir(path);
	if (!top)
		return 0;
	while ((e = readdir(top))) {
		if (e->d_name[0] == '.')
			continue;
		if (e->d_type == DT_DIR) {
			char sub[4400];
			DIR *d;
			struct dirent *f;

			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			d = opendir(sub);
			if (!d)
				continue;
			while ((f = readdir(d)))
				if (f->d_name[0] != '.' && strstr(f->d_name, "-H"))
					count++;
			closedir(d);
		} else if (strstr(e->d_name, "-H")) {
			count++;
		}
	}
	closedir(top);
	return count;
}

/* Wait until the spool is empty; its seconds, or -1 after drain_timeout without progress. */
static int drain(const struct options *o, long *left)
{
	double last_change = manylab_now();
	long before = -1;

	for (;;) {
		long now = spool_messages(o->dir);

		*left = now;
		if (now == 0)
			return 0;
		if (now != before) {
			before = now;
			last_change = manylab_now();
		} else if (manylab_now() - last_change > o->drain_timeout) {
			return -1;
		}
		struct timespec ts = { 0, 2 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

/* ------------------------------------------------------------------ the check */

/*
 * Count the messages in every mailbox: mbox separators ("From " at a line start) and each
 * message's Subject "smtpload <client> <number>", marked in seen[client * messages + number].
 */
struct tally {
	long from_lines;
	long subjects;
	long duplicates;
	long foreign;	/* a subject that names no message sent, or in another user's box */
	uint64_t bytes;
};

static void count_mailbox(const char *path, long user, const struct options *o,
			  unsigned char *seen, struct tally *t)
{
	char line[LINE_MAX_LEN];
	FILE *f = fopen(path, "r");
	int at_start = 1;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);

		t->bytes += len;
		if (at_start && !strncmp(line, "From ", 5)) {
			t->from_lines++;
		} else if (at_start && !strncmp(line, "Subject: smtpload ", 18)) {
			long client, number;

			t->subjects++;
			if (sscanf(line + 18, "%ld %ld", &client, &number) == 2 && client >= 0 &&
			    client < o->connections && number >= 0 && number < o->messages &&
			    client % o->users == user) {
				unsigned char *mark = &seen[client * o->messages + number];

				if (*mark)
					t->duplicates++;
				*mark = 1;
			} else {
				t->foreign++;
			}
		}
		at_start = len && line[len - 1] == '\n';
	}
	fclose(f);
}

static int prepare_dirs(const struct options *o, uid_t uid, gid_t gid)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/spool", o->dir);
	if (mkdir(path, 0750) && errno != EEXIST)
		return -1;
	if (chown(path, uid, gid))
		return -1;
	snprintf(path, sizeof(path), "%s/mail", o->dir);
	if (mkdir(path, 01777) && errno != EEXIST)
		return -1;
	chmod(path, 01777);
	for (long u = 0; u < o->users; u++) {	/* the local users: an empty mailbox each */
		int fd;

		snprintf(path, sizeof(path), "%s/mail/user%ld", o->dir, u);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || fchown(fd, uid, gid)) {
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	struct client_result *results;
	pid_t *clients, server = -1;
	char *body, version[64], path[4096];
	int start[2], bad = 0, drained, client_failures = 0;
	uid_t uid = 0;
	gid_t gid = 0;
	long sent = 0, sessions = 0, left = 0;
	double t0, t1, t2;
	struct tally tally = { 0 };
	unsigned char *seen;

	parse(argc, argv, &o);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	body = make_body(o.size);
	results = mmap(NULL, sizeof(*results) * (size_t)o.connections, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	clients = calloc((size_t)o.connections, sizeof(*clients));
	seen = calloc((size_t)o.connections * (size_t)o.messages, 1);
	if (!body || results == MAP_FAILED || !clients || !seen) {
		fprintf(stderr, "smtpload: out of memory\n");
		return 2;
	}
	if (lookup_user(o.exim_user, &uid, &gid)) {
		fprintf(stderr, "smtpload: no user %s in /etc/passwd (the exim bundle's)\n",
			o.exim_user);
		return 3;
	}
	if (prepare_dirs(&o, uid, gid)) {
		fprintf(stderr, "smtpload: cannot prepare %s/spool and %s/mail: %s\n", o.dir, o.dir,
			strerror(errno));
		return 3;
	}
	exim_version(&o, version, sizeof(version));
	server = start_exim(&o);
	if (server < 0 || wait_ready(&o, server)) {
		fprintf(stderr, "smtpload: %s did not greet on 127.0.0.1:%d\n", o.exim, o.port);
		show_logs(&o);
		if (server > 0)
			kill(server, SIGKILL);
		return 3;
	}

	if (pipe(start)) {
		perror("smtpload: pipe");
		return 3;
	}
	fflush(NULL);
	for (long i = 0; i < o.connections; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("smtpload: fork");
			return 3;
		}
		if (pid == 0) {
			char go;

			close(start[1]);
			if (o.pin) {
				long cpus = sysconf(_SC_NPROCESSORS_ONLN);
				cpu_set_t set;

				CPU_ZERO(&set);
				CPU_SET((int)(i % (cpus > 0 ? cpus : 1)), &set);
				sched_setaffinity(0, sizeof(set), &set);
			}
			if (read(start[0], &go, 1) < 0)
				_exit(1);
			client((int)i, &o, body, &results[i]);
			_exit(results[i].failed ? 1 : 0);
		}
		clients[i] = pid;
	}
	close(start[0]);

	manylab_roi_begin(0);
	manylab_roi_phase(1);
	t0 = manylab_now();
	close(start[1]);	/* every client's read returns: go */
	for (long i = 0; i < o.connections; i++) {
		int status;

		while (waitpid(clients[i], &status, 0) < 0 && errno == EINTR)
			;
	}
	t1 = manylab_now();
	manylab_roi_phase(2);
	drained = drain(&o, &left);
	t2 = manylab_now();
	manylab_roi_end(0);

	for (long i = 0; i < o.connections; i++) {
		sent += results[i].sent;
		sessions += results[i].sessions;
		if (results[i].failed) {
			if (client_failures++ < 5)
				fprintf(stderr, "smtpload: client %ld: %s\n", i, results[i].error);
			bad = 1;
		}
	}
	if (drained) {
		fprintf(stderr, "smtpload: %ld messages still in the spool after %.0f s without a "
			"delivery\n", left, o.drain_timeout);
		bad = 1;
	}
	for (long u = 0; u < o.users; u++) {
		snprintf(path, sizeof(path), "%s/mail/user%ld", o.dir, u);
		count_mailbox(path, u, &o, seen, &tally);
	}
	long delivered = 0;

	for (size_t k = 0; k < (size_t)o.connections * (size_t)o.messages; k++)
		delivered += seen[k];
	if (delivered != sent || tally.from_lines != tally.subjects || tally.duplicates ||
	    tally.foreign || sent != o.connections * o.messages) {
		fprintf(stderr, "smtpload: sent %ld, delivered %ld distinct (%ld mbox separators, "
			"%ld subjects, %ld twice, %ld foreign)\n", sent, delivered,
			tally.from_lines, tally.subjects, tally.duplicates, tally.foreign);
		bad = 1;
	}
	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
	}
	if (bad)
		show_logs(&o);

	printf("MANYLAB-RESULT {\"workload\": \"smtpload\", \"server\": \"%s\", "
	       "\"exim_version\": \"%s\", \"connections\": %ld, \"messages_per_connection\": %ld, "
	       "\"size\": %" PRIu64 ", \"session\": %ld, \"users\": %ld, \"pin\": %s, "
	       "\"sent\": %ld, \"delivered\": %ld, \"mbox_messages\": %ld, \"duplicates\": %ld, "
	       "\"mailbox_bytes\": %" PRIu64 ", \"sessions\": %ld, \"failed_clients\": %d, "
	       "\"send_s\": %.6f, \"drain_s\": %.6f, \"roi_s\": %.6f, "
	       "\"accepted_per_s\": %.3f, \"messages_per_s\": %.3f, \"ok\": %s}\n",
	       o.exim, version, o.connections, o.messages, o.size,
	       o.session, o.users, o.pin ? "true" : "false", sent, delivered, tally.from_lines,
	       tally.duplicates, tally.bytes, sessions, client_failures, t1 - t0, t2 - t1,
	       t2 - t0, t1 > t0 ? sent / (t1 - t0) : 0.0, t2 > t0 ? sent / (t2 - t0) : 0.0,
	       bad ? "false" : "true");
	return bad ? 1 : 0;
}
