// SPDX-License-Identifier: MIT
/*
 * pagereq: record the page-cache requests of a workload (kernels with CONFIG_PAGECACHE_RECORD,
 * the hybrid-pcm variant), print them for the host, and make known requests for tests.
 *
 *   pagereq start DIR [CAPACITY [NODE]]
 *                                 record requests to the files of DIR's file system (not tmpfs,
 *                                 whose pages the kernel does not record); CAPACITY records
 *                                 (default: the kernel's, 262144), their buffer (40 bytes a
 *                                 record) allocated on NODE if given (else the local node
 *                                 first); drops an earlier recording. Then prints what each
 *                                 memory node holds: MANYLAB-RESULT {"tool": "pagereq-start",
 *                                 "free_pages": {"0": N, ...}, "file_pages": {...},
 *                                 "high_watermark": {...}} (file pages: the file LRU lists;
 *                                 high watermark: its zones' summed, what kswapd frees up to)
 *   pagereq stop                  stop recording (the records stay for dump)
 *   pagereq dump                  stop, then print every record as a MANYLAB-PAGEREQ line and
 *                                 a MANYLAB-RESULT summary {"tool": "pagereq", "records": N,
 *                                 "dropped": N, "capacity": N}; exit 1 if lines went missing
 *   pagereq touch [-w] [-m] [-a ADJ] FILE FIRST COUNT
 *                                 request pages FIRST..FIRST+COUNT-1 of FILE, one at a time in
 *                                 order: read them (default) or write them (-w, creating FILE),
 *                                 with pread/pwrite or through a shared mapping (-m); -a sets
 *                                 this process's oom_score_adj first. Reads are random-access
 *                                 (POSIX_FADV_RANDOM, MADV_RANDOM): the kernel reads no pages
 *                                 ahead, so each page not in the page cache is one miss
 *   pagereq evict FILE            write FILE back and drop its pages from the page cache
 *                                 (exit 1 if any page stays resident)
 *
 * A record line is the kernel's, after the prefix:
 *   MANYLAB-PAGEREQ <time ns> <cpu> <pid> <oom_score_adj> <R|W> <hit|miss> <io|fault>
 *                   <major>:<minor> <ino> <index> <nid>
 * (manylab/pcm/capture.py reads them from the console and writes the .mlpt trace).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "manylab_util.h"

#define DEBUGFS "/sys/kernel/debug"
#define DIR_PATH DEBUGFS "/pagecache_record"
#define PREFIX "MANYLAB-PAGEREQ "
#define TMPFS_MAGIC_NUMBER 0x01021994
#define PAGE 4096
#define MPOL_PREFERRED_MODE 1

static void die(const char *what)
{
	fprintf(stderr, "pagereq: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pagereq start DIR [CAPACITY [NODE]] | stop | dump | "
		"touch [-w] [-m] [-a ADJ] FILE FIRST COUNT | evict FILE\n");
	exit(2);
}

static void need_recorder(void)
{
	struct stat st;

	if (stat(DIR_PATH, &st) == 0)
		return;
	mount("debugfs", DEBUGFS, "debugfs", 0, NULL);
	if (stat(DIR_PATH, &st) != 0) {
		fprintf(stderr, "pagereq: no %s: boot a kernel with CONFIG_PAGECACHE_RECORD "
			"(variant hybrid-pcm)\n", DIR_PATH);
		exit(1);
	}
}

static void put(const char *name, const char *text)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", DIR_PATH, name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		die(path);
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

static unsigned long stat_value(const char *key)
{
	char line[128], name[64];
	unsigned long value, found = 0;
	FILE *f = fopen(DIR_PATH "/stats", "r");

	if (!f)
		die(DIR_PATH "/stats");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lu", name, &value) == 2 && !strcmp(name, key))
			found = value;
	fclose(f);
	return found;
}

static unsigned long number(const char *text, const char *what)
{
	char *end;
	unsigned long value;

	errno = 0;
	value = strtoul(text, &end, 10);
	if (errno || end == text || *end) {
		fprintf(stderr, "pagereq: bad %s '%s'\n", what, text);
		exit(2);
	}
	return value;
}

#define MAX_NODES 64

struct node_pages {
	int present[MAX_NODES];
	unsigned long free[MAX_NODES], file[MAX_NODES], high[MAX_NODES];
};

static void read_nodes(struct node_pages *n)
{
	char path[64], key[64], line[256];
	unsigned long value;
	int node = -1, i;
	FILE *f;

	memset(n, 0, sizeof(*n));
	for (i = 0; i < MAX_NODES; i++) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/vmstat", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		n->present[i] = 1;
		while (fscanf(f, "%63s %lu", key, &value) == 2)
			if (!strcmp(key, "nr_free_pages"))
				n->free[i] = value;
			else if (!strcmp(key, "nr_inactive_file") ||
				 !strcmp(key, "nr_active_file"))
				n->file[i] += value;
		fclose(f);
	}
	f = fopen("/proc/zoneinfo", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone", &node) == 1)
			continue;
		if (node >= 0 && node < MAX_NODES && sscanf(line, " high %lu", &value) == 1)
			n->high[node] += value;
	}
	fclose(f);
}

/* `, "name": {"0": value, ...}` over the nodes present */
static void print_node_field(const char *name, const struct node_pages *n,
			     const unsigned long *values)
{
	const char *sep = "";
	int i;

	printf(", \"%s\": {", name);
	for (i = 0; i < MAX_NODES; i++) {
		if (!n->present[i])
			continue;
		printf("%s\"%d\": %lu", sep, i, values[i]);
		sep = ", ";
	}
	printf("}");
}

/* The record buffer is a vmalloc area, whose pages follow the task's memory policy. */
static void prefer_node(const char *node)
{
	unsigned long n = number(node, "NODE"), mask[MAX_NODES / (8 * sizeof(long))] = { 0 };

	if (n >= MAX_NODES) {
		fprintf(stderr, "pagereq: node %lu: at most %d nodes\n", n, MAX_NODES - 1);
		exit(2);
	}
	mask[n / (8 * sizeof(long))] = 1UL << (n % (8 * sizeof(long)));
	if (syscall(SYS_set_mempolicy, MPOL_PREFERRED_MODE, mask, MAX_NODES + 1))
		die("set_mempolicy");
}

static int start(const char *dir, const char *capacity, const char *node)
{
	struct stat st;
	struct statfs fs;
	struct node_pages nodes;
	char dev[32];

	need_recorder();
	if (stat(dir, &st) || statfs(dir, &fs))
		die(dir);
	if (fs.f_type == TMPFS_MAGIC_NUMBER) {
		fprintf(stderr, "pagereq: %s is on tmpfs, whose pages the kernel does not record: "
			"use a disk file system (workload fs = \"ext2\")\n", dir);
		return 1;
	}
	put("enable", "0\n");
	if (capacity)
		put("capacity", capacity);
	snprintf(dev, sizeof(dev), "%u:%u\n", major(st.st_dev), minor(st.st_dev));
	put("dev", dev);
	if (node)
		prefer_node(node);
	put("enable", "1\n");
	read_nodes(&nodes);
	printf("MANYLAB-RESULT {\"tool\": \"pagereq-start\"");
	print_node_field("free_pages", &nodes, nodes.free);
	print_node_field("file_pages", &nodes, nodes.file);
	print_node_field("high_watermark", &nodes, nodes.high);
	printf("}\n");
	return fflush(stdout) ? 1 : 0;
}

static int dump(void)
{
	static char out[1 << 16];
	char line[256];
	unsigned long lines = 0, records, dropped, capacity;
	FILE *f;

	need_recorder();
	put("enable", "0\n");
	records = stat_value("records");
	dropped = stat_value("dropped");
	capacity = stat_value("capacity");
	f = fopen(DIR_PATH "/records", "r");
	if (!f)
		die(DIR_PATH "/records");
	setvbuf(stdout, out, _IOFBF, sizeof(out));
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		fputs(PREFIX, stdout);
		fputs(line, stdout);
		lines++;
	}
	if (ferror(f))
		die(DIR_PATH "/records");
	fclose(f);
	printf("MANYLAB-RESULT {\"tool\": \"pagereq\", \"records\": %lu, \"dropped\": %lu, "
	       "\"capacity\": %lu}\n", lines, dropped, capacity);
	fflush(stdout);
	if (lines != records) {
		fprintf(stderr, "pagereq: the kernel kept %lu records, %lu were read\n", records,
			lines);
		return 1;
	}
	return 0;
}

static int touch(int argc, char **argv)
{
	int opt, fd, write_pages = 0, mapped = 0;
	unsigned long first, count, i;
	char *adj = NULL;
	static char page[PAGE];

	while ((opt = getopt(argc, argv, "wma:")) != -1) {
		switch (opt) {
		case 'w': write_pages = 1; break;
		case 'm': mapped = 1; break;
		case 'a': adj = optarg; break;
		default: usage();
		}
	}
	if (argc - optind != 3)
		usage();
	first = number(argv[optind + 1], "FIRST");
	count = number(argv[optind + 2], "COUNT");
	if (adj) {
		int a = open("/proc/self/oom_score_adj", O_WRONLY);

		if (a < 0 || write(a, adj, strlen(adj)) != (ssize_t)strlen(adj))
			die("/proc/self/oom_score_adj");
		close(a);
	}
	fd = open(argv[optind], write_pages ? O_RDWR | O_CREAT : O_RDONLY, 0644);
	if (fd < 0)
		die(argv[optind]);
	errno = posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	if (errno)
		die("posix_fadvise");
	if (mapped) {
		off_t end = (off_t)(first + count) * PAGE;
		struct stat st;
		volatile char *map;

		if (fstat(fd, &st))
			die(argv[optind]);
		if (write_pages && st.st_size < end && ftruncate(fd, end))
			die("ftruncate");
		map = mmap(NULL, count * PAGE, write_pages ? PROT_READ | PROT_WRITE : PROT_READ,
			   MAP_SHARED, fd, (off_t)first * PAGE);
		if (map == MAP_FAILED)
			die("mmap");
		if (madvise((void *)map, count * PAGE, MADV_RANDOM))
			die("madvise");
		for (i = 0; i < count; i++) {
			if (write_pages)
				map[i * PAGE] = (char)(first + i);
			else
				(void)map[i * PAGE];
		}
		if (write_pages && msync((void *)map, count * PAGE, MS_SYNC))
			die("msync");
		munmap((void *)map, count * PAGE);
	} else {
		for (i = 0; i < count; i++) {
			off_t at = (off_t)(first + i) * PAGE;
			ssize_t n;

			memset(page, (int)(first + i), sizeof(page));
			n = write_pages ? pwrite(fd, page, PAGE, at) : pread(fd, page, PAGE, at);
			if (n != PAGE) {
				fprintf(stderr, "pagereq: %s page %lu: %s\n", argv[optind], first + i,
					n < 0 ? strerror(errno) : "short transfer");
				return 1;
			}
		}
	}
	close(fd);
	return 0;
}

static int evict(const char *file)
{
	struct stat st;
	unsigned char *resident;
	size_t pages, i, left = 0;
	void *map;
	int fd = open(file, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		die(file);
	if (manylab_drop_cached(fd))
		die(file);
	pages = ((size_t)st.st_size + PAGE - 1) / PAGE;
	if (pages) {
		map = mmap(NULL, pages * PAGE, PROT_READ, MAP_SHARED, fd, 0);
		resident = calloc(pages, 1);
		if (map == MAP_FAILED || !resident || mincore(map, pages * PAGE, resident))
			die("mincore");
		for (i = 0; i < pages; i++)
			left += resident[i] & 1;
		munmap(map, pages * PAGE);
		free(resident);
		if (left) {
			fprintf(stderr, "pagereq: %s: %zu of %zu pages still cached\n", file, left,
				pages);
			return 1;
		}
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "start") && argc >= 3 && argc <= 5) {
		if (argc >= 4)
			number(argv[3], "CAPACITY");
		return start(argv[2], argc >= 4 ? argv[3] : NULL, argc == 5 ? argv[4] : NULL);
	}
	if (!strcmp(argv[1], "stop") && argc == 2) {
		need_recorder();
		put("enable", "0\n");
		return 0;
	}
	if (!strcmp(argv[1], "dump") && argc == 2)
		return dump();
	if (!strcmp(argv[1], "touch"))
		return touch(argc - 1, argv + 1);
	if (!strcmp(argv[1], "evict") && argc == 3)
		return evict(argv[2]);
	usage();
	return 2;
}
