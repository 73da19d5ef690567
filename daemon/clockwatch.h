/* SPDX-License-Identifier: GPL-2.0-or-later */
/* clockwatch.h - a machine's clock that stood still (a virtual machine paused whole), seen through its RTC.
 *
 * A hypervisor that pauses a guest (virsh suspend, a snapshot, a live migration's
 * last phase) stops the guest's clocks with it: QEMU's virtual clock under TCG, KVM's
 * kvmclock saved at stop and put back at cont. No thread inside can see that: on its
 * clock no time passed. But QEMU's CMOS RTC runs on the host's time (-rtc clock=host,
 * the default), and so does its update interrupt, once a second: a second of the RTC
 * timed on the guest's CLOCK_MONOTONIC is short by what the pause took from the clock
 * (tests/bench/RESULTS.md, "a paused VM's clock": 1,451 ms seen of 1,459 paused).
 *
 * The model. The RTC's update of second k (its own count, RTC_RD_TIME: a pause of
 * several seconds, reads missed) comes at host time T0 + k s; the guest reads it d_k
 * later (its wake-up, 0 <= d_k <= D) at guest time t_k. Its phase p_k = t_k - k s is
 * P + d_k - L_k, where L_k is what pauses took from the clock before it. The least
 * phase of the last CLOCKWATCH_WINDOW updates is the surest (the least wake-up); a
 * phase below it by more than the clocks' drift since proves a pause of at least that
 * much since the update before (wake-ups only ever add). A pause of up to the wake-ups'
 * spread more can hide in any second (a late wake-up before it, an early one after):
 * the spread seen is in clockwatch.spread_ns.
 *
 * Pure: fed the updates' times by its thread (clock sensor), no system calls.
 */
#ifndef PORTLOGD_CLOCKWATCH_H
#define PORTLOGD_CLOCKWATCH_H

#include <stdbool.h>
#include <stdint.h>

/* The RTC's and the clock's rates may differ this much (a crystal's 100 ppm, twice) */
#define CLOCKWATCH_DRIFT_PPM 200
#define CLOCKWATCH_WINDOW 8     /* updates whose least phase is the base: a pause is seen
				 * short by up to their seconds and one of drift allowed
				 * (1.8 ms: the update a pause swallowed is read between two) */

struct clockwatch {
	int64_t period_ns;      /* the RTC's update period: a second */
	int64_t sec0;           /* the first update's RTC second */
	int64_t last, before;   /* the latest update's time, the one before; 0: none yet */
	int64_t phase[CLOCKWATCH_WINDOW], at[CLOCKWATCH_WINDOW];    /* the latest phases, when */
	unsigned n, next;
	int64_t spread_ns;      /* the latest phase above the base: the wake-ups' spread seen */
	/* figures */
	uint64_t updates, stops;
	int64_t lost_ns, lost_max_ns;
};

/* What one update says: a pause of `lost` ns (0: none proven) between `from` (the
 * update before the one before: the update the pause swallowed comes at the resume,
 * late by where in its second the pause ended, and may look on time) and `to` (this
 * one). */
struct clockwatch_stop {
	int64_t from, to, lost;
};

/* A source's lines and the stops (the flusher's, zeroed with the source:
 * clocksensor.h, clock_judge). */
struct clock_doubt {
	int64_t applied;            /* the `to` of the latest stop applied to its lines */
	int64_t until;              /* in doubt since a stop ending here, until a silence read
				     * after it closes a line; 0: not in doubt */
	int64_t lost;               /* that stop's */
};

void clockwatch_init(struct clockwatch *w, int64_t period_ns);

/*
 * The RTC's update of its second `sec` read at t (CLOCK_MONOTONIC). Returns true and
 * fills *s when the clock lost time since the update before.
 */
bool clockwatch_update(struct clockwatch *w, int64_t t, int64_t sec, struct clockwatch_stop *s);

#endif
