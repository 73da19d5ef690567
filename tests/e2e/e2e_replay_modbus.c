/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_replay_modbus.c - a Modbus master's requests, from a log, replayed to a real slave, which answers as it did.
 *
 * Recorded: mbpoll (Debian's Modbus master) polls a pymodbus slave through the
 * real daemon's pass pty, so the log has each request (TX) and its response
 * (RX). Replayed: portlogd --replay --dir tx plays the requests into a pty
 * (--pty) that a second daemon has as its device, whose pass pty a fresh
 * slave (the same registers at start) serves. The second log's RX lines are
 * the first's TX lines and its TX lines the first's RX lines, byte for byte,
 * line for line (where the second daemon merged two, its log says why): the
 * slave got every request at its place and gave the same answers; the replay
 * read those answers back (what came back is counted). Exits 77
 * (skipped) only when mbpoll, socat or pymodbus is missing (tests/deps.sh).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "testutil.h"

#define WAIT_MS 10000
#define POLLS 10
#define BAUD 19200              /* mbpoll's default */
#define GAP_NS 1823000          /* 3.5 characters at BAUD: the daemons' gap_us = auto */

static struct e2e_daemon live;

static int teardown(void **state)
{
	(void)state;
	e2e_kill(&live);
	e2e_reap_all();
	return 0;
}

static pid_t slave_on(const char *port, const char *out)
{
	const char *argv[] = { "/usr/bin/python3", PORTLOGD_SRC "/tests/e2e/modbus/slave.py", port, "19200",
			       NULL };
	pid_t pid = e2e_spawn(argv, out);

	for (int i = 0; i < WAIT_MS / 10 && !e2e_holds(pid, port); i++)
		tu_sleep_ms(10);
	if (!e2e_holds(pid, port))
		fail_msg("the pymodbus slave did not open %s (its output: %s)", port, out);
	return pid;
}

static void start(const char *dir, const char *conf, const char *text)
{
	e2e_write_file(conf, text);
	assert_int_equal(e2e_start(&live, dir, conf), 0);
	assert_int_equal(e2e_wait_ready(&live, WAIT_MS), 0);
}

static void stop(void)
{
	assert_int_equal(e2e_stop(&live, SIGTERM, WAIT_MS, NULL), 0);
	live.pid = 0;
}

/*
 * kind's lines of plc in a against kind2's in b: the same bytes in order, and
 * each line of a one line of b, or the second daemon's log says why not (a
 * mark, or its reader woke a gap late: the README's one blind spot, which a
 * sanitizer build's daemon on a busy machine meets). The bytes in *bytes.
 */
static void expect_same(const struct e2e_log *a, const char *kind, const struct e2e_log *b,
			const char *kind2, size_t *bytes)
{
	struct e2e_pair pr;
	size_t one = 0, why = 0;

	e2e_pair_logs(&pr, a, "plc", kind, b, "plc", kind2);
	if (!pr.same)
		fail_msg("the recorded %s lines hold %zu bytes, the replayed %s lines %zu (or they "
			 "differ)", kind, pr.la, kind2, pr.lb);
	for (size_t k = 0; k < pr.na; k++) {
		if (pr.fit[k] == E2E_FIT_ONE)
			one++;
		else if (e2e_pair_why(&pr, k, GAP_NS) != 0)
			why++;
		else
			fail_msg("%s %zu: recorded %s, not one replayed %s line, and no log says why",
				 kind, k, a->line[pr.ia[k]].text, kind2);
	}
	printf("# recorded %s against replayed %s: %zu lines, %zu one line each, %zu merged or cut "
	       "where the second log says why\n", kind, kind2, pr.na, one, why);
	assert_true(pr.na >= POLLS);
	*bytes = pr.la;
	e2e_pair_free(&pr);
}

static void requests_replayed_to_slave(void **state)
{
	char dir[256], conf[300], log1[300], log2[300], dev[300], modbus[300], app[300], rdev[300];
	char socat_a[400], socat_b[400], out[300], rerr[300], text[2048], want[64];
	const char *socat[] = { "socat", socat_a, socat_b, NULL };
	const char *rargv[] = { "portlogd", "--replay", "--priority", "80", "--dir", "tx", "--pty", rdev,
				log1, NULL };
	uint64_t rng = tu_seed("e2e_replay_modbus");
	struct e2e_log l1 = { 0 }, l2 = { 0 };
	size_t req_bytes, resp_bytes;
	pid_t sp, pp, rp;
	char *err;
	int rc;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(log1, sizeof(log1), "%s/recorded.log", dir);
	snprintf(log2, sizeof(log2), "%s/replayed.log", dir);
	snprintf(dev, sizeof(dev), "%s/dev", dir);
	snprintf(modbus, sizeof(modbus), "%s/modbus", dir);
	snprintf(app, sizeof(app), "%s/app", dir);
	snprintf(rdev, sizeof(rdev), "%s/rdev", dir);
	snprintf(rerr, sizeof(rerr), "%s/replay.err", dir);

	/* recorded: mbpoll -> pass -> the daemon's device -> socat -> the slave */
	snprintf(socat_a, sizeof(socat_a), "pty,link=%s,raw,echo=0", dev);
	snprintf(socat_b, sizeof(socat_b), "pty,link=%s,raw,echo=0", modbus);
	snprintf(out, sizeof(out), "%s/socat.out", dir);
	sp = e2e_spawn(socat, out);
	e2e_wait_path(dev, WAIT_MS);
	e2e_wait_path(modbus, WAIT_MS);
	snprintf(out, sizeof(out), "%s/slave1.out", dir);
	pp = slave_on(modbus, out);
	snprintf(text, sizeof(text), "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 0\n"
		 "[serial plc]\ndevice = %s\nbaud = %d\npass = %s\n", log1, dev, BAUD, app);
	start(dir, conf, text);
	e2e_wait_path(app, WAIT_MS);
	for (int k = 0; k < POLLS; k++) {
		unsigned ref = 1 + (unsigned)(tu_rand(&rng) % 90);
		char *o;

		/* reads, and every third poll a write that later reads see */
		if (k % 3 == 2)
			o = e2e_sh(&rc, "mbpoll -m rtu -b %d -P none -a 1 -t 4 -o 2 -r %u -1 %s -- %u %u 2>&1",
				   BAUD, ref, app, (unsigned)(tu_rand(&rng) % 30000), (unsigned)k);
		else
			o = e2e_sh(&rc, "mbpoll -m rtu -b %d -P none -a 1 -t 4 -o 2 -r %u -c %u -1 %s 2>&1",
				   BAUD, ref, 1 + (unsigned)(tu_rand(&rng) % 8), app);
		if (rc != 0)
			fail_msg("poll %d: mbpoll exited %d:\n%s", k, rc, o);
		free(o);
	}
	stop();
	e2e_reap(pp);
	e2e_reap(sp);

	/* replayed: the requests -> --pty rdev -> a second daemon's device -> pass -> a fresh slave */
	snprintf(app, sizeof(app), "%s/app2", dir);
	snprintf(text, sizeof(text), "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 0\n"
		 "[serial plc]\ndevice = %s\nbaud = %d\npass = %s\n", log2, rdev, BAUD, app);
	start(dir, conf, text);         /* rdev is not there yet: the daemon looks every 500 ms */
	e2e_wait_path(app, WAIT_MS);
	snprintf(out, sizeof(out), "%s/slave2.out", dir);
	pp = slave_on(app, out);
	rp = e2e_spawn(rargv, rerr);
	rc = e2e_wait_exit(rp, 60000);
	err = e2e_sh(&(int){ 0 }, "cat %s", rerr);
	if (rc != 0)
		fail_msg("the replay exited %d:\n%s", rc, err);
	stop();
	e2e_reap(pp);

	assert_int_equal(e2e_read_log(&l1, log1), 0);
	assert_int_equal(e2e_read_log(&l2, log2), 0);
	expect_same(&l1, "TX", &l2, "RX", &req_bytes);  /* the requests reached the slave */
	expect_same(&l1, "RX", &l2, "TX", &resp_bytes); /* it answered as it did */
	snprintf(want, sizeof(want), "; %zu bytes came back", resp_bytes);
	if (strstr(err, want) == NULL)
		fail_msg("the replay does not say '%s':\n%s", want, err);
	printf("# %d mbpoll polls recorded; their %zu request bytes replayed to a fresh slave, which "
	       "gave the %zu response bytes it gave then\n", POLLS, req_bytes, resp_bytes);
	e2e_print_from("the replay's own", err, "start error");
	free(err);
	e2e_free_log(&l1);
	e2e_free_log(&l2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(requests_replayed_to_slave, teardown),
	};
	static const char *const tools[] = {
		"command -v mbpoll", "command -v socat",
		"/usr/bin/python3 -c 'import pymodbus.server, serial_asyncio'",
	};

	signal(SIGPIPE, SIG_IGN);
	if (!e2e_have("e2e_replay_modbus", tools, sizeof(tools) / sizeof(tools[0])))
		return 77;
	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
