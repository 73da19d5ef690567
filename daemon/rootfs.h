/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rootfs.h - small files of /proc, /sys and /dev read below a root directory.
 *
 * --check-system, the IRQ threads and the per-CPU idle settings read (and the
 * latter two write) kernel files below a root: "/" (or "") on a live system, a
 * fixture tree in the tests, so that every branch can be driven with plain files.
 */
#ifndef PORTLOGD_ROOTFS_H
#define PORTLOGD_ROOTFS_H

#include <stdarg.h>
#include <stddef.h>

/* ROOT + the absolute path made from fmt; a root of "/" or "" adds nothing. */
void rootfs_vpath(const char *root, char *out, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
void rootfs_path(const char *root, char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The whole (small) file, without trailing newlines and blanks. Returns its
 * length, or -errno. */
int rootfs_vread(const char *root, char *buf, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
int rootfs_read(const char *root, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The value after "key" in a "Key: value" or "Key   value" file (status, limits,
 * meminfo): where it starts in text, or NULL. */
const char *rootfs_field(const char *text, const char *key);

/* Calls fn(name, arg) for each entry of the directory ROOT + the path made from fmt, "."
 * and ".." left out, until fn returns non-zero. Returns 0 at the end of the directory,
 * fn's non-zero value, or -errno when the directory cannot be opened or read. readdir's
 * NULL is the end only when it leaves errno 0: with 32-bit file offsets under a 64-bit
 * kernel, ext4's directory hashes make it EOVERFLOW, and the rest of the directory would
 * look like nothing. Every listing of a kernel directory goes through here. */
int rootfs_list(const char *root, int (*fn)(const char *name, void *arg), void *arg,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Writes text to the file (O_WRONLY | O_TRUNC, as `echo >` does: sysfs takes
 * the truncation, a fixture file needs it). Returns 0 or -errno. */
int rootfs_write(const char *root, const char *text, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
