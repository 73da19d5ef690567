/* SPDX-License-Identifier: GPL-2.0-or-later */
/* health.c - per-thread progress checks for the systemd watchdog. */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "health.h"

#define STALL_STEP_MS 10

void health_stall(const _Atomic bool *stop, int stop_fd)
{
	for (;;) {
		struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };

		if (stop != NULL && atomic_load(stop))
			return;
		/* poll ignores a negative fd: then this is just a 10 ms sleep */
		if (poll(&pfd, 1, STALL_STEP_MS) > 0)
			return;
	}
}

void health_probe_init(struct health_probe *p, struct health_beat *b, const char *kind,
		       const char *port)
{
	if (port != NULL)
		snprintf(p->name, sizeof(p->name), "%s:%s", kind, port);
	else
		snprintf(p->name, sizeof(p->name), "%s", kind);
	p->beat = b;
	p->seen = atomic_load_explicit(&b->beats, memory_order_relaxed);
}

int health_check(struct health_probe *p, unsigned n)
{
	int stalled = -1;

	for (unsigned i = 0; i < n; i++) {
		/* parked first, with acquire: pairs with the release in health_unpark */
		bool parked = atomic_load_explicit(&p[i].beat->parked, memory_order_acquire);
		uint64_t beats = atomic_load_explicit(&p[i].beat->beats, memory_order_relaxed);

		if (!health_alive(p[i].seen, beats, parked) && stalled < 0)
			stalled = (int)i;
		p[i].seen = beats;
	}
	return stalled;
}

int health_find(const struct health_probe *p, unsigned n, const char *name)
{
	for (unsigned i = 0; i < n; i++)
		if (strcmp(p[i].name, name) == 0)
			return (int)i;
	return -1;
}
