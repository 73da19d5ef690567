/* SPDX-License-Identifier: GPL-2.0-or-later */
/* flush.h - the flusher: the only consumer of every ring, the only writer of the log.
 *
 * Lowest priority. Every flush_interval_ms, or sooner when a ring is half full,
 * it drains the rings, merges their records by time, has fmt.c make their
 * lines and hands them to the log file (logfile.h), which appends them and
 * syncs at most every sync_interval_ms. Lines it cannot write stay; the rings
 * then fill and the producers count drops, so every loss is counted where it
 * happens. What happens to the file comes back as events, which the flusher
 * says in EV lines and the journal. It also writes the metrics file, if there
 * is one (metrics.h), from the same figures as the STAT lines.
 */
#ifndef PORTLOGD_FLUSH_H
#define PORTLOGD_FLUSH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "clockq.h"
#include "clocksensor.h"
#include "conf.h"
#include "thread.h"
#include "fmt.h"
#include "health.h"
#include "logfile.h"
#include "parts.h"
#include "source.h"

struct metrics;

/* A ring's head in the merge (flush.c): its time, and which ring. */
struct flush_head {
	int64_t t_mono;
	uint32_t src;
};

struct flusher {
	const struct conf *conf;
	struct source **src;    /* the rings of the registered parts, nsrc of them */
	unsigned nsrc;
	struct flush_head *heap;        /* the merge's heap of ring heads (nsrc entries) */
	bool *queued;           /* per ring: in this drain's heap, or set aside (held) */
	int64_t *waits;         /* per ring: the time of its line the clock sensor holds in
				 * this drain (its pair's younger lines wait too); INT64_MAX */
	struct clock_view rtc;  /* the clock sensor's word (clocksensor.h); rtc.c NULL: none */

	struct logfile log;     /* the file, and the lines waiting for it */
	int cmd_fd;             /* eventfd: main wakes us for reopen and stop */
	int reopened_fd;        /* eventfd: we tell main a reopen is done (or failed) */
	int clock_fd;           /* timerfd that fires when CLOCK_REALTIME is set */
	int64_t clock_off;      /* CLOCK_REALTIME - CLOCK_MONOTONIC at the last look */
	int64_t step_unsaid_ns; /* a clock step not yet said (the buffer was full) */
	struct clockq clock;    /* the clock's quality: EV clock lines, STATUS= */
	_Atomic bool reopen_req, stop_req;

	uint8_t *pkt;           /* one packet, rejoined from its slots */
	size_t pkt_cap;
	struct fmt fmt;
	uint64_t fail_dropped0; /* records dropped when the log's current outage began */
	uint64_t bad_records;   /* records of a kind no table names (bugs), said in EV lines */
	bool echo;              /* also send EV and DROP lines to the diagnostic log
				 * (stderr with -f, else the journal) */

	/* called after every drain: self-monitoring lines (STAT, the timer's OVERRUN);
	 * with stat_due, after the round's look at the clock and before its EV clock line */
	void (*hook)(void *ctx, struct flusher *f, bool stat_due, bool final);
	void *hook_ctx;
	struct metrics *metrics;    /* the metrics file the hook writes (metrics.h), or NULL */

	/* counters: written by the flusher, read by main for status */
	_Atomic uint64_t lines;
	struct health_beat beat;    /* for the watchdog */
	struct thread thread;
};

/*
 * Prepares a flusher for the rings of the parts registered so far, in their
 * order, and opens the log file (creating it, mode 0640). An incomplete last
 * line left by a crash is cut off first and reported in an EV line. Returns 0
 * or -errno with a message in err.
 */
int flush_init(struct flusher *f, const struct conf *c, const struct parts *ps, char *err,
	       size_t errlen);
void flush_fini(struct flusher *f);
/* The log file's buffer for config c (what flush_init allocates): 1 MiB, or the lines
 * of four of the longest packets. Its packet buffer is the longest packet's. */
size_t flush_buffer_bytes(const struct conf *c);
/* Registers the flusher: its beat, its figures (lines written) and its STAT line. */
bool flush_parts(struct flusher *f, struct parts *ps);

int flush_start(struct flusher *f, int *degraded);
/* From main: reopen the log file (SIGHUP) at the next opportunity; reopened_fd
 * becomes readable when that is done or has failed (and been logged). */
void flush_reopen(struct flusher *f);
/* From main, after every producer has stopped: drain everything, sync, and end. */
void flush_stop(struct flusher *f);

/* Appends a line of source "portlogd" dated now: a record of `kind` with `a` its
 * number (EV: the enum ev_code; OVERRUN: the count) and its fields (EV, STAT;
 * "" for none). False when the buffer is full of unwritten lines: nothing was
 * added, say it again later. */
bool flush_line(struct flusher *f, enum rec_kind kind, int64_t a, const char *fields);

/* One drain pass, for tests and for the thread: returns slots consumed. */
uint32_t flush_drain(struct flusher *f, bool all);
/* Writes the buffer out; returns 0 or -errno. */
int flush_write(struct flusher *f);

#endif
