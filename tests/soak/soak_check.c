/* SPDX-License-Identifier: GPL-2.0-or-later */
/* soak_check.c - tests/soak/soak.sh's helper: step the clock; check a soak run's logs against what was sent.
 *
 *   soak_check step USEC
 *       sets CLOCK_REALTIME USEC microseconds forward (or back, negative), to the
 *       nanosecond (date -s keeps whole seconds only). Root.
 *   soak_check check MAX_PACKET LOG... -- SENT...
 *       LOG: the log files, oldest first (rotated ones uncompressed); SENT: the
 *       simulator's --output files (a port's in the order they were written).
 *       Checks, and prints: the STAT lines account for every record across the
 *       files (e2e_check_accounting), the clock's EV lines are there
 *       (e2e_check_clock), each port's RX payloads are exactly the bytes sent
 *       (nothing lost, doubled or moved), and each packet with clean timing is
 *       one RX line, or its wrong boundary is marked where the boundary rule
 *       puts the mark (the log's own mark: never the sender's clock).
 *       Exit 0 when all hold.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e.h"

#define MAX_PORTS 32

struct sent_pkt {
	size_t off, len;
	int64_t t;                  /* CLOCK_REALTIME of its first write, ns */
	int64_t dur;                /* to the return of its last write, ns */
	bool clean;
};

struct port {
	char name[32];
	uint8_t *data;
	size_t len, cap;
	struct sent_pkt *pkt;
	size_t npkt, pcap;
};

static struct port ports[MAX_PORTS];
static unsigned nports;

static struct port *port_of(const char *name)
{
	for (unsigned i = 0; i < nports; i++)
		if (strcmp(ports[i].name, name) == 0)
			return &ports[i];
	if (nports == MAX_PORTS)
		return NULL;
	snprintf(ports[nports].name, sizeof(ports[nports].name), "%s", name);
	return &ports[nports++];
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "name sec.nsec len hex dur_us maxgap_us clean|unclean" per line (portlogd-sim --output) */
static int read_sent(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (f == NULL) {
		perror(path);
		return -1;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		char name[32], *hex = malloc((size_t)n), clean[16];
		long long sec, nsec, dur, gap;
		size_t len;
		struct port *p;

		if (hex == NULL || sscanf(line, "%31s %lld.%lld %zu %s %lld %lld %15s", name, &sec, &nsec,
					  &len, hex, &dur, &gap, clean) != 8
		    || strlen(hex) != 2 * len || (p = port_of(name)) == NULL) {
			fprintf(stderr, "%s: cannot read: %.100s", path, line);
			free(hex);
			return -1;
		}
		if (p->len + len > p->cap) {
			p->cap = (p->len + len) * 2 + 4096;
			p->data = realloc(p->data, p->cap);
		}
		if (p->npkt == p->pcap) {
			p->pcap = p->pcap ? 2 * p->pcap : 1024;
			p->pkt = realloc(p->pkt, p->pcap * sizeof(*p->pkt));
		}
		if (p->data == NULL || p->pkt == NULL)
			abort();
		for (size_t i = 0; i < len; i++)
			p->data[p->len + i] = (uint8_t)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
		p->pkt[p->npkt++] = (struct sent_pkt){ .off = p->len, .len = len,
			.t = sec * 1000000000 + nsec, .dur = dur * 1000,
			.clean = strcmp(clean, "clean") == 0 };
		p->len += len;
		free(hex);
	}
	free(line);
	fclose(f);
	return 0;
}

struct counts {
	size_t packets, once, unclean, marked, unexplained;
};

/* One port: bytes exact, every clean packet one RX line or its doubt shown. */
static int check_port(const struct e2e_log *log, const struct port *p, size_t max_packet,
		      struct counts *c)
{
	size_t len, *starts, *idx, nlines;
	uint8_t *got = e2e_concat(log, p->name, &len, &starts, &idx, &nlines);
	int rc = 0;

	if (len != p->len || memcmp(got, p->data, len) != 0) {
		size_t k = 0;

		while (k < len && k < p->len && got[k] == p->data[k])
			k++;
		printf("FAIL %s: the log holds %zu bytes, %zu were sent; they differ from byte %zu\n",
		       p->name, len, p->len, k);
		rc = -1;
	}
	for (size_t i = 0; rc == 0 && i < p->npkt; i++) {
		const struct sent_pkt *k = &p->pkt[i];
		size_t l, e;
		enum e2e_fit fit = e2e_packet_fit(log, p->name, starts, idx, nlines, max_packet,
						  k->off, k->len, &l, &e);

		c->packets++;
		if (fit == E2E_FIT_ONE) {
			c->once++;
			continue;
		}
		if (!k->clean) {
			c->unclean++;
			continue;
		}
		if (fit == E2E_FIT_MARKED) {
			c->marked++;
			continue;
		}
		c->unexplained++;
		printf("FAIL %s: packet %zu (%zu bytes, sent %.6f) is not one RX line, and not marked "
		       "where the boundary rule puts the mark (lines %zu..%zu)\n", p->name, i, k->len,
		       (double)k->t / 1e9, l, e);
	}
	free(got);
	free(starts);
	free(idx);
	return rc;
}

static int step(const char *arg)
{
	struct timespec ts;
	int64_t t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + strtoll(arg, NULL, 10) * 1000;
	ts.tv_sec = t / 1000000000;
	ts.tv_nsec = t % 1000000000;
	if (clock_settime(CLOCK_REALTIME, &ts) < 0) {
		fprintf(stderr, "soak_check: clock_settime: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

static size_t count(const struct e2e_log *log, const char *what)
{
	size_t n = 0;

	for (size_t i = 0; i < log->n; i++)
		n += strstr(log->line[i].text, what) != NULL;
	return n;
}

int main(int argc, char **argv)
{
	struct e2e_log log = { 0 };
	struct counts c = { 0 };
	char why[1024];
	size_t max_packet;
	int i, acc, clk, rc = 0, bytes_rc = 0;
	unsigned nfiles = 0;

	if (argc == 3 && strcmp(argv[1], "step") == 0)
		return step(argv[2]);
	if (argc < 5 || strcmp(argv[1], "check") != 0) {
		fprintf(stderr, "usage: soak_check step USEC | soak_check check MAX_PACKET "
			"LOG... -- SENT...\n");
		return 2;
	}
	max_packet = (size_t)strtoull(argv[2], NULL, 10);
	for (i = 3; i < argc && strcmp(argv[i], "--") != 0; i++, nfiles++)
		if (e2e_read_log(&log, argv[i]) != 0) {
			perror(argv[i]);
			return 2;
		}
	for (i++; i < argc; i++)
		if (read_sent(argv[i]) != 0)
			return 2;
	acc = e2e_check_accounting(&log, why, sizeof(why));
	if (acc > 0) {
		printf("ok   accounting: every record a line or in a DROP count, at %d STAT lines over "
		       "%u files\n", acc, nfiles);
	} else {
		printf("FAIL accounting: %s\n", acc == 0 ? "no STAT line to check" : why);
		rc = 1;
	}
	clk = e2e_check_clock(&log, why, sizeof(why));
	if (clk >= 0) {
		printf("ok   EV clock: at start and after %d STAT rounds\n", clk);
	} else {
		printf("FAIL EV clock: %s\n", why);
		rc = 1;
	}
	for (unsigned k = 0; k < nports; k++)
		if (check_port(&log, &ports[k], max_packet, &c) != 0)
			bytes_rc = rc = 1;
	printf("%s packets: %zu sent on %u ports, %s; %zu exactly one "
	       "RX line, %zu with unclean timing at the simulator; wrong boundaries: %zu marked, %zu "
	       "unmarked\n",
	       c.unexplained == 0 && bytes_rc == 0 ? "ok  " : "FAIL", c.packets, nports,
	       bytes_rc == 0 ? "every byte logged once, in order" : "BYTES DIFFER", c.once, c.unclean,
	       c.marked, c.unexplained);
	if (c.unexplained > 0)
		rc = 1;
	printf("     events: %zu EV reopen, %zu EV close, %zu EV open, %zu EV write-recovered, %zu EV "
	       "clock-step, %zu EV clock, %zu EV late-delivery, %zu DROP lines, %zu EV seq-gap\n",
	       count(&log, " EV reopen "), count(&log, " EV close "), count(&log, " EV open "),
	       count(&log, " EV write-recovered "), count(&log, " EV clock-step "),
	       count(&log, " portlogd EV clock "), count(&log, " EV late-delivery "),
	       count(&log, " DROP "), count(&log, " EV seq-gap "));
	if (count(&log, " EV seq-gap ") > 0)
		rc = 1;
	e2e_free_log(&log);
	return rc;
}
