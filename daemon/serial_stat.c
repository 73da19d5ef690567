/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_stat.c - a port's part in the registry: its STAT fields (both directions,
 * the lines thread) and what status counts. */
#include <stdio.h>

#include "fmt.h"
#include "relaxed.h"
#include "serial_internal.h"

static void serial_count(const void *obj, struct part_counts *c)
{
	const struct serial_port *p = obj;

	c->port = true;
	c->up = LD(p->up);
}

/* The TX reader's counters in its port's STAT line: the same, with tx_ before. */
static void tx_stat(const struct serial_port *t, struct fmt_kv *kv)
{
	const struct { const char *key; uint64_t v; } f[] = {
		{ "tx_records", LD(t->src.records) }, { "tx_bytes", LD(t->src.bytes) },
		{ "tx_drops", LD(t->src.dropped) }, { "tx_drop_bytes", LD(t->src.dropped_bytes) },
		{ "tx_wakeups", LD(t->wakeups) }, { "tx_accounted", t->src.accounted },
		{ "tx_late", LD(t->late) }, { "tx_reopens", LD(t->reopens) },
		{ "tx_held_bytes", LD(t->held_bytes) },
	};
	char key[24];

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		fmt_kv_u64(kv, f[i].key, f[i].v);
	if (t->relaying)
		fmt_kv_u64(kv, "tx_relay_lost", LD(t->relay.lost));
	for (int e = 0; e < SERIAL_NERR; e++) {
		snprintf(key, sizeof(key), "tx_%s", serial_err_name[e]);
		fmt_kv_u64(kv, key, LD(t->errors[e]));
	}
	parts_put_faults(kv, "tx_", &t->thread);
}

/* The port's STAT fields: its ring's counts, the lines thread's, the UART's
 * errors since start, and both threads' faults. */
static void serial_stat(const void *obj, struct fmt_kv *kv)
{
	const struct serial_port *p = obj;

	fmt_kv_u64(kv, "records", LD(p->src.records));
	fmt_kv_u64(kv, "bytes", LD(p->src.bytes));
	fmt_kv_u64(kv, "drops", LD(p->src.dropped));
	fmt_kv_u64(kv, "drop_bytes", LD(p->src.dropped_bytes));
	fmt_kv_u64(kv, "wakeups", LD(p->wakeups));
	fmt_kv_u64(kv, "accounted", p->src.accounted);
	fmt_kv_u64(kv, "late", LD(p->late));
	fmt_kv_u64(kv, "reopens", LD(p->reopens));
	fmt_kv_u64(kv, "held_bytes", LD(p->held_bytes));
	serial_learn_stat(p, kv);
	if (p->cfg->lines) {
		fmt_kv_u64(kv, "lines_records", LD(p->lines_src.records));
		fmt_kv_u64(kv, "lines_drops", LD(p->lines_src.dropped));
		fmt_kv_u64(kv, "lines_accounted", p->lines_src.accounted);
	}
	if (p->relaying)
		fmt_kv_u64(kv, "relay_lost", LD(p->relay.lost));
	for (int e = 0; e < SERIAL_NERR; e++)
		fmt_kv_u64(kv, serial_err_name[e], LD(p->errors[e]));
	parts_put_faults(kv, "", &p->thread);
	if (p->cfg->lines)
		parts_put_faults(kv, "lines_", &p->lines_thread);
	if (p->tx != NULL)
		tx_stat(p->tx, kv);
}

bool serial_parts(struct serial_port *p, struct parts *ps)
{
	struct part reader = { .kind = PART_SERIAL, .port = p->cfg->name, .src = &p->src,
			       .obj = p, .count = serial_count, .stat = serial_stat };
	struct part lines = { .kind = PART_LINES, .port = p->cfg->name, .src = &p->lines_src };
	struct part tx = { .kind = PART_TX, .port = p->cfg->name,
			   .src = p->tx != NULL ? &p->tx->src : NULL };

	return parts_add(ps, &reader, &p->beat)
	       && (!p->cfg->lines || parts_add(ps, &lines, &p->lines_beat))
	       && (p->tx == NULL || parts_add(ps, &tx, &p->tx->beat));
}
