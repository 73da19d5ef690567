/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial.c - the serial reader thread. */
#include <errno.h>
#include <fcntl.h>
#include <linux/serial.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "fmt.h"
#include "libc.h"
#include "serial.h"
#include "thread.h"

const char *const serial_err_name[SERIAL_NERR] = {
	"frame", "parity", "overrun", "brk", "buf_overrun",
};

/* The UART's error counters now; false if the port has none (a pty: ENOTTY). */
static bool read_icount(int fd, uint32_t now[SERIAL_NERR])
{
	struct serial_icounter_struct ic;

	if (ioctl(fd, TIOCGICOUNT, &ic) < 0)
		return false;
	now[SERIAL_ERR_FRAME] = (uint32_t)ic.frame;
	now[SERIAL_ERR_PARITY] = (uint32_t)ic.parity;
	now[SERIAL_ERR_OVERRUN] = (uint32_t)ic.overrun;
	now[SERIAL_ERR_BRK] = (uint32_t)ic.brk;
	now[SERIAL_ERR_BUF_OVERRUN] = (uint32_t)ic.buf_overrun;
	return true;
}

/*
 * After each packet: did the UART count errors meanwhile? A byte with a
 * framing or parity error, or a break, reaches us as a byte (raw mode reads it
 * as 0x00), so looking once per packet sees each error next to the bytes it
 * damaged; an overrun lost bytes right there. One port access per packet, and
 * only on ports that have the counters. A change becomes EV uart-errors with
 * the counts since the last look, dated at the packet.
 */
static void check_errors(struct serial_port *p, int64_t t_mono, int64_t t_real)
{
	struct rec ev = { .kind = REC_EV, .t_mono = t_mono, .t_real = t_real,
			  .a = EV_UART_ERRORS };
	uint32_t now[SERIAL_NERR], d[SERIAL_NERR];
	bool changed = false;
	char text[128];
	struct fmt_kv kv;

	if (!p->has_icount || !read_icount(p->drv.fd, now))
		return;
	for (int i = 0; i < SERIAL_NERR; i++) {
		d[i] = now[i] - p->icount_last[i];     /* the kernel's counters wrap at 2^32 */
		changed |= d[i] != 0;
		atomic_fetch_add_explicit(&p->errors[i], d[i], memory_order_relaxed);
		p->icount_last[i] = now[i];
	}
	if (!changed)
		return;
	/* rare (a line with errors); fmt_kv neither allocates nor uses stdio */
	fmt_kv_init(&kv, text, sizeof(text));
	for (int i = 0; i < SERIAL_NERR; i++)
		fmt_kv_u64(&kv, serial_err_name[i], d[i]);
	(void)source_push(&p->src, &ev, text, (uint32_t)kv.len);
}

/*
 * pass: the application changed its pty's settings; the device keeps the
 * config's, and the log says so once (pass.c says when). Dated at the packet
 * the application sent after the change (NULL: idle, now), so that the ring
 * stays in time order: a packet may be in progress after this one.
 */
static void check_app_settings(struct serial_port *p, const struct reasm_packet *pkt)
{
	char text[160];
	struct rec ev = { .kind = REC_EV, .a = EV_APP_SETTINGS };

	if (p->pty == NULL || p->kind != REC_TX
	    || !pass_settings_changed(p->pty, text, sizeof(text)))
		return;
	ev.t_mono = pkt != NULL ? pkt->t_mono : mono_ns();
	ev.t_real = pkt != NULL ? pkt->t_real : real_ns();
	(void)source_push(&p->src, &ev, text, (uint32_t)strlen(text));
}

static void on_packet(void *ctx, const struct reasm_packet *pkt)
{
	struct serial_port *p = ctx;
	struct rec head = { .kind = p->kind, .t_real = pkt->t_real, .t_mono = pkt->t_mono,
			    .a = pkt->end };

	(void)source_push(&p->src, &head, pkt->data, (uint32_t)pkt->len);  /* drops are counted */
	check_errors(p, pkt->t_mono, pkt->t_real);
	check_app_settings(p, pkt);
}

/*
 * A read the reader could not judge (reasm.h, "the boundary rule"): its bytes
 * were found after the packet's deadline, or the read took so long that a gap
 * may hide among them. Say so in an EV line, dated at the start of the packet
 * the bytes join (the one in progress, or the one they begin), so that the
 * source's lines stay in time order: a boundary before or inside that packet
 * may be wrong. reasm calls this after it ended the packet before, if it did,
 * and before it adds the bytes. Rare; fmt_kv neither allocates nor uses stdio.
 */
static void report_late(void *ctx, const struct reasm_doubt *d)
{
	static const char *const why[] = {
		[REASM_LATE_WAKE] = "late-wake", [REASM_DEADLINE_READ] = "deadline-read",
		[REASM_SLOW_READ] = "slow-read", [REASM_HELD] = "held",
		[REASM_RESTART] = "restart", [REASM_STALL] = "stall", [REASM_HIDDEN] = "hidden",
	};
	static const char *const stage[] = {
		[REASM_STAGE_READER] = "reader", [REASM_STAGE_DEVICE] = "device",
		[REASM_STAGE_CPU] = "cpu", [REASM_STAGE_TTY] = "tty", [REASM_STAGE_WIRE] = "wire",
	};
	_Static_assert(sizeof(why) / sizeof(why[0]) == REASM_DOUBT_CASES,
		       "a doubt case without its word");
	_Static_assert(sizeof(stage) / sizeof(stage[0]) == REASM_STAGES, "a stage without its word");
	struct serial_port *p = ctx;
	struct rec ev = { .kind = REC_EV, .t_mono = d->t_mono, .t_real = d->t_real,
			  .a = EV_LATE };
	char text[96];
	struct fmt_kv kv;

	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_i64(&kv, "wait_us", d->wait_ns / 1000);
	fmt_kv_u64(&kv, "bytes", d->bytes);
	fmt_kv_str(&kv, "case", why[d->why]);
	fmt_kv_str(&kv, "stage", stage[d->stage]);
	fmt_kv_str(&kv, "joined", d->joined ? "yes" : "no");
	/* counted as pushed (a dropped one is in drops= too): the mark's total, for STAT late= */
	atomic_fetch_add_explicit(&p->late, 1, memory_order_relaxed);
	/* the last process left no word of its last empty read (no state page): the
	 * wait counts from this open only, the least it can have been */
	if (d->why == REASM_RESTART && p->unread_from < 0)
		fmt_kv_str(&kv, "wait_from", "open");
	(void)source_push(&p->src, &ev, text, (uint32_t)kv.len);
}

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

	reasm_init(&p->reasm, p->pkt, c->max_packet, gap, char_ns, c->delimiter, on_packet, p);
	reasm_set_dev(&p->reasm, &m);
	reasm_set_gap(&p->reasm, gap, p->gap_ns);     /* the config's: marked where it may hide */
	reasm_on_doubt(&p->reasm, report_late);
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

/* One reader, of either direction, and (with lines = on) its lines thread's ring. */
static int reader_init(struct serial_port *p, const struct conf_serial *cfg, enum rec_kind kind,
		       uint32_t ring_records, int stop_fd, struct fdstore *store)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->cfg = cfg;
	p->kind = kind;
	p->stop_fd = stop_fd;
	p->store = store;
	p->role = kind == REC_RX ? FDSTORE_RX : FDSTORE_TX;
	p->slot = store != NULL ? fdstore_slot(store, cfg->name, p->role) : NULL;
	p->unread_from = -1;
	atomic_init(&p->held_bytes, 0);
	p->drv.fd = -1;
	p->drv.lock_fd = -1;
	p->gap_ns = cfg->gap_ns;
	atomic_init(&p->wakeups, 0);
	atomic_init(&p->reopens, 0);
	atomic_init(&p->late, 0);
	atomic_init(&p->up, false);
	health_beat_init(&p->beat);
	health_beat_init(&p->lines_beat);
	p->pkt = malloc(cfg->max_packet);
	if (p->pkt == NULL)
		return -ENOMEM;
	memset(p->pkt, 0, cfg->max_packet);
	atomic_init(&p->lines_fd, -1);
	atomic_init(&p->lines_stop, false);
	p->lines_wake = -1;
	rc = source_init(&p->src, cfg->name, ring_records);
	if (rc == 0 && cfg->lines) {
		rc = source_init(&p->lines_src, cfg->name, ring_records);
		p->lines_src.value_bits = 4;
		p->lines_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (rc == 0 && p->lines_wake < 0)
			rc = -errno;
	}
	if (rc < 0) {
		free(p->pkt);
		p->pkt = NULL;
	}
	return rc;
}

static void reader_fini(struct serial_port *p)
{
	int fd = atomic_exchange(&p->lines_fd, -1);

	if (fd >= 0)
		close(fd);
	if (p->lines_wake >= 0)
		close(p->lines_wake);
	drv_serial_close(&p->drv);
	if (p->relaying)
		relay_fini(&p->relay);
	source_fini(&p->src);
	if (p->cfg->lines)
		source_fini(&p->lines_src);
	free(p->pkt);
	p->pkt = NULL;
}

/*
 * The second direction: a TX reader with the port's config but its own device
 * (the tap's second port; with pass, the pty, attached at open), its ring
 * paired with the port's. With pass, both relay: the port's reader to the pty's
 * master (set when the pty is made), the TX reader to the device (handed over
 * by the port's reader at each open).
 */
static int tx_init(struct serial_port *p, uint32_t ring_records, int stop_fd,
		   struct fdstore *store)
{
	const struct conf_serial *c = p->cfg;
	struct serial_port *t = malloc(sizeof(*t));
	struct conf_serial tc = *c;
	int rc;

	if (t == NULL)
		return -ENOMEM;
	tc.lines = false;
	/* conf_check.c keeps pass_path within CONF_PATH_MAX */
	snprintf(tc.device, sizeof(tc.device), "%.*s", (int)sizeof(tc.device) - 1,
		 c->tx_device[0] != '\0' ? c->tx_device : c->pass_path);
	rc = reader_init(t, &tc, REC_TX, ring_records, stop_fd, store);
	t->tx_cfg = tc;         /* its own copy, now that reader_init has cleared t */
	t->cfg = &t->tx_cfg;
	p->tx = t;
	if (rc < 0)
		return rc;
	t->src.dir = REC_DIR_TX;
	t->src.pair = &p->src;
	p->src.pair = &t->src;
	t->peer = p;
	p->peer = t;
	if (c->pass[0] == '\0')
		return 0;
	p->pty = calloc(1, sizeof(*p->pty));
	if (p->pty == NULL)
		return -ENOMEM;
	p->pty->master = p->pty->slave = -1;
	t->pty = p->pty;
	rc = relay_init(&p->relay, "app", -1, false);
	p->relaying = rc == 0;
	if (rc == 0) {
		rc = relay_init(&t->relay, "device", -1, true);
		t->relaying = rc == 0;
	}
	return rc;
}

int serial_init(struct serial_port *p, const struct conf_serial *cfg, uint32_t ring_records,
		int stop_fd, struct fdstore *store)
{
	int rc = reader_init(p, cfg, REC_RX, ring_records, stop_fd, store);

	if (rc == 0 && conf_serial_has_tx(cfg))
		rc = tx_init(p, ring_records, stop_fd, store);
	return rc;
}

void serial_sensed(struct serial_port *p, const struct sensors *s)
{
	p->sensors = s;
	if (p->tx != NULL)
		p->tx->sensors = s;
}

/* The store's word on the port just opened (or the pty just made or taken back). */
static void took_back(struct serial_port *p, enum drv_kept kept)
{
	p->held = kept == DRV_KEPT_YES;
	p->opened_mono = mono_ns();
	p->unread_from = p->held && p->slot != NULL && p->slot->empty_mono > 0
			 ? p->slot->empty_mono : -1;
}

int serial_pass_open(struct serial_port *p, char *err, size_t errlen)
{
	struct pass *ps = p->pty;
	int rc, master = -1, slave = -1;

	if (ps == NULL)
		return 0;
	if (p->store != NULL) {
		master = fdstore_take(p->store, p->cfg->name, FDSTORE_PTY);
		slave = fdstore_take(p->store, p->cfg->name, FDSTORE_PTS);
	}
	rc = pass_open(ps, p->cfg, master, slave, err, errlen);
	if (ps->kept != DRV_KEPT_NONE && ps->kept != DRV_KEPT_YES) {
		fdstore_drop(p->store, p->cfg->name, FDSTORE_PTY);
		fdstore_drop(p->store, p->cfg->name, FDSTORE_PTS);
	}
	if (rc < 0)
		return rc;
	p->relay.fd = ps->master;       /* the RX reader writes what it reads there */
	ps->stored = ps->kept == DRV_KEPT_YES
		     || (p->store != NULL && fdstore_put(p->store, p->cfg->name, FDSTORE_PTY, ps->master)
			 && fdstore_put(p->store, p->cfg->name, FDSTORE_PTS, ps->slave));
	/* what the application wrote while no reader ran waits in the pty */
	took_back(p->tx, ps->kept);
	return 0;
}

void serial_fini(struct serial_port *p)
{
	if (p->tx != NULL) {
		if (p->tx->pkt != NULL)
			reader_fini(p->tx);
		free(p->tx);
		p->tx = NULL;
	}
	if (p->pkt != NULL)
		reader_fini(p);
	if (p->pty != NULL && p->pty->cfg != NULL)
		pass_close(p->pty);
	free(p->pty);
	p->pty = NULL;
}

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

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
	int rc, kept = -1;

	/* the keeper the last process left in the store, at the first open only (in
	 * main, before the threads) */
	if (!p->asked_store && p->store != NULL && !pass_tx)
		kept = fdstore_take(p->store, c->name, p->role);
	p->asked_store = true;
	/* pass: the TX reader's port is the pty that pass_open made */
	rc = pass_tx ? (pass_attach(p->pty, &p->drv), 0)
		     : drv_serial_open(c->device, &c->tty, kept, &p->drv, &note);
	if (kept >= 0 && (rc < 0 || p->drv.kept != DRV_KEPT_YES))
		fdstore_drop(p->store, c->name, p->role);   /* closed: the store's copy too */

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
	if (!pass_tx) {
		took_back(p, p->drv.kept);
		/* a port kept open is still in the store; a new one goes there */
		p->drv.stored = p->drv.kept == DRV_KEPT_YES
				|| fdstore_put(p->store, c->name, p->role, p->drv.lock_fd);
		if (p->slot != NULL && p->drv.kept == DRV_KEPT_YES)
			p->drv.dlv.trigger_found = p->slot->trigger_found;  /* still to put back */
		else if (p->slot != NULL)
			p->slot->trigger_found = p->drv.dlv.trigger_found;
	}
	if (c->lines) {
		/* the lines thread gets its own descriptor of the same open port */
		int old, fd = fcntl(p->drv.fd, F_DUPFD_CLOEXEC, 0);

		old = atomic_exchange(&p->lines_fd, fd);
		if (old >= 0)
			close(old);     /* never taken: the port was lost again meanwhile */
		(void)eventfd_write(p->lines_wake, 1);     /* an eventfd add cannot fail */
	}
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
	p->has_icount = read_icount(p->drv.fd, p->icount_last);
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
static void port_lost(struct serial_port *p, int err, const char *reason, bool stopping)
{
	bool keep = stopping && (p->drv.stored || (p->pty != NULL && p->kind == REC_TX
						   && p->pty->stored));
	char text[64];
	struct fmt_kv kv;

	reasm_flush(&p->reasm);
	if (p->drv.stored && !keep) {
		fdstore_drop(p->store, p->cfg->name, p->role);
		p->drv.stored = false;
		if (p->slot != NULL)
			p->slot->trigger_found = 0;     /* put back by the close below */
	}
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

/*
 * One read of what the tty holds. A read that finds the line discipline empty
 * first waits for the tty's flip-buffer worker (n_tty_read calls
 * tty_buffer_flush_work), so this also gets bytes the kernel has received but
 * not yet handed on: on a busy machine that worker, a SCHED_OTHER kernel
 * thread, can be milliseconds late. Returns the byte count, 0 when there is
 * nothing, or -1 when the port was lost (closed and reported).
 */
static ssize_t port_read(struct serial_port *p, int64_t t0)
{
	ssize_t n = read(p->drv.fd, p->rbuf, sizeof(p->rbuf));

	/* an empty read proves the kernel held nothing older than t0, and so does one
	 * that took less than a full line discipline (its tty worker had handed on what
	 * came, but for its own lag): if the port is kept across a restart, what the next
	 * process finds came after t0 (one store to the shared page, no system call) */
	if (p->slot != NULL && (n > 0 ? n < SERIAL_LDISC_FULL : n < 0 && errno == EAGAIN))
		atomic_store_explicit(&p->slot->empty_mono, t0, memory_order_relaxed);
	if (n > 0) {
		/* pass: straight on to the other side, before anything else (a
		 * non-blocking write: microseconds, inside the read's time) */
		if (p->relaying)
			relay_send(&p->relay, p->rbuf, (size_t)n);
		return n;
	}
	if (n == 0) {
		port_lost(p, 0, "hangup", false);
		return -1;
	}
	if (errno == EAGAIN || errno == EINTR)
		return 0;
	port_lost(p, errno, errno == EIO ? "hangup" : "error", false);
	return -1;
}

/*
 * Reads until the kernel holds nothing for the port. A read that finds the line
 * discipline empty first waits for the tty's flip-buffer worker, so the last
 * read, empty, proves that nothing had reached the kernel before it began
 * (reasm_expire, which also ends the packet once its deadline has passed). The
 * first read's bytes woke the reader at w (woken), or were found by a read no
 * wake-up announced (the deadline's, or at stop; ppoll saw nothing at w): the
 * sensors bound how long before w they can have reached the kernel (through the
 * reader's CPU only when they woke it). A later read finds what came meanwhile,
 * or what the tty worker still held when the one before emptied the line
 * discipline. Returns false when the port was lost (closed and reported).
 */
static bool take(struct serial_port *p, bool woken, int64_t w, int64_t w_real)
{
	bool sensed = p->sensors != NULL && p->sensors->n > 0;
	enum reasm_stage stage = REASM_STAGE_TTY;
	/* which CPU the reader runs on: a load from glibc's rseq area */
	int64_t from = sensed ? sensors_from(p->sensors, sched_getcpu(), w, woken, &stage) : 0;

	for (;;) {
		int64_t t0 = mono_ns();
		ssize_t n = port_read(p, t0);
		int64_t end = mono_ns();
		struct reasm_read rd = { .woken = woken, .seen_mono = woken ? w : end,
					 .seen_real = w_real + ((woken ? w : end) - w),
					 .end_mono = end, .from_mono = from, .from_stage = stage };

		if (n < 0)
			return false;
		if (n == 0) {
			reasm_expire(&p->reasm, t0);
			return true;
		}
		reasm_read(&p->reasm, p->rbuf, (size_t)n, &rd);
		serial_learn_read(p, (size_t)n, from, rd.seen_mono);
		serial_learn_apply(p);
		woken = false;
		if (sensed)
			from = sensors_from(p->sensors, -1, end, false, &stage);
	}
}

/* Waits until the stop fd fires or `timeout` (NULL: forever) passes; true = stop. */
static bool wait_stop(struct serial_port *p, const struct timespec *timeout)
{
	struct pollfd pfd = { .fd = p->stop_fd, .events = POLLIN };
	int n;

	health_park(&p->beat);
	n = libc_ppoll(&pfd, 1, timeout, NULL);
	health_unpark(&p->beat);
	return n > 0;
}

/* pass: losses of the relay not yet said (all: at stop), as EV relay-lost lines. */
static void say_relay_lost(struct serial_port *p, bool all)
{
	char text[96];

	while (p->relaying && relay_say(&p->relay, mono_ns(), all, text, sizeof(text)))
		(void)source_event(&p->src, EV_RELAY_LOST, 0, text);
}

/*
 * A port with two directions, before each wait: say what this reader may still
 * push (source.h, horizon), so that the flusher can write the other
 * direction's younger lines: the start of the packet in progress, else nothing
 * older than now. Bytes found after a wait that began with no packet in
 * progress arrived after it began, so they are dated no earlier (reasm_floor).
 * An idle reader wakes every SERIAL_IDLE_MS to say so again; then (and only
 * then: an event dated now must not precede an older packet in the ring) it
 * also pushes a DROP record that waits for a next packet, says relay losses
 * and looks at the application's pty settings.
 */
static void say_horizon(struct serial_port *p, struct timespec *ts, struct timespec **timeout)
{
	int64_t now = mono_ns();
	uint64_t pushed = LD(p->src.records);

	if (p->drv.fd >= 0 && p->reasm.len > 0) {
		source_set_horizon(&p->src, p->reasm.first_mono);
		return;
	}
	/* no packet in progress: events dated now keep the ring in time order */
	say_relay_lost(p, false);
	check_app_settings(p, NULL);
	(void)source_push_drops(&p->src);
	/* a device that holds bytes may hand over some that came before the wait
	 * began: they are dated back as far as its hold, not further, and not
	 * before an event just pushed */
	if (LD(p->src.records) == pushed)
		now -= p->reasm.dev.hold_ns;
	if (p->drv.fd >= 0)
		reasm_floor(&p->reasm, now);
	source_set_horizon(&p->src, now);
	if (*timeout == NULL) {
		*ts = ns_to_ts(SERIAL_IDLE_MS * NS_PER_MS);
		*timeout = ts;
	}
}

/*
 * The port stayed open while no reader ran (fdstore.h): what the kernel holds came
 * meanwhile, at times no one saw. Read it all first, as held (reasm_held: EV
 * late-delivery case=restart, the wait since a reader last found the kernel
 * empty), and count it. pass: relayed as read, the TX reader's to the device it
 * is given first.
 */
static void take_held(struct serial_port *p)
{
	bool first = true;

	if (p->relaying)
		relay_poll(&p->relay, false);
	while (p->held && p->drv.fd >= 0) {
		int64_t t0 = mono_ns(), r0 = real_ns();
		ssize_t n = port_read(p, t0);
		int64_t end = mono_ns();
		struct reasm_read rd = { .woken = false, .seen_mono = end,
					 .seen_real = r0 + (end - t0), .end_mono = end };

		if (n <= 0)
			break;
		reasm_held(&p->reasm, p->rbuf, (size_t)n, &rd,
			   end - (p->unread_from >= 0 ? p->unread_from : p->opened_mono));
		atomic_fetch_add_explicit(&p->held_bytes, (uint64_t)n, memory_order_relaxed);
		/* a first read of less than the line discipline holds: it was never
		 * full, so nothing waited behind it, and what comes next came while this
		 * reader ran (a pass application answers what was just relayed to it
		 * within microseconds): not held. After a full one the kernel's buffers
		 * may refill it: read on until it is empty. */
		if (first && n < SERIAL_LDISC_FULL)
			break;
		first = false;
	}
	p->held = false;
}

static void *serial_thread(void *arg)
{
	struct serial_port *p = arg;

	take_held(p);
	for (;;) {
		struct pollfd pfd[4] = {
			{ .fd = p->drv.fd, .events = POLLIN },
			{ .fd = p->stop_fd, .events = POLLIN },
			/* pass: room for what waits to be relayed; a new device descriptor */
			{ .fd = p->relaying ? relay_wants_room(&p->relay) : -1, .events = POLLOUT },
			{ .fd = p->relaying ? p->relay.wake : -1, .events = POLLIN },
		};
		struct timespec ts, *timeout = NULL;
		int64_t deadline, now_mono, now_real;

		if (health_stall_wanted(&p->beat)) {
			health_stall(NULL, p->stop_fd);
			break;
		}
		if (p->drv.fd < 0) {
			if (p->peer != NULL)
				say_horizon(p, &ts, &timeout);  /* nothing in progress while it is gone */
			ts = ns_to_ts(SERIAL_RETRY_MS * NS_PER_MS);
			if (wait_stop(p, &ts))
				break;
			(void)serial_open(p);
			continue;
		}
		deadline = reasm_deadline(&p->reasm);
		if (deadline != INT64_MAX) {
			int64_t left = deadline - mono_ns();
			ts = ns_to_ts(left > 0 ? left : 0);
			timeout = &ts;
		}
		if (p->peer != NULL)
			say_horizon(p, &ts, &timeout);
		health_park(&p->beat);
		(void)libc_ppoll(pfd, 4, timeout, NULL);        /* EINTR: just look again */
		now_mono = mono_ns();
		now_real = real_ns();
		atomic_fetch_add_explicit(&p->wakeups, 1, memory_order_relaxed);
		health_unpark(&p->beat);
		if (pfd[1].revents != 0)
			break;
		if (p->relaying)
			relay_poll(&p->relay, pfd[2].revents != 0);
		/* the first byte had arrived by the wake-up, every byte by the end of
		 * its read; at the deadline, an empty read proves the silence */
		if (pfd[0].revents != 0 || now_mono >= deadline)
			(void)take(p, pfd[0].revents != 0, now_mono, now_real);
	}
	/* Stop: what the kernel holds was sent before the stop; take it all. */
	if (p->drv.fd >= 0)
		(void)take(p, false, mono_ns(), real_ns());
	if (p->drv.fd >= 0)
		port_lost(p, 0, "stop", true);
	if (p->relaying) {
		relay_stop(&p->relay);
		say_relay_lost(p, true);
	}
	return NULL;
}

static void push_lines(struct serial_port *p, int value, int changed)
{
	struct rec r = { .kind = REC_LINES, .t_real = real_ns(), .t_mono = mono_ns(),
			 .a = value, .b = changed };

	(void)source_push(&p->lines_src, &r, NULL, 0);     /* a drop is counted */
}

static void lines_error(struct serial_port *p, int err, const char *op)
{
	char text[64];
	struct fmt_kv kv;

	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_str(&kv, "op", op);
	(void)source_event(&p->lines_src, EV_ERROR, err, text);
}

/*
 * Waits for edges on CTS, DSR, DCD and RI with TIOCMIWAIT and pushes a LINES
 * record for each change; the first value after every (re)open is always
 * pushed. The port's descriptor comes from serial_open (a dup); a hang-up ends
 * the wait with an error and the thread waits for the next descriptor.
 */
static void *lines_thread(void *arg)
{
	struct serial_port *p = arg;
	int fd = -1, prev = -1;

	while (!atomic_load(&p->lines_stop)) {
		int m, rc;

		if (fd < 0) {
			struct pollfd pfd[2] = {
				{ .fd = p->lines_wake, .events = POLLIN },
				{ .fd = p->stop_fd, .events = POLLIN },
			};
			uint64_t v;

			fd = atomic_exchange(&p->lines_fd, -1);
			if (fd >= 0) {
				prev = -1;
				continue;
			}
			health_park(&p->lines_beat);
			(void)poll(pfd, 2, -1);     /* EINTR: look again */
			health_unpark(&p->lines_beat);
			if (pfd[1].revents != 0)
				break;
			(void)eventfd_read(p->lines_wake, &v);     /* clears the wake-up */
			continue;
		}
		if (prev < 0) {
			if (ioctl(fd, TIOCMGET, &m) < 0) {
				lines_error(p, errno, "TIOCMGET");
				close(fd);
				fd = -1;
				continue;
			}
			prev = drv_lines_map(m);
			push_lines(p, prev, prev);
		}
		if (health_stall_wanted(&p->lines_beat)) {
			health_stall(&p->lines_stop, -1);   /* serial_join's SIGUSR1 ends its poll */
			continue;
		}
		health_park(&p->lines_beat);
		rc = ioctl(fd, TIOCMIWAIT, TIOCM_RNG | TIOCM_DSR | TIOCM_CD | TIOCM_CTS);
		health_unpark(&p->lines_beat);
		if (rc < 0) {
			if (errno == EINTR)
				continue;           /* serial_join's SIGUSR1, or a stray signal */
			lines_error(p, errno, "TIOCMIWAIT");
			close(fd);
			fd = -1;
			continue;
		}
		if (ioctl(fd, TIOCMGET, &m) < 0)
			continue;               /* the next TIOCMIWAIT reports the failure */
		m = drv_lines_map(m);
		/* an edge that went back before TIOCMGET leaves m == prev: nothing to log */
		if (m != prev)
			push_lines(p, m, m ^ prev);
		prev = m;
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

int serial_start(struct serial_port *p, int *degraded)
{
	char name[16];

	int rc;

	snprintf(name, sizeof(name), "plog-%.10s", p->cfg->name);
	rc = thread_start(&p->thread, name, p->cfg->priority, p->cfg->cpu, serial_thread, p,
			  degraded);
	if (rc == 0 && p->cfg->lines) {
		snprintf(name, sizeof(name), "plogl-%.9s", p->cfg->name);
		rc = thread_start(&p->lines_thread, name, p->cfg->priority, p->cfg->cpu,
				  lines_thread, p, degraded);
	}
	if (rc == 0 && p->tx != NULL) {
		snprintf(name, sizeof(name), "plogt-%.9s", p->cfg->name);
		rc = thread_start(&p->tx->thread, name, p->cfg->priority, p->cfg->cpu,
				  serial_thread, p->tx, degraded);
	}
	return rc;
}

void serial_join(struct serial_port *p)
{
	thread_join(&p->thread);
	if (p->tx != NULL)
		thread_join(&p->tx->thread);
	if (!p->lines_thread.started)
		return;
	atomic_store(&p->lines_stop, true);
	/* TIOCMIWAIT only ends on an edge or a signal; a signal sent just before
	 * the thread enters it is missed, so send it until the thread is gone */
	for (;;) {
		struct timespec ts;

		(void)pthread_kill(p->lines_thread.id, SIGUSR1);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * NS_PER_MS;
		if (ts.tv_nsec >= NS_PER_S) {
			ts.tv_sec++;
			ts.tv_nsec -= NS_PER_S;
		}
		if (pthread_timedjoin_np(p->lines_thread.id, NULL, &ts) == 0)
			break;
	}
	p->lines_thread.started = false;
}
