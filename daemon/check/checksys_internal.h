/* SPDX-License-Identifier: GPL-2.0-or-later */
/* checksys_internal.h - what the checks of --check-system share: results, files below the root, CPU lists.
 *
 * checksys_sys.c holds the system-wide checks, checksys_port.c the per-port checks,
 * checksys_report.c the report that runs them all; checksys.h is their one public
 * header. The helpers here are small and keep no state: static inline, each file
 * gets its own.
 */
#ifndef PORTLOGD_CHECKSYS_INTERNAL_H
#define PORTLOGD_CHECKSYS_INTERNAL_H

#include <errno.h>
#include <grp.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include "checksys.h"
#include "rootfs.h"

#define CAP_SYS_NICE_BIT 23
#define CAP_IPC_LOCK_BIT 14
#define NCPUS (CONF_CPU_MAX + 1)

struct cpus {
	uint64_t bit[NCPUS / 64];
};

/* ---- results, paths, files ---- */

__attribute__((format(printf, 4, 5)))
static inline void set(struct checksys_result *r, enum checksys_level level, const char *name,
		const char *fmt, ...)
{
	va_list ap;

	r->level = level;
	snprintf(r->name, sizeof(r->name), "%s", name);
	va_start(ap, fmt);
	vsnprintf(r->text, sizeof(r->text), fmt, ap);
	va_end(ap);
}

/* ROOT + rel, where rel is absolute; the root "/" adds nothing. */
__attribute__((format(printf, 4, 5)))
static inline void path_at(const struct checksys *cs, char *out, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rootfs_vpath(cs->root, out, len, fmt, ap);
	va_end(ap);
}

/* The whole (small) file ROOT/rel, without the trailing newline. Returns its
 * length or -errno. */
__attribute__((format(printf, 4, 5)))
static inline int read_at(const struct checksys *cs, char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = rootfs_vread(cs->root, buf, len, fmt, ap);
	va_end(ap);
	return n;
}

/* The value after "key" in a "Key: value" or "Key   value" file (status, limits). */
static inline const char *field_of(const char *text, const char *key)
{
	return rootfs_field(text, key);
}

/* Is capability `bit` in CapEff of ROOT/proc/self/status? -errno when unknown. */
static inline int has_cap(const struct checksys *cs, int bit)
{
	char status[4096];
	const char *v;
	int n = read_at(cs, status, sizeof(status), "/proc/self/status");

	if (n < 0)
		return n;
	v = field_of(status, "CapEff");
	if (v == NULL)
		return -ENOENT;
	return (int)(strtoull(v, NULL, 16) >> bit & 1);
}

/* The fix for a directory of ROOT/proc that could not be listed (rootfs_list: -err). */
static inline const char *unlisted_fix(int err)
{
	return err == EOVERFLOW ? "this is a 32-bit portlogd built without 64-bit file offsets: "
				  "build it with _FILE_OFFSET_BITS=64 (its CMakeLists.txt sets it)"
				: "make /proc readable for portlogd";
}

/* "mode 0660, owner 0, group 20 (dialout)" for messages about access. */
static inline void describe_owner(const struct stat *st, char *out, size_t len)
{
	struct group *g = getgrgid(st->st_gid);

	snprintf(out, len, "mode %04o, owner %u, group %u%s%s%s", (unsigned)(st->st_mode & 07777),
		 (unsigned)st->st_uid, (unsigned)st->st_gid, g ? " (" : "", g ? g->gr_name : "",
		 g ? ")" : "");
}

/* A directory where files can be made at all: not read-only, not /proc or /sys
 * (access(2) says yes to root there); errno 0 when it says no. */
static inline bool files_can_be_made(const char *dir)
{
	struct statfs fs;

	if (statfs(dir, &fs) < 0)
		return true;    /* access(2) has already said what it could */
	errno = 0;
	return !(fs.f_flags & ST_RDONLY) && fs.f_type != PROC_SUPER_MAGIC
	       && fs.f_type != SYSFS_MAGIC;
}

/* ---- CPU lists ---- */

static inline void cpus_add(struct cpus *s, long cpu)
{
	if (cpu >= 0 && cpu < NCPUS)
		s->bit[cpu / 64] |= 1ull << (cpu % 64);
}

static inline bool cpus_has(const struct cpus *s, long cpu)
{
	return cpu >= 0 && cpu < NCPUS && (s->bit[cpu / 64] >> (cpu % 64) & 1);
}

/* "0-1,4" */
static inline void cpus_format(const struct cpus *s, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (long c = 0; c < NCPUS && n < len; c++) {
		long e = c;

		if (!cpus_has(s, c))
			continue;
		while (cpus_has(s, e + 1))
			e++;
		if (e == c)
			n += (size_t)snprintf(out + n, len - n, "%s%ld", n ? "," : "", c);
		else
			n += (size_t)snprintf(out + n, len - n, "%s%ld-%ld", n ? "," : "", c, e);
		c = e;
	}
}

#endif
