/* SPDX-License-Identifier: GPL-2.0-or-later */
/* health.h - is every thread still making progress? The evidence for WATCHDOG=1.
 *
 * Each watched thread owns a health_beat. Around its one blocking wait (ppoll,
 * sem_wait, clock_nanosleep, TIOCMIWAIT) it calls health_park() and
 * health_unpark(): two relaxed/release atomic stores and one add on memory it
 * owns, so a real-time thread gains no system call and no wake-up. Main samples
 * the beats every half watchdog interval: a thread is alive when its beat count
 * moved since the previous sample or it is parked in its wait now. A thread that
 * spins, loops without waiting, or blocks anywhere else is stalled, and main
 * withholds the watchdog ping so that systemd restarts the service.
 */
#ifndef PORTLOGD_HEALTH_H
#define PORTLOGD_HEALTH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define HEALTH_NAME_MAX 48

struct health_beat {
	_Atomic uint64_t beats;     /* wake-ups from the wait, bumped by the owner */
	_Atomic bool parked;        /* the owner is in (or about to enter) its wait */
	_Atomic bool stall;         /* test hook (PORTLOGD_TEST_STALL): stop progressing */
};

static inline void health_beat_init(struct health_beat *b)
{
	atomic_init(&b->beats, 0);
	atomic_init(&b->parked, false);
	atomic_init(&b->stall, false);
}

/* Just before the thread blocks in its wait. */
static inline void health_park(struct health_beat *b)
{
	atomic_store_explicit(&b->parked, true, memory_order_relaxed);
}

/*
 * Just after the wait. The count moves before the flag drops (release), so a
 * checker that sees parked == false (acquire) also sees the new count: a
 * thread that was parked for the whole interval and just woke up is never
 * taken for stalled.
 */
static inline void health_unpark(struct health_beat *b)
{
	atomic_fetch_add_explicit(&b->beats, 1, memory_order_relaxed);
	atomic_store_explicit(&b->parked, false, memory_order_release);
}

/*
 * Progress between two waits: a thread whose work can run long (the flusher
 * formatting and writing a large drain) says so every so often, so that only a
 * thread that stopped getting anywhere (blocked in a write that never returns,
 * looping) is taken for stalled. Relaxed: a checker sees it at its next look.
 */
static inline void health_progress(struct health_beat *b)
{
	atomic_fetch_add_explicit(&b->beats, 1, memory_order_relaxed);
}

static inline bool health_stall_wanted(const struct health_beat *b)
{
	return atomic_load_explicit(&b->stall, memory_order_relaxed);
}

/*
 * Test hook: makes the calling thread stop progressing without being parked,
 * as a thread stuck in a loop would, until *stop becomes true or stop_fd (if
 * >= 0) becomes readable, so the daemon can still stop cleanly.
 */
void health_stall(const _Atomic bool *stop, int stop_fd);

/* What main keeps per watched thread. */
struct health_probe {
	char name[HEALTH_NAME_MAX];   /* "flusher", "timer", "serial:gps", ... */
	struct health_beat *beat;
	uint64_t seen;                /* beats at the previous check */
};

/* The rule, pure: progress since the previous check, or parked in its wait. */
static inline bool health_alive(uint64_t seen, uint64_t beats, bool parked)
{
	return beats != seen || parked;
}

/* Names the probe "kind" or, for a port's thread, "kind:port". */
void health_probe_init(struct health_probe *p, struct health_beat *b, const char *kind,
		       const char *port);

/*
 * Samples every probe and remembers the counts for the next check. Returns the
 * index of the first stalled thread, or -1 when all are alive.
 */
int health_check(struct health_probe *p, unsigned n);

/* The probe named `name`, or -1. */
int health_find(const struct health_probe *p, unsigned n, const char *name);

#endif
