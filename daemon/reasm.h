/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reasm.h - reassembly of serial byte fragments into packets (pure, no I/O).
 *
 * A packet ends after a silence of gap_ns or more, when the delimiter byte is seen
 * (it stays in the packet), or when it reaches max_len. Its timestamp is the
 * estimated start of its first byte on the wire: bytes that were already waiting
 * when the reader woke are assumed to have arrived back to back, one character
 * time (char_ns) each, ending at the wake-up. For a pseudo-terminal there is no
 * wire and char_ns is 0.
 */
#ifndef PORTLOGD_REASM_H
#define PORTLOGD_REASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum reasm_end {
	REASM_GAP = 1,   /* silence of gap_ns after the last byte */
	REASM_DELIM,     /* the delimiter byte */
	REASM_MAX,       /* max_len bytes */
	REASM_FLUSH,     /* reasm_flush(): port closed or daemon stopping */
};

struct reasm_packet {
	const uint8_t *data;
	size_t len;
	int64_t t_mono;          /* first byte, CLOCK_MONOTONIC ns */
	int64_t t_real;          /* first byte, CLOCK_REALTIME ns */
	enum reasm_end end;
};

typedef void reasm_emit_fn(void *ctx, const struct reasm_packet *pkt);

struct reasm {
	uint8_t *buf;            /* max_len bytes, owned by the caller */
	size_t max_len;
	size_t len;              /* bytes of the packet in progress */
	int64_t gap_ns;
	int64_t char_ns;
	int delim;               /* -1: none */
	int64_t first_mono, first_real;
	int64_t last_mono;       /* arrival of the latest byte */
	bool have_last;          /* a byte has been seen since reasm_init */
	reasm_emit_fn *emit;
	void *ctx;
};

void reasm_init(struct reasm *r, uint8_t *buf, size_t max_len, int64_t gap_ns,
		int64_t char_ns, int delim, reasm_emit_fn *emit, void *ctx);

/* n bytes read at a wake-up at (now_mono, now_real). n == 0 is allowed. */
void reasm_feed(struct reasm *r, const uint8_t *data, size_t n,
		int64_t now_mono, int64_t now_real);

/*
 * Before feeding n bytes read at a wake-up at (now_mono, now_real): ends the
 * packet in progress now if a gap precedes the first byte (reasm_feed would end
 * it too), and returns the time of the packet these bytes will belong to: the
 * one in progress, or the one they begin. A record the caller pushes for that
 * packet then follows every packet before it, so the source stays in time order.
 */
void reasm_begin(struct reasm *r, size_t n, int64_t now_mono, int64_t now_real,
		 int64_t *t_mono, int64_t *t_real);

/* No packet in progress: no byte fed from now on is dated before t_mono (a record
 * the caller has just pushed, such as EV open, stays before the bytes). */
void reasm_floor(struct reasm *r, int64_t t_mono);

/* CLOCK_MONOTONIC time at which the packet in progress ends by gap; INT64_MAX if none. */
int64_t reasm_deadline(const struct reasm *r);

/* Ends the packet in progress if its gap has passed by now_mono. */
void reasm_expire(struct reasm *r, int64_t now_mono);

/* Ends the packet in progress unconditionally. */
void reasm_flush(struct reasm *r);

/* Character time in ns for a baud rate and frame size (start + data + parity + stop bits). */
int64_t reasm_char_ns(unsigned baud, unsigned frame_bits);

/* 3.5 character times, the Modbus RTU inter-frame gap, rounded up to whole microseconds. */
int64_t reasm_auto_gap_ns(unsigned baud, unsigned frame_bits);

#endif
