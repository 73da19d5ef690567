/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_ring.c - the SPSC ring and source_push: unit cases and a two-thread stress test. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "rec.h"
#include "ring.h"
#include "source.h"
#include "testutil.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* Records per stress variant. Under TSan, 1 million take 9 s for the three variants on
 * 2 idle cores and about 23 s when other jobs keep both busy; 2 million, twice that. */
#ifdef UNDER_TSAN
#define STRESS_DEFAULT 1000000u
#else
#define STRESS_DEFAULT 2000000u
#endif

#define STRESS_RING 1024u           /* slots: small, so that it fills and wraps often */
#define STRESS_MAX_LEN 4096u
#define PATTERN_SPAN 4096u          /* payload of record k starts at pattern + off(k) */
#define T_REAL_BASE 1763764867000000000LL

static uint64_t seed;
static uint8_t pattern[PATTERN_SPAN + STRESS_MAX_LEN];

/* Waits a little: spins, and now and then gives the CPU away, because on a busy
 * machine the other side may be the one waiting for it. */
static void backoff(unsigned *spins)
{
	if (++*spins < 64) {
		tu_relax();
	} else {
		*spins = 0;
		sched_yield();
	}
}

/* Test-only: moves an empty ring's indices, and both sides' copies of them, to v. */
static void move_indices(struct ring *r, uint32_t v)
{
	atomic_store(&r->head, v);
	atomic_store(&r->tail, v);
	r->tail_cache = v;
	r->head_cache = v;
}

/* ---- what record number k of a stress run is: a pure function of seed and k ---- */

static uint32_t stress_len(uint64_t k)
{
	uint64_t h = tu_mix(seed ^ (k * 0x2545f4914f6cdd1du));

	/* half short (0..2 head slots' worth), half anywhere in 0..4096 */
	if (h & 1)
		return (uint32_t)((h >> 1) % (STRESS_MAX_LEN + 1));
	return (uint32_t)((h >> 1) % (2 * REC_HEAD_DATA + 1));
}

static const uint8_t *stress_data(uint64_t k)
{
	return pattern + tu_mix(seed + k) % PATTERN_SPAN;
}

static int64_t stress_t_mono(uint64_t k)
{
	return 1000 + (int64_t)k * 10;
}

static int64_t stress_t_real(uint64_t k)
{
	return T_REAL_BASE + (int64_t)k * 10 + 3;
}

enum stress_mode {
	STRESS_FREE,    /* both sides at full speed: drops whenever they happen */
	STRESS_SLOW,    /* the consumer stalls until the producer has dropped more */
	STRESS_PACED,   /* the producer waits for room before each push: no drop */
};

static const char *const mode_name[] = { "free", "slow consumer", "paced producer" };

struct stress {
	struct source src;
	enum stress_mode mode;
	uint64_t n;
	_Atomic bool producer_done, abort;
	uint8_t *accepted;      /* bitmap: source_push returned true (producer) */
	uint8_t *seen;          /* bitmap: came out of the ring (consumer) */

	/* producer results */
	uint64_t push_failed;

	/* consumer state and results */
	uint64_t expect;        /* number of the next record that is not a known drop */
	uint64_t cum_a, cum_b;  /* last cumulative DROP counts seen */
	uint64_t received, received_bytes, drop_recs, stalls;
	char error[256];
};

static void *stress_producer(void *arg)
{
	struct stress *st = arg;
	struct source *s = &st->src;
	unsigned spins = 0;

	for (uint64_t k = 0; k < st->n; k++) {
		uint32_t len = stress_len(k);
		struct rec head = {
			.t_real = stress_t_real(k), .t_mono = stress_t_mono(k), .kind = REC_RX,
			.a = (int64_t)k, .b = ~(int64_t)k, .c = len,
		};

		if (st->mode == STRESS_PACED)
			while (!ring_reserve(&s->ring, rec_slots(len))) {
				if (atomic_load_explicit(&st->abort, memory_order_relaxed))
					goto out;
				backoff(&spins);
			}
		if (source_push(s, &head, stress_data(k), len))
			st->accepted[k / 8] |= (uint8_t)(1u << (k % 8));
		else
			st->push_failed++;
	}
out:
	/* release: every commit above is visible to whoever sees producer_done */
	atomic_store_explicit(&st->producer_done, true, memory_order_release);
	return NULL;
}

static bool stress_fail(struct stress *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static bool stress_fail(struct stress *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->error, sizeof(st->error), fmt, ap);
	va_end(ap);
	atomic_store(&st->abort, true);
	return false;
}

/* Checks one record at the consumer's side of the ring; false on the first error. */
static bool stress_check(struct stress *st, const struct rec *h, uint32_t ready, uint8_t *pkt)
{
	struct ring *r = &st->src.ring;
	uint32_t slots = rec_slots(h->len);

	if (slots > ready)
		return stress_fail(st, "record %" PRIu64 ": %u slots but only %u visible",
				   st->expect, slots, ready);
	if (h->kind == REC_DROP) {
		uint64_t a = (uint64_t)h->a, b = (uint64_t)h->b, bytes = 0;

		if (a <= st->cum_a || b < st->cum_b)
			return stress_fail(st, "DROP counts went from %" PRIu64 "/%" PRIu64
					   " to %" PRIu64 "/%" PRIu64, st->cum_a, st->cum_b, a, b);
		if (st->expect + (a - st->cum_a) > st->n)
			return stress_fail(st, "DROP of %" PRIu64 " after record %" PRIu64
					   " exceeds the %" PRIu64 " pushed", a - st->cum_a,
					   st->expect, st->n);
		for (uint64_t k = st->expect; k < st->expect + (a - st->cum_a); k++)
			bytes += stress_len(k);
		if (b - st->cum_b != bytes)
			return stress_fail(st, "DROP at record %" PRIu64 ": %" PRIu64
					   " bytes, expected %" PRIu64, st->expect, b - st->cum_b, bytes);
		if (h->t_mono != stress_t_mono(st->expect) || h->t_real != stress_t_real(st->expect))
			return stress_fail(st, "DROP at record %" PRIu64 " does not carry the "
					   "first dropped record's times", st->expect);
		if (h->len != 0)
			return stress_fail(st, "DROP with len %u", h->len);
		st->expect += a - st->cum_a;
		if (h->seq != (uint32_t)st->expect)
			return stress_fail(st, "DROP seq %u, expected %u (the next record's)",
					   h->seq, (uint32_t)st->expect);
		st->cum_a = a;
		st->cum_b = b;
		st->drop_recs++;
		/* a DROP is pushed together with the record that follows it */
		if (ready < 2 || ring_rslot(r, 1)->rec.kind == REC_DROP)
			return stress_fail(st, "DROP at record %" PRIu64 " not followed by its record",
					   st->expect);
		return true;
	}
	if (h->kind != REC_RX || h->seq != (uint32_t)st->expect || h->a != (int64_t)st->expect)
		return stress_fail(st, "got kind %u seq %u a %" PRId64 ", expected RX record %"
				   PRIu64, h->kind, h->seq, h->a, st->expect);
	if (st->expect >= st->n)
		return stress_fail(st, "record %" PRIu64 " was never pushed", st->expect);
	if (h->len != stress_len(st->expect) || h->c != h->len || h->b != ~h->a ||
	    h->t_mono != stress_t_mono(st->expect) || h->t_real != stress_t_real(st->expect))
		return stress_fail(st, "record %" PRIu64 ": head fields differ (len %u, "
				   "expected %u)", st->expect, h->len, stress_len(st->expect));
	/* rejoin: head data[], then raw REC_SIZE chunks in the following slots */
	memcpy(pkt, h->data, h->len < REC_HEAD_DATA ? h->len : REC_HEAD_DATA);
	for (uint32_t off = REC_HEAD_DATA, i = 1; off < h->len; off += REC_SIZE, i++)
		memcpy(pkt + off, ring_rslot(r, i)->raw,
		       h->len - off < REC_SIZE ? h->len - off : REC_SIZE);
	if (memcmp(pkt, stress_data(st->expect), h->len) != 0) {
		uint32_t i = 0;

		while (pkt[i] == stress_data(st->expect)[i])
			i++;
		return stress_fail(st, "record %" PRIu64 " (len %u): payload differs at byte %u",
				   st->expect, h->len, i);
	}
	if (st->seen[st->expect / 8] & (1u << (st->expect % 8)))
		return stress_fail(st, "record %" PRIu64 " seen twice", st->expect);
	st->seen[st->expect / 8] |= (uint8_t)(1u << (st->expect % 8));
	st->received++;
	st->received_bytes += h->len;
	st->expect++;
	return true;
}

/* The slow consumer's stall: wait until the producer has dropped again (or ended). */
static void stress_stall(struct stress *st)
{
	uint64_t d0 = atomic_load(&st->src.dropped);

	st->stalls++;
	while (atomic_load(&st->src.dropped) == d0 &&
	       !atomic_load_explicit(&st->producer_done, memory_order_acquire))
		sched_yield();
}

static void *stress_consumer(void *arg)
{
	struct stress *st = arg;
	struct ring *r = &st->src.ring;
	uint64_t rng = tu_mix(seed ^ 0xc0ffee), until_stall = 0;
	unsigned spins = 0;
	uint8_t *pkt = malloc(STRESS_MAX_LEN);

	if (pkt == NULL) {
		(void)stress_fail(st, "out of memory");
		return NULL;
	}
	if (st->mode == STRESS_SLOW)
		until_stall = 1 + (rng = tu_mix(rng)) % 2048;
	for (;;) {
		uint32_t ready = ring_ready(r);
		const struct rec *h;
		bool drop;

		if (ready == 0) {
			/* acquire: pairs with the producer's release of producer_done,
			 * so the ring_ready below sees its last commit */
			if (atomic_load_explicit(&st->producer_done, memory_order_acquire) &&
			    ring_ready(r) == 0)
				break;
			backoff(&spins);
			continue;
		}
		h = &ring_rslot(r, 0)->rec;
		if (!stress_check(st, h, ready, pkt))
			break;
		drop = h->kind == REC_DROP;
		ring_release(r, rec_slots(h->len));     /* h is the producer's again */
		if (st->mode == STRESS_SLOW && !drop && --until_stall == 0) {
			stress_stall(st);
			until_stall = 1 + (rng = tu_mix(rng)) % 2048;
		}
	}
	free(pkt);
	return NULL;
}

static uint64_t stress_records(void)
{
	const char *e = getenv("PORTLOGD_STRESS_RECORDS");

	if (e != NULL && *e != '\0')
		return strtoull(e, NULL, 0);
	return STRESS_DEFAULT;
}

static void run_stress(enum stress_mode mode, uint32_t start_index)
{
	struct stress *st = calloc(1, sizeof(*st));
	pthread_t prod, cons;
	struct timespec t0, t1;
	uint64_t trailing = 0, trailing_bytes = 0, dropped, dropped_bytes;

	assert_non_null(st);
	st->mode = mode;
	st->n = stress_records();
	st->accepted = calloc(st->n / 8 + 1, 1);
	st->seen = calloc(st->n / 8 + 1, 1);
	assert_non_null(st->accepted);
	assert_non_null(st->seen);
	assert_int_equal(source_init(&st->src, "stress", STRESS_RING), 0);
	move_indices(&st->src.ring, start_index);
	atomic_init(&st->producer_done, false);
	atomic_init(&st->abort, false);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(pthread_create(&cons, NULL, stress_consumer, st), 0);
	assert_int_equal(pthread_create(&prod, NULL, stress_producer, st), 0);
	pthread_join(prod, NULL);
	pthread_join(cons, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	dropped = atomic_load(&st->src.dropped);
	dropped_bytes = atomic_load(&st->src.dropped_bytes);
	printf("stress %-14s: %" PRIu64 " records, %" PRIu64 " received, %" PRIu64
	       " dropped in %" PRIu64 " DROP records + %" PRIu64 " at the end, %" PRIu64
	       " stalls, %.2f s\n", mode_name[mode], st->n, st->received, dropped,
	       st->drop_recs, st->n - st->expect, st->stalls,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (st->error[0] != '\0')
		fail_msg("consumer: %s", st->error);

	/* records dropped after the last record that got through carry no DROP */
	for (uint64_t k = st->expect; k < st->n; k++) {
		trailing++;
		trailing_bytes += stress_len(k);
	}
	assert_int_equal(st->received + dropped, st->n);
	assert_int_equal(st->push_failed, dropped);
	assert_int_equal(st->cum_a + trailing, dropped);
	assert_int_equal(st->cum_b + trailing_bytes, dropped_bytes);
	assert_int_equal(atomic_load(&st->src.records), st->received);
	assert_int_equal(atomic_load(&st->src.bytes), st->received_bytes);
	/* exactly the records source_push accepted came out, each once */
	assert_memory_equal(st->accepted, st->seen, st->n / 8 + 1);
	assert_int_equal(ring_fill(&st->src.ring), 0);
	assert_int_equal(st->src.seq, (uint32_t)st->n);

	if (mode == STRESS_PACED) {
		assert_int_equal(dropped, 0);
		assert_int_equal(st->drop_recs, 0);
	}
	/* once the consumer stalls the producer must drop: it never waits */
	if (mode == STRESS_SLOW && st->n > 2048 + STRESS_RING)
		assert_true(dropped > 0 && st->drop_recs > 0);

	source_fini(&st->src);
	free(st->accepted);
	free(st->seen);
	free(st);
}

static void test_stress_free(void **state)
{
	(void)state;
	run_stress(STRESS_FREE, UINT32_MAX - 5000);
}

static void test_stress_slow_consumer(void **state)
{
	(void)state;
	run_stress(STRESS_SLOW, UINT32_MAX - 300);
}

static void test_stress_paced(void **state)
{
	(void)state;
	run_stress(STRESS_PACED, 0);
}

/* ---- single-thread cases ---- */

static void test_create_rejects_non_powers_of_two(void **state)
{
	static const uint32_t bad[] = { 0, 1, 3, 5, 6, 7, 12, 1000, 1023, 1025, 0x80000001u,
					UINT32_MAX };
	static const uint32_t good[] = { 2, 4, 8, 1024, 65536 };
	struct ring r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ring_create(&r, bad[i]), -EINVAL);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(ring_create(&r, good[i]), 0);
		assert_int_equal(ring_capacity(&r), good[i]);
		assert_int_equal(ring_ready(&r), 0);
		assert_int_equal(ring_fill(&r), 0);
		ring_destroy(&r);
		assert_null(r.slots);
	}
	ring_destroy(NULL);
}

static void test_rec_slots(void **state)
{
	(void)state;
	assert_int_equal(REC_HEAD_DATA, 80);
	assert_int_equal(rec_slots(0), 1);
	assert_int_equal(rec_slots(1), 1);
	assert_int_equal(rec_slots(REC_HEAD_DATA), 1);
	assert_int_equal(rec_slots(REC_HEAD_DATA + 1), 2);
	assert_int_equal(rec_slots(REC_HEAD_DATA + REC_SIZE), 2);
	assert_int_equal(rec_slots(REC_HEAD_DATA + REC_SIZE + 1), 3);
	assert_int_equal(rec_slots(4096), 33);
}

/* Writes slot contents that say which slot of which record they are. */
static void put(struct ring *r, uint32_t n, uint8_t tag)
{
	for (uint32_t i = 0; i < n; i++)
		memset(ring_wslot(r, i)->raw, tag + i, REC_SIZE);
}

static void check(struct ring *r, uint32_t n, uint8_t tag)
{
	for (uint32_t i = 0; i < n; i++) {
		const union rec_slot *s = ring_rslot(r, i);

		assert_int_equal(s->raw[0], (uint8_t)(tag + i));
		assert_int_equal(s->raw[REC_SIZE - 1], (uint8_t)(tag + i));
	}
}

static void check_edges(uint32_t start)
{
	struct ring r;

	assert_int_equal(ring_create(&r, 8), 0);
	move_indices(&r, start);
	assert_int_equal(ring_ready(&r), 0);
	assert_false(ring_reserve(&r, 9));
	assert_true(ring_reserve(&r, 8));
	put(&r, 8, 10);
	assert_int_equal(ring_ready(&r), 0);
	ring_commit(&r, 8);
	assert_int_equal(ring_fill(&r), 8);
	/* full: not one more */
	assert_false(ring_reserve(&r, 1));
	assert_int_equal(ring_ready(&r), 8);
	check(&r, 8, 10);
	ring_release(&r, 1);
	assert_true(ring_reserve(&r, 1));
	assert_false(ring_reserve(&r, 2));
	put(&r, 1, 50);
	ring_commit(&r, 1);
	assert_false(ring_reserve(&r, 1));
	/* the consumer's copy of head is still 8 ahead of the old tail */
	assert_int_equal(ring_ready(&r), 7);
	check(&r, 7, 11);
	ring_release(&r, 7);
	assert_int_equal(ring_ready(&r), 1);
	check(&r, 1, 50);
	ring_release(&r, 1);
	/* empty again */
	assert_int_equal(ring_ready(&r), 0);
	assert_int_equal(ring_fill(&r), 0);
	assert_true(ring_reserve(&r, 8));
	assert_int_equal(atomic_load(&r.head), (uint32_t)(start + 9));
	assert_int_equal(atomic_load(&r.tail), (uint32_t)(start + 9));
	ring_destroy(&r);
}

static void test_full_and_empty_edges(void **state)
{
	(void)state;
	check_edges(0);
	check_edges(UINT32_MAX - 3);    /* the full ring straddles 2^32 */
	check_edges(UINT32_MAX);
}

/* Records of 1..5 slots pushed and consumed through and far past the 2^32 wrap. */
static void test_index_wraparound(void **state)
{
	const uint32_t start = UINT32_MAX - 20;
	uint64_t rng = tu_mix(seed ^ 0x5eed);
	uint32_t pushed = 0;
	struct ring r;

	(void)state;
	assert_int_equal(ring_create(&r, 16), 0);
	move_indices(&r, start);
	for (int round = 0; round < 1000; round++) {
		uint32_t n1 = 1 + (uint32_t)((rng = tu_mix(rng)) % 5);
		uint32_t n2 = 1 + (uint32_t)((rng = tu_mix(rng)) % 5);
		uint8_t tag = (uint8_t)(round * 11);

		/* two records in flight, so the ring holds data across the wrap */
		assert_true(ring_reserve(&r, n1));
		put(&r, n1, tag);
		ring_commit(&r, n1);
		assert_true(ring_reserve(&r, n2));
		put(&r, n2, (uint8_t)(tag + 100));
		ring_commit(&r, n2);
		assert_int_equal(ring_fill(&r), n1 + n2);
		assert_false(ring_reserve(&r, 16 - n1 - n2 + 1));
		assert_true(ring_reserve(&r, 16 - n1 - n2));
		assert_int_equal(ring_ready(&r), n1 + n2);
		check(&r, n1, tag);
		ring_release(&r, n1);
		assert_int_equal(ring_ready(&r), n2);
		check(&r, n2, (uint8_t)(tag + 100));
		ring_release(&r, n2);
		assert_int_equal(ring_ready(&r), 0);
		pushed += n1 + n2;
	}
	assert_true(pushed > 21);
	assert_int_equal(atomic_load(&r.head), (uint32_t)(start + pushed));
	assert_true(atomic_load(&r.head) < start);   /* it did wrap */
	ring_destroy(&r);
}

/* The consumer sees none of a multi-slot record until ring_commit. */
static void test_no_half_committed_record(void **state)
{
	struct ring r;

	(void)state;
	assert_int_equal(ring_create(&r, 8), 0);
	assert_true(ring_reserve(&r, 1));
	put(&r, 1, 1);
	ring_commit(&r, 1);
	assert_int_equal(ring_ready(&r), 1);
	/* a 4-slot record written slot by slot, not yet committed */
	assert_true(ring_reserve(&r, 4));
	for (uint32_t i = 0; i < 4; i++) {
		memset(ring_wslot(&r, i)->raw, 20 + i, REC_SIZE);
		assert_int_equal(ring_ready(&r), 1);
	}
	ring_release(&r, 1);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(ring_ready(&r), 0);
	ring_commit(&r, 4);
	assert_int_equal(ring_ready(&r), 4);
	check(&r, 4, 20);
	ring_release(&r, 4);
	assert_int_equal(ring_ready(&r), 0);
	ring_destroy(&r);
}

/* Pops one record pushed by source_push and rejoins its payload. */
static const struct rec *pop(struct source *s, uint8_t *pkt, uint32_t *slots)
{
	const struct rec *h;
	uint32_t ready = ring_ready(&s->ring);

	assert_true(ready > 0);
	h = &ring_rslot(&s->ring, 0)->rec;
	*slots = rec_slots(h->len);
	assert_true(*slots <= ready);
	memcpy(pkt, h->data, h->len < REC_HEAD_DATA ? h->len : REC_HEAD_DATA);
	for (uint32_t off = REC_HEAD_DATA, i = 1; off < h->len; off += REC_SIZE, i++)
		memcpy(pkt + off, ring_rslot(&s->ring, i)->raw,
		       h->len - off < REC_SIZE ? h->len - off : REC_SIZE);
	return h;
}

static void test_source_push_layout(void **state)
{
	static const uint32_t lens[] = { 0, 1, 79, 80, 81, 207, 208, 209, 1000, 4095, 4096 };
	uint8_t pkt[4096];
	struct source s;

	(void)state;
	assert_int_equal(source_init(&s, "layout", 64), 0);
	for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
		struct rec head = {
			.t_real = 111 + (int64_t)j, .t_mono = 222 + (int64_t)j, .kind = REC_RX,
			.seq = 9999, .len = 9999, .a = -1, .b = 2, .c = 3,
		};
		const struct rec *h;
		uint32_t slots;

		assert_true(source_push(&s, &head, pattern + j, lens[j]));
		assert_int_equal(ring_fill(&s.ring), rec_slots(lens[j]));
		h = pop(&s, pkt, &slots);
		assert_int_equal(slots, rec_slots(lens[j]));
		assert_int_equal(ring_ready(&s.ring), slots);
		assert_int_equal(h->kind, REC_RX);
		assert_int_equal(h->seq, j);            /* not the caller's */
		assert_int_equal(h->len, lens[j]);      /* not the caller's */
		assert_int_equal(h->t_real, 111 + (int64_t)j);
		assert_int_equal(h->t_mono, 222 + (int64_t)j);
		assert_int_equal(h->a, -1);
		assert_int_equal(h->b, 2);
		assert_int_equal(h->c, 3);
		assert_memory_equal(pkt, pattern + j, lens[j]);
		ring_release(&s.ring, slots);
	}
	assert_int_equal(atomic_load(&s.records), sizeof(lens) / sizeof(lens[0]));
	assert_int_equal(atomic_load(&s.dropped), 0);
	source_fini(&s);
}

static bool push_rx(struct source *s, int64_t t, uint32_t len)
{
	struct rec head = { .t_real = T_REAL_BASE + t, .t_mono = t, .kind = REC_RX };

	return source_push(s, &head, pattern, len);
}

static void expect_rx(struct source *s, uint32_t seq, int64_t t, uint32_t len)
{
	uint8_t pkt[4096];
	uint32_t slots;
	const struct rec *h = pop(s, pkt, &slots);

	assert_int_equal(h->kind, REC_RX);
	assert_int_equal(h->seq, seq);
	assert_int_equal(h->t_mono, t);
	assert_int_equal(h->len, len);
	assert_memory_equal(pkt, pattern, len);
	ring_release(&s->ring, slots);
}

static void expect_drop(struct source *s, uint32_t seq, int64_t t, uint64_t a, uint64_t b)
{
	uint8_t pkt[4096];
	uint32_t slots;
	const struct rec *h = pop(s, pkt, &slots);

	assert_int_equal(h->kind, REC_DROP);
	assert_int_equal(h->seq, seq);
	assert_int_equal(h->t_mono, t);
	assert_int_equal(h->t_real, T_REAL_BASE + t);
	assert_int_equal(h->a, a);
	assert_int_equal(h->b, b);
	assert_int_equal(slots, 1);
	ring_release(&s->ring, 1);
}

static void test_source_push_drop_accounting(void **state)
{
	struct source s;

	(void)state;
	assert_int_equal(source_init(&s, "drops", 16), 0);
	for (uint32_t i = 0; i < 16; i++)
		assert_true(push_rx(&s, 100 + i, 8));
	/* full: these three are dropped whole, one of them multi-slot */
	assert_false(push_rx(&s, 116, 5));
	assert_false(push_rx(&s, 117, 300));
	assert_false(push_rx(&s, 118, 0));
	assert_int_equal(atomic_load(&s.dropped), 3);
	assert_int_equal(atomic_load(&s.dropped_bytes), 305);
	assert_int_equal(atomic_load(&s.records), 16);
	assert_int_equal(atomic_load(&s.bytes), 128);
	assert_int_equal(ring_fill(&s.ring), 16);

	/* one free slot is not enough: the record needs its DROP in front of it */
	expect_rx(&s, 0, 100, 8);
	assert_false(push_rx(&s, 119, 1));
	assert_int_equal(atomic_load(&s.dropped), 4);
	assert_int_equal(atomic_load(&s.dropped_bytes), 306);
	assert_int_equal(ring_fill(&s.ring), 15);

	expect_rx(&s, 1, 101, 8);
	assert_true(push_rx(&s, 120, 7));
	for (uint32_t i = 2; i < 16; i++)
		expect_rx(&s, i, 100 + i, 8);
	/* the first dropped record's times, the cumulative counts, the next seq */
	expect_drop(&s, 20, 116, 4, 306);
	expect_rx(&s, 20, 120, 7);
	assert_int_equal(ring_ready(&s.ring), 0);

	/* a second gap: counts stay cumulative, the times are of the new gap */
	for (uint32_t i = 0; i < 16; i++)
		assert_true(push_rx(&s, 121 + i, 1));
	assert_false(push_rx(&s, 137, 10));
	assert_false(push_rx(&s, 138, 20));
	for (uint32_t i = 0; i < 16; i++)
		expect_rx(&s, 21 + i, 121 + i, 1);
	assert_true(push_rx(&s, 139, 200));     /* DROP + 2 slots */
	assert_int_equal(ring_fill(&s.ring), 3);
	expect_drop(&s, 39, 137, 6, 336);
	expect_rx(&s, 39, 139, 200);

	/* no pending drop: no DROP record */
	assert_true(push_rx(&s, 140, 3));
	expect_rx(&s, 40, 140, 3);
	assert_int_equal(ring_ready(&s.ring), 0);

	/* larger than the whole ring: always dropped, even when empty, and counted */
	assert_false(push_rx(&s, 141, REC_HEAD_DATA + 16 * REC_SIZE));
	assert_int_equal(atomic_load(&s.dropped), 7);
	assert_int_equal(atomic_load(&s.dropped_bytes), 336 + REC_HEAD_DATA + 16 * REC_SIZE);
	assert_true(push_rx(&s, 142, 0));
	expect_drop(&s, 42, 141, 7, 336 + REC_HEAD_DATA + 16 * REC_SIZE);
	expect_rx(&s, 42, 142, 0);
	assert_int_equal(atomic_load(&s.records), 16 + 1 + 16 + 1 + 1 + 1);
	source_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_rejects_non_powers_of_two),
		cmocka_unit_test(test_rec_slots),
		cmocka_unit_test(test_full_and_empty_edges),
		cmocka_unit_test(test_index_wraparound),
		cmocka_unit_test(test_no_half_committed_record),
		cmocka_unit_test(test_source_push_layout),
		cmocka_unit_test(test_source_push_drop_accounting),
		cmocka_unit_test(test_stress_paced),
		cmocka_unit_test(test_stress_free),
		cmocka_unit_test(test_stress_slow_consumer),
	};
	uint64_t rng;

	seed = tu_seed("test_ring");
	printf("# %" PRIu64 " records per stress run%s\n", stress_records(),
#ifdef UNDER_TSAN
	       getenv("PORTLOGD_STRESS_RECORDS") ? "" : " (fewer under ThreadSanitizer)"
#else
	       ""
#endif
	       );
	fflush(stdout);
	rng = tu_mix(seed);
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)((rng = tu_mix(rng)) >> 56);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
