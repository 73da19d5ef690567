/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_learn.c - the learner (daemon/learn.c) on the simulator's adapter models, in the rule's loop.
 *
 * The bench (tests/lib/reasm_model.c) plays a wire through an adapter on a receive
 * timeout (a transfer of xfer bytes as soon as they wait, the rest `hold` after the
 * last byte, taken by the host up to `poll` later) to a reader that feeds every read
 * to the learner and to the reassembler, as the daemon's reader does: the port starts
 * on the assumption for an adapter Linux shows no timer of (delivery.h), and the
 * model the learner shows replaces it before the next read (delivery_learned,
 * delivery_model, delivery_gap), the gap asked for kept as the wire's truth.
 * LEARN_ONLY="9600 baud, hold 2000 us, transfers of 64" runs one case; LEARN_DEBUG=1
 * prints each change of the model.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "calibrate.h"
#include "delivery.h"
#include "learn.h"
#include "reasm.h"
#include "reasm_model.h"
#include "testutil.h"

static uint64_t rng_state;

static uint64_t rng(void)
{
	return tu_rand(&rng_state);
}

/* The reader: on time within lat, its sensors' bound within slack before; the port's
 * delivery and learner, applied between packets as serial_learn.c does. */
struct reader {
	int64_t lat, slack;
	int64_t stall_every;        /* 0: none; else about one wake-up in this many stalls */
	int64_t stall_end;
	struct delivery d;
	struct learn l;
	int64_t char_ns, want_ns;
	bool gap_auto;
	bool learn;                 /* false: the assumption throughout (the rule before) */
	bool pending;               /* the learner changed the model: apply before the next read */
	unsigned changes, reads;
	unsigned sizes[65];         /* reads by their bytes, 64 at most (test_calibrate) */
	int64_t learned_at_packet;  /* wire packets begun when it was first applied, -1 none */
	size_t learned_at_byte;     /* the first byte of the read it was first applied at */
	bool *in_use;               /* by the first byte of each read: a learned model judged it */
	struct rm_run *m;
	size_t lines;
	struct learn_model first;   /* the model first applied */
	int64_t gap_now;
};

static int64_t r_wake(void *ctx, int64_t t)
{
	struct reader *rd = ctx;
	int64_t seen = t + (int64_t)(rng() % (uint64_t)(rd->lat + 1));

	if (rd->stall_every > 0 && rng() % (uint64_t)rd->stall_every == 0)
		rd->stall_end = t + 200000 + (int64_t)(rng() % 40000000);
	if (seen < rd->stall_end)
		seen = rd->stall_end + (int64_t)(rng() % (uint64_t)(rd->lat + 1));
	return seen;
}

static int64_t r_look(void *ctx, int64_t at)
{
	struct reader *rd = ctx;

	at += (int64_t)(rng() % (uint64_t)(rd->lat + 1));
	return at < rd->stall_end ? rd->stall_end : at;
}

static void r_plan(void *ctx, struct rm_plan *p)
{
	struct reader *rd = ctx;

	p->dur = 5000;
	p->drain = 1000;
	p->slack = (int64_t)(rng() % (uint64_t)(rd->slack + 1));
}

/* The port's model, as serial_learn.c applies it: before the next read. */
static void apply(struct reader *rd, struct reasm *r)
{
	struct learn_model m;
	struct reasm_dev dev;

	if (!rd->pending)
		return;
	rd->pending = false;
	if (learn_get(&rd->l, &m))
		delivery_learned(&rd->d, m.xfer, m.hold_lo_ns, m.hold_ns, m.hold_hi_ns);
	else
		delivery_learned(&rd->d, 0, 0, 0, 0);
	dev = delivery_model(&rd->d, rd->char_ns);
	reasm_set_dev(r, &dev);
	rd->gap_now = delivery_gap(&rd->d, rd->want_ns, rd->gap_auto, rd->char_ns);
	reasm_set_gap(r, rd->gap_now, rd->want_ns);
	if (rd->learned_at_packet < 0 && rd->d.learned && rd->l.state != LEARN_SIZED) {
		/* the wire's packets begun by the read it applies to (rm_play's truth) */
		size_t at = rd->m->read_first, k = 0;

		for (size_t i = 0; i <= at && i < rd->m->n; i++)
			k += rd->m->starts[i];
		rd->learned_at_packet = (int64_t)k;
		rd->learned_at_byte = at;
		rd->first = m;
	}
}

static void r_read(void *ctx, struct reasm *r, const uint8_t *data, size_t n,
		   const struct reasm_read *rd_)
{
	struct reader *rd = ctx;

	apply(rd, r);
	rd->in_use[rd->m->read_first] = rd->d.learned;
	rd->reads++;
	if (rd->learn && learn_read(&rd->l, n, rd_->from_mono != 0 ? rd_->from_mono
							     : rd_->seen_mono, rd_->seen_mono)) {
		rd->pending = true;
		rd->changes++;
		if (getenv("LEARN_DEBUG"))
			fprintf(stderr, "change %s at read %u, lines %zu, len %zu\n",
				learn_state_name(rd->l.state), rd->reads, rd->lines, r->len);
	}
	reasm_read(r, data, n, rd_);
	apply(rd, r);
}

static void r_expire(void *ctx, struct reasm *r, int64_t now, int64_t held)
{
	struct reader *rd = ctx;

	reasm_expire(r, now, held);
	apply(rd, r);
}

static void r_packet(void *ctx, const struct reasm_packet *pkt)
{
	struct reader *rd = ctx;

	(void)pkt;
	rd->lines++;
}

static const struct rm_reader reader_ops = {
	.wake = r_wake, .look = r_look, .plan = r_plan, .read = r_read, .expire = r_expire,
	.packet = r_packet,
};

/* A run's machine: the adapter, the line, the reader's port at its assumption. */
static struct rm_run *machine(struct reader *rd, const char *name, int64_t char_ns,
			      int64_t want_ns, int64_t hold_ns, unsigned xfer, int64_t poll_ns,
			      size_t cap)
{
	struct rm_machine mc = {
		.name = name, .char_ns = char_ns, .dev = RM_ADAPTER, .hold_ns = hold_ns,
		.xfer = xfer, .poll_ns = poll_ns, .want_ns = want_ns, .max_len = 65535,
		.delim = -1, .sensors = true, .on_time_ns = -1, .report = true,
	};
	struct reasm_dev dev;

	memset(rd, 0, sizeof(*rd));
	rd->learn = true;
	rd->lat = 20000;
	rd->slack = 50000;
	rd->char_ns = char_ns;
	rd->want_ns = want_ns;
	rd->gap_auto = true;
	rd->learned_at_packet = -1;
	/* what the daemon finds: an adapter whose timer Linux does not show */
	rd->d = (struct delivery){ .kind = DELIVERY_USB, .latency_ms = -1 };
	delivery_learned(&rd->d, 0, 0, 0, 0);
	assert_true(delivery_learns(&rd->d));
	learn_init(&rd->l, char_ns, (int64_t)rd->d.hold_us * 1000);
	dev = delivery_model(&rd->d, char_ns);
	/* the bench starts the reassembler at the machine's gap and device: the assumption's */
	mc.gap_ns = delivery_gap(&rd->d, want_ns, true, char_ns);
	rd->gap_now = mc.gap_ns;
	(void)dev;
	rd->m = rm_new(&mc, cap);
	rd->in_use = calloc(cap + 1, sizeof(*rd->in_use));
	assert_non_null(rd->in_use);
	return rd->m;
}

/* rm_play's wrong boundaries without a mark at reads a learned model judged (in_use),
 * or at the others. */
static unsigned wrong_at(const struct rm_run *m, const bool *in_use, bool learned)
{
	unsigned wrong = 0;

	for (size_t i = 0; i < m->n; i++) {
		size_t j = i;

		while (j > 0 && !m->read_start[j])
			j--;
		wrong += m->unmarked[i] && in_use[j] == learned;
	}
	return wrong;
}

/* Plays m with the port's assumption as its first model (rm_play starts from
 * rm_dev_model: the first read puts the assumption in). */
static void play(struct rm_run *m, struct reader *rd, struct rm_result *res)
{
	rd->pending = true;         /* the assumption, at the first read */
	assert_true(rm_play(m, &reader_ops, rd, res));
	assert_int_equal(m->emitted, m->n);
}

/*
 * Learned within 10 % (or 0.2 ms) of the model's hold (the timeout a quiet line
 * proves; the latest delay seen is printed, between the hold and twice it: a silence
 * shorter than the hold inside a transfer counts to it), and its transfer size, after
 * how many packets: holds of 0.5 to 16 ms, transfers of 8 to 64 bytes, at 9600 and
 * 115200 baud, packets of 1 to 3 transfers streamed at the baud, silences of 1 to 10
 * gaps between them. A hold under a character shows as every byte alone, held less
 * than a character: the learner takes a character and a half. The rule in the loop:
 * no wrong boundary without a mark at a read a learned model judged, and no more at
 * the others than the assumption alone gives on the same wire (the rule as it was:
 * what the learner must never make worse).
 */
static void test_converges(void **state)
{
	static const int64_t holds[] = { 500000, 1000000, 2000000, 4000000, 8000000, 16000000 };
	static const unsigned xfers[] = { 8, 16, 32, 64 };
	static const unsigned bauds[] = { 9600, 115200 };
	uint64_t seed = tu_seed("test_learn");
	unsigned worst = 0, assumed_wrong = 0, before_wrong = 0;

	(void)state;
	for (size_t b = 0; b < 2; b++)
	for (size_t h = 0; h < sizeof(holds) / sizeof(holds[0]); h++)
	for (size_t x = 0; x < sizeof(xfers) / sizeof(xfers[0]); x++) {
		int64_t c = reasm_char_ns(bauds[b], 10), want = reasm_auto_gap_ns(bauds[b], 10);
		int64_t hold = holds[h], now = 1000000000, tol;
		unsigned xfer = xfers[x], after, before, alone;
		char name[96];
		struct reader rd, ra;
		struct rm_run *m, *ma;
		struct rm_result res, resa;
		unsigned packets = 0;

		snprintf(name, sizeof(name), "%u baud, hold %" PRId64 " us, transfers of %u",
			 bauds[b], hold / 1000, xfer);
		if (getenv("LEARN_ONLY") && strcmp(getenv("LEARN_ONLY"), name) != 0)
			continue;
		rng_state = seed + b * 100 + h * 10 + x;
		m = machine(&rd, name, c, want, hold, xfer, 0, 20000);
		ma = machine(&ra, name, c, want, hold, xfer, 0, 20000);
		assert_non_null(m);
		assert_non_null(ma);
		ra.learn = false;
		while (m->n + 3 * xfer < m->cap && packets < 300) {
			size_t len = 1 + rng() % (3 * xfer);

			now += want + (int64_t)(rng() % (uint64_t)(10 * want + hold));
			for (size_t i = 0; i < len; i++) {
				now += c;
				assert_true(rm_byte(m, now, (uint8_t)i));
				assert_true(rm_byte(ma, now, (uint8_t)i));
			}
			packets++;
		}
		rng_state = seed + 7 * (b * 100 + h * 10 + x);
		play(m, &rd, &res);
		rng_state = seed + 7 * (b * 100 + h * 10 + x);
		play(ma, &ra, &resa);
		if (rd.learned_at_packet < 0)
			fail_msg("seed %" PRIu64 ": %s: not learned in %u packets (%" PRIu64
				 " samples, transfer %u)", seed, name, packets, rd.l.samples, rd.l.xfer);
		after = wrong_at(m, rd.in_use, true);
		before = wrong_at(m, rd.in_use, false);
		assert_int_equal(after + before, res.wrong);
		alone = resa.wrong;
		if (after > 0 || before > alone)
			fail_msg("seed %" PRIu64 ": %s: wrong boundaries without a mark: %u "
				 "learned, %u on the assumption (the assumption alone: %u)", seed,
				 name, after, before, alone);
		tol = hold / 10 > 200000 ? hold / 10 : 200000;
		if (hold < c && (rd.first.xfer != 1 || rd.first.hold_hi_ns < hold
				 || rd.first.hold_hi_ns > c + c / 2 + 100000))
			fail_msg("seed %" PRIu64 ": %s: a hold under a character learned as transfers "
				 "of %u, hold up to %" PRId64 " us", seed, name, rd.first.xfer,
				 rd.first.hold_hi_ns / 1000);
		else if (hold >= c && (rd.first.xfer != xfer || rd.first.hold_ns < hold - tol
				       || rd.first.hold_ns > hold + tol
				       || rd.first.hold_lo_ns > hold || rd.first.hold_lo_ns < hold - tol
				       || rd.first.hold_hi_ns < hold
				       || rd.first.hold_hi_ns > 2 * hold + LEARN_SPREAD_NS))
			fail_msg("seed %" PRIu64 ": %s: learned transfers of %u, hold %" PRId64 " us (%"
				 PRId64 "-%" PRId64 ")", seed, name, rd.first.xfer,
				 rd.first.hold_ns / 1000, rd.first.hold_lo_ns / 1000,
				 rd.first.hold_hi_ns / 1000);
		print_message("#   %u changes: %s at the end\n", rd.changes, learn_state_name(rd.l.state));
		print_message("# %-40s learned after %3" PRId64 " packets: transfers of %u, hold "
			      "%" PRId64 " us (%" PRId64 "-%" PRId64 ", gap %" PRId64 " us); unmarked wrong "
			      "boundaries on the assumption %u (the assumption alone %u)\n", name,
			      rd.learned_at_packet, rd.first.xfer, rd.first.hold_ns / 1000,
			      rd.first.hold_lo_ns / 1000, rd.first.hold_hi_ns / 1000, rd.gap_now / 1000,
			      before, alone);
		if ((unsigned)rd.learned_at_packet > worst)
			worst = (unsigned)rd.learned_at_packet;
		assumed_wrong += alone;
		before_wrong += before;
		free(rd.in_use);
		free(ra.in_use);
		rm_free(m);
		rm_free(ma);
	}
	print_message("# every model learned after %u packets at most; unmarked wrong boundaries "
		      "before it %u, the assumption alone %u\n", worst, before_wrong, assumed_wrong);
}

/* What became of each frame (a wire packet, by the gap asked for) from frame `first` on. */
struct frames {
	unsigned frames, one_line, joined_marked, joined_unmarked, split_marked, split_unmarked;
};

static void count_frames(const struct rm_run *m, size_t from_byte, struct frames *f)
{
	memset(f, 0, sizeof(*f));
	for (size_t i = 0, l = 0; i < m->n;) {
		size_t end = i + 1;
		bool split = false, split_mark = true, joined;

		while (end < m->n && !m->starts[end])
			end++;
		if (m->line[i])
			l = i;
		for (size_t k = i + 1; k < end; k++) {
			size_t j = k;

			if (!m->line[k])
				continue;
			while (j > 0 && !m->read_start[j])
				j--;
			split = true;
			split_mark = split_mark && (m->doubted[j] || m->doubted[k]);
		}
		joined = end < m->n && !m->line[end];
		if (i >= from_byte) {
			size_t lj = end - 1;   /* the line the next frame joined */

			while (lj > 0 && !m->line[lj])
				lj--;
			f->frames++;
			f->one_line += !split && !joined && m->line[i];
			if (joined) {
				size_t j = end;

				while (j > 0 && !m->read_start[j])
					j--;
				if (m->line_doubted[lj] || m->doubted[j])
					f->joined_marked++;
				else
					f->joined_unmarked++;
			}
			if (split && split_mark)
				f->split_marked++;
			else if (split)
				f->split_unmarked++;
		}
		(void)l;
		i = end;
	}
}

/*
 * Modbus RTU at 9600 baud 8E1 through adapters that hold 1, 2, 4 and 16 ms (transfers
 * of 32 bytes, a CH340's), the daemon's reader learning them: read holding registers,
 * a request of 8 bytes, its response of 7 to 125, every frame 3.5 characters (the
 * automatic gap, 4011 us: a silence the rule cannot tell from one a nanosecond
 * shorter, so only a doubt's placement splits them) or 3.5 to 4.5 after the one
 * before. Each frame one line where the hold
 * allows, marked where it does not, and never joined without a mark: no frame joined
 * to the next or cut inside without an EV late-delivery at it (case=hidden when the
 * hold makes the port resolve a longer gap), wherever the traffic's model judged (before
 * it, the assumption's own, printed). A line that never pauses for 16 ms shows that
 * adapter's transfer size but never its timeout: it stays sized (learn.h).
 */
static void test_modbus(void **state)
{
	static const int64_t holds[] = { 1000000, 2000000, 4000000, 16000000 };
	uint64_t seed = tu_seed("test_learn");
	const int64_t c = reasm_char_ns(9600, 11), want = reasm_auto_gap_ns(9600, 11);

	(void)state;
	for (size_t h = 0; h < 2 * sizeof(holds) / sizeof(holds[0]); h++) {
		bool exact = h % 2 == 0;
		int64_t now = 1000000000;
		char name[96];
		struct reader rd;
		struct rm_run *m;
		struct rm_result res;
		struct frames all, learned;

		snprintf(name, sizeof(name), "modbus 9600 8E1, hold %" PRId64 " ms/32, frames %s",
			 holds[h / 2] / 1000000, exact ? "3.5 characters apart"
			 : "3.5 to 4.5 characters apart");
		rng_state = seed + h;
		m = machine(&rd, name, c, want, holds[h / 2], 32, 0, 40000);
		assert_non_null(m);
		while (m->n + 140 < m->cap) {
			size_t len[2] = { 8, 5 + 2 * (1 + rng() % 60) };

			for (int f = 0; f < 2; f++) {
				/* 3.5 characters of silence, as the daemon rounds it; or at least
				 * that, up to a character more */
				now += want + (exact ? 0 : (int64_t)(rng() % (uint64_t)c));
				for (size_t i = 0; i < len[f]; i++) {
					now += c;
					assert_true(rm_byte(m, now, (uint8_t)i));
				}
			}
		}
		play(m, &rd, &res);
		count_frames(m, 0, &all);
		count_frames(m, rd.learned_at_byte, &learned);
		struct learn_model fin = { 0 };

		(void)learn_get(&rd.l, &fin);
		print_message("#   at the end %s: transfers of %u, hold %" PRId64 "-%" PRId64 " us\n",
			      learn_state_name(rd.l.state), fin.xfer, fin.hold_lo_ns / 1000,
			      fin.hold_hi_ns / 1000);
		print_message("# %s: learned after %" PRId64 " frames (transfers of %u, hold %" PRId64
			      "-%" PRId64 " us, gap %" PRId64 " us); of %u frames: %u one line each, "
			      "joined to the next marked %u, unmarked %u, cut marked %u, unmarked "
			      "%u; once learned, of %u: %u one line, joined marked %u, cut marked "
			      "%u\n", name, rd.learned_at_packet, rd.first.xfer,
			      rd.first.hold_lo_ns / 1000, rd.first.hold_hi_ns / 1000,
			      rd.gap_now / 1000, all.frames, all.one_line, all.joined_marked,
			      all.joined_unmarked, all.split_marked, all.split_unmarked,
			      learned.frames, learned.one_line, learned.joined_marked,
			      learned.split_marked);
		/* a line that never pauses for the hold shows no timeout: only the size */
		print_message("#   wrong boundaries without a mark: %u on the assumption, before "
			      "the traffic showed it wrong\n", wrong_at(m, rd.in_use, false));
		if ((holds[h / 2] < 8000000 ? rd.learned_at_packet < 0 : rd.l.state != LEARN_SIZED)
		    || wrong_at(m, rd.in_use, true) > 0)
			fail_msg("seed %" PRIu64 ": %s: learned at %" PRId64 ", %u wrong boundaries "
				 "without a mark where the model shown judged", seed, name,
				 rd.learned_at_packet, wrong_at(m, rd.in_use, true));
		free(rd.in_use);
		rm_free(m);
	}
}

/* A reader that only feeds the learner (calibrate's: no reassembler of its own). */
static void c_read(void *ctx, struct reasm *r, const uint8_t *data, size_t n,
		   const struct reasm_read *rd_)
{
	struct reader *rd = ctx;

	(void)learn_read(&rd->l, n, rd_->seen_mono, rd_->seen_mono);
	rd->reads++;
	rd->sizes[n < 64 ? n : 64]++;
	reasm_read(r, data, n, rd_);
}

/*
 * calibrate_judge on the bench's devices, fed as --calibrate feeds it (bursts of 1 to
 * 190 bytes, 100 ms apart, each read timestamped at its wake-up): an adapter on a
 * receive timeout gives usb:HOLD/SIZE/POLL with its hold and size; a 16550A at trigger
 * 8 or 14, fifo:8 or fifo:14; at trigger 1, direct; both also when the reader stalls now
 * and then (QEMU under TCG: the pairs' times then prove nothing, the level and the
 * reads' sizes do); FTDI's timer (transfers of every size) no line.
 */
static void test_calibrate(void **state)
{
	static const struct {
		const char *name;
		enum rm_dev dev;
		unsigned trigger, xfer;
		int64_t hold;
		int kind;               /* what the kernel shows: DELIVERY_FIFO or _USB */
		unsigned baud;
		const char *want;       /* the line's start; NULL: none */
		int64_t stall_every;    /* the reader stalled 0.2-40 ms about one wake-up in so
					 * many (QEMU under TCG); 0: never */
	} cases[] = {
		{ "adapter 2 ms/32 at 9600", RM_ADAPTER, 0, 32, 2000000, DELIVERY_USB, 9600, "usb:1.9", 0 },
		{ "adapter 0.5 ms/64 at 115200", RM_ADAPTER, 0, 64, 500000, DELIVERY_USB, 115200,
		  "usb:0.4", 0 },
		{ "adapter 16 ms/62 at 115200", RM_ADAPTER, 0, 62, 16000000, DELIVERY_USB, 115200,
		  "usb:15.9", 0 },
		{ "16550A at trigger 8, 9600", RM_FIFO, 8, 0, 0, DELIVERY_FIFO, 9600, "fifo:8", 0 },
		{ "16550A at trigger 14, 115200", RM_FIFO, 14, 0, 0, DELIVERY_FIFO, 115200, "fifo:14", 0 },
		{ "16550A at trigger 1, 9600", RM_FIFO, 1, 0, 0, DELIVERY_FIFO, 9600, "direct", 0 },
		{ "16550A at trigger 1, 9600, stalls", RM_FIFO, 1, 0, 0, DELIVERY_FIFO, 9600,
		  "direct", 12 },
		{ "16550A at trigger 8, 9600, stalls", RM_FIFO, 8, 0, 0, DELIVERY_FIFO, 9600,
		  "fifo:8", 12 },
		{ "FTDI, latency timer 1 ms, 115200", RM_USB, 0, 0, 1000000, DELIVERY_USB, 115200,
		  NULL, 0 },
	};
	static const struct rm_reader ops = { .wake = r_wake, .look = r_look, .plan = r_plan,
					      .read = c_read };
	uint64_t seed = tu_seed("test_learn");

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t c = reasm_char_ns(cases[i].baud, 10), now = 1000000000;
		struct rm_machine mc = {
			.name = cases[i].name, .char_ns = c, .gap_ns = 100 * c, .dev = cases[i].dev,
			.trigger = cases[i].trigger, .xfer = cases[i].xfer,
			.hold_ns = cases[i].hold, .latency_ns = cases[i].hold, .max_len = 65535,
			.delim = -1, .on_time_ns = -1,
		};
		struct delivery found = { .kind = cases[i].kind, .latency_ms = -1,
					  .trigger = cases[i].trigger };
		struct calibrate_verdict v;
		struct reader rd = { .lat = 20000, .stall_every = cases[i].stall_every };
		struct rm_run *m = rm_new(&mc, 10000);
		struct rm_result res;
		char text[64];

		assert_non_null(m);
		rng_state = seed + i;
		learn_init(&rd.l, c, 16000000);
		for (unsigned b = 0; b < 40; b++) {
			size_t len = 1 + (b * 53 + 17) % 190;

			now += 100000000;
			for (size_t k = 0; k < len; k++) {
				now += c;
				assert_true(rm_byte(m, now, (uint8_t)k));
			}
		}
		assert_true(rm_play(m, &ops, &rd, &res));
		calibrate_judge(&rd.l, &found, c, rd.sizes[cases[i].trigger > 0 ? cases[i].trigger : 1],
				rd.reads, &v);
		delivery_conf_text(&v.dc, text, sizeof(text));
		print_message("# %-34s %s: %s\n", cases[i].name, v.shown ? text : "no line", v.why);
		if (cases[i].want == NULL ? v.shown
		    : !v.shown || strncmp(text, cases[i].want, strlen(cases[i].want)) != 0)
			fail_msg("%s: %s, want %s", cases[i].name, v.shown ? text : "no line",
				 cases[i].want ? cases[i].want : "none");
		rm_free(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_converges),
		cmocka_unit_test(test_modbus),
		cmocka_unit_test(test_calibrate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
