/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source.h - a producer of records: its name in the log, its ring, its counters.
 *
 * Every producer thread owns one source and is the only one to push into it
 * (main owns "portlogd"); the flusher is the only consumer. A push never blocks,
 * allocates or makes a system call. A record that does not fit is dropped whole
 * and counted; the next record that fits is preceded by a DROP record carrying
 * the cumulative counts, so the loss shows in the log at its place in time.
 */
#ifndef PORTLOGD_SOURCE_H
#define PORTLOGD_SOURCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "clockwatch.h"
#include "conf.h"
#include "log.h"
#include "rec.h"
#include "ring.h"

#define SOURCE_EV_MAX 512    /* longest event text */
#define SOURCE_LEN_MAX 65535 /* struct rec.len is 16 bits; max_packet is capped to it */

struct source {
	char name[CONF_NAME_MAX];
	struct ring ring;
	unsigned value_bits;        /* width of IN values (4, 8, 16); set before any thread runs */
	/* set before any thread runs: which ring of its port this is (its EV and
	 * DROP records carry it), and the port's other ring whose lines must merge
	 * with these in time order (tx_device, pass), or NULL */
	enum rec_dir dir;
	struct source *pair;
	/* set before any thread runs: the port's RX ring, of its modem lines' ring (the
	 * lines wait behind a line of it the clock sensor holds: flush.c); or NULL */
	struct source *follows;

	/*
	 * Of a ring with a pair: no record pushed from now on has an earlier
	 * t_mono. Published by the producer (source_set_horizon, release), read by
	 * the flusher (acquire) before it looks whether the ring is empty: a record
	 * of the pair that is younger waits while this ring may still get an older
	 * one (flush.c). INT64_MIN until the producer first says.
	 */
	_Atomic int64_t horizon;

	/* producer-private */
	uint32_t seq;
	bool drop_pending;
	int64_t drop_t_real, drop_t_mono;       /* first record dropped since the last DROP */

	/* written by the producer only, read by anyone (stats, final accounting) */
	_Atomic uint64_t records, bytes;        /* pushed */
	_Atomic uint64_t dropped, dropped_bytes; /* cumulative */

	/* flusher-private */
	uint64_t drop_reported, drop_bytes_reported;
	uint32_t next_seq;
	/* records accounted for in the log: lines written plus the counts of DROP
	 * lines; at every moment records + dropped - (what the ring still holds) */
	uint64_t accounted;
	struct log_limit journal;   /* the journal's share of its info events (log.h) */
	struct clock_doubt clock;   /* its lines and the clock sensor's stops (clockwatch.h) */
	uint64_t marks;             /* EV late-delivery lines written: their mark=, in the
				     * log's order (a serial port's: flush.c renumbers) */
	/* set before any thread runs: a serial port's EV late-delivery count (mark=, STAT
	 * late=), which the flusher's case=clock marks add to; NULL: not a serial port */
	_Atomic uint64_t *late;
};

int source_init(struct source *s, const char *name, uint32_t ring_records);
void source_fini(struct source *s);

/*
 * Pushes one record: the fields of `head` (kind, times, a, b, c) and len payload
 * bytes, at most SOURCE_LEN_MAX (RX: up to max_packet; EV: up to SOURCE_EV_MAX),
 * continued in raw slots beyond REC_HEAD_DATA. Returns false when the record was
 * dropped (counted).
 */
bool source_push(struct source *s, const struct rec *head, const void *data, uint32_t len);

/* Convenience for events: code, errno-or-argument, and a short text. */
bool source_event(struct source *s, enum ev_code code, int64_t err, const char *text);

/* Producer: no record it pushes from now on is dated before t_mono (see horizon).
 * A drop not yet reported holds it back at the lost record's time: its DROP
 * record, pushed later, is dated there. */
void source_set_horizon(struct source *s, int64_t t_mono);

/* Producer: pushes the DROP record of drops not yet reported, if any, without
 * waiting for the next record (an idle producer's horizon can then move on).
 * False when there was nothing to report or still no room. */
bool source_push_drops(struct source *s);

#endif
