// SPDX-License-Identifier: MIT
/*
 * snapshot-point: stop the machine here, so that the lab saves it at this instruction.
 *
 * Writes PVPANIC_PANICKED to QEMU's pvpanic-pci device (1b36:0011) through its BAR's sysfs
 * resource file. QEMU, started with -action panic=pause, pauses the guest at once, from the
 * vCPU that wrote: the saved state is the same in every build, whatever the host's timing.
 * A restored machine continues after the write, and the tool exits 0.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PCI_DEVICES "/sys/bus/pci/devices"
#define PVPANIC_VENDOR 0x1b36
#define PVPANIC_DEVICE 0x0011
#define PVPANIC_PANICKED 1

static long read_hex(const char *dir, const char *name)
{
	char path[512], text[32];
	FILE *f;
	long value = -1;

	snprintf(path, sizeof(path), "%s/%s/%s", PCI_DEVICES, dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(text, sizeof(text), f))
		value = strtol(text, NULL, 16);
	fclose(f);
	return value;
}

int main(void)
{
	DIR *devices = opendir(PCI_DEVICES);
	struct dirent *entry;
	char path[512];
	volatile uint8_t *bar;
	int fd;

	if (!devices) {
		perror("snapshot-point: " PCI_DEVICES);
		return 1;
	}
	while ((entry = readdir(devices))) {
		if (entry->d_name[0] == '.')
			continue;
		if (read_hex(entry->d_name, "vendor") == PVPANIC_VENDOR &&
		    read_hex(entry->d_name, "device") == PVPANIC_DEVICE)
			break;
	}
	if (!entry) {
		fprintf(stderr, "snapshot-point: no pvpanic-pci device (QEMU -device pvpanic-pci)\n");
		return 1;
	}
	/* No driver claims the device: turn its memory decoding on first. */
	snprintf(path, sizeof(path), "%s/%s/enable", PCI_DEVICES, entry->d_name);
	fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, "1", 1) != 1) {
		perror(path);
		return 1;
	}
	close(fd);
	snprintf(path, sizeof(path), "%s/%s/resource0", PCI_DEVICES, entry->d_name);
	closedir(devices);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	bar = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (bar == MAP_FAILED) {
		perror("snapshot-point: mmap resource0");
		return 1;
	}
	*bar = PVPANIC_PANICKED;
	munmap((void *)bar, 4096);
	close(fd);
	return 0;
}
