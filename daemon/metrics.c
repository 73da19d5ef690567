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
#include "timer.h"

#define K(kind) (1u << (kind))
#define PORTS (K(PART_SERIAL) | K(PART_PARALLEL))

/*
 * The counters of the STAT lines: one row each, in the file's order. A part
 * of the kinds has the sample {port="NAME"} when its STAT line has the key
 * (the timer's and the flusher's have no port label), and {port="NAME",dir="tx"}
 * when it has tx_KEY (its TX reader's). Names and units by Prometheus's
 * conventions: portlogd_ before, _total after a counter.
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
	{ "log_lines_total", K(PART_FLUSHER), "lines",
	  "Lines written to the log (STAT flusher lines=)." },
	{ "log_bytes_total", K(PART_FLUSHER), "bytes",
	  "Bytes written to the log (STAT flusher bytes=)." },
	{ "log_write_errors_total", K(PART_FLUSHER), "write_errors",
	  "Failed writes of the log, retried (STAT flusher write_errors=)." },
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* The timer's wake-up latency buckets: us, and their le labels in seconds as
 * Prometheus's client libraries write them (a label must never change). From
 * a tuned PREEMPT_RT machine's tens of microseconds to a busy VM's milliseconds. */
#define LE_MAX_US 10000
static const uint32_t le_us[] = { 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, LE_MAX_US };
static const char *const le_text[] = {
	"5e-06", "1e-05", "2e-05", "5e-05", "0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005",
	"0.01",
};
#define NLE (sizeof(le_us) / sizeof(le_us[0]))
_Static_assert(NLE == sizeof(le_text) / sizeof(le_text[0]), "a bucket without its label");
_Static_assert(LE_MAX_US <= TIMER_HIST_US, "a bucket beyond the timer's histogram");

/* The families besides the rows': the process, the ports' state, the timer's
 * histogram, the clock, the watchdog. */
enum { F_BUILD, F_START, F_PORT_UP, F_LATENCY, F_SYNCED, F_MAX_ERROR, F_WITHHELD, NFAMILIES };
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
#define FAMILY_MAX 320          /* "# HELP ..." and "# TYPE ..." of one family */
/* one sample: name, {port="NAME",dir="tx"} or {le="..."}, a value */
#define SAMPLE_MAX (sizeof("portlogd_") + 48 + sizeof("{port=\"\",dir=\"tx\"} ") + CONF_NAME_MAX \
		    + 24 + 1)

int metrics_init(struct metrics *m, const char *path, const struct parts *ps)
{
	size_t samples = 0;

	memset(m, 0, sizeof(*m));
	snprintf(m->path, sizeof(m->path), "%s", path);
	/* PATH.tmp: node_exporter reads only NAME.prom; O_TRUNC reuses one a crash left */
	snprintf(m->tmp, sizeof(m->tmp), "%s.tmp", path);
	m->ps = ps;
	m->nparts = ps->n;
	m->start_ns = real_ns();
	m->due = true;
	for (size_t r = 0; r < NROWS; r++)
		for (unsigned i = 0; i < ps->n; i++)
			samples += (rows[r].kinds & K(ps->part[i].kind)) ? 2 : 0;
	samples += ps->n + 2 * (NLE + 3) + 4;   /* port_up, histograms, the rest */
	m->cap = (NROWS + NFAMILIES) * FAMILY_MAX + samples * SAMPLE_MAX;
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

/* v / 10^decimals, exactly, as a decimal number: a microsecond count in seconds. */
static void put_fixed(struct out *o, int64_t v, unsigned decimals)
{
	uint64_t scale = 1, a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	char frac[24];

	for (unsigned i = 0; i < decimals; i++)
		scale *= 10;
	if (v < 0)
		puts_(o, "-");
	put_u64(o, a / scale);
	frac[0] = '.';
	for (unsigned i = decimals; i > 0; i--, a /= 10)
		frac[i] = (char)('0' + a % 10);
	put(o, frac, decimals + 1);
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

/* "portlogd_NAME{port="P",dir="tx"} " without the labels that are NULL; port
 * names need no escape in a label (conf_read.c: letters, digits, _-.:). */
static void sample(struct out *o, const char *name, const char *port, const char *dir)
{
	puts_(o, "portlogd_");
	puts_(o, name);
	if (port != NULL) {
		puts_(o, "{port=\"");
		puts_(o, port);
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

		if (!(r->kinds & K(p->kind)) || !m->part[i].taken)
			continue;
		for (unsigned d = 0; d < 2; d++) {
			size_t len;
			const char *v = field(&m->part[i], prefix[d], r->key, &len);

			if (v == NULL)
				continue;
			if (!said)
				head(o, r->name, "counter", r->help);
			said = true;
			sample(o, r->name, p->port, d == 1 ? "tx" : NULL);
			put(o, v, len);
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
		sample(o, "port_up", p->port, NULL);
		puts_(o, !final && c.up ? "1\n" : "0\n");
	}
}

static void put_latency(struct out *o, const struct metrics *m)
{
	for (unsigned i = 0; i < m->nparts; i++) {
		const struct part *p = &m->ps->part[i];
		uint64_t below[NLE], count;
		int64_t sum_ns;

		if (p->latency == NULL)
			continue;
		p->latency(p->obj, le_us, (unsigned)NLE, below, &count, &sum_ns);
		family(o, F_LATENCY);
		for (size_t k = 0; k < NLE; k++) {
			puts_(o, "portlogd_timer_latency_seconds_bucket{le=\"");
			puts_(o, le_text[k]);
			puts_(o, "\"} ");
			put_u64(o, below[k]);
			puts_(o, "\n");
		}
		puts_(o, "portlogd_timer_latency_seconds_bucket{le=\"+Inf\"} ");
		put_u64(o, count);
		puts_(o, "\nportlogd_timer_latency_seconds_sum ");
		put_fixed(o, sum_ns, 9);
		puts_(o, "\nportlogd_timer_latency_seconds_count ");
		put_u64(o, count);
		puts_(o, "\n");
		return;         /* one timer */
	}
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
	put_latency(&o, m);
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
		fprintf(out, "portlogd_%s\tcounter\n", rows[r].name);
	for (unsigned f = F_LATENCY; f < NFAMILIES; f++)
		fprintf(out, "portlogd_%s\t%s\n", families[f].name, families[f].type);
}
