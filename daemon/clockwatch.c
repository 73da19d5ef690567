/* SPDX-License-Identifier: GPL-2.0-or-later */
/* clockwatch.c - a machine's clock that stood still, seen through its RTC's seconds (clockwatch.h). */
#include "clockwatch.h"

void clockwatch_init(struct clockwatch *w, int64_t period_ns)
{
	*w = (struct clockwatch){ .period_ns = period_ns };
}

/* The least phase of the window, each lowered by the drift allowed since it was seen. */
static int64_t base_at(const struct clockwatch *w, int64_t t)
{
	int64_t base = INT64_MAX;

	for (unsigned i = 0; i < w->n; i++) {
		int64_t b = w->phase[i] - (t - w->at[i]) / 1000000 * CLOCKWATCH_DRIFT_PPM;

		if (b < base)
			base = b;
	}
	return base;
}

bool clockwatch_update(struct clockwatch *w, int64_t t, int64_t sec, struct clockwatch_stop *s)
{
	int64_t phase, base, lost = 0;

	w->updates++;
	if (w->last == 0)
		w->sec0 = sec;
	phase = t - (sec - w->sec0) * w->period_ns;
	base = w->n > 0 ? base_at(w, t) : phase;
	if (phase < base) {
		lost = base - phase;
		/* the window's phases in the clock's new time: the base goes on from here */
		for (unsigned i = 0; i < w->n; i++)
			w->phase[i] -= lost;
		w->stops++;
		w->lost_ns += lost;
		if (lost > w->lost_max_ns)
			w->lost_max_ns = lost;
		/* from the update before the one before: the update a pause swallowed is
		 * read at the resume, late by where in its second the pause ended, and so
		 * may look on time (test_clockwatch met it in most runs) */
		*s = (struct clockwatch_stop){ .from = w->before != 0 ? w->before : w->last, .to = t,
					       .lost = lost };
	}
	w->spread_ns = phase - (phase < base ? phase : base);
	w->phase[w->next] = phase;
	w->at[w->next] = t;
	w->next = (w->next + 1) % CLOCKWATCH_WINDOW;
	if (w->n < CLOCKWATCH_WINDOW)
		w->n++;
	w->before = w->last;
	w->last = t;
	return lost > 0;
}
