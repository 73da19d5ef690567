/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_clockq.c - the clock's quality (daemon/clockq.c) and its EV clock lines.
 *
 * No clock here can be made synchronised, unsynchronised or unreadable on
 * demand (and setting it would change it for every process): adjtimex is
 * wrapped (--wrap=adjtimex) and answers what the test says. The flusher that
 * writes the lines is the real one, with its thread, on a temporary log.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clockq.h"
#include "conf.h"
#include "flush.h"
#include "parts.h"
#include "source.h"
#include "wrap.h"

enum clock_case { SYNCED, SYNCED_UNSYNC_FLAG, NEAR_LIMIT, AT_LIMIT, UNSYNCED, LEAP_INS,
		  LEAP_DEL, REFUSED };

/* What the kernel says in each case. */
static const struct { int rc, err, status; long maxerror, esterror; } kernel[] = {
	[SYNCED] = { TIME_OK, 0, STA_PLL, 1500, 40 },
	/* chrony without rtcsync leaves STA_UNSYNC set; maxerror decides */
	[SYNCED_UNSYNC_FLAG] = { TIME_ERROR, 0, STA_PLL | STA_UNSYNC, 2300, 120 },
	[NEAR_LIMIT] = { TIME_OK, 0, 0, CLOCKQ_UNSYNC_US - 1, 500 },
	[AT_LIMIT] = { TIME_ERROR, 0, 0, CLOCKQ_UNSYNC_US, 500 },
	[UNSYNCED] = { TIME_ERROR, 0, STA_UNSYNC, 16000000, 16000000 },
	[LEAP_INS] = { TIME_INS, 0, STA_PLL | STA_INS, 900, 30 },
	[LEAP_DEL] = { TIME_DEL, 0, STA_PLL | STA_DEL, 900, 30 },
	[REFUSED] = { -1, EPERM, 0, 0, 0 },
};

/* The case the wrapped adjtimex answers: one atomic, so that the flusher
 * thread never reads half of one case and half of another. */
static _Atomic int tx_case = SYNCED;
static _Atomic unsigned tx_calls;

int WRAP(adjtimex)(struct timex *tx);

int WRAP(adjtimex)(struct timex *tx)
{
	int c = atomic_load(&tx_case);

	atomic_fetch_add(&tx_calls, 1);
	if (tx->modes != 0)
		abort();                /* clockq only ever reads */
	if (kernel[c].rc < 0) {
		errno = kernel[c].err;
		return -1;
	}
	tx->status = kernel[c].status;
	tx->maxerror = kernel[c].maxerror;
	tx->esterror = kernel[c].esterror;
	return kernel[c].rc;
}

/*
 * The wall clock past 2038: with real_shift_ns set, CLOCK_REALTIME answers that much
 * later (clock_gettime wrapped). A 32-bit time_t cannot hold 2040: its seconds wrap to 1904.
 */
static _Atomic int64_t real_shift_ns;

int REAL(clock_gettime)(clockid_t id, struct timespec *ts);
int WRAP(clock_gettime)(clockid_t id, struct timespec *ts);

int WRAP(clock_gettime)(clockid_t id, struct timespec *ts)
{
	int rc = REAL(clock_gettime)(id, ts);
	int64_t shift = atomic_load(&real_shift_ns);

	if (rc == 0 && id == CLOCK_REALTIME && shift != 0) {
		int64_t t = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + shift;

		ts->tv_sec = (time_t)(t / 1000000000);
		ts->tv_nsec = (long)(t % 1000000000);
	}
	return rc;
}

static void kernel_says(enum clock_case c)
{
	atomic_store(&tx_case, c);
}

/* Each state read and said: the fields of its EV clock line. */
static void each_state(void **state)
{
	static const struct { enum clock_case c; enum clockq_reason why; const char *want; } t[] = {
		{ SYNCED, CLOCKQ_START, "synced=yes maxerror_us=1500 esterror_us=40 unsync_flag=no "
		  "leap=none reason=start" },
		{ SYNCED_UNSYNC_FLAG, CLOCKQ_STAT, "synced=yes maxerror_us=2300 esterror_us=120 "
		  "unsync_flag=yes leap=none reason=stat" },
		{ NEAR_LIMIT, CLOCKQ_CHANGE, "synced=yes maxerror_us=15999999 esterror_us=500 "
		  "unsync_flag=no leap=none reason=change" },
		{ AT_LIMIT, CLOCKQ_CHANGE, "synced=no maxerror_us=16000000 esterror_us=500 "
		  "unsync_flag=no leap=none reason=change" },
		{ UNSYNCED, CLOCKQ_STEP, "synced=no maxerror_us=16000000 esterror_us=16000000 "
		  "unsync_flag=yes leap=none reason=step" },
		{ LEAP_INS, CLOCKQ_STAT, "synced=yes maxerror_us=900 esterror_us=30 unsync_flag=no "
		  "leap=insert reason=stat" },
		{ LEAP_DEL, CLOCKQ_STAT, "synced=yes maxerror_us=900 esterror_us=30 unsync_flag=no "
		  "leap=delete reason=stat" },
		{ REFUSED, CLOCKQ_START, "synced=unknown reason=start errno=EPERM" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct clockq_state st;
		char text[160];
		struct fmt_kv kv;

		kernel_says(t[i].c);
		clockq_read(&st);
		fmt_kv_init(&kv, text, sizeof(text));
		clockq_fields(&kv, t[i].why, &st);
		if (strcmp(text, t[i].want) != 0)
			fail_msg("case %zu: '%s', expected '%s'", i, text, t[i].want);
	}
}

/* clockq_due for `why`; the reason its line would give in *as. */
static bool due(struct clockq *q, enum clockq_reason why, int64_t now, struct clockq_state *st,
		enum clockq_reason *as)
{
	*as = why;
	return clockq_due(q, as, now, st);
}

/* When a line is due: start, step and STAT always; a change when the state changed,
 * looked for at most once a second; a line the buffer refused is due again. */
static void when_due(void **state)
{
	struct clockq q;
	struct clockq_state st;
	const int64_t s = 1000000000;
	enum clockq_reason why;
	unsigned calls;

	(void)state;
	clockq_init(&q);
	assert_int_equal(atomic_load(&q.sync), CLOCKQ_NOT_READ);
	kernel_says(SYNCED);
	assert_true(due(&q, CLOCKQ_START, 10 * s, &st, &why));
	clockq_said(&q, &st);
	assert_int_equal(atomic_load(&q.sync), CLOCKQ_SYNCED);
	assert_int_equal(atomic_load(&q.maxerror_us), 1500);

	/* within the second after a look, a change is not even looked for */
	kernel_says(UNSYNCED);
	calls = atomic_load(&tx_calls);
	assert_false(due(&q, CLOCKQ_CHANGE, 10 * s + s / 2, &st, &why));
	assert_int_equal(atomic_load(&tx_calls), calls);
	/* a second on: looked for, and due */
	assert_true(due(&q, CLOCKQ_CHANGE, 11 * s, &st, &why));
	assert_false(st.synced);
	assert_int_equal(atomic_load(&q.sync), CLOCKQ_UNSYNCED);
	/* not written (a full buffer): due again at the next look */
	assert_false(due(&q, CLOCKQ_CHANGE, 11 * s + 1, &st, &why));
	assert_true(due(&q, CLOCKQ_CHANGE, 12 * s, &st, &why));
	clockq_said(&q, &st);
	/* the same state: no line */
	assert_false(due(&q, CLOCKQ_CHANGE, 13 * s, &st, &why));
	/* a maxerror that moves but stays on one side is no change */
	kernel_says(AT_LIMIT);
	assert_false(due(&q, CLOCKQ_CHANGE, 14 * s, &st, &why));
	/* unreadable is a state of its own */
	kernel_says(REFUSED);
	assert_true(due(&q, CLOCKQ_CHANGE, 15 * s, &st, &why));
	assert_int_equal(st.err, EPERM);
	assert_int_equal(atomic_load(&q.sync), CLOCKQ_UNKNOWN);
	clockq_said(&q, &st);
	/* a STAT round that finds a change says so */
	kernel_says(SYNCED);
	assert_true(due(&q, CLOCKQ_STAT, 15 * s + 1, &st, &why));
	assert_int_equal(why, CLOCKQ_CHANGE);
	clockq_said(&q, &st);
	assert_true(due(&q, CLOCKQ_STAT, 15 * s + 2, &st, &why));
	assert_int_equal(why, CLOCKQ_STAT);
	/* step and STAT rounds always, whatever the state and the pace */
	assert_true(due(&q, CLOCKQ_STEP, 15 * s + 1, &st, &why));
	assert_true(due(&q, CLOCKQ_STAT, 15 * s + 2, &st, &why));
	kernel_says(SYNCED);
}

/* Reads the log's EV clock lines, "reason synced" each, into out. */
static void clock_lines(const char *path, char *out, size_t len, size_t *stat_rounds)
{
	FILE *f = fopen(path, "r");
	char line[1024], last[16] = "";     /* last: the state the lines said last */

	*out = '\0';
	*stat_rounds = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		const char *c = strstr(line, " portlogd EV clock "), *r, *sy;
		char item[64], state[16];

		if (c == NULL)
			continue;
		r = strstr(c, " reason=");
		sy = strstr(c, " synced=");
		assert_non_null(r);
		assert_non_null(sy);
		if (strncmp(r, " reason=stat", 12) == 0) {
			(*stat_rounds)++;
			continue;
		}
		snprintf(state, sizeof(state), "%.*s", (int)strcspn(sy + 8, " \n"), sy + 8);
		/* the machine's clock set by another process meanwhile (an NTP step; CI's
		 * e2e_serial clock_step beside the other architectures' unit tests): its
		 * line says the state then, a change when it is a new one */
		if (strncmp(r, " reason=step", 12) == 0) {
			if (strcmp(state, last) == 0)
				continue;
			r = " reason=change";
		}
		snprintf(item, sizeof(item), "%.*s:%s ", (int)strcspn(r + 8, " \n"), r + 8, state);
		snprintf(last, sizeof(last), "%s", state);
		strncat(out, item, len - strlen(out) - 1);
	}
	fclose(f);
}

/* Every line of the log dated with prefix (its TIME field). */
static void expect_dated(const char *path, const char *prefix)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	unsigned n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, prefix, strlen(prefix)) != 0)
			fail_msg("a line dated %.30s, not %s...: %s", line, prefix, line);
		n++;
	}
	fclose(f);
	assert_true(n > 0);
}

/* Waits (bounded) until the log holds want among its clock lines. */
static void wait_for(const char *path, const char *want)
{
	char got[512];
	size_t rounds;

	/* the flusher looks once a second: 30 s bound even a machine that starves it */
	for (int i = 0; i < 3000; i++) {
		struct timespec ms = { 0, 10000000 };

		clock_lines(path, got, sizeof(got), &rounds);
		if (strstr(got, want) != NULL)
			return;
		nanosleep(&ms, NULL);
	}
	fail_msg("no '%s' in the log's EV clock lines within 30 s: %s", want, got);
}

/*
 * The real flusher thread: a line at start, one per change of state (synced,
 * not, unreadable, synced again), one with every STAT round, one at stop. The
 * wall clock says 2040 all along (past a 32-bit time_t's 2038): every line is dated so.
 */
static void the_lines(void **state)
{
	char dir[] = "/tmp/portlogd-test-clockq-XXXXXX", path[256], got[512];
	static struct conf conf;            /* about 20 KiB: not on the stack */
	static struct parts ps;
	struct flusher f;
	struct source self;
	char err[CONF_ERR_MAX];
	int degraded = 0;
	size_t rounds;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/portlogd.log", dir);
	conf_defaults(&conf);
	snprintf(conf.logger.log_file, sizeof(conf.logger.log_file), "%s", path);
	conf.logger.flush_interval_ms = 20;
	conf.logger.stat_interval_s = 1;
	assert_int_equal(source_init(&self, "portlogd", 64), 0);
	parts_init(&ps);
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_MAIN, .src = &self }, NULL));
	if (flush_init(&f, &conf, &ps, err, sizeof(err)) != 0)
		fail_msg("flush_init: %s", err);
	kernel_says(SYNCED);
	{
		struct timespec now;

		assert_int_equal(clock_gettime(CLOCK_REALTIME, &now), 0);
		/* 2040-02-29T12:00:00Z, give or take the test's seconds */
		atomic_store(&real_shift_ns, 2214129600LL * 1000000000
					     - ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec));
	}
	assert_int_equal(flush_start(&f, &degraded), 0);
	wait_for(path, "start:yes ");
	kernel_says(UNSYNCED);
	wait_for(path, "start:yes change:no ");
	kernel_says(REFUSED);
	wait_for(path, "start:yes change:no change:unknown ");
	kernel_says(SYNCED_UNSYNC_FLAG);
	wait_for(path, "start:yes change:no change:unknown change:yes ");
	/* a STAT round (every second here) writes one too */
	for (int i = 0; i < 300; i++) {
		struct timespec ms = { 0, 10000000 };

		clock_lines(path, got, sizeof(got), &rounds);
		if (rounds > 0)
			break;
		nanosleep(&ms, NULL);
	}
	assert_true(rounds > 0);
	flush_stop(&f);
	flush_fini(&f);
	clock_lines(path, got, sizeof(got), &rounds);
	printf("# EV clock lines: %s+ %zu with STAT rounds (the last at stop)\n", got, rounds);
	/* no line twice for one state, nothing else but the STAT rounds */
	assert_string_equal(got, "start:yes change:no change:unknown change:yes ");
	assert_true(rounds >= 2);
	/* the day is what a 32-bit time_t gets wrong (1904); the minute moves with any
	 * step of the machine's clock meanwhile */
	expect_dated(path, "2040-02-29T");
	atomic_store(&real_shift_ns, 0);
	source_fini(&self);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_state),
		cmocka_unit_test(when_due),
		cmocka_unit_test(the_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
