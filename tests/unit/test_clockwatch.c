/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_clockwatch.c - a clock that stood still, seen through the RTC's seconds (daemon/clockwatch.c).
 *
 * The RTC's updates on the host's time, read by a guest whose clock a pause stops: a
 * random wake-up (0..D) at each read, pauses of random length at random places; what
 * the watch says against what happened.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "clockwatch.h"
#include "testutil.h"

#define S 1000000000LL
#define MS 1000000LL

static uint64_t rng = 42;

static int64_t uniform(int64_t lo, int64_t hi)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return lo + (int64_t)((rng >> 33) % (uint64_t)(hi - lo + 1));
}

/* The guest's clock at host time h: stopped from pause_at for pause_ns, ppm fast. */
static int64_t guest_at(int64_t h, int64_t ppm, int64_t pause_at, int64_t pause_ns)
{
	int64_t paused = pause_at > 0 && h > pause_at ? (h < pause_at + pause_ns ? h - pause_at : pause_ns)
			 : 0;

	return 5 * S + h - paused + h / 1000000 * ppm;
}

/* A guest whose clock runs ppm off the host's, its reads up to wake late, a pause of
 * pause_ns from host time pause_at (0: none; the update due meanwhile is read at the
 * resume, with the RTC's second then); n seconds. The time the watch proved lost. */
static int64_t run(int64_t wake, int64_t ppm, int64_t pause_at, int64_t pause_ns, int n,
		   uint64_t *stops)
{
	struct clockwatch w;
	struct clockwatch_stop st;
	int64_t lost = 0, end = pause_at + pause_ns;
	bool pending = false, judged = false;

	clockwatch_init(&w, S);
	for (int k = 1; k <= n; k++) {
		int64_t reads[2], nr = 0, host = k * S + uniform(0, wake);

		if (pause_at > 0 && host >= pause_at && host < end) {
			pending = true;
			continue;
		}
		if (pending) {
			reads[nr++] = end + uniform(0, wake);
			pending = false;
		}
		reads[nr++] = host;
		for (int i = 0; i < nr; i++) {
			int64_t g = guest_at(reads[i], ppm, pause_at, pause_ns);

			if (clockwatch_update(&w, g, 1700000000 + reads[i] / S, &st)) {
				assert_true(st.to == g && st.lost > 0);
				/* the window holds the pause (the flusher marks by it): the
				 * update it swallowed, read at the resume, may look on time */
				if (pause_at > 0 && reads[i] >= end && !judged
				    && st.from > guest_at(pause_at, ppm, pause_at, pause_ns))
					fail_msg("a stop from %lld ns, after the pause began at %lld",
						 (long long)st.from,
						 (long long)guest_at(pause_at, ppm, pause_at, pause_ns));
				judged |= pause_at > 0 && reads[i] >= end;
				lost += st.lost;
			}
		}
	}
	*stops = w.stops;
	return lost;
}

/* No pause: what the watch calls lost is wake-up noise, under the wake-ups' spread. */
static void no_pause_no_stop(void **state)
{
	uint64_t stops;

	(void)state;
	for (int i = 0; i < 50; i++) {
		int64_t wake = uniform(0, 5 * MS), lost = run(wake, uniform(-100, 100), 0, 0, 120, &stops);

		assert_true(lost <= 2 * wake + 100000);
	}
	/* a prompt reader, clocks at one rate: nothing at all */
	assert_int_equal(run(0, 0, 0, 0, 120, &stops), 0);
	assert_int_equal(stops, 0);
}

/* A pause of 20 ms to 3 s: proven to within the wake-ups' spread. */
static void pause_is_seen(void **state)
{
	uint64_t stops;

	(void)state;
	for (int i = 0; i < 200; i++) {
		int64_t wake = uniform(0, 2 * MS), pause = uniform(20 * MS, 3 * S);
		int64_t lost = run(wake, uniform(-100, 100), uniform(20 * S, 40 * S) + uniform(0, S - 1),
				   pause, 60, &stops);

		/* short by the drift allowed over the window, and this clock's own over it and
		 * the pause; the wake-ups either way. The window's seconds and one: the update
		 * the pause swallowed is read at the resume, between two seconds, against the
		 * window's eight before it (a run of seed 1795841114412663942 met that) */
		int64_t slack = 2 * wake + (CLOCKWATCH_WINDOW + 1) * (CLOCKWATCH_DRIFT_PPM + 100) * 1000
				+ pause / 1000000 * 100;

		if (lost < pause - slack || lost > pause + slack)
			fail_msg("pause %lld us, wake-ups to %lld us: %lld us seen", (long long)(pause / 1000),
				 (long long)(wake / 1000), (long long)(lost / 1000));
		assert_true(stops >= 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_pause_no_stop),
		cmocka_unit_test(pause_is_seen),
	};

	rng = tu_seed("test_clockwatch");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
