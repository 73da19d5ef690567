/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_replay.c - how close to the logged timeline portlogd --replay plays, beside cyclictest (prints, never judges).
 *
 *   build/tests/bench_replay [PACKETS] [BAUD]
 *
 * Writes a log of PACKETS (2000) packets of 1 to 32 bytes of one port at BAUD
 * (115200, 8N1), each 2 to 10 ms after the one before has ended on the line,
 * with the daemon's own formatter. Replays it with
 * --priority 90 into --pty LINK, which the real daemon (its default real-time
 * priorities) logs, while cyclictest -m -p 90 -i 1000 runs for as long. Then
 * prints, as p50 / p99 / max: the start error the replay reports (how late
 * each packet's first byte was written), the error of the intervals between
 * first bytes in the second daemon's log against the first log (and how many
 * packets are one line there), and cyclictest's wake-up latency of the same
 * minutes. Needs root (real-time priorities) and cyclictest (rt-tests).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "fmt.h"
#include "testutil.h"

#define T0 2240000000000000000LL        /* 2040-12-24: past 2038 too */

static void make_log(const char *path, unsigned packets, unsigned baud, int64_t *span)
{
	FILE *f = fopen(path, "w");
	static char line[4096];
	char open[160];
	uint64_t rng = 24;
	int64_t t = T0;
	struct fmt fm;
	struct rec ev = { .kind = REC_EV, .t_real = t, .a = EV_OPEN };

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	fmt_init(&fm, CONF_TS_ISO, CONF_PAYLOAD_BOTH);
	snprintf(open, sizeof(open), "device=/dev/ttyS0 driver=libserialport baud=%u format=8N1 "
		 "gap_us=auto low_latency=on", baud);
	fwrite(line, 1, fmt_record(&fm, line, "a", &ev, open, strlen(open), 8), f);
	for (unsigned i = 0, len = 0; i < packets; i++) {
		uint8_t data[32];
		struct rec rx = { .kind = REC_RX };

		/* after the packet before has ended on the line: 2 to 10 ms of silence */
		t += (int64_t)len * 10 * 1000000000 / baud + 2000000 + (int64_t)(tu_rand(&rng) % 8000000);
		len = 1 + (unsigned)(tu_rand(&rng) % 32);
		rx.t_real = t;
		for (size_t k = 0; k < len; k++)
			data[k] = (uint8_t)tu_rand(&rng);
		fwrite(line, 1, fmt_record(&fm, line, "a", &rx, data, len, 8), f);
	}
	if (fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	*span = t - T0;
}

/* p50, p99 and max of cyclictest's histogram (-h: "US COUNT" lines), in us. */
static void cyclictest_pct(const char *out, long long *p50, long long *p99, long long *max)
{
	static unsigned long long hist[100001];
	unsigned long long total = 0, sum = 0, over = 0;
	const char *p;

	memset(hist, 0, sizeof(hist));
	for (const char *l = out; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		unsigned us;
		unsigned long long n;

		if (sscanf(l, "%u %llu", &us, &n) == 2 && us < 100001) {
			hist[us] += n;
			total += n;
		}
	}
	p = strstr(out, "# Histogram Overflows:");
	if (p != NULL)
		over = strtoull(p + 22, NULL, 10);
	total += over;
	*p50 = *p99 = -1;
	for (unsigned us = 0; us < 100001 && total > 0; us++) {
		sum += hist[us];
		if (*p50 < 0 && sum * 2 >= total)
			*p50 = us;
		if (*p99 < 0 && sum * 100 >= total * 99)
			*p99 = us;
	}
	p = strstr(out, "# Max Latencies:");
	*max = p != NULL ? strtoll(p + 16, NULL, 10) : -1;
}

int main(int argc, char **argv)
{
	unsigned packets = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
	unsigned baud = argc > 2 ? (unsigned)atoi(argv[2]) : 115200;
	char dir[256], log1[300], log2[300], link[300], conf[300], rerr[300], cerr[300], text[1024];
	char secs[32];
	const char *rargv[] = { "portlogd", "--replay", "--priority", "90", "--pty", link, log1, NULL };
	const char *cargv[] = { "cyclictest", "-m", "-q", "-p", "90", "-i", "1000", "-h", "100000",
				"-D", secs, NULL };
	struct e2e_daemon d;
	struct e2e_log l1 = { 0 }, l2 = { 0 };
	struct e2e_pair pr;
	long long c50, c99, cmax;
	int64_t span;
	char *rout, *cout;
	pid_t rp, cp;
	int rc;

	if (packets < 2 || baud < 300) {
		fprintf(stderr, "usage: bench_replay [PACKETS] [BAUD]\n");
		return 1;
	}
	free(e2e_sh(&rc, "command -v cyclictest >/dev/null"));
	if (rc != 0 || geteuid() != 0) {
		fprintf(stderr, "bench_replay: needs root and cyclictest (Debian's rt-tests)\n");
		return 1;
	}
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(log1, sizeof(log1), "%s/logged.log", dir);
	snprintf(log2, sizeof(log2), "%s/replayed.log", dir);
	snprintf(link, sizeof(link), "%s/replayed", dir);
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(rerr, sizeof(rerr), "%s/replay.err", dir);
	snprintf(cerr, sizeof(cerr), "%s/cyclictest.out", dir);
	make_log(log1, packets, baud, &span);
	snprintf(secs, sizeof(secs), "%llds", (long long)(span / 1000000000 + 2));

	rp = e2e_spawn(rargv, rerr);
	e2e_wait_path(link, 10000);
	snprintf(text, sizeof(text), "[logger]\nlog_file = %s\nstat_interval_s = 0\n"
		 "[serial a]\ndevice = %s\nbaud = %u\n", log2, link, baud);
	e2e_write_file(conf, text);
	cp = e2e_spawn(cargv, cerr);
	if (e2e_start(&d, dir, conf) < 0 || e2e_wait_ready(&d, 10000) < 0) {
		fprintf(stderr, "bench_replay: the daemon did not start (%s)\n", d.err_path);
		return 1;
	}
	rc = e2e_wait_exit(rp, (int)(span / 1000000) + 60000);
	e2e_stop(&d, SIGTERM, 10000, NULL);
	if (e2e_wait_exit(cp, 30000) != 0)
		fprintf(stderr, "bench_replay: cyclictest did not end well (%s)\n", cerr);
	rout = e2e_sh(&(int){ 0 }, "cat %s", rerr);
	cout = e2e_sh(&(int){ 0 }, "cat %s", cerr);
	if (rc != 0) {
		fprintf(stderr, "bench_replay: the replay exited %d:\n%s", rc, rout);
		return 1;
	}

	/* the second log's first bytes against the first's: each packet that is one line */
	e2e_read_log(&l1, log1);
	e2e_read_log(&l2, log2);
	e2e_pair_logs(&pr, &l1, "a", "RX", &l2, "a", "RX");
	cyclictest_pct(cout, &c50, &c99, &cmax);
	printf("bench_replay: %zu packets of 1-32 bytes over %.1f s at %u baud; portlogd --replay "
	       "--priority 90 --pty into the daemon; cyclictest -m -p 90 -i 1000 beside it\n", pr.na,
	       (double)span / 1e9, baud);
	{
		const char *p = strstr(rout, "start error ");

		printf("  the replay's start error (its report):  %.*s\n",
		       p ? (int)strcspn(p + 12, "\n") : 0, p ? p + 12 : "(none)");
	}
	if (pr.nerr > 0)
		printf("  second daemon, interval error:          p50=%" PRId64 "us p99=%" PRId64 "us "
		       "max=%" PRId64 "us over %zu intervals (%zu of %zu packets one line; bytes %s)\n",
		       e2e_pct(pr.err, pr.nerr, 50) / 1000, e2e_pct(pr.err, pr.nerr, 99) / 1000,
		       e2e_pct(pr.err, pr.nerr, 100) / 1000, pr.nerr, pr.one, pr.na,
		       pr.same ? "all equal" : "DIFFER");
	printf("  cyclictest wake-up latency:             p50=%lldus p99=%lldus max=%lldus\n", c50,
	       c99, cmax);
	e2e_pair_free(&pr);
	free(rout);
	free(cout);
	e2e_free_log(&l1);
	e2e_free_log(&l2);
	return 0;
}
