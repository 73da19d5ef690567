/* SPDX-License-Identifier: GPL-2.0-or-later */
/* timer.h - the highest-priority thread: wakes every period, measures itself, triggers the samplers.
 *
 * It sleeps with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to targets that
 * are whole multiples of the period, each computed from the previous target,
 * never from the wake-up, so there is no drift. latency = wake-up - target goes
 * into a histogram of 1 us bins like cyclictest -h, after a warm-up. A wake-up
 * a period or more late skips the targets it missed and counts them.
 */
#ifndef PORTLOGD_TIMER_H
#define PORTLOGD_TIMER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "health.h"
#include "parts.h"
#include "thread.h"
#include "sampler.h"

#define TIMER_HIST_US 10000     /* bins of 1 us; the last one holds everything above */

struct timer_stats {
	_Atomic uint64_t ticks;     /* measured wake-ups (after the warm-up) */
	_Atomic uint64_t rounds;    /* every wake-up, each triggering every sampler */
	_Atomic uint64_t missed;    /* targets skipped because a wake-up came a period late */
	_Atomic int64_t min_ns, max_ns, sum_ns;
	_Atomic uint64_t hist[TIMER_HIST_US + 1];   /* 32 bits wrap in 50 days at 1 kHz */
};

struct timer {
	int64_t period_ns;
	int64_t warmup_ns;
	struct sampler **samplers;
	unsigned nsamplers;
	int priority;
	int cpu;
	struct timer_stats st;
	_Atomic bool stop;
	struct health_beat beat;    /* for the watchdog */
	struct thread thread;
};

void timer_init(struct timer *t, const struct conf_timer *cfg, struct sampler **samplers,
		unsigned n);
/* Registers the timer: its beat, its figures (missed periods, the largest
 * latency) and its STAT line. Its missed periods have no ring: the flusher says
 * them in OVERRUN lines of source portlogd. */
bool timer_parts(struct timer *t, struct parts *ps);
int timer_start(struct timer *t, int *degraded);
void timer_stop(struct timer *t);

/* Latency percentile (0..100) of the histogram, in us; -1 when empty. */
int64_t timer_pct_us(const struct timer_stats *st, double pct);

#endif
