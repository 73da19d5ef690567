/* SPDX-License-Identifier: GPL-2.0-or-later */
/* failio.h - a disk that fails on demand: write() and fdatasync() wrapped (-Wl,--wrap).
 *
 * No disk here returns EIO, fills in the middle of a line, or fails a sync on
 * demand, so the tests of the log file and the flusher link this with
 * -Wl,--wrap=write,--wrap=fdatasync. Writes to other descriptors, and every
 * call while the knobs are at rest, go to the real functions.
 */
#ifndef PORTLOGD_FAILIO_H
#define PORTLOGD_FAILIO_H

#include <stddef.h>

extern int failio_fd;           /* writes to this fd obey the knobs below (-1: none) */
extern int failio_errno;        /* while set, such a write fails with it */
extern unsigned failio_writes;  /* writes tried on failio_fd */
/* > 0: the next write on failio_fd writes only that many bytes, and the ones
 * after it fail with ENOSPC (a disk that fills in the middle of a line) */
extern size_t failio_short;
extern void (*failio_hook)(void);   /* called first at each write on failio_fd */
extern unsigned failio_syncs;   /* fdatasync calls, on any fd */
extern int failio_sync_errno;   /* while set, fdatasync fails with it */

/* Every knob at rest, the counts at 0. */
void failio_reset(void);

#endif
