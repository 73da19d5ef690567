/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_reasm.c - unit tests of the packet reassembler (daemon/reasm.c). */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "reasm.h"
#include "reasm_model.h"
#include "testutil.h"

/* CLOCK_REALTIME is fed as CLOCK_MONOTONIC + REAL_OFFSET, so a packet's t_real
 * must be its t_mono + REAL_OFFSET: both are shifted back by the same amount. */
#define REAL_OFFSET RM_REAL_OFFSET
#define NONE (-1)

/* reasm_read of bytes that woke the reader at (now_mono, now_real) and were read at once. */
static void reasm_feed(struct reasm *r, const uint8_t *data, size_t n, int64_t now_mono,
		       int64_t now_real)
{
	struct reasm_read rd = { .woken = true, .seen_mono = now_mono, .seen_real = now_real,
				 .end_mono = now_mono };

	reasm_read(r, data, n, &rd);
}

/* ---- a sink that keeps every emitted packet ---- */

struct got {
	size_t off, len;        /* into sink.bytes */
	int64_t t_mono, t_real;
	enum reasm_end end;
};

struct sink {
	uint8_t *bytes;
	size_t nbytes, bytes_cap;
	struct got *pkts;
	size_t n, cap;
};

static void sink_emit(void *ctx, const struct reasm_packet *pkt)
{
	struct sink *s = ctx;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->pkts = realloc(s->pkts, s->cap * sizeof(*s->pkts));
		assert_non_null(s->pkts);
	}
	while (s->nbytes + pkt->len > s->bytes_cap) {
		s->bytes_cap = s->bytes_cap ? 2 * s->bytes_cap : 256;
		s->bytes = realloc(s->bytes, s->bytes_cap);
		assert_non_null(s->bytes);
	}
	memcpy(s->bytes + s->nbytes, pkt->data, pkt->len);
	s->pkts[s->n++] = (struct got){ .off = s->nbytes, .len = pkt->len,
		.t_mono = pkt->t_mono, .t_real = pkt->t_real, .end = pkt->end };
	s->nbytes += pkt->len;
}

static void sink_free(struct sink *s)
{
	free(s->bytes);
	free(s->pkts);
	memset(s, 0, sizeof(*s));
}

static const char *end_name(enum reasm_end e)
{
	switch (e) {
	case REASM_GAP: return "GAP";
	case REASM_DELIM: return "DELIM";
	case REASM_MAX: return "MAX";
	case REASM_FLUSH: return "FLUSH";
	}
	return "?";
}

/* ---- scripted cases: feeds, expiries and flushes, then the packets they give ---- */

enum op { OP_END, OP_FEED, OP_EXPIRE, OP_FLUSH };

struct step {
	enum op op;
	const char *data;       /* OP_FEED; NULL with n == 0 is allowed */
	size_t n;
	int64_t t;              /* OP_FEED: wake-up (mono); OP_EXPIRE: now */
};

struct want {
	const char *data;
	size_t n;
	enum reasm_end end;     /* 0 ends the list */
	int64_t t_mono;
};

struct script_case {
	const char *name;
	size_t max_len;
	int64_t gap_ns, char_ns;
	int delim;
	struct step steps[8];
	struct want want[6];
	const char *pending;    /* bytes still in the reassembler at the end */
	size_t npending;
	int64_t deadline;       /* reasm_deadline() at the end */
};

/* string literals may hold \0: their length is sizeof - 1 */
#define FEED(s, t) { OP_FEED, (s), sizeof(s) - 1, (t) }
#define FEED0(t) { OP_FEED, NULL, 0, (t) }
#define EXPIRE(t) { OP_EXPIRE, NULL, 0, (t) }
#define FLUSH { OP_FLUSH, NULL, 0, 0 }
#define PKT(s, e, t) { (s), sizeof(s) - 1, (e), (t) }
#define PENDING(s) .pending = (s), .npending = sizeof(s) - 1

static const struct script_case script_cases[] = {
	/* fragment boundaries: arrival gaps below gap_ns keep one packet */
	{ "fragments within the gap stay one packet", 64, 1000, 0, NONE,
	  { FEED("ab", 0), FEED("cd", 500), FEED("ef", 1400) }, { { 0 } },
	  PENDING("abcdef"), .deadline = 2400 },
	{ "one byte per read within the gap", 64, 1000, 0, NONE,
	  { FEED("a", 0), FEED("b", 999), FEED("c", 1998), FEED("d", 2997) }, { { 0 } },
	  PENDING("abcd"), .deadline = 3997 },
	{ "back-dating never dates a byte before the previous one", 64, 1000, 100, 'a',
	  { FEED("a", 1000), FEED("bc", 1050), FLUSH },
	  { PKT("a", REASM_DELIM, 900), PKT("bc", REASM_FLUSH, 1000) }, PENDING(""),
	  .deadline = INT64_MAX },
	/* found by fuzz_reasm: "c" was dated 1100, after the read at 1010 */
	{ "a byte held back is never dated after the read that brought it", 64, 1000, 100, 'b',
	  { FEED("a", 1000), FEED("bcd", 1010), FLUSH },
	  { PKT("ab", REASM_DELIM, 900), PKT("cd", REASM_FLUSH, 1010) }, PENDING(""),
	  .deadline = INT64_MAX },
	{ "a read gap_ns - 1 after the last byte continues the packet", 64, 1000, 0, NONE,
	  { FEED("ab", 0), FEED("cd", 999) }, { { 0 } },
	  PENDING("abcd"), .deadline = 1999 },
	/* a wake-up at or after the deadline saw no silence: it cannot tell (rule_cases) */
	{ "a read woken exactly at the deadline continues the packet", 64, 1000, 0,
	  NONE, { FEED("ab", 0), FEED("cd", 1000) }, { { 0 } }, PENDING("abcd"),
	  .deadline = 2000 },
	{ "fragmented packet dated by its first read", 64, 1000, 0, NONE,
	  { FEED("ab", 100), FEED("cd", 700), FLUSH },
	  { PKT("abcd", REASM_FLUSH, 100) }, PENDING(""), .deadline = INT64_MAX },
	/* reads found after the deadline: new packets only more than a gap after it */
	{ "a read woken gap_ns + 1 after the last byte continues the packet", 64, 1000, 0, NONE,
	  { FEED("ab", 0), FEED("cd", 1001) }, { { 0 } }, PENDING("abcd"), .deadline = 2001 },
	{ "a read woken 2 * gap_ns after the last byte begins a packet", 64, 1000, 0, NONE,
	  { FEED("ab", 0), FEED("cd", 2000) },
	  { PKT("ab", REASM_GAP, 0) }, PENDING("cd"), .deadline = 3000 },
	{ "the deadline counts from the last fragment, not the first", 64, 1000, 0, NONE,
	  { FEED("ab", 0), FEED("cd", 900), FEED("ef", 2500) }, { { 0 } },
	  PENDING("abcdef"), .deadline = 3500 },
	/* the reader looks at each deadline (an empty read): a reader that did not, and
	 * woke for "d" 4 ms after the deadline, cannot tell when "d" came, nor so
	 * whether "e" half a gap after its wake-up follows a silence */
	{ "several gaps give several packets", 64, 1000, 0, NONE,
	  { FEED("a", 0), EXPIRE(1000), FEED("bc", 5000), EXPIRE(6000), FEED("d", 10000),
	    FEED("e", 10500) },
	  { PKT("a", REASM_GAP, 0), PKT("bc", REASM_GAP, 5000) },
	  PENDING("de"), .deadline = 11500 },
	{ "with char_ns the gap is measured to the start of the first new byte", 64, 1000,
	  100, NONE,
	  /* "ab" ends at 1000; "cd" at 2150 started at 1950: 950 of silence */
	  { FEED("ab", 1000), FEED("cd", 2150) }, { { 0 } },
	  PENDING("abcd"), .deadline = 3250 },
	{ "with char_ns a packet begins when its first byte is a gap past the deadline", 64,
	  1000, 100, NONE,
	  /* "cd" at 3250 started at 3050: 1050 past the deadline 2000 */
	  { FEED("ab", 1000), FEED("cd", 3250), FLUSH },
	  { PKT("ab", REASM_GAP, 800), PKT("cd", REASM_FLUSH, 3050) },
	  PENDING(""), .deadline = INT64_MAX },
	/* reasm_deadline / reasm_expire */
	{ "no deadline when nothing is pending", 64, 1000, 0, NONE,
	  { EXPIRE(0), EXPIRE(INT64_MAX - 1) }, { { 0 } }, PENDING(""), .deadline = INT64_MAX },
	{ "expire before the deadline does nothing", 64, 1000, 0, NONE,
	  { FEED("ab", 0), EXPIRE(500), EXPIRE(999) }, { { 0 } },
	  PENDING("ab"), .deadline = 1000 },
	{ "expire at the deadline emits GAP", 64, 1000, 0, NONE,
	  { FEED("ab", 0), EXPIRE(999), EXPIRE(1000) },
	  { PKT("ab", REASM_GAP, 0) }, PENDING(""), .deadline = INT64_MAX },
	{ "expire after the deadline emits GAP once", 64, 1000, 0, NONE,
	  { FEED("ab", 0), EXPIRE(50000), EXPIRE(60000) },
	  { PKT("ab", REASM_GAP, 0) }, PENDING(""), .deadline = INT64_MAX },
	{ "the deadline moves with each fragment", 64, 1000, 0, NONE,
	  { FEED("ab", 0), FEED("c", 700), EXPIRE(1000), EXPIRE(1699), EXPIRE(1700) },
	  { PKT("abc", REASM_GAP, 0) }, PENDING(""), .deadline = INT64_MAX },
	/* an empty read proves that no byte had ended on the wire: one that began a
	 * character before it may have */
	{ "with char_ns the deadline is the end of the last read plus gap and a character", 64,
	  1000, 100, NONE,
	  { FEED("abc", 1000), EXPIRE(2099) }, { { 0 } }, PENDING("abc"), .deadline = 2100 },
	{ "a new packet after expire starts a new deadline", 64, 1000, 0, NONE,
	  { FEED("ab", 0), EXPIRE(1000), FEED("cd", 1200) },
	  { PKT("ab", REASM_GAP, 0) }, PENDING("cd"), .deadline = 2200 },
	/* delimiters */
	{ "the delimiter ends the packet and stays in it", 64, 1000, 0, '\n',
	  { FEED("ab\ncd", 0) },
	  { PKT("ab\n", REASM_DELIM, 0) }, PENDING("cd"), .deadline = 1000 },
	{ "several delimiters in one read", 64, 1000, 0, '\n',
	  { FEED("a\nbc\n\nd", 0) },
	  { PKT("a\n", REASM_DELIM, 0), PKT("bc\n", REASM_DELIM, 0), PKT("\n", REASM_DELIM, 0) },
	  PENDING("d"), .deadline = 1000 },
	{ "delimiter as first byte", 64, 1000, 0, '$',
	  { FEED("$GP", 0) },
	  { PKT("$", REASM_DELIM, 0) }, PENDING("GP"), .deadline = 1000 },
	{ "delimiter as last byte leaves nothing pending", 64, 1000, 0, '\n',
	  { FEED("ab\n", 0) },
	  { PKT("ab\n", REASM_DELIM, 0) }, PENDING(""), .deadline = INT64_MAX },
	{ "delimiter 0x00", 64, 1000, 0, 0x00,
	  { FEED("a\0bc\0", 0) },
	  { PKT("a\0", REASM_DELIM, 0), PKT("bc\0", REASM_DELIM, 0) },
	  PENDING(""), .deadline = INT64_MAX },
	{ "delimiter 0xff", 64, 1000, 0, 0xff,
	  { FEED("\x01\xff\x02", 0) },
	  { PKT("\x01\xff", REASM_DELIM, 0) }, PENDING("\x02"), .deadline = 1000 },
	{ "delimiter in a later fragment", 64, 1000, 0, '\n',
	  { FEED("ab", 0), FEED("c\nd", 300) },
	  { PKT("abc\n", REASM_DELIM, 0) }, PENDING("d"), .deadline = 1300 },
	{ "without a delimiter a newline is data", 64, 1000, 0, NONE,
	  { FEED("a\nb\n", 0) }, { { 0 } }, PENDING("a\nb\n"), .deadline = 1000 },
	{ "delimiter at max_len ends as DELIM", 3, 1000, 0, '\n',
	  { FEED("ab\nc", 0) },
	  { PKT("ab\n", REASM_DELIM, 0) }, PENDING("c"), .deadline = 1000 },
	/* maximum length */
	{ "exactly max_len bytes emit MAX", 4, 1000, 0, NONE,
	  { FEED("abcd", 0) },
	  { PKT("abcd", REASM_MAX, 0) }, PENDING(""), .deadline = INT64_MAX },
	{ "max_len - 1 bytes stay pending", 4, 1000, 0, NONE,
	  { FEED("abc", 0) }, { { 0 } }, PENDING("abc"), .deadline = 1000 },
	{ "max_len reached across fragments", 4, 1000, 0, NONE,
	  { FEED("ab", 0), FEED("cdef", 10) },
	  { PKT("abcd", REASM_MAX, 0) }, PENDING("ef"), .deadline = 1010 },
	{ "3 * max_len + 1 bytes: three packets and one pending", 4, 1000, 0, NONE,
	  { FEED("abcdefghijklm", 0) },
	  { PKT("abcd", REASM_MAX, 0), PKT("efgh", REASM_MAX, 0), PKT("ijkl", REASM_MAX, 0) },
	  PENDING("m"), .deadline = 1000 },
	{ "max_len 1: every byte is a packet", 1, 1000, 0, NONE,
	  { FEED("xyz", 7) },
	  { PKT("x", REASM_MAX, 7), PKT("y", REASM_MAX, 7), PKT("z", REASM_MAX, 7) },
	  PENDING(""), .deadline = INT64_MAX },
	/* timestamps with char_ns: byte i of n read at T is dated T - (n - i) * char_ns */
	{ "char_ns dates each packet from its first byte in the read", 64, 100000, 100, '\n',
	  { FEED("ab\ncd\n", 10000) },
	  { PKT("ab\n", REASM_DELIM, 9400), PKT("cd\n", REASM_DELIM, 9700) },
	  PENDING(""), .deadline = INT64_MAX },
	{ "char_ns with max_len splits", 3, 100000, 10, NONE,
	  { FEED("abcdefg", 1000), FLUSH },
	  { PKT("abc", REASM_MAX, 930), PKT("def", REASM_MAX, 960), PKT("g", REASM_FLUSH, 990) },
	  PENDING(""), .deadline = INT64_MAX },
	{ "char_ns: a packet keeps the date of its first read", 64, 1000, 100, '\n',
	  { FEED("ab", 1000), FEED("c\n", 1200) },
	  { PKT("abc\n", REASM_DELIM, 800) }, PENDING(""), .deadline = INT64_MAX },
	{ "char_ns 0: every packet of a read has the wake-up time", 64, 1000, 0, ';',
	  { FEED("a;b;c", 5000) },
	  { PKT("a;", REASM_DELIM, 5000), PKT("b;", REASM_DELIM, 5000) },
	  PENDING("c"), .deadline = 6000 },
	/* reasm_flush */
	{ "flush emits pending bytes as FLUSH", 64, 1000, 0, NONE,
	  { FEED("ab", 0), FLUSH },
	  { PKT("ab", REASM_FLUSH, 0) }, PENDING(""), .deadline = INT64_MAX },
	{ "flush with nothing pending emits nothing", 64, 1000, 0, NONE,
	  { FLUSH }, { { 0 } }, PENDING(""), .deadline = INT64_MAX },
	{ "flush after a delimiter took everything emits nothing", 64, 1000, 0, '\n',
	  { FEED("ab\n", 0), FLUSH },
	  { PKT("ab\n", REASM_DELIM, 0) }, PENDING(""), .deadline = INT64_MAX },
	{ "flush twice emits once", 64, 1000, 0, NONE,
	  { FEED("ab", 0), FLUSH, FLUSH },
	  { PKT("ab", REASM_FLUSH, 0) }, PENDING(""), .deadline = INT64_MAX },
	{ "flush after expire emits nothing more", 64, 1000, 0, NONE,
	  { FEED("ab", 0), EXPIRE(1000), FLUSH },
	  { PKT("ab", REASM_GAP, 0) }, PENDING(""), .deadline = INT64_MAX },
	/* zero-length reads */
	{ "a zero-length read changes nothing", 64, 1000, 0, NONE,
	  { FEED("ab", 0), FEED0(5000) }, { { 0 } }, PENDING("ab"), .deadline = 1000 },
	{ "a zero-length read on an empty reassembler", 64, 1000, 0, NONE,
	  { FEED0(0), FEED0(10) }, { { 0 } }, PENDING(""), .deadline = INT64_MAX },
	{ "a zero-length read does not move the gap", 64, 1000, 0, NONE,
	  { FEED("ab", 0), FEED0(900), FEED("cd", 2500) },
	  { PKT("ab", REASM_GAP, 0) }, PENDING("cd"), .deadline = 3500 },
};

static void run_script(const struct script_case *c)
{
	uint8_t buf[64];
	struct reasm r;
	struct sink s = { 0 };
	size_t nwant = 0;

	assert_true(c->max_len <= sizeof(buf));
	memset(buf, 0, sizeof(buf));
	reasm_init(&r, buf, c->max_len, c->gap_ns, c->char_ns, c->delim, sink_emit, &s);
	for (const struct step *st = c->steps; st < c->steps + 8 && st->op != OP_END; st++) {
		switch (st->op) {
		case OP_FEED:
			reasm_feed(&r, (const uint8_t *)st->data, st->n, st->t, st->t + REAL_OFFSET);
			break;
		case OP_EXPIRE:
			reasm_expire(&r, st->t, INT64_MAX);
			break;
		case OP_FLUSH:
			reasm_flush(&r);
			break;
		case OP_END:
			break;
		}
	}
	while (nwant < 6 && c->want[nwant].end != 0)
		nwant++;
	if (s.n != nwant)
		fail_msg("%s: %zu packets emitted, expected %zu", c->name, s.n, nwant);
	for (size_t i = 0; i < nwant; i++) {
		const struct want *w = &c->want[i];
		const struct got *g = &s.pkts[i];

		if (g->len != w->n || memcmp(s.bytes + g->off, w->data, w->n) != 0)
			fail_msg("%s: packet %zu has %zu bytes, expected %zu (or other bytes)",
				 c->name, i, g->len, w->n);
		if (g->end != w->end)
			fail_msg("%s: packet %zu ended by %s, expected %s", c->name, i,
				 end_name(g->end), end_name(w->end));
		if (g->t_mono != w->t_mono)
			fail_msg("%s: packet %zu t_mono %" PRId64 ", expected %" PRId64,
				 c->name, i, g->t_mono, w->t_mono);
		if (g->t_real != w->t_mono + REAL_OFFSET)
			fail_msg("%s: packet %zu t_real %" PRId64 ", expected %" PRId64,
				 c->name, i, g->t_real, w->t_mono + REAL_OFFSET);
	}
	if (r.len != c->npending || memcmp(r.buf, c->pending, c->npending) != 0)
		fail_msg("%s: %zu bytes pending, expected %zu (or other bytes)",
			 c->name, r.len, c->npending);
	if (reasm_deadline(&r) != c->deadline)
		fail_msg("%s: deadline %" PRId64 ", expected %" PRId64, c->name,
			 reasm_deadline(&r), c->deadline);
	sink_free(&s);
}

static void test_scripts(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(script_cases) / sizeof(script_cases[0]); i++)
		run_script(&script_cases[i]);
}

/* The first byte of a packet pending after a read is dated like a packet's. */
static void test_pending_char_ns_date(void **state)
{
	static const struct { const char *name; size_t n, k; } cases[] = {
		{ "whole read", 5, 0 },
		{ "last byte only", 5, 4 },
		{ "middle", 9, 3 },
	};
	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		/* delimiter at byte k - 1, so the flushed packet starts at byte k */
		uint8_t in[16], buf[64];
		struct reasm r;
		struct sink s = { 0 };
		const int64_t T = 1000000, cns = 1041667;

		memset(in, 'a', sizeof(in));
		if (cases[c].k > 0)
			in[cases[c].k - 1] = '\n';
		reasm_init(&r, buf, sizeof(buf), 10 * cns, cns, '\n', sink_emit, &s);
		reasm_feed(&r, in, cases[c].n, T, T + REAL_OFFSET);
		reasm_flush(&r);
		if (s.n == 0 || s.pkts[s.n - 1].end != REASM_FLUSH)
			fail_msg("%s: no FLUSH packet", cases[c].name);
		if (s.pkts[s.n - 1].t_mono != T - (int64_t)(cases[c].n - cases[c].k) * cns)
			fail_msg("%s: t_mono %" PRId64 ", expected %" PRId64, cases[c].name,
				 s.pkts[s.n - 1].t_mono,
				 T - (int64_t)(cases[c].n - cases[c].k) * cns);
		if (s.pkts[s.n - 1].t_real != s.pkts[s.n - 1].t_mono + REAL_OFFSET)
			fail_msg("%s: t_real not shifted like t_mono", cases[c].name);
		sink_free(&s);
	}
}

/* ---- the boundary rule: reads with a wake-up and an end, and the doubts they raise ---- */

/* Every packet and every doubt, in the order reasm reports them, as text:
 * packets "[BYTES END T]", doubts "<CASE joined|new T wait=W n=N>" (times in us). */
struct trace {
	char text[512];
};

static void trace_emit(void *ctx, const struct reasm_packet *pkt)
{
	struct trace *t = ctx;
	size_t o = strlen(t->text);

	snprintf(t->text + o, sizeof(t->text) - o, "[%.*s %s %" PRId64 "]", (int)pkt->len,
		 (const char *)pkt->data, end_name(pkt->end), pkt->t_mono / 1000);
	assert_int_equal(pkt->t_real, pkt->t_mono + REAL_OFFSET);
}

static void trace_doubt(void *ctx, const struct reasm_doubt *d)
{
	static const char *const why[] = { "?", "late-wake", "deadline-read", "slow-read", "held",
					   "restart", "stall", "hidden", "clock" };
	static const char *const stage[] = { "", "", ":cpu", ":tty", ":wire", ":machine" };
	struct trace *t = ctx;
	size_t o = strlen(t->text);

	_Static_assert(sizeof(why) / sizeof(why[0]) == REASM_DOUBT_CASES, "a case without its word");
	_Static_assert(sizeof(stage) / sizeof(stage[0]) == REASM_STAGES, "a stage without its word");
	/* a stall names its stage; the reader's cases and the device's imply theirs */
	assert_true(d->why == REASM_STALL ? d->stage >= REASM_STAGE_CPU
		    : d->stage == (d->why == REASM_HELD || d->why == REASM_HIDDEN ? REASM_STAGE_DEVICE
				   : REASM_STAGE_READER));
	snprintf(t->text + o, sizeof(t->text) - o, "<%s%s %s %" PRId64 " wait=%" PRId64 " n=%zu>",
		 why[d->why], stage[d->stage], d->joined ? "joined" : "new", d->t_mono / 1000,
		 d->wait_ns / 1000, d->bytes);
	assert_int_equal(d->t_real, d->t_mono + REAL_OFFSET);
}

#define US 1000LL
enum rop { R_END, R_WOKEN, R_DEADLINE, R_EXPIRE, R_FLUSH, R_RESTART };

struct rstep {
	enum rop op;
	const char *data;
	int64_t seen, end;      /* us; R_EXPIRE: seen is now */
	int64_t unread;         /* R_RESTART: how long the port was unread, us */
	int64_t from;           /* R_WOKEN: the sensors' bound (reasm_read.from_mono), us; 0: none;
				 * R_EXPIRE: their word on a stall that may hold bytes (held_mono) */
	enum reasm_stage stage; /* ... and which stage set it */
};

struct rule_case {
	const char *name;
	int64_t gap_us, char_us;
	struct rstep steps[6];
	const char *want;       /* the trace */
};

/* woken: bytes that woke the reader at W, read by E; deadline: a read at E no
 * wake-up announced (the read at the deadline, or at stop) */
#define WOKEN(s, w, e) { R_WOKEN, (s), (w), (e), 0, 0, 0 }
/* woken, and the sensors say its first byte can have reached the kernel as early as f */
#define SENSED(s, w, e, f, st) { R_WOKEN, (s), (w), (e), 0, (f), (st) }
#define AT(s, e) { R_DEADLINE, (s), (e), (e), 0, 0, 0 }
#define EXP(t) { R_EXPIRE, NULL, (t), 0, 0, 0, 0 }
/* an empty read at t while a CPU stopped since h may hold a byte's interrupt */
#define EXP_HELD(t, h) { R_EXPIRE, NULL, (t), 0, 0, (h), 0 }
#define FL { R_FLUSH, NULL, 0, 0, 0, 0, 0 }
/* held: bytes read at E that came while no reader ran, for U us (reasm_held) */
#define HELD(s, e, u) { R_RESTART, (s), (e), (e), (u), 0, 0 }
#define GAP2 2000           /* us */

static const struct rule_case rule_cases[] = {
	/* judged: no doubt */
	{ "a read that ends before the deadline continues the packet", GAP2, 0,
	  { WOKEN("ab", 0, 5), WOKEN("cd", 1500, 1999), FL }, "[abcd FLUSH 0]" },
	{ "an empty read at the deadline ends it", GAP2, 0,
	  { WOKEN("ab", 0, 5), EXP(2004), EXP(2005), WOKEN("cd", 2100, 2101), FL },
	  "[ab GAP 0][cd FLUSH 2100]" },
	{ "the deadline counts from the end of the read that brought the last byte", GAP2, 0,
	  { WOKEN("ab", 0, 300), EXP(2000), EXP(2299), EXP(2300) }, "[ab GAP 0]" },
	{ "no packet in progress: a read under a gap long raises no doubt", GAP2, 0,
	  { WOKEN("ab", 0, 1999), FL }, "[ab FLUSH 0]" },
	/* the deadline's empty read while a CPU that takes the interrupt was stopped: its
	 * proof reaches back to the stall's start only */
	{ "an empty read at the deadline in a stall: the byte after it is a doubt", GAP2, 0,
	  { WOKEN("ab", 0, 5), EXP_HELD(2010, 1000), SENSED("c", 2500, 2501, 1000, REASM_STAGE_CPU),
	    FL }, "[ab GAP 0]<stall:cpu new 2500 wait=1500 n=1>[c FLUSH 2500]" },
	{ "... without the stall, the empty read proves the silence", GAP2, 0,
	  { WOKEN("ab", 0, 5), EXP(2010), SENSED("c", 2500, 2501, 1000, REASM_STAGE_CPU), FL },
	  "[ab GAP 0][c FLUSH 2500]" },
	{ "... a stall that began after the deadline proves it too", GAP2, 0,
	  { WOKEN("ab", 0, 5), EXP_HELD(2010, 2005), SENSED("c", 2500, 2501, 1000, REASM_STAGE_CPU),
	    FL }, "[ab GAP 0][c FLUSH 2500]" },
	{ "a read at stop before the deadline continues the packet", GAP2, 0,
	  { WOKEN("ab", 0, 5), AT("cd", 1999), FL }, "[abcd FLUSH 0]" },
	/* woken after the deadline by 50, 100, 300, 800 us: joined, and said */
	{ "woken 50 us after the deadline", GAP2, 0,
	  { WOKEN("ab", 0, 5), WOKEN("cd", 2050, 2055), FL },
	  "<late-wake joined 0 wait=55 n=2>[abcd FLUSH 0]" },
	{ "woken 100 us after the deadline", GAP2, 0,
	  { WOKEN("ab", 0, 5), WOKEN("cd", 2100, 2105), FL },
	  "<late-wake joined 0 wait=105 n=2>[abcd FLUSH 0]" },
	{ "woken 300 us after the deadline", GAP2, 0,
	  { WOKEN("ab", 0, 5), WOKEN("cd", 2300, 2305), FL },
	  "<late-wake joined 0 wait=305 n=2>[abcd FLUSH 0]" },
	{ "woken 800 us after the deadline", GAP2, 0,
	  { WOKEN("ab", 0, 5), WOKEN("cd", 2800, 2805), FL },
	  "<late-wake joined 0 wait=805 n=2>[abcd FLUSH 0]" },
	{ "woken at the deadline itself", GAP2, 0,
	  { WOKEN("ab", 0, 0), WOKEN("cd", 2000, 2000), FL },
	  "<late-wake joined 0 wait=0 n=2>[abcd FLUSH 0]" },
	/* "ab"'s last byte came between 0 and 100; the empty read at 2099 shows "cd"
	 * came after it: a silence of 1999 to 2099, a gap more likely than not */
	{ "woken between the two deadlines: the packet's last byte may have come late in its read",
	  GAP2, 0, { WOKEN("ab", 0, 100), EXP(2099), WOKEN("cd", 2099, 2100), EXP(4099), EXP(4100) },
	  "[ab GAP 0]<late-wake new 2099 wait=100 n=2>[cd GAP 2099]" },
	/* more than a gap after the deadline: more likely a new packet, and said */
	{ "woken a gap after the deadline begins a packet", GAP2, 0,
	  { WOKEN("ab", 0, 5), WOKEN("cd", 4000, 4010), FL },
	  "[ab GAP 0]<late-wake new 4000 wait=2010 n=2>[cd FLUSH 4000]" },
	{ "woken just under a gap after the deadline joins", GAP2, 0,
	  { WOKEN("ab", 0, 5), WOKEN("cd", 3999, 4010), FL },
	  "<late-wake joined 0 wait=2010 n=2>[abcd FLUSH 0]" },
	/* the read at the deadline returned bytes */
	{ "the read at the deadline finds bytes: joined, and said", GAP2, 0,
	  { WOKEN("ab", 0, 5), AT("cd", 2030), EXP(2030), FL },
	  "<deadline-read joined 0 wait=30 n=2>[abcd FLUSH 0]" },
	{ "the read at the deadline finds bytes a gap after it: a new packet, said", GAP2, 0,
	  { WOKEN("ab", 0, 5), AT("cd", 4500), FL },
	  "[ab GAP 0]<deadline-read new 4500 wait=2500 n=2>[cd FLUSH 4500]" },
	/* slow reads: a gap may hide among the bytes */
	{ "a read that began before the deadline and ended after it", GAP2, 0,
	  { WOKEN("ab", 0, 5), WOKEN("cd", 1990, 2010), FL },
	  "<slow-read joined 0 wait=20 n=2>[abcd FLUSH 0]" },
	{ "no packet in progress: a read a gap long", GAP2, 0,
	  { WOKEN("abc", 100, 2100), FL }, "<slow-read new 100 wait=2000 n=3>[abc FLUSH 100]" },
	/* with char times: the first byte's date decides where late bytes go */
	{ "char_ns: bytes dated before a gap past the deadline join", 1000, 100,
	  { WOKEN("a", 100, 100), WOKEN("bcde", 2300, 2300), FL },
	  "<late-wake joined 0 wait=1200 n=4>[abcde FLUSH 0]" },
	{ "char_ns: bytes dated a gap past the deadline begin a packet", 1000, 100,
	  { WOKEN("a", 100, 100), WOKEN("bcde", 2500, 2500), FL },
	  "[a GAP 0]<late-wake new 2100 wait=1400 n=4>[bcde FLUSH 2100]" },
	/* bytes that came while no reader ran (a port kept open across a restart) */
	{ "held bytes begin a packet, said with how long the port was unread", GAP2, 0,
	  { HELD("abc", 500, 300000), FL }, "<restart new 500 wait=300000 n=3>[abc FLUSH 500]" },
	{ "a second read of held bytes continues their packet, said again", GAP2, 0,
	  { HELD("ab", 500, 300000), HELD("cd", 510, 300010), EXP(2509), EXP(2510) },
	  "<restart new 500 wait=300000 n=2><restart joined 500 wait=300010 n=2>[abcd GAP 500]" },
	{ "bytes read in time after the held ones join them, with no doubt of their own", GAP2, 0,
	  { HELD("ab", 500, 300000), WOKEN("cd", 1500, 1501), FL },
	  "<restart new 500 wait=300000 n=2>[abcd FLUSH 500]" },
	{ "held bytes after a packet in progress join it, said", GAP2, 0,
	  { WOKEN("ab", 0, 5), HELD("cd", 100, 200000), FL },
	  "<restart joined 0 wait=200000 n=2>[abcd FLUSH 0]" },
	{ "char_ns: held bytes are dated back to back before their read", 1000, 100,
	  { HELD("abcd", 1000, 50000), FL }, "<restart new 600 wait=50000 n=4>[abcd FLUSH 600]" },
	/* the sensors' bound on the path to the reader (its CPU stopped, the tty worker
	 * late): a read on time by its own evidence may have waited that long */
	{ "a packet read at once after a stall: a gap may hide among its bytes, said", GAP2, 0,
	  { SENSED("abcdef", 100000, 100010, 1, REASM_STAGE_CPU), FL },
	  "<stall:cpu new 100000 wait=99999 n=6>[abcdef FLUSH 100000]" },
	{ "a stall shorter than the gap leaves no doubt among the bytes", GAP2, 0,
	  { SENSED("abcdef", 100000, 100010, 98500, REASM_STAGE_TTY), FL },
	  "[abcdef FLUSH 100000]" },
	{ "an empty read after the stall began bounds it", GAP2, 0,
	  { EXP(99000), SENSED("abcdef", 100000, 100010, 50000, REASM_STAGE_CPU), FL },
	  "[abcdef FLUSH 100000]" },
	/* "a" may have come 3 ms before it was read: the silence before "b" (read at
	 * once after an empty read) may have been a gap; more likely not */
	{ "a byte half a gap after one that may have waited: the silence may be a gap, said",
	  GAP2, 0,
	  { SENSED("a", 10000, 10005, 7000, REASM_STAGE_TTY), EXP(10005),
	    SENSED("b", 10500, 10505, 10005, REASM_STAGE_CPU), FL },
	  "<stall:tty joined 10000 wait=3000 n=1>[ab FLUSH 10000]" },
	{ "one that waited at most its bound leaves no doubt", GAP2, 0,
	  { SENSED("a", 10000, 10005, 9500, REASM_STAGE_CPU), EXP(10005),
	    SENSED("b", 10500, 10505, 10005, REASM_STAGE_CPU), FL },
	  "[ab FLUSH 10000]" },
	/* e2e_serial's four_ports on this VM: a packet read 9.4 ms after it was written
	 * (another CPU stopped: the sensors' bound reaches back to its last look), the
	 * next read 0.6 ms later: it may have come a gap after the first, said */
	{ "a packet read late by another CPU's stall, the next soon after: said", 4000, 0,
	  { SENSED("abcd", 100000, 100050, 90600, REASM_STAGE_CPU), EXP(100050),
	    SENSED("ef", 100600, 100605, 100050, REASM_STAGE_TTY), FL },
	  "<stall:cpu new 100000 wait=9400 n=4><stall:cpu joined 100000 wait=9400 n=2>"
	  "[abcdef FLUSH 100000]" },
	/* with char times: more bytes than the baud brings since the sensors' bound */
	{ "char_ns: bytes the baud could not bring since the bound prove it wrong, said", 1000, 100,
	  { SENSED("abcdefghij", 5000, 5000, 4900, REASM_STAGE_CPU), FL },
	  "<stall:wire new 4000 wait=900 n=10>[abcdefghij FLUSH 4000]" },
	{ "char_ns: bytes within the bound's wire time, no doubt", 1000, 100,
	  { SENSED("abcdefghij", 5000, 5000, 4000, REASM_STAGE_CPU), FL },
	  "[abcdefghij FLUSH 4000]" },
	/* 10 characters take 900 us from the first's end to the last's: 200 us after an
	 * empty read they did not come at the baud (a pty fed faster): no pacing judges;
	 * dated no earlier than a character before that read */
	{ "char_ns: more bytes since an empty read than the baud brings, said", 1000, 100,
	  { EXP(1000), WOKEN("abcdefghij", 1200, 1200), FL },
	  "<stall:wire new 900 wait=643 n=10>[abcdefghij FLUSH 900]" },
	/* 8 characters take 800 us (750 if the sender is 1/16 fast) after the packet's
	 * last byte; they came 150 us after it: the reader's clock stood still while they
	 * came (a virtual machine stopped), and no silence can be judged */
	{ "char_ns: more bytes since the packet's last byte than the baud brings, said", 1000, 100,
	  { WOKEN("ab", 1000, 1000), WOKEN("cdefghij", 1150, 1150), FL },
	  "<stall:wire joined 800 wait=600 n=8>[abcdefghij FLUSH 800]" },
	/* one byte every 60 us, each read 100 us after its sensors' bound: each fits after
	 * the read before, but three bytes after the first take 281 us at least (a
	 * character 1/16 short), and d came 280 us after a's bound, e 340 for four: their
	 * reads doubt the whole packet, joined */
	{ "char_ns: more bytes since the packet's first read than the baud brings, said", 1000, 100,
	  { SENSED("a", 1000, 1000, 900, REASM_STAGE_CPU), SENSED("b", 1060, 1060, 960, REASM_STAGE_CPU),
	    SENSED("c", 1120, 1120, 1020, REASM_STAGE_CPU), SENSED("d", 1180, 1180, 1080, REASM_STAGE_CPU),
	    SENSED("e", 1240, 1240, 1140, REASM_STAGE_CPU), FL },
	  "<stall:wire joined 900 wait=1 n=1><stall:wire joined 900 wait=35 n=1>[abcde FLUSH 900]" },
};

/* The cases, each with the device of devs[i] (its times in us), or none (devs NULL). */
static void run_rules(const struct rule_case *cases, const struct reasm_dev *devs, size_t n)
{
	unsigned bad = 0;

	for (size_t i = 0; i < n; i++) {
		const struct rule_case *c = &cases[i];
		const struct reasm_dev *d = devs != NULL ? &devs[i] : &(struct reasm_dev){ 0 };
		struct reasm_dev dev = { .trigger = d->trigger, .timeout_ns = d->timeout_ns * US,
					 .hold_ns = d->hold_ns * US, .blur_ns = d->blur_ns * US };
		uint8_t buf[64];
		struct reasm r;
		struct trace t = { { 0 } };

		reasm_init(&r, buf, sizeof(buf), c->gap_us * US, c->char_us * US, NONE, trace_emit, &t);
		reasm_set_dev(&r, &dev);
		reasm_on_doubt(&r, trace_doubt);
		for (const struct rstep *st = c->steps; st < c->steps + 6 && st->op != R_END; st++) {
			struct reasm_read rd = { .woken = st->op == R_WOKEN, .seen_mono = st->seen * US,
						 .seen_real = st->seen * US + REAL_OFFSET,
						 .end_mono = st->end * US, .from_mono = st->from * US,
						 .from_stage = st->stage };

			if (st->op == R_EXPIRE)
				reasm_expire(&r, st->seen * US, st->from ? st->from * US : INT64_MAX);
			else if (st->op == R_FLUSH)
				reasm_flush(&r);
			else if (st->op == R_RESTART)
				reasm_held(&r, (const uint8_t *)st->data, strlen(st->data), &rd,
					   st->unread * US);
			else
				reasm_read(&r, (const uint8_t *)st->data, strlen(st->data), &rd);
		}
		if (strcmp(t.text, c->want) != 0) {
			print_error("%s:\n    got  %s\n    want %s\n", c->name, t.text, c->want);
			bad++;
		}
	}
	if (bad > 0)
		fail_msg("%u of %zu cases differ", bad, n);
}

static void test_rule(void **state)
{
	(void)state;
	run_rules(rule_cases, NULL, sizeof(rule_cases) / sizeof(rule_cases[0]));
}

/*
 * A device that holds bytes. A 16550A at trigger 8 at a character time of 1 ms:
 * timeout 4 ms, hold 8 * 4 ms, half a character either way, and the gap it shows,
 * 3 ms (silences over 3 characters). Bytes come back to back; a delivery is the
 * wake-up (plus the read's 50 us). A read of 8 bytes came with its last byte; a
 * shorter one 4 ms after it, and ends its packet.
 */
#define FIFO8 { .trigger = 8, .timeout_ns = 4000, .hold_ns = 32000, .blur_ns = 500 }
#define B8 "01234567"
#define B4 "89ab"
#define B5 "vwxyz"
/* An FTDI adapter at 115200 (87 us a character, taken as 100): hold 2 ms, 1 ms either
 * way, gap 4 ms. */
#define USB2 { .hold_ns = 2000, .blur_ns = 1000 }

static const struct rule_case held_cases[] = {
	{ "fifo: 20 bytes as 8 + 8 + 4 are one packet, ended by the timeout", 3000, 1000,
	  { WOKEN(B8, 8000, 8050), WOKEN(B8, 16000, 16050), WOKEN(B4, 24000, 24050), FL },
	  "[" B8 B8 B4 " GAP 0]" },
	{ "fifo: a short packet is dated back by the RX timeout", 3000, 1000,
	  { WOKEN(B5, 9000, 9050), FL }, "[" B5 " GAP 0]" },
	{ "fifo: after a full trigger the deadline waits for the hold", 3000, 1000,
	  /* the last byte ended by the read's end, 8050; the gap 3000, a character
	   * (the next byte is seen at its end), the hold 32000: 44050 */
	  { WOKEN(B8, 8000, 8050), EXP(44049), EXP(44050) }, "[" B8 " GAP 0]" },
	{ "fifo: a packet 15 characters later", 3000, 1000,
	  { WOKEN(B8, 8000, 8050), WOKEN(B4, 16000, 16050), WOKEN(B5, 36000, 36050), FL },
	  "[" B8 B4 " GAP 0][" B5 " GAP 27000]" },
	{ "fifo: a reply 5 characters after a full trigger is a boundary the FIFO may hide: said",
	  3000, 1000, { WOKEN(B8, 8000, 8050), WOKEN(B5, 22000, 22050), FL },
	  "[" B8 " GAP 0]<held new 13000 wait=5000 n=5>[" B5 " GAP 13000]" },
	{ "fifo: a pause of a character inside a packet continues it", 3000, 1000,
	  { WOKEN(B8, 8000, 8050), WOKEN(B5, 18000, 18050), FL }, "[" B8 B5 " GAP 0]" },
	{ "fifo: a pause of 2.5 characters is within the blur of the gap: joined, and said",
	  3000, 1000, { WOKEN(B8, 8000, 8050), WOKEN(B5, 19500, 19550), FL },
	  "<held joined 0 wait=2500 n=5>[" B8 B5 " GAP 0]" },
	/* wait: from 3 ms after the last byte's estimated end (a gap could have begun) */
	{ "fifo: bytes found at the deadline read are late, placed by their estimate", 3000, 1000,
	  { WOKEN(B8, 8000, 8050), AT(B4, 44100), FL },
	  "[" B8 " GAP 0]<deadline-read new 36100 wait=33100 n=4>[" B4 " GAP 36100]" },
	/* 34 characters and a gap take 37 ms; the packet's last byte ended 7500 at
	 * the earliest, the read 44100: 36600 */
	{ "fifo: 34 bytes at the deadline read fill the time since the packet: no gap hides", 3000,
	  1000, { WOKEN(B8, 8000, 8050), AT(B8 B8 B8 B8 "ab", 44100), FL },
	  "[" B8 B8 B8 B8 B8 "ab FLUSH 0]" },
	{ "fifo: a read of two hand-overs the sensors did not allow for: the wire says so", 3000,
	  1000,
	  /* 8 + 4 bytes in one read: the first came by 13050 at the latest, the
	   * sensors said not before 15000: their bound is wrong, and a gap may hide
	   * between the hand-overs */
	  { SENSED(B8 B4, 16000, 16050, 15000, REASM_STAGE_CPU), FL },
	  "<stall:wire new 2000 wait=2950 n=12>[" B8 B4 " FLUSH 2000]" },
	{ "fifo: two hand-overs continuing a packet: joined, said", 3000, 1000,
	  /* the last of them the trigger's (its last byte with it) or the timeout's:
	   * the silence before them may be a gap by the device's blur */
	  { WOKEN(B8, 8000, 8050), WOKEN(B8 B4, 24000, 24050), FL },
	  "<held joined 0 wait=2000 n=12>[" B8 B8 B4 " FLUSH 0]" },
	{ "fifo: a trigger's worth in two parts: the timeout the first stood for is doubted",
	  3000, 1000,
	  { WOKEN(B5 "u", 10000, 10050), WOKEN("ab", 12000, 12050), WOKEN(B8, 16000, 16050), FL },
	  /* 6 bytes, then 2 dated right after them: no silence, as the timeout said;
	   * the 2 prove nothing then, and the trigger's worth right after joins them */
	  "[" B5 "u GAP 0]<held new 6000 wait=0 n=2>[ab" B8 " FLUSH 6000]" },
	{ "fifo: a second part estimated before the first's end: the next read is judged",
	  3000, 1000,
	  { WOKEN(B5 "u", 10000, 10050), WOKEN("ab", 11000, 11050), WOKEN(B8, 17000, 17050), FL },
	  /* "ab" dated from 5000, before the first part's end (6000): placed at 6000;
	   * its last byte ended 6500 at the earliest, the 8 bytes' last by 17050 (no
	   * later than their hand-over): 10550, less than 8 characters and a gap */
	  "[" B5 "u GAP 0]<held new 6000 wait=0 n=2>[ab" B8 " FLUSH 6000]" },
	{ "fifo: a packet 3.5 characters after a timeout's is not doubted", 3000, 1000,
	  { WOKEN(B5, 10000, 10050), WOKEN(B4, 17500, 17550), FL },
	  "[" B5 " GAP 1000][" B4 " GAP 9500]" },
	/* the guest's pause: a short packet's bytes read by the timeout once the machine
	 * resumed, the next packet's at once after (QEMU's backlog), the sensors' stall
	 * reaching back past the FIFO's hold before that read: the device's timing says
	 * nothing, said */
	{ "fifo: a stall back past the device's hold before the last read: said", 3500, 1000,
	  { WOKEN(B5, 10000, 10050), EXP(10060), SENSED(B8, 16000, 16050, -30000, REASM_STAGE_CPU),
	    FL },
	  "<held joined 1000 wait=2000 n=8>[" B5 B8 " FLUSH 1000]" },
	{ "usb: transfers 1 ms apart are one packet", 4000, 100,
	  { WOKEN(B8, 1000, 1010), WOKEN(B8, 2000, 2010), WOKEN(B4, 3000, 3010), FL },
	  /* dated at the middle of the hold: 1000 - 1000 - 800 */
	  "[" B8 B8 B4 " FLUSH -800]" },
	{ "usb: the deadline is the gap and the hold after the latest the last byte came", 4000,
	  /* by the read's end, 1010; the gap, a character, the hold: 7110 */
	  100, { WOKEN(B8, 1000, 1010), EXP(7109), EXP(7110) }, "[" B8 " GAP -800]" },
	{ "usb: a transfer 3 ms after the last is said", 4000, 100,
	  { WOKEN(B8, 1000, 1010), WOKEN(B4, 4000, 4010), FL },
	  "<held joined -800 wait=2600 n=4>[" B8 B4 " FLUSH -800]" },
	{ "usb: a transfer 5.5 ms after the last begins a packet, said", 4000, 100,
	  { WOKEN(B8, 1000, 1010), WOKEN(B4, 6500, 6510), FL },
	  "[" B8 " GAP -800]<held new 5100 wait=5100 n=4>[" B4 " FLUSH 5100]" },
	{ "usb: a packet streaming on into the next transfer is dated back from the first", 4000,
	  100, { WOKEN(B8 "xy", 1000, 1010), WOKEN(B8 "xy", 2000, 2010), FL },
	  /* 10 bytes fill the 1 ms between the transfers: the first ended its at 1000 */
	  "[" B8 "xy" B8 "xy FLUSH 0]" },
	{ "usb: not when the second read leaves a pause", 4000, 100,
	  { WOKEN(B8 "xy", 1000, 1010), WOKEN(B5, 2000, 2010), FL },
	  "[" B8 "xy" B5 " FLUSH -1000]" },
};

static const struct reasm_dev held_devs[] = {
	FIFO8, FIFO8, FIFO8, FIFO8, FIFO8, FIFO8, FIFO8, FIFO8, FIFO8, FIFO8, FIFO8, FIFO8, FIFO8,
	FIFO8, FIFO8, USB2, USB2, USB2, USB2, USB2,
	USB2,
};
_Static_assert(sizeof(held_devs) / sizeof(held_devs[0]) == sizeof(held_cases) / sizeof(held_cases[0]),
	       "a held case without its device");

static void test_held_rule(void **state)
{
	(void)state;
	run_rules(held_cases, held_devs, sizeof(held_cases) / sizeof(held_cases[0]));
}

/* ---- garbage: random bytes in random fragments, gaps below the threshold ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	return tu_rand(&rng_state);
}

/*
 * The rule against a model of the wire, the device and the machine, on random
 * traffic (the bench: tests/lib/reasm_model.c): bytes on a wire at a character
 * time of 100 us, packets of 1-40 bytes with pauses inside them below the gap,
 * silences between them of 0.5 to 30 gaps (a quarter of them under 2.5, many a
 * fraction of a character past the gap); no device (each byte reaches the kernel
 * at its end), a 16550A at trigger 4, 8 or 14, or an FTDI adapter (1 ms latency
 * timer, 1 ms USB frames) hands them over; a reader that wakes up to 20 us late,
 * and now and then not at all for a stall of 0.2 to 40 ms (a stopped CPU, a late
 * tty worker), in which it misses its deadlines and finds what came meanwhile at
 * once. It reads until the kernel is empty at every wake-up, as the daemon does.
 * Its sensors bound how long the first byte of each read waited, soundly but not
 * tightly (up to 300 us more). The rule owes: a wrong boundary (a line starting
 * where the wire had less than a gap of silence, or none where it had a gap) only
 * at a read that raised a doubt; and the first-byte date of a line the reader
 * found on time within the device's stamp error. Without the sensors' bound (the
 * reader taken to be on time) the same traffic must give wrong boundaries without
 * a doubt: the test sees what the sensors see.
 */
#define M_CHAR ((int64_t)100000) /* ns */
#define M_LAT ((int64_t)20000)   /* the reader's wake-up latency outside stalls, at most */
#define M_SLACK ((int64_t)300000) /* how much earlier than needed the sensors' bound is */

/* The reader of test_model: its random latency and stalls. */
struct model_reader {
	bool sensors;
	bool no_stalls;             /* the machine's stops the only fault */
	int64_t gap;
	int64_t stall_end;          /* it runs no earlier */
};

static int64_t model_wake(void *ctx, int64_t t)
{
	struct model_reader *mr = ctx;
	int64_t seen = t + (int64_t)(rng() % M_LAT);

	/* now and then the reader's CPU stops, or its tty worker waits, just
	 * before a delivery: it runs again only at the stall's end */
	if (rng() % 40 == 0 && !mr->no_stalls)
		mr->stall_end = t + (int64_t)(rng() % (uint64_t)mr->gap)
				+ 200000 + (int64_t)(rng() % 40000000);
	if (seen < mr->stall_end)
		seen = mr->stall_end + (int64_t)(rng() % M_LAT);
	return seen;
}

static int64_t model_look(void *ctx, int64_t at)
{
	struct model_reader *mr = ctx;

	at += (int64_t)(rng() % M_LAT);
	if (at < mr->stall_end)
		at = mr->stall_end + (int64_t)(rng() % M_LAT);
	return at;
}

static void model_plan(void *ctx, struct rm_plan *p)
{
	struct model_reader *mr = ctx;

	p->dur = 5000;
	p->drain = 1000;
	if (mr->sensors)
		p->slack = (int64_t)(rng() % M_SLACK);    /* a sound bound, not a tight one */
}

/* A run of the machine owed no wrong boundary without a mark and no date off. */
static void expect_none(uint64_t seed, const struct rm_machine *mc, unsigned wrong,
			unsigned dates)
{
	if (wrong > 0 || dates > 0)
		fail_msg("seed %" PRIu64 ": %s: %u wrong boundaries without a mark, %u dates off",
			 seed, mc->name, wrong, dates);
}

/* Instead of reasm_expire, when not NULL (test_irq_stops' blind run). */
static void (*model_expire)(void *ctx, struct reasm *r, int64_t now, int64_t held);

/* The faults of a run beside the reader's own latency. */
enum model_fault {
	M_STALLS,                   /* the reader's stalls (test_model) */
	M_MACHINE_STOPS,            /* the whole machine stops (test_machine_stops) */
	M_IRQ_STOPS,                /* the CPU that takes the interrupt stops (test_irq_stops) */
};

/* The wrong boundaries without a doubt (and dates off) of one run; sensors: the
 * reads carry the sensors' bound, else none. */
static void model_run(const struct rm_machine *dev, uint64_t seed, bool sensors,
		      enum model_fault fault, unsigned *wrong_out, unsigned *dates_out)
{
	static int64_t stop[2 * 4096];
	const size_t cap = 20000;
	struct rm_machine mc = *dev;
	struct model_reader mr = { .sensors = sensors, .no_stalls = fault != M_STALLS };
	const struct rm_reader reader = {
		.wake = model_wake,        /* latency up to M_LAT, stalls of 0.2-40 ms */
		.look = model_look,        /* the same */
		.plan = model_plan,        /* 5 us a read, the empty one 1 us after it */
		.expire = model_expire,    /* reasm_expire when NULL */
	};
	/* the gap each resolves: 3.5 characters; the timeout's; 4 blurs; an adapter on a
	 * receive timeout, 3.5 characters, or what its timeout shows when that is longer
	 * (then 3.5 characters is the gap asked for, which it may hide) */
	const int64_t auto_gap = 35 * M_CHAR / 10, shown = mc.hold_ns - M_CHAR + 1;
	const int64_t gap = mc.dev == RM_USB ? 4000000 : mc.dev == RM_DIRECT ? auto_gap
			    : mc.dev == RM_ADAPTER ? (shown > auto_gap ? shown : auto_gap) : 3 * M_CHAR;
	struct rm_run *m;
	struct rm_result res;
	int64_t now = 1000000000;

	mc.gap_ns = gap;
	mc.want_ns = mc.dev == RM_ADAPTER && gap > auto_gap ? auto_gap : 0;
	mc.char_ns = M_CHAR;
	mc.max_len = cap;
	mc.delim = NONE;
	mc.sensors = sensors;
	mc.on_time_ns = M_LAT;
	mc.look_ns = sensors ? 10 * M_CHAR : 0;    /* the sensors' period: 1 ms */
	mc.report = sensors && model_expire == NULL;
	mr.gap = gap;
	rng_state = seed;
	m = rm_new(&mc, cap);
	assert_non_null(m);
	/* the wire */
	while (m->n + 40 < cap) {
		size_t len = 1 + rng() % 40;
		uint64_t kind = rng() % 8;
		/* mostly well apart; some near the gap, where the device may hide it;
		 * some a fraction of a character past it, where only a stall merges them */
		int64_t silence = kind < 2 ? gap / 2 + (int64_t)(rng() % (uint64_t)(2 * gap))
				  : kind < 4 ? gap + (int64_t)(rng() % (uint64_t)M_CHAR)
				  : gap + (int64_t)(rng() % (uint64_t)(30 * gap));

		now += silence;
		for (size_t i = 0; i < len; i++) {
			/* a pause inside now and then, shorter than the gap */
			if (i > 0 && rng() % 8 == 0)
				now += (int64_t)(rng() % (uint64_t)gap);
			now += M_CHAR;
			assert_true(rm_byte(m, now, 0));
		}
	}
	if (fault != M_STALLS) {
		/* the machine, or the CPU that takes the interrupt, stopped for 5-60 ms
		 * every 50-300 ms; a machine's backlog taken a byte each 0.25-0.75
		 * characters. The interrupt's CPU: every other stop begins within the
		 * last character of a packet and ends before the next one's first,
		 * holding that last byte alone past the packet's deadline */
		size_t k = 0, j = 0;

		for (int64_t t = m->wire[0]; t < now && k < sizeof(stop) / sizeof(stop[0]); k += 2) {
			t += 50000000 + (int64_t)(rng() % 250000000);
			while (j + 1 < m->n && (m->wire[j] < t || m->wire[j + 1] - M_CHAR - m->wire[j] < gap))
				j++;
			stop[k] = t;
			stop[k + 1] = 5000000 + (int64_t)(rng() % 55000000);
			if (fault == M_IRQ_STOPS && k % 4 == 0 && j + 1 < m->n && m->wire[j] >= t) {
				stop[k] = m->wire[j] - (int64_t)(rng() % (uint64_t)M_CHAR);
				stop[k + 1] = m->wire[j + 1] - M_CHAR / 2 - stop[k];
			}
			t = stop[k] + stop[k + 1];
		}
		if (fault == M_IRQ_STOPS) {
			m->mc.irq_stops = stop;
			m->mc.nirq_stops = k / 2;
		} else {
			m->mc.stops = stop;
			m->mc.nstops = k / 2;
			m->mc.backlog_ns = M_CHAR / 4 + (int64_t)(rng() % (M_CHAR / 2));
			m->mc.loose_ns = M_SLACK + M_LAT;
			m->mc.by_line = true;
		}
	}
	assert_true(rm_play(m, &reader, &mr, &res));
	assert_int_equal(m->emitted, m->n);
	*wrong_out = res.wrong;
	*dates_out = res.dates;
	rm_free(m);
}

static void test_model(void **state)
{
	static const struct rm_machine devs[] = {
		{ .name = "direct", .dev = RM_DIRECT },
		{ .name = "fifo:4", .dev = RM_FIFO, .trigger = 4 },
		{ .name = "fifo:8", .dev = RM_FIFO, .trigger = 8 },
		{ .name = "fifo:14", .dev = RM_FIFO, .trigger = 14 },
		{ .name = "usb:2 (ftdi)", .dev = RM_USB, .latency_ns = 1000000 },
		{ .name = "adapter 0.2 ms/8", .dev = RM_ADAPTER, .hold_ns = 200000, .xfer = 8 },
		{ .name = "adapter 0.5 ms/64, poll 1 ms", .dev = RM_ADAPTER, .hold_ns = 500000,
		  .xfer = 64, .poll_ns = 1000000 },
		{ .name = "adapter 2 ms/32, poll 0.125 ms (hides the gap asked for)",
		  .dev = RM_ADAPTER, .hold_ns = 2000000, .xfer = 32, .poll_ns = 125000 },
	};
	uint64_t seed = tu_seed("test_reasm");
	unsigned blind = 0;

	(void)state;
	for (size_t di = 0; di < sizeof(devs) / sizeof(devs[0]); di++) {
		unsigned wrong, dates, wrong_blind, dates_blind;

		model_run(&devs[di], seed + di, true, M_STALLS, &wrong, &dates);
		expect_none(seed, &devs[di], wrong, dates);
		model_run(&devs[di], seed + di, false, M_STALLS, &wrong_blind, &dates_blind);
		print_message("# %s: without the sensors' bound, %u wrong boundaries without a "
			      "mark\n", devs[di].name, wrong_blind);
		blind += wrong_blind;
	}
	/* the stalls decide: a rule that takes the reader to be on time misses them */
	assert_true(blind > 0);
}

/*
 * The machine stopped as a virtual machine is paused (QEMU's stop and cont, a host
 * that deschedules every vCPU): its clock stands still with it, so neither the
 * reader nor its sensors see the stop; what the wire brought meanwhile waits in the
 * emulated device's socket and comes when the machine runs again, faster than the
 * baud, until the device has caught up. Silences of the wire inside the stop, or
 * in what it held, are gone on the machine's clock: every wrong boundary they make
 * must be in a marked line (the bytes came faster than the baud allows), the stop the
 * only fault (the reader's own stalls are test_model's).
 */
static void test_machine_stops(void **state)
{
	static const struct {
		struct rm_machine mc;
		bool owed;
	} devs[] = {
		{ { .name = "stops, direct (fifo:1)", .dev = RM_DIRECT }, true },
		{ { .name = "stops, adapter 0.5 ms/64, poll 1 ms", .dev = RM_ADAPTER,
		    .hold_ns = 500000, .xfer = 64, .poll_ns = 1000000 }, true },
		/* not owed, printed: a FIFO above trigger 1 hands a trigger's worth over at
		 * once whether a silence under its timeout came among it or not, and only
		 * the read's span showed one (the backlog takes it away); an adapter on a
		 * latency timer hands over any number at once */
		{ { .name = "stops, fifo:8", .dev = RM_FIFO, .trigger = 8 }, false },
		{ { .name = "stops, usb:2 (ftdi)", .dev = RM_USB, .latency_ns = 1000000 }, false },
	};
	uint64_t seed = tu_seed("test_reasm");

	(void)state;
	for (size_t di = 0; di < sizeof(devs) / sizeof(devs[0]); di++) {
		unsigned wrong, dates;

		model_run(&devs[di].mc, seed + di, true, M_MACHINE_STOPS, &wrong, &dates);
		if (devs[di].owed)
			expect_none(seed, &devs[di].mc, wrong, dates);
		else
			print_message("# %s: %u wrong boundaries without a mark (not owed)\n",
				      devs[di].mc.name, wrong);
	}
}

/*
 * The CPU that takes the device's interrupt stopped while the reader's ran (a vCPU
 * its host descheduled, the reader on the other): the reader's look at a packet's
 * deadline finds the kernel empty while a byte of the packet waits in the device for
 * its handler. The empty read proves the silence only as far as the sensors' word
 * on that stop allows (reasm_expire's held_mono): a byte handed over when the CPU
 * runs again is a doubt, never a boundary without a mark (the guest's restarts saw
 * a packet's last byte come 36 ms later as a line of its own, unmarked). Every
 * device is owed, the stops the only fault; without the sensors' word on the empty
 * reads, the same traffic must leave some unmarked: the test sees what it fixes.
 */
static void blind_expire(void *ctx, struct reasm *r, int64_t now, int64_t held)
{
	(void)ctx;
	(void)held;
	reasm_expire(r, now, INT64_MAX);
}

static void test_irq_stops(void **state)
{
	static const struct rm_machine devs[] = {
		{ .name = "irq stops, direct (fifo:1)", .dev = RM_DIRECT },
		{ .name = "irq stops, fifo:8", .dev = RM_FIFO, .trigger = 8 },
		{ .name = "irq stops, usb:2 (ftdi)", .dev = RM_USB, .latency_ns = 1000000 },
		{ .name = "irq stops, adapter 0.5 ms/64, poll 1 ms", .dev = RM_ADAPTER,
		  .hold_ns = 500000, .xfer = 64, .poll_ns = 1000000 },
	};
	uint64_t seed = tu_seed("test_reasm");
	unsigned blind = 0;

	(void)state;
	for (size_t di = 0; di < sizeof(devs) / sizeof(devs[0]); di++) {
		unsigned wrong, dates;

		model_run(&devs[di], seed + di, true, M_IRQ_STOPS, &wrong, &dates);
		expect_none(seed, &devs[di], wrong, dates);
		model_expire = blind_expire;
		model_run(&devs[di], seed + di, true, M_IRQ_STOPS, &wrong, &dates);
		model_expire = NULL;
		print_message("# %s: the empty reads taken as proof, %u wrong boundaries "
			      "without a mark\n", devs[di].name, wrong);
		blind += wrong;
	}
	assert_true(blind > 0);
}

/* reasm_floor: a read right after it is not dated back before it. */
static void test_floor(void **state)
{
	uint8_t buf[64];
	struct reasm r;
	struct sink s = { 0 };
	const int64_t T = 1000000000, cns = 1000000;

	(void)state;
	reasm_init(&r, buf, sizeof(buf), 10 * cns, cns, NONE, sink_emit, &s);
	reasm_floor(&r, T - 2 * cns);       /* EV open, 2 characters before the read */
	reasm_feed(&r, (const uint8_t *)"abcde", 5, T, T + REAL_OFFSET);
	reasm_flush(&r);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.pkts[0].t_mono, T - 2 * cns);    /* not T - 5 characters */
	assert_int_equal(s.pkts[0].t_real, T - 2 * cns + REAL_OFFSET);
	sink_free(&s);
}

/* Held bytes (reasm_held) after EV open: never dated before it, and a delimiter
 * still ends packets among them; only the first read's packet has the doubt. */
static void test_restart_held(void **state)
{
	uint8_t buf[64];
	struct reasm r;
	struct trace t = { { 0 } };
	const int64_t T = 1000 * US, cns = 100 * US;
	struct reasm_read rd = { .woken = false, .seen_mono = T, .seen_real = T + REAL_OFFSET,
				 .end_mono = T };

	(void)state;
	reasm_init(&r, buf, sizeof(buf), 10 * cns, cns, '\n', trace_emit, &t);
	reasm_on_doubt(&r, trace_doubt);
	reasm_floor(&r, T - 2 * cns);       /* EV open, 2 characters before the read */
	reasm_held(&r, (const uint8_t *)"ab\ncd\nef", 8, &rd, 700000 * US);
	reasm_flush(&r);
	/* back to back from the floor on, and not after the read */
	assert_string_equal(t.text, "<restart new 800 wait=700000 n=8>[ab\n DELIM 800][cd\n DELIM 1000]"
			    "[ef FLUSH 1000]");
}

static void test_garbage(void **state)
{
	uint64_t seed = tu_seed("test_reasm");

	(void)state;
	rng_state = seed;
	for (int round = 0; round < 200; round++) {
		size_t max_len = 1 + rng() % 300, total = rng() % 5000;
		int delim = rng() % 3 == 0 ? NONE : (int)(rng() % 256);
		int64_t gap = 1000000, char_ns = rng() % 2 ? 0 : (int64_t)(rng() % 2000);
		int64_t now = 1000000000;
		uint8_t *in = malloc(total + 1), *buf = malloc(max_len);
		struct reasm r;
		struct sink s = { 0 };
		size_t pos = 0;

		assert_non_null(in);
		assert_non_null(buf);
		for (size_t i = 0; i < total; i++)
			in[i] = (uint8_t)rng();
		reasm_init(&r, buf, max_len, gap, char_ns, delim, sink_emit, &s);
		while (pos < total) {
			size_t n = rng() % 80;      /* 0 included */

			if (n > total - pos)
				n = total - pos;
			if (n == 0) {
				/* an empty read anywhere before the next one moves nothing */
				int64_t t = now + (int64_t)(rng() % (uint64_t)gap);

				reasm_feed(&r, NULL, 0, t, t + REAL_OFFSET);
				continue;
			}
			now += (int64_t)(rng() % (uint64_t)gap);   /* below the gap */
			reasm_feed(&r, in + pos, n, now, now + REAL_OFFSET);
			pos += n;
		}
		reasm_flush(&r);
		if (r.len != 0)
			fail_msg("seed %" PRIu64 " round %d: %zu bytes left after flush",
				 seed, round, r.len);
		if (s.nbytes != total || (total > 0 && memcmp(s.bytes, in, total) != 0))
			fail_msg("seed %" PRIu64 " round %d: packets do not add up to the input "
				 "(%zu of %zu bytes)", seed, round, s.nbytes, total);
		for (size_t i = 0; i < s.n; i++) {
			const struct got *g = &s.pkts[i];
			const uint8_t *d = s.bytes + g->off;
			const char *why = NULL;

			if (g->len == 0 || g->len > max_len)
				why = "bad length";
			else if (g->end == REASM_GAP)
				why = "a GAP below the gap threshold";
			else if (g->end == REASM_FLUSH && i != s.n - 1)
				why = "FLUSH before the last packet";
			else if (g->end == REASM_MAX && g->len != max_len)
				why = "MAX shorter than max_len";
			else if (g->end == REASM_DELIM && d[g->len - 1] != (uint8_t)delim)
				why = "DELIM not ending with the delimiter";
			else if (delim >= 0 && memchr(d, delim, g->len - 1) != NULL)
				why = "a delimiter inside a packet";
			else if (delim >= 0 && g->end != REASM_DELIM && d[g->len - 1] == (uint8_t)delim)
				why = "a packet ending with the delimiter not marked DELIM";
			else if (g->t_real != g->t_mono + REAL_OFFSET)
				why = "t_real not shifted like t_mono";
			else if (char_ns == 0 && i > 0 && g->t_mono < s.pkts[i - 1].t_mono)
				why = "t_mono goes back";
			if (why != NULL)
				fail_msg("seed %" PRIu64 " round %d (max_len %zu delim %d char_ns %"
					 PRId64 "): packet %zu of %zu bytes: %s", seed, round,
					 max_len, delim, char_ns, i, g->len, why);
		}
		sink_free(&s);
		free(buf);
		free(in);
	}
}

/* ---- character time and the automatic gap ---- */

static void test_char_and_auto_gap(void **state)
{
	static const struct {
		const char *name;
		unsigned baud, bits;
		int64_t char_ns, gap_ns;
	} cases[] = {
		{ "9600 8N1", 9600, 10, 1041667, 3646000 },
		{ "115200 8N1", 115200, 10, 86806, 304000 },
		/* 77e6 / 38400 = 2005.2 us -> 2006; 11e9 / 19200 = 572916.7 ns -> 572917 */
		{ "19200 8E1", 19200, 11, 572917, 2006000 },
		{ "1200 8E2, exact division", 1200, 12, 10000000, 35000000 },
		{ "300 8N1", 300, 10, 33333334, 116667000 },
		{ "4000000 5N1", 4000000, 7, 1750, 7000 },
		{ "baud 0", 0, 10, 0, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned baud = cases[i].baud, bits = cases[i].bits;
		int64_t cns = reasm_char_ns(baud, bits), gap = reasm_auto_gap_ns(baud, bits);

		if (cns != cases[i].char_ns)
			fail_msg("%s: char_ns %" PRId64 ", expected %" PRId64, cases[i].name, cns,
				 cases[i].char_ns);
		if (gap != cases[i].gap_ns)
			fail_msg("%s: auto gap %" PRId64 " ns, expected %" PRId64, cases[i].name,
				 gap, cases[i].gap_ns);
		if (baud == 0)
			continue;
		/* whole microseconds, at least 3.5 characters and less than 1 us more */
		if (gap % 1000 != 0 || gap * 2 * (int64_t)baud < 7LL * bits * 1000000000
		    || (gap - 1000) * 2 * (int64_t)baud >= 7LL * bits * 1000000000)
			fail_msg("%s: auto gap %" PRId64 " ns is not 3.5 characters rounded up to "
				 "a microsecond", cases[i].name, gap);
		/* a character time rounded up to a nanosecond */
		if (cns * (int64_t)baud < (int64_t)bits * 1000000000
		    || (cns - 1) * (int64_t)baud >= (int64_t)bits * 1000000000)
			fail_msg("%s: char_ns %" PRId64 " is not rounded up", cases[i].name, cns);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scripts),
		cmocka_unit_test(test_pending_char_ns_date),
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_held_rule),
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_machine_stops),
		cmocka_unit_test(test_irq_stops),
		cmocka_unit_test(test_floor),
		cmocka_unit_test(test_restart_held),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_char_and_auto_gap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
