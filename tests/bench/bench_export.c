/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_export.c - how fast portlogd --export and --replay read a log, beside gzip -dc of it (prints, never judges).
 *
 *   build/tests/bench_export [MB] [DIR]
 *
 * Writes a log of about MB megabytes (200) into DIR ($TMPDIR or /tmp) with the
 * daemon's own formatter: Modbus RTU packets of two ports (both payload
 * fields), NMEA sentences, IN lines of a parallel port, now and then an EV and
 * STAT line; compresses a copy with gzip. Then, best of 3 runs each, prints MB
 * of log per second for gzip -dc of the .gz, --export pcapng and vcd of the
 * plain log, --export pcapng of the .gz, and --replay --speed 0 of one port
 * (plc1: its packets loaded, then written one by one) of both, all to /dev/null.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"
#include "testutil.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void make_log(const char *path, double mb)
{
	FILE *f = fopen(path, "w");
	static char line[8192];
	uint64_t rng = 42, written = 0, tick = 0;
	int64_t t = 1795310285000000000LL;
	unsigned pins = 0x80;
	struct fmt fm;

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	fmt_init(&fm, CONF_TS_ISO, CONF_PAYLOAD_BOTH);
	{
		/* the ports' opens, as a log starts */
		static const struct { const char *src, *text; } opens[] = {
			{ "lpt0", "driver=ieee1284 device=parport0 read=status mask=0xf8" },
			{ "plc1", "device=/dev/ttyS0 driver=libserialport baud=19200 format=8E1 gap_us=2005" },
			{ "plc2", "device=/dev/ttyS1 driver=libserialport baud=19200 format=8E1 gap_us=2005" },
			{ "gps", "device=/dev/ttyUSB0 driver=libserialport baud=9600 format=8N1 gap_us=4010" },
		};

		for (size_t i = 0; i < sizeof(opens) / sizeof(opens[0]); i++) {
			struct rec ev = { .kind = REC_EV, .t_real = t, .a = EV_OPEN };
			size_t n = fmt_record(&fm, line, opens[i].src, &ev, opens[i].text,
					      strlen(opens[i].text), 8);

			written += fwrite(line, 1, n, f);
		}
	}
	while ((double)written < mb * 1e6) {
		unsigned r = (unsigned)(tu_rand(&rng) % 100);
		uint8_t data[96];
		size_t n, len;
		struct rec rec = { .t_real = 0 };

		t += 1000000 + (int64_t)(tu_rand(&rng) % 5000000);
		rec.t_real = t;
		if (r < 70) {
			len = 8 + tu_rand(&rng) % 24;
			for (size_t i = 0; i < len; i++)
				data[i] = (uint8_t)tu_rand(&rng);
			rec.kind = REC_RX;
			n = fmt_record(&fm, line, r % 2 ? "plc1" : "plc2", &rec, data, len, 8);
		} else if (r < 82) {
			len = (size_t)snprintf((char *)data, sizeof(data),
					       "$GPGGA,%06u.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M*47\r\n",
					       (unsigned)(t / 1000000000 % 1000000));
			rec.kind = REC_RX;
			n = fmt_record(&fm, line, "gps", &rec, data, len, 8);
		} else if (r < 97) {
			unsigned v = pins ^ (1u << (tu_rand(&rng) % 5 + 3));

			tick += 1 + tu_rand(&rng) % 50;
			rec.kind = REC_IN;
			rec.a = v;
			rec.b = v ^ pins;
			rec.c = (int64_t)tick;
			n = fmt_record(&fm, line, "lpt0", &rec, NULL, 0, 8);
			pins = v;
		} else if (r < 99) {
			static const char ev[] = "wait_us=5123 bytes=12";

			rec.kind = REC_EV;
			rec.a = EV_LATE;
			rec.b = 0;
			n = fmt_record(&fm, line, "plc1", &rec, ev, sizeof(ev) - 1, 8);
		} else {
			static const char st[] = "plc1 records=123456 bytes=2345678 drops=0 "
				"drop_bytes=0 wakeups=123456 frame=0 parity=0 overrun=0 brk=0 buf_overrun=0";

			rec.kind = REC_STAT;
			n = fmt_record(&fm, line, "portlogd", &rec, st, sizeof(st) - 1, 8);
		}
		if (fwrite(line, 1, n, f) != n) {
			perror(path);
			exit(1);
		}
		written += n;
	}
	if (fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* Best of 3 wall-clock runs of a shell command. */
static double best(const char *cmd)
{
	double b = 1e30;

	for (int i = 0; i < 3; i++) {
		double t0 = now_s();

		if (system(cmd) != 0) {
			fprintf(stderr, "bench_export: failed: %s\n", cmd);
			exit(1);
		}
		if (now_s() - t0 < b)
			b = now_s() - t0;
	}
	return b;
}

int main(int argc, char **argv)
{
	double mb = argc > 1 ? atof(argv[1]) : 200;
	const char *base = argc > 2 ? argv[2] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char dir[512], logp[600], gz[620], cmd[2048];
	static const struct { const char *what, *args; bool gz; } runs[] = {
		{ "gzip -dc LOG.gz", NULL, true },
		{ "--export pcapng LOG", "--export pcapng -o /dev/null", false },
		{ "--export vcd LOG", "--export vcd -o /dev/null", false },
		{ "--export pcapng LOG.gz", "--export pcapng -o /dev/null", true },
		{ "--replay --speed 0 LOG", "--replay --speed 0 --source plc1 --to /dev/null", false },
		{ "--replay --speed 0 LOG.gz", "--replay --speed 0 --source plc1 --to /dev/null", true },
	};
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/portlogd-bench-export-XXXXXX", base);
	if (mb <= 0 || mkdtemp(dir) == NULL) {
		fprintf(stderr, "usage: bench_export [MB] [DIR]\n");
		return 1;
	}
	snprintf(logp, sizeof(logp), "%s/portlogd.log", dir);
	snprintf(gz, sizeof(gz), "%s.gz", logp);
	make_log(logp, mb);
	snprintf(cmd, sizeof(cmd), "gzip -c %s > %s", logp, gz);
	if (system(cmd) != 0 || stat(logp, &st) < 0)
		return 1;
	printf("log: %.1f MB (%s), gzip'd %s\n", (double)st.st_size / 1e6, logp, gz);
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		double s;

		if (runs[i].args == NULL)
			snprintf(cmd, sizeof(cmd), "gzip -dc %s >/dev/null", gz);
		else
			snprintf(cmd, sizeof(cmd), "%s %s %s 2>/dev/null", PORTLOGD_BIN, runs[i].args,
				 runs[i].gz ? gz : logp);
		s = best(cmd);
		printf("%-26s %7.3f s  %8.1f MB of log/s\n", runs[i].what, s, (double)st.st_size / 1e6 / s);
	}
	unlink(gz);
	unlink(logp);
	rmdir(dir);
	return 0;
}
