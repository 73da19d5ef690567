/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_lines.c - the lines thread of a port with lines = on: modem-line edges
 * (TIOCMIWAIT), with a ring of its own. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fmt.h"
#include "serial_internal.h"

static void push_lines(struct serial_port *p, int value, int changed)
{
	struct rec r = { .kind = REC_LINES, .t_real = real_ns(), .t_mono = mono_ns(),
			 .a = value, .b = changed };

	(void)source_push(&p->lines_src, &r, NULL, 0);     /* a drop is counted */
}

static void lines_error(struct serial_port *p, int err, const char *op)
{
	char text[64];
	struct fmt_kv kv;

	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_str(&kv, "op", op);
	(void)source_event(&p->lines_src, EV_ERROR, err, text);
}

/*
 * Waits for edges on CTS, DSR, DCD and RI with TIOCMIWAIT and pushes a LINES
 * record for each change; the first value after every (re)open is always
 * pushed. The port's descriptor comes from serial_lines_give at each open (a dup); a hang-up ends
 * the wait with an error and the thread waits for the next descriptor.
 */
void *serial_lines_thread(void *arg)
{
	struct serial_port *p = arg;
	int fd = -1, prev = -1;

	while (!atomic_load(&p->lines_stop)) {
		int m, rc;

		if (fd < 0) {
			struct pollfd pfd[2] = {
				{ .fd = p->lines_wake, .events = POLLIN },
				{ .fd = p->stop_fd, .events = POLLIN },
			};
			uint64_t v;

			fd = atomic_exchange(&p->lines_fd, -1);
			if (fd >= 0) {
				prev = -1;
				continue;
			}
			health_park(&p->lines_beat);
			(void)poll(pfd, 2, -1);     /* EINTR: look again */
			health_unpark(&p->lines_beat);
			if (pfd[1].revents != 0)
				break;
			(void)eventfd_read(p->lines_wake, &v);     /* clears the wake-up */
			continue;
		}
		if (prev < 0) {
			if (ioctl(fd, TIOCMGET, &m) < 0) {
				lines_error(p, errno, "TIOCMGET");
				close(fd);
				fd = -1;
				continue;
			}
			prev = drv_lines_map(m);
			push_lines(p, prev, prev);
		}
		if (health_stall_wanted(&p->lines_beat)) {
			health_stall(&p->lines_stop, -1);   /* serial_join's SIGUSR1 ends its poll */
			continue;
		}
		health_park(&p->lines_beat);
		rc = ioctl(fd, TIOCMIWAIT, TIOCM_RNG | TIOCM_DSR | TIOCM_CD | TIOCM_CTS);
		health_unpark(&p->lines_beat);
		if (rc < 0) {
			if (errno == EINTR)
				continue;           /* serial_join's SIGUSR1, or a stray signal */
			lines_error(p, errno, "TIOCMIWAIT");
			close(fd);
			fd = -1;
			continue;
		}
		if (ioctl(fd, TIOCMGET, &m) < 0)
			continue;               /* the next TIOCMIWAIT reports the failure */
		m = drv_lines_map(m);
		/* an edge that went back before TIOCMGET leaves m == prev: nothing to log */
		if (m != prev)
			push_lines(p, m, m ^ prev);
		prev = m;
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

void serial_lines_give(struct serial_port *p)
{
	/* the lines thread gets its own descriptor of the same open port */
	int old, fd = fcntl(p->drv.fd, F_DUPFD_CLOEXEC, 0);

	old = atomic_exchange(&p->lines_fd, fd);
	if (old >= 0)
		close(old);     /* never taken: the port was lost again meanwhile */
	(void)eventfd_write(p->lines_wake, 1);     /* an eventfd add cannot fail */
}

void serial_lines_join(struct serial_port *p)
{
	if (!p->lines_thread.started)
		return;
	atomic_store(&p->lines_stop, true);
	/* TIOCMIWAIT only ends on an edge or a signal; a signal sent just before
	 * the thread enters it is missed, so send it until the thread is gone */
	for (;;) {
		struct timespec ts;

		(void)pthread_kill(p->lines_thread.id, SIGUSR1);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * NS_PER_MS;
		if (ts.tv_nsec >= NS_PER_S) {
			ts.tv_sec++;
			ts.tv_nsec -= NS_PER_S;
		}
		if (pthread_timedjoin_np(p->lines_thread.id, NULL, &ts) == 0)
			break;
	}
	p->lines_thread.started = false;
}
