/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_metrics.c - the metrics file served by the real prometheus-node-exporter: each value the STAT line's, never a half file. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "sim/sim.h"
#include "testutil.h"

/*
 * Issue 25's "Must show": the daemon logs simulator traffic on serial ports (one
 * plain, one with lines = on, a tap with tx_device, one with pass) and a
 * simulated parallel port, with a STAT round every second and metrics_file in
 * the textfile directory of a prometheus-node-exporter on 127.0.0.1 that runs
 * nothing but the textfile collector. The test scrapes /metrics over and over
 * while the file is replaced, and afterwards compares every scrape with the
 * log: each counter equals its field in the STAT line of the round it was
 * written with (a stall sensor's by its cpu label, microseconds as seconds),
 * the clock its EV clock line, each histogram's count the round's samples; no
 * scrape lacks a series or has a parse error; no counter goes backwards;
 * promtool check metrics is silent; and the families served are exactly
 * portlogd --list-metrics.
 */

#define NEXPORTER "prometheus-node-exporter"
#define NSIM 5                  /* p0, p1, the tap's two wires, the pass port's device */
#define NTRAFFIC 4              /* all but the pass port's device */
#define MAX_SCRAPES 20000

/* The STAT field of each counter and gauge: p a port's line (and tx_KEY for
 * dir="tx"), t the timer's, f the flusher's, s a stall sensor's (cpu="N" its
 * cpu=); a KEY_us field is served in seconds. The test's own copy of the contract. */
static const struct { const char *metric; char line; const char *key; } fields[] = {
	{ "portlogd_records_total", 'p', "records" },
	{ "portlogd_bytes_total", 'p', "bytes" },
	{ "portlogd_dropped_records_total", 'p', "drops" },
	{ "portlogd_dropped_bytes_total", 'p', "drop_bytes" },
	{ "portlogd_late_deliveries_total", 'p', "late" },
	{ "portlogd_port_reopens_total", 'p', "reopens" },
	{ "portlogd_held_bytes_total", 'p', "held_bytes" },
	{ "portlogd_uart_frame_errors_total", 'p', "frame" },
	{ "portlogd_uart_parity_errors_total", 'p', "parity" },
	{ "portlogd_uart_overruns_total", 'p', "overrun" },
	{ "portlogd_uart_breaks_total", 'p', "brk" },
	{ "portlogd_uart_buffer_overruns_total", 'p', "buf_overrun" },
	{ "portlogd_relay_lost_bytes_total", 'p', "relay_lost" },
	{ "portlogd_modem_line_records_total", 'p', "lines_records" },
	{ "portlogd_modem_line_dropped_records_total", 'p', "lines_drops" },
	{ "portlogd_sampler_overruns_total", 'p', "overruns" },
	{ "portlogd_timer_wakeups_total", 't', "triggers" },
	{ "portlogd_timer_missed_periods_total", 't', "missed" },
	{ "portlogd_sensor_wakeups_total", 's', "ticks" },
	{ "portlogd_cpu_stalls_total", 's', "stalls" },
	{ "portlogd_cpu_stall_lateness_seconds_total", 's', "stall_late_us" },
	{ "portlogd_cpu_stall_max_seconds", 's', "stall_max_us" },
	{ "portlogd_tty_probes_total", 's', "tty_probes" },
	{ "portlogd_tty_stalls_total", 's', "tty_stalls" },
	{ "portlogd_tty_delivery_max_seconds", 's', "tty_max_us" },
	{ "portlogd_log_lines_total", 'f', "lines" },
	{ "portlogd_log_bytes_total", 'f', "bytes" },
	{ "portlogd_log_write_errors_total", 'f', "write_errors" },
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* The histograms, whose series are NAME_bucket, NAME_sum and NAME_count. */
static const char *const histograms[] = {
	"portlogd_timer_latency_seconds", "portlogd_tty_delivery_seconds",
};
#define NHISTOGRAMS (sizeof(histograms) / sizeof(histograms[0]))
#define NSTAT 64                /* STAT lines of a round: 7 here, and a sensor per CPU */

/* ------------------------------------------------------------- a scrape */

struct sample {
	char *series;           /* name{labels} as served (node_exporter sorts labels) */
	char *value;
};

struct scrape {
	char *body;
	struct sample *s;
	size_t n;
	long long lines;        /* portlogd_log_lines_total: the round it was written with */
	bool error;             /* node_textfile_scrape_error 1 */
};

static struct scrape *scrapes;
static size_t nscrapes;

/* GET /metrics over HTTP/1.0: the body, or NULL when the exporter is not there. */
static char *http_get(int port)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t cap = 1 << 16, n = 0;
	char *buf, *body;
	ssize_t r;

	assert_true(fd >= 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return NULL;
	}
	assert_int_equal(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	buf = malloc(cap);
	assert_non_null(buf);
	while ((r = read(fd, buf + n, cap - n - 1)) > 0)
		if ((n += (size_t)r) + 1 == cap)
			assert_non_null(buf = realloc(buf, cap *= 2));
	close(fd);
	buf[n] = '\0';
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0 && strncmp(buf, "HTTP/1.0 200", 12) != 0)
		fail_msg("node_exporter answered: %.200s", buf);
	body = strstr(buf, "\r\n\r\n");
	assert_non_null(body);
	memmove(buf, body + 4, strlen(body + 4) + 1);
	return buf;
}

static const char *value_of(const struct scrape *sc, const char *series)
{
	for (size_t i = 0; i < sc->n; i++)
		if (strcmp(sc->s[i].series, series) == 0)
			return sc->s[i].value;
	return NULL;
}

/* Splits a body into its samples (in place). */
static void parse_scrape(struct scrape *sc)
{
	size_t cap = 0;
	const char *v;

	for (char *l = sc->body, *nl; *l != '\0'; l = nl + 1) {
		char *sp;

		nl = strchr(l, '\n');
		assert_non_null(nl);
		*nl = '\0';
		if (l[0] == '#' || l[0] == '\0')
			continue;
		sp = strrchr(l, ' ');
		assert_non_null(sp);
		*sp = '\0';
		if (sc->n == cap)
			assert_non_null(sc->s = realloc(sc->s, (cap = cap * 2 + 64)
							* sizeof(*sc->s)));
		sc->s[sc->n++] = (struct sample){ .series = l, .value = sp + 1 };
	}
	v = value_of(sc, "node_textfile_scrape_error");
	assert_non_null(v);
	sc->error = strcmp(v, "0") != 0;
	v = value_of(sc, "portlogd_log_lines_total");
	sc->lines = v != NULL ? atoll(v) : -1;
}

static void take_scrape(int port)
{
	struct scrape *sc;

	assert_true(nscrapes < MAX_SCRAPES);
	sc = &scrapes[nscrapes++];
	*sc = (struct scrape){ .body = http_get(port) };
	assert_non_null(sc->body);
	parse_scrape(sc);
}

/* The portlogd series of a scrape, as a sorted list joined by newlines. */
static char *series_set(const struct scrape *sc)
{
	size_t len = 0;
	char *out;

	for (size_t i = 0; i < sc->n; i++)
		len += strlen(sc->s[i].series) + 1;
	out = calloc(1, len + 1);
	assert_non_null(out);
	for (size_t i = 0; i < sc->n; i++)
		if (strncmp(sc->s[i].series, "portlogd_", 9) == 0) {
			strcat(out, sc->s[i].series);
			strcat(out, "\n");
		}
	return out;
}

/* --------------------------------------------------------- the world */

static struct {
	char dir[256], tf[300], log[300], conf[300], prom[320];
	int port;
	pid_t exporter;
	struct e2e_daemon d;
	struct sim_port p[NSIM];
	unsigned nopen;
	struct sim_bg bg;
	bool traffic;
} w;

static void exporter_start(void)
{
	char dirarg[400], listen[64], errpath[320];

	w.port = e2e_free_port();
	snprintf(dirarg, sizeof(dirarg), "--collector.textfile.directory=%s", w.tf);
	snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%d", w.port);
	snprintf(errpath, sizeof(errpath), "%s/exporter.txt", w.dir);
	w.exporter = fork();
	assert_true(w.exporter >= 0);
	if (w.exporter == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0)
			dup2(fd, 2);
		execlp(NEXPORTER, NEXPORTER, listen, "--collector.disable-defaults",
		       "--collector.textfile", dirarg, "--web.disable-exporter-metrics",
		       (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		char *body = http_get(w.port);

		if (body != NULL) {
			free(body);
			return;
		}
		assert_int_equal(waitpid(w.exporter, NULL, WNOHANG), 0);
		tu_sleep_ms(10);
	}
	fail_msg("%s does not answer on 127.0.0.1:%d (see %s)", NEXPORTER, w.port, errpath);
}

static int teardown(void **state)
{
	(void)state;
	if (w.traffic) {
		for (unsigned i = 0; i < NTRAFFIC; i++)
			atomic_store(&w.p[i].stop, true);
		(void)sim_bg_join(&w.bg);
		w.traffic = false;
	}
	e2e_kill(&w.d);
	if (w.exporter > 0) {
		kill(w.exporter, SIGTERM);
		waitpid(w.exporter, NULL, 0);
		w.exporter = 0;
	}
	for (; w.nopen > 0; w.nopen--)
		sim_port_close(&w.p[w.nopen - 1]);
	return 0;
}

static void daemon_start(void)
{
	static const char *const names[NSIM] = { "p0", "p1", "rx", "tx", "dev" };
	char text[4096];

	for (unsigned i = 0; i < NSIM; i++) {
		char link[320];

		snprintf(link, sizeof(link), "%s/%s", w.dir, names[i]);
		assert_int_equal(sim_port_open(&w.p[i], names[i], link), 0);
		w.nopen++;
	}
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 1\n"
		 "metrics_file = %s\n"
		 "[timer]\npriority = other\ncpu_dma_latency = off\n"
		 "[serial p0]\ndevice = %s/p0\npriority = other\ndelivery = usb\n"
		 "[serial p1]\ndevice = %s/p1\npriority = other\nlines = on\n"
		 "[serial tap]\ndevice = %s/rx\ntx_device = %s/tx\npriority = other\n"
		 "[serial app]\ndevice = %s/dev\npass = %s/app\npriority = other\n"
		 "[parallel lpt0]\ndriver = sim\ndevice = %s/pins\npriority = other\n",
		 w.log, w.prom, w.dir, w.dir, w.dir, w.dir, w.dir, w.dir, w.dir);
	e2e_write_file(w.conf, text);
	assert_int_equal(e2e_start(&w.d, w.dir, w.conf), 0);
	if (e2e_wait_ready(&w.d, 20000) != 0)
		fail_msg("the daemon did not send READY=1 (stderr: %s)", w.d.err_path);
	for (unsigned i = 0; i < NSIM; i++)
		assert_int_equal(sim_port_wait_open(&w.p[i], 10000), 0);
	/* the flusher's first pass writes the file, after READY=1 maybe */
	for (int i = 0; i < 1000 && access(w.prom, F_OK) < 0; i++)
		tu_sleep_ms(10);
	assert_int_equal(access(w.prom, R_OK), 0);
}

/* -------------------------------------------------------- the STAT rounds */

struct round {
	long long lines;            /* the flusher's lines= */
	const char *stat[NSTAT];    /* "NAME k=v ..." of each STAT line */
	unsigned nstat;
	const char *clock;          /* the EV clock line's fields after it */
};

/* The fields after "portlogd STAT " and "portlogd EV clock ". */
static const char *after(const char *text, const char *what)
{
	const char *p = strstr(text, what);

	return p != NULL ? p + strlen(what) : NULL;
}

/* key=VALUE in a line of fields, as text in out; false without it. */
static bool field(const char *line, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = line; (p = strstr(p, key)) != NULL; p += kl)
		if ((p == line || p[-1] == ' ') && p[kl] == '=') {
			size_t n = strcspn(p + kl + 1, " \n");

			snprintf(out, len, "%.*s", (int)n, p + kl + 1);
			return true;
		}
	return false;
}

static struct round *read_rounds(const struct e2e_log *log, size_t *n)
{
	struct round *r = calloc(log->n, sizeof(*r)), cur = { 0 };

	assert_non_null(r);
	*n = 0;
	for (size_t i = 0; i < log->n; i++) {
		const char *text = log->line[i].text, *f;
		char v[32];

		if (strcmp(log->line[i].src, "portlogd") != 0)
			continue;
		if ((f = after(text, " portlogd STAT ")) != NULL) {
			assert_true(cur.nstat < NSTAT);
			cur.stat[cur.nstat++] = f;
			if (strncmp(f, "flusher ", 8) == 0) {
				assert_true(field(f, "lines", v, sizeof(v)));
				cur.lines = atoll(v);
				r[(*n)++] = cur;
				memset(&cur, 0, sizeof(cur));
			}
		} else if ((f = after(text, " portlogd EV clock ")) != NULL && *n > 0
			   && r[*n - 1].clock == NULL && cur.nstat == 0) {
			r[*n - 1].clock = f;
		}
	}
	return r;
}

/* The STAT line of NAME ("timer", "flusher", a port; "sensor cpu=N") in a round, after
 * its name. */
static const char *stat_of(const struct round *r, const char *name)
{
	size_t n = strlen(name);

	for (unsigned i = 0; i < r->nstat; i++)
		if (strncmp(r->stat[i], name, n) == 0 && r->stat[i][n] == ' ')
			return r->stat[i] + strcspn(r->stat[i], " ") + 1;
	return NULL;
}

/* The kind of a STAT line, as fields[] has it: t, f, s or p. */
static char kind_of(const char *line)
{
	return strncmp(line, "timer ", 6) == 0 ? 't' : strncmp(line, "flusher ", 8) == 0 ? 'f'
	       : strncmp(line, "sensor ", 7) == 0 ? 's' : 'p';
}

/* port="NAME" of a series, or "" */
static void label(const char *series, const char *key, char *out, size_t len)
{
	char pat[32];
	const char *p;

	snprintf(pat, sizeof(pat), "%s=\"", key);
	p = strstr(series, pat);
	if (p == NULL) {
		snprintf(out, len, "%s", "");
		return;
	}
	p += strlen(pat);
	snprintf(out, len, "%.*s", (int)strcspn(p, "\""), p);
}

/* Is served the value of STAT key=want? A KEY_us field in seconds, compared as
 * numbers (node_exporter writes floats its own way). */
static bool served_as(const char *key, const char *want, const char *served)
{
	size_t n = strlen(key);
	long long v;
	char sec[40];

	if (n < 3 || strcmp(key + n - 3, "_us") != 0)
		return strcmp(served, want) == 0;
	v = atoll(want);
	snprintf(sec, sizeof(sec), "%lld.%06lld", v / 1000000, v % 1000000);
	return strtod(served, NULL) == strtod(sec, NULL);
}

/*
 * Every sample of a scrape that stands for a STAT field has the field's value
 * in the round's line; every such field of the round is served; the clock is
 * the round's EV clock line's; every port is up (final: down).
 */
static unsigned check_against(const struct scrape *sc, const struct round *r, bool final)
{
	unsigned checked = 0;
	char port[64], dir[16], cpu[16], key[64], want[32], who[80];

	for (size_t i = 0; i < sc->n; i++) {
		const char *series = sc->s[i].series, *line;
		size_t nl = strcspn(series, "{");

		if (strncmp(series, "portlogd_port_up{", 17) == 0) {
			assert_string_equal(sc->s[i].value, final ? "0" : "1");
			continue;
		}
		for (size_t f = 0; f < NFIELDS; f++) {
			if (strlen(fields[f].metric) != nl || strncmp(series, fields[f].metric, nl) != 0)
				continue;
			label(series, "port", port, sizeof(port));
			label(series, "dir", dir, sizeof(dir));
			label(series, "cpu", cpu, sizeof(cpu));
			snprintf(who, sizeof(who), "%s", fields[f].line == 't' ? "timer"
				 : fields[f].line == 'f' ? "flusher" : port);
			if (fields[f].line == 's')
				snprintf(who, sizeof(who), "sensor cpu=%s", cpu);
			line = stat_of(r, who);
			if (line == NULL)
				fail_msg("%s: no STAT line for it in the round of lines=%lld", series,
					 r->lines);
			snprintf(key, sizeof(key), "%s%s", dir[0] != '\0' ? "tx_" : "", fields[f].key);
			if (!field(line, key, want, sizeof(want)))
				fail_msg("%s: the STAT line has no %s=: %s", series, key, line);
			if (!served_as(key, want, sc->s[i].value))
				fail_msg("%s is %s, its STAT line says %s=%s (round of lines=%lld)",
					 series, sc->s[i].value, key, want, r->lines);
			checked++;
		}
	}
	/* the other way round: each field of the round is served */
	for (unsigned k = 0; k < r->nstat; k++) {
		const char *line = r->stat[k];
		size_t nn = strcspn(line, " ");
		char name[64], series[160], kind = kind_of(line);

		snprintf(name, sizeof(name), "%.*s", (int)nn, line);
		if (kind == 's')
			assert_true(field(line, "cpu", cpu, sizeof(cpu)));
		for (size_t f = 0; f < NFIELDS; f++) {
			if (fields[f].line != kind)
				continue;
			for (int tx = 0; tx < 2; tx++) {
				snprintf(key, sizeof(key), "%s%s", tx ? "tx_" : "", fields[f].key);
				if (!field(line + nn, key, want, sizeof(want)))
					continue;
				/* node_exporter gives dir="" to a family's series without
				 * dir when another of them has one */
				if (kind == 's')
					snprintf(series, sizeof(series), "%s{cpu=\"%s\"}",
						 fields[f].metric, cpu);
				else if (kind != 'p')
					snprintf(series, sizeof(series), "%s", fields[f].metric);
				else
					snprintf(series, sizeof(series), "%s{dir=\"%s\",port=\"%s\"}",
						 fields[f].metric, tx ? "tx" : "", name);
				if (value_of(sc, series) != NULL)
					continue;
				snprintf(series, sizeof(series), "%s{port=\"%s\"}", fields[f].metric,
					 name);
				if (tx || kind != 'p' || value_of(sc, series) == NULL)
					fail_msg("STAT %s %s=%s is not served", name, key, want);
			}
		}
	}
	/* the clock of the round's EV clock line */
	if (r->clock != NULL) {
		const char *synced = value_of(sc, "portlogd_clock_synced");
		const char *maxerr = value_of(sc, "portlogd_clock_max_error_seconds");
		char yes[16], us[32];

		assert_true(field(r->clock, "synced", yes, sizeof(yes)));
		assert_non_null(synced);
		assert_string_equal(synced, strcmp(yes, "yes") == 0 ? "1" : "0");
		if (field(r->clock, "maxerror_us", us, sizeof(us))) {
			assert_non_null(maxerr);
			if (!served_as("maxerror_us", us, maxerr))
				fail_msg("clock max error %s s, its EV clock line says %s us", maxerr,
					 us);
		}
		checked += 2;
	}
	return checked;
}

/* KEY= of a round's STAT lines of a kind, summed: the timer's ticks=, the sensors'
 * tty_probes=. */
static long long sum_of(const struct round *r, char kind, const char *key)
{
	long long sum = 0;
	char v[32];

	for (unsigned i = 0; i < r->nstat; i++)
		if (kind_of(r->stat[i]) == kind) {
			assert_true(field(r->stat[i], key, v, sizeof(v)));
			sum += atoll(v);
		}
	return sum;
}

/* A histogram: cumulative buckets, +Inf = count, and a count from the round's
 * samples (the timer's ticks=, the sensors' tty_probes=: read before the bins,
 * which are counted first) to the last round's (at stop, after the threads
 * ended: then all of them, exactly). */
static void check_histogram(const struct scrape *sc, const char *name, const struct round *r,
			    const struct round *last, char kind, const char *key)
{
	char series[96];
	double prev = 0;
	const char *cnt, *inf;
	long long count, lo = sum_of(r, kind, key), hi = sum_of(last, kind, key);

	snprintf(series, sizeof(series), "%s_count", name);
	cnt = value_of(sc, series);
	snprintf(series, sizeof(series), "%s_bucket{le=\"+Inf\"}", name);
	inf = value_of(sc, series);
	assert_non_null(cnt);
	assert_non_null(inf);
	assert_string_equal(cnt, inf);
	snprintf(series, sizeof(series), "%s_bucket{", name);
	for (size_t i = 0; i < sc->n; i++)
		if (strncmp(sc->s[i].series, series, strlen(series)) == 0) {
			double v = strtod(sc->s[i].value, NULL);

			assert_true(v >= prev);
			prev = v;
		}
	count = atoll(cnt);
	if (count < lo || count > hi || (r == last && count != lo))
		fail_msg("%s count %lld outside %s %lld..%lld of its round and the last", name,
			 count, key, lo, hi);
}

/* Counters, histogram series and the longest-so-far gauges never go backwards from
 * one scrape to the next. */
static void check_monotonic(const struct scrape *a, const struct scrape *b)
{
	for (size_t i = 0; i < b->n; i++) {
		const char *s = b->s[i].series, *old;
		bool hist = false;

		for (size_t h = 0; h < NHISTOGRAMS; h++)
			hist |= strncmp(s, histograms[h], strlen(histograms[h])) == 0;
		if (strncmp(s, "portlogd_", 9) != 0 || (strstr(s, "_total") == NULL && !hist
		    && strstr(s, "_max_seconds{") == NULL))
			continue;
		old = value_of(a, s);
		if (old != NULL && strtod(b->s[i].value, NULL) < strtod(old, NULL))
			fail_msg("%s went back from %s to %s", s, old, b->s[i].value);
	}
}

/* promtool check metrics on text: silent and 0 (its lints: names, units, HELP). */
static void promtool_check(const char *what, const char *path)
{
	int st;
	char *out = e2e_sh(&st, "promtool check metrics < '%s' 2>&1", path);

	if (st != 0 || out[0] != '\0')
		fail_msg("promtool check metrics on %s: status %d: %s", what, st, out);
	free(out);
}

/* The families served are exactly portlogd --list-metrics's; the clock sensor's only
 * where it ran (its STAT clock line: a virtual machine with an RTC), which the log says. */
static void check_names(const struct scrape *sc)
{
	int st;
	const char *bin = getenv("PORTLOGD_BIN");
	char *list = e2e_sh(&st, "'%s' --list-metrics | cut -f1 | { grep -q ' STAT clock ' '%s' "
			    "&& cat || grep -Ev '^portlogd_clock_(updates|stops|lost|marked|unvouched)'; "
			    "} | sort", bin != NULL && *bin != '\0' ? bin : PORTLOGD_BIN, w.log);
	char *served, path[400];
	FILE *f;

	assert_int_equal(st, 0);
	snprintf(path, sizeof(path), "%s/served.txt", w.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	for (size_t i = 0; i < sc->n; i++) {
		const char *s = sc->s[i].series;
		size_t n = strcspn(s, "{");

		if (strncmp(s, "portlogd_", 9) != 0)
			continue;
		/* a histogram's series are its family's */
		for (size_t h = 0; h < NHISTOGRAMS; h++)
			if (strncmp(s, histograms[h], strlen(histograms[h])) == 0
			    && s[strlen(histograms[h])] == '_')
				n = strlen(histograms[h]);
		fprintf(f, "%.*s\n", (int)n, s);
	}
	fclose(f);
	served = e2e_sh(&st, "sort -u '%s'", path);
	if (strcmp(list, served) != 0)
		fail_msg("served families:\n%s\nportlogd --list-metrics:\n%s", served, list);
	free(list);
	free(served);
}

static void test_scrape_matches_stat(void **state)
{
	struct sim_cfg cfg = {
		.kind = SIM_BINARY, .packets = 400, .min_len = 4, .max_len = 120, .max_frags = 2,
		.intra_gap_max_us = 100, .inter_gap_min_us = 5000, .inter_gap_max_us = 20000,
		.gap_us = 1000, .seed = tu_seed("e2e_metrics"),
	};
	struct e2e_log log = { 0 };
	struct round *rounds;
	size_t nrounds, first = 0, matched = 0, versions = 1, complete_before_first = 0;
	unsigned checked = 0;
	char *full = NULL, path[400];
	int64_t end;
	int st;

	(void)state;
	e2e_tmpdir(w.dir, sizeof(w.dir));
	snprintf(w.tf, sizeof(w.tf), "%s/textfile", w.dir);
	assert_int_equal(mkdir(w.tf, 0755), 0);
	snprintf(w.log, sizeof(w.log), "%s/portlogd.log", w.dir);
	snprintf(w.conf, sizeof(w.conf), "%s/portlogd.conf", w.dir);
	snprintf(w.prom, sizeof(w.prom), "%s/portlogd.prom", w.tf);
	scrapes = calloc(MAX_SCRAPES, sizeof(*scrapes));
	assert_non_null(scrapes);
	exporter_start();
	daemon_start();
	/* traffic on every serial port and wire but the pass port's device */
	assert_int_equal(sim_bg_start(&w.bg, w.p, NTRAFFIC, &cfg, 0), 0);
	w.traffic = true;
	/* scrape without pause while the traffic lasts (some seconds: a new file each),
	 * and 2.5 s more for two rounds after it */
	end = INT64_MAX;
	while (tu_mono_ns() < end) {
		unsigned done = 0;

		take_scrape(w.port);
		for (unsigned i = 0; i < NTRAFFIC; i++)
			done += atomic_load(&w.p[i].done) >= cfg.packets;
		if (end == INT64_MAX && done == NTRAFFIC)
			end = tu_mono_ns() + 2500000000LL;
		tu_sleep_ms(2);
	}
	assert_int_equal(sim_bg_join(&w.bg), 0);
	w.traffic = false;
	st = e2e_stop(&w.d, SIGTERM, 20000, NULL);
	assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	take_scrape(w.port);            /* the file written at stop */

	assert_int_equal(e2e_read_log(&log, w.log), 0);
	rounds = read_rounds(&log, &nrounds);
	assert_true(nrounds >= 4);
	full = series_set(&scrapes[nscrapes - 1]);
	for (size_t i = 0; i < nscrapes; i++) {
		struct scrape *sc = &scrapes[i];
		char *set = series_set(sc);
		size_t k;

		if (sc->error)
			fail_msg("scrape %zu: node_textfile_scrape_error 1 (a half file?)", i);
		/* the same series in every file (the ports' samples are there from the start) */
		if (strcmp(set, full) != 0)
			fail_msg("scrape %zu has other series than the last:\n%s\nlast:\n%s", i, set,
				 full);
		free(set);
		if (i > 0) {
			check_monotonic(&scrapes[i - 1], sc);
			versions += sc->lines != scrapes[i - 1].lines;
		}
		for (k = 0; k < nrounds && rounds[k].lines != sc->lines; k++)
			;
		if (k == nrounds) {
			/* the file of the first pass, before any round */
			if (sc->lines >= rounds[0].lines)
				fail_msg("scrape %zu: log_lines_total %lld is no round's lines=", i,
					 sc->lines);
			complete_before_first++;
			continue;
		}
		if (matched == 0)
			first = k;
		matched++;
		checked += check_against(sc, &rounds[k], i == nscrapes - 1);
		check_histogram(sc, "portlogd_timer_latency_seconds", &rounds[k],
				&rounds[nrounds - 1], 't', "ticks");
		check_histogram(sc, "portlogd_tty_delivery_seconds", &rounds[k],
				&rounds[nrounds - 1], 's', "tty_probes");
	}
	/* the last scrape is the file written at stop, with the last round */
	assert_int_equal(scrapes[nscrapes - 1].lines, rounds[nrounds - 1].lines);
	/* the sensors ran: a line per CPU of theirs, probes that came back */
	if (sum_of(&rounds[nrounds - 1], 's', "ticks") == 0
	    || sum_of(&rounds[nrounds - 1], 's', "tty_probes") == 0)
		fail_msg("no stall sensor's STAT line with ticks and probes in the last round");
	print_message("%zu scrapes of %zu files (%zu scrapes before the first STAT round), "
		      "matched with rounds %zu to %zu of %zu; %u values compared with their STAT "
		      "and EV clock lines\n", nscrapes, versions, complete_before_first, first + 1,
		      nrounds, nrounds, checked);
	assert_true(versions >= 4);

	/* promtool on what node_exporter served, and on the file itself */
	snprintf(path, sizeof(path), "%s/scrape.txt", w.dir);
	{
		char *body = http_get(w.port);

		assert_non_null(body);
		e2e_write_file(path, body);
		free(body);
	}
	promtool_check("the scrape", path);
	promtool_check("the file", w.prom);
	check_names(&scrapes[nscrapes - 1]);

	free(full);
	free(rounds);
	e2e_free_log(&log);
	for (size_t i = 0; i < nscrapes; i++) {
		free(scrapes[i].body);
		free(scrapes[i].s);
	}
	free(scrapes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_scrape_matches_stat, teardown),
	};

	static const char *const need[] = { "command -v " NEXPORTER, "command -v promtool" };

	if (!e2e_have("e2e_metrics", need, 2))
		return 77;
	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
