/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sensor.h - what the serial readers cannot see: a CPU that did not run them, a tty worker that was late.
 *
 * A reader timestamps its wake-up, but not how late that came: its CPU may have
 * stopped (a VM's vCPU, an SMI, a real-time task above it) or the kernel's tty
 * worker (a SCHED_OTHER kworker that hands the flip buffer to the line
 * discipline) may have waited, and the bytes of several packets then arrive
 * together. The boundary rule (reasm.h) needs a bound on that lateness; these
 * sensors give it, in every config with a serial port.
 *
 * The CPU. One thread per CPU the readers may run on, pinned to it, at the
 * readers' priority (the lowest of them: whatever delays a reader delays it),
 * wakes every period on clock_nanosleep(TIMER_ABSTIME). A wake-up later than a
 * quarter of the period opens a stall window, from the end of its last wake-up
 * (the CPU may have stopped right after it) to this one. A stall shorter than
 * the period and that quarter can fall between two wake-ups unseen.
 *
 * The tty path. At every period one of those threads, in turn, writes a byte
 * into a pty of its own and waits for it on the other side: the kernel's tty
 * worker hands it over as it hands over a port's bytes. A delivery later than a
 * quarter of the period is a stall window of the tty path, from the write to
 * the read; one still outstanding is a window still open. Unseen: a delay
 * shorter than the period and that quarter, falling between two probes.
 *
 * A reader that woke at w asks how long before w its first byte can have reached
 * the kernel: for its CPU and for the tty path, each its unseen bound, or back to
 * the start of a window that had not closed that long before w; a sensor that
 * is overdue (it did not run for longer than its unseen bound) counts as a
 * window still open since it last ran, so a verdict that comes after the bytes
 * (the reader and the sensor wake together when a stall ends) is never missed.
 * The two stages add up. Windows are published under a sequence count (a
 * seqlock): a reader only loads, never waits, never writes.
 */
#ifndef PORTLOGD_SENSOR_H
#define PORTLOGD_SENSOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "health.h"
#include "parts.h"
#include "reasm.h"
#include "thread.h"

#define SENSOR_HIST 1024        /* the tty path's delivery: bins of 10 us; the last holds more */

/* A stall window: from, to (INT64_MAX while open), under a sequence count. */
struct sensor_win {
	_Atomic uint32_t seq;   /* odd while its writer changes it */
	_Atomic int64_t from, to;
};

/* One CPU's sensor thread and its probe of the tty path. */
struct sensor_cpu {
	struct sensors *set;
	int cpu;
	unsigned index;             /* in the set: its turn to probe */
	struct thread thread;
	struct health_beat beat;
	_Atomic int64_t ran;        /* the end of its latest wake-up (CLOCK_MONOTONIC ns) */
	struct sensor_win cpu_win;  /* its CPU's latest stall window */
	struct sensor_win tty_win;  /* the tty path's latest, as its probes saw it */
	_Atomic int64_t probe_out;  /* the write of its probe not yet read back; 0: none */
	int pty_master, pty_slave;
	/* statistics, written by its thread only */
	_Atomic uint64_t ticks, stalls, probes, tty_stalls;
	_Atomic int64_t stall_max_ns, stall_ns, tty_max_ns;
	_Atomic uint64_t hist[SENSOR_HIST + 1];
};

struct sensors {
	int64_t period_ns;
	int64_t unseen_ns;          /* the period and a quarter: what can go unseen, per stage */
	int priority;
	unsigned n;
	struct sensor_cpu *cpu;     /* n of them */
	int cpu_index[CONF_CPU_MAX + 1];    /* CPU number to its sensor, -1: none */
	_Atomic bool stop;
	unsigned started;
};

/* The CPUs the config's serial readers may run on, the readers' priority and the
 * config's period; opens a probe pty per CPU. 0 or -errno. No serial port: none. */
int sensors_init(struct sensors *s, const struct conf *c);
void sensors_fini(struct sensors *s);

/* Registers each sensor thread: its beat, its STAT line. */
bool sensors_parts(struct sensors *s, struct parts *ps);

int sensors_start(struct sensors *s, int *degraded);
void sensors_stop(struct sensors *s);

/* What the sensors bound for a reader that woke at w on cpu (-1: not known):
 * how long before w its first byte can have reached the kernel, through its CPU
 * and through the tty path. Real-time safe: loads only. */
struct sensor_bound {
	int64_t cpu_ns, tty_ns;
};
void sensors_bound(const struct sensors *s, int cpu, int64_t w, struct sensor_bound *b);

/* The larger of the two stages of a bound. */
static inline enum reasm_stage sensor_stage(const struct sensor_bound *b)
{
	return b->cpu_ns >= b->tty_ns ? REASM_STAGE_CPU : REASM_STAGE_TTY;
}

/* The tty path's delivery percentile (0..100) over all probes, in us; -1 when none. */
int64_t sensors_tty_pct_us(const struct sensors *s, double pct);

#endif
