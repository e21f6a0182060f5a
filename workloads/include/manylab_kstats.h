/* SPDX-License-Identifier: MIT */
/*
 * Kernel counters at the edges of the region of interest: manylab_roi_begin(0) and
 * manylab_roi_end(0) print one console line per group,
 *   MANYLAB-KSTATS <label> <group> {"name":value,...}
 * with label roi_begin or roi_end and group vmstat (/proc/vmstat), ldu (debugfs ldu/stats,
 * LDU kernels), hybrid_pcm (debugfs hybrid_pcm/stats, hybrid-pcm kernels) or finer_lru
 * (debugfs finer_lru/batches, FinerLRU kernels), read when debugfs is mounted (the run script
 * mounts it). The lab stores the differences beside the plugin's ROI
 * figures (manylab/kstats.py).
 *
 * Only open, read and write, into static and stack buffers: malloc may map memory,
 * and a map is itself rmap and page traffic the counters would count. The roi_begin lines are
 * held until roi_end, and the console is drained after them: a long line still leaving the
 * serial port while the ROI runs would interleave, character by character, with any kernel
 * report (a panic, a lockdep splat) the ROI causes, and the report would not be recognised.
 */
#ifndef MANYLAB_KSTATS_H
#define MANYLAB_KSTATS_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#define MANYLAB_KSTATS_LDU "/sys/kernel/debug/ldu/stats"
#define MANYLAB_KSTATS_HYBRID_PCM "/sys/kernel/debug/hybrid_pcm/stats"
#define MANYLAB_KSTATS_FINER_LRU "/sys/kernel/debug/finer_lru/batches"
#define MANYLAB_KSTATS_LINE_MAX 16384

struct manylab_kstats_line {
	char text[MANYLAB_KSTATS_LINE_MAX];
	size_t len;
	int values;
};

/* The file's bytes into buf, NUL-terminated; their count, or -1 when it cannot be read. */
static inline ssize_t manylab_kstats_read(const char *path, char *buf, size_t size)
{
	ssize_t total = 0, n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((size_t)total < size - 1 && (n = read(fd, buf + total, size - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = '\0';
	return total;
}

static inline void manylab_kstats_start(struct manylab_kstats_line *line, const char *label,
					const char *group)
{
	line->len = (size_t)snprintf(line->text, sizeof(line->text), "MANYLAB-KSTATS %s %s {",
				     label, group);
	line->values = 0;
}

/* Adds "prefix.name":value (prefix may be empty); a value that is not a decimal integer
 * (digits, after a '-' for a negative gauge such as ldu's queued), or one that does not fit
 * the line, is left out. */
static inline void manylab_kstats_add(struct manylab_kstats_line *line, const char *prefix,
				      const char *name, size_t name_len, const char *value,
				      size_t value_len)
{
	size_t need = strlen(prefix) + name_len + value_len + 8;
	size_t i;

	if (!value_len || line->len + need >= sizeof(line->text) - 3)
		return;
	for (i = value[0] == '-' && value_len > 1; i < value_len; i++)
		if (value[i] < '0' || value[i] > '9')
			return;
	line->len += (size_t)snprintf(line->text + line->len, sizeof(line->text) - line->len,
				      "%s\"%s%s%.*s\":%.*s", line->values ? "," : "", prefix,
				      *prefix ? "." : "", (int)name_len, name, (int)value_len,
				      value);
	line->values++;
}

static inline void manylab_kstats_write(const char *text, size_t len)
{
	ssize_t n;
	size_t done = 0;

	while (done < len && (n = write(1, text + done, len - done)) > 0)
		done += (size_t)n;
}

/* Ends the line; holds it (hold) or writes it after every line held so far. */
static inline void manylab_kstats_finish(struct manylab_kstats_line *line, int hold)
{
	static char held[4 * MANYLAB_KSTATS_LINE_MAX];
	static size_t held_len;

	line->text[line->len++] = '}';
	line->text[line->len++] = '\n';
	if (hold) {
		if (held_len + line->len <= sizeof(held)) {
			memcpy(held + held_len, line->text, line->len);
			held_len += line->len;
		}
		return;
	}
	manylab_kstats_write(held, held_len);
	held_len = 0;
	manylab_kstats_write(line->text, line->len);
}

/* "name value" lines (/proc/vmstat, debugfs ldu/stats); with columns, "kind v1 v2 ..." lines
 * whose values are named kind.column (a header line starting with "kind" is skipped). */
static inline void manylab_kstats_table(struct manylab_kstats_line *line, char *text,
					const char *const *columns)
{
	char *next, *word[8];
	int n, c;

	for (; *text; text = next) {
		next = strchr(text, '\n');
		next = next ? next + 1 : text + strlen(text);
		for (n = 0; n < 8 && text < next;) {
			while (text < next && (*text == ' ' || *text == '\n'))
				*text++ = '\0';
			if (text < next)
				word[n++] = text;
			while (text < next && *text != ' ' && *text != '\n')
				text++;
		}
		if (n < 2 || !strcmp(word[0], "kind"))
			continue;
		if (!columns) {
			manylab_kstats_add(line, "", word[0], strlen(word[0]), word[1],
					   strlen(word[1]));
			continue;
		}
		for (c = 0; columns[c] && c + 1 < n; c++)
			manylab_kstats_add(line, word[0], columns[c], strlen(columns[c]),
					   word[c + 1], strlen(word[c + 1]));
	}
}

static inline void manylab_kstats(const char *label)
{
	static const char *const batch_columns[] = { "batches", "locks", "folios", NULL };
	static const struct {
		const char *path, *group;
		const char *const *columns;	/* NULL: "name value" lines */
	} groups[] = {
		{ MANYLAB_KSTATS_LDU, "ldu", NULL },
		{ MANYLAB_KSTATS_HYBRID_PCM, "hybrid_pcm", NULL },
		{ MANYLAB_KSTATS_FINER_LRU, "finer_lru", batch_columns },
		{ "/proc/vmstat", "vmstat", NULL },
	};
	struct manylab_kstats_line line;
	char text[16384];
	int hold = !strcmp(label, "roi_begin");

	fflush(stdout);
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
		if (manylab_kstats_read(groups[i].path, text, sizeof(text)) <= 0)
			continue;
		manylab_kstats_start(&line, label, groups[i].group);
		manylab_kstats_table(&line, text, groups[i].columns);
		manylab_kstats_finish(&line, hold);
	}
	if (!hold)
		tcdrain(1);
}

#endif
