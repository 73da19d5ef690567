/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sampler.h - one thread per [parallel NAME]: on each timer tick read the pins, push changes.
 *
 * A transient recorder: an IN record is pushed only when the masked value
 * differs from the previous sample (the first sample always). Ticks that come
 * while the previous sample is still running are overruns: the timer counts
 * them, the sampler reports them in OVERRUN records, at most once a second.
 *
 * With a strobe ([parallel] strobe =), as the original multithreaded_logger did
 * for an external ADC: set the pin, wait strobe_us, read, reset the pin; the
 * IN record's time is the read's. Waits up to SAMPLER_SPIN_MAX_US are spun,
 * longer ones slept (sampler.c says why).
 */
#ifndef PORTLOGD_SAMPLER_H
#define PORTLOGD_SAMPLER_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "thread.h"
#include "drv.h"
#include "health.h"
#include "parts.h"
#include "irq.h"
#include "source.h"

struct sampler {
	const struct conf_parallel *cfg;
	const struct drv_input_ops *ops;
	void *state;
	unsigned bits;              /* width of the value: 4, 8 or 16 */
	bool strobe;                /* pulse the driver's strobe pin around each read */
	bool strobe_sleep;          /* ... waiting in clock_nanosleep, not spinning */
	int64_t strobe_ns;          /* from setting the pin to the read */
	struct source src;
	sem_t go;                   /* posted by the timer: a futex underneath */

	/* shared with the timer */
	_Atomic int busy;           /* 1 from a trigger until its sample is done */
	_Atomic uint64_t tick;      /* the tick of the pending trigger */
	_Atomic uint64_t overruns;  /* triggers that found the sampler busy */
	_Atomic bool stop;

	/*
	 * The port's link. A read that fails makes it SAMPLER_LOST (the sampler, with
	 * release): from then on the sampler leaves state alone and counts its ticks
	 * as unread. Main reopens a lost port every 500 ms (sampler_reopen), outside
	 * the real-time threads: on success it stores the new state and
	 * SAMPLER_REOPENED (release); the sampler then says EV open and samples again.
	 */
	_Atomic int link;

	/* written by the sampler, read by anyone */
	_Atomic uint64_t samples;
	_Atomic uint64_t unread;    /* ticks while the port was lost: not sampled */
	_Atomic uint64_t reopens;   /* the port came back after it was lost (STAT reopens=) */
	struct health_beat beat;    /* for the watchdog */
	/* the port's interrupt threads: set by main at start and at each reopen
	 * (before the release of SAMPLER_REOPENED), reported by the sampler */
	struct irq_port irq;

	/* sampler-private */
	int last;                   /* -1 before the first sample */
	int last_err;
	uint64_t unread_said;       /* unread up to the last EV open */
	uint64_t overruns_reported;
	int64_t overrun_reported_mono;
	struct thread thread;

	int open_err;               /* main-private: the last reopen error, said once */
};

enum { SAMPLER_UP, SAMPLER_LOST, SAMPLER_REOPENED };
#define SAMPLER_SPIN_MAX_US 100

/* Opens the driver and prepares the ring; err says what to do on failure. */
int sampler_init(struct sampler *s, const struct conf_parallel *cfg, uint32_t ring_records,
		 char *err, size_t errlen);
void sampler_fini(struct sampler *s);
/* Registers the sampler: its ring, its beat, its figures and its STAT line. */
bool sampler_parts(struct sampler *s, struct parts *ps);
int sampler_start(struct sampler *s, int *degraded);
/* After the timer has stopped: take a pending trigger, report, end. */
void sampler_stop(struct sampler *s);
/* From main (not real time): reopen the port if it was lost. True while it stays
 * lost (try again in SAMPLER_RETRY_MS). */
#define SAMPLER_RETRY_MS 500
bool sampler_reopen(struct sampler *s);

/* From the timer thread, each tick: start a sample, or count an overrun. */
static inline void sampler_trigger(struct sampler *s, uint64_t tick)
{
	/* acq_rel: pairs with the release that ends a sample */
	if (atomic_exchange_explicit(&s->busy, 1, memory_order_acq_rel) != 0) {
		atomic_fetch_add_explicit(&s->overruns, 1, memory_order_relaxed);
		return;
	}
	atomic_store_explicit(&s->tick, tick, memory_order_relaxed);
	(void)sem_post(&s->go);     /* cannot fail: the count never grows past 2 */
}

#endif
