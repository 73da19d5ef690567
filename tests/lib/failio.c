/* SPDX-License-Identifier: GPL-2.0-or-later */
/* failio.c - a disk that fails on demand: the write() and fdatasync() wrappers. */
#include <errno.h>
#include <unistd.h>

#include "failio.h"

int failio_fd = -1;
int failio_errno;
unsigned failio_writes;
size_t failio_short;
void (*failio_hook)(void);
unsigned failio_syncs;
int failio_sync_errno;

ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd);

void failio_reset(void)
{
	failio_fd = -1;
	failio_errno = 0;
	failio_writes = 0;
	failio_short = 0;
	failio_hook = NULL;
	failio_syncs = 0;
	failio_sync_errno = 0;
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
	if (fd == failio_fd) {
		failio_writes++;
		if (failio_hook != NULL)
			failio_hook();
		if (failio_short > 0 && failio_short < n) {
			n = failio_short;
			failio_short = 0;
			failio_errno = ENOSPC;
			return __real_write(fd, buf, n);
		}
		if (failio_errno != 0) {
			errno = failio_errno;
			return -1;
		}
	}
	return __real_write(fd, buf, n);
}

int __wrap_fdatasync(int fd)
{
	failio_syncs++;
	if (failio_sync_errno != 0) {
		errno = failio_sync_errno;
		return -1;
	}
	return __real_fdatasync(fd);
}
