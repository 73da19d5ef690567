/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reasm.c - packet reassembly by gap, delimiter and maximum length. */
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

/* A silence longer than the gap before a byte dated t_mono ends the packet in progress. */
static bool gap_before(const struct reasm *r, int64_t t_mono)
{
	return r->len > 0 && t_mono - r->last_mono >= r->gap_ns;
}

void reasm_begin(struct reasm *r, size_t n, int64_t now_mono, int64_t now_real,
		 int64_t *t_mono, int64_t *t_real)
{
	int64_t first = byte_mono(r, n, 0, now_mono);

	if (gap_before(r, first))
		emit(r, REASM_GAP);
	if (r->len > 0) {
		*t_mono = r->first_mono;
		*t_real = r->first_real;
	} else {
		*t_mono = first;
		*t_real = now_real - (now_mono - first);
	}
}

void reasm_floor(struct reasm *r, int64_t t_mono)
{
	r->last_mono = t_mono;
	r->have_last = true;
}

void reasm_feed(struct reasm *r, const uint8_t *data, size_t n,
		int64_t now_mono, int64_t now_real)
{
	for (size_t i = 0; i < n; i++) {
		int64_t t_mono = byte_mono(r, n, i, now_mono);
		int64_t back = now_mono - t_mono;

		/*
		 * A silence longer than the gap before this byte ends the packet in
		 * progress. Bytes of one read are back to back, so only the first byte
		 * of a read can follow a gap; the reader's ppoll() timeout normally
		 * ends the packet before, this catches a late wake-up.
		 */
		if (i == 0 && gap_before(r, t_mono))
			emit(r, REASM_GAP);
		if (r->len == 0) {
			r->first_mono = t_mono;
			r->first_real = now_real - back;
		}
		r->buf[r->len++] = data[i];
		/* the next byte starts a character later, but not after the wake-up
		 * that brought it: bytes held back (the tty worker) must not be
		 * dated in the future */
		r->last_mono = i + 1 == n || t_mono + r->char_ns > now_mono ? now_mono
									     : t_mono + r->char_ns;
		r->have_last = true;
		if (r->delim >= 0 && data[i] == (uint8_t)r->delim)
			emit(r, REASM_DELIM);
		else if (r->len == r->max_len)
			emit(r, REASM_MAX);
	}
}

int64_t reasm_deadline(const struct reasm *r)
{
	if (r->len == 0)
		return INT64_MAX;
	return r->last_mono + r->gap_ns;
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
