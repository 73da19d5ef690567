/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_lines.c - [serial] lines = on: the TIOCMIWAIT thread, with the modem lines scripted.
 *
 * No hardware here can change modem lines (QEMU and Firecracker UARTs keep them
 * fixed, ptys have none), so TIOCMGET and TIOCMIWAIT are wrapped (--wrap=ioctl):
 * the test sets the lines and releases one TIOCMIWAIT per edge. The rest of the
 * port is real: a pty, the termios driver, the reader and lines threads.
 */
#include <errno.h>
#include <pty.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "serial.h"
#include "wrap.h"

static _Atomic int lines;          /* TIOCM_* bits the wrapped TIOCMGET reports */
static sem_t edge;                  /* one post releases one TIOCMIWAIT */

int REAL(ioctl)(int fd, unsigned long req, ...);
int WRAP(ioctl)(int fd, unsigned long req, ...);

int WRAP(ioctl)(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == TIOCMGET) {
		*(int *)arg = atomic_load(&lines);
		return 0;
	}
	if (req == TIOCMIWAIT)
		return sem_wait(&edge);     /* EINTR on serial_join's SIGUSR1 */
	return REAL(ioctl)(fd, req, arg);
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* Waits (bounded) until the lines ring holds n records. */
static void wait_records(struct serial_port *p, unsigned n)
{
	for (int i = 0; i < 5000 && atomic_load(&p->lines_src.records) < n; i++) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	assert_int_equal(atomic_load(&p->lines_src.records), n);
}

static void edges_become_lines_records(void **state)
{
	static const struct { int tiocm; int value; int changed; } steps[] = {
		{ TIOCM_CTS, 0x1, 0x1 },                        /* the first value */
		{ TIOCM_CTS | TIOCM_DSR, 0x3, 0x2 },
		{ TIOCM_DSR | TIOCM_CAR, 0x6, 0x5 },
		{ TIOCM_DSR | TIOCM_CAR | TIOCM_RNG, 0xe, 0x8 },
		{ TIOCM_DSR | TIOCM_CAR | TIOCM_RNG, 0xe, 0 },  /* an edge that went back: no record */
		{ 0, 0x0, 0xe },
	};
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct conf_serial c = {
		.name = "m", .tty = { .baud = 9600, .data_bits = 8, .parity = 'N', .stop_bits = 1 },
		.delimiter = -1, .max_packet = 64, .lines = true, .priority = 0,
	};
	struct serial_port p;
	int master, slave, stop_fd, degraded = 0;
	uint64_t one = 1;
	unsigned want = 0;

	(void)state;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sem_init(&edge, 0, 0);
	assert_int_equal(openpty(&master, &slave, c.device, NULL, NULL), 0);
	close(slave);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	conf_resolve_serial(&c);
	assert_int_equal(serial_init(&p, &c, 64, stop_fd, NULL), 0);
	atomic_store(&lines, steps[0].tiocm);
	assert_int_equal(serial_open(&p), 0);
	assert_int_equal(serial_start(&p, &degraded), 0);
	wait_records(&p, ++want);
	for (size_t i = 1; i < sizeof(steps) / sizeof(steps[0]); i++) {
		atomic_store(&lines, steps[i].tiocm);
		sem_post(&edge);
		if (steps[i].changed != 0)
			wait_records(&p, ++want);
	}
	/* the thread now blocks in TIOCMIWAIT: stopping must still end it */
	assert_int_equal(write(stop_fd, &one, sizeof(one)), sizeof(one));
	serial_join(&p);
	assert_int_equal(atomic_load(&p.lines_src.records), want);
	for (size_t i = 0, k = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct rec *r;

		if (i > 0 && steps[i].changed == 0)
			continue;
		assert_true(ring_ready(&p.lines_src.ring) > 0);
		r = &ring_rslot(&p.lines_src.ring, 0)->rec;
		assert_int_equal(r->kind, REC_LINES);
		if (r->a != steps[i].value || r->b != steps[i].changed)
			fail_msg("record %zu: value 0x%llx changed 0x%llx, want 0x%x 0x%x", k,
				 (long long)r->a, (long long)r->b, steps[i].value, steps[i].changed);
		ring_release(&p.lines_src.ring, 1);
		k++;
	}
	serial_fini(&p);
	close(master);
	close(stop_fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(edges_become_lines_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
