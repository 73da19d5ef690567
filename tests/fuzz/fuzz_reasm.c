/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_reasm.c - libFuzzer target: the reassembler driven by a script of operations.
 *
 * Input: max_packet (2 bytes), gap in us (2), character time in 100 ns (1),
 * delimiter (2: a flag and the byte; flag bit 1: a device that holds bytes follows,
 * one byte: 2..15 a FIFO of that trigger, else an adapter holding up to N * 100 us;
 * the gap is then raised as delivery_gap raises it), then operations of one byte each:
 *   0: wait N us (1 byte), feed a chunk of M bytes (1 byte, then M bytes): woken, read at once
 *   1: wait N * 16 us (2 bytes), expire (an empty read)
 *   2: wait until the deadline (if it is ahead), expire: the packet in progress must end
 *   3: flush
 *   4: wait N * 16 us (2 bytes), a read woken then that ends K * 16 us later (1 byte),
 *      a chunk of M bytes (1 byte, then M bytes)
 *   5: the same, but not woken: a read at the deadline (or at stop) found the chunk
 * Invariants (abort() on violation): every packet has 1..max_packet bytes, the
 * packets concatenated are the fed bytes in order, packet times never go back
 * nor past the read, a delimiter is only ever the last byte of a packet, a packet
 * that ends by delimiter ends with it and one that ends by length has max_packet
 * bytes. The boundary rule: a read raises a doubt exactly when it cannot be
 * judged (with a packet in progress: it ended gap or more after the wake-up
 * that found the packet's last byte; without: it ended gap or more after its
 * own wake-up), a read ends the packet in progress only with a doubt that says
 * so (joined = no), and the doubt is dated at the packet its first byte is in.
 * With a device that holds bytes (reasm.h, wire time) the rule is the estimate's:
 * a read ends the packet before it only with a doubt that says so, a FIFO's
 * timeout read may end its own packet, and the deadline stays a gap and the hold
 * ahead of the read's wake-up.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reasm.h"
#include "fuzz.h"

#define REAL_OFFSET 1000000000000000000LL   /* CLOCK_REALTIME - CLOCK_MONOTONIC */

struct run {
	const uint8_t *fed;         /* every byte fed so far, in order */
	size_t nfed, nemitted;
	size_t max_len;
	int delim;
	int64_t last_t;
	int64_t now;                /* the latest seen time: no packet is dated after it */
	unsigned gaps;              /* packets ended by REASM_GAP */
	unsigned doubts;
	struct reasm_doubt last;    /* the last doubt */
	struct reasm_doubt doubt;   /* the one whose packet is not out yet */
	size_t read_off;            /* offset of the current read's first byte */
	size_t before;              /* bytes fed before the current read */
	bool ended_before;          /* the current read ended the packet fed before it */
	size_t doubt_off;           /* the doubt's read_off, until its packet is out */
};

static void on_packet(void *ctx, const struct reasm_packet *pkt)
{
	struct run *r = ctx;

	CHECK(pkt->len >= 1 && pkt->len <= r->max_len);
	CHECK(r->nemitted + pkt->len <= r->nfed);
	CHECK(memcmp(pkt->data, r->fed + r->nemitted, pkt->len) == 0);
	if (r->doubt_off != SIZE_MAX && r->doubt_off >= r->nemitted
	    && r->doubt_off < r->nemitted + pkt->len) {
		CHECK(pkt->t_mono == r->doubt.t_mono);
		CHECK(pkt->t_real == r->doubt.t_real);
		r->doubt_off = SIZE_MAX;
	}
	r->nemitted += pkt->len;
	if (pkt->end == REASM_GAP && r->nemitted == r->before)
		r->ended_before = true;
	CHECK(pkt->t_mono >= r->last_t);
	CHECK(pkt->t_mono <= r->now);
	CHECK(pkt->t_real - pkt->t_mono == REAL_OFFSET);
	r->last_t = pkt->t_mono;
	if (r->delim >= 0)
		CHECK(memchr(pkt->data, r->delim, pkt->len - 1) == NULL);
	if (pkt->end == REASM_DELIM)
		CHECK(r->delim >= 0 && pkt->data[pkt->len - 1] == (uint8_t)r->delim);
	if (pkt->end == REASM_MAX)
		CHECK(pkt->len == r->max_len);
	CHECK(pkt->end >= REASM_GAP && pkt->end <= REASM_FLUSH);
	r->gaps += pkt->end == REASM_GAP;
}

static void on_doubt(void *ctx, const struct reasm_doubt *d)
{
	struct run *r = ctx;

	CHECK(d->why >= REASM_LATE_WAKE && d->why <= REASM_HELD);
	CHECK(d->wait_ns >= 0);
	CHECK(d->t_real - d->t_mono == REAL_OFFSET);
	r->doubts++;
	r->last = *d;
	/* a doubt still waiting for its packet: this one joins that packet */
	if (r->doubt_off != SIZE_MAX) {
		CHECK(d->joined && d->t_mono == r->doubt.t_mono);
		return;
	}
	r->doubt = *d;
	r->doubt_off = r->read_off;
}

/* The next input byte, or 0 past the end. */
static unsigned next(const uint8_t **p, const uint8_t *end)
{
	return *p < end ? *(*p)++ : 0;
}

static unsigned next16(const uint8_t **p, const uint8_t *end)
{
	unsigned lo = next(p, end);

	return lo | next(p, end) << 8;
}

/* One read of n bytes at p, woken or not, seen at run->now and ended at end; checks
 * the boundary rule against the reassembler's state before it. */
static void one_read(struct run *run, struct reasm *r, const uint8_t *p, size_t n, bool woken,
		     int64_t end)
{
	struct reasm_read rd = { .woken = woken, .seen_mono = woken ? run->now : end,
				 .seen_real = (woken ? run->now : end) + REAL_OFFSET,
				 .end_mono = end };
	bool in_progress = r->len > 0, held = r->dev.hold_ns > 0;
	int64_t ref = in_progress ? r->last_mono : rd.seen_mono;
	unsigned gaps = run->gaps, doubts = run->doubts;
	size_t before = run->nemitted + r->len;     /* bytes fed before this read */
	bool doubt;

	memcpy((uint8_t *)run->fed + run->nfed, p, n);
	run->read_off = run->nfed;
	run->nfed += n;
	if (end > run->now)
		run->now = end;
	run->ended_before = false;
	run->before = before;
	reasm_read(r, p, n, &rd);
	doubt = run->doubts != doubts;
	CHECK(run->doubts - doubts <= 1);
	if (!held) {
		CHECK(doubt == (n > 0 && end - ref >= r->gap_ns));
		/* a read ends the packet in progress only with a doubt that says so */
		CHECK(run->gaps - gaps <= 1);
		if (run->gaps != gaps)
			CHECK(doubt && !run->last.joined && in_progress);
		if (doubt && in_progress && !run->last.joined)
			CHECK(run->gaps == gaps + 1);
		/* bytes move the deadline on, past the end of the read */
		CHECK(n == 0 || r->len == 0 || reasm_deadline(r) >= end + r->gap_ns);
		return;
	}
	/* the packet before the read ends by it only with a doubt that says so; a
	 * FIFO's timeout may end the read's own packet too */
	CHECK(run->gaps - gaps <= 2);
	if (run->ended_before)
		CHECK(doubt && !run->last.joined && in_progress);
	if (doubt && in_progress && !run->last.joined)
		CHECK(run->ended_before);
	/* the deadline: at least a gap and the hold past the wake-up's estimate */
	CHECK(n == 0 || r->len == 0 || reasm_deadline(r) >= rd.seen_mono + r->gap_ns);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct run run = { .now = 1000000000, .last_t = INT64_MIN, .doubt_off = SIZE_MAX };
	struct reasm r;
	uint8_t *buf, *fed;
	int64_t gap_ns, char_ns;
	unsigned flag;

	if (size < 7)
		return 0;
	run.max_len = 1 + next16(&p, end) % 65535;
	gap_ns = (int64_t)(1 + next16(&p, end)) * 1000;
	char_ns = (int64_t)next(&p, end) * 100;
	flag = next(&p, end);
	run.delim = (int)next(&p, end);
	if ((flag & 1) == 0)
		run.delim = -1;
	buf = malloc(run.max_len);
	fed = malloc(size);
	if (buf == NULL || fed == NULL)
		abort();
	run.fed = fed;
	reasm_init(&r, buf, run.max_len, gap_ns, char_ns, run.delim, on_packet, &run);
	if (flag & 2) {
		/* a device, and the gap raised as delivery_gap raises it */
		unsigned dv = next(&p, end);
		struct reasm_dev dev = { 0 };

		if (dv % 16 >= 2 && char_ns > 0) {
			dev.trigger = dv % 16;
			dev.timeout_ns = 4 * char_ns;
			dev.hold_ns = dev.trigger * dev.timeout_ns;
			dev.blur_ns = char_ns / 2;
			if (r.gap_ns < dev.timeout_ns - char_ns)
				r.gap_ns = dev.timeout_ns - char_ns;
		} else {
			dev.hold_ns = (int64_t)(1 + dv) * 100000;
			dev.blur_ns = dev.hold_ns / 2;
			if (r.gap_ns < 4 * dev.blur_ns)
				r.gap_ns = 4 * dev.blur_ns;
		}
		reasm_set_dev(&r, &dev);
	}
	reasm_on_doubt(&r, on_doubt);
	while (p < end) {
		unsigned op = next(&p, end) % 6;
		int64_t until;
		size_t n;

		switch (op) {
		case 0:
			run.now += (int64_t)next(&p, end) * 1000;
			n = next(&p, end);
			if (n > (size_t)(end - p))
				n = (size_t)(end - p);
			one_read(&run, &r, p, n, true, run.now);
			p += n;
			break;
		case 1:
			run.now += (int64_t)next16(&p, end) * 16000;
			reasm_expire(&r, run.now);
			CHECK(r.len == 0 || reasm_deadline(&r) > run.now);
			break;
		case 2:
			if (reasm_deadline(&r) != INT64_MAX) {
				if (reasm_deadline(&r) > run.now)
					run.now = reasm_deadline(&r);
				reasm_expire(&r, run.now);
				CHECK(r.len == 0);
			}
			break;
		case 3:
			reasm_flush(&r);
			CHECK(r.len == 0);
			break;
		default:
			run.now += (int64_t)next16(&p, end) * 16000;
			until = run.now + (int64_t)next(&p, end) * 16000;
			n = next(&p, end);
			if (n > (size_t)(end - p))
				n = (size_t)(end - p);
			one_read(&run, &r, p, n, op == 4, until);
			p += n;
			break;
		}
		CHECK(run.nemitted + r.len == run.nfed);
		CHECK(run.doubt_off == SIZE_MAX || run.doubt_off >= run.nemitted);
	}
	reasm_flush(&r);
	CHECK(run.nemitted == run.nfed);
	CHECK(run.doubt_off == SIZE_MAX);
	free(fed);
	free(buf);
	return 0;
}
