/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reasm_model.c - a wire, a device and a reader around the reassembler: the rule's bench. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reasm_model.h"

struct reasm_dev rm_dev_model(const struct rm_machine *mc)
{
	int64_t c = mc->char_ns;

	switch (mc->dev) {
	case RM_FIFO:
		return (struct reasm_dev){ .trigger = mc->trigger, .timeout_ns = 4 * c,
					   .hold_ns = (int64_t)mc->trigger * 4 * c,
					   .blur_ns = c / 2 };
	case RM_USB:
		/* its timer, and up to one USB frame before the host has the packet */
		return (struct reasm_dev){ .hold_ns = mc->latency_ns + RM_FRAME_NS,
					   .blur_ns = (mc->latency_ns + RM_FRAME_NS) / 2 };
	case RM_ADAPTER:
		/* as the daemon gives an adapter it measured (delivery_model): its timeout
		 * and the host's poll after it (the likeliest in the middle, the blur the
		 * whole poll: a full transfer waits for it too), a byte held up to the whole
		 * transfer's time */
		return (struct reasm_dev){ .trigger = mc->xfer,
					   .timeout_ns = mc->hold_ns + mc->poll_ns / 2,
					   .hold_ns = (int64_t)mc->xfer * (mc->hold_ns + mc->poll_ns),
					   .blur_ns = mc->poll_ns, .whole = true };
	case RM_DIRECT:
		break;
	}
	return (struct reasm_dev){ 0 };
}

struct rm_run *rm_new(const struct rm_machine *mc, size_t cap)
{
	struct rm_run *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	m->mc = *mc;
	m->dev = rm_dev_model(mc);
	m->cap = cap;
	m->wire = calloc(cap + 1, sizeof(*m->wire));
	m->seen_wire = calloc(cap + 1, sizeof(*m->seen_wire));
	m->backlog = calloc(cap + 1, sizeof(*m->backlog));
	m->data = calloc(cap + 1, 1);
	m->starts = calloc(cap + 1, sizeof(*m->starts));
	m->read_start = calloc(cap + 1, sizeof(*m->read_start));
	m->doubted = calloc(cap + 1, sizeof(*m->doubted));
	m->on_time = calloc(cap + 1, sizeof(*m->on_time));
	m->line = calloc(cap + 1, sizeof(*m->line));
	m->cut = calloc(cap + 1, sizeof(*m->cut));
	m->line_t = calloc(cap + 1, sizeof(*m->line_t));
	m->line_doubted = calloc(cap + 1, sizeof(*m->line_doubted));
	m->unmarked = calloc(cap + 1, sizeof(*m->unmarked));
	if (!m->wire || !m->seen_wire || !m->backlog || !m->data || !m->starts || !m->read_start
	    || !m->doubted || !m->on_time
	    || !m->line || !m->cut || !m->line_t || !m->line_doubted || !m->unmarked) {
		rm_free(m);
		return NULL;
	}
	return m;
}

void rm_free(struct rm_run *m)
{
	if (m == NULL)
		return;
	free(m->wire);
	free(m->seen_wire);
	free(m->backlog);
	free(m->data);
	free(m->starts);
	free(m->read_start);
	free(m->doubted);
	free(m->on_time);
	free(m->line);
	free(m->cut);
	free(m->line_t);
	free(m->line_doubted);
	free(m->unmarked);
	free(m);
}

bool rm_byte(struct rm_run *m, int64_t end, uint8_t byte)
{
	if (m->n == m->cap)
		return false;
	m->wire[m->n] = end;
	m->data[m->n++] = byte;
	return true;
}

/* ---- the machine's clock: the wire as its device got it, the stops taken out ---- */

/* Each byte's end as the stopped machine's device got it (g), on its clock: the
 * wire's less the stops before it; a byte that came in a stop at the stop's end (its
 * clock stood still meanwhile), then each a backlog_ns after the one before until the
 * device has caught up with the wire. Whether it came so (late). */
static void machine_clock(const struct rm_run *m, int64_t *g, bool *late)
{
	const struct rm_machine *mc = &m->mc;
	int64_t step = mc->backlog_ns > 0 ? mc->backlog_ns : mc->char_ns / 2;

	for (size_t i = 0; i < m->n; i++) {
		int64_t w = m->wire[i], off = 0;
		bool in = false;

		for (size_t k = 0; k < mc->nstops; k++) {
			int64_t a = mc->stops[2 * k], len = mc->stops[2 * k + 1];

			if (w >= a + len) {
				off += len;
			} else if (w >= a) {
				in = true;
				g[i] = a - off;
				break;
			}
		}
		if (!in)
			g[i] = w - off;
		late[i] = in;
		if (i > 0 && (in || late[i - 1]) && g[i] < g[i - 1] + step) {
			g[i] = g[i - 1] + step;
			late[i] = true;
		}
	}
}

/* ---- the device: delivery k hands over bytes [at[k], at[k + 1]) at t[k] ---- */

static size_t deliver_direct(const int64_t *wire, size_t n, int64_t *t, size_t *at)
{
	for (size_t i = 0; i < n; i++) {
		t[i] = wire[i];
		at[i] = i;
	}
	at[n] = n;
	return n;
}

/* A 16550A: its interrupt at the trigger's byte, or 4 characters after the last byte
 * when no other came; its handler irq later takes what the FIFO (16) holds then. A
 * byte that ends at the very instant of the timeout came after it (with irq 0, the
 * edge of the handler's latency that reasm.h leaves unseen). */
static size_t deliver_fifo(const int64_t *wire, size_t n, const struct rm_machine *mc,
			   int64_t *t, size_t *at)
{
	const size_t trig = mc->trigger;
	const int64_t c = mc->char_ns;
	size_t k = 0, i = 0;

	while (i < n) {
		size_t j = i;
		int64_t ho;

		while (j + 1 - i < trig && j + 1 < n && wire[j + 1] < wire[j] + 4 * c)
			j++;
		ho = (j + 1 - i == trig ? wire[j] : wire[j] + 4 * c) + mc->irq_ns;
		for (j++; j < n && wire[j] < ho && j - i < 16; j++)
			;
		t[k] = ho;
		at[k++] = i;
		i = j;
	}
	at[k] = n;
	return k;
}

static size_t deliver_usb(const int64_t *wire, size_t n, int64_t latency, int64_t *t, size_t *at)
{
	int64_t last = INT64_MIN / 2;
	size_t k = 0, i = 0;

	while (i < n) {
		/* the first frame boundary at which the latency timer has run out
		 * with bytes waiting; or the end of the byte that fills its buffer */
		int64_t f = (wire[i] / RM_FRAME_NS + 1) * RM_FRAME_NS;
		size_t j = i;

		while (f < last + latency)
			f += RM_FRAME_NS;
		while (j < n && wire[j] <= f && j - i < RM_USB_FULL)
			j++;
		if (j - i == RM_USB_FULL)
			f = wire[j - 1];
		t[k] = f;
		at[k++] = i;
		last = f;
		i = j;
	}
	at[k] = n;
	return k;
}

/* An adapter on a receive timeout: a transfer of xfer bytes when the last of them
 * ends, or what it holds when hold has passed since its last byte with no other;
 * the host takes each up to poll later (a random share: seeded by the bytes'
 * times, so that a run repeats), and a byte that comes meanwhile is the next's. */
static size_t deliver_adapter(const int64_t *wire, size_t n, const struct rm_machine *mc,
			      int64_t *t, size_t *at)
{
	size_t k = 0, i = 0;
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	while (i < n) {
		size_t j = i;

		while (j + 1 - i < mc->xfer && j + 1 < n && wire[j + 1] < wire[j] + mc->hold_ns)
			j++;
		t[k] = j + 1 - i == mc->xfer ? wire[j] : wire[j] + mc->hold_ns;
		if (mc->poll_ns > 0) {
			x ^= (uint64_t)wire[j];
			x *= 0xbf58476d1ce4e5b9ULL;
			t[k] += (int64_t)((x >> 17) % (uint64_t)(mc->poll_ns + 1));
		}
		if (k > 0 && t[k] < t[k - 1])
			t[k] = t[k - 1];        /* the host takes them in order */
		at[k++] = i;
		i = j + 1;
	}
	at[k] = n;
	return k;
}

/* ---- the reader ---- */

struct bench {
	struct rm_run *m;
	const struct rm_reader *rdr;
	void *ctx;
	const int64_t *due;      /* each hand-over's time had no interrupt waited (irq_stops) */
	size_t doubts;
	bool cut;                /* the last line ended by the delimiter or max_len */
	bool line_doubted;       /* a doubt came with a read of the line in progress */
};

static void bench_emit(void *ctx, const struct reasm_packet *pkt)
{
	struct bench *b = ctx;
	struct rm_run *m = b->m;

	if (m->emitted < m->n) {
		m->line[m->emitted] = true;
		m->cut[m->emitted] = b->cut;
		m->line_t[m->emitted] = pkt->t_mono;
		m->line_doubted[m->emitted] = b->line_doubted;
	}
	b->line_doubted = false;
	b->cut = pkt->end == REASM_DELIM || pkt->end == REASM_MAX;
	m->emitted += pkt->len;
	m->lines++;
	if (b->rdr->packet != NULL)
		b->rdr->packet(b->ctx, pkt);
}

static void bench_doubt(void *ctx, const struct reasm_doubt *d)
{
	struct bench *b = ctx;

	b->m->doubted[b->m->read_first] = true;
	b->line_doubted = true;     /* the line the read joins, or (reasm emits it first) begins */
	b->doubts++;
	if (b->rdr->doubt != NULL)
		b->rdr->doubt(b->ctx, d);
}

/* The interrupt's stop that t falls in: its start and (*end) end; INT64_MAX: none. */
static int64_t irq_stop_at(const struct rm_machine *mc, int64_t t, int64_t *end)
{
	for (size_t k = 0; k < mc->nirq_stops; k++) {
		int64_t a = mc->irq_stops[2 * k];

		*end = a + mc->irq_stops[2 * k + 1];
		if (t >= a && t < *end)
			return a;
	}
	return INT64_MAX;
}

/* An empty read at now: the sensors say since when a hand-over may wait (sensors_held's
 * word): another CPU's latest look, the start of an interrupt's stop. */
static void bench_expire(struct bench *b, struct reasm *r, int64_t now)
{
	const struct rm_machine *mc = &b->m->mc;
	uint64_t x = (uint64_t)now * 0x9e3779b97f4a7c15ULL;
	int64_t held = mc->look_ns > 0 ? now - (int64_t)((x >> 20) % (uint64_t)mc->look_ns) : INT64_MAX;
	int64_t end, stop = irq_stop_at(mc, now, &end);

	if (stop < held)
		held = stop;
	if (b->rdr->expire != NULL)
		b->rdr->expire(b->ctx, r, now, held);
	else
		reasm_expire(r, now, held);
}

/* Hand-overs due in an interrupt's stop happen at its end (due keeps when). */
static void irq_wait(const struct rm_machine *mc, int64_t *t, int64_t *due, size_t nd)
{
	for (size_t k = 0; k < nd; k++) {
		int64_t end;

		due[k] = t[k];
		if (irq_stop_at(mc, t[k], &end) != INT64_MAX)
			t[k] = end;
	}
}

/* Bytes of a read of n beyond what one hand-over holds, as reasm.c's extra() counts. */
static size_t beyond(const struct rm_run *m, size_t n)
{
	size_t cap = m->dev.trigger > 1 ? m->dev.trigger + !m->dev.whole
		     : m->dev.hold_ns == 0 && m->mc.char_ns > 0 ? 1 : n;

	return n > cap ? n - cap : 0;
}

static void read_all(struct bench *b, struct reasm *r, const int64_t *t, const size_t *at,
		     size_t nd)
{
	struct rm_run *m = b->m;
	const struct rm_reader *rdr = b->rdr;
	int64_t busy = INT64_MIN;   /* the reader is free from then on: one thing at a time */
	bool drained = false;       /* the read after the last one found bytes */

	for (size_t k = 0; k < nd;) {
		int64_t seen = busy, end, dl, lat;
		size_t k2 = k + 1, n;
		struct reasm_read rd = { .woken = !drained };
		struct rm_plan p = { .stage = REASM_STAGE_CPU };

		if (!drained) {
			seen = rdr->wake(b->ctx, t[k]);
			seen = seen > busy ? seen : busy;
		}
		/* the read at each deadline, when the reader runs: empty before the
		 * delivery; after it, it finds the bytes (no wake-up said so) */
		while (!drained && (dl = reasm_deadline(r)) != INT64_MAX) {
			dl = rdr->look(b->ctx, dl);
			dl = dl > busy ? dl : busy;
			if (dl >= t[k]) {
				if (dl < seen) {
					rd.woken = false;
					seen = dl;
				}
				break;
			}
			bench_expire(b, r, dl);
			busy = dl;
		}
		rdr->plan(b->ctx, &p);
		end = seen + p.dur;
		/* what came meanwhile is found at once */
		while (k2 < nd && t[k2] <= (p.to_end ? end : seen))
			k2++;
		n = at[k2] - at[k];
		lat = seen - b->due[k];      /* an interrupt that waited makes it late */
		rd.seen_mono = rd.woken ? seen : end;
		rd.seen_real = rd.seen_mono + RM_REAL_OFFSET;
		rd.end_mono = end;
		if (m->mc.sensors) {
			/* a sound bound, not a tight one */
			rd.from_mono = b->due[k] - p.slack;
			rd.from_stage = p.stage;
			if (p.disproven && beyond(m, n) > 0)
				rd.from_mono = end - (int64_t)beyond(m, n) * m->mc.char_ns + 1;
		}
		m->read_first = at[k];
		m->on_time[at[k]] = lat <= m->mc.on_time_ns;
		m->read_start[at[k]] = true;
		if (rdr->read != NULL)
			rdr->read(b->ctx, r, m->data + at[k], n, &rd);
		else
			reasm_read(r, m->data + at[k], n, &rd);
		/* the reader reads until the kernel is empty: the next read finds it so,
		 * or finds what was handed over meanwhile */
		busy = end + p.drain;
		drained = k2 < nd && t[k2] <= busy;
		if (!drained)
			bench_expire(b, r, busy);
		k = k2;
	}
}

/* ---- the checks ---- */

/* The silence before byte i (i > 0) on a clock of byte ends t. */
static int64_t silence(const struct rm_run *m, const int64_t *t, size_t i)
{
	return t[i] - m->mc.char_ns - t[i - 1];
}

/* The wire's gap: the one asked for, where the device hides it, else gap_ns. */
static int64_t wire_gap(const struct rm_machine *mc)
{
	return mc->want_ns > 0 ? mc->want_ns : mc->gap_ns;
}

/* How much faster than the baud the backlog at byte i - 1 or i (i > 0) came: the time
 * the machine's clock lost in it; 0: none there. */
static int64_t backlog_lost(const struct rm_run *m, size_t i)
{
	size_t b = m->backlog[i] ? i : i - 1, e = b;

	if (!m->backlog[b])
		return 0;
	while (b > 0 && m->backlog[b - 1])
		b--;
	while (e + 1 < m->n && m->backlog[e + 1])
		e++;
	return (int64_t)(e - b) * m->mc.char_ns - (m->seen_wire[e] - m->seen_wire[b]);
}

/* The wrong boundaries not at a doubted read: each must be at the read its byte is in. */
static unsigned check_boundaries(struct rm_run *m)
{
	const struct rm_machine *mc = &m->mc;
	unsigned wrong = 0;

	for (size_t i = 0, l = 0; i < m->n; i++) {
		size_t j = i;

		if (m->line[i])
			l = i;
		if (m->line[i] == m->starts[i] || (m->line[i] && m->cut[i]) || m->doubted[i])
			continue;
		/* a silence the machine's clock did not see, for it stood still through it
		 * (a stop while the wire was quiet, nothing held to show it, or too little:
		 * what it held came faster than the baud by no more than a read's bound
		 * may run early) */
		if (m->starts[i] && i > 0 && silence(m, m->seen_wire, i) < wire_gap(mc)
		    && backlog_lost(m, i) <= mc->loose_ns)
			continue;
		while (j > 0 && !m->read_start[j])
			j--;
		/* a gap asked for that the device hides: the line says so once; by_line:
		 * a mark at the line covers the boundary before it and each inside it */
		if (((mc->want_ns > 0 && !m->line[i]) || mc->by_line) && m->line_doubted[l])
			continue;
		m->unmarked[i] = !m->doubted[j];
		if (!m->doubted[j] && wrong++ < 5 && mc->report)
			fprintf(stderr, "%s: byte %zu: %s without a mark (silence %" PRId64
				" us, gap %" PRId64 ")\n", mc->name, i,
				m->line[i] ? "a boundary" : "no boundary",
				i ? silence(m, m->wire, i) / 1000 : 0, wire_gap(mc) / 1000);
	}
	return wrong;
}

/* First-byte dates of the lines that are one packet of the wire, found on time. */
static unsigned check_dates(const struct rm_run *m)
{
	const struct rm_machine *mc = &m->mc;
	int64_t c = mc->char_ns, err = m->dev.blur_ns;
	unsigned dates = 0;

	for (size_t i = 0, l = 0; i < m->n; i++) {
		size_t j = i;
		int64_t truth = m->seen_wire[i] - c, pauses = 0;
		bool backlog;

		if (!m->line[i])
			continue;
		l++;
		if (!m->starts[i] || m->doubted[i] || m->cut[i])
			continue;
		while (j > 0 && !m->read_start[j])
			j--;
		if (!m->on_time[j])
			continue;
		/* not a read with bytes a stopped machine's backlog brought, faster than the
		 * baud: dated back by the baud, as nothing says otherwise (its clock lost
		 * the stop too) */
		backlog = m->backlog[i];
		for (j = i + 1; j < m->n && !m->read_start[j]; j++) {
			pauses += silence(m, m->seen_wire, j);
			backlog |= m->backlog[j];
		}
		if (backlog)
			continue;
		if ((m->line_t[i] < truth - err - c
		     || m->line_t[i] > truth + err + mc->on_time_ns + pauses + c)
		    && dates++ < 5 && mc->report)
			fprintf(stderr, "%s: line %zu dated %" PRId64 " us from its first byte "
				"(stamp error %" PRId64 " us)\n", mc->name, l - 1,
				(m->line_t[i] - truth) / 1000, err / 1000);
	}
	return dates;
}

bool rm_play(struct rm_run *m, const struct rm_reader *rdr, void *ctx, struct rm_result *res)
{
	const struct rm_machine *mc = &m->mc;
	struct bench b = { .m = m, .rdr = rdr, .ctx = ctx };
	int64_t *t = calloc(m->n + 1, sizeof(*t)), *due = calloc(m->n + 1, sizeof(*due));
	size_t *at = calloc(m->n + 1, sizeof(*at)), nd, reads = 0;
	uint8_t *buf = malloc(mc->max_len);
	struct reasm r;

	if (t == NULL || due == NULL || at == NULL || buf == NULL) {
		free(t);
		free(due);
		free(at);
		free(buf);
		return false;
	}
	/* the wire's truth */
	for (size_t i = 0; i < m->n; i++)
		m->starts[i] = i == 0 || silence(m, m->wire, i) >= wire_gap(mc);
	/* the device, on the machine's clock */
	machine_clock(m, m->seen_wire, m->backlog);
	nd = mc->dev == RM_USB ? deliver_usb(m->seen_wire, m->n, mc->latency_ns, t, at)
	     : mc->dev == RM_FIFO ? deliver_fifo(m->seen_wire, m->n, mc, t, at)
	     : mc->dev == RM_ADAPTER ? deliver_adapter(m->seen_wire, m->n, mc, t, at)
	     : deliver_direct(m->seen_wire, m->n, t, at);
	irq_wait(mc, t, due, nd);
	b.due = due;
	reasm_init(&r, buf, mc->max_len, mc->gap_ns, mc->char_ns, mc->delim, bench_emit, &b);
	reasm_set_dev(&r, &m->dev);
	reasm_set_gap(&r, mc->gap_ns, mc->want_ns);
	reasm_on_doubt(&r, bench_doubt);
	read_all(&b, &r, t, at, nd);
	reasm_flush(&r);
	for (size_t i = 0; i < m->n; i++)
		reads += m->read_start[i];
	*res = (struct rm_result){ .wrong = check_boundaries(m), .dates = check_dates(m),
				   .reads = reads, .doubts = b.doubts };
	free(t);
	free(due);
	free(at);
	free(buf);
	return true;
}
