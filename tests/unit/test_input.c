/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_input.c - the ieee1284 and lines input drivers: opening, errors, bit layout. */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sched.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>
#include <ieee1284.h>

#include "drv.h"
#include "rec.h"
#include "sampler.h"

/* the drivers under test; the daemon finds them by name (drv_inputs[]) */
extern const struct drv_input_ops drv_input_ieee1284, drv_input_lines, drv_input_sim;

/*
 * libieee1284, mocked: there is no parallel port here (no CONFIG_PARPORT).
 * The mock keeps the library's rules (claim only an open port, read only a
 * claimed one, release only a claimed one, close only an open one) and counts
 * calls and live port lists, so a leak or a double close fails the test.
 * Values come from will_return: open/claim take (result, errno), the reads
 * take (result, errno).
 */
#define MAX_PORTS 8

static struct {
	const char *names[MAX_PORTS];
	int nports;
	struct parport ports[MAX_PORTS];
	bool opened[MAX_PORTS];
	bool claimed[MAX_PORTS];
	int lists;              /* lists found and not yet freed */
	int open_calls, claim_calls, release_calls, close_calls;
	struct parport *last_opened;
	/* the register accesses in order: "RS" "RD" "RC" reads, "WC 05" "WD f7" writes */
	char io[64][8];
	int nio, writes;
	/* cmocka's queue of values is per thread: a read from the sampler's thread
	 * returns this instead (>= 0), and the test reads the log after the tick */
	int status_in_thread;
} mk;

static void io_log(const char *what, int value)
{
	if (mk.nio < 64)
		snprintf(mk.io[mk.nio++], sizeof(mk.io[0]), value < 0 ? "%s" : "%s %02x", what,
			 value);
}

int __wrap_ieee1284_find_ports(struct parport_list *list, int flags);
void __wrap_ieee1284_free_ports(struct parport_list *list);
int __wrap_ieee1284_open(struct parport *port, int flags, int *caps);
int __wrap_ieee1284_claim(struct parport *port);
void __wrap_ieee1284_release(struct parport *port);
int __wrap_ieee1284_close(struct parport *port);
int __wrap_ieee1284_read_status(struct parport *port);
int __wrap_ieee1284_read_data(struct parport *port);
int __wrap_ieee1284_read_control(struct parport *port);
void __wrap_ieee1284_write_control(struct parport *port, unsigned char ct);
void __wrap_ieee1284_write_data(struct parport *port, unsigned char dt);

static int port_index(const struct parport *port)
{
	ptrdiff_t i = port - mk.ports;

	assert_true(i >= 0 && i < mk.nports);
	return (int)i;
}

int __wrap_ieee1284_find_ports(struct parport_list *list, int flags)
{
	int r = mock_type(int);

	assert_int_equal(flags, 0);
	if (r < 0)
		return r;
	list->portc = mk.nports;
	list->portv = mk.nports ? calloc((size_t)mk.nports, sizeof(*list->portv)) : NULL;
	for (int i = 0; i < mk.nports; i++) {
		mk.ports[i].name = mk.names[i];
		mk.ports[i].filename = "/dev/port";
		list->portv[i] = &mk.ports[i];
	}
	mk.lists++;
	return E1284_OK;
}

void __wrap_ieee1284_free_ports(struct parport_list *list)
{
	assert_true(mk.lists > 0);
	free(list->portv);
	list->portv = NULL;
	list->portc = 0;
	mk.lists--;
}

/* A macro: mock() looks values up by the name of the function it expands in. */
#define RESULT(r) do { (r) = mock_type(int); errno = mock_type(int); } while (0)

int __wrap_ieee1284_open(struct parport *port, int flags, int *caps)
{
	int i = port_index(port), r;

	(void)caps;
	mk.open_calls++;
	assert_int_equal(flags, 0);
	assert_false(mk.opened[i]);
	RESULT(r);
	if (r == E1284_OK) {
		mk.opened[i] = true;
		mk.last_opened = port;
	}
	return r;
}

int __wrap_ieee1284_claim(struct parport *port)
{
	int i = port_index(port), r;

	mk.claim_calls++;
	assert_true(mk.opened[i]);
	assert_false(mk.claimed[i]);
	RESULT(r);
	if (r == E1284_OK)
		mk.claimed[i] = true;
	return r;
}

void __wrap_ieee1284_release(struct parport *port)
{
	int i = port_index(port);

	mk.release_calls++;
	assert_true(mk.claimed[i]);
	mk.claimed[i] = false;
}

int __wrap_ieee1284_close(struct parport *port)
{
	int i = port_index(port);

	mk.close_calls++;
	assert_true(mk.opened[i]);
	assert_false(mk.claimed[i]);    /* release comes first */
	mk.opened[i] = false;
	return E1284_OK;
}

int __wrap_ieee1284_read_status(struct parport *port)
{
	int r;

	assert_true(mk.claimed[port_index(port)]);
	io_log("RS", -1);
	if (mk.status_in_thread > 0)
		return mk.status_in_thread;
	RESULT(r);
	return r;
}

int __wrap_ieee1284_read_data(struct parport *port)
{
	int r;

	assert_true(mk.claimed[port_index(port)]);
	io_log("RD", -1);
	RESULT(r);
	return r;
}

/* ieee1284_read_control(3): the four lines as IEEE 1284 levels (inversions undone) */
int __wrap_ieee1284_read_control(struct parport *port)
{
	int r;

	assert_true(mk.claimed[port_index(port)]);
	io_log("RC", -1);
	RESULT(r);
	return r;
}

/* The writes must come on a claimed port (ieee1284_control(3), ieee1284_data(3)). */
void __wrap_ieee1284_write_control(struct parport *port, unsigned char ct)
{
	assert_true(mk.claimed[port_index(port)]);
	assert_int_equal(ct & 0xf0, 0);         /* only the four control lines */
	io_log("WC", ct);
	mk.writes++;
}

void __wrap_ieee1284_write_data(struct parport *port, unsigned char dt)
{
	assert_true(mk.claimed[port_index(port)]);
	io_log("WD", dt);
	mk.writes++;
}

static void set_ports(int n, ...)
{
	va_list ap;

	assert_true(n <= MAX_PORTS);
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		mk.names[i] = va_arg(ap, const char *);
	va_end(ap);
	mk.nports = n;
}

static int setup(void **state)
{
	(void)state;
	memset(&mk, 0, sizeof(mk));
	return 0;
}

/* Whatever a test did, no port list and no open port is left behind. */
static int teardown(void **state)
{
	(void)state;
	assert_int_equal(mk.lists, 0);
	for (int i = 0; i < mk.nports; i++) {
		assert_false(mk.claimed[i]);
		assert_false(mk.opened[i]);
	}
	return 0;
}

static struct conf_parallel par_conf(const char *device, enum drv_read read)
{
	struct conf_parallel c = { .name = "lpt0", .driver = &drv_input_ieee1284,
				   .in = { .read = read }, .mask = 0xff };

	snprintf(c.in.device, sizeof(c.in.device), "%s", device);
	return c;
}

#define STATUS(v, e) do { will_return(__wrap_ieee1284_read_status, (v)); \
			  will_return(__wrap_ieee1284_read_status, (e)); } while (0)
#define DATA(v, e) do { will_return(__wrap_ieee1284_read_data, (v)); \
			will_return(__wrap_ieee1284_read_data, (e)); } while (0)
#define OPEN(r, e) do { will_return(__wrap_ieee1284_open, (r)); \
			will_return(__wrap_ieee1284_open, (e)); } while (0)
#define CLAIM(r, e) do { will_return(__wrap_ieee1284_claim, (r)); \
			 will_return(__wrap_ieee1284_claim, (e)); } while (0)
#define CONTROL(v, e) do { will_return(__wrap_ieee1284_read_control, (v)); \
			   will_return(__wrap_ieee1284_read_control, (e)); } while (0)

/* Opens cfg on a port that works, the open-time probe read answered. */
static void *open_ok(const struct conf_parallel *c)
{
	char err[CONF_ERR_MAX] = "";
	void *st = NULL;

	will_return(__wrap_ieee1284_find_ports, E1284_OK);
	OPEN(E1284_OK, 0);
	CLAIM(E1284_OK, 0);
	if (c->in.read & DRV_READ_STATUS)
		STATUS(0x00, 0);
	if (c->in.read & DRV_READ_DATA)
		DATA(0x00, 0);
	assert_int_equal(drv_input_ieee1284.open(&c->in, &st, err, sizeof(err)), 0);
	assert_non_null(st);
	assert_int_equal(mk.lists, 0);          /* the list is freed at once, the port kept */
	return st;
}

static void found_by_name(void **state)
{
	struct conf_parallel c = par_conf("parport1", DRV_READ_STATUS);
	void *st;

	(void)state;
	set_ports(3, "parport0", "parport1", "parport2");
	st = open_ok(&c);
	assert_ptr_equal(mk.last_opened, &mk.ports[1]);
	assert_true(mk.claimed[1]);
	STATUS(0x78, 0);
	assert_int_equal(drv_input_ieee1284.read(st), 0x78);
	assert_int_equal(mk.claim_calls, 1);    /* claimed once, not per sample */
	drv_input_ieee1284.close(st);
}

static void found_by_dev_path(void **state)
{
	struct conf_parallel c = par_conf("/dev/parport2", DRV_READ_STATUS);
	void *st;

	(void)state;
	set_ports(3, "parport0", "parport1", "parport2");
	st = open_ok(&c);
	assert_ptr_equal(mk.last_opened, &mk.ports[2]);
	drv_input_ieee1284.close(st);
}

static void not_found_lists_ports(void **state)
{
	struct conf_parallel c = par_conf("parport1", DRV_READ_STATUS);
	char err[CONF_ERR_MAX] = "";
	void *st = (void *)1;

	(void)state;
	set_ports(2, "parport0", "parport2");
	will_return(__wrap_ieee1284_find_ports, E1284_OK);
	assert_int_equal(drv_input_ieee1284.open(&c.in, &st, err, sizeof(err)), -ENODEV);
	assert_null(st);
	assert_int_equal(mk.open_calls, 0);
	printf("# %s\n", err);
	assert_non_null(strstr(err, "parport1"));
	assert_non_null(strstr(err, "parport0, parport2"));
	assert_null(strstr(err, "modprobe"));
}

/* No port at all, and what libieee1284 really lists on a machine without
 * parport: three guessed I/O addresses (seen here with find_ports). */
static void no_ports_says_modprobe(void **state)
{
	struct conf_parallel c = par_conf("parport0", DRV_READ_STATUS);
	char err[CONF_ERR_MAX];
	void *st;

	(void)state;
	for (int guessed = 0; guessed < 2; guessed++) {
		if (guessed)
			set_ports(3, "0x278", "0x378", "0x3bc");
		else
			set_ports(0);
		err[0] = '\0';
		will_return(__wrap_ieee1284_find_ports, E1284_OK);
		assert_int_equal(drv_input_ieee1284.open(&c.in, &st, err, sizeof(err)), -ENODEV);
		printf("# %s\n", err);
		assert_non_null(strstr(err, "modprobe parport_pc ppdev"));
		assert_int_equal(mk.lists, 0);
	}
	assert_int_equal(mk.open_calls, 0);
}

static void permission_denied(void **state)
{
	struct conf_parallel c = par_conf("parport0", DRV_READ_STATUS);
	char err[CONF_ERR_MAX] = "";
	void *st = (void *)1;

	(void)state;
	set_ports(1, "parport0");
	will_return(__wrap_ieee1284_find_ports, E1284_OK);
	OPEN(E1284_SYS, EACCES);
	assert_int_equal(drv_input_ieee1284.open(&c.in, &st, err, sizeof(err)), -EACCES);
	assert_null(st);
	printf("# %s\n", err);
	assert_non_null(strstr(err, "group lp"));
	assert_non_null(strstr(err, "/dev/parport0"));
	assert_int_equal(mk.claim_calls, 0);
	assert_int_equal(mk.close_calls, 0);    /* nothing was opened */
}

/* E1284_INIT without a cause: the driver looks at the node, which is missing. */
static void init_failure_checks_node(void **state)
{
	struct conf_parallel c = par_conf("parport7", DRV_READ_STATUS);
	char err[CONF_ERR_MAX] = "";
	void *st;

	(void)state;
	if (access("/dev/parport7", F_OK) == 0) {
		printf("# /dev/parport7 exists here: skipped\n");
		skip();
	}
	set_ports(1, "parport7");
	will_return(__wrap_ieee1284_find_ports, E1284_OK);
	OPEN(E1284_INIT, 0);
	assert_int_equal(drv_input_ieee1284.open(&c.in, &st, err, sizeof(err)), -ENOENT);
	printf("# %s\n", err);
	assert_non_null(strstr(err, "modprobe ppdev"));
}

/*
 * ppdev made the node (sysfs lists it) but this process has a private /dev, as
 * PrivateDevices=yes gives: the message says so instead of "load ppdev". As
 * root, in a child with its own mount namespace and a /sys/class that lists
 * parport7 under ppdev.
 */
static void hidden_node_is_named(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0 || access("/dev/parport7", F_OK) == 0) {
		printf("# needs root and no /dev/parport7: skipped\n");
		skip();
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct conf_parallel c = par_conf("parport7", DRV_READ_STATUS);
		char err[CONF_ERR_MAX] = "";
		void *st;
		int rc;

		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0
		    || mount("tmpfs", "/sys/class", "tmpfs", 0, NULL) < 0
		    || mkdir("/sys/class/ppdev", 0755) < 0
		    || mkdir("/sys/class/ppdev/parport7", 0755) < 0) {
			perror("# namespace");
			_exit(2);
		}
		set_ports(1, "parport7");
		will_return(__wrap_ieee1284_find_ports, E1284_OK);
		OPEN(E1284_INIT, 0);
		rc = drv_input_ieee1284.open(&c.in, &st, err, sizeof(err));
		printf("# %s\n", err);
		fflush(stdout);
		_exit(rc == -ENOENT && strstr(err, "PrivateDevices=yes") != NULL
		      && strstr(err, "modprobe") == NULL ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ppdev's PPCLAIM fails with ENXIO when another driver holds the port exclusively. */
static void claim_busy_closes_port(void **state)
{
	static const int causes[] = { ENXIO, EBUSY };
	struct conf_parallel c = par_conf("parport0", DRV_READ_STATUS);
	char err[CONF_ERR_MAX];
	void *st = (void *)1;

	(void)state;
	set_ports(1, "parport0");
	for (int i = 0; i < 2; i++) {
		err[0] = '\0';
		will_return(__wrap_ieee1284_find_ports, E1284_OK);
		OPEN(E1284_OK, 0);
		CLAIM(E1284_SYS, causes[i]);
		assert_int_equal(drv_input_ieee1284.open(&c.in, &st, err, sizeof(err)), -EBUSY);
		assert_null(st);
		printf("# %s\n", err);
		assert_non_null(strstr(err, "busy"));
		assert_int_equal(mk.close_calls, i + 1);    /* closed again: no leak */
		assert_int_equal(mk.release_calls, 0);      /* never claimed */
		assert_false(mk.opened[0]);
	}
}

static void read_layouts(void **state)
{
	static const struct {
		enum drv_read read;
		int status, data, want;
	} cases[] = {
		{ DRV_READ_STATUS, 0x87, -1, 0x87 },
		{ DRV_READ_STATUS, 0xf8, -1, 0xf8 },
		{ DRV_READ_DATA, -1, 0x5a, 0x5a },
		{ DRV_READ_DATA, -1, 0xff, 0xff },
		{ DRV_READ_BOTH, 0x78, 0xc3, 0xc378 },
		{ DRV_READ_BOTH, 0x80, 0x01, 0x0180 },
		{ DRV_READ_BOTH, 0x00, 0x00, 0x0000 },
	};

	(void)state;
	set_ports(1, "parport0");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conf_parallel c = par_conf("parport0", cases[i].read);
		void *st = open_ok(&c);

		if (cases[i].status >= 0)
			STATUS(cases[i].status, 0);
		if (cases[i].data >= 0)
			DATA(cases[i].data, 0);
		assert_int_equal(drv_input_ieee1284.read(st), cases[i].want);
		drv_input_ieee1284.close(st);
	}
	assert_int_equal(mk.writes, 0);         /* without a strobe no pin is driven */
}

static void read_error(void **state)
{
	struct conf_parallel c = par_conf("parport0", DRV_READ_BOTH);
	void *st;

	(void)state;
	set_ports(1, "parport0");
	st = open_ok(&c);
	STATUS(E1284_SYS, EIO);
	assert_int_equal(drv_input_ieee1284.read(st), -EIO);
	STATUS(E1284_NOTAVAIL, 0);
	assert_int_equal(drv_input_ieee1284.read(st), -ENODEV);
	STATUS(0x10, 0);
	DATA(E1284_SYS, ENODEV);
	assert_int_equal(drv_input_ieee1284.read(st), -ENODEV);
	STATUS(0x10, 0);                        /* and the port still works */
	DATA(0x20, 0);
	assert_int_equal(drv_input_ieee1284.read(st), 0x2010);
	drv_input_ieee1284.close(st);
}

/* read_data(3): a port without bidirectional data lines says so on the first
 * read; the driver finds out at open, and undoes the claim and the open. */
static void probe_fails_at_open(void **state)
{
	struct conf_parallel c = par_conf("parport0", DRV_READ_DATA);
	char err[CONF_ERR_MAX] = "";
	void *st = (void *)1;

	(void)state;
	set_ports(1, "parport0");
	will_return(__wrap_ieee1284_find_ports, E1284_OK);
	OPEN(E1284_OK, 0);
	CLAIM(E1284_OK, 0);
	DATA(E1284_NOTAVAIL, 0);
	assert_int_equal(drv_input_ieee1284.open(&c.in, &st, err, sizeof(err)), -ENODEV);
	assert_null(st);
	printf("# %s\n", err);
	assert_non_null(strstr(err, "data register"));
	assert_int_equal(mk.release_calls, 1);
	assert_int_equal(mk.close_calls, 1);
}

static void close_once(void **state)
{
	struct conf_parallel c = par_conf("parport0", DRV_READ_STATUS);
	void *st;

	(void)state;
	set_ports(1, "parport0");
	st = open_ok(&c);
	assert_int_equal(mk.release_calls, 0);
	assert_int_equal(mk.close_calls, 0);
	drv_input_ieee1284.close(st);
	assert_int_equal(mk.release_calls, 1);
	assert_int_equal(mk.close_calls, 1);
	drv_input_ieee1284.close(NULL);         /* accepted, and does nothing */
	assert_int_equal(mk.release_calls, 1);
	assert_int_equal(mk.close_calls, 1);
}

static void bad_read_mode(void **state)
{
	struct conf_parallel c = par_conf("parport0", 0);
	char err[CONF_ERR_MAX] = "";
	void *st;

	(void)state;
	assert_int_equal(drv_input_ieee1284.open(&c.in, &st, err, sizeof(err)), -EINVAL);
	assert_int_equal(mk.lists, 0);
}

/* --- the strobe --- */

/* The register accesses logged since `from`, joined: "WC 05,RS,WC 04". */
static void io_since(int from, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (int i = from; i < mk.nio && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%s", i > from ? "," : "", mk.io[i]);
}

static void expect_io(int from, const char *want)
{
	char got[256];

	io_since(from, got, sizeof(got));
	if (strcmp(got, want) != 0)
		fail_msg("register accesses '%s', expected '%s'", got, want);
}

/*
 * Opening with a strobe reads the register the pin is in and puts the pin at
 * rest, the other lines as they were; a pulse is one write each way. The
 * values are libieee1284's (IEEE 1284 levels: it undoes the PC register's
 * inversion of nStrobe, nAutoFd, nSelectIn), so a bit set is the pin high.
 */
static void strobe_levels(void **state)
{
	static const struct {
		const char *what;
		enum drv_strobe reg;
		unsigned bit;
		bool high;
		int found;              /* what the register reads at open */
		const char *open_io, *on, *off;
	} cases[] = {
		{ "nStrobe pulsed high, nInit high", DRV_STROBE_CONTROL, 0, true, 0x04,
		  "RC,WC 04", "WC 05", "WC 04" },
		{ "nStrobe pulsed low, resting high", DRV_STROBE_CONTROL, 0, false, 0x05,
		  "RC,WC 05", "WC 04", "WC 05" },
		{ "nSelectIn high, other lines kept", DRV_STROBE_CONTROL, 3, true, 0x0f,
		  "RC,WC 07", "WC 0f", "WC 07" },
		{ "only the four lines", DRV_STROBE_CONTROL, 1, true, 0xf4,
		  "RC,WC 04", "WC 06", "WC 04" },
		{ "D3 pulsed low", DRV_STROBE_DATA, 3, false, 0xff, "RD,WD ff", "WD f7", "WD ff" },
		{ "D0 pulsed high", DRV_STROBE_DATA, 0, true, 0x5a, "RD,WD 5a", "WD 5b", "WD 5a" },
		{ "D7, data unreadable: from 0", DRV_STROBE_DATA, 7, true, E1284_NOTAVAIL,
		  "RD,WD 00", "WD 80", "WD 00" },
	};

	(void)state;
	set_ports(1, "parport0");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conf_parallel c = par_conf("parport0", DRV_READ_STATUS);
		char err[CONF_ERR_MAX] = "";
		void *st = NULL;
		int from;

		c.in.strobe = cases[i].reg;
		c.in.strobe_bit = cases[i].bit;
		c.in.strobe_high = cases[i].high;
		will_return(__wrap_ieee1284_find_ports, E1284_OK);
		OPEN(E1284_OK, 0);
		CLAIM(E1284_OK, 0);
		STATUS(0x00, 0);
		if (cases[i].reg == DRV_STROBE_CONTROL)
			CONTROL(cases[i].found, 0);
		else
			DATA(cases[i].found, 0);
		from = mk.nio;
		if (drv_input_ieee1284.open(&c.in, &st, err, sizeof(err)) != 0)
			fail_msg("%s: open: %s", cases[i].what, err);
		printf("# %s\n", cases[i].what);
		expect_io(from + 1, cases[i].open_io);          /* after the probe read */
		from = mk.nio;
		assert_int_equal(drv_input_ieee1284.strobe(st, true), 0);
		expect_io(from, cases[i].on);
		from = mk.nio;
		assert_int_equal(drv_input_ieee1284.strobe(st, false), 0);
		expect_io(from, cases[i].off);
		drv_input_ieee1284.close(st);
	}
}

/* The control lines unreadable at open: no port, the claim and the open undone. */
static void strobe_control_unreadable(void **state)
{
	struct conf_parallel c = par_conf("parport0", DRV_READ_STATUS);
	char err[CONF_ERR_MAX] = "";
	void *st = (void *)1;

	(void)state;
	c.in.strobe = DRV_STROBE_CONTROL;
	set_ports(1, "parport0");
	will_return(__wrap_ieee1284_find_ports, E1284_OK);
	OPEN(E1284_OK, 0);
	CLAIM(E1284_OK, 0);
	STATUS(0x00, 0);
	CONTROL(E1284_SYS, EIO);
	assert_int_equal(drv_input_ieee1284.open(&c.in, &st, err, sizeof(err)), -EIO);
	assert_null(st);
	printf("# %s\n", err);
	assert_non_null(strstr(err, "control lines of parallel port parport0"));
	assert_int_equal(mk.release_calls, 1);
	assert_int_equal(mk.close_calls, 1);
	assert_int_equal(mk.writes, 0);
}

/* One tick from the test, as the timer gives it; returns once it is sampled. */
static void tick(struct sampler *s, uint64_t k);
static const struct rec *pop_rec(struct sampler *s, char *text, size_t cap);

/*
 * The sampler with a strobe, each tick: set the pin, wait strobe_us, read, reset
 * the pin; one pulse per sample, and the IN record is the read's value.
 */
static void sampler_pulses_around_the_read(void **state)
{
	struct conf_parallel c = par_conf("parport0", DRV_READ_STATUS);
	char err[CONF_ERR_MAX] = "", text[160];
	const struct rec *r;
	struct sampler s;
	int degraded = 0, from;

	(void)state;
	c.in.strobe = DRV_STROBE_CONTROL;
	c.in.strobe_bit = 0;
	c.in.strobe_high = true;
	c.strobe_us = 20;
	c.cpu = CONF_CPU_ANY;
	c.priority = CONF_PRIO_OTHER;
	conf_resolve_parallel(&c);
	set_ports(1, "parport0");
	will_return(__wrap_ieee1284_find_ports, E1284_OK);
	OPEN(E1284_OK, 0);
	CLAIM(E1284_OK, 0);
	STATUS(0x00, 0);
	CONTROL(0x04, 0);
	assert_int_equal(sampler_init(&s, &c, 64, err, sizeof(err)), 0);
	assert_int_equal(sampler_start(&s, &degraded), 0);
	from = mk.nio;
	mk.status_in_thread = 0x41;
	for (uint64_t k = 1; k <= 3; k++)
		tick(&s, k);
	sampler_stop(&s);
	expect_io(from, "WC 05,RS,WC 04,WC 05,RS,WC 04,WC 05,RS,WC 04");
	assert_int_equal(mk.writes, 1 + 2 * 3);         /* rest at open, then 2 per sample */
	/* EV open says which pin pulses, and the IN line holds what was read */
	r = pop_rec(&s, text, sizeof(text));
	assert_int_equal(r->a, EV_OPEN);
	/* (the head slot's 80 bytes of it) */
	assert_non_null(strstr(text, "read=status mask=0xff strobe=control:0 strobe_us"));
	r = pop_rec(&s, text, sizeof(text));
	assert_int_equal(r->kind, REC_IN);
	assert_int_equal(r->a, 0x41);
	assert_int_equal(ring_ready_now(&s.src.ring), 0);
	sampler_fini(&s);
}

/* --- the lines driver --- */

static struct conf_parallel lines_conf(const char *device)
{
	struct conf_parallel c = { .name = "lines0", .driver = &drv_input_lines,
				   .in = { .read = DRV_READ_STATUS }, .mask = 0xf };

	snprintf(c.in.device, sizeof(c.in.device), "%s", device);
	return c;
}

/* Written out apart from the driver, so a slip in one does not hide in both. */
static int by_hand(int m)
{
	int v = 0;

	if (m & TIOCM_CTS)
		v |= 1;
	if (m & TIOCM_DSR)
		v |= 2;
	if (m & TIOCM_CD)
		v |= 4;
	if (m & TIOCM_RI)
		v |= 8;
	return v;
}

/* The kernel's pty driver has no tiocmget (ENOTTY on master and slave, seen
 * on 6.x): then the driver must refuse a pty with a clear message. Should a
 * kernel ever report lines on a pty, the driver must give them. */
static void pty_lines(void **state)
{
	char name[64], err[CONF_ERR_MAX] = "";
	struct conf_parallel c;
	int master, slave, m, rc, e;
	void *st = (void *)1;

	(void)state;
	assert_int_equal(openpty(&master, &slave, name, NULL, NULL), 0);
	c = lines_conf(name);
	rc = drv_input_lines.open(&c.in, &st, err, sizeof(err));
	e = ioctl(slave, TIOCMGET, &m) < 0 ? errno : 0;
	if (e != 0) {
		printf("# TIOCMGET on a pty: %s; %s\n", strerror(e), err);
		assert_int_equal(e, ENOTTY);
		assert_int_equal(rc, -ENOTTY);
		assert_null(st);
		assert_non_null(strstr(err, "no modem lines"));
		assert_non_null(strstr(err, name));
	} else {
		printf("# TIOCMGET works on a pty here\n");
		assert_int_equal(rc, 0);
		assert_int_equal(drv_input_lines.read(st), by_hand(m));
		drv_input_lines.close(st);
	}
	close(slave);
	close(master);
}

static void file_has_no_lines(void **state)
{
	struct conf_parallel c = lines_conf("/dev/null");
	char err[CONF_ERR_MAX] = "";
	void *st;

	(void)state;
	assert_int_equal(drv_input_lines.open(&c.in, &st, err, sizeof(err)), -ENOTTY);
	assert_non_null(strstr(err, "no modem lines"));
}

/* The sim file: its bytes are the pins; cut short by its writer, a read error, not SIGBUS. */
static void sim_pins_and_truncation(void **state)
{
	struct conf_parallel c = { .name = "sim0", .driver = &drv_input_sim,
				   .in = { .read = DRV_READ_BOTH }, .mask = 0xffff };
	char err[CONF_ERR_MAX] = "";
	void *st;
	int fd;

	(void)state;
	snprintf(c.in.device, sizeof(c.in.device), "/tmp/portlogd-test-sim-%d", (int)getpid());
	unlink(c.in.device);
	assert_int_equal(drv_input_sim.open(&c.in, &st, err, sizeof(err)), 0);
	assert_int_equal(drv_input_sim.read(st), 0);        /* a new file: all pins low */
	fd = open(c.in.device, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "\x5a\xa5", 2, 0), 2);
	assert_int_equal(drv_input_sim.read(st), 0xa55a);
	assert_int_equal(ftruncate(fd, 0), 0);              /* `printf x > file` does this first */
	assert_int_equal(drv_input_sim.read(st), -EIO);
	assert_int_equal(pwrite(fd, "\x01\0\0\0\0\0\0\0", 8, 0), 8);
	assert_int_equal(drv_input_sim.read(st), 0x01);     /* and works again once whole */
	close(fd);
	drv_input_sim.close(st);
	unlink(c.in.device);
}

/* The sim driver counts its pulses in its file (bytes 8-19: sets, resets, reads
 * while set), and goes on counting after a reopen. */
static void sim_strobes_counted(void **state)
{
	struct conf_parallel c = { .name = "sim0", .driver = &drv_input_sim,
				   .in = { .read = DRV_READ_STATUS, .strobe = DRV_STROBE_DATA,
					   .strobe_bit = 1 }, .mask = 0xff };
	char err[CONF_ERR_MAX] = "";
	uint32_t n[3];
	void *st;
	int fd;

	(void)state;
	snprintf(c.in.device, sizeof(c.in.device), "/tmp/portlogd-test-strobe-%d", (int)getpid());
	unlink(c.in.device);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(drv_input_sim.open(&c.in, &st, err, sizeof(err)), 0);
		assert_int_equal(drv_input_sim.read(st), 0);    /* no pulse: not counted */
		for (int i = 0; i < 5; i++) {
			assert_int_equal(drv_input_sim.strobe(st, true), 0);
			assert_int_equal(drv_input_sim.read(st), 0);
			assert_int_equal(drv_input_sim.strobe(st, false), 0);
		}
		drv_input_sim.close(st);
		fd = open(c.in.device, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(pread(fd, n, sizeof(n), 8), (ssize_t)sizeof(n));
		close(fd);
		for (int k = 0; k < 3; k++)     /* little-endian, as on this machine */
			assert_int_equal(n[k], 5 * (round + 1));
	}
	unlink(c.in.device);
}

/* One tick from the test, as the timer gives it; returns once it is sampled. */
static void tick(struct sampler *s, uint64_t k)
{
	struct timespec ms = { 0, 1000000 };

	sampler_trigger(s, k);
	for (int i = 0; i < 5000 && (atomic_load(&s->samples) < k || atomic_load(&s->busy)); i++)
		nanosleep(&ms, NULL);
	assert_int_equal(atomic_load(&s->samples), k);
}

/* Pops one record: its kind, its value (IN) or code (EV), and its text. */
static const struct rec *pop_rec(struct sampler *s, char *text, size_t cap)
{
	static struct rec r;
	uint32_t n = ring_ready_now(&s->src.ring);

	assert_true(n > 0);
	r = ring_rslot(&s->src.ring, 0)->rec;
	snprintf(text, cap, "%.*s", (int)(r.len < REC_HEAD_DATA ? r.len : REC_HEAD_DATA),
		 (const char *)r.data);
	ring_release(&s->src.ring, rec_slots(r.len));
	return &r;
}

/*
 * A port whose reads fail is lost: its ticks are counted as unread, main
 * reopens it (sampler_reopen), and the sampler says EV open with the count and
 * starts over with an IN line.
 */
static void lost_port_is_reopened(void **state)
{
	struct conf_parallel c = { .name = "sim0", .driver = &drv_input_sim,
				   .in = { .read = DRV_READ_STATUS }, .mask = 0xff,
				   .cpu = CONF_CPU_ANY };
	char err[CONF_ERR_MAX] = "", text[160], want[sizeof(c.in.device) + 64];
	const struct rec *r;
	struct sampler s;
	int fd, degraded = 0;

	(void)state;
	snprintf(c.in.device, sizeof(c.in.device), "/tmp/portlogd-test-lost-%d", (int)getpid());
	conf_resolve_parallel(&c);
	unlink(c.in.device);
	assert_int_equal(sampler_init(&s, &c, 64, err, sizeof(err)), 0);
	assert_int_equal(sampler_start(&s, &degraded), 0);
	fd = open(c.in.device, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "\x01", 1, 0), 1);
	tick(&s, 1);
	assert_false(sampler_reopen(&s));                   /* not lost: nothing to do */
	assert_int_equal(ftruncate(fd, 0), 0);
	tick(&s, 2);                                        /* the read fails: lost */
	tick(&s, 3);
	tick(&s, 4);
	assert_int_equal(atomic_load(&s.unread), 2);
	assert_int_equal(atomic_load(&s.link), SAMPLER_LOST);
	assert_false(sampler_reopen(&s));                   /* sim_open sizes the file again */
	assert_int_equal(pwrite(fd, "\x03", 1, 0), 1);
	tick(&s, 5);
	sampler_stop(&s);

	/* the open at start names driver, register and mask */
	r = pop_rec(&s, text, sizeof(text));
	assert_int_equal(r->kind, REC_EV);
	assert_int_equal(r->a, EV_OPEN);
	snprintf(want, sizeof(want), "driver=sim device=%s read=status mask=0xff", c.in.device);
	assert_string_equal(text, want);
	r = pop_rec(&s, text, sizeof(text));
	assert_int_equal(r->kind, REC_IN);
	assert_int_equal(r->a, 0x01);
	r = pop_rec(&s, text, sizeof(text));
	assert_int_equal(r->kind, REC_EV);
	assert_int_equal(r->a, EV_ERROR);
	assert_int_equal(r->b, EIO);
	r = pop_rec(&s, text, sizeof(text));
	assert_int_equal(r->kind, REC_EV);
	assert_int_equal(r->a, EV_OPEN);
	snprintf(want, sizeof(want), "driver=sim device=%s read=status mask=0xff unread=2",
		 c.in.device);
	assert_string_equal(text, want);
	r = pop_rec(&s, text, sizeof(text));
	assert_int_equal(r->kind, REC_IN);
	assert_int_equal(r->a, 0x03);
	assert_int_equal(ring_ready_now(&s.src.ring), 0);
	close(fd);
	sampler_fini(&s);
	unlink(c.in.device);
}

static void lines_missing_device(void **state)
{
	struct conf_parallel c = lines_conf("/dev/portlogd-no-such-port");
	char err[CONF_ERR_MAX] = "";
	void *st = (void *)1;

	(void)state;
	assert_int_equal(drv_input_lines.open(&c.in, &st, err, sizeof(err)), -ENOENT);
	assert_null(st);
	assert_non_null(strstr(err, "/dev/portlogd-no-such-port"));
	drv_input_lines.close(NULL);
}

/* A real UART (the VM's 16550A): the emulated MSR is fixed, so compare the
 * driver with a direct TIOCMGET mapped by hand; the port is not locked, so
 * both fds can be open at once. */
static void uart_lines(void **state)
{
	const char *dev = getenv("PORTLOGD_TEST_UART") ? getenv("PORTLOGD_TEST_UART") : "/dev/ttyS0";
	struct conf_parallel c = lines_conf(dev);
	char err[CONF_ERR_MAX] = "";
	int fd, m, v;
	void *st;

	(void)state;
	fd = open(dev, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, TIOCMGET, &m) < 0) {
		printf("# no UART with modem lines at %s (%s): skipped\n", dev, strerror(errno));
		if (fd >= 0)
			close(fd);
		skip();
	}
	assert_int_equal(drv_input_lines.open(&c.in, &st, err, sizeof(err)), 0);
	v = drv_input_lines.read(st);
	assert_int_equal(ioctl(fd, TIOCMGET, &m), 0);
	printf("# %s: TIOCMGET %#x, lines %#x\n", dev, (unsigned)m, (unsigned)v);
	assert_in_range(v, 0, 15);
	assert_int_equal(v, by_hand(m));
	drv_input_lines.close(st);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(found_by_name, setup, teardown),
		cmocka_unit_test_setup_teardown(found_by_dev_path, setup, teardown),
		cmocka_unit_test_setup_teardown(not_found_lists_ports, setup, teardown),
		cmocka_unit_test_setup_teardown(no_ports_says_modprobe, setup, teardown),
		cmocka_unit_test_setup_teardown(permission_denied, setup, teardown),
		cmocka_unit_test_setup_teardown(init_failure_checks_node, setup, teardown),
		cmocka_unit_test_setup_teardown(hidden_node_is_named, setup, teardown),
		cmocka_unit_test_setup_teardown(claim_busy_closes_port, setup, teardown),
		cmocka_unit_test_setup_teardown(read_layouts, setup, teardown),
		cmocka_unit_test_setup_teardown(read_error, setup, teardown),
		cmocka_unit_test_setup_teardown(probe_fails_at_open, setup, teardown),
		cmocka_unit_test_setup_teardown(close_once, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_read_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(strobe_levels, setup, teardown),
		cmocka_unit_test_setup_teardown(strobe_control_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(sampler_pulses_around_the_read, setup, teardown),
		cmocka_unit_test(pty_lines),
		cmocka_unit_test(file_has_no_lines),
		cmocka_unit_test(lines_missing_device),
		cmocka_unit_test(uart_lines),
		cmocka_unit_test(sim_pins_and_truncation),
		cmocka_unit_test(sim_strobes_counted),
		cmocka_unit_test(lost_port_is_reopened),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
