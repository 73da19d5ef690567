/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_open.c - a reader's port opened and lost: EV open with what stands between
 * the wire and read(), the refused real-time settings, EV close. */
#include <fcntl.h>
#include <stdbool.h>

#include "clock.h"
#include "fmt.h"
#include "serial_internal.h"

/* Real-time settings of the port that were refused: one EV rt-missing each. */
static void report_port_rt(struct serial_port *p)
{
	char text[SOURCE_EV_MAX];
	struct fmt_kv kv;

	if (p->drv.low_latency < 0) {
		fmt_kv_init(&kv, text, sizeof(text));
		fmt_kv_str(&kv, "item", "low_latency");
		fmt_kv_str(&kv, "need", "TIOCSSERIAL");
		(void)source_event(&p->src, EV_RT_MISSING, -p->drv.low_latency, text);
	}
	if (p->drv.latency_err != 0) {
		fmt_kv_init(&kv, text, sizeof(text));
		fmt_kv_str(&kv, "item", "latency_timer");
		fmt_kv_i64(&kv, "value", p->drv.latency_timer);
		fmt_kv_u64(&kv, "want", 1);
		fmt_kv_str(&kv, "need", "udev-rule");
		(void)source_event(&p->src, EV_RT_MISSING, p->drv.latency_err, text);
	}
	if (p->drv.dlv.trigger_err != 0) {
		fmt_kv_init(&kv, text, sizeof(text));
		fmt_kv_str(&kv, "item", "rx_trigger");
		fmt_kv_u64(&kv, "value", p->drv.dlv.trigger);
		fmt_kv_i64(&kv, "want", p->cfg->tty.rx_trigger > 0 ? p->cfg->tty.rx_trigger : 1);
		fmt_kv_str(&kv, "need", "udev-rule");
		(void)source_event(&p->src, EV_RT_MISSING, p->drv.dlv.trigger_err, text);
	}
}

/*
 * What stands between the port's wire and read() (delivery.h), as the reader's
 * rule takes it (reasm.h) and EV open says it: the kind, what the kernel showed of
 * the device, the gap the port resolves (gap_us: the config's, raised where the
 * device can hide a silence that long, gap_config_us then the config's), how long
 * a byte can stay unseen (hold_us) and how far the device alone may put a first
 * byte's time off (stamp_err_us).
 */
static void apply_delivery(struct serial_port *p, bool pty, struct fmt_kv *kv)
{
	const struct conf_serial *c = p->cfg;
	const struct delivery *d = &p->drv.dlv;
	/* a pty has no wire, unless the config says what device feeds it (the tests'
	 * device models): then its bytes come at the baud as from that device */
	int64_t char_ns = pty && !d->configured ? 0 : c->char_ns;
	struct reasm_dev m = delivery_model(d, char_ns);
	int64_t gap = delivery_gap(d, p->gap_ns, c->gap_us == 0, char_ns);

	reasm_init(&p->reasm, p->pkt, c->max_packet, gap, char_ns, c->delimiter, serial_on_packet, p);
	reasm_set_dev(&p->reasm, &m);
	reasm_set_gap(&p->reasm, gap, p->gap_ns);     /* the config's: marked where it may hide */
	reasm_on_doubt(&p->reasm, serial_report_late);
	serial_learn_open(p, char_ns);
	fmt_kv_i64(kv, "gap_us", gap / 1000);
	if (gap != p->gap_ns)
		fmt_kv_i64(kv, "gap_config_us", p->gap_ns / 1000);
	fmt_kv_str(kv, "delivery", delivery_kind_name(d->kind));
	if (d->kind == DELIVERY_FIFO) {
		if (!pty)
			fmt_kv_str(kv, "uart", d->what);
		if (d->fifo != 0)
			fmt_kv_u64(kv, "fifo", d->fifo);
		if (d->trigger != 0)
			fmt_kv_u64(kv, "rx_trigger", d->trigger);
		else
			fmt_kv_str(kv, "rx_trigger", "unknown");
		if (d->trigger_found != 0)
			fmt_kv_u64(kv, "rx_trigger_found", d->trigger_found);
	} else if (d->kind == DELIVERY_USB && !pty) {
		fmt_kv_str(kv, "usb", d->what);
	}
	if (m.hold_ns > 0) {
		fmt_kv_i64(kv, "hold_us", (m.hold_ns + 999) / 1000);
		fmt_kv_i64(kv, "stamp_err_us", (delivery_stamp_err(d, char_ns) + 999) / 1000);
	}
	if (d->configured)
		fmt_kv_str(kv, "delivery_source", "config");
	if (p->learning)
		fmt_kv_str(kv, "learn", "yes");        /* EV delivery says what it shows */
}

/*
 * Runs in main at start-up, or in the reader while its port is gone. Opening
 * allocates inside libserialport; a reader without a port is on no real-time
 * path, so that is acceptable here and nowhere else.
 */
int serial_open(struct serial_port *p)
{
	const struct conf_serial *c = p->cfg;
	char text[SOURCE_EV_MAX], format[4] = { 0 };
	const char *note = "pty";
	struct fmt_kv kv;
	bool pass_tx = p->pty != NULL && p->kind == REC_TX;
	int rc, kept = serial_store_take(p, pass_tx);

	/* pass: the TX reader's port is the pty that pass_open made */
	rc = pass_tx ? (pass_attach(p->pty, &p->drv), 0)
		     : drv_serial_open(c->device, &c->tty, kept,
					       p->slot != NULL ? p->slot->trigger_found : 0, &p->drv,
					       &note);
	serial_store_taken(p, kept, rc);

	fmt_kv_init(&kv, text, sizeof(text));
	if (rc < 0) {
		if (-rc != p->last_err) {
			p->last_err = -rc;
			fmt_kv_str(&kv, "op", "open");
			fmt_kv_str(&kv, "device", c->device);
			(void)source_event(&p->src, EV_ERROR, -rc, text);
		}
		return rc;
	}
	p->last_err = 0;
	if (p->opens++ > 0)
		atomic_fetch_add_explicit(&p->reopens, 1, memory_order_relaxed);
	atomic_store_explicit(&p->up, true, memory_order_relaxed);
	if (!pass_tx)
		serial_store_opened(p);
	if (c->lines)
		serial_lines_give(p);
	if (p->peer != NULL && p->peer->relaying && p->kind == REC_RX)
		/* pass: the TX reader writes to the device through a descriptor of its own */
		relay_give(&p->peer->relay, fcntl(p->drv.fd, F_DUPFD_CLOEXEC, 0));
	fmt_kv_str(&kv, "device", p->drv.path);
	fmt_kv_str(&kv, "driver", p->drv.ops->name);
	if (note != NULL)
		fmt_kv_str(&kv, "note", note);
	fmt_kv_u64(&kv, "baud", c->tty.baud);
	format[0] = (char)('0' + c->tty.data_bits % 10);    /* 5..8 */
	format[1] = c->tty.parity;
	format[2] = (char)('0' + c->tty.stop_bits % 10);    /* 1, 2 */
	fmt_kv_str(&kv, "format", format);
	apply_delivery(p, note != NULL, &kv);
	fmt_kv_str(&kv, "low_latency", p->drv.low_latency > 0 ? "on"
		   : p->drv.low_latency == 0 ? "n/a" : "off");
	if (p->drv.latency_timer >= 0)
		fmt_kv_i64(&kv, "latency_timer", p->drv.latency_timer);
	if (drv_kept_name(p->drv.kept) != NULL)
		fmt_kv_str(&kv, "store", drv_kept_name(p->drv.kept));
	else if (!pass_tx && !p->drv.stored && p->store != NULL && p->store->enabled)
		fmt_kv_str(&kv, "store", "full");      /* refused: not kept across a restart */
	p->has_icount = serial_read_icount(p->drv.fd, p->icount_last);
	(void)source_event(&p->src, EV_OPEN, 0, text);
	report_port_rt(p);
	/* a UART's interrupt thread comes with the open: set it now, every time */
	(void)irq_port_apply(&p->irq, "");
	irq_port_report(&p->irq, &p->src);
	/* the first read is dated back by its character times, but not before these
	 * events: bytes that came during the open stay after EV open in the ring */
	reasm_floor(&p->reasm, mono_ns());
	return 0;
}

/*
 * The port is closed: lost (a hang-up, an error), or the reader stops. Stopping,
 * a port in the store stays open there for the next process (EV close store=kept);
 * a port lost leaves the store, and its FIFO's level is put back as it closes.
 */
void serial_port_lost(struct serial_port *p, int err, const char *reason, bool stopping)
{
	char text[64];
	struct fmt_kv kv;
	bool keep;

	reasm_flush(&p->reasm);
	keep = serial_store_release(p, stopping);
	drv_serial_close(&p->drv);
	if (p->peer != NULL && p->peer->relaying && p->kind == REC_RX)
		relay_give(&p->peer->relay, -1);       /* its dup would keep the device busy */
	atomic_store_explicit(&p->up, false, memory_order_relaxed);
	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_str(&kv, "reason", reason);
	if (keep)
		fmt_kv_str(&kv, "store", "kept");
	(void)source_event(&p->src, EV_CLOSE, err, text);
}
