/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_learn.c - an adapter's hand-over learned from the port's reads (learn.h), applied and said. */
#include <stdatomic.h>

#include "clock.h"
#include "delivery.h"
#include "fmt.h"
#include "relaxed.h"
#include "serial_internal.h"

#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

/* The model in use, for STAT (the flusher reads it). */
static void publish(struct serial_port *p)
{
	const struct delivery *d = &p->drv.dlv;

	ST(p->dlv_learning, p->learning);
	ST(p->dlv_state, (unsigned)p->learn.state);
	struct learn_model m;

	ST(p->dlv_hold_us, learn_get(&p->learn, &m) && m.xfer > 1 ? m.hold_ns / NS_PER_US
			   : (int64_t)d->hold_us);
	ST(p->dlv_xfer, d->learned ? (d->xfer > 1 ? d->xfer : 1u) : 0u);
}

void serial_learn_open(struct serial_port *p, int64_t char_ns)
{
	p->learning = delivery_learns(&p->drv.dlv) && char_ns > 0;
	p->learn_pending = false;
	/* a port opened again may be another adapter: learned anew */
	learn_init(&p->learn, char_ns, (int64_t)p->drv.dlv.hold_us * NS_PER_US);
	publish(p);
}

void serial_learn_read(struct serial_port *p, size_t n, int64_t from, int64_t seen)
{
	if (p->learning && learn_read(&p->learn, n, from != 0 ? from : seen, seen))
		p->learn_pending = true;
}

void serial_learn_apply(struct serial_port *p)
{
	struct delivery *d = &p->drv.dlv;
	const struct conf_serial *c = p->cfg;
	struct learn_model m = { 0 };
	struct reasm_dev dev;
	struct reasm *r = &p->reasm;
	struct rec ev = { .kind = REC_EV, .a = EV_DELIVERY };
	char text[SOURCE_EV_MAX];
	struct fmt_kv kv;
	int64_t gap;
	bool shown;

	if (!p->learn_pending)
		return;
	p->learn_pending = false;
	shown = learn_get(&p->learn, &m);
	delivery_learned(d, shown ? m.xfer : 0, m.hold_lo_ns, m.hold_ns, m.hold_hi_ns);
	dev = delivery_model(d, r->char_ns);
	gap = delivery_gap(d, p->gap_ns, c->gap_us == 0, r->char_ns);
	reasm_set_dev(r, &dev);
	reasm_set_gap(r, gap, p->gap_ns);
	publish(p);
	/* dated at the packet in progress, if any: the source's lines stay in time order */
	ev.t_mono = r->len > 0 ? r->first_mono : mono_ns();
	ev.t_real = r->len > 0 ? r->first_real : real_ns();
	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_str(&kv, "state", learn_state_name(p->learn.state));
	if (shown && m.xfer > 1) {
		fmt_kv_u64(&kv, "xfer", m.xfer);
		fmt_kv_i64(&kv, "hold_us", m.hold_ns / NS_PER_US);
		/* what the rule takes: the timeout a quiet line proves, the latest with the poll */
		fmt_kv_i64(&kv, "timeout_us", m.hold_lo_ns / NS_PER_US);
		fmt_kv_i64(&kv, "latest_us", (m.hold_hi_ns + 999) / NS_PER_US);
		fmt_kv_u64(&kv, "samples", m.samples);
	} else {
		/* each byte alone, or the assumption again: held up to hold_us */
		fmt_kv_u64(&kv, "xfer", shown ? 1 : 0);
		fmt_kv_i64(&kv, "hold_us", (int64_t)d->hold_us);
	}
	fmt_kv_i64(&kv, "gap_us", gap / NS_PER_US);
	if (gap != p->gap_ns)
		fmt_kv_i64(&kv, "gap_config_us", p->gap_ns / NS_PER_US);
	fmt_kv_i64(&kv, "stamp_err_us", (delivery_stamp_err(d, r->char_ns) + 999) / NS_PER_US);
	(void)source_push(&p->src, &ev, text, (uint32_t)kv.len);   /* a drop is counted */
}

void serial_learn_stat(const struct serial_port *p, struct fmt_kv *kv)
{
	if (!LD(p->dlv_learning))
		return;
	fmt_kv_str(kv, "delivery", learn_state_name((enum learn_state)LD(p->dlv_state)));
	fmt_kv_i64(kv, "hold_us", LD(p->dlv_hold_us));
	fmt_kv_u64(kv, "xfer", LD(p->dlv_xfer));
}
