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
 * A reader asks how early the first byte of what it read can have reached the
 * kernel. Its CPU: a reader woken at w was not waiting to run when its CPU's
 * sensor last went back to sleep (it would have run then), unless it ran right
 * after (then at the look before); back further to the start of a window not
 * closed a period and a quarter before w; a sensor overdue counts as a window open
 * since it last looked, so a verdict that comes after the bytes (the reader and
 * the sensor wake together when a stall ends) is never missed. That bounds when
 * the bytes reached the line discipline. The tty path: the worker's queue is
 * first in, first out, so bytes that reached the line discipline after a probe came
 * back were handed to the worker no earlier than that probe was written; with no
 * probe to lean on, a period and a quarter (and a probe still out is a stall that
 * has not ended). The sensors' figures (windows, looks, probes) are published
 * under sequence counts (seqlocks): a reader only loads, never waits, never writes.
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

/* Two times under a sequence count: a stall window (from, to), a sensor's two
 * latest looks (the latest, the one before), a probe (written, back). */
struct sensor_win {
	_Atomic uint32_t seq;   /* odd while its writer changes it */
	_Atomic int64_t from, to;
};
#define SENSOR_PROBES 8         /* each sensor's latest probes back, for the readers */

/* One CPU's sensor thread and its probe of the tty path. */
struct sensor_cpu {
	struct sensors *set;
	int cpu;
	unsigned index;             /* in the set: its turn to probe */
	struct thread thread;
	struct health_beat beat;
	struct sensor_win looks;    /* the ends of its two latest wake-ups (CLOCK_MONOTONIC ns) */
	struct sensor_win cpu_win;  /* its CPU's latest stall window */
	struct sensor_win probe[SENSOR_PROBES];     /* its latest probes back: written, read */
	unsigned probe_next;        /* the slot its next probe back goes to (its thread's) */
	_Atomic int64_t probe_out;  /* the write of its probe not yet read back; 0: none */
	int pty_master, pty_slave;
	/* statistics, written by its thread only */
	_Atomic uint64_t ticks, stalls, probes, tty_stalls;
	_Atomic int64_t stall_max_ns, stall_ns, tty_max_ns;
	_Atomic uint64_t hist[SENSOR_HIST + 1];
	_Atomic int64_t cpu_ns;     /* its thread's CPU time at its latest budget check */
	_Atomic int verdict;        /* that check's: 1 over its budget, -1 under a quarter */
	int64_t budget_at, budget_period;   /* that check's time; the period then (the first) */
};

struct sensors {
	int64_t conf_period_ns;     /* the config's sensor_period_us */
	_Atomic int64_t period_ns;  /* the period they run at: the config's, or longer (budget) */
	_Atomic int64_t unseen_ns;  /* what can go unseen per stage: the longest period they ran
				     * at since a second ago and a quarter */
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

/*
 * The earliest the first byte of a read can have reached the kernel: a read woken
 * at w on cpu (-1: not known), or (woken false) one that found bytes the line
 * discipline did not hold at w (the read before it emptied it then); any CPU's stall
 * counts, as the port's tty work may have waited there. *stage: the stage that set
 * the bound (a CPU or the tty path). Real-time safe:
 * loads only. Without sensors, w.
 */
int64_t sensors_from(const struct sensors *s, int cpu, int64_t w, bool woken,
		     enum reasm_stage *stage);

/*
 * An empty read at t on cpu (-1: not known): since when a byte may have reached its
 * device and still wait for the kernel, its interrupt due on another CPU not seen
 * running since (each other CPU's latest look: it may have stopped right after), or
 * seen only just after a stall (a window not closed a period and a quarter before t:
 * its sensor may have run before the interrupt's handler). INT64_MAX: none (no other
 * CPU). Real-time safe: loads only.
 */
int64_t sensors_held(const struct sensors *s, int cpu, int64_t t);

/*
 * The sensors' CPU budget. A sensor thread that took more than SENSOR_BUDGET_PCT of its
 * CPU over a second (a slow machine: an emulated one wakes a thread for hundreds of
 * microseconds) doubles the set's period, up to SENSOR_SLOW_MAX times the config's: the
 * bound they give widens (a stall of the period and a quarter goes unseen), so the rule
 * stays sound and marks more; when every sensor took under a quarter of the budget, the
 * period halves back toward the config's. The period a sensor should run at next, from
 * the current one, the config's and the CPU it used (used_ns) in span_ns.
 */
#define SENSOR_BUDGET_PCT 10
#define SENSOR_SLOW_MAX 64
int64_t sensor_budget_period(int64_t period, int64_t conf_period, int64_t used_ns,
			     int64_t span_ns);

/* The tty path's delivery percentile (0..100) over all probes, in us; -1 when none. */
int64_t sensors_tty_pct_us(const struct sensors *s, double pct);

#endif
