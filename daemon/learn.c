/* SPDX-License-Identifier: GPL-2.0-or-later */
/* learn.c - an adapter's transfer size and receive timeout, from the traffic it carries. */
#include <string.h>

#include "learn.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
/* Two reads a streaming pair apart: the reader's own scatter between its two wake-ups */
#define LEARN_TOL_NS 100000

void learn_init(struct learn *l, int64_t char_ns, int64_t assume_ns)
{
	memset(l, 0, sizeof(*l));
	l->width_min = INT64_MAX / 2;
	l->char_ns = char_ns;
	l->assume_ns = assume_ns;
	l->state = LEARN_ASSUMED;
}

static bool in_use(const struct learn *l)
{
	return l->state == LEARN_SIZED || l->state == LEARN_LEARNED || l->state == LEARN_WIDENED;
}

const char *learn_state_name(enum learn_state s)
{
	switch (s) {
	case LEARN_SIZED: return "sized";
	case LEARN_LEARNED: return "learned";
	case LEARN_WIDENED: return "widened";
	case LEARN_WITHDRAWN: return "withdrawn";
	default: return "assumed";
	}
}

bool learn_get(const struct learn *l, struct learn_model *m)
{
	if (!in_use(l))
		return false;
	*m = l->model;
	return true;
}

/* Back to the assumption, and learning anew. */
static void withdraw(struct learn *l)
{
	bool timer = l->timer;

	learn_init(l, l->char_ns, l->assume_ns);
	l->state = LEARN_WITHDRAWN;
	l->timer = timer;
}

/* The transfer size the streaming pairs show: one size with LEARN_PAIRS or more and
 * every other size a quarter of that at most (a timer's hand-overs stream on in two
 * sizes or more); 0 when none. */
static unsigned xfer_shown(const struct learn *l)
{
	unsigned best = 0;

	for (unsigned k = 1; k <= LEARN_MAX_XFER; k++)
		if (l->pairs[k] > l->pairs[best])
			best = k;
	if (best == 0 || l->pairs[best] < (best == 1 ? LEARN_SAMPLES : LEARN_PAIRS))
		return 0;
	for (unsigned k = 1; k <= LEARN_MAX_XFER; k++)
		if (k != best && 4u * l->pairs[k] > l->pairs[best])
			return 0;
	return best;
}

/* The model the samples kept show: the cluster at the least estimate, if it holds
 * three quarters of them (the others the sender's pauses, or a model that is wrong);
 * its bounds the widest of the cluster's, its hold the median estimate; false when it
 * does not (or too few). */
static bool cluster(const struct learn *l, struct learn_model *m, unsigned quarters)
{
	int64_t least = INT64_MAX, lo = INT64_MAX, hi = 0, w, est[LEARN_RING];
	unsigned k = 0;

	if (l->nring < LEARN_SAMPLES)
		return false;
	for (unsigned i = 0; i < l->nring; i++)
		least = MIN(least, l->ring[i].est);
	w = LEARN_SPREAD_NS + least / 4;
	for (unsigned i = 0; i < l->nring; i++) {
		unsigned j = k;

		if (l->ring[i].est > least + w)
			continue;
		lo = MIN(lo, l->ring[i].lo);
		hi = MAX(hi, l->ring[i].hi);
		/* kept in order, for the median: 32 at most */
		for (; j > 0 && est[j - 1] > l->ring[i].est; j--)
			est[j] = est[j - 1];
		est[j] = l->ring[i].est;
		k++;
	}
	if (4 * k < quarters * l->nring)
		return false;
	*m = (struct learn_model){ .xfer = l->xfer, .hold_lo_ns = lo, .hold_hi_ns = hi,
				   .hold_ns = est[k / 2], .samples = k };
	return true;
}

/* After a sample: the model, and whether the one in use changed. */
static bool judge(struct learn *l)
{
	struct learn_model m;
	bool learned = l->state == LEARN_LEARNED || l->state == LEARN_WIDENED;

	/* taken when three quarters agree; held while half do */
	if (!cluster(l, &m, learned ? 2 : 3)) {
		if (!learned || l->nring < LEARN_SAMPLES)
			return false;
		withdraw(l);
		return true;
	}
	if (!learned) {
		l->model = m;
		l->state = LEARN_LEARNED;
		return true;
	}
	/* learned: only ever wider, never narrower, while it holds; by an eighth more
	 * than the sample asks (a tenth of a millisecond at least), so that a creeping
	 * bound is not said at every sample */
	l->model.samples = m.samples;
	if (m.hold_lo_ns >= l->model.hold_lo_ns && m.hold_hi_ns <= l->model.hold_hi_ns)
		return false;
	if (m.hold_lo_ns < l->model.hold_lo_ns)
		l->model.hold_lo_ns = MAX(MIN(m.hold_lo_ns, l->model.hold_lo_ns
					      - MAX(l->model.hold_lo_ns / 8, LEARN_TOL_NS)), 0);
	if (m.hold_hi_ns > l->model.hold_hi_ns)
		l->model.hold_hi_ns = MAX(m.hold_hi_ns, l->model.hold_hi_ns
					  + MAX(l->model.hold_hi_ns / 8, LEARN_TOL_NS));
	l->model.hold_ns = m.hold_ns;
	l->state = LEARN_WIDENED;
	return true;
}

bool learn_shown(const struct learn *l, struct learn_model *m)
{
	if (l->state == LEARN_LEARNED || l->state == LEARN_WIDENED)
		return cluster(l, m, 2) || learn_get(l, m);
	return learn_get(l, m);
}

bool learn_read(struct learn *l, size_t n, int64_t from, int64_t seen)
{
	int64_t c = l->char_ns, bytes = (int64_t)n * c;
	bool changed = false, streaming_now = false, on_time;

	if (n == 0 || c <= 0)
		return false;
	from = MIN(from, seen);
	/* a read whose bounds span LEARN_STALL_NS more than the least any read's did: in a
	 * stall the sensors saw, its wake-up says little of when its bytes came */
	l->width_min = MIN(l->width_min, seen - from);
	on_time = seen - from <= l->width_min + LEARN_STALL_NS;
	if (l->have_last) {
		/* the two hand-overs came this far apart, at least and at most */
		int64_t ilo = from - l->last_seen, ihi = seen - l->last_from;
		int64_t d = seen - l->last_seen, tol = MAX(c / 2, LEARN_TOL_NS);
		/* its bytes fill the time since the last read's: the sender streamed on and
		 * the adapter handed them over as the last of them ended */
		bool streaming = d >= bytes - tol && d <= bytes + tol;

		streaming_now = streaming;
		if (streaming) {
			l->npairs++;
			if (n == l->last_n && n <= LEARN_MAX_XFER && l->pairs[n] < UINT16_MAX)
				l->pairs[n]++;
			/* three reads streaming on: the middle one was handed over mid-stream,
			 * which a receive timeout does only when full, the size the next one
			 * has too (the first may be a timeout's, when the sender paused for
			 * just that long); three sizes in a row are a timer's hand-overs */
			if (l->last_streaming) {
				l->triples++;
				l->odd += l->last2_n != l->last_n && l->last_n != n;
			}
		}
		if (l->triples >= 8 && 8 * l->odd > l->triples) {
			changed = in_use(l);
			withdraw(l);
			l->timer = true;
		}
		if (l->xfer == 0 && !l->timer) {
			l->xfer = xfer_shown(l);
			if (l->xfer == 1) {
				/* each byte alone, a character after the one before: the
				 * timeout ran out before the next byte ended, every time */
				l->model = (struct learn_model){ .xfer = 1, .hold_lo_ns = 0,
					.hold_hi_ns = c + MAX(c / 2, LEARN_TOL_NS),
					.hold_ns = c, .samples = l->pairs[1] };
				l->state = LEARN_LEARNED;
				changed = true;
			}
		}
		if (l->xfer > 1 && l->state != LEARN_SIZED && !in_use(l)
		    && (int64_t)(l->xfer - 1) * c > l->assume_ns) {
			/* a full transfer's first byte waited longer than assumed */
			l->model = (struct learn_model){ .xfer = l->xfer, .hold_lo_ns = 0,
							 .hold_hi_ns = l->assume_ns,
							 .hold_ns = l->assume_ns };
			l->state = LEARN_SIZED;
			changed = true;
		}
		if (l->xfer > 1 && l->last_n == l->xfer && n < l->xfer && on_time && l->last_on_time
			   && ihi - bytes <= LEARN_MAX_NS) {
			/* the last part after a full transfer: its delay beyond its bytes */
			struct learn_sample s = { MAX(ilo - bytes, 0), MAX(ihi - bytes, 0),
						  MAX(d - bytes, 0) };

			l->ring[l->head] = s;
			l->head = (l->head + 1) % LEARN_RING;
			if (l->nring < LEARN_RING)
				l->nring++;
			l->samples++;
			changed = judge(l) || changed;
		}
	}
	/* each byte alone, and now more at once though the stream went on: not so */
	if (l->xfer == 1 && n > 1 && l->state == LEARN_LEARNED && !changed) {
		withdraw(l);
		changed = true;
	}
	l->last2_n = l->last_n;
	l->have_last = true;
	l->last_n = n;
	l->last_on_time = on_time;
	l->last_from = from;
	l->last_seen = seen;
	l->last_streaming = streaming_now;
	return changed;
}
