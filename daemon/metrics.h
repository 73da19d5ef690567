/* SPDX-License-Identifier: GPL-2.0-or-later */
/* metrics.h - the metrics file: the daemon's counters in node_exporter's textfile format, for Prometheus.
 *
 * [logger] metrics_file = PATH.prom. The daemon opens no socket: node_exporter's
 * textfile collector (Debian's package reads the NAME.prom files in
 * /var/lib/prometheus/node-exporter) serves the file with the machine's other
 * metrics. The flusher writes it, never a real-time thread: at its first pass,
 * with every round of STAT lines, at stop, and at once when the watchdog's
 * verdict changes (systemd kills the service some seconds after the ping is
 * withheld, so the next round would be too late).
 *
 * Every value comes from the registry (parts.h). The counters are read from
 * the very fields of the round's STAT lines, so each equals the one in the STAT
 * line written at the same moment and, like it, never goes backwards within a
 * process's life. A per-port counter is a field of the port's STAT line and
 * one row of the table in metrics.c; a TX reader's field of the same key
 * (tx_KEY) is the same metric with dir="tx", a stall sensor's with cpu="N".
 *
 * A write is a new file beside PATH (PATH.tmp.PID, which node_exporter does not
 * read, one per process), renamed over PATH: a reader opens the old file or the new one, never
 * a part of either.
 */
#ifndef PORTLOGD_METRICS_H
#define PORTLOGD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf.h"
#include "fmt.h"
#include "parts.h"

#define METRICS_FIELDS_MAX 96   /* the fields of a STAT line it looks at (a port with
				 * lines = on and a TX reader has some 45) */

/* One part's STAT fields of this round: "key=value" at text + key and + val. */
struct metrics_part {
	char text[FMT_FIELDS_MAX];
	struct { uint16_t key, klen, val, vlen; } f[METRICS_FIELDS_MAX];
	unsigned n;
	bool taken;             /* this round has its fields */
};

struct metrics {
	char path[CONF_PATH_MAX];
	char tmp[CONF_PATH_MAX + 24];  /* PATH.tmp.PID */
	const struct parts *ps;
	struct metrics_part *part;  /* one per registered part, by its index */
	unsigned nparts;
	char *out;                  /* the file's text, room for the registry's every sample */
	size_t cap, len;
	int64_t start_ns;           /* CLOCK_REALTIME at metrics_init: the daemon's start */
	bool due;                   /* write at the next pass (the flusher's first) */
	bool withheld;              /* the watchdog's verdict in the last file written */
	int err;                    /* errno of the last failed write (said once), or 0 */
};

/* The text's room for parts of each kind (count, by enum part_kind): what
 * metrics_init allocates, for memory.c's figures. */
size_t metrics_bytes(const unsigned count[PART_NKINDS]);

/* After every part is registered (the file has room for each one's samples).
 * Returns 0 or -ENOMEM. */
int metrics_init(struct metrics *m, const char *path, const struct parts *ps);
void metrics_fini(struct metrics *m);

/* In the flusher, at each pass: is a file due? With a STAT round (stat_due: also
 * at stop), at the first pass, and when the watchdog's verdict changed. Then
 * the caller hands over each part's STAT fields (metrics_take) and writes. */
bool metrics_due(const struct metrics *m, bool stat_due);
/* The fields of part i's STAT line of this round ("NAME key=value..."). */
void metrics_take(struct metrics *m, unsigned i, const char *text);

/* Makes the file's text in m->out from the fields taken and the parts' figures
 * (final: at stop, when no port is logged any more: every port_up is 0), and
 * forgets the fields. Returns its length; 0 when it did not fit (a bug). */
size_t metrics_format(struct metrics *m, bool final);
/* metrics_format, then the file replaced by the new text. 0, or -errno, said
 * in the journal once (and when it works again); the next round tries again. */
int metrics_write(struct metrics *m, bool final);

/* Every metric the file may have, "NAME\tTYPE" a line, in the file's order
 * (portlogd --list-metrics, for tests/lint/metrics_names.sh). */
void metrics_print_names(FILE *out);

#endif
