/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stat.c - self-monitoring lines and the metrics file, written by the flusher from the registered parts' counters. */
#include "metrics.h"
#include "stat.h"

void stat_hook(void *ctx, struct flusher *f, bool stat_due, bool final)
{
	struct parts *ps = ctx;
	char text[FMT_FIELDS_MAX];
	bool metrics;

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
	stat_due |= final;
	/* the metrics file has the values of the STAT lines of this round, or of lines
	 * that would be (its first pass, a change of the watchdog's verdict) */
	metrics = f->metrics != NULL && metrics_due(f->metrics, stat_due);
	if (!stat_due && !metrics)
		return;
	for (unsigned i = 0; i < ps->n; i++) {
		const struct part *p = &ps->part[i];

		if (p->stat == NULL)
			continue;
		parts_stat_text(p, text);
		if (stat_due)
			(void)flush_line(f, REC_STAT, 0, text);
		if (metrics)
			metrics_take(f->metrics, i, text);
	}
	if (metrics)
		(void)metrics_write(f->metrics, final);    /* a failure is said there */
}
