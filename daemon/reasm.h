/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reasm.h - reassembly of serial byte fragments into packets (pure, no I/O).
 *
 * A packet ends after a silence of gap_ns or more on the wire, when the delimiter
 * byte is seen (it stays in the packet), or when it reaches max_len. Its timestamp
 * is the estimated start of its first byte on the wire: bytes that were waiting
 * when the reader woke are taken to have arrived back to back, one character time
 * (char_ns) each, ending at the wake-up (less what the device adds). For a
 * pseudo-terminal there is no wire and char_ns is 0.
 *
 * The boundary rule is one error model (daemon/README.md, "Packet boundaries"):
 * every read gives an interval in which its bytes can have reached the wire, from
 * what is known of each stage between the wire and read():
 *  - the device (reasm_set_dev): when its last byte ended before its hand-over
 *    to the kernel, how long a byte can wait in it, how many one hand-over holds;
 *  - the path from the kernel to the reader (the tty worker, the reader's wake-up,
 *    a stopped CPU): the caller's sensors bound it (reasm_read.from_mono); with
 *    none, the reader takes itself to be on time, unless it woke after the
 *    packet's deadline, or no wake-up announced the read;
 *  - the reader's own looks: an empty read (reasm_expire) proves that nothing
 *    reached the kernel before it began.
 * A boundary is written without a doubt only when the intervals prove a silence
 * of at least the gap, and bytes join a packet without one only when they prove
 * there was none; everything else is a doubt: placed where the intervals make it
 * likelier (joined or not), and reported with the case and the stage whose bound
 * made it. Reads of a FIFO shorter than its trigger came by its RX timeout, which
 * proves a silence after them, unless the next read's dates contradict it. That
 * proof assumes the interrupt handler empties the FIFO before another character
 * ends after the timeout fired: a byte that ends within the handler's latency joins
 * the timeout's hand-over (serial8250_rx_chars reads until the FIFO is empty) and
 * is taken to have ended a timeout earlier. Only a sender that resumes within that
 * latency after a silence of just over three characters is met; saying it would
 * mark every timeout's read of two bytes or more (portlogd-log(5), "What is still
 * unseen"; tests/fuzz/fuzz_reasm.c, FUZZ_REASM_KNOWN).
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

/* Why the bytes of one read could not be placed for sure. */
enum reasm_doubt_case {
	REASM_LATE_WAKE = 1,     /* they woke the reader at or after the packet's deadline */
	REASM_DEADLINE_READ,     /* a read no wake-up announced (at the deadline, at stop)
				  * returned them: the kernel held them (its tty worker), or
				  * they came while the reader read */
	REASM_SLOW_READ,         /* the read ended a gap or more after the packet's last byte
				  * (or, with no packet in progress, after the wake-up) */
	REASM_HELD,              /* the device's hand-over hides whether a gap was there: it
				  * is inferred from the device's delivery, not seen */
	REASM_RESTART,           /* they came while no reader ran (the port stayed open
				  * across a restart, fdstore.h): reasm_held */
	REASM_STALL,             /* the path to the reader may have held them back (a sensor
				  * saw it stall, or cannot rule out what it cannot see, or
				  * the wire proved it): they may have come earlier */
	REASM_HIDDEN,            /* the device resolves no silence as short as the gap asked
				  * for (reasm_set_gap): one may hide among the bytes of this
				  * line from here on, or just before them (once a line) */
	REASM_CLOCK,             /* the machine's clock stood still meanwhile (a paused VM),
				  * seen after the fact: not reasm's, the flusher's (clocksensor.h) */
};
#define REASM_DOUBT_CASES (REASM_CLOCK + 1)   /* for tables indexed by the case */

/* The stage between the wire and read() whose bound made a doubt. */
enum reasm_stage {
	REASM_STAGE_READER,      /* the reader's own looks: when it woke and read */
	REASM_STAGE_DEVICE,      /* the device's hand-over (reasm_dev) */
	REASM_STAGE_CPU,         /* the reader's CPU did not run it (a sensor's bound) */
	REASM_STAGE_TTY,         /* the kernel's tty worker was late (a sensor's bound) */
	REASM_STAGE_WIRE,        /* more bytes than the baud allows since the sensors' bound */
	REASM_STAGE_MACHINE,     /* the whole machine (its clock) stopped: REASM_CLOCK */
};
#define REASM_STAGES (REASM_STAGE_MACHINE + 1)

struct reasm_doubt {
	enum reasm_doubt_case why;
	enum reasm_stage stage;
	bool joined;             /* added to the packet in progress; false: they begin one */
	size_t bytes;            /* of the read */
	int64_t wait_ns;         /* the reader's cases: end of the read minus the packet's
				  * judged deadline, or minus the wake-up when that came
				  * first; REASM_HELD: the silence before the bytes on the
				  * wire, as estimated; REASM_STALL: how long before the
				  * wake-up the bytes may have come; REASM_RESTART: how long
				  * the port was unread */
	int64_t t_mono, t_real;  /* start of the packet the read's first byte is in */
};

typedef void reasm_doubt_fn(void *ctx, const struct reasm_doubt *d);

/* One read, as the reader saw it. */
struct reasm_read {
	bool woken;              /* its bytes woke the reader (poll said so) */
	int64_t seen_mono;       /* the first byte had arrived by then: the wake-up when
				  * woken, else the end of the read */
	int64_t seen_real;       /* CLOCK_REALTIME at seen_mono */
	int64_t end_mono;        /* the read returned: every byte had arrived by then */
	/* the earliest its first byte can have been handed to the kernel, as the
	 * caller's sensors bound the path from the kernel to the reader (0: no
	 * sensor: the reader on time), and which stage set that bound */
	int64_t from_mono;
	enum reasm_stage from_stage;
};

/* What stands between the wire and read(): all zero for a pty or a UART at trigger 1. */
struct reasm_dev {
	unsigned trigger;        /* > 1: a FIFO that hands over this many bytes at once, and
				  * fewer only after timeout_ns of silence; 0: not known */
	int64_t timeout_ns;      /* the FIFO's RX timeout (with trigger) */
	int64_t hold_ns;         /* the longest a byte can stay in the device unseen; 0: none */
	int64_t blur_ns;         /* how far a read's last byte can be from its dated end (one
				  * way, never after the hand-over): an adapter on its own
				  * timer, half its hold; a FIFO of unknown trigger, half its
				  * timeout; a known one, half a character for its interrupt */
	bool whole;              /* with trigger: an adapter's transfers, never more than
				  * trigger bytes at once (a FIFO's handler may take one more
				  * that came meanwhile); timeout_ns is then the likeliest
				  * delay of a short transfer's hand-over after its last byte,
				  * blur_ns how far it may be either way (and a full one's
				  * after its last byte): a quiet line of timeout_ns less
				  * blur_ns is what a short read proves */
};

struct reasm {
	uint8_t *buf;            /* max_len bytes, owned by the caller */
	size_t max_len;
	size_t len;              /* bytes of the packet in progress */
	int64_t gap_ns;
	int64_t want_ns;         /* the gap asked for, when the device resolves only gap_ns
				  * (reasm_set_gap); 0: gap_ns */
	bool hidden;             /* the packet in progress was marked REASM_HIDDEN */
	int64_t char_ns;
	int delim;               /* -1: none */
	int64_t first_mono, first_real;
	int64_t last_mono;       /* the latest byte's date (as estimated) */
	/* the read that brought the packet's last byte, for the error model (reasm.c):
	 * the earliest its first hand-over reached the kernel [by the sensors' bound,
	 * by the reader's own evidence], its end, its size, the stage that bounded it */
	int64_t last_from[2], last_end;
	size_t last_n;
	enum reasm_stage last_stage;
	/* the pace: over the packet's reads so far, the greatest earliest end of a read's
	 * last byte less a character (1/16 short) for each byte read after the packet's
	 * first read up to it; and those bytes (to the last read) */
	int64_t anchor_lo;
	size_t anchor_n;
	int64_t floor;           /* the start of the last read that found the kernel empty */
	int64_t sure;            /* ... or earlier, what the empty reads prove with the sensors'
				  * word on a stall that may hold bytes back (reasm_expire) */
	bool proven;             /* the last packet ended at an empty read after its deadline */
	int64_t look;            /* the end of the reader's last look (a read, reasm_floor) */
	bool have_last;          /* a byte has been seen since reasm_init */
	struct reasm_dev dev;
	/* an adapter's packet whose first read may be dated again (reasm.c, redate) */
	size_t first_read_n;     /* bytes of that read, 0: no such packet in progress */
	int64_t first_read_seen; /* its wake-up */
	bool timeout_end;        /* the last packet was ended by a FIFO timeout's read */
	reasm_emit_fn *emit;
	reasm_doubt_fn *doubt;   /* NULL: doubts are not reported */
	void *ctx;
};

void reasm_init(struct reasm *r, uint8_t *buf, size_t max_len, int64_t gap_ns,
		int64_t char_ns, int delim, reasm_emit_fn *emit, void *ctx);

/* The device between the wire and read(); reasm_init leaves none. */
void reasm_set_dev(struct reasm *r, const struct reasm_dev *dev);

/*
 * The gap the port resolves (gap_ns; reasm_init's until then) and the gap the user
 * asked for (want_ns), when the device hides silences that short (delivery.h).
 * Packets are cut at gap_ns; a packet whose bytes may hold a silence of want_ns (one
 * of its reads has more than one byte, or joined it without a proof of less) gets one
 * doubt, REASM_HIDDEN, at the first such read. want_ns 0 (or gap_ns or more): none.
 * With the device (reasm_set_dev), changed between packets when the port's model
 * changes (learn.h).
 */
void reasm_set_gap(struct reasm *r, int64_t gap_ns, int64_t want_ns);

/* Reports the reads that cannot be judged to fn(ctx) (the ctx of reasm_init):
 * after the packet in progress was ended by them, if it was, and before their
 * bytes are added, so that a record the caller pushes is in time order. */
void reasm_on_doubt(struct reasm *r, reasm_doubt_fn *fn);

/* The n bytes of one read (n == 0 is allowed and changes nothing). */
void reasm_read(struct reasm *r, const uint8_t *data, size_t n, const struct reasm_read *rd);

/*
 * The n bytes of one read of what came while no reader ran: the port stayed open
 * across a restart, unread for unread_ns before the end of this read. When each
 * byte came, and so where a gap was, no one saw: they continue the packet in
 * progress (an earlier read of such bytes) or begin one, are dated as bytes
 * waiting at a wake-up (back to back before the read, never before the floor),
 * and the doubt says REASM_RESTART with wait_ns = unread_ns. A delimiter and
 * max_len still end packets among them.
 */
void reasm_held(struct reasm *r, const uint8_t *data, size_t n, const struct reasm_read *rd,
		int64_t unread_ns);

/* No packet in progress: no byte fed from now on is dated before t_mono (a record
 * the caller has just pushed, such as EV open, stays before the bytes), and the
 * reader saw no byte waiting then (a look, not a proof: the tty worker may hold
 * some, so reads that follow are still judged by their wake-up and the sensors). */
void reasm_floor(struct reasm *r, int64_t t_mono);

/* CLOCK_MONOTONIC time from which an empty read ends the packet in progress: the
 * latest its last byte can have ended on the wire, plus the gap and a character
 * (the next byte is seen at its end) and the device's hold_ns (a byte that came
 * within the gap has reached the kernel by then); INT64_MAX if none. */
int64_t reasm_deadline(const struct reasm *r);

/*
 * A read that began at now_mono found the kernel empty (nothing had reached it
 * before then: n_tty's read waits for the tty worker first): ends the packet in
 * progress if its deadline has passed. held_mono: the sensors' word (sensors_held)
 * that a byte may have reached the device from then on and still wait for its
 * interrupt (a CPU stopped, that takes it); INT64_MAX: none. Then the silence the
 * boundary claims is not proven after all unless the next bytes are dated past it
 * by their own bound: if not, the read that brings them is a doubt (joined=no).
 */
void reasm_expire(struct reasm *r, int64_t now_mono, int64_t held_mono);

/* Ends the packet in progress unconditionally. */
void reasm_flush(struct reasm *r);

/*
 * Character time in ns for a baud rate and frame size (start + data + parity + stop
 * bits; drv_frame_bits), 0 without a baud. The one computation of it: the reader's
 * (conf's char_ns), --check-system's, --replay's pacing, lateness and splits.
 * Rounded up: never shorter than the wire's own character, so that a deadline built
 * on it (a packet's end, a gap of n characters) is never early and a replay never
 * sends faster than the baud; dating back n bytes by it errs by at most n ns.
 */
int64_t reasm_char_ns(unsigned baud, unsigned frame_bits);

/* 3.5 character times, the Modbus RTU inter-frame gap, rounded up to whole microseconds. */
int64_t reasm_auto_gap_ns(unsigned baud, unsigned frame_bits);

#endif
