/* SPDX-License-Identifier: GPL-2.0-or-later */
/* clocksensor.c - the RTC's seconds timed on CLOCK_MONOTONIC, by a thread of their own (clocksensor.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/rtc.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "clocksensor.h"
#include "fmt.h"
#include "parts.h"
#include "relaxed.h"
#include "rootfs.h"

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

/* The first line of ROOT/rel that holds one of the words, copied to why. */
static bool file_says(const char *root, const char *rel, const char *const *words, char *why,
		      size_t len)
{
	char path[512], line[4096];
	bool found = false;
	FILE *fp;

	rootfs_path(root, path, sizeof(path), "%s", rel);
	fp = fopen(path, "re");
	if (fp == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), fp) != NULL)
		for (const char *const *w = words; *w != NULL && !found; w++)
			if (strstr(line, *w) != NULL) {
				snprintf(why, len, "%s: %s", rel, **w != '\0' ? *w : line);
				found = true;
			}
	fclose(fp);
	return found;
}

bool clock_sensor_virtual(const char *root, char *why, size_t len)
{
	/* systemd-detect-virt's first looks, for the cases portlogd meets; libsystemd has
	 * no call for it (sd-device's is internal) */
	static const char *const flag[] = { " hypervisor", NULL };
	static const char *const any[] = { "", NULL };
	static const char *const vendor[] = { "QEMU", "KVM", "VMware", "innotek", "Xen",
					      "Microsoft Corporation", "Parallels", "Amazon EC2",
					      "Google", "OpenStack", "Bochs", "BHYVE", NULL };

	return file_says(root, "/proc/cpuinfo", flag, why, len)
	       || file_says(root, "/sys/hypervisor/type", any, why, len)
	       || file_says(root, "/sys/class/dmi/id/sys_vendor", vendor, why, len)
	       || file_says(root, "/sys/class/dmi/id/product_name", vendor, why, len);
}

static void clock_stat(const void *obj, struct fmt_kv *kv)
{
	const struct clock_sensor *c = obj;

	fmt_kv_u64(kv, "updates", LD(c->updates));
	fmt_kv_u64(kv, "stops", LD(c->nstops));
	fmt_kv_i64(kv, "lost_us", LD(c->lost_ns) / 1000);
	fmt_kv_i64(kv, "lost_max_us", LD(c->lost_max_ns) / 1000);
	fmt_kv_i64(kv, "spread_us", LD(c->spread_ns) / 1000);
	fmt_kv_u64(kv, "marked", LD(c->marked));
	fmt_kv_u64(kv, "unvouched", LD(c->unvouched));
	parts_put_faults(kv, "", &c->thread);
}

bool clock_sensor_parts(struct clock_sensor *c, struct parts *ps)
{
	return parts_add(ps, &(struct part){ .kind = PART_CLOCK, .obj = c, .stat = clock_stat },
			 NULL);
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

void clock_sensor_settle(struct clock_sensor *c, int64_t t)
{
	int64_t give_up = mono_ns() + 3 * NS_PER_S / 2;

	if (!c->thread.started)
		return;
	while (atomic_load_explicit(&c->horizon, memory_order_acquire) <= t && mono_ns() < give_up) {
		struct timespec ts = { .tv_nsec = 10 * NS_PER_MS };

		(void)nanosleep(&ts, NULL);     /* at stop, once: a poll would need the thread's fd */
	}
}

void clock_view_look(struct clock_view *v)
{
	struct clockwatch_stop got[CLOCK_SENSOR_STOPS];
	unsigned k;

	if (v->c == NULL)
		return;
	/* the horizon first (acquire): the stops it vouches for are published by then */
	v->horizon = atomic_load_explicit(&v->c->horizon, memory_order_acquire);
	k = clock_sensor_stops(v->c, &v->seen, got, CLOCK_SENSOR_STOPS);
	for (unsigned i = 0; i < k; i++) {
		if (v->n == CLOCK_SENSOR_STOPS) {       /* the oldest goes */
			memmove(v->stops, v->stops + 1, (CLOCK_SENSOR_STOPS - 1) * sizeof(v->stops[0]));
			v->n--;
		}
		v->stops[v->n++] = got[i];
	}
}

bool clock_waits(const struct clock_view *v, const struct clock_line *l, int64_t now)
{
	/* one byte cannot hide a silence: it never waits */
	return v->c != NULL && l->len > 1 && l->read_by > v->horizon
	       && now - l->read_by < CLOCK_SILENT_NS;
}

enum clock_verdict clock_judge(struct clock_view *v, struct clock_doubt *d,
			       const struct clock_line *l, int64_t now, bool final, int64_t *wait_ns)
{
	bool marked;

	if (v->c == NULL)
		return CLOCK_PASS;
	if (l->read_by > v->horizon && l->len > 1) {
		if (!final && clock_waits(v, l, now))
			return CLOCK_HOLD;
		/* the sensor said nothing for so long: its thread stopped, or the RTC did */
		atomic_fetch_add_explicit(&v->c->unvouched, 1, memory_order_relaxed);
		*wait_ns = now - (v->horizon > 0 && v->horizon < l->read_by ? v->horizon : l->read_by);
		return CLOCK_MARK;
	}
	/* the stops whose window began before the line's last read (the oldest kept is the
	 * sensor's CLOCK_SENSOR_STOPS-th latest: a second each at least, and a line is
	 * judged within seconds); a line of one byte goes at once, and a stop not said yet
	 * applies to the next line */
	for (unsigned i = 0; i < v->n; i++) {
		const struct clockwatch_stop *st = &v->stops[i];

		if (st->to <= d->applied)
			continue;
		if (st->from >= l->read_by)
			break;
		d->applied = st->to;
		d->until = st->to;
		d->lost = st->lost;
	}
	/* a pause only shortens silences: one byte cannot hide one */
	marked = d->until != 0 && l->len > 1;
	*wait_ns = d->lost;
	if (d->until != 0 && l->silence_read > d->until)
		d->until = 0;   /* a silence read after the stop: the backlog was out */
	if (marked)
		atomic_fetch_add_explicit(&v->c->marked, 1, memory_order_relaxed);
	return marked ? CLOCK_MARK : CLOCK_PASS;
}
