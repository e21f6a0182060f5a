// SPDX-License-Identifier: MIT
/*
 * membind NODE COMMAND [ARGS...]: run COMMAND with its memory bound to NUMA node NODE
 * (set_mempolicy(MPOL_BIND)); the policy is inherited by children and applies to anonymous
 * memory, tmpfs and the page cache the command allocates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MPOL_BIND 2

int main(int argc, char **argv)
{
	unsigned long mask;
	char *end;
	long node;

	if (argc < 3 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fprintf(argc < 3 ? stderr : stdout,
			"usage: membind NODE COMMAND [ARGS...]\n"
			"Runs COMMAND with its memory bound to NUMA node NODE (0..63).\n");
		return argc < 3 ? 2 : 0;
	}
	node = strtol(argv[1], &end, 10);
	if (*end || node < 0 || node > 63) {
		fprintf(stderr, "membind: '%s' is not a node number 0..63\n", argv[1]);
		return 2;
	}
	mask = 1UL << node;
	if (syscall(SYS_set_mempolicy, MPOL_BIND, &mask, sizeof(mask) * 8 + 1)) {
		fprintf(stderr, "membind: set_mempolicy(node %ld): %s\n", node, strerror(errno));
		return 1;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "membind: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
