/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reasm.c - packet reassembly by gap, delimiter and maximum length; the boundary rule. */
#include <stdbool.h>
#include <stdint.h>

#include "reasm.h"

void reasm_init(struct reasm *r, uint8_t *buf, size_t max_len, int64_t gap_ns,
		int64_t char_ns, int delim, reasm_emit_fn *emit, void *ctx)
{
	*r = (struct reasm){
		.buf = buf, .max_len = max_len, .gap_ns = gap_ns, .char_ns = char_ns,
		.delim = delim, .emit = emit, .ctx = ctx,
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
	r->last_end = t_mono;
	r->have_last = true;
}

/*
 * Adds the bytes of a read to the packet in progress (or begins one), dated from
 * seen: the end of its last byte (the wake-up; with a device that holds bytes,
 * earlier by what it adds). end: from when the gap counts for the deadline.
 */
static void append(struct reasm *r, const uint8_t *data, size_t n, int64_t seen,
		   int64_t seen_real, int64_t end)
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
		r->last_end = end;
		r->have_last = true;
		if (r->delim >= 0 && data[i] == (uint8_t)r->delim)
			emit(r, REASM_DELIM);
		else if (r->len == r->max_len)
			emit(r, REASM_MAX);
	}
}

/*
 * Can the reader place these bytes? With a packet in progress, the silence
 * before them and among them is shorter than the gap for sure only if the read
 * ended before gap_ns after the wake-up that found the packet's last byte (the
 * packet's last byte may have arrived as early as that; the new ones as late as
 * the end of the read). Without one, a gap can hide among them only if the read
 * ended gap_ns or more after the wake-up that found them: they are taken to have
 * woken the reader as they arrived, which is all it can assume when idle.
 */
static bool judge(const struct reasm *r, size_t n, const struct reasm_read *rd, int64_t first,
		  int64_t end, struct reasm_doubt *d)
{
	int64_t seen = rd->seen_mono, deadline = r->last_mono + r->gap_ns;

	*d = (struct reasm_doubt){ .bytes = n };
	if (r->len == 0) {
		d->why = REASM_SLOW_READ;
		d->wait_ns = end - seen;
		return end - seen < r->gap_ns;
	}
	if (end < deadline)
		return true;
	d->why = !rd->woken ? REASM_DEADLINE_READ : seen >= deadline ? REASM_LATE_WAKE
								     : REASM_SLOW_READ;
	d->wait_ns = end - (seen < deadline ? seen : deadline);
	/*
	 * Found only after the deadline: where did they arrive? Anywhere since the
	 * packet's last byte, as far as the reader knows; taking each moment as
	 * equally likely, before the deadline (so they continue the packet) unless
	 * they were found more than a gap after it. A slow read that began before
	 * the deadline found its first byte in time: the packet goes on.
	 */
	d->joined = d->why == REASM_SLOW_READ || first - deadline < r->gap_ns;
	return false;
}

/* A read shorter than a FIFO's trigger: it came by the RX timeout. */
static bool by_timeout(const struct reasm *r, size_t n)
{
	return r->dev.trigger > 1 && n < r->dev.trigger;
}

/* A read of more than a FIFO's trigger and the one byte more its interrupt may
 * take holds two hand-overs or more: the reader woke late. */
static bool merged(const struct reasm *r, size_t n)
{
	return r->dev.trigger > 1 && n > r->dev.trigger + 1;
}

/*
 * A device that holds bytes (reasm.h): when did the last byte of a read of n
 * bytes end on the wire, as estimated? A FIFO hands over fewer bytes than its
 * trigger only after its RX timeout, the trigger's worth with the last of them;
 * other devices anywhere in their blur either way: the middle of it.
 */
static int64_t held_last(const struct reasm *r, size_t n, int64_t seen)
{
	/* hand-overs read together: the last was the trigger's or the timeout's */
	if (merged(r, n))
		return seen - r->dev.timeout_ns / 2;
	if (r->dev.trigger > 1)
		return seen - (by_timeout(r, n) ? r->dev.timeout_ns : 0);
	return seen - r->dev.blur_ns;
}

/*
 * The rule for a device that holds bytes, in wire time: the silence before the
 * read's first byte is its estimated start minus the end of the packet's last
 * byte (both estimated, each within blur_ns either way). The
 * deadline (reasm_deadline) is where an empty read proves the gap, so bytes
 * found at or after it are judged as on a pty: late. Before it, a silence that
 * is shorter than the gap by more than both blurs continues the packet; any
 * other is inferred, not seen: the bytes are placed by the estimate, with a doubt.
 */
static bool judge_held(const struct reasm *r, size_t n, const struct reasm_read *rd,
		       int64_t last, int64_t end, struct reasm_doubt *d)
{
	int64_t silence = last - (int64_t)n * r->char_ns - r->last_mono;
	int64_t deadline = reasm_deadline(r), seen = rd->seen_mono;

	*d = (struct reasm_doubt){ .bytes = n };
	d->joined = r->len > 0 && silence < r->gap_ns;
	if (r->len > 0 && end >= deadline) {
		d->why = !rd->woken ? REASM_DEADLINE_READ : seen >= deadline ? REASM_LATE_WAKE
									     : REASM_SLOW_READ;
		d->wait_ns = end - (seen < deadline ? seen : deadline);
		return false;
	}
	/* more than a FIFO's trigger and the one byte more its interrupt may take:
	 * the reader found two hand-overs, so it woke late, and a gap may hide
	 * between them */
	if (merged(r, n)) {
		d->why = REASM_LATE_WAKE;
		d->wait_ns = (int64_t)(n - r->dev.trigger) * r->char_ns;
		return false;
	}
	/* the last packet ended at a read the rule took for the FIFO's timeout, which
	 * stands for a silence of the gap at least: these bytes, dated within it,
	 * contradict it, so that boundary was not proven after all */
	if (r->len == 0 && r->timeout_end && silence + 2 * r->dev.blur_ns < r->gap_ns) {
		d->why = REASM_HELD;
		d->wait_ns = silence > 0 ? silence : 0;
		return false;
	}
	if (r->len == 0) {
		d->why = REASM_SLOW_READ;
		d->wait_ns = end - seen;
		return end - seen < r->gap_ns;
	}
	if (silence + 2 * r->dev.blur_ns < r->gap_ns)
		return true;
	d->why = REASM_HELD;
	d->wait_ns = silence > 0 ? silence : 0;
	return false;
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
	int64_t seen = rd->seen_mono, seen_real = rd->seen_real, gap_from = end;
	int64_t first;
	struct reasm_doubt d;
	bool sure, began, contradicted;

	if (n == 0)
		return;
	if (r->dev.hold_ns > 0) {
		/* dated from the last byte's estimated end; the gap counts from the
		 * latest it can have ended, and the device's hold later */
		int64_t last = held_last(r, n, seen);

		seen_real -= seen - last;
		gap_from = last + r->dev.blur_ns + r->dev.hold_ns;
		sure = judge_held(r, n, rd, last, end, &d);
		seen = last;
		first = byte_mono(r, n, 0, seen);
	} else {
		first = byte_mono(r, n, 0, seen);
		sure = judge(r, n, rd, first, end, &d);
	}
	/* this read's dates contradict the last short read's proof (judge_held): then
	 * it proves nothing itself either, should it be short too */
	contradicted = !sure && d.why == REASM_HELD && r->len == 0 && r->timeout_end;
	if (!sure)
		r->first_read_n = 0;    /* a packet with a doubt keeps the date it has */
	if (!sure) {
		if (!d.joined && r->len > 0)
			emit(r, REASM_GAP);
		if (r->len > 0) {
			d.t_mono = r->first_mono;
			d.t_real = r->first_real;
		} else {
			d.t_mono = first;
			d.t_real = seen_real - (seen - first);
		}
		if (r->doubt != NULL)
			r->doubt(r->ctx, &d);
	}
	began = r->len == 0;
	append(r, data, n, seen, seen_real, gap_from);
	if (!began && r->first_read_n > 0)
		redate(r, n, seen);
	if (began && r->len == n && r->dev.hold_ns > 0 && r->dev.trigger == 0 && sure) {
		/* an adapter's read that began a packet: dated from the middle of the
		 * hold until its next transfer may say better */
		r->first_read_n = n;
		r->first_read_seen = rd->seen_mono;
	}
	/* the FIFO's timeout fired before another byte came: a silence of more than
	 * the timeout less a character followed these bytes (unless the bytes came too
	 * soon for the last such proof: the device is not what the model says, and the
	 * next read or the deadline decides) */
	r->timeout_end = false;
	if (r->len > 0 && by_timeout(r, n) && r->gap_ns <= r->dev.timeout_ns - r->char_ns
	    && !contradicted) {
		emit(r, REASM_GAP);
		r->timeout_end = true;
	}
}

void reasm_held(struct reasm *r, const uint8_t *data, size_t n, const struct reasm_read *rd,
		int64_t unread_ns)
{
	int64_t seen = rd->seen_mono, end = rd->end_mono > seen ? rd->end_mono : seen;
	int64_t first = byte_mono(r, n, 0, seen);
	struct reasm_doubt d = { .why = REASM_RESTART, .bytes = n, .wait_ns = unread_ns,
				 .joined = r->len > 0 };

	if (n == 0)
		return;
	d.t_mono = r->len > 0 ? r->first_mono : first;
	d.t_real = r->len > 0 ? r->first_real : rd->seen_real - (seen - first);
	r->first_read_n = 0;
	r->timeout_end = false;
	if (r->doubt != NULL)
		r->doubt(r->ctx, &d);
	/* a device that holds bytes may still hand over some that came before this
	 * read: the deadline waits for them, as for any read of such a device */
	append(r, data, n, seen, rd->seen_real,
	       end + (r->dev.hold_ns > 0 ? r->dev.blur_ns + r->dev.hold_ns : 0));
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
	return r->last_end + r->gap_ns;
}

void reasm_expire(struct reasm *r, int64_t now_mono)
{
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
