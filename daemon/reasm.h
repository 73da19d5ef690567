/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reasm.h - reassembly of serial byte fragments into packets (pure, no I/O).
 *
 * A packet ends after a silence of gap_ns or more, when the delimiter byte is seen
 * (it stays in the packet), or when it reaches max_len. Its timestamp is the
 * estimated start of its first byte on the wire: bytes that were already waiting
 * when the reader woke are assumed to have arrived back to back, one character
 * time (char_ns) each, ending at the wake-up. For a pseudo-terminal there is no
 * wire and char_ns is 0.
 *
 * The boundary rule (daemon/README.md, "Packet boundaries"). The reader sees the kernel
 * only when it looks, so a silence is known only from what it saw:
 *  - A packet ends by gap only when the caller found the kernel empty at or
 *    after its deadline (reasm_deadline: gap_ns after the end of the read that
 *    brought its last byte) and calls reasm_expire: every byte then had gap_ns
 *    of silence after it.
 *  - Bytes whose read ended before gap_ns after the wake-up that found the
 *    packet's last byte continue the packet: the silence before them and among
 *    them was shorter than the gap.
 *  - Bytes with no packet in progress begin one; if their read ended less than
 *    gap_ns after the wake-up that found them, no gap can hide among them.
 *  - Anything else cannot be judged: the bytes were found at or after the
 *    deadline (the reader woke late, or the read at the deadline returned them),
 *    or the read took so long that a gap may hide among them. They are placed
 *    where they more likely belong, and the doubt callback says so (the reader
 *    writes EV late-delivery). The only lateness the reader cannot see is that
 *    of a wake-up that still came before the deadline, or of one with no packet
 *    in progress.
 *
 * Between the wire and read() (reasm_set_dev). A pty hands bytes over as they are
 * written, and so does a UART at receive trigger 1. A device that holds bytes does
 * not: a 16550-type FIFO hands over `trigger` bytes at once, fewer only after its
 * RX timeout (4 character times after the last byte); a USB adapter hands over what
 * it holds on its own timer. For such a device the rule is judged in wire time:
 * each read's last byte is dated back by what the device is known to add (a FIFO:
 * its timeout when the read is shorter than the trigger; an adapter: half its
 * hold, give or take the other half: blur_ns), its bytes back to back before it, and
 *  - a read shorter than a FIFO's trigger came by its timeout, which fires only
 *    after a silence of more than the timeout less a character: when the gap is no
 *    longer than that, the read ends its packet at once (proven, no doubt); but
 *    when the next read's bytes are then dated less than the gap after it, the
 *    dates contradict the silence the timeout stood for (a trigger's worth handed
 *    over in two parts, as a guest's emulated UART can): that boundary is doubted
 *    after the fact (REASM_HELD);
 *  - bytes continue the packet only when the silence before them, as estimated (the
 *    most it can have been: bytes held together came no later than back to back),
 *    is shorter than the gap by more than blur_ns;
 *  - the deadline moves on by the device's hold: a byte that arrived within the gap
 *    after the packet's last byte has reached the kernel by then, so an empty read
 *    there still proves the gap;
 *  - bytes found before that deadline after a silence that may be a gap cannot be
 *    judged: they are placed by the estimate and the doubt says so (REASM_HELD);
 *  - an adapter's packet that goes on in its next transfer, with no silence between,
 *    was still arriving when the first was sent: its first byte is dated again, back
 *    from that transfer by its bytes alone.
 * The caller keeps the gap above what one delivery can hide (delivery.h): a FIFO
 * hands over before a silence of more than its timeout less a character, an
 * adapter within its hold.
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
	REASM_DEADLINE_READ,     /* a read at or after the deadline that no wake-up announced
				  * returned them: the kernel held them (its tty worker), or
				  * they came while the reader read */
	REASM_SLOW_READ,         /* the read ended gap_ns or more after the packet's last byte
				  * (or, with no packet in progress, after the wake-up) */
	REASM_HELD,              /* a device that holds bytes handed them over before the
				  * deadline, after a silence that may be a gap: it is
				  * inferred from the device's delivery, not seen */
	REASM_RESTART,           /* they came while no reader ran (the port stayed open
				  * across a restart, fdstore.h): reasm_held */
};
#define REASM_DOUBT_CASES (REASM_RESTART + 1)   /* for tables indexed by the case */

struct reasm_doubt {
	enum reasm_doubt_case why;
	bool joined;             /* added to the packet in progress; false: they begin one */
	size_t bytes;            /* of the read */
	int64_t wait_ns;         /* end of the read minus the deadline, or minus the
				  * wake-up when that came first; REASM_HELD: the silence
				  * before the bytes on the wire, as estimated;
				  * REASM_RESTART: how long the port was unread */
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
};

/* What stands between the wire and read(): all zero for a pty or a UART at trigger 1. */
struct reasm_dev {
	unsigned trigger;        /* > 1: a FIFO that hands over this many bytes at once, and
				  * fewer only after timeout_ns of silence; 0: not known */
	int64_t timeout_ns;      /* the FIFO's RX timeout (with trigger) */
	int64_t hold_ns;         /* the longest a byte can stay in the device unseen; 0: none */
	int64_t blur_ns;         /* how far a read's last byte is from where it is dated, either
				  * way: an adapter on its own timer, half its hold each way; a
				  * FIFO of unknown trigger, half its timeout; a known one, the
				  * margin of a character for its interrupt and part */
};

struct reasm {
	uint8_t *buf;            /* max_len bytes, owned by the caller */
	size_t max_len;
	size_t len;              /* bytes of the packet in progress */
	int64_t gap_ns;
	int64_t char_ns;
	int delim;               /* -1: none */
	int64_t first_mono, first_real;
	int64_t last_mono;       /* the latest byte's date: the wake-up that found it */
	int64_t last_end;        /* the end of the read that returned it */
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

/* reasm_read of bytes that woke the reader at (now_mono, now_real) and were read at once. */
void reasm_feed(struct reasm *r, const uint8_t *data, size_t n,
		int64_t now_mono, int64_t now_real);

/* No packet in progress: no byte fed from now on is dated before t_mono (a record
 * the caller has just pushed, such as EV open, stays before the bytes). */
void reasm_floor(struct reasm *r, int64_t t_mono);

/* CLOCK_MONOTONIC time from which an empty read ends the packet in progress:
 * gap_ns after the end of the read that brought its last byte (a device that holds
 * bytes: after the latest its last byte can have arrived, and its hold_ns later);
 * INT64_MAX if none. */
int64_t reasm_deadline(const struct reasm *r);

/* The caller found the kernel empty at now_mono: ends the packet in progress if
 * its deadline has passed. */
void reasm_expire(struct reasm *r, int64_t now_mono);

/* Ends the packet in progress unconditionally. */
void reasm_flush(struct reasm *r);

/* Character time in ns for a baud rate and frame size (start + data + parity + stop bits). */
int64_t reasm_char_ns(unsigned baud, unsigned frame_bits);

/* 3.5 character times, the Modbus RTU inter-frame gap, rounded up to whole microseconds. */
int64_t reasm_auto_gap_ns(unsigned baud, unsigned frame_bits);

#endif
