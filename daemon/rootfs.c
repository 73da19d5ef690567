/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rootfs.c - small kernel files read and written below a root directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rootfs.h"

void rootfs_vpath(const char *root, char *out, size_t len, const char *fmt, va_list ap)
{
	size_t rl = root != NULL ? strlen(root) : 0, n;

	while (rl > 0 && root[rl - 1] == '/')
		rl--;
	n = (size_t)snprintf(out, len, "%.*s", (int)rl, rl > 0 ? root : "");
	if (n >= len)
		return;
	vsnprintf(out + n, len - n, fmt, ap);
}

void rootfs_path(const char *root, char *out, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rootfs_vpath(root, out, len, fmt, ap);
	va_end(ap);
}

int rootfs_vread(const char *root, char *buf, size_t len, const char *fmt, va_list ap)
{
	char path[PATH_MAX];
	size_t got = 0;
	ssize_t n;
	int fd;

	rootfs_vpath(root, path, sizeof(path), fmt, ap);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* sysfs and procfs hand a small file over in one read; a fixture may need more */
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) != 0) {
		if (n < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			close(fd);
			return -e;
		}
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == ' '))
		buf[--got] = '\0';
	return (int)got;
}

int rootfs_read(const char *root, char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = rootfs_vread(root, buf, len, fmt, ap);
	va_end(ap);
	return n;
}

int rootfs_list(const char *root, int (*fn)(const char *name, void *arg), void *arg,
		const char *fmt, ...)
{
	char path[PATH_MAX];
	struct dirent *de;
	va_list ap;
	int rc = 0;
	DIR *d;

	va_start(ap, fmt);
	rootfs_vpath(root, path, sizeof(path), fmt, ap);
	va_end(ap);
	d = opendir(path);
	if (d == NULL)
		return -errno;
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (de == NULL) {
			rc = -errno;
			break;
		}
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0
		    && (rc = fn(de->d_name, arg)) != 0)
			break;
	}
	closedir(d);
	return rc;
}

int rootfs_write(const char *root, const char *text, const char *fmt, ...)
{
	char path[PATH_MAX];
	size_t len = strlen(text);
	va_list ap;
	ssize_t n;
	int fd;

	va_start(ap, fmt);
	rootfs_vpath(root, path, sizeof(path), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n != (ssize_t)len) {
		int e = n < 0 ? errno : EIO;

		close(fd);
		return -e;
	}
	return close(fd) < 0 ? -errno : 0;
}

const char *rootfs_field(const char *text, const char *key)
{
	size_t kl = strlen(key);
	const char *l = text;

	while (l != NULL && *l != '\0') {
		if (strncmp(l, key, kl) == 0) {
			l += kl;
			while (*l == ':' || *l == ' ' || *l == '\t')
				l++;
			return l;
		}
		l = strchr(l, '\n');
		l = l != NULL ? l + 1 : NULL;
	}
	return NULL;
}
