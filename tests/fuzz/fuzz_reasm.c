/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_reasm.c - libFuzzer target: the boundary rule on traffic and a machine the input chooses.
 *
 * The input drives the bench of tests/lib/reasm_model.h (a wire, a device, a reader
 * with sound sensor bounds). Numbers are little-endian; past the input's end every
 * byte is 0. A span is a duration on a log scale: 8 bits v: (8 + v % 8) << (v / 8) ns
 * (v = 0: none; up to 32 s); 16 bits v: ((2048 + v % 2048) << (v / 2048)) / 256 ns.
 *   header, 10 bytes:
 *     max_packet - 1 (2); the gap in us (2; 0: automatic, 3.5 characters); the
 *     character time in 100 ns (2; 0: none, a pty's); the device (1, modulo 32: 0-1
 *     none, 2-14 a FIFO at that trigger (not without a character time), 15-31 an
 *     adapter whose latency timer is N - 14 ms); flags (1; bit 0: a delimiter; bits
 *     1-7, f: a FIFO's interrupt latency, f / 127 of its blur) and the delimiter (1);
 *     the number of packets - 1 (1). The gap is then raised as
 *     delivery_gap raises it for the device (a FIFO: 3 characters, automatic or not;
 *     an adapter: 4 blurs), and is 1 us at least.
 *   a packet, 5 bytes each: its length - 1; the silence before it, s: < 64: the gap
 *     and s / 16 characters, < 128: the gap less (s - 63) / 16 characters, < 192:
 *     (s - 128) / 64 of the gap, else (s - 190) / 2 gaps; a pause before every byte
 *     whose index is a multiple of p (1; 0: none) of q (1): < 128: q / 128 of the gap,
 *     else the gap less (q - 127) / 16 characters; its first byte (1; then + 1 each).
 *   then a read, 9 bytes each, until the wire is read: the wake-up's latency (span
 *     16); a stall (span 16): the reader runs no earlier than that after the hand-over;
 *     its looks' latency (span 8); the sensors' slack (span 8: their bound that long
 *     before the read's first hand-over); the read's length (span 8); the delay of the
 *     empty read after it (span 8); flags: bit 0: it also returns what came while it
 *     ran, bit 1: the bound given is unsound, after what the baud allows (more bytes
 *     than one hand-over holds), bit 2: the tty stage set it, else the CPU's.
 * Invariants (abort() on violation), on each packet: 1..max_packet bytes; the packets
 * concatenated are the wire's bytes; a delimiter only ends a packet and a packet ends
 * with it exactly when the delimiter ended it; REASM_MAX packets have max_packet bytes;
 * t_real - t_mono is the offset fed; dates never go back nor past the latest read's
 * seen_mono. On each doubt: one at most a read, of a read; its case and stage agree;
 * wait_ns >= 0; t_real - t_mono the offset; it is dated at the packet the read's first
 * byte is in. On each read: it ends the packet before it (a GAP) only with a doubt
 * that says joined=no, or with none when it ended at least a gap and a character
 * after the read before it (a proven boundary: reasm.c judge()); a doubt that says
 * joined=no ends it, one that says joined=yes does not; it ends its own packet after
 * its bytes only as a FIFO's RX timeout (fewer than the trigger, the gap within the
 * timeout less a character); never between its bytes but by delimiter or max_packet.
 * An empty read at or after the deadline ends the packet. And the guarantee: every
 * wrong boundary (reasm_model.h; delimiter and max_packet cuts are not wrong) is at a
 * read that raised a doubt, the unsound bounds of bit 1 included (the wire check).
 * FUZZ_REASM_TRACE=1 prints the wire, the reads and what the rule made of them (us).
 * A FIFO's interrupt latency (flags bits 1-7) is fuzzed only with FUZZ_REASM_KNOWN=1:
 * a byte that ends in it after an RX timeout joins the timeout's hand-over, against
 * the FIFO model's stated assumption (reasm.h; portlogd-log(5), "What is still
 * unseen"); the seed known2-fifo-irq shows it. known1-fifo-floor, a silence of exactly
 * a FIFO's timeout less a character, was a miss until the FIFO's gap became a
 * nanosecond more (drivers/delivery.c); it stays as a seed.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reasm.h"
#include "reasm_model.h"
#include "fuzz.h"

#define T0 ((int64_t)1000000000)   /* the wire's first silence starts here */

struct fz {
	struct rm_run *m;
	const uint8_t *p, *end;    /* the reads' records */
	bool trace;
	/* the current record */
	int64_t look, slack, dur, drain;
	unsigned flags;
	bool fresh;                /* read by wake, for plan */
	int64_t stall_end;
	/* the checks' state */
	size_t emitted;
	int64_t last_t, latest;    /* the last packet's date; the latest read's seen_mono */
	int64_t last_end;          /* the end of the last read */
	bool in_read;
	size_t read_off, read_n;
	unsigned read_doubts, gap_start, gap_after;
	unsigned cut_hidden;        /* lines begun inside the read marked case=hidden */
	struct reasm_doubt d;
	size_t doubt_off;          /* a doubted read's first byte whose packet is not out */
	int64_t doubt_mono, doubt_real;
};

static unsigned next(const uint8_t **p, const uint8_t *end)
{
	return *p < end ? *(*p)++ : 0;
}

static unsigned next16(const uint8_t **p, const uint8_t *end)
{
	unsigned lo = next(p, end);

	return lo | next(p, end) << 8;
}

static int64_t span8(unsigned v)
{
	return v == 0 ? 0 : (int64_t)(8 + (v & 7)) << (v >> 3);
}

static int64_t span16(unsigned v)
{
	return v == 0 ? 0 : ((int64_t)(0x800 | (v & 0x7ff)) << (v >> 11)) >> 8;
}

static double us(int64_t t)
{
	return (double)(t - T0) / 1000.0;
}

/* ---- the reader, from the records ---- */

static void record(struct fz *f, int64_t *lat, int64_t *stall)
{
	*lat = span16(next16(&f->p, f->end));
	*stall = span16(next16(&f->p, f->end));
	f->look = span8(next(&f->p, f->end));
	f->slack = span8(next(&f->p, f->end));
	f->dur = span8(next(&f->p, f->end));
	f->drain = span8(next(&f->p, f->end));
	f->flags = next(&f->p, f->end);
}

static int64_t fz_wake(void *ctx, int64_t t)
{
	struct fz *f = ctx;
	int64_t lat, stall;

	record(f, &lat, &stall);
	f->fresh = true;
	if (stall > 0 && t + stall > f->stall_end)
		f->stall_end = t + stall;
	return (t > f->stall_end ? t : f->stall_end) + lat;
}

static int64_t fz_look(void *ctx, int64_t at)
{
	struct fz *f = ctx;

	return (at > f->stall_end ? at : f->stall_end) + f->look;
}

static void fz_plan(void *ctx, struct rm_plan *p)
{
	struct fz *f = ctx;
	int64_t lat, stall;

	/* a read that follows a read was not woken: it takes a record of its own */
	if (!f->fresh)
		record(f, &lat, &stall);
	f->fresh = false;
	p->dur = f->dur;
	p->drain = f->drain;
	p->slack = f->slack;
	p->stage = f->flags & 4 ? REASM_STAGE_TTY : REASM_STAGE_CPU;
	p->to_end = f->flags & 1;
	p->disproven = f->flags & 2;
}

/* ---- the checks around each read ---- */

static void fz_read(void *ctx, struct reasm *r, const uint8_t *data, size_t n,
		    const struct reasm_read *rd)
{
	struct fz *f = ctx;
	const struct reasm_dev *dev = &f->m->dev;
	int64_t end = rd->end_mono > rd->seen_mono ? rd->end_mono : rd->seen_mono;
	int64_t c = r->char_ns;
	bool in_progress = r->len > 0, doubt;

	CHECK(f->emitted + r->len == (size_t)(data - f->m->data));
	if (f->trace)
		fprintf(stderr, "read %s %zu @%zu seen %.3f end %.3f from %.3f%s (deadline %.3f)\n",
			rd->woken ? "woken" : "unannounced", n, (size_t)(data - f->m->data),
			us(rd->seen_mono), us(rd->end_mono), us(rd->from_mono),
			rd->from_stage == REASM_STAGE_TTY ? " tty" : "",
			r->len > 0 ? us(reasm_deadline(r)) : -1.0);
	f->in_read = true;
	f->read_off = (size_t)(data - f->m->data);
	f->read_n = n;
	f->read_doubts = f->gap_start = f->gap_after = f->cut_hidden = 0;
	if (rd->seen_mono > f->latest)
		f->latest = rd->seen_mono;
	reasm_read(r, data, n, rd);
	f->in_read = false;
	doubt = f->read_doubts > 0;
	CHECK(f->read_doubts <= 1);
	CHECK(f->emitted + r->len == f->read_off + n);
	CHECK(f->gap_start <= 1 && f->gap_after <= 1);
	/* the packet before: ended only with a doubt that says so, or a proven boundary */
	if (f->gap_start)
		CHECK(in_progress && (doubt ? !f->d.joined : end - f->last_end >= r->gap_ns + c));
	if (doubt && in_progress && !f->d.joined)
		CHECK(f->gap_start);
	if (doubt && f->d.joined)
		CHECK(in_progress && !f->gap_start);
	/* its own packet: only the FIFO's timeout proof ends it after its bytes */
	if (f->gap_after)
		CHECK(dev->trigger > 1 && n < dev->trigger && r->gap_ns <= dev->timeout_ns - c + 1
		      && r->len == 0);
	f->last_end = end;
}

static void fz_expire(void *ctx, struct reasm *r, int64_t now, int64_t held)
{
	struct fz *f = ctx;

	if (f->trace)
		fprintf(stderr, "expire %.3f (deadline %.3f)\n", us(now),
			r->len > 0 ? us(reasm_deadline(r)) : -1.0);
	reasm_expire(r, now, held);
	CHECK(r->len == 0 || reasm_deadline(r) > now);
}

static void fz_packet(void *ctx, const struct reasm_packet *pkt)
{
	struct fz *f = ctx;
	const struct rm_machine *mc = &f->m->mc;
	size_t after = f->emitted + pkt->len;

	if (f->trace)
		fprintf(stderr, "  packet %zu+%zu %s %.3f\n", f->emitted, pkt->len,
			pkt->end == REASM_GAP ? "GAP" : pkt->end == REASM_DELIM ? "DELIM"
			: pkt->end == REASM_MAX ? "MAX" : "FLUSH", us(pkt->t_mono));
	CHECK(pkt->len >= 1 && pkt->len <= mc->max_len);
	CHECK(after <= f->m->n);
	CHECK(memcmp(pkt->data, f->m->data + f->emitted, pkt->len) == 0);
	CHECK(pkt->end >= REASM_GAP && pkt->end <= REASM_FLUSH);
	CHECK(pkt->t_real - pkt->t_mono == RM_REAL_OFFSET);
	if (mc->delim >= 0) {
		CHECK(memchr(pkt->data, mc->delim, pkt->len - 1) == NULL);
		CHECK((pkt->end == REASM_DELIM) == (pkt->data[pkt->len - 1] == (uint8_t)mc->delim));
	} else {
		CHECK(pkt->end != REASM_DELIM);
	}
	if (pkt->end == REASM_MAX)
		CHECK(pkt->len == mc->max_len);
	CHECK(pkt->t_mono >= f->last_t && pkt->t_mono <= f->latest);
	f->last_t = pkt->t_mono;
	if (f->doubt_off != SIZE_MAX && f->doubt_off < after) {
		CHECK(pkt->t_mono == f->doubt_mono && pkt->t_real == f->doubt_real);
		f->doubt_off = SIZE_MAX;
	}
	if (pkt->end == REASM_GAP && f->in_read) {
		/* before the read's bytes, or after all of them */
		CHECK(after == f->read_off || after == f->read_off + f->read_n);
		if (after == f->read_off)
			f->gap_start++;
		else
			f->gap_after++;
	}
	CHECK(pkt->end != REASM_FLUSH || !f->in_read);
	f->emitted = after;
}

static void fz_doubt(void *ctx, const struct reasm_doubt *d)
{
	struct fz *f = ctx;

	if (f->trace)
		fprintf(stderr, "  doubt case %d stage %d %s wait %.3f n %zu date %.3f\n", d->why,
			d->stage, d->joined ? "joined" : "new", (double)d->wait_ns / 1000.0,
			d->bytes, us(d->t_mono));
	CHECK(f->in_read);
	CHECK(d->why >= REASM_LATE_WAKE && d->why <= REASM_HIDDEN && d->why != REASM_RESTART);
	CHECK(d->why != REASM_HIDDEN || f->m->mc.want_ns > 0);
	CHECK(d->why == REASM_STALL ? d->stage >= REASM_STAGE_CPU
	      : d->stage == (d->why == REASM_HELD || d->why == REASM_HIDDEN ? REASM_STAGE_DEVICE
			     : REASM_STAGE_READER));
	CHECK(d->wait_ns >= 0);
	CHECK(d->t_real - d->t_mono == RM_REAL_OFFSET);
	CHECK(d->bytes == f->read_n);
	if (f->read_doubts > 0 || (d->why == REASM_HIDDEN && f->emitted > f->read_off)) {
		/* a second one: the delimiter or max_len cut the read, and a line it began
		 * may hide the gap asked for: marked at that line's start (each such line) */
		CHECK(d->why == REASM_HIDDEN && d->joined && f->emitted > f->read_off);
		CHECK(f->doubt_off == SIZE_MAX);
		f->cut_hidden++;
		f->doubt_off = f->emitted;
		f->doubt_mono = d->t_mono;
		f->doubt_real = d->t_real;
		return;
	}
	f->read_doubts++;
	f->d = *d;
	/* a doubt whose packet is not out yet: this read joined that packet */
	if (f->doubt_off != SIZE_MAX) {
		CHECK(d->joined && d->t_mono == f->doubt_mono);
		return;
	}
	f->doubt_off = f->read_off;
	f->doubt_mono = d->t_mono;
	f->doubt_real = d->t_real;
}

/* ---- the input ---- */

/* The gap as delivery_gap gives it for the device. */
static int64_t machine_gap(const struct rm_run *m, unsigned gap_us)
{
	int64_t c = m->mc.char_ns;
	int64_t gap = gap_us > 0 ? (int64_t)gap_us * 1000 : (35 * c / 10 + 999) / 1000 * 1000;
	/* a FIFO's floor is a nanosecond past its RX timeout less a character: the timeout
	 * fires only after more than that, so a silence of exactly timeout - c may hide; an
	 * adapter's, past its latest timeout (delivery_gap) */
	int64_t floor = m->dev.trigger > 1 ? m->dev.timeout_ns + (m->dev.whole ? m->dev.blur_ns : 0)
					    - c + 1 : 4 * m->dev.blur_ns;

	if (gap == 0)
		gap = 1000;
	if (m->dev.trigger > 1 && !m->dev.whole && gap_us == 0)
		return floor;
	return gap > floor ? gap : floor;
}

/* A span of the gap less k sixteenths of a character, never below 0. */
static int64_t under_gap(int64_t gap, int64_t c, unsigned k)
{
	int64_t t = gap - (int64_t)k * c / 16;

	return t > 0 ? t : 0;
}

static void wire(struct rm_run *m, const uint8_t **p, const uint8_t *end, unsigned packets)
{
	int64_t gap = m->mc.gap_ns, c = m->mc.char_ns, now = T0;

	for (unsigned k = 0; k < packets && *p < end; k++) {
		size_t len = 1 + next(p, end);
		unsigned s = next(p, end), every = next(p, end), q = next(p, end);
		uint8_t byte = (uint8_t)next(p, end);
		int64_t pause = q < 128 ? (int64_t)q * gap / 128 : under_gap(gap, c, q - 127);
		int64_t silence = s < 64 ? gap + (int64_t)s * c / 16
				  : s < 128 ? under_gap(gap, c, s - 63)
				  : s < 192 ? (int64_t)(s - 128) * gap / 64
				  : (int64_t)(s - 190) * gap / 2;

		now += silence;
		for (size_t i = 0; i < len; i++) {
			if (i > 0 && every > 0 && i % every == 0)
				now += pause;
			now += c;
			CHECK(rm_byte(m, now, byte++));
		}
	}
}

static void trace_wire(const struct rm_run *m)
{
	const struct rm_machine *mc = &m->mc;

	fprintf(stderr, "machine: char %" PRId64 " ns, gap %" PRId64 " ns, max %zu, delim %d, "
		"device %d trigger %u irq %" PRId64 " hold %" PRId64 " blur %" PRId64 "\n",
		mc->char_ns, mc->gap_ns, mc->max_len, mc->delim, (int)mc->dev, m->dev.trigger,
		mc->irq_ns, m->dev.hold_ns, m->dev.blur_ns);
	for (size_t i = 0; i < m->n; i++)
		fprintf(stderr, "  byte %zu ends %.3f%s\n", i, us(m->wire[i]),
			i > 0 && m->wire[i] - mc->char_ns - m->wire[i - 1] >= mc->gap_ns
			? " (after a gap)" : "");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	static const struct rm_reader reader = {
		.wake = fz_wake,           /* the record's latency and stall */
		.look = fz_look,           /* its looks' latency, after the stall */
		.plan = fz_plan,           /* its length, drain, slack and flags */
		.read = fz_read,           /* reasm_read, checked */
		.expire = fz_expire,       /* reasm_expire, checked */
		.packet = fz_packet,
		.doubt = fz_doubt,
	};
	/* dates are test_reasm's to hold: a read that returns what came while it ran
	 * dates its first byte early by those bytes, as reasm.h says: no read is on time */
	struct rm_machine mc = { .name = "fuzz_reasm", .sensors = true, .on_time_ns = -1,
				 .report = true };
	struct fz f = { .last_t = INT64_MIN, .latest = INT64_MIN, .last_end = INT64_MIN,
			.doubt_off = SIZE_MAX };
	struct rm_result res;
	unsigned gap_us, dev, flags, delim, packets;
	bool known = getenv("FUZZ_REASM_KNOWN") != NULL;
	const uint8_t *q;
	size_t cap = 0;

	if (size < 10)
		return 0;
	mc.max_len = 1 + (size_t)next16(&p, end);
	gap_us = next16(&p, end);
	mc.char_ns = (int64_t)next16(&p, end) * 100;
	dev = next(&p, end) % 32;
	flags = next(&p, end);
	delim = next(&p, end);
	packets = 1 + next(&p, end);
	mc.delim = flags & 1 ? (int)delim : -1;
	if (dev >= 2 && dev <= 14 && mc.char_ns > 0) {
		mc.dev = RM_FIFO;
		mc.trigger = dev;
		/* KNOWN: a byte that comes in the interrupt's latency joins the
		 * timeout's hand-over, and the rule takes it to have ended a timeout
		 * before it, the timeout's proof a silence after it */
		if (known)
			mc.irq_ns = (int64_t)(flags >> 1) * (mc.char_ns / 2) / 127;
	} else if (dev >= 15 && (flags & 0x80) && mc.char_ns > 0) {
		/* an adapter on a receive timeout: 0.5-8.5 ms, transfers of 8-64, a poll */
		mc.dev = RM_ADAPTER;
		mc.hold_ns = (int64_t)(dev - 14) * 500000;
		mc.xfer = 8u << ((flags >> 1) & 3);
		mc.poll_ns = (int64_t)((flags >> 3) & 15) * 62500;
	} else if (dev >= 15) {
		mc.dev = RM_USB;
		mc.latency_ns = (int64_t)(dev - 14) * 1000000;
	}
	/* the wire's size first */
	q = p;
	for (unsigned k = 0; k < packets && q < end; k++, q += 5)
		cap += 1 + (size_t)*q;
	f.m = rm_new(&mc, cap);
	CHECK(f.m != NULL);
	f.m->mc.gap_ns = machine_gap(f.m, gap_us);
	/* an adapter whose gap was raised: the gap asked for is the wire's truth (marked
	 * once a line where it may hide) */
	if (mc.dev == RM_ADAPTER) {
		int64_t asked = gap_us > 0 ? (int64_t)gap_us * 1000
				: (35 * mc.char_ns / 10 + 999) / 1000 * 1000;

		f.m->mc.want_ns = asked > 0 && asked < f.m->mc.gap_ns ? asked : 0;
	}
	f.trace = getenv("FUZZ_REASM_TRACE") != NULL;
	wire(f.m, &p, end, packets);
	f.p = p;
	f.end = end;
	if (f.trace)
		trace_wire(f.m);
	CHECK(rm_play(f.m, &reader, &f, &res));
	CHECK(f.emitted == f.m->n && f.m->emitted == f.m->n);
	CHECK(f.doubt_off == SIZE_MAX);
	if (f.trace)
		fprintf(stderr, "%zu bytes, %zu lines, %zu reads, %zu doubts, %u wrong, "
			"%u dates off\n", f.m->n, f.m->lines, res.reads, res.doubts, res.wrong,
			res.dates);
	CHECK(res.wrong == 0);
	rm_free(f.m);
	return 0;
}
