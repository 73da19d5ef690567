/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_log.c - the journal thread's queue: full, dropped and said, drained, a stop that does not hang. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "testutil.h"

/*
 * The sink is stderr: fd 2 becomes a pipe of one page, which the test fills
 * itself, so that the journal thread's next write blocks as a send to a
 * journald that does not read would. While fd 2 is the pipe nothing is
 * asserted (a failure's message would go there too): what is seen is kept and
 * asserted once fd 2 is the real stderr again.
 */
#define PIPE_BYTES 4096
#define WAIT_MS 10000

static int rd = -1, wr = -1, saved = -1;
static char out[65536];         /* what the thread wrote, the test's filler taken out */
static size_t out_len;

static int setup(void **state)
{
	int p[2];

	(void)state;
	if (pipe2(p, O_CLOEXEC) < 0 || fcntl(p[1], F_SETPIPE_SZ, PIPE_BYTES) < 0)
		return -1;
	rd = p[0];
	wr = p[1];
	(void)fcntl(rd, F_SETFL, O_NONBLOCK);   /* the test reads what is there */
	saved = dup(2);
	out_len = 0;
	log_init(LOG_SINK_STDERR);
	return saved < 0 ? -1 : 0;
}

static void to_pipe(void)
{
	fflush(stderr);
	(void)dup2(wr, 2);
}

static void to_stderr(void)
{
	fflush(stderr);
	(void)dup2(saved, 2);
}

static int teardown(void **state)
{
	(void)state;
	to_stderr();
	close(saved);
	close(rd);
	close(wr);
	return 0;
}

/* Fills the pipe: the next write to it blocks. */
static void fill(void)
{
	static const char filler[PIPE_BYTES];
	int fl = fcntl(wr, F_GETFL);

	(void)fcntl(wr, F_SETFL, fl | O_NONBLOCK);
	while (write(wr, filler, sizeof(filler)) > 0)
		;
	(void)fcntl(wr, F_SETFL, fl);
}

/* Reads what the pipe holds (the filler's NUL bytes left out) into out. */
static void take(void)
{
	char buf[PIPE_BYTES];
	ssize_t n;

	while ((n = read(rd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != '\0' && out_len < sizeof(out) - 1)
				out[out_len++] = buf[i];
	out[out_len] = '\0';
}

/* Reads the pipe until out holds `text` or WAIT_MS passed; true when it does. */
static bool take_until(const char *text)
{
	for (int i = 0; i < WAIT_MS; i++) {
		take();
		if (strstr(out, text) != NULL)
			return true;
		tu_sleep_ms(1);
	}
	return false;
}

/* Waits until cond holds of the queue's figures; false after WAIT_MS. */
static bool wait_for(bool (*cond)(const struct log_figures *))
{
	struct log_figures fig;

	for (int i = 0; i < WAIT_MS; i++) {
		log_figures(&fig);
		if (cond(&fig))
			return true;
		tu_sleep_ms(1);
	}
	return false;
}

/* The journal thread is in a send, with nothing queued. */
static bool sending_one(const struct log_figures *f)
{
	return f->sending == 1 && f->queued == 0;
}

static bool has_room(const struct log_figures *f)
{
	return f->queued < LOG_QUEUE_LEN;
}

static bool ended(const struct log_figures *f)
{
	return !f->running;
}

/* Starts the journal thread, makes fd 2 the full pipe and logs `first`: true once
 * the thread is blocked in its send. */
static bool start_blocked(const char *log_file, const char *first)
{
	assert_int_equal(log_start(log_file), 0);
	to_pipe();
	fill();
	log_msg(LOG_NOTICE, "%s", first);
	return wait_for(sending_one);
}

/*
 * The journal thread blocked in a send: LOG_QUEUE_LEN messages wait, the rest are
 * dropped and counted; once it gets through, it sends them in order, then says
 * how many were dropped (a warning naming the log file), then what came after.
 */
static void test_full_dropped_said(void **state)
{
	struct log_figures full;
	struct log_unsent left;
	bool blocked, drained, got, room;
	char line[64];

	(void)state;
	blocked = start_blocked("/var/log/portlogd/x.log", "m0");
	for (int i = 1; i <= LOG_QUEUE_LEN + 3; i++)
		log_source(LOG_WARNING, "gps", "m%d", i);
	log_figures(&full);
	drained = log_drain(50, &left);
	take();                 /* the filler: the thread gets through */
	room = wait_for(has_room);
	log_msg(LOG_NOTICE, "after");
	got = take_until("portlogd: after\n");
	to_stderr();

	assert_true(blocked);
	assert_true(room);
	assert_int_equal(full.queued, LOG_QUEUE_LEN);
	assert_int_equal(full.sending, 1);
	assert_int_equal(full.dropped_total, 3);        /* m257 .. m259 */
	assert_false(drained);
	assert_int_equal(left.queued, LOG_QUEUE_LEN + 1);
	assert_int_equal(left.dropped, 3);
	if (!got)
		fail_msg("the journal thread did not get through:\n%s", out);
	/* m0 .. m256 in order, then the warning, then "after" */
	{
		const char *p = out;

		for (int i = 0; i <= LOG_QUEUE_LEN; i++) {
			snprintf(line, sizeof(line), "portlogd: m%d\n", i);
			p = strstr(p, line);
			if (p == NULL)
				fail_msg("no '%s' in order:\n%s", line, out);
		}
		p = strstr(p, "portlogd: the journal did not keep up: 3 messages to it were dropped; "
			   "the log file /var/log/portlogd/x.log has every EV and DROP line\n");
		if (p == NULL || strstr(p, "portlogd: after\n") == NULL)
			fail_msg("not the warning, then 'after':\n%s", out);
	}
	assert_null(strstr(out, "m257\n"));
	assert_null(strstr(out, "m258\n"));
	assert_null(strstr(out, "m259\n"));
	to_pipe();
	left = log_stop();      /* nothing left: at once */
	log_msg(LOG_NOTICE, "sync");    /* after the stop: sent by its caller */
	take();
	to_stderr();
	assert_int_equal(left.queued, 0);
	assert_int_equal(left.dropped, 0);
	assert_non_null(strstr(out, "portlogd: sync\n"));
	assert_true(wait_for(ended));
}

/*
 * A journal that never reads does not hang the stop: log_drain gives up after
 * its timeout and says what is left (the message in the send, those queued, the
 * drops not said); log_stop then does not wait again and leaves the thread in
 * its send; later messages are dropped, not sent (a send would hang too).
 */
static void test_stop_stuck(void **state)
{
	struct log_figures fig;
	struct log_unsent drained_left, stop_left;
	bool blocked, drained;

	(void)state;
	blocked = start_blocked("/l", "s1");
	log_msg(LOG_NOTICE, "s%d", 2);
	log_msg(LOG_NOTICE, "s%d", 3);
	drained = log_drain(100, &drained_left);
	stop_left = log_stop();
	log_msg(LOG_ERR, "after the stop");
	log_figures(&fig);
	take();                 /* the send ends; the thread sees it was left and ends */
	to_stderr();

	assert_true(blocked);
	assert_false(drained);
	assert_int_equal(drained_left.queued, 3);
	assert_int_equal(drained_left.dropped, 0);
	assert_int_equal(stop_left.queued, 3);
	assert_int_equal(stop_left.dropped, 0);
	assert_int_equal(fig.dropped_total, 1);         /* "after the stop" */
	assert_true(wait_for(ended));
	take();
	assert_non_null(strstr(out, "portlogd: s1\n"));
	assert_null(strstr(out, "portlogd: s2\n"));
	assert_null(strstr(out, "after the stop"));
}

/* Before log_start, a message is written by its caller at once. */
static void test_sync_before_start(void **state)
{
	(void)state;
	to_pipe();
	log_source(LOG_WARNING, "a", "x=%d", 1);
	take();
	to_stderr();
	assert_string_equal(out, "portlogd: x=1\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sync_before_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_dropped_said, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_stuck, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
