/* SPDX-License-Identifier: GPL-2.0-or-later */
/* clocksensor.h - the thread that times the RTC's seconds on CLOCK_MONOTONIC (clockwatch.h) and publishes what it saw.
 *
 * Branch clock-sensor, not wired yet: the flusher is to hold a serial port's records
 * until `horizon` has passed their last read, and to mark the lines that overlap a
 * stop (see the branch's first commit and the stop's closing note).
 *
 * One writer (its thread), readers that never wait: the horizon is a single store
 * (release) after the stops it vouches for; a stop goes into its slot before the count
 * that says it is there (release), and a reader (acquire) takes the last
 * CLOCK_SENSOR_STOPS at most (it looks every flush, a stop comes once a second at most).
 */
#ifndef PORTLOGD_CLOCKSENSOR_H
#define PORTLOGD_CLOCKSENSOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "clockwatch.h"
#include "thread.h"

#define CLOCK_SENSOR_STOPS 16

struct clock_sensor {
	int fd;                     /* the RTC, update interrupts on; -1: none */
	struct thread thread;
	_Atomic bool stop;
	struct clockwatch w;        /* its thread's */
	_Atomic int64_t horizon;    /* the latest update read (CLOCK_MONOTONIC): a stop before
				       it is in stops[] already; 0: none yet */
	struct clockwatch_stop stops[CLOCK_SENSOR_STOPS];
	_Atomic uint64_t nstops;    /* stops published: slot (n - 1) % CLOCK_SENSOR_STOPS */
	/* figures for STAT and the metrics file */
	_Atomic uint64_t updates;
	_Atomic int64_t lost_ns, lost_max_ns, spread_ns;
};

/* Opens the RTC at path and turns its update interrupt on: 0, or -errno (-ENOENT: no
 * RTC; -EBUSY: another opener, hwclock or chronyd's rtcfile; -EINVAL, -ENOTTY: no
 * update interrupt). c->fd is -1 unless 0. */
int clock_sensor_open(struct clock_sensor *c, const char *path);
int clock_sensor_start(struct clock_sensor *c, int priority, int *degraded);
void clock_sensor_stop(struct clock_sensor *c);
void clock_sensor_close(struct clock_sensor *c);

/* The stops published after the `seen` first ones into out (up to max, the latest):
 * how many; *seen moves on. Any thread, never waits. */
unsigned clock_sensor_stops(struct clock_sensor *c, uint64_t *seen, struct clockwatch_stop *out,
			    unsigned max);

#endif
