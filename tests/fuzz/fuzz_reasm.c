/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_reasm.c - libFuzzer target: the reassembler driven by a script of operations.
 *
 * Input: max_packet (2 bytes), gap in us (2), character time in 100 ns (1),
 * delimiter (2: a flag and the byte), then operations of one byte each:
 *   0: wait N us (1 byte), feed a chunk of M bytes (1 byte, then M bytes)
 *   1: wait N * 16 us (2 bytes), expire
 *   2: wait until the deadline (if it is ahead), expire: the packet in progress must end
 *   3: flush
 * Invariants (abort() on violation): every packet has 1..max_packet bytes, the
 * packets concatenated are the fed bytes in order, packet times never go back,
 * a delimiter is only ever the last byte of a packet, a packet that ends by
 * delimiter ends with it and one that ends by length has max_packet bytes.
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
	int64_t now;
};

static void on_packet(void *ctx, const struct reasm_packet *pkt)
{
	struct run *r = ctx;

	CHECK(pkt->len >= 1 && pkt->len <= r->max_len);
	CHECK(r->nemitted + pkt->len <= r->nfed);
	CHECK(memcmp(pkt->data, r->fed + r->nemitted, pkt->len) == 0);
	r->nemitted += pkt->len;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct run run = { .now = 1000000000, .last_t = INT64_MIN };
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
	while (p < end) {
		unsigned op = next(&p, end) % 4;
		size_t n;

		switch (op) {
		case 0:
			run.now += (int64_t)next(&p, end) * 1000;
			n = next(&p, end);
			if (n > (size_t)(end - p))
				n = (size_t)(end - p);
			memcpy(fed + run.nfed, p, n);
			run.nfed += n;
			reasm_feed(&r, p, n, run.now, run.now + REAL_OFFSET);
			p += n;
			/* bytes move the deadline on; a zero-length read leaves it */
			CHECK(n == 0 || r.len == 0 || reasm_deadline(&r) >= run.now);
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
		default:
			reasm_flush(&r);
			CHECK(r.len == 0);
			break;
		}
		CHECK(run.nemitted + r.len == run.nfed);
	}
	reasm_flush(&r);
	CHECK(run.nemitted == run.nfed);
	free(fed);
	free(buf);
	return 0;
}
