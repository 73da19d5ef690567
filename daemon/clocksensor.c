/* SPDX-License-Identifier: GPL-2.0-or-later */
/* clocksensor.c - the RTC's seconds timed on CLOCK_MONOTONIC, by a thread of their own (clocksensor.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/rtc.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "clocksensor.h"

#define POLL_MS 200             /* how soon the thread sees it is to stop */

int clock_sensor_open(struct clock_sensor *c, const char *path)
{
	memset(c, 0, sizeof(*c));
	c->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (c->fd < 0)
		return -errno;
	if (ioctl(c->fd, RTC_UIE_ON, 0) < 0) {
		int e = errno;

		close(c->fd);
		c->fd = -1;
		return -e;
	}
	clockwatch_init(&c->w, NS_PER_S);
	return 0;
}

/* The RTC's time now, in seconds since the epoch (its own count: a pause of seconds,
 * or updates not read, move it on as much); -1 when it cannot be read. */
static int64_t rtc_second(int fd)
{
	struct rtc_time rt;
	struct tm tm;

	if (ioctl(fd, RTC_RD_TIME, &rt) < 0)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_sec = rt.tm_sec;
	tm.tm_min = rt.tm_min;
	tm.tm_hour = rt.tm_hour;
	tm.tm_mday = rt.tm_mday;
	tm.tm_mon = rt.tm_mon;
	tm.tm_year = rt.tm_year;
	return (int64_t)timegm(&tm);
}

static void *clock_thread(void *arg)
{
	struct clock_sensor *c = arg;
	struct pollfd p = { .fd = c->fd, .events = POLLIN };

	while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		unsigned long data;
		struct clockwatch_stop st;
		int64_t t, sec;

		if (poll(&p, 1, POLL_MS) <= 0 || read(c->fd, &data, sizeof(data)) != sizeof(data))
			continue;
		t = mono_ns();
		if (!(data & RTC_UF) || (sec = rtc_second(c->fd)) < 0)
			continue;
		if (clockwatch_update(&c->w, t, sec, &st)) {
			uint64_t n = atomic_load_explicit(&c->nstops, memory_order_relaxed);

			c->stops[n % CLOCK_SENSOR_STOPS] = st;
			/* the slot before the count that says it is there */
			atomic_store_explicit(&c->nstops, n + 1, memory_order_release);
		}
		atomic_store_explicit(&c->updates, c->w.updates, memory_order_relaxed);
		atomic_store_explicit(&c->lost_ns, c->w.lost_ns, memory_order_relaxed);
		atomic_store_explicit(&c->lost_max_ns, c->w.lost_max_ns, memory_order_relaxed);
		atomic_store_explicit(&c->spread_ns, c->w.spread_ns, memory_order_relaxed);
		/* after the stops it vouches for */
		atomic_store_explicit(&c->horizon, t, memory_order_release);
	}
	return NULL;
}

int clock_sensor_start(struct clock_sensor *c, int priority, int *degraded)
{
	if (c->fd < 0)
		return 0;
	atomic_store(&c->stop, false);
	return thread_start(&c->thread, "plog-clock", priority, -1, clock_thread, c, degraded);
}

void clock_sensor_stop(struct clock_sensor *c)
{
	if (!c->thread.started)
		return;
	atomic_store(&c->stop, true);
	thread_join(&c->thread);
}

void clock_sensor_close(struct clock_sensor *c)
{
	if (c->fd < 0)
		return;
	(void)ioctl(c->fd, RTC_UIE_OFF, 0);
	close(c->fd);
	c->fd = -1;
}

unsigned clock_sensor_stops(struct clock_sensor *c, uint64_t *seen, struct clockwatch_stop *out,
			    unsigned max)
{
	/* pairs with the thread's release: the slots below the count are whole */
	uint64_t n = atomic_load_explicit(&c->nstops, memory_order_acquire), from = *seen;
	unsigned k = 0;

	if (max > CLOCK_SENSOR_STOPS)
		max = CLOCK_SENSOR_STOPS;
	if (n - from > max)
		from = n - max;         /* older ones are overwritten: the latest max */
	for (uint64_t i = from; i < n; i++)
		out[k++] = c->stops[i % CLOCK_SENSOR_STOPS];
	*seen = n;
	return k;
}
