/* SPDX-License-Identifier: GPL-2.0-or-later */
/* clocksensor.h - the thread that times the RTC's seconds on CLOCK_MONOTONIC (clockwatch.h), and what the flusher makes of it.
 *
 * A pause of the whole machine only ever shortens a silence on the clock (the clock
 * stood still while the wire went on): a boundary the reader proved stays proven, but
 * bytes it joined may have had a silence between them, the backlog the hypervisor held
 * handed over at once. The reader cannot know: the RTC's update that shows the pause
 * comes up to a second after it. So the flusher judges a serial line once the sensor
 * has read an update after the line's last read (its record's read_by):
 *
 *   - a line of more than one byte whose reads may have come after a stop (it was
 *     handed over after the stop's window began) gets an EV late-delivery case=clock
 *     stage=machine before it, and so does each line after it, up to and including
 *     the first that a silence read after the window ended (a deadline's empty read:
 *     the backlog is out and the wire is live again) closes;
 *   - a line the sensor cannot vouch for (it was silent CLOCK_SILENT_NS: its thread
 *     stopped, the RTC stopped interrupting) is written, marked the same way.
 *
 * Lines wait up to a second and a little for this where the sensor runs; the rings
 * hold ring_seconds. Within a source the lines stay in time order (the flusher sets a
 * ring aside at its first line that waits).
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
/* Its wake-up is its measurement: a late one looks like a second that lasted longer, an
 * early one after it like a pause (false doubt). Once a second, microseconds of work: at
 * the top, above the readers (in the guest under TCG its wake-ups spread over 2-10 ms
 * at the readers' lowest priority, and 6-14 ms of them were taken for pauses). */
#define CLOCK_SENSOR_PRIORITY 99
#define CLOCK_SENSOR_RTC "/dev/rtc0"     /* the system's RTC (udev's /dev/rtc link) */

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
	_Atomic uint64_t marked, unvouched;    /* the flusher's lines marked for a stop; for
						* the sensor's silence */
};

/* Opens the RTC at path and turns its update interrupt on: 0, or -errno (-ENOENT: no
 * RTC; -EBUSY: another opener, hwclock or chronyd's rtcfile; -EINVAL, -ENOTTY: no
 * update interrupt). c->fd is -1 unless 0. */
int clock_sensor_open(struct clock_sensor *c, const char *path);
/* Whether the machine at root ("/": this one) is virtual (its pauses stop the clock):
 * the CPU's hypervisor flag (x86), Xen's /sys/hypervisor, or the firmware's vendor;
 * what said so in why. */
bool clock_sensor_virtual(const char *root, char *why, size_t len);
/* Its STAT line ("clock"), for the metrics file too. */
struct parts;
bool clock_sensor_parts(struct clock_sensor *c, struct parts *ps);
int clock_sensor_start(struct clock_sensor *c, int priority, int *degraded);
void clock_sensor_stop(struct clock_sensor *c);
void clock_sensor_close(struct clock_sensor *c);

/* The stops published after the `seen` first ones into out (up to max, the latest):
 * how many; *seen moves on. Any thread, never waits. */
unsigned clock_sensor_stops(struct clock_sensor *c, uint64_t *seen, struct clockwatch_stop *out,
			    unsigned max);

/* After the producers stopped: waits until the sensor has read an update after t (the
 * readers' last reads), so the last second's lines are judged; at most 1.5 s. */
void clock_sensor_settle(struct clock_sensor *c, int64_t t);

/* The flusher's side: what the sensor had said at its last look (flusher-private). */
struct clock_view {
	struct clock_sensor *c;     /* NULL: no sensor runs */
	int64_t horizon;            /* its horizon then */
	struct clockwatch_stop stops[CLOCK_SENSOR_STOPS];  /* its latest stops, oldest first */
	unsigned n;
	uint64_t seen;
};

/* One serial line as its record has it: the reads' end (read_by: the record was
 * handed over then), the empty read of the deadline that ended it (0: none did), bytes. */
struct clock_line {
	int64_t read_by, silence_read;
	uint32_t len;
};

#define CLOCK_SILENT_NS (3 * (int64_t)1000000000)

enum clock_verdict { CLOCK_PASS, CLOCK_HOLD, CLOCK_MARK };

/* Takes the sensor's horizon, then the stops it vouches for. */
void clock_view_look(struct clock_view *v);

/* Whether the line waits for the sensor at now: more than one byte, read after its
 * horizon, and the sensor not silent CLOCK_SILENT_NS since. */
bool clock_waits(const struct clock_view *v, const struct clock_line *l, int64_t now);

/*
 * The line's verdict at now: wait (nothing changes), write, or write marked (*wait_ns:
 * what the clock lost, or how long the sensor was silent). final: nothing may wait
 * (the daemon stops). Lines of one source in order; a stop that began after a line's
 * reads waits for the next line.
 */
enum clock_verdict clock_judge(struct clock_view *v, struct clock_doubt *d,
			       const struct clock_line *l, int64_t now, bool final, int64_t *wait_ns);

#endif
