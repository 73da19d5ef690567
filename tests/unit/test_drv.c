/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_drv.c - the serial drivers: which one a device gets, and what they configure. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pty.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <linux/serial.h>

#include <cmocka.h>

#include "drv.h"

struct pty {
	int master;
	char slave[64];
	char link[128];
};

static void make_pty(struct pty *p)
{
	int slave;

	assert_int_equal(openpty(&p->master, &slave, p->slave, NULL, NULL), 0);
	close(slave);
	snprintf(p->link, sizeof(p->link), "/tmp/portlogd-test-drv-%d", (int)getpid());
	unlink(p->link);
	assert_int_equal(symlink(p->slave, p->link), 0);
}

static void free_pty(struct pty *p)
{
	close(p->master);
	unlink(p->link);
}

/* 7E2 with RTS/CTS; a pty keeps only CS8 without parity (the kernel's pty_set_termios) */
static const struct drv_serial_config serial_7e2 = {
	.baud = 9600, .data_bits = 7, .parity = 'E', .stop_bits = 2, .flow = DRV_FLOW_RTSCTS,
};

static void check_termios(int fd, speed_t speed, bool rtscts, bool pty)
{
	struct termios t;

	assert_int_equal(tcgetattr(fd, &t), 0);
	assert_int_equal(cfgetispeed(&t), speed);
	assert_int_equal(t.c_cflag & CSIZE, pty ? CS8 : CS7);
	assert_int_equal(!!(t.c_cflag & PARENB), !pty);
	assert_false(t.c_cflag & PARODD);
	assert_true(t.c_cflag & CSTOPB);
	assert_true(t.c_cflag & CREAD);
	assert_int_equal(!!(t.c_cflag & CRTSCTS), rtscts);
	assert_false(t.c_lflag & (ICANON | ECHO | ISIG));   /* raw: bytes pass untouched */
	/* an empty read must say EAGAIN, not 0, which is how a hang-up reads */
	assert_int_equal(t.c_cc[VMIN], 1);
	assert_int_equal(t.c_cc[VTIME], 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
}

/* A pty, through a symlink as /dev/serial/by-id would be: termios driver, raw, readable. */
static void pty_gets_termios(void **state)
{
	struct pty p;
	struct drv_serial port;
	const char *note;
	char buf[16];

	(void)state;
	make_pty(&p);
	assert_int_equal(drv_serial_open(p.link, &serial_7e2, -1, 0, &port, &note), 0);
	assert_ptr_equal(port.ops, &drv_serial_tty);
	assert_string_equal(note, "pty");
	/* a pty has no UART settings and no FTDI timer: neither is an error */
	assert_int_equal(port.low_latency, 0);
	assert_int_equal(port.latency_timer, -ENODEV);
	assert_int_equal(port.latency_err, 0);
	assert_string_equal(port.path, p.slave);
	check_termios(port.fd, B9600, true, true);
	assert_int_equal(write(p.master, "a\r\nb", 4), 4);
	/* the read waits for the tty's flip buffer, so the bytes are there at once */
	assert_int_equal(read(port.fd, buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "a\r\nb", 4);
	assert_int_equal(read(port.fd, buf, sizeof(buf)), -1);
	assert_int_equal(errno, EAGAIN);
	drv_serial_close(&port);
	assert_int_equal(port.fd, -1);
	free_pty(&p);
}

/* A port is ours alone: a second logger (or tio, minicom) gets EBUSY. */
static void second_open_is_busy(void **state)
{
	struct pty p;
	struct drv_serial a, b;

	(void)state;
	make_pty(&p);
	assert_int_equal(drv_serial_open(p.link, &serial_7e2, -1, 0, &a, NULL), 0);
	assert_int_equal(drv_serial_open(p.link, &serial_7e2, -1, 0, &b, NULL), -EBUSY);
	assert_int_equal(b.fd, -1);     /* no number of a closed descriptor left behind */
	assert_null(b.ops);
	drv_serial_close(&a);
	assert_int_equal(drv_serial_open(p.link, &serial_7e2, -1, 0, &b, NULL), 0);
	drv_serial_close(&b);
	free_pty(&p);
}

static void missing_device(void **state)
{
	struct drv_serial port;

	(void)state;
	assert_int_equal(drv_serial_open("/dev/portlogd-no-such-port", &serial_7e2, -1, 0, &port, NULL),
			 -ENOENT);
	assert_null(port.ops);
	drv_serial_close(&port);    /* harmless on a port that did not open */
}

/* A real UART (the VM's 16550A) through a symlink: libserialport configures it. */
static void uart_gets_libserialport(void **state)
{
	const char *dev = getenv("PORTLOGD_TEST_UART") ? getenv("PORTLOGD_TEST_UART") : "/dev/ttyS0";
	struct serial_struct ss;
	struct termios saved;
	struct drv_serial_config c = serial_7e2;
	struct drv_serial port;
	char link[64];
	int fd;

	(void)state;
	/* tests/pkg/arch.sh runs the unit tests of arm64 and armhf under qemu-user and says so */
	if (getenv("PORTLOGD_TEST_EMULATOR") != NULL) {
		printf("# under %s: skipped: qemu-user (7.2, Debian 12) copies only the first int "
		       "(type) of struct serial_struct for TIOCGSERIAL, so the UART's flags "
		       "can be neither read nor set\n", getenv("PORTLOGD_TEST_EMULATOR"));
		skip();
	}
	fd = open(dev, O_RDWR | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || ioctl(fd, TIOCGSERIAL, &ss) < 0 || ss.type == PORT_UNKNOWN) {
		if (fd >= 0)
			close(fd);
		printf("# no UART at %s: skipped\n", dev);
		skip();
	}
	assert_int_equal(tcgetattr(fd, &saved), 0);
	/* start without ASYNC_LOW_LATENCY, so that the driver must set it */
	{
		struct serial_struct off = ss;
		off.flags &= ~ASYNC_LOW_LATENCY;
		assert_int_equal(ioctl(fd, TIOCSSERIAL, &off), 0);
	}
	snprintf(link, sizeof(link), "/tmp/portlogd-test-uart-%d", (int)getpid());
	unlink(link);
	assert_int_equal(symlink(dev, link), 0);
	c.baud = 19200;
	assert_int_equal(drv_serial_open(link, &c, -1, 0, &port, NULL), 0);
	assert_ptr_equal(port.ops, &drv_serial_sp);
	assert_string_equal(port.path, dev);
	check_termios(port.fd, B19200, true, false);
	{
		/* busy: libserialport had opened and handed out its descriptor before
		 * the lock failed; that closed number must not stay in busy.fd */
		struct drv_serial busy;

		assert_int_equal(drv_serial_open(link, &c, -1, 0, &busy, NULL), -EBUSY);
		assert_int_equal(busy.fd, -1);
		assert_null(busy.ops);
		/* and the attempt left the holder's settings alone (termios is the tty's) */
		check_termios(port.fd, B19200, true, false);
	}
	{
		struct serial_struct now;
		assert_int_equal(port.low_latency, 1);
		assert_int_equal(ioctl(port.fd, TIOCGSERIAL, &now), 0);
		assert_true(now.flags & ASYNC_LOW_LATENCY);
	}
	{
		char b;
		assert_int_equal(read(port.fd, &b, 1), -1);
		assert_int_equal(errno, EAGAIN);
	}
	drv_serial_close(&port);
	c.flow = DRV_FLOW_XONXOFF;
	assert_int_equal(drv_serial_open(link, &c, -1, 0, &port, NULL), 0);
	check_termios(port.fd, B19200, false, false);
	{
		struct termios t;
		assert_int_equal(tcgetattr(port.fd, &t), 0);
		assert_int_equal(t.c_iflag & (IXON | IXOFF), IXON | IXOFF);
	}
	drv_serial_close(&port);
	unlink(link);
	(void)tcsetattr(fd, TCSANOW, &saved);   /* leave the port as we found it */
	(void)ioctl(fd, TIOCSSERIAL, &ss);
	close(fd);
}

/* The UART's receive trigger level as sysfs shows it, or -1 (rx_trig_bytes: 16550A). */
static int trig_of(const char *tty)
{
	char path[128], buf[16] = "";
	int fd, n;

	snprintf(path, sizeof(path), "/sys/class/tty/%s/rx_trig_bytes", tty);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : -1;
}

static void set_trig(const char *tty, int level)
{
	char path[128], buf[16];
	int fd, n = snprintf(buf, sizeof(buf), "%d\n", level);

	snprintf(path, sizeof(path), "/sys/class/tty/%s/rx_trig_bytes", tty);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, (size_t)n), n);
	close(fd);
}

/*
 * A port kept across a restart (the daemon's fdstore.c): the store's duplicate of
 * the keeper keeps the UART open and locked after the process closed its own
 * descriptors, without the trigger level put back; the next process takes the
 * keeper back (kept), libserialport opens the port beside it with the new config's
 * settings, and the level is not written (that would empty the FIFO): here it was
 * changed meanwhile and stays as it is. The last close puts back the level found
 * first.
 */
static void uart_kept_is_taken_back(void **state)
{
	const char *dev = getenv("PORTLOGD_TEST_UART") ? getenv("PORTLOGD_TEST_UART") : "/dev/ttyS0";
	const char *tty = strrchr(dev, '/') + 1;
	struct drv_serial_config c = serial_7e2;
	struct serial_struct ss;
	struct drv_serial port, busy;
	struct termios saved;
	char link[64];
	int fd, keeper, level0, found;

	(void)state;
	fd = open(dev, O_RDWR | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || ioctl(fd, TIOCGSERIAL, &ss) < 0 || ss.type == PORT_UNKNOWN
	    || (level0 = trig_of(tty)) < 0 || getuid() != 0) {
		if (fd >= 0)
			close(fd);
		printf("# no UART with rx_trig_bytes at %s, or not root: skipped\n", dev);
		skip();
	}
	assert_int_equal(tcgetattr(fd, &saved), 0);
	close(fd);          /* the test's own descriptor would keep the port open */
	snprintf(link, sizeof(link), "/tmp/portlogd-test-kept-%d", (int)getpid());
	unlink(link);
	assert_int_equal(symlink(dev, link), 0);
	c.baud = 19200;
	c.rx_trigger = DELIVERY_TRIGGER_AUTO;
	if (level0 == 1)
		set_trig(tty, level0 = 8);     /* something for auto to change */
	assert_int_equal(drv_serial_open(link, &c, -1, 0, &port, NULL), 0);
	assert_int_equal(port.kept, DRV_KEPT_NONE);
	assert_int_equal(trig_of(tty), 1);
	found = (int)port.dlv.trigger_found;
	assert_int_equal(found, level0);
	/* the process stops; the store holds a duplicate of the keeper */
	keeper = dup(port.lock_fd);
	assert_true(keeper >= 0);
	port.stored = true;
	drv_serial_close(&port);
	assert_int_equal(trig_of(tty), 1);      /* not put back: the port is still open */
	assert_int_equal(drv_serial_open(link, &c, -1, 0, &busy, NULL), -EBUSY);   /* still ours */
	set_trig(tty, 4);
	/* the next process, with another baud rate */
	c.baud = 9600;
	assert_int_equal(drv_serial_open(link, &c, keeper, 0, &port, NULL), 0);
	assert_int_equal(port.kept, DRV_KEPT_YES);
	assert_int_equal(port.lock_fd, keeper);
	assert_ptr_equal(port.ops, &drv_serial_sp);
	check_termios(port.fd, B9600, true, false);
	assert_int_equal(trig_of(tty), 4);      /* left alone */
	assert_int_equal(port.dlv.trigger, 4);
	assert_int_equal(drv_serial_open(link, &c, -1, 0, &busy, NULL), -EBUSY);
	/* for good now: the level found first (the state page carries it) goes back */
	port.dlv.trigger_found = (unsigned)found;
	drv_serial_close(&port);
	assert_int_equal(trig_of(tty), found);
	unlink(link);
	fd = open(dev, O_RDWR | O_NOCTTY | O_NONBLOCK);
	if (fd >= 0) {
		(void)tcsetattr(fd, TCSANOW, &saved);   /* leave the port as we found it */
		close(fd);
	}
}

/* A kept pty whose master closed meanwhile (unplugged) is dropped, and one of
 * another device than the config names is too: the port opens anew. */
static void pty_kept_gone(void **state)
{
	struct pty p, q;
	struct drv_serial port;
	int keeper;

	(void)state;
	make_pty(&p);
	assert_int_equal(drv_serial_open(p.link, &serial_7e2, -1, 0, &port, NULL), 0);
	keeper = dup(port.lock_fd);
	port.stored = true;
	drv_serial_close(&port);
	close(p.master);                /* the device goes away */
	make_pty(&q);                   /* and another comes under the same link */
	assert_int_equal(drv_serial_open(q.link, &serial_7e2, keeper, 0, &port, NULL), 0);
	assert_int_equal(port.kept, DRV_KEPT_HUNG_UP);
	assert_string_equal(port.path, q.slave);
	keeper = dup(port.lock_fd);
	port.stored = true;
	drv_serial_close(&port);
	make_pty(&p);                   /* q stays, the link names another pty */
	assert_int_equal(drv_serial_open(p.link, &serial_7e2, keeper, 0, &port, NULL), 0);
	assert_int_equal(port.kept, DRV_KEPT_OTHER);
	assert_string_equal(port.path, p.slave);
	drv_serial_close(&port);
	free_pty(&p);
	close(q.master);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pty_gets_termios),
		cmocka_unit_test(second_open_is_busy),
		cmocka_unit_test(missing_device),
		cmocka_unit_test(uart_gets_libserialport),
		cmocka_unit_test(uart_kept_is_taken_back),
		cmocka_unit_test(pty_kept_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
