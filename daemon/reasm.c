/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reasm.c - packet reassembly by gap, delimiter and maximum length; the boundary rule's error model. */
#include <stdbool.h>
#include <stdint.h>

#include "reasm.h"

#define FAR (INT64_MIN / 4)     /* no look yet: as early as anything can be */
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

void reasm_init(struct reasm *r, uint8_t *buf, size_t max_len, int64_t gap_ns,
		int64_t char_ns, int delim, reasm_emit_fn *emit, void *ctx)
{
	*r = (struct reasm){
		.buf = buf, .max_len = max_len, .gap_ns = gap_ns, .char_ns = char_ns,
		.delim = delim, .emit = emit, .ctx = ctx, .floor = FAR, .sure = FAR, .look = FAR,
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
	r->hidden = false;
	r->proven = false;
	r->emit(r->ctx, &pkt);
}

/* Byte i of n read at now_mono started (n - i) character times before it, but not
 * before the byte before it (a wrong baud, a late wake-up): the source's time order. */
static int64_t byte_mono(const struct reasm *r, size_t n, size_t i, int64_t now_mono)
{
	int64_t t_mono = now_mono - (int64_t)(n - i) * r->char_ns;

	return r->have_last ? MAX(t_mono, r->last_mono) : t_mono;
}

void reasm_set_dev(struct reasm *r, const struct reasm_dev *dev)
{
	r->dev = *dev;
}

void reasm_set_gap(struct reasm *r, int64_t gap_ns, int64_t want_ns)
{
	r->gap_ns = gap_ns;
	r->want_ns = want_ns > 0 && want_ns < gap_ns ? want_ns : 0;
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

/* How long before its hand-over a read's last byte ended on the wire: lo..hi, most
 * likely mid (blur false: mid). */
struct handover {
	int64_t lo, mid, hi;
};

static struct handover handover(const struct reasm *r, size_t n, bool blur)
{
	const struct reasm_dev *d = &r->dev;
	/* a FIFO: two hand-overs or more (the last the trigger's or the timeout's);
	 * fewer than the trigger came by its RX timeout, the trigger's worth with its
	 * last byte (its handler may take one more; an adapter's transfer holds at most
	 * the trigger's); an adapter on a timer, or a FIFO of level unknown: anywhere
	 * in its hold */
	bool two = d->trigger > 1 && n > d->trigger + !d->whole;
	int64_t mid = two ? d->timeout_ns / 2 : d->trigger > 1 ? (n < d->trigger ? d->timeout_ns : 0)
		      : d->blur_ns;
	int64_t b = !blur ? 0 : two ? d->blur_ns + mid : d->blur_ns;

	if (d->hold_ns == 0)
		return (struct handover){ 0, 0, 0 };
	return (struct handover){ MAX(mid - b, 0), mid, mid + b };
}

/* Bytes of a read beyond what one hand-over holds (a FIFO: its trigger and one more;
 * an adapter of known transfers: one transfer; a wire with no device: one; a pty, an
 * adapter on a timer: no limit known), a character each. */
static int64_t extra(const struct reasm *r, size_t n)
{
	size_t cap = r->dev.trigger > 1 ? r->dev.trigger + !r->dev.whole
		     : r->dev.hold_ns == 0 && r->char_ns > 0 ? 1 : n;

	return n > cap ? (int64_t)(n - cap) : 0;
}

/* A read under one set of assumptions (reasm.h): the sensors' bound on the path
 * from the kernel to the reader, or the reader's own evidence alone (its from);
 * the device's blur, or its nominal dates (blur). */
struct view {
	int64_t from;           /* the earliest its first hand-over reached the kernel */
	bool blur;
	struct handover ho;
	int64_t hold;           /* how long its first byte can have waited in the device */
};

static struct view view(const struct reasm *r, size_t n, int64_t from, bool blur)
{
	struct handover ho = handover(r, n, blur);

	return (struct view){ from, blur, ho, blur ? r->dev.hold_ns
					   : ho.mid + ((int64_t)n - 1 - extra(r, n)) * r->char_ns };
}

/* The earliest and the latest the packet's last byte can have ended on the wire. */
static int64_t last_lo(const struct reasm *r, bool own, bool blur)
{
	return r->last_from[own] - handover(r, r->last_n, blur).hi + extra(r, r->last_n) * r->char_ns;
}

static int64_t last_hi(const struct reasm *r, bool blur)
{
	return r->last_end - handover(r, r->last_n, blur).lo;
}

/* The least time from a read's first hand-over to its end that can hold a gap
 * among its bytes: two hand-overs a gap apart, the bytes after it at least one. */
static int64_t inside_gap(const struct reasm *r, size_t n, bool blur)
{
	const struct reasm_dev *d = &r->dev;
	int64_t b = blur ? d->blur_ns : 0, k = extra(r, n) > 1 ? extra(r, n) : 1;
	int64_t t = r->gap_ns + k * r->char_ns - 2 * b;

	/* a FIFO: a timeout's hand-over, the gap, then a trigger's worth */
	return d->trigger > 1 ? MIN(t, r->gap_ns + (int64_t)d->trigger * r->char_ns - d->timeout_ns - b)
			      : t;
}

/*
 * Can a gap lie among this read's bytes, or between the packet's last byte and
 * this read's last (the bytes between take a character each, the gap its own), and
 * is none sure before its first byte? own: the packet's last read viewed so too.
 * With every bound in, none is ever sure here (that takes an empty read at the
 * deadline, or a FIFO's timeout); with a device at its nominal dates it can be.
 */
static bool doubtful(const struct reasm *r, size_t n, int64_t end, const struct view *v, bool own)
{
	bool inside = n > 1 && end - v->from >= inside_gap(r, n, v->blur);

	/* no packet in progress: the silence the last one's end claimed, unless its
	 * empty read's proof held (reasm_expire's sure) */
	if (r->len == 0)
		return inside || (r->proven && v->from - v->hold - r->char_ns - last_hi(r, v->blur)
					       < r->gap_ns);
	return end - v->ho.lo - last_lo(r, own, v->blur) >= r->gap_ns + (int64_t)n * r->char_ns
	       && (inside || v->from - v->hold - r->char_ns - last_hi(r, v->blur) < r->gap_ns);
}

/* The silence before the read's first byte, as the estimate dates both. */
static int64_t est_silence(const struct reasm *r, size_t n, int64_t seen)
{
	return seen - handover(r, n, false).mid - (int64_t)n * r->char_ns - r->last_mono;
}

/*
 * The doubt of a read the full view cannot judge: the wire's, when more bytes came
 * since an empty read than the baud brings (unpaced: by how much); the reader's,
 * when its own view (the device nominal) cannot judge either (its case by when it
 * woke and read); the device's, when its blur hides the silence or the read
 * contradicts a FIFO timeout's proof; else the sensors' (the wider of this read's
 * bound and the last one's).
 * Placed by the middle of what the silence can have been in the reader's own view:
 * a sensor's bound is what it cannot rule out, not what it saw.
 */
static void doubt_of(const struct reasm *r, size_t n, const struct reasm_read *rd, int64_t end,
		     const struct view *full, const struct view *own, bool contradicted,
		     int64_t unpaced, enum reasm_stage stage, int64_t wire, struct reasm_doubt *d)
{
	int64_t c = r->char_ns, seen = rd->seen_mono, judged = last_lo(r, true, false) + r->gap_ns;
	int64_t lo = own->from - own->hold, hi = rd->woken ? seen : end;
	struct view own_blur = view(r, n, own->from, true);

	*d = (struct reasm_doubt){ .bytes = n, .stage = REASM_STAGE_READER };
	if (unpaced > 0) {
		d->why = REASM_STALL;
		d->stage = REASM_STAGE_WIRE;
		d->wait_ns = unpaced;
	} else if (!contradicted && doubtful(r, n, end, own, true)) {
		d->why = r->len == 0 ? REASM_SLOW_READ : !rd->woken ? REASM_DEADLINE_READ
			 : seen >= judged ? REASM_LATE_WAKE : REASM_SLOW_READ;
		d->wait_ns = end - (r->len > 0 && judged < seen ? judged : seen);
	} else if (contradicted || doubtful(r, n, end, &own_blur, true)) {
		d->why = REASM_HELD;
		d->stage = REASM_STAGE_DEVICE;
		d->wait_ns = r->len > 0 || contradicted ? est_silence(r, n, seen) : 0;
	} else {
		int64_t mine = own->from - full->from, last = r->last_from[1] - r->last_from[0];

		d->why = REASM_STALL;
		d->stage = r->len > 0 && last > mine ? r->last_stage : stage;
		d->wait_ns = stage == REASM_STAGE_WIRE && mine >= last ? seen - wire
			     : mine > last || r->len == 0 ? mine : last;
	}
	d->wait_ns = MAX(d->wait_ns, 0);
	if (r->len == 0)
		return;
	/* the first new byte, after the packet's last, not after the read */
	lo = MAX(lo, last_lo(r, true, false) + c) - c - last_hi(r, false);
	hi = MIN(hi, end - (int64_t)(n - 1) * c) - own->ho.lo - c - last_lo(r, true, false);
	d->joined = MAX(lo, 0) / 2 + hi / 2 < r->gap_ns;
}

/* Can the read hide a silence of want_ns among its bytes, or (joining the packet in
 * progress) just before them, with the packet not marked yet? (reasm_set_gap) */
static bool hides(const struct reasm *r, size_t n, int64_t end, const struct view *v)
{
	int64_t span = r->want_ns + (int64_t)n * r->char_ns;

	if (r->want_ns == 0 || r->hidden)
		return false;
	return (n > 1 && end - (v->from - v->hold - r->char_ns) >= span)
	       || (r->len > 0 && end - v->ho.lo - last_lo(r, false, v->blur) >= span);
}

/* ---- reads ---- */

/* The line in progress may hide the gap asked for: said once (reasm_set_gap). */
static void say_hidden(struct reasm *r, size_t n)
{
	struct reasm_doubt h = { .why = REASM_HIDDEN, .stage = REASM_STAGE_DEVICE, .bytes = n,
				 .joined = true, .t_mono = r->first_mono, .t_real = r->first_real };

	r->hidden = true;
	if (r->doubt != NULL)
		r->doubt(r->ctx, &h);
}

/* Adds the bytes of a read to the packet in progress (or begins one), dated from
 * seen: the estimated end of its last byte. hide: the read can hide the gap asked
 * for among its bytes; a line it begins and the delimiter or max_len ends within it
 * says so (the one it leaves in progress is reasm_read's to judge). */
static void append(struct reasm *r, const uint8_t *data, size_t n, int64_t seen,
		   int64_t seen_real, bool hide)
{
	bool fresh = false;     /* the line in progress began in this read */

	for (size_t i = 0; i < n; i++) {
		int64_t t_mono = byte_mono(r, n, i, seen);
		bool delim;

		if (r->len == 0) {
			r->first_mono = t_mono;
			r->first_real = seen_real - (seen - t_mono);
			fresh = true;
		}
		r->buf[r->len++] = data[i];
		/* the next byte starts a character later, but not after the read's estimate
		 * (never in the future), nor before this one */
		r->last_mono = MAX(t_mono, i + 1 == n ? seen : MIN(t_mono + r->char_ns, seen));
		r->have_last = true;
		delim = r->delim >= 0 && data[i] == (uint8_t)r->delim;
		if (!delim && r->len < r->max_len)
			continue;
		if (hide && fresh && r->len > 1 && !r->hidden)
			say_hidden(r, n);
		emit(r, delim ? REASM_DELIM : REASM_MAX);
	}
}

/* The read's last byte is now the packet's: what the model knows of it. */
static void keep_last(struct reasm *r, size_t n, int64_t end, int64_t own, int64_t sens,
		      enum reasm_stage stage)
{
	r->last_from[1] = own;
	r->last_from[0] = sens;
	r->last_end = end;
	r->last_n = n;
	r->last_stage = stage;
	if (end > r->look)
		r->look = end;
}

/*
 * An adapter's packet whose second read followed its first with no silence (its
 * bytes fill the time since the first transfer, within a character) was streaming
 * when the first transfer went: its first byte is dated back from that transfer by
 * its bytes alone, not from the middle of the hold; later, never earlier. Called
 * after the second read's n bytes, ending at `last`, were added.
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
	int64_t end = MAX(rd->end_mono, rd->seen_mono);
	int64_t c = r->char_ns, mid = handover(r, n, false).mid;
	int64_t seen = rd->seen_mono - mid, seen_real = rd->seen_real - mid;
	/* by the baud, the first hand-over came this long before the read's end at most */
	int64_t wire = end - extra(r, n) * c;
	/* the reader's own evidence: on time when the bytes woke it before the packet's
	 * deadline, else any time since it last looked; never before an empty read */
	int64_t own = rd->woken && rd->seen_mono < reasm_deadline(r) ? rd->seen_mono : r->look;
	int64_t sens;
	enum reasm_stage stage = rd->from_stage;
	struct view full, mine;
	struct reasm_doubt d = { 0 };
	int64_t slack, in_packet = 0;
	bool began, contradicted, unpaced, doubt, hide;
	size_t before;

	if (n == 0)
		return;
	own = MAX(MIN(own, wire), r->floor);
	/* the sensors only widen it; bytes the baud could not have brought since their
	 * bound prove it wrong, and then only the reader's empty reads bound it */
	sens = rd->from_mono == 0 ? own : MIN(rd->from_mono, own);
	if (rd->from_mono != 0 && wire < rd->from_mono) {
		sens = r->sure;
		stage = REASM_STAGE_WIRE;
	}
	full = view(r, n, MAX(sens, r->sure), true);
	mine = view(r, n, own, false);
	/* bytes dated within the silence a FIFO timeout's read proved contradict the
	 * model: that boundary was not proven after all, nor will these prove one */
	contradicted = r->len == 0 && r->timeout_end
		       && est_silence(r, n, rd->seen_mono) + 2 * r->dev.blur_ns < r->gap_ns;
	/* ... and a stall the sensors saw reaching back past what the device can hold
	 * before the last read that emptied the kernel: a device that holds bytes (a FIFO's
	 * timeout, an adapter's timer) may have held these across it, for an emulated one
	 * stops with the machine (a virtual machine stopped and resumed: its timers fire
	 * late, its backlog comes at once): neither the model's hold nor the last read
	 * says when they came */
	contradicted = contradicted
		       || (r->len > 0 && r->dev.hold_ns > 0 && rd->from_mono != 0
			   && rd->from_mono < r->floor - r->dev.hold_ns);
	/* more bytes since the last empty read, or since any read of the packet, than the
	 * baud brings (a character 1/16 short: a sender's baud may be fast): they did not
	 * come at the baud (a pty fed faster), or the reader's clock stood still while
	 * they came (a virtual machine stopped and resumed: its emulated device hands over
	 * what the wire brought meanwhile faster than the baud, test_reasm
	 * test_machine_stops), and the model's pacing judges nothing; in a packet, none of
	 * its silences can be judged */
	slack = end - extra(r, n) * (c - c / 16) - r->sure;
	if (r->len > 0) {
		in_packet = MIN(end - full.ho.lo - last_lo(r, false, true) - (int64_t)n * (c - c / 16),
				end - full.ho.lo - r->anchor_lo
				- (int64_t)(r->anchor_n + n) * (c - c / 16));
		slack = MIN(slack, in_packet);
	}
	unpaced = slack < 0;
	doubt = contradicted || unpaced || doubtful(r, n, end, &full, false);
	if (doubt) {
		doubt_of(r, n, rd, end, &full, &mine, contradicted, unpaced ? -slack : 0, stage,
			 wire, &d);
		if (in_packet < 0)
			d.joined = true;        /* its mark then covers the whole packet */
	} else if (hides(r, n, end, &full)) {
		d = (struct reasm_doubt){ .why = REASM_HIDDEN, .stage = REASM_STAGE_DEVICE,
					  .bytes = n, .joined = r->len > 0,
					  .wait_ns = r->len > 0 ? MAX(est_silence(r, n, seen), 0) : 0 };
	}
	if (d.why != 0) {
		int64_t first = byte_mono(r, n, 0, seen);

		r->first_read_n = 0;    /* a packet with a doubt keeps the date it has */
		if (!d.joined && r->len > 0)
			emit(r, REASM_GAP);
		/* a doubt marks the packet the bytes join or begin: no other for want_ns */
		r->hidden = r->want_ns > 0;
		d.t_mono = r->len > 0 ? r->first_mono : first;
		d.t_real = r->len > 0 ? r->first_real : seen_real - (seen - first);
		if (r->doubt != NULL)
			r->doubt(r->ctx, &d);
	}
	began = r->len == 0;
	before = r->len;
	hide = r->want_ns > 0 && end - (full.from - full.hold - c) >= r->want_ns + (int64_t)n * c;
	append(r, data, n, seen, seen_real, hide);
	/* the delimiter or max_len cut the read: the line its rest begins may hide the gap
	 * asked for among those bytes too, and says so once */
	if (r->len < before + n && r->len > 1 && hide && !r->hidden)
		say_hidden(r, n);
	keep_last(r, n, end, own, full.from, stage);
	r->anchor_n += n;
	if (began) {
		r->anchor_lo = last_lo(r, false, true);
		r->anchor_n = 0;
	} else {
		/* from any read of the packet, not only its first: the bytes after it take
		 * a character each (1/16 short) from its last byte's earliest end on */
		r->anchor_lo = MAX(r->anchor_lo,
				   last_lo(r, false, true) - (int64_t)r->anchor_n * (c - c / 16));
	}
	if (!began && r->first_read_n > 0)
		redate(r, n, seen);
	if (began && r->len == n && r->dev.hold_ns > 0 && r->dev.trigger == 0 && d.why == 0) {
		/* an adapter's read that began a packet: dated from the middle of the
		 * hold until its next transfer may say better */
		r->first_read_n = n;
		r->first_read_seen = rd->seen_mono;
	}
	/* the FIFO's timeout fired before another byte came: a silence of more than
	 * the timeout less a character followed these bytes */
	r->timeout_end = false;
	if (r->len > 0 && r->dev.trigger > 1 && n < r->dev.trigger
	    && r->gap_ns <= r->dev.timeout_ns - (r->dev.whole ? r->dev.blur_ns : 0) - c + 1
	    && !contradicted) {
		emit(r, REASM_GAP);
		r->timeout_end = true;
	}
}

void reasm_held(struct reasm *r, const uint8_t *data, size_t n, const struct reasm_read *rd,
		int64_t unread_ns)
{
	int64_t seen = rd->seen_mono, end = MAX(rd->end_mono, seen), first = byte_mono(r, n, 0, seen);
	struct reasm_doubt d = { .why = REASM_RESTART, .stage = REASM_STAGE_READER, .bytes = n,
				 .wait_ns = unread_ns, .joined = r->len > 0 };

	if (n == 0)
		return;
	d.t_mono = r->len > 0 ? r->first_mono : first;
	d.t_real = r->len > 0 ? r->first_real : rd->seen_real - (seen - first);
	r->first_read_n = 0;
	r->timeout_end = false;
	if (r->doubt != NULL)
		r->doubt(r->ctx, &d);
	append(r, data, n, seen, rd->seen_real, false);
	/* when they came no one saw, and the doubt says so for their packet: the model
	 * takes them as dated, back to back before the read; the device may still hand
	 * over some that came before it: the deadline waits for them */
	keep_last(r, n, end, seen, seen, REASM_STAGE_READER);
}

int64_t reasm_deadline(const struct reasm *r)
{
	return r->len == 0 ? INT64_MAX : last_hi(r, true) + r->gap_ns + r->char_ns + r->dev.hold_ns;
}

void reasm_expire(struct reasm *r, int64_t now_mono, int64_t held_mono)
{
	if (now_mono > r->floor)
		r->floor = now_mono;
	if (MIN(now_mono, held_mono) > r->sure)
		r->sure = MIN(now_mono, held_mono);
	if (now_mono > r->look)
		r->look = now_mono;
	if (r->len > 0 && now_mono >= reasm_deadline(r)) {
		emit(r, REASM_GAP);
		r->proven = true;
	}
	/* no byte reached the kernel before it: none began on the wire before it less the
	 * device's hold and a character */
	if (r->len == 0)
		reasm_floor(r, MAX(r->last_mono, now_mono - r->dev.hold_ns - r->char_ns));
}

void reasm_flush(struct reasm *r)
{
	if (r->len > 0)
		emit(r, REASM_FLUSH);
}

int64_t reasm_char_ns(unsigned baud, unsigned frame_bits)
{
	return baud == 0 ? 0 : ((int64_t)frame_bits * 1000000000 + baud - 1) / baud;
}

/* 3.5 characters = 7 * frame_bits / 2 bit times, rounded up to a microsecond */
int64_t reasm_auto_gap_ns(unsigned baud, unsigned frame_bits)
{
	return baud == 0 ? 0 : ((int64_t)7 * frame_bits * 1000000 + 2LL * baud - 1) / (2LL * baud) * 1000;
}
