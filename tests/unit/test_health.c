/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_health.c - the watchdog's evidence: the alive rule, checks over snapshots, real threads. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "clockq.h"
#include "health.h"
#include "notify.h"

/* The rule: progress since the last check, or parked in the wait now. */
static void alive_rule(void **state)
{
	static const struct { uint64_t seen, beats; bool parked, alive; } cases[] = {
		{ 0, 0, false, false },     /* never woke, not waiting: stuck before its wait */
		{ 0, 0, true, true },       /* waiting since the start: an idle port */
		{ 5, 6, false, true },      /* woke once and is working */
		{ 5, 9, true, true },       /* woke several times, waiting again */
		{ 7, 7, false, false },     /* no wake-up since the last check, not waiting */
		{ 7, 7, true, true },       /* no wake-up, but parked: idle */
		{ UINT64_MAX, 0, false, true },   /* the count wrapped: it moved */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(health_alive(cases[i].seen, cases[i].beats, cases[i].parked),
				 cases[i].alive);
}

/* health_check over hand-set beats: the first stalled index, and counts remembered. */
static void check_snapshots(void **state)
{
	struct health_beat b[3];
	struct health_probe p[3];

	(void)state;
	for (int i = 0; i < 3; i++)
		health_beat_init(&b[i]);
	health_probe_init(&p[0], &b[0], "flusher", NULL);
	health_probe_init(&p[1], &b[1], "serial", "gps");
	health_probe_init(&p[2], &b[2], "parallel", "lpt0");
	assert_string_equal(p[1].name, "serial:gps");
	assert_int_equal(health_find(p, 3, "parallel:lpt0"), 2);
	assert_int_equal(health_find(p, 3, "serial:plc"), -1);

	/* all parked: alive */
	for (int i = 0; i < 3; i++)
		health_park(&b[i]);
	assert_int_equal(health_check(p, 3), -1);
	/* 0 and 2 woke and work, 1 stays parked */
	health_unpark(&b[0]);
	health_unpark(&b[2]);
	assert_int_equal(health_check(p, 3), -1);
	/* 0 and 2 still working, no new wake-up since the last check: both stalled, 0 first */
	assert_int_equal(health_check(p, 3), 0);
	/* 0 parks again; 2 is still stalled */
	health_park(&b[0]);
	assert_int_equal(health_check(p, 3), 2);
	/* 2 wakes once more (it went through its wait): alive again */
	health_park(&b[2]);
	health_unpark(&b[2]);
	assert_int_equal(health_check(p, 3), -1);
}

struct worker {
	struct health_beat beat;
	sem_t go;
	_Atomic bool stop;
	bool spin;                  /* stall: loop without waiting */
};

static void *worker(void *arg)
{
	struct worker *w = arg;

	while (!atomic_load(&w->stop)) {
		if (health_stall_wanted(&w->beat)) {
			health_stall(&w->stop, -1);
			continue;
		}
		health_park(&w->beat);
		while (sem_wait(&w->go) < 0 && errno == EINTR)
			;
		health_unpark(&w->beat);
	}
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Real threads: one blocked in its wait for the whole interval is alive, one
 * woken between checks is alive, one held by the stall hook is stalled.
 */
static void real_threads(void **state)
{
	struct worker w[2];
	struct health_probe p[2];
	pthread_t t[2];

	(void)state;
	for (int i = 0; i < 2; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		health_beat_init(&w[i].beat);
		atomic_init(&w[i].stop, false);
		assert_int_equal(sem_init(&w[i].go, 0, 0), 0);
		health_probe_init(&p[i], &w[i].beat, i == 0 ? "idle" : "busy", NULL);
		assert_int_equal(pthread_create(&t[i], NULL, worker, &w[i]), 0);
	}
	/* both reach their wait (bounded: 10 s) */
	for (int k = 0; k < 1000 && !(atomic_load(&w[0].beat.parked) && atomic_load(&w[1].beat.parked)); k++)
		sleep_ms(10);
	for (int round = 0; round < 5; round++) {
		sem_post(&w[1].go);     /* the busy one wakes between checks */
		sleep_ms(20);
		assert_int_equal(health_check(p, 2), -1);
	}
	/* stall the busy one: it leaves its wait and loops without parking */
	atomic_store(&w[1].beat.stall, true);
	sem_post(&w[1].go);
	for (int k = 0; k < 1000 && atomic_load(&w[1].beat.parked); k++)
		sleep_ms(10);
	(void)health_check(p, 2);   /* may still see the wake-up that led into the stall */
	sleep_ms(20);
	assert_int_equal(health_check(p, 2), 1);
	assert_int_equal(health_check(p, 2), 1);
	for (int i = 0; i < 2; i++) {
		atomic_store(&w[i].stop, true);
		sem_post(&w[i].go);
		pthread_join(t[i], NULL);
		sem_destroy(&w[i].go);
	}
}

/* STATUS= text: every figure, the stalled thread first, no timer part without a timer. */
static void status_text(void **state)
{
	struct notify_figures fig = {
		.ports = 3, .ports_up = 2, .records = 1234, .drops = 5, .overruns = 6,
		.lines = 1240, .timer_max_us = 45,
	};
	char buf[256], small[24];

	(void)state;
	notify_status_text(buf, sizeof(buf), &fig);
	assert_string_equal(buf, "2/3 ports up, 1234 records, 5 drops, 6 overruns, 1240 lines, "
			    "timer max 45 us");
	fig.timer_max_us = -1;
	fig.stalled = "serial:gps";
	notify_status_text(buf, sizeof(buf), &fig);
	assert_string_equal(buf, "watchdog withheld: thread serial:gps stalled; 2/3 ports up, "
			    "1234 records, 5 drops, 6 overruns, 1240 lines");
	/* the real-time state, when main knows it */
	fig.stalled = NULL;
	snprintf(fig.rt, sizeof(fig.rt), "rt degraded: no sched_fifo, no mlockall");
	notify_status_text(buf, sizeof(buf), &fig);
	assert_string_equal(buf, "2/3 ports up, 1234 records, 5 drops, 6 overruns, 1240 lines, "
			    "rt degraded: no sched_fifo, no mlockall");
	/* the clock, when it is not synchronised or cannot be read (clockq.h) */
	fig.clock = CLOCKQ_UNSYNCED;
	fig.clock_maxerror_us = 16000000;
	notify_status_text(buf, sizeof(buf), &fig);
	assert_string_equal(buf, "2/3 ports up, 1234 records, 5 drops, 6 overruns, 1240 lines, "
			    "rt degraded: no sched_fifo, no mlockall, clock not synchronised "
			    "(max error 16000 ms)");
	fig.clock = CLOCKQ_UNKNOWN;
	notify_status_text(buf, sizeof(buf), &fig);
	assert_non_null(strstr(buf, ", clock state unknown"));
	fig.clock = CLOCKQ_SYNCED;
	notify_status_text(buf, sizeof(buf), &fig);
	assert_null(strstr(buf, "clock"));
	/* cut short, still a string */
	assert_int_equal(notify_status_text(small, sizeof(small), &fig), sizeof(small) - 1);
	assert_int_equal(strlen(small), sizeof(small) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(alive_rule),
		cmocka_unit_test(check_snapshots),
		cmocka_unit_test(real_threads),
		cmocka_unit_test(status_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
