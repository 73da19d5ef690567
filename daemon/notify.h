/* SPDX-License-Identifier: GPL-2.0-or-later */
/* notify.h - the service manager's view: READY, STATUS, WATCHDOG, RELOADING, STOPPING.
 *
 * Everything here runs in main. Without NOTIFY_SOCKET (not started by systemd)
 * it is a no-op and arms no timer. With it, a timerfd ticks every half watchdog
 * interval (WATCHDOG_USEC), or every NOTIFY_STATUS_S seconds without a
 * watchdog: each tick checks that every thread made progress (health.h) before
 * it sends WATCHDOG=1, and refreshes STATUS= with live figures now and then.
 */
#ifndef PORTLOGD_NOTIFY_H
#define PORTLOGD_NOTIFY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "health.h"
#include "parts.h"
#include "rt.h"

#define NOTIFY_STATUS_S 5

struct notify_figures {
	unsigned ports, ports_up;
	uint64_t records, drops, overruns, lines;
	int64_t timer_max_us;       /* -1 without a timer */
	const char *stalled;        /* the thread that withholds WATCHDOG=1, or NULL */
	char rt[96];                /* "rt ok" or "rt degraded: no ...", or "" when unknown */
	int clock;                  /* enum clockq_sync: said when not synchronised */
	int64_t clock_maxerror_us;
};

struct notify {
	bool enabled;               /* NOTIFY_SOCKET is set */
	uint64_t watchdog_usec;     /* 0: no watchdog */
	int timer_fd;               /* -1 when not enabled */
	int64_t next_status;        /* CLOCK_MONOTONIC ns */
	struct parts *parts;        /* the figures, and the threads to watch (its probes) */
	int stalled;                /* probe withholding the ping, or -1 */
	_Atomic bool withheld;      /* stalled >= 0, for the flusher (the metrics file) */
	unsigned pings;
	const char *stall_test;     /* PORTLOGD_TEST_STALL, or NULL */
	const struct rt *rt;        /* the real-time set-up, for STATUS=; NULL: not shown */
};

/* Reads NOTIFY_SOCKET and WATCHDOG_USEC; the registered parts are what it
 * watches and counts. */
void notify_init(struct notify *n, struct parts *ps);
void notify_fini(struct notify *n);

/* Every port is open (or being retried) and every thread runs: READY=1, arm the timer. */
int notify_ready(struct notify *n);
/* main's poll found timer_fd readable. */
void notify_tick(struct notify *n);
/* SIGHUP: RELOADING=1 until the flusher has reopened the log, then READY=1. */
void notify_reloading(struct notify *n);
void notify_reloaded(struct notify *n);
void notify_stopping(struct notify *n);

/* main's part (obj: the struct notify): its figure is the watchdog's verdict
 * (withheld), which the metrics file shows; in main and in the flusher. */
void notify_count(const void *obj, struct part_counts *c);

/* The live figures, and the STATUS= text made of them (pure). */
void notify_figures(const struct notify *n, struct notify_figures *fig);
size_t notify_status_text(char *buf, size_t len, const struct notify_figures *fig);

#endif
