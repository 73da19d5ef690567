/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reasm.c - packet reassembly by gap, delimiter and maximum length; the boundary rule's error model. */
#include <stdbool.h>
#include <stdint.h>

#include "reasm.h"

#define FAR (INT64_MIN / 4)     /* no look yet: as early as anything can be */

void reasm_init(struct reasm *r, uint8_t *buf, size_t max_len, int64_t gap_ns,
		int64_t char_ns, int delim, reasm_emit_fn *emit, void *ctx)
{
	*r = (struct reasm){
		.buf = buf, .max_len = max_len, .gap_ns = gap_ns, .char_ns = char_ns,
		.delim = delim, .emit = emit, .ctx = ctx, .floor = FAR, .look = FAR,
	};
}

static void emit(struct reasm *r, enum reasm_end end)
{
	struct reasm_packet pkt = {
		.data = r->buf, .len = r->len, .t_mono = r->first_mono,
		.t_real = r->first_real, .end = end,
	};

	r->len = 0;
	r->first_read_n = 0;
	r->emit(r->ctx, &pkt);
}

/*
 * Byte i of n read at now_mono started (n - i) character times before the
 * wake-up; but back-dating (a wrong baud, a late wake-up) must not date a byte
 * before the previous one: keep the source's time order.
 */
static int64_t byte_mono(const struct reasm *r, size_t n, size_t i, int64_t now_mono)
{
	int64_t t_mono = now_mono - (int64_t)(n - i) * r->char_ns;

	return r->have_last && t_mono < r->last_mono ? r->last_mono : t_mono;
}

void reasm_set_dev(struct reasm *r, const struct reasm_dev *dev)
{
	r->dev = *dev;
}

void reasm_on_doubt(struct reasm *r, reasm_doubt_fn *fn)
{
	r->doubt = fn;
}

void reasm_floor(struct reasm *r, int64_t t_mono)
{
	r->last_mono = t_mono;
	r->have_last = true;
	if (t_mono > r->look)
		r->look = t_mono;
}

/* ---- the error model (reasm.h; daemon/README.md, "Packet boundaries") ---- */

/* When a read's last byte ended on the wire before its hand-over to the kernel:
 * between lo and hi, most likely mid; with blur false, at mid. */
struct handover {
	int64_t lo, mid, hi;
};

static struct handover handover(const struct reasm *r, size_t n, bool blur)
{
	const struct reasm_dev *d = &r->dev;
	int64_t mid, b = blur ? d->blur_ns : 0;

	if (d->hold_ns == 0)
		return (struct handover){ 0, 0, 0 };
	if (d->trigger > 1 && n > d->trigger + 1) {
		/* two hand-overs or more: the last the trigger's or the timeout's */
		mid = d->timeout_ns / 2;
		b += blur ? mid : 0;
	} else if (d->trigger > 1) {
		/* fewer than the trigger came by the RX timeout; the trigger's worth
		 * came with its last byte */
		mid = n < d->trigger ? d->timeout_ns : 0;
	} else {
		mid = d->blur_ns;       /* anywhere in the device's hold: the middle */
	}
	return (struct handover){ mid > b ? mid - b : 0, mid, mid + b };
}

/* Bytes of a read beyond what one hand-over holds (a FIFO: its trigger and the one
 * more its interrupt may take; a wire with no device: one byte; a pty or an
 * adapter: no limit the model knows): each came a character after the one before. */
static int64_t extra(const struct reasm *r, size_t n)
{
	size_t cap = r->dev.trigger > 1 ? r->dev.trigger + 1
		     : r->dev.hold_ns == 0 && r->char_ns > 0 ? 1 : n;

	return n > cap ? (int64_t)(n - cap) : 0;
}

/* A read under one set of assumptions: [sens] the sensors' bound on the path from
 * the kernel to the reader, or the reader's own evidence alone; [blur] the
 * device's blur, or its nominal dates. */
struct view {
	int64_t from;           /* the earliest its first hand-over reached the kernel */
	struct handover ho;
	int64_t hold;           /* how long its first byte can have waited in the device */
};

/* The least time from a read's first hand-over to its end that can hold a gap
 * among its bytes: two hand-overs a gap apart, the bytes after it at least one. */
static int64_t inside_gap(const struct reasm *r, size_t n, bool blur)
{
	const struct reasm_dev *d = &r->dev;
	int64_t b = blur ? d->blur_ns : 0, k = extra(r, n) > 1 ? extra(r, n) : 1;
	int64_t t = r->gap_ns + k * r->char_ns - 2 * b, full;

	if (d->trigger > 1) {
		/* a FIFO: a timeout's hand-over, the gap, then a trigger's worth */
		full = r->gap_ns + (int64_t)d->trigger * r->char_ns - d->timeout_ns - b;
		t = full < t ? full : t;
	}
	return t;
}

enum verdict { SURE, NEW, DOUBT };     /* joins (or begins one), a proven boundary, a doubt */

/*
 * Can a silence of the gap lie between the packet's last byte and this read's last
 * byte, or among this read's bytes? The bytes between take a character each, the
 * gap its own. If one can, is one sure before the read's first byte (and none
 * among its bytes)?
 */
static enum verdict judge(const struct reasm *r, size_t n, int64_t end, const struct view *v,
			  int sens, int blur)
{
	int64_t c = r->char_ns, g = r->gap_ns;
	bool inside = n > 1 && end - v->from >= inside_gap(r, n, blur);

	if (r->len == 0)
		return inside ? DOUBT : SURE;
	if (end - v->ho.lo - r->last_lo[sens][blur] < g + (int64_t)n * c)
		return SURE;
	if (!inside && v->from - v->hold - c - r->last_hi[blur] >= g)
		return NEW;
	return DOUBT;
}

/* The silence before the read's first byte, as the estimate dates both. */
static int64_t est_silence(const struct reasm *r, size_t n, int64_t seen)
{
	return seen - handover(r, n, false).mid - (int64_t)n * r->char_ns - r->last_mono;
}

/*
 * Placed where it is likelier: the middle of what the silence before the read can
 * have been by the reader's own evidence, the device at its nominal dates (a
 * sensor's bound is what it cannot rule out, not what it saw: it decides whether
 * to doubt, not where the bytes go).
 */
static bool likely_joined(const struct reasm *r, size_t n, const struct reasm_read *rd,
			  int64_t end, const struct view *v)
{
	int64_t c = r->char_ns, lo = v->from - v->hold, hi = rd->woken ? rd->seen_mono : end;
	int64_t smin, smax;

	if (lo < r->last_lo[0][0] + c)
		lo = r->last_lo[0][0] + c;     /* after the packet's last byte */
	if (hi > end - (int64_t)(n - 1) * c)
		hi = end - (int64_t)(n - 1) * c;
	smin = lo - c - r->last_hi[0];
	smax = hi - v->ho.lo - c - r->last_lo[0][0];
	return (smin > 0 ? smin : 0) / 2 + smax / 2 < r->gap_ns;
}

/*
 * The doubt of a read the full model cannot judge: the reader's own view already
 * cannot (its case by when it woke and read), else the device's blur is what
 * hides it, else the sensors' bound on the path (the stage that set it).
 */
static void doubt_of(const struct reasm *r, size_t n, const struct reasm_read *rd, int64_t end,
		     const struct view v[2][2], enum reasm_stage stage, int64_t wire,
		     struct reasm_doubt *d)
{
	int64_t seen = rd->seen_mono, judged = r->last_lo[0][0] + r->gap_ns;

	*d = (struct reasm_doubt){ .bytes = n, .stage = REASM_STAGE_READER };
	if (judge(r, n, end, &v[0][0], 0, 0) == DOUBT) {
		d->why = r->len == 0 ? REASM_SLOW_READ : !rd->woken ? REASM_DEADLINE_READ
			 : seen >= judged ? REASM_LATE_WAKE : REASM_SLOW_READ;
		d->wait_ns = end - (r->len > 0 && judged < seen ? judged : seen);
	} else if (judge(r, n, end, &v[0][1], 0, 1) == DOUBT) {
		d->why = REASM_HELD;
		d->stage = REASM_STAGE_DEVICE;
		d->wait_ns = r->len > 0 ? est_silence(r, n, seen) : 0;
	} else {
		/* the sensors widened this read, or the packet's last one: the wider */
		int64_t mine = v[0][1].from - v[1][1].from, last = r->last_lo[0][1] - r->last_lo[1][1];

		d->why = REASM_STALL;
		d->stage = r->len > 0 && last > mine ? r->last_stage : stage;
		d->wait_ns = stage == REASM_STAGE_WIRE && mine >= last ? seen - wire
			     : mine > last || r->len == 0 ? mine : last;
	}
	if (d->wait_ns < 0)
		d->wait_ns = 0;
	d->joined = r->len > 0 && likely_joined(r, n, rd, end, &v[0][0]);
}

/* ---- reads ---- */

/*
 * Adds the bytes of a read to the packet in progress (or begins one), dated from
 * seen: the estimated end of its last byte.
 */
static void append(struct reasm *r, const uint8_t *data, size_t n, int64_t seen,
		   int64_t seen_real)
{
	for (size_t i = 0; i < n; i++) {
		int64_t t_mono = byte_mono(r, n, i, seen);

		if (r->len == 0) {
			r->first_mono = t_mono;
			r->first_real = seen_real - (seen - t_mono);
		}
		r->buf[r->len++] = data[i];
		/* the next byte starts a character later, but not after the wake-up
		 * that brought it: bytes held back (the tty worker) must not be
		 * dated in the future; nor before this one (a held device's estimate
		 * may lie before the previous byte's date) */
		r->last_mono = i + 1 == n || t_mono + r->char_ns > seen ? seen : t_mono + r->char_ns;
		if (r->last_mono < t_mono)
			r->last_mono = t_mono;
		r->have_last = true;
		if (r->delim >= 0 && data[i] == (uint8_t)r->delim)
			emit(r, REASM_DELIM);
		else if (r->len == r->max_len)
			emit(r, REASM_MAX);
	}
}

/* The read's last byte is now the packet's: what the model knows of it. */
static void keep_last(struct reasm *r, size_t n, int64_t end, const struct view v[2][2],
		      enum reasm_stage stage)
{
	r->last_stage = stage;
	for (int s = 0; s < 2; s++)
		for (int b = 0; b < 2; b++)
			r->last_lo[s][b] = v[s][b].from - v[s][b].ho.hi + extra(r, n) * r->char_ns;
	for (int b = 0; b < 2; b++)
		r->last_hi[b] = end - v[1][b].ho.lo;
	if (end > r->look)
		r->look = end;
}

/*
 * An adapter sends what it holds on its own timer. When a packet's second read
 * followed its first with no silence between them (its bytes fill the time since
 * the first transfer, within a character), the bytes were still streaming in when
 * the first transfer was sent: its last byte had just arrived. The packet's first
 * byte is then dated back from that transfer by its bytes alone, no longer from
 * the middle of the hold. Later, never earlier: dates said before it (the previous
 * packet, the horizon the flusher has) still hold, and the bytes after it are
 * dated no earlier. Called after the second read's n bytes, ending at `last`,
 * were added.
 */
static void redate(struct reasm *r, size_t n, int64_t last)
{
	size_t first_n = r->first_read_n;
	int64_t t;

	r->first_read_n = 0;
	if (first_n == 0 || r->len != first_n + n
	    || last - (int64_t)n * r->char_ns - (r->first_read_seen - r->dev.blur_ns) > r->char_ns)
		return;
	t = r->first_read_seen - (int64_t)first_n * r->char_ns;
	if (t <= r->first_mono)
		return;
	r->first_real += t - r->first_mono;
	r->first_mono = t;
	if (r->last_mono < t)
		r->last_mono = t;
}

void reasm_read(struct reasm *r, const uint8_t *data, size_t n, const struct reasm_read *rd)
{
	int64_t end = rd->end_mono > rd->seen_mono ? rd->end_mono : rd->seen_mono;
	int64_t c = r->char_ns, mid = handover(r, n, false).mid;
	int64_t seen = rd->seen_mono - mid, seen_real = rd->seen_real - mid;
	/* by the baud, the first hand-over came this long before the read's end at most */
	int64_t wire = end - extra(r, n) * c;
	/* the reader's own evidence: on time when the bytes woke it before the packet's
	 * deadline, else any time since it last looked; never before an empty read */
	int64_t own = rd->woken && rd->seen_mono < reasm_deadline(r) ? rd->seen_mono : r->look;
	int64_t sens;
	enum reasm_stage stage = rd->from_stage;
	struct view v[2][2];
	struct reasm_doubt d = { 0 };
	enum verdict verdict;
	bool began, contradicted = false;

	if (n == 0)
		return;
	own = own < wire ? own : wire;
	own = own > r->floor ? own : r->floor;
	/* the sensors only widen it; bytes the baud could not have brought since their
	 * bound prove it wrong, and then only the reader's empty reads bound it */
	sens = rd->from_mono == 0 || rd->from_mono > own ? own : rd->from_mono;
	if (rd->from_mono != 0 && wire < rd->from_mono) {
		sens = r->floor;
		stage = REASM_STAGE_WIRE;
	}
	sens = sens > r->floor ? sens : r->floor;
	for (int s = 0; s < 2; s++)
		for (int b = 0; b < 2; b++) {
			v[s][b].from = s ? sens : own;
			v[s][b].ho = handover(r, n, b);
			v[s][b].hold = b ? r->dev.hold_ns : v[s][b].ho.mid
					   + (int64_t)(n - 1 - (size_t)extra(r, n)) * c;
		}
	verdict = judge(r, n, end, &v[1][1], 1, 1);
	/* the last packet was ended by a read the rule took for the FIFO's timeout, which
	 * stands for a silence of the gap at least: these bytes, dated within it,
	 * contradict it (the device is not what the model says), so that boundary was
	 * not proven after all, and these prove nothing themselves */
	if (r->len == 0 && r->timeout_end && est_silence(r, n, rd->seen_mono)
					      + 2 * r->dev.blur_ns < r->gap_ns) {
		contradicted = true;
		verdict = DOUBT;
		d = (struct reasm_doubt){ .why = REASM_HELD, .stage = REASM_STAGE_DEVICE, .bytes = n,
					  .wait_ns = est_silence(r, n, rd->seen_mono) };
		d.wait_ns = d.wait_ns > 0 ? d.wait_ns : 0;
	} else if (verdict == DOUBT) {
		doubt_of(r, n, rd, end, v, stage, wire, &d);
	}
	if (verdict != SURE)
		r->first_read_n = 0;    /* a packet with a doubt keeps the date it has */
	if (verdict == NEW || (verdict == DOUBT && !d.joined && r->len > 0))
		emit(r, REASM_GAP);
	if (verdict == DOUBT) {
		int64_t first = byte_mono(r, n, 0, seen);

		d.t_mono = r->len > 0 ? r->first_mono : first;
		d.t_real = r->len > 0 ? r->first_real : seen_real - (seen - first);
		if (r->doubt != NULL)
			r->doubt(r->ctx, &d);
	}
	began = r->len == 0;
	append(r, data, n, seen, seen_real);
	keep_last(r, n, end, v, stage);
	if (!began && r->first_read_n > 0)
		redate(r, n, seen);
	if (began && r->len == n && r->dev.hold_ns > 0 && r->dev.trigger == 0 && verdict == SURE) {
		/* an adapter's read that began a packet: dated from the middle of the
		 * hold until its next transfer may say better */
		r->first_read_n = n;
		r->first_read_seen = rd->seen_mono;
	}
	/* the FIFO's timeout fired before another byte came: a silence of more than
	 * the timeout less a character followed these bytes */
	r->timeout_end = false;
	if (r->len > 0 && r->dev.trigger > 1 && n < r->dev.trigger
	    && r->gap_ns <= r->dev.timeout_ns - c && !contradicted) {
		emit(r, REASM_GAP);
		r->timeout_end = true;
	}
}

void reasm_held(struct reasm *r, const uint8_t *data, size_t n, const struct reasm_read *rd,
		int64_t unread_ns)
{
	int64_t seen = rd->seen_mono, end = rd->end_mono > seen ? rd->end_mono : seen;
	int64_t first = byte_mono(r, n, 0, seen);
	struct reasm_doubt d = { .why = REASM_RESTART, .stage = REASM_STAGE_READER, .bytes = n,
				 .wait_ns = unread_ns, .joined = r->len > 0 };
	struct view v[2][2];

	if (n == 0)
		return;
	d.t_mono = r->len > 0 ? r->first_mono : first;
	d.t_real = r->len > 0 ? r->first_real : rd->seen_real - (seen - first);
	r->first_read_n = 0;
	r->timeout_end = false;
	if (r->doubt != NULL)
		r->doubt(r->ctx, &d);
	append(r, data, n, seen, rd->seen_real);
	/* when they came no one saw, and the doubt says so for their packet: the model
	 * takes them as dated, back to back before the read; the device may still hand
	 * over some that came before it: the deadline waits for them */
	for (int s = 0; s < 2; s++)
		for (int b = 0; b < 2; b++)
			v[s][b] = (struct view){ .from = seen - extra(r, n) * r->char_ns };
	keep_last(r, n, end, v, REASM_STAGE_READER);
}

void reasm_feed(struct reasm *r, const uint8_t *data, size_t n,
		int64_t now_mono, int64_t now_real)
{
	struct reasm_read rd = { .woken = true, .seen_mono = now_mono, .seen_real = now_real,
				 .end_mono = now_mono };

	reasm_read(r, data, n, &rd);
}

int64_t reasm_deadline(const struct reasm *r)
{
	if (r->len == 0)
		return INT64_MAX;
	return r->last_hi[1] + r->gap_ns + r->char_ns + r->dev.hold_ns;
}

void reasm_expire(struct reasm *r, int64_t now_mono)
{
	if (now_mono > r->floor)
		r->floor = now_mono;
	if (now_mono > r->look)
		r->look = now_mono;
	if (r->len > 0 && now_mono >= reasm_deadline(r))
		emit(r, REASM_GAP);
}

void reasm_flush(struct reasm *r)
{
	if (r->len > 0)
		emit(r, REASM_FLUSH);
}

int64_t reasm_char_ns(unsigned baud, unsigned frame_bits)
{
	if (baud == 0)
		return 0;
	return ((int64_t)frame_bits * 1000000000 + baud - 1) / baud;
}

int64_t reasm_auto_gap_ns(unsigned baud, unsigned frame_bits)
{
	if (baud == 0)
		return 0;
	/* 3.5 characters = 7 * frame_bits / 2 bit times; round up to a microsecond */
	int64_t us = ((int64_t)7 * frame_bits * 1000000 + 2LL * baud - 1) / (2LL * baud);
	return us * 1000;
}
