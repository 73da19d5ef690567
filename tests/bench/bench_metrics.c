/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_metrics.c - the metrics file's cost with 32 ports: bytes per port, time to write it; prints numbers, never a verdict. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "clock.h"
#include "conf.h"
#include "flush.h"
#include "metrics.h"
#include "parts.h"
#include "serial.h"
#include "stat.h"
#include "timer.h"

/*
 * The daemon's real registry, as main makes it, without its threads: NPORTS
 * serial ports (their real STAT functions; with tx: a tap's second port each), the
 * timer with a filled histogram, the flusher with a log in DIR. Every counter
 * holds a week of a busy port (100 packets of 100 bytes a second). Each round is
 * what the flusher does: stat_hook with a STAT round (the STAT lines and the
 * file); then the file alone (metrics_write after the fields were taken), and
 * its text alone (metrics_format, no I/O).
 */

#define WEEK_PACKETS 60480000ULL
#define NPORTS 32               /* the ports of its RESULTS.md entry */

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

struct world {
	struct conf conf;
	struct serial_port port[NPORTS];
	struct timer timer;
	struct flusher f;
	struct parts ps;
	struct metrics m;
};

static void fill_port(struct serial_port *p)
{
	atomic_store(&p->src.records, WEEK_PACKETS);
	atomic_store(&p->src.bytes, WEEK_PACKETS * 100);
	atomic_store(&p->src.dropped, 1234);
	atomic_store(&p->src.dropped_bytes, 123400);
	atomic_store(&p->wakeups, WEEK_PACKETS * 2);
	atomic_store(&p->late, 5678);
	atomic_store(&p->reopens, 3);
	p->src.accounted = WEEK_PACKETS;
	for (int e = 0; e < SERIAL_NERR; e++)
		atomic_store(&p->errors[e], 17);
}

static int world_init(struct world *w, const char *dir, unsigned nports, bool tx)
{
	char text[16384], err[CONF_ERR_MAX], path[512];
	size_t o;
	int stop_fd = eventfd(0, EFD_CLOEXEC);

	o = (size_t)snprintf(text, sizeof(text), "[logger]\nlog_file = %s/portlogd.log\n"
			     "metrics_file = %s/portlogd.prom\n", dir, dir);
	for (unsigned i = 0; i < nports; i++) {
		o += (size_t)snprintf(text + o, sizeof(text) - o,
				      "[serial port%02u]\ndevice = /dev/ttyUSB%u\n", i, i);
		if (tx)
			o += (size_t)snprintf(text + o, sizeof(text) - o,
					      "tx_device = /dev/ttyUSB%u\n", 100 + i);
	}
	if (nports == 0)    /* a config needs a port: one that is not registered */
		o += (size_t)snprintf(text + o, sizeof(text) - o, "[serial x]\ndevice = /dev/x\n");
	if (conf_parse_string(&w->conf, "bench.conf", text, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_metrics: %s\n", err);
		return -1;
	}
	parts_init(&w->ps);
	parts_add(&w->ps, &(struct part){ .kind = PART_MAIN }, NULL);
	timer_init(&w->timer, &w->conf.timer, NULL, 0);
	timer_parts(&w->timer, &w->ps);
	atomic_store(&w->timer.st.rounds, 604800000ULL);
	atomic_store(&w->timer.st.ticks, 604800000ULL);
	atomic_store(&w->timer.st.missed, 42);
	atomic_store(&w->timer.st.min_ns, 3000);
	atomic_store(&w->timer.st.max_ns, 2500000);
	atomic_store(&w->timer.st.sum_ns, 604800000LL * 40000);
	for (size_t i = 0; i < 200; i++)
		atomic_store(&w->timer.st.hist[i], 604800000ULL / 200);
	for (unsigned i = 0; i < nports; i++) {
		if (serial_init(&w->port[i], &w->conf.serial[i], 64, stop_fd, NULL) < 0)
			return -1;
		fill_port(&w->port[i]);
		if (w->port[i].tx != NULL)
			fill_port(w->port[i].tx);
		serial_parts(&w->port[i], &w->ps);
	}
	if (flush_init(&w->f, &w->conf, &w->ps, err, sizeof(err)) < 0
	    || !flush_parts(&w->f, &w->ps)) {
		fprintf(stderr, "bench_metrics: %s\n", err);
		return -1;
	}
	atomic_store(&w->f.lines, WEEK_PACKETS * nports);
	snprintf(path, sizeof(path), "%s/portlogd.prom", dir);
	if (metrics_init(&w->m, path, &w->ps) < 0)
		return -1;
	w->f.metrics = &w->m;
	return 0;
}

static void world_fini(struct world *w, unsigned nports)
{
	metrics_fini(&w->m);
	flush_fini(&w->f);
	for (unsigned i = 0; i < nports; i++)
		serial_fini(&w->port[i]);
}

/* Each part's STAT fields, as the flusher's round hands them over. */
static void take_all(struct world *w)
{
	for (unsigned k = 0; k < w->ps.n; k++) {
		char text[FMT_FIELDS_MAX];

		if (w->ps.part[k].stat == NULL)
			continue;
		parts_stat_text(&w->ps.part[k], text);
		metrics_take(&w->m, k, text);
	}
}

/* us per call: p50, p99, max of n */
static void times(const char *what, int64_t *ns, unsigned n)
{
	qsort(ns, n, sizeof(*ns), cmp64);
	printf("  %-34s p50 %7.1f us  p99 %7.1f us  max %7.1f us\n", what, ns[n / 2] / 1e3,
	       ns[n * 99 / 100] / 1e3, ns[n - 1] / 1e3);
}

/* One configuration: the file's size, and the times of n rounds. */
static int run(const char *dir, unsigned nports, bool tx, unsigned n, size_t *bytes)
{
	static struct world w;      /* large: not on the stack */
	int64_t *ns = calloc(n, sizeof(*ns));

	memset(&w, 0, sizeof(w));
	if (ns == NULL || world_init(&w, dir, nports, tx) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		int64_t t0 = mono_ns();

		stat_hook(&w.ps, &w.f, true, false);
		ns[i] = mono_ns() - t0;
		(void)flush_write(&w.f);        /* the STAT lines to the log, not timed */
		if (w.m.err != 0) {
			fprintf(stderr, "bench_metrics: cannot write in %s: %s\n", dir,
				strerror(w.m.err));
			return -1;
		}
	}
	*bytes = w.m.len;
	if (nports > 0) {
		printf("%u serial ports%s: %zu bytes\n", nports, tx ? " with a TX reader" : "",
		       w.m.len);
		times("STAT round + file (stat_hook)", ns, n);
		for (unsigned i = 0; i < n; i++) {
			int64_t t0;

			take_all(&w);
			t0 = mono_ns();
			(void)metrics_write(&w.m, false);
			ns[i] = mono_ns() - t0;
		}
		times("file alone (format, write, rename)", ns, n);
		for (unsigned i = 0; i < n; i++) {
			int64_t t0;

			take_all(&w);
			t0 = mono_ns();
			if (metrics_format(&w.m, false) != *bytes)
				return -1;
			ns[i] = mono_ns() - t0;
		}
		times("its text alone (metrics_format)", ns, n);
	}
	world_fini(&w, nports);
	free(ns);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1000;
	char work[512];
	size_t base, rx, both;
	struct statfs fs;

	snprintf(work, sizeof(work), "%s/portlogd-bench-metrics-XXXXXX", dir);
	if (n == 0 || mkdtemp(work) == NULL) {
		fprintf(stderr, "usage: bench_metrics [DIR [ROUNDS]]: %s\n", strerror(errno));
		return 2;
	}
	if (statfs(work, &fs) == 0)
		printf("in %s (file system 0x%lx), %u rounds each\n", work,
		       (unsigned long)fs.f_type, n);
	if (run(work, 0, false, 1, &base) < 0 || run(work, NPORTS, false, n, &rx) < 0
	    || run(work, NPORTS, true, n, &both) < 0)
		return 1;
	printf("without ports %zu bytes; per port %.0f bytes (RX), %.0f with its TX reader\n",
	       base, (double)(rx - base) / NPORTS, (double)(both - base) / NPORTS);
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
	return system(cmd) == 0 ? 0 : 1;
}
