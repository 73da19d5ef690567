/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_delivery.c - unit tests of what stands between a port's wire and read() (drivers/delivery.c),
 * on fixture trees of /sys. No kernel here refuses a write of rx_trig_bytes on demand:
 * rootfs_write is wrapped, and passes through unless a test asks for a refusal. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "delivery.h"
#include "fixture.h"
#include "rootfs.h"

static int refuse_write;        /* errno the next rootfs_write returns, or 0 */

int __real_rootfs_write(const char *root, const char *text, const char *fmt, ...);
int __wrap_rootfs_write(const char *root, const char *text, const char *fmt, ...);

int __wrap_rootfs_write(const char *root, const char *text, const char *fmt, ...)
{
	char path[4096];
	va_list ap;

	if (refuse_write != 0) {
		int e = refuse_write;

		refuse_write = 0;
		return -e;
	}
	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return __real_rootfs_write(root, text, "%s", path);
}

/* A 16550A as Linux shows it: type 4, a 16-byte FIFO, trigger 8. */
static void put_16550a(const char *root, const char *name, const char *trig)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "/sys/class/tty/%s/type", name);
	fx_put(root, rel, "4\n");
	snprintf(rel, sizeof(rel), "/sys/class/tty/%s/xmit_fifo_size", name);
	fx_put(root, rel, "16\n");
	if (trig != NULL) {
		snprintf(rel, sizeof(rel), "/sys/class/tty/%s/rx_trig_bytes", name);
		fx_put(root, rel, trig);
	}
}

static void read_trig(const char *root, const char *name, char *buf, size_t len)
{
	assert_true(rootfs_read(root, buf, len, "/sys/class/tty/%s/rx_trig_bytes", name) >= 0);
}

/* Found, set to the lowest level before the open, read again after it, put back at close. */
static void test_uart_trigger(void **state)
{
	char root[256], buf[16];
	struct delivery d;

	(void)state;
	fx_mkroot(root, sizeof(root), "test_delivery");
	put_16550a(root, "ttyS1", "8\n");
	delivery_find(root, "/dev/ttyS1", false, -1, &(struct delivery_conf){ .kind = DELIVERY_AUTO }, &d);
	assert_int_equal(d.kind, DELIVERY_FIFO);
	assert_string_equal(d.what, "16550A");
	assert_int_equal(d.fifo, 16);
	assert_int_equal(d.trigger, 8);
	assert_false(d.configured);
	assert_int_equal(delivery_set_trigger(root, "/dev/ttyS1", DELIVERY_TRIGGER_AUTO, &d), 0);
	read_trig(root, "ttyS1", buf, sizeof(buf));
	assert_string_equal(buf, "1");
	assert_int_equal(d.trigger, 1);
	assert_int_equal(d.trigger_found, 8);
	assert_int_equal(d.trigger_err, 0);
	/* the kernel forces 1 below 2400 baud: what it uses after the open counts */
	fx_put(root, "/sys/class/tty/ttyS1/rx_trig_bytes", "1\n");
	delivery_reread(root, "/dev/ttyS1", -1, &d);
	assert_int_equal(d.trigger, 1);
	delivery_restore(root, "/dev/ttyS1", &d);
	read_trig(root, "ttyS1", buf, sizeof(buf));
	assert_string_equal(buf, "8");
	assert_int_equal(d.trigger, 8);
	assert_int_equal(d.trigger_found, 0);
	/* nothing more to put back */
	fx_put(root, "/sys/class/tty/ttyS1/rx_trig_bytes", "4\n");
	delivery_restore(root, "/dev/ttyS1", &d);
	read_trig(root, "ttyS1", buf, sizeof(buf));
	assert_string_equal(buf, "4");
	fx_rmroot(root);
}

/* keep, a chosen level, one already in place, and a refusal (kept for EV rt-missing). */
static void test_uart_trigger_choices(void **state)
{
	char root[256], buf[16];
	struct delivery d;

	(void)state;
	fx_mkroot(root, sizeof(root), "test_delivery");
	put_16550a(root, "ttyS2", "8\n");
	delivery_find(root, "/dev/ttyS2", false, -1, &(struct delivery_conf){ .kind = DELIVERY_AUTO }, &d);
	assert_int_equal(delivery_set_trigger(root, "/dev/ttyS2", DELIVERY_TRIGGER_KEEP, &d), 0);
	read_trig(root, "ttyS2", buf, sizeof(buf));
	assert_string_equal(buf, "8");
	assert_int_equal(d.trigger_found, 0);
	assert_int_equal(delivery_set_trigger(root, "/dev/ttyS2", 4, &d), 0);
	assert_int_equal(d.trigger, 4);
	assert_int_equal(d.trigger_found, 8);
	delivery_restore(root, "/dev/ttyS2", &d);

	fx_put(root, "/sys/class/tty/ttyS2/rx_trig_bytes", "1\n");
	delivery_find(root, "/dev/ttyS2", false, -1, &(struct delivery_conf){ .kind = DELIVERY_AUTO }, &d);
	assert_int_equal(delivery_set_trigger(root, "/dev/ttyS2", DELIVERY_TRIGGER_AUTO, &d), 0);
	assert_int_equal(d.trigger_found, 0);         /* already 1: nothing written */

	fx_put(root, "/sys/class/tty/ttyS2/rx_trig_bytes", "8\n");
	delivery_find(root, "/dev/ttyS2", false, -1, &(struct delivery_conf){ .kind = DELIVERY_AUTO }, &d);
	refuse_write = EACCES;
	assert_int_equal(delivery_set_trigger(root, "/dev/ttyS2", DELIVERY_TRIGGER_AUTO, &d),
			 -EACCES);
	assert_int_equal(d.trigger_err, EACCES);
	assert_int_equal(d.trigger, 8);
	assert_int_equal(d.trigger_found, 0);
	delivery_restore(root, "/dev/ttyS2", &d);       /* nothing to put back */
	read_trig(root, "ttyS2", buf, sizeof(buf));
	assert_string_equal(buf, "8");
	fx_rmroot(root);
}

/* What else a tty can be. */
static void test_kinds(void **state)
{
	static const struct {
		const char *name, *dev;
		const char *files[4][2];        /* rel, text */
		int kind;
		const char *what;
		unsigned fifo, trigger, hold_us;
	} cases[] = {
		{ "a pty", "/dev/pts/3", { { NULL, NULL } }, DELIVERY_DIRECT, "pty", 0, 0, 0 },
		{ "an 8250 without a FIFO", "/dev/ttyS0",
		  { { "/sys/class/tty/ttyS0/type", "1" }, { "/sys/class/tty/ttyS0/xmit_fifo_size", "1" } },
		  DELIVERY_DIRECT, "8250", 0, 0, 0 },
		{ "an NS16550A: a FIFO, its level not shown", "/dev/ttyS3",
		  { { "/sys/class/tty/ttyS3/type", "14" }, { "/sys/class/tty/ttyS3/xmit_fifo_size", "16" } },
		  DELIVERY_FIFO, "NS16550A", 16, 0, 0 },
		{ "a type this table does not name", "/dev/ttyS4",
		  { { "/sys/class/tty/ttyS4/type", "99" }, { "/sys/class/tty/ttyS4/rx_trig_bytes", "16" },
		    { "/sys/class/tty/ttyS4/xmit_fifo_size", "64" } },
		  DELIVERY_FIFO, "type-99", 64, 16, 0 },
		{ "an FTDI adapter", "/dev/ttyUSB0",
		  { { "/sys/bus/usb-serial/devices/ttyUSB0/latency_timer", "1" },
		    { "/sys/class/tty/ttyUSB0/device/driver", "-> ../../../../bus/usb-serial/drivers/ftdi_sio" } },
		  DELIVERY_USB, "ftdi_sio", 0, 0, 16000 },
		{ "a CDC-ACM device", "/dev/ttyACM0",
		  { { "/sys/class/tty/ttyACM0/device/driver", "-> ../../../../bus/usb/drivers/cdc_acm" } },
		  DELIVERY_USB, "cdc_acm", 0, 0, DELIVERY_USB_UNKNOWN_MS * 1000 },
		{ "a tty on a USB device of another driver", "/dev/ttyXR0",
		  { { "/sys/class/tty/ttyXR0", "-> ../../devices/pci0000:00/0000:00:14.0/usb1/1-2/1-2:1.0/tty/ttyXR0" } },
		  DELIVERY_USB, "usb", 0, 0, DELIVERY_USB_UNKNOWN_MS * 1000 },
		{ "nothing shown: said as unknown, taken as direct", "/dev/ttyAMA0", { { NULL, NULL } },
		  DELIVERY_DIRECT, "unknown", 0, 0, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char root[256];
		struct delivery d;

		fx_mkroot(root, sizeof(root), "test_delivery");
		for (size_t f = 0; f < 4 && cases[i].files[f][0] != NULL; f++)
			fx_put(root, cases[i].files[f][0], cases[i].files[f][1]);
		delivery_find(root, cases[i].dev, strncmp(cases[i].dev, "/dev/pts/", 9) == 0, -1,
			      &(struct delivery_conf){ .kind = DELIVERY_AUTO }, &d);
		if (d.kind != cases[i].kind || strcmp(d.what, cases[i].what) != 0
		    || d.fifo != cases[i].fifo || d.trigger != cases[i].trigger
		    || d.hold_us != cases[i].hold_us)
			fail_msg("%s: found %s %s fifo %u trigger %u hold %u us", cases[i].name,
				 delivery_kind_name(d.kind), d.what, d.fifo, d.trigger, d.hold_us);
		fx_rmroot(root);
	}
}

/* An FTDI adapter's hold follows its latency timer as drv.c left it. */
static void test_usb_latency(void **state)
{
	char root[256];
	struct delivery d;

	(void)state;
	fx_mkroot(root, sizeof(root), "test_delivery");
	fx_put(root, "/sys/bus/usb-serial/devices/ttyUSB1/latency_timer", "1");
	fx_put(root, "/sys/class/tty/ttyUSB1/device/driver", "-> ../../../bus/usb-serial/drivers/ftdi_sio");
	delivery_find(root, "/dev/ttyUSB1", false, -1, &(struct delivery_conf){ .kind = DELIVERY_AUTO }, &d);
	delivery_reread(root, "/dev/ttyUSB1", 1, &d);
	assert_int_equal(d.hold_us, 2000);          /* 1 ms timer + a 1 ms USB frame */
	delivery_reread(root, "/dev/ttyUSB1", 16, &d);
	assert_int_equal(d.hold_us, 17000);
	fx_rmroot(root);
}

/* delivery = in the config wins, and portlogd then sets nothing. */
static void test_configured(void **state)
{
	char root[256], buf[16];
	struct delivery d;

	(void)state;
	delivery_find(NULL, "/dev/pts/7", true, -1, &(struct delivery_conf){ .kind = DELIVERY_FIFO, .trigger = 8 }, &d);
	assert_int_equal(d.kind, DELIVERY_FIFO);
	assert_true(d.configured);
	assert_int_equal(d.trigger, 8);
	assert_string_equal(d.what, "pty");
	delivery_find(NULL, "/dev/pts/7", true, -1, &(struct delivery_conf){ .kind = DELIVERY_USB, .hold_us = 3000 },
		      &d);
	assert_int_equal(d.kind, DELIVERY_USB);
	assert_int_equal(d.hold_us, 3000);
	delivery_reread(NULL, "/dev/pts/7", 1, &d);    /* a configured hold stays */
	assert_int_equal(d.hold_us, 3000);
	delivery_find(NULL, "/dev/pts/7", true, -1, &(struct delivery_conf){ .kind = DELIVERY_DIRECT }, &d);
	assert_int_equal(d.kind, DELIVERY_DIRECT);

	fx_mkroot(root, sizeof(root), "test_delivery");
	put_16550a(root, "ttyS1", "8\n");
	delivery_find(root, "/dev/ttyS1", false, -1, &(struct delivery_conf){ .kind = DELIVERY_FIFO, .trigger = 14 },
		      &d);
	assert_int_equal(d.trigger, 14);
	assert_string_equal(d.what, "16550A");
	assert_int_equal(delivery_set_trigger(root, "/dev/ttyS1", DELIVERY_TRIGGER_AUTO, &d), 0);
	read_trig(root, "ttyS1", buf, sizeof(buf));
	assert_string_equal(buf, "8");
	fx_rmroot(root);
}

/* The reader's model and the gap the port resolves. */
static void test_model_and_gap(void **state)
{
	const int64_t c = 1041667;          /* 9600 8N1 */
	const int64_t auto_gap = 3646000;
	struct delivery fifo8 = { .kind = DELIVERY_FIFO, .fifo = 16, .trigger = 8 };
	struct delivery fifo1 = { .kind = DELIVERY_FIFO, .fifo = 16, .trigger = 1 };
	struct delivery fifo_unknown = { .kind = DELIVERY_FIFO, .fifo = 16 };
	struct delivery usb = { .kind = DELIVERY_USB, .hold_us = 2000 };
	struct delivery direct = { .kind = DELIVERY_DIRECT };
	struct reasm_dev m;

	(void)state;
	m = delivery_model(&fifo8, c);
	assert_int_equal(m.trigger, 8);
	assert_int_equal(m.timeout_ns, 4 * c);
	assert_int_equal(m.hold_ns, 32 * c);
	assert_int_equal(m.blur_ns, c / 2);
	m = delivery_model(&fifo1, c);
	assert_int_equal(m.hold_ns, 0);             /* trigger 1: as direct */
	m = delivery_model(&fifo_unknown, c);
	assert_int_equal(m.trigger, 0);
	assert_int_equal(m.hold_ns, 64 * c);
	assert_int_equal(m.blur_ns, 2 * c);
	m = delivery_model(&usb, c);
	assert_int_equal(m.hold_ns, 2000000);
	assert_int_equal(m.blur_ns, 1000000);
	m = delivery_model(&direct, c);
	assert_int_equal(m.hold_ns, 0);

	/* a FIFO above trigger 1 shows silences of over 3 characters: auto is that (a
	 * nanosecond over: one of exactly 3 characters it hides) */
	assert_int_equal(delivery_gap(&fifo8, auto_gap, true, c), 3 * c + 1);
	assert_int_equal(delivery_gap(&fifo8, 10000000, false, c), 10000000);
	assert_int_equal(delivery_gap(&fifo8, 1000000, false, c), 3 * c + 1);
	assert_int_equal(delivery_gap(&fifo1, auto_gap, true, c), auto_gap);
	assert_int_equal(delivery_gap(&direct, 1000, false, c), 1000);
	assert_int_equal(delivery_gap(&fifo_unknown, auto_gap, true, c), 8 * c);
	assert_int_equal(delivery_gap(&usb, 304000, true, 86806), 4000000);
	assert_int_equal(delivery_gap(&usb, 5000000, false, 86806), 5000000);
	assert_int_equal(delivery_stamp_err(&fifo8, c), c / 2);
	assert_int_equal(delivery_stamp_err(&usb, c), 1000000);
	assert_int_equal(delivery_stamp_err(&direct, c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uart_trigger),
		cmocka_unit_test(test_uart_trigger_choices),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_usb_latency),
		cmocka_unit_test(test_configured),
		cmocka_unit_test(test_model_and_gap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
