/* test_uart.c - the serial port's real-time settings and error counters.
 *
 * No UART here can be made to count frame or parity errors, and a pty has no
 * counters, so TIOCGICOUNT is wrapped (--wrap=ioctl) and scripted; the rest is
 * real: a pty, the termios driver, the reader thread, its ring. TIOCSSERIAL is
 * wrapped to refuse, to show the refusal is reported; that it really sets
 * ASYNC_LOW_LATENCY is shown on the 16550A in test_drv. The FTDI latency timer
 * is a file under a fixture sysfs tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/serial.h>
#include <pty.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "drv.h"
#include "serial.h"

/* what the wrapped ioctl answers: scripted counters, or the real call */
static _Atomic bool fake_icount;
static _Atomic int icount_frame, icount_parity, icount_overrun, icount_brk, icount_buf;
static _Atomic bool fake_serial;       /* TIOCGSERIAL answers, TIOCSSERIAL says EPERM */

int __real_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...);

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == TIOCGICOUNT && atomic_load(&fake_icount)) {
		struct serial_icounter_struct *ic = arg;
		memset(ic, 0, sizeof(*ic));
		ic->frame = atomic_load(&icount_frame);
		ic->parity = atomic_load(&icount_parity);
		ic->overrun = atomic_load(&icount_overrun);
		ic->brk = atomic_load(&icount_brk);
		ic->buf_overrun = atomic_load(&icount_buf);
		return 0;
	}
	if (req == TIOCGSERIAL && atomic_load(&fake_serial)) {
		memset(arg, 0, sizeof(struct serial_struct));
		return 0;
	}
	if (req == TIOCSSERIAL && atomic_load(&fake_serial)) {
		errno = EPERM;
		return -1;
	}
	return __real_ioctl(fd, req, arg);
}

static struct conf_serial pty_conf(char *device)
{
	struct conf_serial c = {
		.name = "u", .baud = 9600, .data_bits = 8, .parity = 'N', .stop_bits = 1,
		.delimiter = '\n', .max_packet = 64, .priority = 0, .cpu = -1,
	};
	snprintf(c.device, sizeof(c.device), "%s", device);
	return c;
}

/* Waits (bounded) until the port's ring holds n records. */
static void wait_records(struct serial_port *p, unsigned n)
{
	for (int i = 0; i < 5000 && ring_ready(&p->src.ring) < n; i++) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	assert_int_equal(ring_ready(&p->src.ring), n);
}

/* Pops one record, checks its kind and EV code, returns its payload as text
 * (static; the head slot's data and the raw slots after it). */
static const char *pop(struct serial_port *p, int kind, int ev)
{
	static char text[SOURCE_EV_MAX + 1];
	const struct rec *r;
	uint32_t slots, len, n;

	assert_true(ring_ready(&p->src.ring) > 0);
	r = &ring_rslot(&p->src.ring, 0)->rec;
	assert_int_equal(r->kind, kind);
	if (kind == REC_EV)
		assert_int_equal(r->a, ev);
	len = r->len < SOURCE_EV_MAX ? r->len : SOURCE_EV_MAX;
	n = len < REC_HEAD_DATA ? len : REC_HEAD_DATA;
	memcpy(text, r->data, n);
	slots = rec_slots(r->len);
	for (uint32_t i = 1; i < slots && n < len; i++) {
		uint32_t k = len - n < REC_SIZE ? len - n : REC_SIZE;
		memcpy(text + n, ring_rslot(&p->src.ring, i)->raw, k);
		n += k;
	}
	text[n] = '\0';
	ring_release(&p->src.ring, slots);
	return text;
}

/* Counters that change while a packet arrives become one EV uart-errors after it. */
static void error_counters_become_events(void **state)
{
	char device[64];
	struct conf_serial c;
	struct serial_port p;
	int master, slave, stop_fd, degraded = 0;
	uint64_t one = 1;
	const char *t;
	static const struct { int add[SERIAL_NERR]; const char *event; } steps[] = {
		{ { 2, 1, 0, 0, 0 }, "frame=2 parity=1 overrun=0 brk=0 buf_overrun=0" },
		{ { 0, 0, 3, 1, 1 }, "frame=0 parity=0 overrun=3 brk=1 buf_overrun=1" },
		{ { 0, 0, 0, 0, 0 }, NULL },        /* unchanged: a packet and nothing else */
	};

	(void)state;
	assert_int_equal(openpty(&master, &slave, device, NULL, NULL), 0);
	close(slave);
	c = pty_conf(device);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	/* the kernel's counters are not zero at open: only changes count */
	atomic_store(&icount_frame, 7);
	atomic_store(&icount_brk, 1);
	atomic_store(&fake_icount, true);
	assert_int_equal(serial_init(&p, &c, 64, stop_fd), 0);
	assert_int_equal(serial_open(&p), 0);
	t = pop(&p, REC_EV, EV_OPEN);
	assert_non_null(strstr(t, " low_latency=n/a"));
	assert_true(p.has_icount);
	assert_int_equal(serial_start(&p, &degraded), 0);

	assert_int_equal(write(master, "ok\n", 3), 3);
	wait_records(&p, 1);
	assert_string_equal(pop(&p, REC_RX, 0), "ok\n");

	/* the counters move while a packet arrives: the packet, then the event */
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		atomic_fetch_add(&icount_frame, steps[i].add[0]);
		atomic_fetch_add(&icount_parity, steps[i].add[1]);
		atomic_fetch_add(&icount_overrun, steps[i].add[2]);
		atomic_fetch_add(&icount_brk, steps[i].add[3]);
		atomic_fetch_add(&icount_buf, steps[i].add[4]);
		assert_int_equal(write(master, "b\0d\n", 4), 4);
		wait_records(&p, steps[i].event ? 2 : 1);
		pop(&p, REC_RX, 0);
		if (steps[i].event != NULL)
			assert_string_equal(pop(&p, REC_EV, EV_UART_ERRORS), steps[i].event);
	}

	assert_int_equal(write(stop_fd, &one, sizeof(one)), sizeof(one));
	serial_join(&p);
	/* the totals since start, for the STAT line */
	assert_int_equal(atomic_load(&p.errors[SERIAL_ERR_FRAME]), 2);
	assert_int_equal(atomic_load(&p.errors[SERIAL_ERR_PARITY]), 1);
	assert_int_equal(atomic_load(&p.errors[SERIAL_ERR_OVERRUN]), 3);
	assert_int_equal(atomic_load(&p.errors[SERIAL_ERR_BRK]), 1);
	assert_int_equal(atomic_load(&p.errors[SERIAL_ERR_BUF_OVERRUN]), 1);
	atomic_store(&fake_icount, false);
	serial_fini(&p);
	close(master);
	close(stop_fd);
}

/* A pty has no counters (ENOTTY): no look per packet, no event. */
static void pty_has_no_counters(void **state)
{
	char device[64];
	struct conf_serial c;
	struct serial_port p;
	int master, slave, stop_fd;

	(void)state;
	assert_int_equal(openpty(&master, &slave, device, NULL, NULL), 0);
	close(slave);
	c = pty_conf(device);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(serial_init(&p, &c, 64, stop_fd), 0);
	assert_int_equal(serial_open(&p), 0);
	assert_false(p.has_icount);
	pop(&p, REC_EV, EV_OPEN);
	assert_int_equal(ring_ready(&p.src.ring), 0);
	serial_fini(&p);
	close(master);
	close(stop_fd);
}

/* A UART that refuses ASYNC_LOW_LATENCY: low_latency=off in EV open, then EV rt-missing. */
static void refused_low_latency_is_reported(void **state)
{
	char device[64];
	struct conf_serial c;
	struct serial_port p;
	int master, slave, stop_fd;
	const struct rec *r;

	(void)state;
	assert_int_equal(openpty(&master, &slave, device, NULL, NULL), 0);
	close(slave);
	c = pty_conf(device);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	atomic_store(&fake_serial, true);
	assert_int_equal(serial_init(&p, &c, 64, stop_fd), 0);
	assert_int_equal(serial_open(&p), 0);
	atomic_store(&fake_serial, false);
	assert_int_equal(p.drv.low_latency, -EPERM);
	assert_non_null(strstr(pop(&p, REC_EV, EV_OPEN), " low_latency=off"));
	r = &ring_rslot(&p.src.ring, 0)->rec;
	assert_int_equal(r->b, EPERM);
	assert_string_equal(pop(&p, REC_EV, EV_RT_MISSING), "item=low_latency need=TIOCSSERIAL");
	serial_fini(&p);
	close(master);
	close(stop_fd);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	assert_non_null(fgets(buf, (int)len, f));
	fclose(f);
}

/* The FTDI latency timer under a fixture sysfs: set to 1, left alone, absent, refused. */
static void ftdi_latency_timer(void **state)
{
	char root[] = "/tmp/portlogd-ftdi-XXXXXX", dir[256], file[300], buf[16];
	int err, status;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(root));
	assert_int_equal(chmod(root, 0755), 0);    /* the unprivileged child reads below it */
	snprintf(dir, sizeof(dir), "%s/sys/bus/usb-serial/devices/ttyUSB3", root);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "mkdir -p %s", dir);
		assert_int_equal(system(cmd), 0);
	}
	snprintf(file, sizeof(file), "%s/latency_timer", dir);

	/* 16 ms, the FTDI default: set to 1 */
	write_file(file, "16\n", 0644);
	assert_int_equal(drv_ftdi_latency(root, "/dev/ttyUSB3", &err), 1);
	assert_int_equal(err, 0);
	read_file(file, buf, sizeof(buf));
	assert_int_equal(atoi(buf), 1);

	/* already 1: nothing written */
	write_file(file, "1\n", 0444);
	assert_int_equal(drv_ftdi_latency(root, "/dev/ttyUSB3", &err), 1);
	assert_int_equal(err, 0);

	/* not an FTDI adapter (no timer), or not a USB serial port at all */
	assert_int_equal(drv_ftdi_latency(root, "/dev/ttyUSB4", &err), -ENODEV);
	assert_int_equal(drv_ftdi_latency(root, "/dev/ttyS0", &err), -ENODEV);

	/* a user who may not write it: the value stays, the refusal is returned */
	write_file(file, "16\n", 0444);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int ms;
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(90);
		ms = drv_ftdi_latency(root, "/dev/ttyUSB3", &err);
		_exit(ms == 16 && err == EACCES ? 0 : 91);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 90)
		skip();     /* not root: cannot become another user */
	assert_int_equal(WEXITSTATUS(status), 0);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(error_counters_become_events),
		cmocka_unit_test(pty_has_no_counters),
		cmocka_unit_test(refused_low_latency_is_reported),
		cmocka_unit_test(ftdi_latency_timer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
