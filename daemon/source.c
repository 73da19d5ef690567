/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source.c - the producer side of a ring: packing records into slots, counting drops. */
#include <stddef.h>
#include <string.h>

#include "clock.h"
#include "source.h"

int source_init(struct source *s, const char *name, uint32_t ring_records)
{
	memset(s, 0, sizeof(*s));
	strncpy(s->name, name, sizeof(s->name) - 1);
	atomic_init(&s->records, 0);
	atomic_init(&s->bytes, 0);
	atomic_init(&s->dropped, 0);
	atomic_init(&s->dropped_bytes, 0);
	atomic_init(&s->horizon, INT64_MIN);
	return ring_create(&s->ring, ring_records);
}

void source_fini(struct source *s)
{
	ring_destroy(&s->ring);
}

/* Only the producer writes these counters, so load + store is enough. */
static void add(_Atomic uint64_t *counter, uint64_t n)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* The DROP record with the cumulative counts, in the slot r; seq: the next record's. */
static void put_drop(struct source *s, struct rec *r, uint32_t seq)
{
	*r = (struct rec){
		.t_real = s->drop_t_real, .t_mono = s->drop_t_mono, .seq = seq,
		.kind = REC_DROP, .c = s->dir,
		.a = (int64_t)atomic_load_explicit(&s->dropped, memory_order_relaxed),
		.b = (int64_t)atomic_load_explicit(&s->dropped_bytes, memory_order_relaxed),
	};
	s->drop_pending = false;
}

bool source_push(struct source *s, const struct rec *head, const void *data, uint32_t len)
{
	uint32_t need = rec_slots(len) + (s->drop_pending ? 1 : 0);
	uint32_t seq = s->seq++;
	uint32_t i = 0, first;
	struct rec *r;

	if (len > SOURCE_LEN_MAX || !ring_reserve(&s->ring, need)) {
		if (!s->drop_pending) {
			s->drop_pending = true;
			s->drop_t_real = head->t_real;
			s->drop_t_mono = head->t_mono;
		}
		add(&s->dropped, 1);
		add(&s->dropped_bytes, len);
		return false;
	}
	if (s->drop_pending)
		put_drop(s, &ring_wslot(&s->ring, i++)->rec, seq);
	r = &ring_wslot(&s->ring, i++)->rec;
	memcpy(r, head, offsetof(struct rec, data));
	r->seq = seq;
	if (r->kind == REC_EV)
		r->c = s->dir;          /* its line says which ring of the port */
	r->len = (uint16_t)len;
	first = len < REC_HEAD_DATA ? len : REC_HEAD_DATA;
	if (first > 0)
		memcpy(r->data, data, first);   /* data may be NULL when len is 0 */
	for (uint32_t off = first; off < len; off += REC_SIZE) {
		uint32_t n = len - off < REC_SIZE ? len - off : REC_SIZE;
		memcpy(ring_wslot(&s->ring, i++)->raw, (const uint8_t *)data + off, n);
	}
	/* counted before the commit: once the flusher has the record (the commit's
	 * release), it sees it counted, so no STAT line accounts for more than there is */
	add(&s->records, 1);
	add(&s->bytes, len);
	ring_commit(&s->ring, i);
	return true;
}

bool source_event(struct source *s, enum ev_code code, int64_t err, const char *text)
{
	struct rec head = {
		.t_real = real_ns(), .t_mono = mono_ns(), .kind = REC_EV, .a = code, .b = err,
	};
	size_t len = strlen(text);

	if (len > SOURCE_EV_MAX)
		len = SOURCE_EV_MAX;
	return source_push(s, &head, text, (uint32_t)len);
}

void source_set_horizon(struct source *s, int64_t t_mono)
{
	if (s->drop_pending && s->drop_t_mono < t_mono)
		t_mono = s->drop_t_mono;
	/* release: the records pushed before are visible to whoever sees this value */
	atomic_store_explicit(&s->horizon, t_mono, memory_order_release);
}

bool source_push_drops(struct source *s)
{
	if (!s->drop_pending || !ring_reserve(&s->ring, 1))
		return false;
	put_drop(s, &ring_wslot(&s->ring, 0)->rec, s->seq);
	ring_commit(&s->ring, 1);
	return true;
}
