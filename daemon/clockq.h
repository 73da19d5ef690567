/* SPDX-License-Identifier: GPL-2.0-or-later */
/* clockq.h - the clock's quality: is the system clock synchronised, and how far off may it be?
 *
 * TIME in the log is the system clock's reading, so a timestamp is only as good
 * as that clock. The kernel keeps what the synchronisation daemon (chronyd,
 * systemd-timesyncd, ntpd, phc2sys) last told it: adjtimex(2) reads
 * STA_UNSYNC, maxerror (the bound on the clock's error, which the kernel grows
 * by 500 us every second nobody updates it, up to 16 s) and esterror (the
 * estimated error). "Synchronised" is judged as systemd does
 * (timedatectl's "System clock synchronized"): maxerror below 16 s. STA_UNSYNC
 * alone is not enough: chrony leaves it set unless rtcsync is on.
 *
 * clockq_read() is the one call to adjtimex (tests wrap it). It takes the
 * kernel's timekeeping lock, so the flusher or main call it, never a real-time
 * thread. The rest is pure: when an EV clock line is due and what it says.
 */
#ifndef PORTLOGD_CLOCKQ_H
#define PORTLOGD_CLOCKQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fmt.h"

#define CLOCKQ_UNSYNC_US 16000000   /* NTP_PHASE_LIMIT: maxerror at or above this is "no" */
#define CLOCKQ_POLL_NS 1000000000LL /* a change of synchronisation is looked for this often */

struct clockq_state {
	int err;                    /* 0, or the errno adjtimex failed with */
	bool synced;                /* maxerror below 16 s */
	bool unsync_flag;           /* STA_UNSYNC */
	int leap;                   /* +1: a leap second is to be inserted, -1 deleted, 0 none */
	int64_t maxerror_us, esterror_us;
};

/* Reads the kernel's state with adjtimex (modes 0: nothing is changed). */
void clockq_read(struct clockq_state *st);

/* Why a line is written. */
enum clockq_reason {
	CLOCKQ_START,               /* the flusher started */
	CLOCKQ_CHANGE,              /* the synchronised state changed */
	CLOCKQ_STEP,                /* the clock was set (after EV clock-step) */
	CLOCKQ_STAT,                /* with a round of STAT lines */
};

/* What to say for STATUS=, for main. */
enum clockq_sync { CLOCKQ_NOT_READ, CLOCKQ_UNSYNCED, CLOCKQ_SYNCED, CLOCKQ_UNKNOWN };

struct clockq {
	int said;                   /* enum clockq_sync of the last line written; NOT_READ: none */
	int64_t next_poll;          /* CLOCK_MONOTONIC ns */
	/* written by the flusher, read by main for STATUS= */
	_Atomic int sync;           /* enum clockq_sync */
	_Atomic int64_t maxerror_us;
};

void clockq_init(struct clockq *q);

/*
 * Whether an EV clock line is due now for *why; fills st when it looked.
 * START, STEP and STAT always look and are due; CHANGE looks at most every
 * CLOCKQ_POLL_NS and is due when the synchronised state differs from the last
 * line's. A STAT round that finds such a difference says it: *why becomes
 * CHANGE. Each look also updates what STATUS= shows.
 */
bool clockq_due(struct clockq *q, enum clockq_reason *why, int64_t now_mono,
		struct clockq_state *st);
/* The line was written (a full buffer can refuse it: then it is due again). */
void clockq_said(struct clockq *q, const struct clockq_state *st);

/* "synced=yes maxerror_us=N esterror_us=N unsync_flag=no leap=none reason=start",
 * or "synced=unknown reason=... errno=E" when adjtimex failed. */
void clockq_fields(struct fmt_kv *kv, enum clockq_reason why, const struct clockq_state *st);

#endif
