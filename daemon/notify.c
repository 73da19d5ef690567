/* SPDX-License-Identifier: GPL-2.0-or-later */
/* notify.c - sd_notify: readiness, live status, the watchdog, reload and stop. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "clock.h"
#include "clockq.h"
#include "log.h"
#include "notify.h"
#include "relaxed.h"

#define STALL_TEST_AFTER_PINGS 2   /* healthy pings before PORTLOGD_TEST_STALL bites */

void notify_init(struct notify *n, struct parts *ps)
{
	const char *stall = getenv("PORTLOGD_TEST_STALL");
	uint64_t usec = 0;

	memset(n, 0, sizeof(*n));
	n->timer_fd = -1;
	n->stalled = -1;
	atomic_init(&n->withheld, false);
	n->parts = ps;
	n->enabled = getenv("NOTIFY_SOCKET") != NULL;
	/* 0: do not unset the variables; > 0 only when WATCHDOG_PID is us (or unset) */
	if (n->enabled && sd_watchdog_enabled(0, &usec) > 0)
		n->watchdog_usec = usec;
	if (stall != NULL && *stall != '\0') {
		if (health_find(ps->probe, ps->nprobe, stall) < 0)
			log_warn("PORTLOGD_TEST_STALL=%s names no thread, ignoring", stall);
		else
			n->stall_test = stall;
	}
}

void notify_fini(struct notify *n)
{
	if (n->timer_fd >= 0)
		close(n->timer_fd);
	n->timer_fd = -1;
}

void notify_count(const void *obj, struct part_counts *c)
{
	const struct notify *n = obj;

	c->withheld = LD(n->withheld);
}

void notify_figures(const struct notify *n, struct notify_figures *fig)
{
	const struct parts *ps = n->parts;

	memset(fig, 0, sizeof(*fig));
	fig->timer_max_us = -1;
	for (unsigned i = 0; i < ps->n; i++) {
		const struct part *p = &ps->part[i];
		struct part_counts c = { .latency_max_us = -1 };

		/* the ports' rings (not main's own) */
		if (p->port != NULL && p->src != NULL) {
			fig->records += LD(p->src->records);
			fig->drops += LD(p->src->dropped);
		}
		if (p->count == NULL)
			continue;
		p->count(p->obj, &c);
		fig->ports += c.port;
		fig->ports_up += c.port && c.up;
		fig->overruns += c.overruns;
		fig->lines += c.lines;
		if (c.latency_max_us > fig->timer_max_us)
			fig->timer_max_us = c.latency_max_us;
		if (c.clock != CLOCKQ_NOT_READ) {
			fig->clock = c.clock;
			fig->clock_maxerror_us = c.clock_maxerror_us;
		}
	}
	if (n->rt != NULL)
		rt_summary(n->rt, fig->rt, sizeof(fig->rt));
	fig->stalled = n->stalled >= 0 ? ps->probe[n->stalled].name : NULL;
}

size_t notify_status_text(char *buf, size_t len, const struct notify_figures *fig)
{
	int k = 0;

	if (fig->stalled != NULL)
		k = snprintf(buf, len, "watchdog withheld: thread %s stalled; ", fig->stalled);
	if (k >= 0 && (size_t)k < len && fig->ports == 0)
		k += snprintf(buf + k, len - (size_t)k, "no port configured: logging nothing; add a "
			      "[serial NAME] section (portlogd.conf(5))");
	else if (k >= 0 && (size_t)k < len)
		k += snprintf(buf + k, len - (size_t)k,
			      "%u/%u ports up, %" PRIu64 " records, %" PRIu64 " drops, %" PRIu64
			      " overruns, %" PRIu64 " lines", fig->ports_up, fig->ports,
			      fig->records, fig->drops, fig->overruns, fig->lines);
	if (fig->timer_max_us >= 0 && k >= 0 && (size_t)k < len)
		k += snprintf(buf + k, len - (size_t)k, ", timer max %" PRId64 " us",
			      fig->timer_max_us);
	if (fig->rt[0] != '\0' && k >= 0 && (size_t)k < len)
		k += snprintf(buf + k, len - (size_t)k, ", %s", fig->rt);
	if (fig->clock == CLOCKQ_UNSYNCED && k >= 0 && (size_t)k < len)
		k += snprintf(buf + k, len - (size_t)k, ", clock not synchronised (max error %"
			      PRId64 " ms)", fig->clock_maxerror_us / 1000);
	else if (fig->clock == CLOCKQ_UNKNOWN && k >= 0 && (size_t)k < len)
		k += snprintf(buf + k, len - (size_t)k, ", clock state unknown");
	if (k < 0)
		k = 0;
	return (size_t)k < len ? (size_t)k : len - 1;
}

static void send_status(struct notify *n, const char *prefix)
{
	struct notify_figures fig;
	char text[512];

	notify_figures(n, &fig);
	(void)notify_status_text(text, sizeof(text), &fig);
	/* a failed send cannot be reported to anyone who would listen */
	(void)sd_notifyf(0, "%sSTATUS=%s", prefix, text);
	n->next_status = mono_ns() + NOTIFY_STATUS_S * NS_PER_S;
}

int notify_ready(struct notify *n)
{
	int64_t tick = NOTIFY_STATUS_S * NS_PER_S;
	struct itimerspec its;
	char prefix[64];

	if (!n->enabled)
		return 0;
	for (unsigned i = 0; i < n->parts->nprobe; i++)
		n->parts->probe[i].seen = atomic_load(&n->parts->probe[i].beat->beats);
	/* MAINPID: we do not fork under systemd, but it costs nothing to be explicit */
	snprintf(prefix, sizeof(prefix), "READY=1\nMAINPID=%lu\n", (unsigned long)getpid());
	send_status(n, prefix);
	if (n->watchdog_usec > 0 && (int64_t)n->watchdog_usec * NS_PER_US / 2 < tick)
		tick = (int64_t)n->watchdog_usec * NS_PER_US / 2;
	n->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (n->timer_fd < 0)
		return -errno;
	its.it_value = its.it_interval = ns_to_ts(tick);
	if (timerfd_settime(n->timer_fd, 0, &its, NULL) < 0)
		return -errno;
	return 0;
}

static void watchdog(struct notify *n)
{
	struct health_probe *probe = n->parts->probe;
	int stalled = health_check(probe, n->parts->nprobe);

	if (stalled >= 0) {
		if (stalled != n->stalled) {
			n->stalled = stalled;
			atomic_store_explicit(&n->withheld, true, memory_order_relaxed);
			log_warn("thread %s made no progress in %" PRIu64 " ms and is not waiting; "
				 "withholding WATCHDOG=1 so that systemd restarts the service",
				 probe[stalled].name, n->watchdog_usec / 2000);
			send_status(n, "");
		}
		return;
	}
	if (n->stalled >= 0) {
		log_info("thread %s makes progress again", probe[n->stalled].name);
		n->stalled = -1;
		atomic_store_explicit(&n->withheld, false, memory_order_relaxed);
		send_status(n, "");
	}
	(void)sd_notify(0, "WATCHDOG=1");
	if (++n->pings == STALL_TEST_AFTER_PINGS && n->stall_test != NULL) {
		int i = health_find(probe, n->parts->nprobe, n->stall_test);

		log_warn("PORTLOGD_TEST_STALL: stalling thread %s (a test hook)", n->stall_test);
		atomic_store(&probe[i].beat->stall, true);
	}
}

void notify_tick(struct notify *n)
{
	uint64_t expirations;

	if (read(n->timer_fd, &expirations, sizeof(expirations)) < 0)
		return;     /* EAGAIN: poll raced with nothing; the next tick comes */
	if (n->watchdog_usec > 0)
		watchdog(n);
	if (mono_ns() >= n->next_status)
		send_status(n, "");
}

void notify_reloading(struct notify *n)
{
	if (n->enabled)
		(void)sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%lld"
				 "\nSTATUS=reopening the log file", (long long)(mono_ns() / NS_PER_US));
}

void notify_reloaded(struct notify *n)
{
	if (n->enabled)
		send_status(n, "READY=1\n");
}

void notify_stopping(struct notify *n)
{
	if (n->enabled)
		(void)sd_notify(0, "STOPPING=1\nSTATUS=stopping: draining the rings");
}
