/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stat.c - self-monitoring lines, written by the flusher from the registered parts' counters. */
#include "stat.h"

void stat_hook(void *ctx, struct flusher *f, bool stat_due, bool final)
{
	struct parts *ps = ctx;
	char text[FMT_FIELDS_MAX];     /* fmt_kv keeps it whole: never cut in a field */
	struct fmt_kv kv;

	for (unsigned i = 0; i < ps->n; i++) {
		struct part *p = &ps->part[i];
		struct part_counts c = { .latency_max_us = -1 };

		/* a part without a ring has its overruns said from here */
		if (p->src != NULL || p->count == NULL)
			continue;
		p->count(p->obj, &c);
		if (c.overruns != p->overruns_said
		    && flush_line(f, REC_OVERRUN, (int64_t)(c.overruns - p->overruns_said), ""))
			p->overruns_said = c.overruns;  /* else in the next one */
	}
	if (!stat_due && !final)
		return;
	for (unsigned i = 0; i < ps->n; i++) {
		const struct part *p = &ps->part[i];

		if (p->stat == NULL)
			continue;
		fmt_kv_init(&kv, text, sizeof(text));
		fmt_kv_word(&kv, parts_stat_name(p));
		p->stat(p->obj, &kv);
		(void)flush_line(f, REC_STAT, 0, text);
	}
}
