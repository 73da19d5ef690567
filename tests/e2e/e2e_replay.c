/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_replay.c - portlogd --replay: what it plays, what it says, and a round trip through a second daemon.
 *
 * Logs written by hand (dates past 2038, ISO and epoch, .gz, bad lines, a DROP,
 * a late delivery, a restart, a clock step) replayed at --speed 0 into files:
 * the bytes are the packets', in order, of the sources and direction asked;
 * what cannot be replayed is said with FILE:LINE and the exit status says it.
 * Then the round trip: the real daemon logs simulator traffic; the replay plays
 * that log into a pty (--pty) that a second daemon logs: every RX line of the
 * first log is one RX line of the second with the same bytes, or a reason is
 * known (said by the replay, marked in either log, or the second daemon's
 * stall, round_trip below). The intervals between first bytes are printed
 * (p50, p99, max), not judged: tests/bench/bench_replay.c measures them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "sim/sim.h"
#include "testutil.h"

#define WAIT_MS 10000
#define PACKETS 150
#define BAUD 19200
#define GAP_NS 1823000          /* 3.5 characters at BAUD: both daemons' gap_us = auto */

static struct e2e_daemon live, second;

static int teardown(void **state)
{
	(void)state;
	e2e_kill(&live);
	e2e_kill(&second);
	e2e_reap_all();
	return 0;
}

/* Runs portlogd --replay with args (NULL-terminated) and LOG; its exit code, stderr in err. */
static int replay(char *err, size_t errlen, const char *a0, ...)
{
	const char *argv[32] = { "portlogd", "--replay" };
	size_t n = 2;
	va_list ap;

	va_start(ap, a0);
	for (const char *a = a0; a != NULL && n < 31; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	return e2e_run(argv, err, errlen);
}

/* The file's bytes (malloc'd), its length in *len. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(65536);

	assert_non_null(f);
	*len = fread(buf, 1, 65535, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static void expect_bytes(const char *path, const void *want, size_t n)
{
	size_t len;
	char *got = slurp(path, &len);

	if (len != n || memcmp(got, want, n) != 0)
		fail_msg("%s holds %zu bytes, not the %zu expected", path, len, n);
	free(got);
}

static void expect_said(const char *err, const char *needle)
{
	if (strstr(err, needle) == NULL) {
		fprintf(stderr, "%s", err);     /* whole: fail_msg cuts it */
		fail_msg("not said: '%s' (its stderr above)", needle);
	}
}

/* An empty file at dir/name (--to writes only to what exists). */
static const char *out_file(const char *dir, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", dir, name);
	e2e_write_file(buf, "");
	return buf;
}

static const char good[] =
	"2040-02-29T23:59:59.000000000Z portlogd EV start version=0.1.0 pid=1 config=/x serial=2 parallel=0\n"
	"2040-02-29T23:59:59.100000000Z plc EV open device=/dev/pts/0 driver=termios note=pty baud=9600 format=8N1 gap_us=4010\n"
	"2040-02-29T23:59:59.200000000Z gps EV open device=/dev/pts/1 driver=termios note=pty baud=4800 format=7E2 gap_us=8000\n"
	"2040-02-29T23:59:59.500000000Z plc RX 3 010203 \"\\x01\\x02\\x03\"\n"
	"2040-02-29T23:59:59.600000000Z plc TX 2 4142 \"AB\"\n"
	"2040-02-29T23:59:59.700000000Z gps RX 4 24475041 \"$GPA\"\n"
	"2040-03-01T00:00:00.000000000Z plc RX 5 68656c6c6f \"hello\"\n";

/*
 * The bytes of the packets asked for, at --speed 0 into files: one source,
 * two side by side, TX, a window, a .gz, epoch times; dates past 2038. A
 * replay at --speed 5 takes at least a fifth of the log's span (a deadline is
 * never early; how late is the benchmark's).
 */
static void packets_to_files(void **state)
{
	char dir[256], log[300], gz[300], ep[300], a[300], b[300], err[8192];
	int64_t t0;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(log, sizeof(log), "%s/good.log", dir);
	snprintf(gz, sizeof(gz), "%s/good.log.1.gz", dir);
	snprintf(ep, sizeof(ep), "%s/epoch.log", dir);
	e2e_write_file(log, good);
	out_file(dir, "a", a, sizeof(a));
	out_file(dir, "b", b, sizeof(b));

	/* two sources with packets: which one must be said */
	assert_int_equal(replay(err, sizeof(err), "--speed", "0", "--to", a, log, NULL), 2);
	expect_said(err, "the log has RX lines of plc gps: choose with --source NAME");

	assert_int_equal(replay(err, sizeof(err), "--source", "plc", "--to", a, "--speed", "0", log,
				NULL), 0);
	expect_bytes(a, "\x01\x02\x03hello", 8);
	expect_said(err, "replay: plc RX to ");
	expect_said(err, ": 2 of 2 packets, 8 bytes");

	assert_int_equal(replay(err, sizeof(err), "--source", "plc", "--to", a, "--dir", "tx",
				"--speed", "0", log, NULL), 0);
	expect_bytes(a, "AB", 2);

	assert_int_equal(replay(err, sizeof(err), "--source", "gps", "--to", a, "--source", "plc",
				"--to", b, "--speed", "0", log, NULL), 0);
	expect_bytes(a, "$GPA", 4);
	expect_bytes(b, "\x01\x02\x03hello", 8);

	assert_int_equal(replay(err, sizeof(err), "--source", "plc", "--to", a, "--speed", "0",
				"--since", "2040-03-01", log, NULL), 0);
	expect_bytes(a, "hello", 5);
	assert_int_equal(replay(err, sizeof(err), "--source", "plc", "--to", a, "--speed", "0",
				"--until", "2040-02-29T23:59:59.6", log, NULL), 0);
	expect_bytes(a, "\x01\x02\x03", 3);

	free(e2e_sh(&(int){ 0 }, "gzip -c %s > %s", log, gz));
	assert_int_equal(replay(err, sizeof(err), "--source", "plc", "--to", a, "--speed", "0", gz,
				NULL), 0);
	expect_bytes(a, "\x01\x02\x03hello", 8);

	/* epoch seconds of 2040-12-24 (past 2038 as well) */
	e2e_write_file(ep, "2240000000.000000000 x EV open device=/dev/ttyS0 driver=libserialport "
			   "baud=115200 format=8N1 gap_us=304 low_latency=on\n"
			   "2240000000.500000000 x RX 1 31 \"1\"\n"
			   "2240000001.000000000 x RX 1 32 \"2\"\n");
	t0 = tu_mono_ns();
	assert_int_equal(replay(err, sizeof(err), "--to", a, "--speed", "5", ep, NULL), 0);
	/* 0.5 s of log at 5 times the speed: not before 100 ms */
	assert_true(tu_mono_ns() - t0 >= 100000000);
	expect_bytes(a, "12", 2);
	expect_said(err, "x RX to ");
	expect_said(err, "start error p50=");
}

/*
 * What cannot be replayed is said (FILE:LINE, what, why) and counted; the
 * exit status is 1 for a skipped line, a DROP and a gap, 2 for what stops it.
 */
static void what_is_said(void **state)
{
	static const char bad[] =
		"2040-02-29T23:59:59.000000000Z portlogd EV start version=0.1.0 pid=1 config=/x serial=1 parallel=0\n"
		"2040-02-29T23:59:59.100000000Z plc EV open device=/dev/pts/0 driver=termios note=pty baud=9600 format=8N1 gap_us=4010\n"
		"2040-02-29T23:59:59.500000000Z plc RX 3 010203 \"\\x01\\x02\\x03\"\n"
		"this is not a line of ours\n"
		"2040-02-29T23:59:59.600000000Z plc DROP 2 17\n"
		"2040-02-29T23:59:59.600000000Z plc DROP 1 4 dir=tx\n"
		"2040-02-29T23:59:59.700000000Z plc EV late-delivery wait_us=5000 bytes=2 case=late-wake joined=no\n"
		"2040-02-29T23:59:59.700000000Z plc RX 2 0a0b \"\\n\\x0b\"\n"
		"2040-02-29T23:59:59.800000000Z plc EV close reason=stop\n"
		"2040-02-29T23:59:59.900000000Z portlogd EV stop reason=SIGTERM\n"
		"2040-03-01T00:00:01.000000000Z portlogd EV start version=0.1.0 pid=2 config=/x serial=1 parallel=0\n"
		"2040-03-01T00:00:01.100000000Z plc EV open device=/dev/pts/0 driver=termios note=pty baud=9600 format=8N1 gap_us=4010\n"
		"2040-03-01T00:00:01.200000000Z portlogd EV clock-step delta_us=+3000000\n"
		"2040-03-01T00:00:04.300000000Z plc RX 1 7a \"z\"\n"
		"2040-03-01T00:00:04.400000000Z plc EV close reason=hangup\n"
		"2040-03-01T00:00:06.400000000Z plc EV open device=/dev/pts/0 driver=termios note=pty baud=19200 format=8N1 gap_us=2000\n"
		"2040-03-01T00:00:06.500000000Z plc RX 1 79 \"y\"\n"
		"2040-03-01T00:00:06.450000000Z plc RX 1 78 \"x\"\n";
	char dir[256], log[300], a[300], err[8192];

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(log, sizeof(log), "%s/bad.log", dir);
	e2e_write_file(log, bad);
	out_file(dir, "a", a, sizeof(a));

	assert_int_equal(replay(err, sizeof(err), "--to", a, "--speed", "0", log, NULL), 1);
	expect_bytes(a, "\x01\x02\x03\n\x0bzyx", 8);
	expect_said(err, "bad.log:4: TIME 'this' is not ISO 8601");
	expect_said(err, "1 of 18 lines could not be parsed and were skipped");
	expect_said(err, "bad.log:5: plc DROP at 2040-02-29T23:59:59.600000000Z: the daemon lost 2 "
		    "packets (17 bytes) there; their bytes are unknown and not replayed");
	assert_null(strstr(err, "bad.log:6:"));         /* the TX ring's: not RX */
	expect_said(err, "bad.log:7: plc EV late-delivery at 2040-02-29T23:59:59.700000000Z: the log "
		    "doubts the boundary");
	expect_said(err, "bad.log:11: portlogd EV start at 2040-03-01T00:00:01.000000000Z: the daemon "
		    "did not log from 2040-02-29T23:59:59.900000000Z (its EV stop at ");
	/* the port's close at the stop is in the daemon's gap: not said twice */
	assert_null(strstr(err, "bad.log:12:"));
	expect_said(err, "bad.log:13: portlogd EV clock-step delta_us=+3000000: the log's times jump");
	expect_said(err, "bad.log:16: plc EV open at 2040-03-01T00:00:03.400000000Z: the port was "
		    "closed from 2040-03-01T00:00:01.400000000Z (");
	expect_said(err, "bad.log:17: plc RX at 2040-03-01T00:00:03.500000000Z: an EV open before it "
		    "changed the baud from 9600 to 19200");
	expect_said(err, "bad.log:18: plc RX at 2040-03-01T00:00:03.450000000Z is older than the packet "
		    "before it (2040-03-01T00:00:03.500000000Z)");
	expect_said(err, "not as logged (each said above): drops=1 (2 packets, 17 bytes) gaps=2 "
		    "late_delivery=1 clock_steps=1 backwards=1 baud_changes=1 held=0");

	/* in time: x, played right after y, is held back until the gap that ended y in the
	 * log (gap_us of its EV open) has passed (at --speed 0 there is no time to keep) */
	assert_int_equal(replay(err, sizeof(err), "--to", a, "--speed", "100", log, NULL), 1);
	expect_bytes(a, "\x01\x02\x03\n\x0bzyx", 8);
	expect_said(err, "bad.log:18: plc RX at 2040-03-01T00:00:03.500000000Z: its time leaves -520 us "
		    "of silence after the packet before it (at the logged baud), less than the gap of "
		    "2000 us that ended that packet: held back 2520 us");
	expect_said(err, "baud_changes=1 held=1");

	/* the TX ring's DROP is said for --dir tx (which has no packets here: exit 2) */
	assert_int_equal(replay(err, sizeof(err), "--to", a, "--dir", "tx", log, NULL), 2);
	expect_said(err, "the log has no TX lines in the window");

	/* bad command lines and outputs: exit 2, what to do */
	assert_int_equal(replay(err, sizeof(err), "--to", a, "--speed", "-1", log, NULL), 2);
	expect_said(err, "--speed -1: give a number from 0 to 1000000");
	assert_int_equal(replay(err, sizeof(err), "--to", a, "--dir", "up", log, NULL), 2);
	expect_said(err, "--dir up: give rx (from the device) or tx (to the device)");
	assert_int_equal(replay(err, sizeof(err), log, NULL), 2);
	expect_said(err, "give one output (--to PATH or --pty LINK) for each --source");
	assert_int_equal(replay(err, sizeof(err), "--source", "gps", "--to", a, log, NULL), 2);
	expect_said(err, "--source gps: not in the log");
	assert_int_equal(replay(err, sizeof(err), "--source", "plc", "--to", a, "--until", "2040-01-01",
				log, NULL), 2);
	expect_said(err, "--source plc: no RX lines in the window");
	assert_int_equal(replay(err, sizeof(err), "--to", "/nonexistent/x", log, NULL), 2);
	expect_said(err, "--to /nonexistent/x: cannot open: No such file or directory");
	assert_int_equal(replay(err, sizeof(err), "--to", a, "/nonexistent/x.log", NULL), 2);
	expect_said(err, "/nonexistent/x.log: cannot read");
	assert_int_equal(replay(err, sizeof(err), "--to", a, "--since", "soon", log, NULL), 2);
	expect_said(err, "--since soon: not a time");
}

/*
 * --to an existing pty (as a port: opened with the termios driver, locked, set
 * to the logged baud): the bytes come out of its master, paced (a pty paces
 * nothing itself), the replay starts at once (no application to wait for).
 */
static void to_existing_pty(void **state)
{
	char dir[256], log[300], slave[64], err[8192];
	uint8_t got[64];
	ssize_t n, have = 0;
	int64_t t0;
	int master;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(log, sizeof(log), "%s/good.log", dir);
	e2e_write_file(log, good);
	master = e2e_open_pty(slave, sizeof(slave));
	assert_true(master >= 0);
	t0 = tu_mono_ns();
	assert_int_equal(replay(err, sizeof(err), "--source", "plc", "--to", slave, log, NULL), 0);
	/* 0.5 s from the first packet to the last, and 5 characters at 9600 baud after it
	 * (reasm_char_ns: 1e10 / 9600 rounded up) */
	assert_true(tu_mono_ns() - t0 >= 500000000 + 5 * 1041667);
	assert_int_equal(fcntl(master, F_SETFL, O_NONBLOCK), 0);
	while (have < (ssize_t)sizeof(got) && (n = read(master, got + have, sizeof(got) - (size_t)have)) > 0)
		have += n;
	assert_int_equal(have, 8);
	assert_memory_equal(got, "\x01\x02\x03hello", 8);
	expect_said(err, "start error p50=");
	close(master);
}

/* ---- the round trip ---- */

/* Did the replay say something of the packet of the log's line (1-based): that
 * it started late, had a pause inside, or was held back for the log's gap? */
static bool said_of(const char *err, const char *logname, size_t line)
{
	char needle[400];

	snprintf(needle, sizeof(needle), "%s:%zu: a RX at ", logname, line);
	for (const char *p = strstr(err, needle); p != NULL; p = strstr(p + 1, needle)) {
		const char *eol = strchr(p, '\n'), *l = strstr(p, ": late on "), *h = strstr(p, ": held back ");

		if ((l != NULL && l < eol) || (h != NULL && h < eol))
			return true;
	}
	return false;
}

/*
 * Simulator traffic logged by the real daemon (port a), replayed into --pty
 * LINK which a second daemon logs (port b): the same bytes in order; each RX
 * line of a is one RX line of b, unless the replay said why not (the packet, or
 * one next to it, started late, had a pause inside, or was held back because
 * the log's times leave less silence than its gap), or b marked a doubtful
 * boundary there (EV late-delivery), or a did (then the gap replayed is the one
 * a doubted), or b dated the line a gap or more after the replay wrote it (its
 * own reader woke that late: the one blind spot its README names). Each kind is
 * counted; the error of the intervals between first bytes is printed.
 */
static void round_trip(void **state)
{
	char dir[256], link[300], conf[300], log1[300], log2[300], pty[300], errp[300], text[1024];
	struct sim_cfg cfg = {
		.kind = SIM_BINARY, .packets = PACKETS, .min_len = 1, .max_len = 24, .max_frags = 3,
		.intra_gap_max_us = 100, .inter_gap_min_us = 6000, .inter_gap_max_us = 20000,
		.gap_us = 1823, .baud = BAUD, .seed = tu_seed("e2e_replay round trip"),
	};
	const char *argv[] = { "portlogd", "--replay", "--priority", "90", "--pty", pty, log1, NULL };
	struct sim_port port;
	struct e2e_log l1 = { 0 }, l2 = { 0 };
	size_t exact = 0, said = 0, marked = 0, doubted = 0, stalled = 0;
	struct e2e_pair pr;
	char *err;
	pid_t rp;
	int rc;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(link, sizeof(link), "%s/sim", dir);
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(log1, sizeof(log1), "%s/a.log", dir);
	snprintf(log2, sizeof(log2), "%s/b.log", dir);
	snprintf(pty, sizeof(pty), "%s/replayed", dir);
	snprintf(errp, sizeof(errp), "%s/replay.err", dir);
	assert_int_equal(sim_port_open(&port, "a", link), 0);
	snprintf(text, sizeof(text), "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 0\n"
		 "[serial a]\ndevice = %s\nbaud = %d\n", log1, link, BAUD);
	e2e_write_file(conf, text);
	assert_int_equal(e2e_start(&live, dir, conf), 0);
	assert_int_equal(e2e_wait_ready(&live, WAIT_MS), 0);
	assert_int_equal(sim_port_wait_open(&port, WAIT_MS), 0);
	assert_int_equal(sim_run_all(&port, 1, &cfg, 0), 0);
	tu_sleep_ms(100);
	assert_int_equal(e2e_stop(&live, SIGTERM, WAIT_MS, NULL), 0);
	live.pid = 0;
	sim_port_close(&port);

	/* the replay waits for an application: the second daemon */
	rp = e2e_spawn(argv, errp);
	e2e_wait_path(pty, WAIT_MS);
	snprintf(conf, sizeof(conf), "%s/second.conf", dir);
	snprintf(text, sizeof(text), "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 0\n"
		 "[serial b]\ndevice = %s\nbaud = %d\n", log2, pty, BAUD);
	e2e_write_file(conf, text);
	assert_int_equal(e2e_start(&second, dir, conf), 0);
	assert_int_equal(e2e_wait_ready(&second, WAIT_MS), 0);
	rc = e2e_wait_exit(rp, 60000);
	err = e2e_sh(&(int){ 0 }, "cat %s", errp);
	if (rc != 0)
		fail_msg("the replay exited %d:\n%s", rc, err);
	assert_int_equal(e2e_stop(&second, SIGTERM, WAIT_MS, NULL), 0);
	second.pid = 0;

	assert_int_equal(e2e_read_log(&l1, log1), 0);
	assert_int_equal(e2e_read_log(&l2, log2), 0);
	e2e_pair_logs(&pr, &l1, "a", "RX", &l2, "b", "RX");
	if (!pr.same)
		fail_msg("the second log holds %zu bytes, the first %zu (or they differ)", pr.lb, pr.la);
	{
		char want[64];

		snprintf(want, sizeof(want), ": %zu of %zu packets, %zu bytes", pr.na, pr.na, pr.la);
		expect_said(err, want);
	}
	for (size_t k = 0; k < pr.na; k++) {
		size_t line = pr.ia[k] + 1;
		char why;

		if (pr.fit[k] == E2E_FIT_ONE)
			exact++;
		else if (said_of(err, "a.log", line) || (k > 0 && said_of(err, "a.log", pr.ia[k - 1] + 1))
			 || (k + 1 < pr.na && said_of(err, "a.log", pr.ia[k + 1] + 1)))
			said++;
		else if ((why = e2e_pair_why(&pr, k, GAP_NS)) != 0)
			*(why == 'm' ? &marked : why == 'a' ? &doubted : &stalled) += 1;
		else
			fail_msg("packet %zu (a.log:%zu: %s) is not one line of the second log (line %zu "
				 "holds its first byte), and nothing said why:\n%s", k, line,
				 l1.line[pr.ia[k]].text, pr.ib[pr.line_b[k]] + 1, err);
	}
	printf("# round trip: %zu packets; %zu one line each; of the others %zu said by the replay "
	       "(late, or held for the log's gap), %zu marked by the second daemon, %zu at a boundary "
	       "the first daemon doubted, %zu where the second daemon's reader woke a gap late\n",
	       pr.na, exact, said, marked, doubted, stalled);
	if (pr.nerr > 0)
		printf("# interval between first bytes, second log against first: |error| p50 %" PRId64
		       " us, p99 %" PRId64 " us, max %" PRId64 " us over %zu intervals\n",
		       e2e_pct(pr.err, pr.nerr, 50) / 1000, e2e_pct(pr.err, pr.nerr, 99) / 1000,
		       e2e_pct(pr.err, pr.nerr, 100) / 1000, pr.nerr);
	e2e_print_from("the replay's own", err, "start error");
	e2e_print_from("the replay", err, "not as logged");
	e2e_pair_free(&pr);
	free(err);
	e2e_free_log(&l1);
	e2e_free_log(&l2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(packets_to_files, teardown),
		cmocka_unit_test_teardown(what_is_said, teardown),
		cmocka_unit_test_teardown(to_existing_pty, teardown),
		cmocka_unit_test_teardown(round_trip, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
