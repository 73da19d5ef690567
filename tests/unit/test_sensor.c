/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_sensor.c - unit tests of the stall sensors' bound (daemon/sensor.c): what a reader may assume of its path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sensor.h"

#define MS 1000000LL
#define US 1000LL

static struct sensor_cpu cpus[2];
static struct sensors set;

/* Two times as a sensor's thread publishes them (an even sequence count). */
static void put(struct sensor_win *w, int64_t a, int64_t b)
{
	atomic_store(&w->from, a);
	atomic_store(&w->to, b);
	atomic_store(&w->seq, 2);
}

/* Two CPUs' sensors at a 1 ms period, each having looked at 9.9 ms (and 8.9 before),
 * no stall, no probe. */
static int setup(void **state)
{
	(void)state;
	memset(&set, 0, sizeof(set));
	memset(cpus, 0, sizeof(cpus));
	set.period_ns = 1 * MS;
	set.unseen_ns = set.period_ns + set.period_ns / 4;
	set.n = 2;
	set.cpu = cpus;
	for (int i = 0; i <= CONF_CPU_MAX; i++)
		set.cpu_index[i] = -1;
	for (unsigned i = 0; i < 2; i++) {
		cpus[i].set = &set;
		cpus[i].cpu = (int)i;
		cpus[i].index = i;
		set.cpu_index[i] = (int)i;
		put(&cpus[i].looks, 99 * MS / 10, 89 * MS / 10);
	}
	return 0;
}

struct bound_case {
	const char *name;
	int cpu;                    /* the reader's, -1: not known */
	bool woken;
	int64_t w_us;
	int64_t from_us;            /* want */
	enum reasm_stage stage;     /* want */
};

static void check(const struct bound_case *c)
{
	enum reasm_stage st;
	int64_t from = sensors_from(&set, c->cpu, c->w_us * US, c->woken, &st);

	if (from != c->from_us * US || st != c->stage)
		fail_msg("%s: from %lld us stage %d, want %lld us stage %d", c->name,
			 (long long)(from / US), (int)st, (long long)c->from_us, (int)c->stage);
}

/* The reader's CPU: not waiting to run when its sensor last went back to sleep. */
static void test_cpu_looks(void **state)
{
	static const struct bound_case cases[] = {
		/* no probe to lean on: the tty path a period and a quarter before */
		{ "woken 0.5 ms after the sensor's look", 0, true, 10400, 9900 - 1250,
		  REASM_STAGE_TTY },
		{ "woken right after the look: from the look before", 0, true, 9950, 8900 - 1250,
		  REASM_STAGE_TTY },
		{ "a read no wake-up announced: from its own time", 0, false, 10400, 10400 - 1250,
		  REASM_STAGE_TTY },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check(&cases[i]);
}

/* A stall the sensor saw, one it is still in (overdue), a CPU not known. */
static void test_cpu_windows(void **state)
{
	(void)state;
	/* cpu 0 stopped from 4.9 to 9.4 ms: its sensor woke 4.5 ms late */
	put(&cpus[0].cpu_win, 49 * MS / 10, 94 * MS / 10);
	put(&cpus[0].looks, 94 * MS / 10, 49 * MS / 10);
	{
		const struct bound_case c[] = {
			{ "woken with the sensor at the stall's end", 0, true, 9450, 4900 - 1250,
			  REASM_STAGE_CPU },
			/* 2 ms later: the reader was not waiting when the sensor looked, but
			 * the bytes can have reached the line discipline from then on, handed
			 * on by a tty worker the stall held since it began */
			{ "woken after the stall, well after the look", 0, true, 11400, 4900,
			  REASM_STAGE_CPU },
			/* its CPU saw nothing, but the port's tty work may have waited on
			 * the stopped one, or the reader itself, moved off it since */
			{ "the other CPU's stall", 1, true, 9450, 4900, REASM_STAGE_CPU },
			{ "a CPU not known: each it may have run on", -1, true, 9450, 4900 - 1250,
			  REASM_STAGE_CPU },
		};

		for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
			check(&c[i]);
	}
	/* cpu 1's sensor has not looked since 3 ms: it may be stopped still */
	put(&cpus[1].looks, 3 * MS, 2 * MS);
	{
		const struct bound_case c = { "an overdue sensor: since its last look", 1, true, 10000,
					      3000 - 1250, REASM_STAGE_CPU };

		check(&c);
	}
}

/* The tty path: the latest probe back before the bytes reached the line discipline. */
static void test_tty_probes(void **state)
{
	(void)state;
	put(&cpus[1].probe[0], 90 * MS / 10, 905 * MS / 100);     /* 9.0 -> 9.05 */
	put(&cpus[0].probe[3], 80 * MS / 10, 801 * MS / 100);     /* 8.0 -> 8.01 */
	put(&cpus[0].probe[4], 97 * MS / 10, 98 * MS / 10);       /* back after 9.9 - ... */
	{
		const struct bound_case c[] = {
			/* reached the line discipline from 9.9 (the look): probes back before */
			{ "woken after a look: the latest probe back before it", 0, true, 10400, 9700,
			  REASM_STAGE_CPU },
			/* from 8.9: only 8.0's came back before */
			{ "woken right after the look", 0, true, 9950, 8000, REASM_STAGE_CPU },
			{ "a read no wake-up announced, at 9.75 ms", 0, false, 9750, 9000,
			  REASM_STAGE_TTY },
		};

		for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
			check(&c[i]);
	}
	/* a probe written at 9.2 ms not back: the tty path stalls since */
	atomic_store(&cpus[0].probe_out, 92 * MS / 10);
	{
		const struct bound_case c = { "a probe still out is a stall not ended", 1, false,
					      10000, 9200, REASM_STAGE_TTY };
		const struct bound_case d = { "one out shorter than a quarter period is not", 1,
					      false, 9400, 9000, REASM_STAGE_TTY };

		check(&c);
		check(&d);
	}
}

/*
 * Another CPU's stall while the reader's CPU and the probes ran on: the port's tty
 * work can have waited on it (the kernel's unbound workers run anywhere; the one
 * caught by a stopped vCPU hands the bytes on when it resumes), and a reader woken
 * there can have been moved off it. e2e_serial's four_ports met it on this VM: a
 * packet read 9.4 ms after it was written, its reader's CPU and the probes quiet,
 * the next packet 10 ms later joined to it unmarked.
 */
static void test_other_cpu(void **state)
{
	(void)state;
	/* the probes come back at once, served by a worker on CPU 0 */
	put(&cpus[0].probe[0], 90 * MS / 10, 901 * MS / 100);     /* 9.0 -> 9.01 */
	put(&cpus[0].probe[1], 97 * MS / 10, 971 * MS / 100);     /* 9.7 -> 9.71 */
	put(&cpus[0].looks, 103 * MS / 10, 93 * MS / 10);
	/* CPU 1 has not looked since 3 ms: stopped still */
	put(&cpus[1].looks, 3 * MS, 2 * MS);
	{
		const struct bound_case c[] = {
			{ "another CPU's sensor overdue: since its last look", 0, true, 10400, 3000,
			  REASM_STAGE_CPU },
			{ "so for a read no wake-up announced", 0, false, 10400, 3000,
			  REASM_STAGE_CPU },
		};

		for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
			check(&c[i]);
	}
	/* it resumed at 10.35 ms and said so: a window from its last look */
	put(&cpus[1].cpu_win, 3 * MS, 1035 * MS / 100);
	put(&cpus[1].looks, 1035 * MS / 100, 3 * MS);
	{
		const struct bound_case c[] = {
			{ "another CPU's window, just closed", 0, true, 10400, 3000,
			  REASM_STAGE_CPU },
			/* at 14 ms (both looked at 13.9 and 12.9) bytes from before 12.9 - 1.25
			 * would have reached the reader: a window closed at 10.35 held none */
			{ "one closed before the bytes can have come does not count", 0, true,
			  14000, 9700, REASM_STAGE_TTY },
		};

		check(&c[0]);
		put(&cpus[0].looks, 139 * MS / 10, 129 * MS / 10);
		put(&cpus[1].looks, 139 * MS / 10, 129 * MS / 10);
		check(&c[1]);
	}
}

/* Without sensors (no serial port, or none could start): the reader's own time. */
static void test_none(void **state)
{
	enum reasm_stage st;

	(void)state;
	set.n = 0;
	assert_int_equal(sensors_from(&set, 0, 12345, true, &st), 12345);
}

/* A sensor that never looked (its thread not run yet when a reader wakes at a slow
 * start: CI's ASan build, UBSan's signed overflow in the daemon): no bound, as early
 * as the reader's floor, said of the CPU; never 0 ("no bound" to reasm_read). */
static void test_never_looked(void **state)
{
	enum reasm_stage st = REASM_STAGE_TTY;

	(void)state;
	memset(&cpus[0].looks, 0, sizeof(cpus[0].looks));
	assert_int_equal(sensors_from(&set, 0, 12 * MS, true, &st), 1);
	assert_int_equal(st, REASM_STAGE_CPU);
	assert_int_equal(sensors_from(&set, -1, 12 * MS, true, &st), 1);
}

/* The budget: over 10% of a second doubles the period, up to 64 times the config's;
 * under 2.5% halves it, never below the config's; between, it stays. */
static void test_budget(void **state)
{
	const int64_t s = 1000 * MS, conf = 1 * MS;

	(void)state;
	assert_int_equal(sensor_budget_period(conf, conf, 101 * MS, s), 2 * MS);
	assert_int_equal(sensor_budget_period(8 * MS, conf, 500 * MS, s), 16 * MS);
	assert_int_equal(sensor_budget_period(64 * MS, conf, 900 * MS, s), 64 * MS);
	assert_int_equal(sensor_budget_period(40 * MS, conf, 900 * MS, s), 64 * MS);
	assert_int_equal(sensor_budget_period(conf, conf, 100 * MS, s), conf);
	assert_int_equal(sensor_budget_period(8 * MS, conf, 50 * MS, s), 8 * MS);
	assert_int_equal(sensor_budget_period(8 * MS, conf, 24 * MS, s), 4 * MS);
	assert_int_equal(sensor_budget_period(conf, conf, 0, s), conf);
	/* over a longer span, the same share */
	assert_int_equal(sensor_budget_period(conf, conf, 150 * MS, 2 * s), conf);
	assert_int_equal(sensor_budget_period(conf, conf, 250 * MS, 2 * s), 2 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_cpu_looks, setup),
		cmocka_unit_test_setup(test_cpu_windows, setup),
		cmocka_unit_test_setup(test_tty_probes, setup),
		cmocka_unit_test_setup(test_other_cpu, setup),
		cmocka_unit_test_setup(test_none, setup),
		cmocka_unit_test_setup(test_never_looked, setup),
		cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
