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
/* fx_task, with its CPU time: field 14 (utime) ticks and 22 (starttime) start, in clock
 * ticks; and its status (PID/task/TID/status, or PID/status) with Cpus_allowed_list:
 * cpus (NULL: no status written). */
void fx_task_run(const char *root, long pid, long tid, const char *comm, unsigned long flags,
		 int prio, int policy, unsigned long ticks, unsigned long start, const char *cpus);
/* The whole tree, best effort. */
void fx_rmroot(const char *root);
/* From now on readdir hands out `after` more entries, then returns NULL with errno err
 * (0: readdir works again): ext4 says EOVERFLOW to a 32-bit build without 64-bit file
 * offsets under a 64-bit kernel. Link with portlogd_wrap(TARGET readdir). */
void fx_fail_readdir(int err, unsigned after);

#endif
