/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fixture.h - fixture trees for tests of code that reads /proc, /sys and /dev below a root. */
#ifndef PORTLOGD_FIXTURE_H
#define PORTLOGD_FIXTURE_H

#include <stddef.h>

/* A fresh directory (mode 0755) under $TMPDIR or /tmp, named after who. */
void fx_mkroot(char *root, size_t len, const char *who);
/* ROOT/rel with text (its directories made), or a symbolic link when text is "-> target". */
void fx_put(const char *root, const char *rel, const char *text);
/* ROOT/proc/PID/comm, and the stat line of the task (PID/task/TID/stat when tid is
 * not 0, else PID/stat): field 9 flags, 40 rt_priority, 41 policy, the rest 0. */
void fx_task(const char *root, long pid, long tid, const char *comm, unsigned long flags,
	     int prio, int policy);
/* The whole tree, best effort. */
void fx_rmroot(const char *root);
/* From now on readdir hands out `after` more entries, then returns NULL with errno err
 * (0: readdir works again): ext4 says EOVERFLOW to a 32-bit build without 64-bit file
 * offsets under a 64-bit kernel. Link with portlogd_wrap(TARGET readdir). */
void fx_fail_readdir(int err, unsigned after);

#endif
