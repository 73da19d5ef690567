/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ring.h - lock-free single-producer/single-consumer ring of fixed-size slots.
 *
 * Contract: exactly one producer thread and one consumer thread per ring, no
 * locks, no allocation and no system call after ring_create(). Capacity is a
 * power of two; indices are free-running 32-bit counters masked on use. Each side
 * keeps a private copy of the other side's index and reloads it only when the
 * copy says the ring looks full (producer) or empty (consumer), so the shared
 * cache lines move only when they must.
 *
 * A record of several slots is reserved, written and committed as one unit:
 * the consumer never sees half of it.
 *
 * Why not Concurrency Kit's ck_ring (libck-dev)? It was the first choice and
 * tests/bench/bench.c measures it side by side with this one. ck_ring 0.7.1 has no
 * peek, so the flusher would copy every record out before the merge; it reloads
 * the consumer index on every push; and its x86_64 atomics are inline assembly,
 * which ThreadSanitizer cannot see, so the stress test could not prove it race
 * free. This ring uses C11 acquire/release atomics only.
 */
#ifndef PORTLOGD_RING_H
#define PORTLOGD_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "rec.h"

struct ring {
	/* producer's cache line */
	_Alignas(64) _Atomic uint32_t head;   /* next slot to write; published by producer */
	uint32_t tail_cache;                  /* producer's copy of tail */
	/* consumer's cache line */
	_Alignas(64) _Atomic uint32_t tail;   /* next slot to read; published by consumer */
	uint32_t head_cache;                  /* consumer's copy of head */
	/* read-only after creation */
	_Alignas(64) uint32_t mask;
	union rec_slot *slots;
};

/* Allocates and touches (prefaults) a ring of `records` slots, a power of two >= 2. */
int ring_create(struct ring *r, uint32_t records);
void ring_destroy(struct ring *r);

static inline uint32_t ring_capacity(const struct ring *r)
{
	return r->mask + 1;
}

/* Producer: room for n more slots? Refreshes the cached tail only when needed. */
static inline bool ring_reserve(struct ring *r, uint32_t n)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	if (ring_capacity(r) - (head - r->tail_cache) >= n)
		return true;
	/* acquire: the consumer's reads of the slots it freed happen before we reuse them */
	r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
	return ring_capacity(r) - (head - r->tail_cache) >= n;
}

/* Producer: the i-th slot after the last committed one (valid after ring_reserve). */
static inline union rec_slot *ring_wslot(struct ring *r, uint32_t i)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	return &r->slots[(head + i) & r->mask];
}

/* Producer: publish n written slots. */
static inline void ring_commit(struct ring *r, uint32_t n)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	/* release: the slot contents written above become visible before the new head */
	atomic_store_explicit(&r->head, head + n, memory_order_release);
}

/*
 * Consumer: number of slots ready to read. It answers from its copy of the
 * producer's head and looks at the head again only once those slots are read,
 * so the shared cache line is touched once per batch: a count above zero may
 * be smaller than what is there now (ring_ready_now is current).
 */
static inline uint32_t ring_ready(struct ring *r)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (r->head_cache == tail)
		/* acquire: pairs with ring_commit, so the slots' contents are visible */
		r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
	return r->head_cache - tail;
}

/* Consumer: number of slots ready to read now, for a consumer that waits for a count. */
static inline uint32_t ring_ready_now(struct ring *r)
{
	/* acquire: pairs with ring_commit, so the slots' contents are visible */
	r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
	return ring_ready(r);
}

/* Consumer: the i-th unread slot (valid for i < ring_ready()). */
static inline const union rec_slot *ring_rslot(const struct ring *r, uint32_t i)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	return &r->slots[(tail + i) & r->mask];
}

/* Consumer: give n slots back to the producer. */
static inline void ring_release(struct ring *r, uint32_t n)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	/* release: our reads of these slots complete before the producer may reuse them */
	atomic_store_explicit(&r->tail, tail + n, memory_order_release);
}

/* Any thread: approximate number of used slots (for "half full" checks and stats). */
static inline uint32_t ring_fill(struct ring *r)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	return head - tail;
}

#endif
