/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_reader.c - the serial reader thread: waits for bytes, a packet's deadline or the
 * stop, and says what it may still push. Its reads are in serial_read.c, what it
 * pushes in serial_push.c, the port's open and loss in serial_open.c. */
#include <poll.h>
#include <time.h>

#include "clock.h"
#include "health.h"
#include "libc.h"
#include "relaxed.h"
#include "serial_internal.h"

/* Waits until the stop fd fires or `timeout` (NULL: forever) passes; true = stop. */
static bool wait_stop(struct serial_port *p, const struct timespec *timeout)
{
	struct pollfd pfd = { .fd = p->stop_fd, .events = POLLIN };
	int n;

	health_park(&p->beat);
	n = libc_ppoll(&pfd, 1, timeout, NULL);
	health_unpark(&p->beat);
	return n > 0;
}

/* pass: losses of the relay not yet said (all: at stop), as EV relay-lost lines. */
static void say_relay_lost(struct serial_port *p, bool all)
{
	char text[96];

	while (p->relaying && relay_say(&p->relay, mono_ns(), all, text, sizeof(text)))
		(void)source_event(&p->src, EV_RELAY_LOST, 0, text);
}

/*
 * A port with two directions, before each wait: say what this reader may still
 * push (source.h, horizon), so that the flusher can write the other
 * direction's younger lines: the start of the packet in progress, else nothing
 * older than now. Bytes found after a wait that began with no packet in
 * progress arrived after it began, so they are dated no earlier (reasm_floor).
 * An idle reader wakes every SERIAL_IDLE_MS to say so again; then (and only
 * then: an event dated now must not precede an older packet in the ring) it
 * also pushes a DROP record that waits for a next packet, says relay losses
 * and looks at the application's pty settings.
 */
static void say_horizon(struct serial_port *p, struct timespec *ts, struct timespec **timeout)
{
	int64_t now = mono_ns();
	uint64_t pushed = LD(p->src.records);

	if (p->drv.fd >= 0 && p->reasm.len > 0) {
		source_set_horizon(&p->src, p->reasm.first_mono);
		return;
	}
	/* no packet in progress: events dated now keep the ring in time order */
	say_relay_lost(p, false);
	serial_check_app_settings(p, NULL);
	(void)source_push_drops(&p->src);
	/* a device that holds bytes may hand over some that came before the wait
	 * began: they are dated back as far as its hold, not further, and not
	 * before an event just pushed */
	if (LD(p->src.records) == pushed)
		now -= p->reasm.dev.hold_ns;
	if (p->drv.fd >= 0)
		reasm_floor(&p->reasm, now);
	source_set_horizon(&p->src, now);
	if (*timeout == NULL) {
		*ts = ns_to_ts(SERIAL_IDLE_MS * NS_PER_MS);
		*timeout = ts;
	}
}

void *serial_thread(void *arg)
{
	struct serial_port *p = arg;

	serial_take_held(p);
	for (;;) {
		struct pollfd pfd[4] = {
			{ .fd = p->drv.fd, .events = POLLIN },
			{ .fd = p->stop_fd, .events = POLLIN },
			/* pass: room for what waits to be relayed; a new device descriptor */
			{ .fd = p->relaying ? relay_wants_room(&p->relay) : -1, .events = POLLOUT },
			{ .fd = p->relaying ? p->relay.wake : -1, .events = POLLIN },
		};
		struct timespec ts, *timeout = NULL;
		int64_t deadline, now_mono, now_real;

		if (health_stall_wanted(&p->beat)) {
			health_stall(NULL, p->stop_fd);
			break;
		}
		if (p->drv.fd < 0) {
			if (p->peer != NULL)
				say_horizon(p, &ts, &timeout);  /* nothing in progress while it is gone */
			ts = ns_to_ts(SERIAL_RETRY_MS * NS_PER_MS);
			if (wait_stop(p, &ts))
				break;
			(void)serial_open(p);
			continue;
		}
		deadline = reasm_deadline(&p->reasm);
		if (deadline != INT64_MAX) {
			int64_t left = deadline - mono_ns();
			ts = ns_to_ts(left > 0 ? left : 0);
			timeout = &ts;
		}
		if (p->peer != NULL)
			say_horizon(p, &ts, &timeout);
		health_park(&p->beat);
		(void)libc_ppoll(pfd, 4, timeout, NULL);        /* EINTR: just look again */
		now_mono = mono_ns();
		now_real = real_ns();
		atomic_fetch_add_explicit(&p->wakeups, 1, memory_order_relaxed);
		health_unpark(&p->beat);
		if (pfd[1].revents != 0)
			break;
		if (p->relaying)
			relay_poll(&p->relay, pfd[2].revents != 0);
		/* the first byte had arrived by the wake-up, every byte by the end of
		 * its read; at the deadline, an empty read proves the silence */
		if (pfd[0].revents != 0 || now_mono >= deadline)
			(void)serial_take(p, pfd[0].revents != 0, now_mono, now_real);
	}
	/* Stop: what the kernel holds was sent before the stop; take it all. */
	if (p->drv.fd >= 0)
		(void)serial_take(p, false, mono_ns(), real_ns());
	if (p->drv.fd >= 0)
		serial_port_lost(p, 0, "stop", true);
	if (p->relaying) {
		relay_stop(&p->relay);
		say_relay_lost(p, true);
	}
	return NULL;
}
