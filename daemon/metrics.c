/* SPDX-License-Identifier: GPL-2.0-or-later */
/* metrics.c - the metrics file: STAT fields and the parts' figures in Prometheus's text format. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "clockq.h"
#include "log.h"
#include "metrics.h"
#include "sensor.h"
#include "timer.h"

#define K(kind) (1u << (kind))
#define PORTS (K(PART_SERIAL) | K(PART_PARALLEL))

/*
 * The fields of the STAT lines: one row each, in the file's order. A part of
 * the kinds has the sample {port="NAME"} when its STAT line has the key (the
 * timer's and the flusher's have no port label), {port="NAME",dir="tx"} when it
 * has tx_KEY (its TX reader's), and a part of a kind that label_of names the
 * label of that field ({cpu="N"} from a sensor's cpu=). Names and units by
 * Prometheus's conventions: portlogd_ before, a counter's _total after, a
 * gauge's not; seconds (a field in microseconds, KEY_us, with 6 decimals).
 */
static const struct row {
	const char *name;       /* after "portlogd_" */
	unsigned kinds;         /* K(enum part_kind) of the parts whose STAT line has key */
	const char *key;
	const char *help;
} rows[] = {
	{ "records_total", PORTS, "records",
	  "Records the port's reader pushed: packets, pin changes, events (STAT records=)." },
	{ "bytes_total", K(PART_SERIAL), "bytes", "Bytes in the port's packets (STAT bytes=)." },
	{ "dropped_records_total", PORTS, "drops",
	  "Records lost because the port's ring was full, as in its DROP lines (STAT drops=)." },
	{ "dropped_bytes_total", K(PART_SERIAL), "drop_bytes",
	  "Packet bytes in the dropped records (STAT drop_bytes=)." },
	{ "late_deliveries_total", K(PART_SERIAL), "late",
	  "EV late-delivery marks: reads whose packet boundaries are in doubt (STAT late=)." },
	{ "port_reopens_total", PORTS, "reopens",
	  "Times the port came back after it was lost (STAT reopens=)." },
	{ "delivery_hold_seconds", K(PART_SERIAL), "hold_us",
	  "An adapter whose hold Linux does not show: the hold in use, assumed or learned from "
	  "its traffic (STAT hold_us=)." },
	{ "delivery_transfer_bytes", K(PART_SERIAL), "xfer",
	  "Its transfer size as learned; 1: each byte alone, 0: not known (STAT xfer=)." },
	{ "held_bytes_total", K(PART_SERIAL), "held_bytes",
	  "Bytes that came while no daemon ran, from a port kept open across a restart "
	  "(STAT held_bytes=)." },
	{ "uart_frame_errors_total", K(PART_SERIAL), "frame",
	  "Framing errors the UART counted (STAT frame=; 0 on a pty)." },
	{ "uart_parity_errors_total", K(PART_SERIAL), "parity",
	  "Parity errors the UART counted (STAT parity=)." },
	{ "uart_overruns_total", K(PART_SERIAL), "overrun",
	  "Bytes the UART lost to overruns (STAT overrun=)." },
	{ "uart_breaks_total", K(PART_SERIAL), "brk", "Breaks the UART saw (STAT brk=)." },
	{ "uart_buffer_overruns_total", K(PART_SERIAL), "buf_overrun",
	  "Bytes lost because the tty buffer was full (STAT buf_overrun=)." },
	{ "relay_lost_bytes_total", K(PART_SERIAL), "relay_lost",
	  "pass: bytes not relayed to the application, dir=tx to the device (STAT relay_lost=)." },
	{ "modem_line_records_total", K(PART_SERIAL), "lines_records",
	  "lines = on: modem-line changes pushed (STAT lines_records=)." },
	{ "modem_line_dropped_records_total", K(PART_SERIAL), "lines_drops",
	  "lines = on: modem-line changes lost to a full ring (STAT lines_drops=)." },
	{ "sampler_overruns_total", K(PART_PARALLEL), "overruns",
	  "Timer ticks that found the port's sampler still busy (STAT overruns=)." },
	{ "timer_wakeups_total", K(PART_TIMER), "triggers",
	  "Timer wake-ups, each triggering every sampler (STAT timer triggers=)." },
	{ "timer_missed_periods_total", K(PART_TIMER), "missed",
	  "Timer periods missed because a wake-up came a period late (STAT timer missed=)." },
	{ "sensor_wakeups_total", K(PART_SENSOR), "ticks",
	  "Wake-ups of the CPU's stall sensor (STAT sensor ticks=)." },
	{ "cpu_stalls_total", K(PART_SENSOR), "stalls",
	  "Stall windows of the CPU: its sensor's wake-ups later than a quarter period "
	  "(STAT sensor stalls=)." },
	{ "cpu_stall_lateness_seconds_total", K(PART_SENSOR), "stall_late_us",
	  "Those wake-ups' lateness added up (STAT sensor stall_late_us=)." },
	{ "cpu_stall_max_seconds", K(PART_SENSOR), "stall_max_us",
	  "The CPU's longest stall window so far, from its sensor's wake-up before to the late "
	  "one (STAT sensor stall_max_us=)." },
	{ "tty_probes_total", K(PART_SENSOR), "tty_probes",
	  "Probes of the kernel's tty path (a byte through a pty and its tty worker) this "
	  "CPU's sensor wrote and read back (STAT sensor tty_probes=)." },
	{ "tty_stalls_total", K(PART_SENSOR), "tty_stalls",
	  "Those probes later than a quarter period: stall windows of the tty path (STAT "
	  "sensor tty_stalls=)." },
	{ "tty_delivery_max_seconds", K(PART_SENSOR), "tty_max_us",
	  "The slowest of those probes so far, write to read (STAT sensor tty_max_us=)." },
	{ "clock_updates_total", K(PART_CLOCK), "updates",
	  "The RTC's update interrupts the clock sensor read, once a second (STAT clock updates=)." },
	{ "clock_stops_total", K(PART_CLOCK), "stops",
	  "Times the machine's clock stood still, seen through the RTC (a virtual machine "
	  "paused whole; STAT clock stops=)." },
	{ "clock_lost_seconds_total", K(PART_CLOCK), "lost_us",
	  "What those stops took from the clock, added up (STAT clock lost_us=)." },
	{ "clock_lost_max_seconds", K(PART_CLOCK), "lost_max_us",
	  "The longest of them (STAT clock lost_max_us=)." },
	{ "clock_marked_lines_total", K(PART_CLOCK), "marked",
	  "Serial lines marked EV late-delivery case=clock for a stop (STAT clock marked=)." },
	{ "clock_unvouched_lines_total", K(PART_CLOCK), "unvouched",
	  "Serial lines marked because the clock sensor had not spoken for seconds (STAT "
	  "clock unvouched=)." },
	{ "log_lines_total", K(PART_FLUSHER), "lines",
	  "Lines written to the log (STAT flusher lines=)." },
	{ "log_bytes_total", K(PART_FLUSHER), "bytes",
	  "Bytes written to the log (STAT flusher bytes=)." },
	{ "log_write_errors_total", K(PART_FLUSHER), "write_errors",
	  "Failed writes of the log, retried (STAT flusher write_errors=)." },
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* The field that labels a part of a kind (besides its port): a sensor's CPU. */
static const char *const label_of[PART_NKINDS] = { [PART_SENSOR] = "cpu" };

static bool ends_in(const char *s, const char *end)
{
	size_t n = strlen(s), e = strlen(end);

	return n >= e && strcmp(s + n - e, end) == 0;
}

static const char *row_type(const struct row *r)
{
	return ends_in(r->name, "_total") ? "counter" : "gauge";
}

/* The histograms' buckets: us, and their le labels in seconds as Prometheus's
 * client libraries write them (a label must never change). From a tuned
 * PREEMPT_RT machine's tens of microseconds to a busy VM's milliseconds. */
#define LE_MAX_US 10000
static const uint32_t le_us[] = { 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, LE_MAX_US };
static const char *const le_text[] = {
	"5e-06", "1e-05", "2e-05", "5e-05", "0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005",
	"0.01",
};
#define NLE (sizeof(le_us) / sizeof(le_us[0]))
_Static_assert(NLE == sizeof(le_text) / sizeof(le_text[0]), "a bucket without its label");
_Static_assert(LE_MAX_US <= TIMER_HIST_US, "a bucket beyond the timer's histogram");
_Static_assert(LE_MAX_US <= SENSOR_HIST * 10, "a bucket beyond the sensors' histogram");

/* The families besides the rows': the process, the ports' state, the timer's
 * and the tty path's histograms, the clock, the watchdog. */
enum {
	F_BUILD, F_START, F_PORT_UP, F_LATENCY, F_TTY_DELIVERY, F_SYNCED, F_MAX_ERROR, F_WITHHELD,
	NFAMILIES
};
static const struct family {
	const char *name, *type, *help;
} families[NFAMILIES] = {
	[F_BUILD] = { "build_info", "gauge",
		      "The running daemon's version, as a label (value 1)." },
	[F_START] = { "start_time_seconds", "gauge",
		      "When the daemon started, in seconds since the epoch: a change is a "
		      "restart." },
	[F_PORT_UP] = { "port_up", "gauge",
			"1 while the port is open and logged, 0 while it is lost or the daemon "
			"has stopped." },
	[F_LATENCY] = { "timer_latency_seconds", "histogram",
			"The timer's wake-up latency after the warm-up (1 us bins: a bucket counts "
			"the wake-ups under its bound)." },
	[F_TTY_DELIVERY] = { "tty_delivery_seconds", "histogram",
			     "The kernel's tty path: each stall sensor's probe from its write to "
			     "its read, all sensors' together (10 us bins; the sum is estimated "
			     "from them)." },
	[F_SYNCED] = { "clock_synced", "gauge",
		       "1 while the system clock is synchronised (maximum error below 16 s), 0 "
		       "when not or when its state cannot be read (EV clock synced=)." },
	[F_MAX_ERROR] = { "clock_max_error_seconds", "gauge",
			  "The kernel's bound on the system clock's error (EV clock "
			  "maxerror_us=)." },
	[F_WITHHELD] = { "watchdog_withheld", "gauge",
			 "1 while WATCHDOG=1 is withheld because a thread stalled; systemd "
			 "restarts the service soon after." },
};
/* The histograms: each sums the hooks (part.latency) of its kind's parts, its
 * buckets from le_us[first]. */
static const struct hist {
	unsigned family;
	enum part_kind kind;
	unsigned first;
} hists[] = {
	{ F_LATENCY, PART_TIMER, 0 },
	{ F_TTY_DELIVERY, PART_SENSOR, 1 },     /* 10 us bins: from 10 us */
};
#define NHISTS (sizeof(hists) / sizeof(hists[0]))

#define FAMILY_MAX 320          /* "# HELP ..." and "# TYPE ..." of one family */
/* one sample: name, {port="NAME",dir="tx"}, {cpu="N"} or {le="..."}, a value */
#define SAMPLE_MAX (sizeof("portlogd_") + 48 + sizeof("{port=\"\",dir=\"tx\"} ") + 2 * CONF_NAME_MAX \
		    + 24 + 1)

size_t metrics_bytes(const unsigned count[PART_NKINDS])
{
	size_t samples = 0, parts = 0;

	for (unsigned k = 0; k < PART_NKINDS; k++) {
		for (size_t r = 0; r < NROWS; r++)
			samples += (rows[r].kinds & K(k)) ? 2 * (size_t)count[k] : 0;
		parts += count[k];
	}
	samples += parts + NHISTS * (NLE + 3) + 4;      /* port_up, histograms, the rest */
	return (NROWS + NFAMILIES) * FAMILY_MAX + samples * SAMPLE_MAX;
}

int metrics_init(struct metrics *m, const char *path, const struct parts *ps)
{
	unsigned count[PART_NKINDS] = { 0 };

	memset(m, 0, sizeof(*m));
	snprintf(m->path, sizeof(m->path), "%s", path);
	/* PATH.tmp.PID: node_exporter reads only NAME.prom; one name per process, so that
	 * two daemons of one config (the service and a foreground run) never write into
	 * one file; removed when a write fails, O_TRUNC reuses one a crash left */
	snprintf(m->tmp, sizeof(m->tmp), "%s.tmp.%ld", path, (long)getpid());
	m->ps = ps;
	m->nparts = ps->n;
	m->start_ns = real_ns();
	m->due = true;
	for (unsigned i = 0; i < ps->n; i++)
		count[ps->part[i].kind]++;
	m->cap = metrics_bytes(count);
	m->part = calloc(ps->n, sizeof(*m->part));
	m->out = malloc(m->cap);
	if (m->part == NULL || m->out == NULL) {
		metrics_fini(m);
		return -ENOMEM;
	}
	memset(m->out, 0, m->cap);      /* touched before the threads start, like the rings */
	return 0;
}

void metrics_fini(struct metrics *m)
{
	free(m->part);
	free(m->out);
	m->part = NULL;
	m->out = NULL;
}

/* The watchdog's verdict, which main's part gives (notify_count). */
static bool withheld_now(const struct parts *ps)
{
	for (unsigned i = 0; i < ps->n; i++) {
		struct part_counts c = { .latency_max_us = -1 };

		if (ps->part[i].count == NULL)
			continue;
		ps->part[i].count(ps->part[i].obj, &c);
		if (c.withheld)
			return true;
	}
	return false;
}

bool metrics_due(const struct metrics *m, bool stat_due)
{
	return stat_due || m->due || withheld_now(m->ps) != m->withheld;
}

void metrics_take(struct metrics *m, unsigned i, const char *text)
{
	struct metrics_part *mp;
	size_t n = strlen(text), pos;

	if (i >= m->nparts)
		return;         /* registered after metrics_init: a bug, no room for it */
	mp = &m->part[i];
	if (n >= sizeof(mp->text))
		n = sizeof(mp->text) - 1;
	memcpy(mp->text, text, n);
	mp->text[n] = '\0';
	mp->n = 0;
	mp->taken = true;
	/* after the name: "key=value" items, one space apart (fmt_kv: no space inside) */
	pos = strcspn(mp->text, " ");
	while (mp->text[pos] == ' ' && mp->n < METRICS_FIELDS_MAX) {
		size_t key = pos + 1, end = key + strcspn(mp->text + key, " ");
		const char *eq = memchr(mp->text + key, '=', end - key);

		if (eq != NULL) {
			size_t val = (size_t)(eq - mp->text) + 1;

			mp->f[mp->n].key = (uint16_t)key;
			mp->f[mp->n].klen = (uint16_t)(val - 1 - key);
			mp->f[mp->n].val = (uint16_t)val;
			mp->f[mp->n].vlen = (uint16_t)(end - val);
			mp->n++;
		}
		pos = end;
	}
}

/* The value of prefix+key in a part's fields when it is a whole number, or NULL. */
static const char *field(const struct metrics_part *mp, const char *prefix, const char *key,
			 size_t *len)
{
	size_t pl = strlen(prefix), kl = strlen(key);

	for (unsigned k = 0; k < mp->n; k++) {
		const char *s = mp->text + mp->f[k].key, *v = mp->text + mp->f[k].val;
		size_t vl = mp->f[k].vlen;

		if (mp->f[k].klen != pl + kl || memcmp(s, prefix, pl) != 0
		    || memcmp(s + pl, key, kl) != 0)
			continue;
		/* "-" (a thread's faults unknown) is no number: no sample */
		if (vl == 0 || strspn(v + (*v == '-'), "0123456789") != vl - (*v == '-'))
			return NULL;
		*len = vl;
		return v;
	}
	return NULL;
}

/* ---- the text ---- */

struct out {
	char *buf;
	size_t cap, len;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->full || n > o->cap - o->len) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void put_u64(struct out *o, uint64_t v)
{
	char num[24];

	put(o, num, fmt_u64(num, v));
}

/* (neg ? -a : a) / 10^decimals, exactly, as a decimal number: microseconds in seconds. */
static void put_fixed_abs(struct out *o, bool neg, uint64_t a, unsigned decimals)
{
	uint64_t scale = 1;
	char frac[24];

	for (unsigned i = 0; i < decimals; i++)
		scale *= 10;
	if (neg)
		puts_(o, "-");
	put_u64(o, a / scale);
	frac[0] = '.';
	for (unsigned i = decimals; i > 0; i--, a /= 10)
		frac[i] = (char)('0' + a % 10);
	put(o, frac, decimals + 1);
}

static void put_fixed(struct out *o, int64_t v, unsigned decimals)
{
	put_fixed_abs(o, v < 0, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, decimals);
}

/* A field's whole number (field() checked its digits) as written, or scaled. */
static void put_value(struct out *o, const char *v, size_t len, unsigned decimals)
{
	bool neg = *v == '-';
	uint64_t a = 0;

	if (decimals == 0) {
		put(o, v, len);
		return;
	}
	for (size_t i = neg; i < len; i++)
		a = a * 10 + (uint64_t)(v[i] - '0');
	put_fixed_abs(o, neg, a, decimals);
}

static void head(struct out *o, const char *name, const char *type, const char *help)
{
	puts_(o, "# HELP portlogd_");
	puts_(o, name);
	puts_(o, " ");
	puts_(o, help);
	puts_(o, "\n# TYPE portlogd_");
	puts_(o, name);
	puts_(o, " ");
	puts_(o, type);
	puts_(o, "\n");
}

static void family(struct out *o, unsigned f)
{
	head(o, families[f].name, families[f].type, families[f].help);
}

/* "portlogd_NAME" and what follows it */
static void series(struct out *o, const char *name, const char *rest)
{
	puts_(o, "portlogd_");
	puts_(o, name);
	puts_(o, rest);
}

/* A label's value as the text format writes it: \\, \" and \n escaped. The
 * config allows port names of letters, digits and _-.: only (conf_read.c), but
 * the file must not depend on it: a name that came another way cannot end the
 * label, or the line. (SAMPLE_MAX allows twice a name's length.) */
static void put_label(struct out *o, const char *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *esc = v[i] == '\\' ? "\\\\" : v[i] == '"' ? "\\\"" : v[i] == '\n' ? "\\n" : NULL;

		if (esc != NULL)
			puts_(o, esc);
		else
			put(o, v + i, 1);
	}
}

/* "portlogd_NAME{KEY="VAL",dir="tx"} " without the labels that are NULL. */
static void sample(struct out *o, const char *name, const char *key, const char *val,
		   size_t vlen, const char *dir)
{
	series(o, name, "");
	if (key != NULL) {
		puts_(o, "{");
		puts_(o, key);
		puts_(o, "=\"");
		put_label(o, val, vlen);
		puts_(o, dir != NULL ? "\",dir=\"" : "");
		puts_(o, dir != NULL ? dir : "");
		puts_(o, "\"}");
	}
	puts_(o, " ");
}

/* One row's family: its samples from the fields taken, none when no part has it. */
static void put_row(struct out *o, const struct metrics *m, const struct row *r)
{
	static const char *const prefix[2] = { "", "tx_" };
	bool said = false;

	for (unsigned i = 0; i < m->nparts; i++) {
		const struct part *p = &m->ps->part[i];
		const char *key = p->port != NULL ? "port" : NULL, *val = p->port;
		size_t vlen = p->port != NULL ? strlen(p->port) : 0;

		if (!(r->kinds & K(p->kind)) || !m->part[i].taken)
			continue;
		if (label_of[p->kind] != NULL) {
			key = label_of[p->kind];
			val = field(&m->part[i], "", key, &vlen);
			if (val == NULL)
				continue;       /* a label without a value: no sample */
		}
		for (unsigned d = 0; d < 2; d++) {
			size_t len;
			const char *v = field(&m->part[i], prefix[d], r->key, &len);

			if (v == NULL)
				continue;
			if (!said)
				head(o, r->name, row_type(r), r->help);
			said = true;
			sample(o, r->name, key, val, vlen, d == 1 ? "tx" : NULL);
			put_value(o, v, len, ends_in(r->key, "_us") ? 6 : 0);
			puts_(o, "\n");
		}
	}
}

static void put_port_up(struct out *o, const struct metrics *m, bool final)
{
	bool said = false;

	for (unsigned i = 0; i < m->nparts; i++) {
		const struct part *p = &m->ps->part[i];
		struct part_counts c = { .latency_max_us = -1 };

		if (p->count == NULL)
			continue;
		p->count(p->obj, &c);
		if (!c.port)
			continue;
		if (!said)
			family(o, F_PORT_UP);
		said = true;
		sample(o, "port_up", "port", p->port, strlen(p->port), NULL);
		puts_(o, !final && c.up ? "1\n" : "0\n");
	}
}

/* a + b, or the largest when that does not fit (centuries of samples) */
static uint64_t add_u64(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* A histogram: its kind's hooks summed (one timer; a sensor per CPU), none
 * when no part has one. */
static void put_hist(struct out *o, const struct metrics *m, const struct hist *h)
{
	const char *name = families[h->family].name;
	uint64_t below[NLE] = { 0 }, count = 0;
	int64_t sum_ns = 0;
	unsigned n = (unsigned)NLE - h->first;
	bool seen = false;

	for (unsigned i = 0; i < m->nparts; i++) {
		const struct part *p = &m->ps->part[i];
		uint64_t b[NLE], c;
		int64_t s;

		if (p->kind != h->kind || p->latency == NULL)
			continue;
		p->latency(p->obj, le_us + h->first, n, b, &c, &s);
		for (unsigned k = 0; k < n; k++)
			below[k] = add_u64(below[k], b[k]);
		count = add_u64(count, c);
		if (__builtin_add_overflow(sum_ns, s, &sum_ns))
			sum_ns = s > 0 ? INT64_MAX : INT64_MIN;
		seen = true;
	}
	if (!seen)
		return;
	family(o, h->family);
	for (unsigned k = 0; k <= n; k++) {
		series(o, name, "_bucket{le=\"");
		puts_(o, k < n ? le_text[h->first + k] : "+Inf");
		puts_(o, "\"} ");
		put_u64(o, k < n ? below[k] : count);
		puts_(o, "\n");
	}
	series(o, name, "_sum ");
	put_fixed(o, sum_ns, 9);
	puts_(o, "\n");
	series(o, name, "_count ");
	put_u64(o, count);
	puts_(o, "\n");
}

/* The clock (the flusher's figures: the reading of its last EV clock line) and
 * the watchdog's verdict (main's). */
static void put_state(struct out *o, const struct metrics *m, bool withheld)
{
	for (unsigned i = 0; i < m->nparts; i++) {
		const struct part *p = &m->ps->part[i];
		struct part_counts c = { .latency_max_us = -1 };

		if (p->count == NULL)
			continue;
		p->count(p->obj, &c);
		if (c.clock == CLOCKQ_NOT_READ)
			continue;
		family(o, F_SYNCED);
		puts_(o, c.clock == CLOCKQ_SYNCED ? "portlogd_clock_synced 1\n"
		      : "portlogd_clock_synced 0\n");
		if (c.clock == CLOCKQ_UNKNOWN)
			break;
		family(o, F_MAX_ERROR);
		puts_(o, "portlogd_clock_max_error_seconds ");
		put_fixed(o, c.clock_maxerror_us, 6);
		puts_(o, "\n");
		break;
	}
	family(o, F_WITHHELD);
	puts_(o, withheld ? "portlogd_watchdog_withheld 1\n" : "portlogd_watchdog_withheld 0\n");
}

size_t metrics_format(struct metrics *m, bool final)
{
	struct out o = { .buf = m->out, .cap = m->cap };

	m->withheld = withheld_now(m->ps);
	family(&o, F_BUILD);
	puts_(&o, "portlogd_build_info{version=\"" PORTLOGD_VERSION "\"} 1\n");
	family(&o, F_START);
	puts_(&o, "portlogd_start_time_seconds ");
	put_fixed(&o, m->start_ns, 9);
	puts_(&o, "\n");
	put_port_up(&o, m, final);
	for (size_t r = 0; r < NROWS; r++)
		put_row(&o, m, &rows[r]);
	for (size_t h = 0; h < NHISTS; h++)
		put_hist(&o, m, &hists[h]);
	put_state(&o, m, m->withheld);
	for (unsigned i = 0; i < m->nparts; i++)
		m->part[i].taken = false;
	m->len = o.full ? 0 : o.len;
	return m->len;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * No fsync: readers see the page cache, so the rename alone keeps them from a
 * half file; a power cut can at worst leave an empty or old file (ext4 flushes
 * a file renamed over another first, auto_da_alloc), which the daemon replaces
 * at its next start, and an fsync would make the flusher, which also writes the
 * log, wait for the disk with every round.
 */
int metrics_write(struct metrics *m, bool final)
{
	size_t len = metrics_format(m, final);
	int fd, err = 0;

	m->due = false;
	if (len == 0) {
		err = EMSGSIZE;     /* metrics_init's room is the registry's: a bug */
	} else if ((fd = open(m->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			      0644)) < 0) {
		err = errno;
	} else {
		/* node_exporter's user reads it, whatever the umask (the unit's is 0027) */
		if (fchmod(fd, 0644) < 0)
			err = errno;
		else
			err = -write_all(fd, m->out, len);
		if (close(fd) < 0 && err == 0)
			err = errno;
		if (err == 0 && rename(m->tmp, m->path) < 0)
			err = errno;
		if (err != 0)
			(void)unlink(m->tmp);   /* best effort: it is not read anyway */
	}
	if (err != 0 && err != m->err)
		log_err("cannot write the metrics file %s: %s; trying again with every STAT round "
			"(portlogd --check-system says what the service user may write)", m->path,
			strerror(err));
	else if (err == 0 && m->err != 0)
		log_info("writing the metrics file %s works again", m->path);
	m->err = err;
	return -err;
}

void metrics_print_names(FILE *out)
{
	for (unsigned f = F_BUILD; f <= F_PORT_UP; f++)
		fprintf(out, "portlogd_%s\t%s\n", families[f].name, families[f].type);
	for (size_t r = 0; r < NROWS; r++)
		fprintf(out, "portlogd_%s\t%s\n", rows[r].name, row_type(&rows[r]));
	for (unsigned f = F_LATENCY; f < NFAMILIES; f++)
		fprintf(out, "portlogd_%s\t%s\n", families[f].name, families[f].type);
}
