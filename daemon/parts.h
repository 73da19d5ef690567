/* SPDX-License-Identifier: GPL-2.0-or-later */
/* parts.h - the daemon's parts: every thread the config asks for, and one registry of them at run time.
 *
 * Config level (pure): parts_plan() walks a config once and lists each thread
 * it asks for, with its kind, port, priority and CPU and whether it owns a
 * ring. rt.c (the SCHED_FIFO probe's priority, the CPU checks), checksys_sys.c
 * (priorities, pinning, ring memory) and main.c read that list; nothing else
 * walks the config's threads. The one rule for the timer: it runs exactly when
 * there is a [parallel] port (it only wakes samplers); without one, [timer]
 * priority and cpu are unused and unchecked.
 *
 * Run time: main registers every part once, before any thread starts: its
 * ring (a source), its thread's health beat, and two functions that read its
 * counters, one for STATUS= and one for its STAT line. The flusher's list of
 * rings, the watchdog's probes, STATUS= (notify.c), the STAT lines (stat.c) and
 * the metrics file (metrics.c) all come from the registry; none of them reads
 * another module's struct. A new kind of part is one parts_add() call in its
 * module's X_parts().
 */
#ifndef PORTLOGD_PARTS_H
#define PORTLOGD_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "fmt.h"
#include "health.h"
#include "source.h"
#include "thread.h"

enum part_kind {
	PART_MAIN,      /* main's own ring, "portlogd" (start, stop, rt-missing); no thread */
	PART_TIMER,
	PART_PARALLEL,  /* a [parallel] port's sampler */
	PART_SERIAL,    /* a [serial] port's reader */
	PART_LINES,     /* a [serial] port's lines thread (lines = on) */
	PART_TX,        /* a [serial] port's TX reader (tx_device, pass) */
	PART_FLUSHER,
	PART_SENSOR,    /* a CPU's stall sensor, which probes the tty path too (sensor.h) */
	PART_CLOCK,     /* the clock sensor: the RTC's seconds (clocksensor.h) */
	PART_NKINDS,
};

/* "main", "timer", "parallel", "serial", "lines", "tx", "flusher", "sensor", "clock": the
 * watchdog's names. */
extern const char *const part_kind_name[PART_NKINDS];

/* The timer runs exactly when there is a [parallel] port. */
static inline bool parts_timer_runs(const struct conf *c)
{
	return c->nparallel > 0;
}

/* The stall sensors' priority: the serial readers' lowest (sensor.h), or
 * CONF_PRIO_OTHER when one runs SCHED_OTHER or there is none. */
int parts_sensor_priority(const struct conf *c);

/* One thread the config asks for. */
struct part_plan {
	enum part_kind kind;
	const char *port;       /* its section's name, or NULL (timer, flusher) */
	int priority;           /* CONF_PRIO_OTHER (SCHED_OTHER) or 1..99 (SCHED_FIFO) */
	int cpu;                /* CONF_CPU_ANY or the CPU it is pinned to */
	int line;               /* its section's line in the config (0: absent) */
	uint32_t ring;          /* the records of its own ring (the port's ring_records); 0: none */
};

/* Every thread: the flusher, the timer, per [serial] port a reader and maybe a
 * lines thread and a TX reader, per [parallel] port a sampler, and the stall
 * sensors: one on each CPU the readers are pinned to, or one for all when a reader
 * is not. At run time the registry holds those, main's own ring, and a sensor per
 * CPU the readers may use. */
#define PARTS_MAIN_RING 256     /* records in main's own ring */

/* Lists the threads c asks for (flusher, timer, serial readers with their lines
 * threads and TX readers, samplers: the order of the config's keys, then the
 * sensors) in a new array (the caller frees it), their count in *n. NULL only when
 * out of memory. */
struct part_plan *parts_plan(const struct conf *c, unsigned *n);

/* Where a thread's CPU is set: "[serial gps] cpu", "[logger] flusher_cpu". */
void parts_cpu_key(const struct part_plan *t, char *buf, size_t len);

/* A part's figures for STATUS=, summed over the parts. */
struct part_counts {
	bool port;              /* the part is its port's own (reader, sampler): one of N/M ports */
	bool up;                /* ... and that port is open */
	uint64_t overruns;      /* missed timer periods, sampler overruns */
	int64_t latency_max_us; /* the largest wake-up latency it measured; -1: it measures none */
	uint64_t lines;         /* lines written (the flusher) */
	int clock;              /* enum clockq_sync (the flusher); 0, CLOCKQ_NOT_READ: none */
	int64_t clock_maxerror_us;
	bool withheld;          /* main: WATCHDOG=1 is withheld, a thread stalled (notify.h) */
};

struct part {
	enum part_kind kind;
	const char *port;       /* its port's name, or NULL */
	struct source *src;     /* its ring, or NULL (timer, flusher) */
	const void *obj;        /* what count and stat read */
	/* its figures (NULL: none); called from main and from the flusher */
	void (*count)(const void *obj, struct part_counts *c);
	/* the fields of its STAT line, after its name (NULL: no STAT line); in the flusher */
	void (*stat)(const void *obj, struct fmt_kv *kv);
	/* its histogram (NULL: none), for the metrics file: the timer's wake-up latency,
	 * a sensor's tty-path delivery. For each of the n bounds le_us (ascending, at
	 * most its histogram's range) the samples below it, and all samples and their
	 * sum; in the flusher */
	void (*latency)(const void *obj, const uint32_t *le_us, unsigned n, uint64_t *below,
			uint64_t *count, int64_t *sum_ns);

	uint64_t overruns_said; /* flusher-private: a ringless part's overruns in OVERRUN lines */
};

/* As many parts as were registered: the arrays grow while main registers them,
 * before any thread starts, and stay as they are from then on. */
struct parts {
	struct part *part;      /* n of them */
	unsigned n;
	/* the parts that have a thread, for the watchdog (notify.c) */
	struct health_probe *probe;     /* nprobe of them */
	unsigned nprobe;
};

/* An empty registry. */
void parts_init(struct parts *ps);
/* Frees it; empty after. */
void parts_fini(struct parts *ps);

/*
 * Registers a part, and beat as its thread's progress (NULL: no thread of its
 * own). In main, before any thread starts. False when out of memory.
 */
bool parts_add(struct parts *ps, const struct part *p, struct health_beat *beat);

/* The name a part's STAT line starts with: its port, or its kind ("timer"). */
const char *parts_stat_name(const struct part *p);
/* The text of its STAT line, "NAME key=value...", in text (FMT_FIELDS_MAX bytes;
 * fmt_kv keeps every field whole); a part with a stat function. In the flusher. */
void parts_stat_text(const struct part *p, char *text);

/* Appends "PREFIXminflt=N PREFIXmajflt=N": the thread's page faults since it
 * started its work ("-" when unknown). For the STAT functions. */
void parts_put_faults(struct fmt_kv *kv, const char *prefix, const struct thread *t);

#endif
