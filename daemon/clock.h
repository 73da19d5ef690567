/* SPDX-License-Identifier: GPL-2.0-or-later */
/* clock.h - nanosecond clocks as int64_t. */
#ifndef PORTLOGD_CLOCK_H
#define PORTLOGD_CLOCK_H

#include <stdint.h>
#include <time.h>

#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL
#define NS_PER_US 1000LL

static inline int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	(void)clock_gettime(id, &ts);   /* cannot fail for the clocks we use */
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static inline int64_t mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
static inline int64_t real_ns(void) { return clock_ns(CLOCK_REALTIME); }

/* Busy-waits until CLOCK_MONOTONIC reaches `until` (no system call: the vDSO). */
static inline void spin_until_ns(int64_t until)
{
	while (mono_ns() < until)
		;
}

static inline struct timespec ns_to_ts(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S };

	return ts;
}

#endif
