/* SPDX-License-Identifier: GPL-2.0-or-later */
/* delivery.c - what stands between a serial port's wire and read(): found below a root. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "delivery.h"
#include "rootfs.h"

/*
 * The 8250 family's type numbers (the `type` attribute: PORT_* of
 * <linux/serial_core.h>), for EV open and --check-system; a number not here is
 * said as "type-N". Which of them have rx_trig_bytes is the kernel's to say.
 */
static const char *const uart_types[] = {
	[0] = "unknown", [1] = "8250", [2] = "16450", [3] = "16550", [4] = "16550A",
	[5] = "Cirrus", [6] = "ST16650", [7] = "ST16650V2", [8] = "TI16750",
	[9] = "Startech", [10] = "16C950", [11] = "ST16654", [12] = "XR16850",
	[13] = "RSA", [14] = "NS16550A", [15] = "XScale", [17] = "OCTEON",
	[18] = "AR7", [19] = "U6_16550A", [20] = "Tegra", [21] = "XR17D15X",
	[22] = "LPC3220", [24] = "XR17V35X", [26] = "Altera_16550_F32",
	[27] = "Altera_16550_F64", [28] = "Altera_16550_F128", [29] = "RT2880",
	[30] = "16550A_FSL64",
};

const char *delivery_ms_text(int64_t us, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%lld.%03lld", (long long)(us / 1000), (long long)(us % 1000));

	/* 1.250 -> 1.25, 2.000 -> 2 */
	while (n > 0 && (size_t)n < len && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && (size_t)n < len && buf[n - 1] == '.')
		buf[--n] = '\0';
	return buf;
}

const char *delivery_conf_text(const struct delivery_conf *dc, char *buf, size_t len)
{
	char ms[24], poll[24];

	if (dc->kind == DELIVERY_FIFO)
		snprintf(buf, len, "fifo:%u", dc->trigger);
	else if (dc->kind == DELIVERY_USB && dc->hold_us == 0)
		snprintf(buf, len, "usb");
	else if (dc->kind == DELIVERY_USB && dc->xfer == 0)
		snprintf(buf, len, "usb:%s", delivery_ms_text(dc->hold_us, ms, sizeof(ms)));
	else if (dc->kind == DELIVERY_USB)
		snprintf(buf, len, "usb:%s/%u/%s", delivery_ms_text(dc->hold_us, ms, sizeof(ms)),
			 dc->xfer, delivery_ms_text(dc->poll_us, poll, sizeof(poll)));
	else
		snprintf(buf, len, "%s", delivery_kind_name(dc->kind));
	return buf;
}

const char *delivery_kind_name(int kind)
{
	switch (kind) {
	case DELIVERY_DIRECT: return "direct";
	case DELIVERY_FIFO: return "fifo";
	case DELIVERY_USB: return "usb";
	default: return "auto";
	}
}

static const char *tty_name(const char *devpath)
{
	const char *name = strrchr(devpath, '/');

	return name != NULL ? name + 1 : devpath;
}

/* A whole number from the tty's attribute below root; -errno when there is none. */
static long read_num(const char *root, const char *name, const char *attr)
{
	char buf[32], *end;
	long v;
	int n = rootfs_read(root, buf, sizeof(buf), "/sys/class/tty/%s/%s", name, attr);

	if (n < 0)
		return n;
	v = strtol(buf, &end, 10);
	return end == buf || v < 0 ? -EINVAL : v;
}

/* The name of the tty's driver below root (its device/driver link's last part), or "". */
static void driver_name(const char *root, const char *name, char *out, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	rootfs_path(root, path, sizeof(path), "/sys/class/tty/%s/device/driver", name);
	n = readlink(path, target, sizeof(target) - 1);
	out[0] = '\0';
	if (n <= 0)
		return;
	target[n] = '\0';
	snprintf(out, len, "%.*s", (int)len - 1, tty_name(target));
}

/* Is the tty on a USB device? A usb-serial port, a CDC-ACM interface, or a class
 * link into a USB device's tree. */
static bool on_usb(const char *root, const char *name, const char *driver)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	rootfs_path(root, path, sizeof(path), "/sys/bus/usb-serial/devices/%s", name);
	if (access(path, F_OK) == 0 || strcmp(driver, "cdc_acm") == 0)
		return true;
	rootfs_path(root, path, sizeof(path), "/sys/class/tty/%s", name);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	return strstr(target, "/usb") != NULL;
}

static void set_usb_hold(struct delivery *d)
{
	/* FTDI: its timer, and up to one 1 ms USB frame before the host has the packet */
	if ((!d->configured || d->learn) && !d->learned)
		d->hold_us = d->latency_ms > 0 ? (unsigned)d->latency_ms * 1000 + 1000
						: DELIVERY_USB_UNKNOWN_MS * 1000;
}

bool delivery_learns(const struct delivery *d)
{
	return d->kind == DELIVERY_USB && d->latency_ms < 0 && (!d->configured || d->learn);
}

void delivery_learned(struct delivery *d, unsigned xfer, int64_t lo_ns, int64_t ns,
		      int64_t hi_ns)
{
	/* xfer 1: each byte alone, within hi_ns: an adapter that holds a byte that long;
	 * else the hold as dated (ns) the model's likeliest, its blur reaching both bounds
	 * (and so the host's poll a full transfer waits for: the samples' spread is that
	 * poll's twice, the two reads' each) */
	d->xfer = xfer > 1 ? xfer : 0;
	d->learned = xfer > 0;
	ns = ns < lo_ns ? lo_ns : ns > hi_ns ? hi_ns : ns;
	d->timeout_ns = xfer > 1 ? ns : 0;
	d->poll_ns = xfer > 1 ? (ns - lo_ns > hi_ns - ns ? ns - lo_ns : hi_ns - ns) : 0;
	if (d->learned)
		d->hold_us = (unsigned)((hi_ns + 999) / 1000);
	else
		set_usb_hold(d);
}

/* What the kernel shows of the tty NAME below root (not a pty). */
static void probe(const char *root, const char *name, struct delivery *d)
{
	char driver[32];
	long type, fifo, trig;

	driver_name(root, name, driver, sizeof(driver));
	type = read_num(root, name, "type");
	if (type >= 0) {
		/* a serial-core UART: its type, its FIFO, and the level where Linux shows one */
		if ((size_t)type < sizeof(uart_types) / sizeof(uart_types[0]) && uart_types[type])
			snprintf(d->what, sizeof(d->what), "%s", uart_types[type]);
		else
			snprintf(d->what, sizeof(d->what), "type-%d", (int)(type % 100000));
		fifo = read_num(root, name, "xmit_fifo_size");
		trig = read_num(root, name, "rx_trig_bytes");
		if (trig > 0 || fifo > 1) {
			d->kind = DELIVERY_FIFO;
			d->fifo = fifo > 0 ? (unsigned)fifo : 0;
			d->trigger = trig > 0 ? (unsigned)trig : 0;
		}
	} else if (on_usb(root, name, driver)) {
		d->kind = DELIVERY_USB;
		snprintf(d->what, sizeof(d->what), "%.*s", (int)sizeof(d->what) - 1,
			 driver[0] != '\0' ? driver : "usb");
		set_usb_hold(d);
	} else if (driver[0] != '\0') {
		snprintf(d->what, sizeof(d->what), "%.*s", (int)sizeof(d->what) - 1, driver);
	}
}

void delivery_find(const char *root, const char *devpath, bool pty, int latency_ms,
		   const struct delivery_conf *dc, struct delivery *d)
{
	*d = (struct delivery){ .kind = DELIVERY_DIRECT, .latency_ms = latency_ms };
	snprintf(d->what, sizeof(d->what), "%s", pty ? "pty" : "unknown");
	if (!pty)
		probe(root, tty_name(devpath), d);
	if (dc->kind == DELIVERY_AUTO)
		return;
	/* said in the config: for a port the kernel shows nothing of (or wrongly),
	 * and for the tests' ptys fed by a device model; portlogd then sets nothing */
	d->configured = true;
	d->kind = dc->kind;
	d->trigger = dc->kind == DELIVERY_FIFO ? dc->trigger : 0;
	if (dc->kind == DELIVERY_FIFO && d->fifo < dc->trigger)
		d->fifo = dc->trigger;
	d->hold_us = dc->kind == DELIVERY_USB ? dc->hold_us : 0;
	if (dc->kind == DELIVERY_USB && dc->hold_us == 0) {
		/* usb alone: the assumption, then what its traffic shows */
		d->learn = true;
		d->hold_us = DELIVERY_USB_UNKNOWN_MS * 1000;
	}
	if (dc->kind == DELIVERY_USB && dc->xfer > 0) {
		d->xfer = dc->xfer;
		/* its timeout, then the host's poll: likeliest in the middle; the blur is the
		 * whole poll, which a full transfer waits for after its last byte too */
		d->timeout_ns = (int64_t)dc->hold_us * 1000 + (int64_t)dc->poll_us * 500;
		d->poll_ns = (int64_t)dc->poll_us * 1000;
		d->hold_us = dc->hold_us + dc->poll_us;
	}
}

int delivery_set_trigger(const char *root, const char *devpath, int want, struct delivery *d)
{
	const char *name = tty_name(devpath);
	char text[16];
	long now;
	int rc;

	d->trigger_err = 0;
	if (d->kind != DELIVERY_FIFO || d->configured || d->trigger == 0
	    || want == DELIVERY_TRIGGER_KEEP)
		return 0;
	if (want == DELIVERY_TRIGGER_AUTO)
		want = 1;
	if ((unsigned)want == d->trigger)
		return 0;
	snprintf(text, sizeof(text), "%d\n", want);
	rc = rootfs_write(root, text, "/sys/class/tty/%s/rx_trig_bytes", name);
	now = read_num(root, name, "rx_trig_bytes");
	if (rc < 0) {
		d->trigger_err = -rc;
		return rc;
	}
	if (now > 0 && (unsigned)now != d->trigger) {
		d->trigger_found = d->trigger;
		d->trigger = (unsigned)now;
	}
	return 0;
}

void delivery_reread(const char *root, const char *devpath, int latency_ms, struct delivery *d)
{
	long now;

	if (d->kind == DELIVERY_USB) {
		d->latency_ms = latency_ms;
		set_usb_hold(d);
	}
	if (d->kind != DELIVERY_FIFO || d->configured)
		return;
	now = read_num(root, tty_name(devpath), "rx_trig_bytes");
	if (now > 0)
		d->trigger = (unsigned)now;
}

void delivery_restore(const char *root, const char *devpath, struct delivery *d)
{
	char text[16];

	if (d->trigger_found == 0)
		return;
	snprintf(text, sizeof(text), "%u\n", d->trigger_found);
	/* nothing to do about a refusal here: the level was ours to set a moment ago */
	(void)rootfs_write(root, text, "/sys/class/tty/%s/rx_trig_bytes", tty_name(devpath));
	d->trigger = d->trigger_found;
	d->trigger_found = 0;
}

struct reasm_dev delivery_model(const struct delivery *d, int64_t char_ns)
{
	struct reasm_dev m = { 0 };
	int64_t timeout = 4 * char_ns;

	if (d->kind == DELIVERY_FIFO && d->trigger > 1) {
		/* a byte waits for trigger - 1 more, each of which may come up to the
		 * timeout after the one before, and then the timeout */
		m.trigger = d->trigger;
		m.timeout_ns = timeout;
		m.hold_ns = (int64_t)d->trigger * timeout;
		m.blur_ns = char_ns / 2;
	} else if (d->kind == DELIVERY_FIFO && d->trigger == 0 && d->fifo > 1) {
		/* a level Linux does not show: a read may be a trigger's or a
		 * timeout's, and the whole FIFO may wait */
		m.hold_ns = (int64_t)d->fifo * timeout;
		m.blur_ns = timeout / 2;
	} else if (d->kind == DELIVERY_USB && d->xfer > 1) {
		/* on a receive timeout: a FIFO whose trigger is its transfer, a short one
		 * handed over timeout_ns after its last byte, poll_ns either way (the host's
		 * poll, the scatter learned); a byte waits for xfer - 1 more, each up to the
		 * timeout after the one before, then the timeout */
		m.trigger = d->xfer;
		m.whole = true;
		m.timeout_ns = d->timeout_ns;
		m.blur_ns = d->poll_ns;
		m.hold_ns = (int64_t)d->xfer * (d->timeout_ns + d->poll_ns);
	} else if (d->kind == DELIVERY_USB) {
		m.hold_ns = (int64_t)d->hold_us * 1000;
		m.blur_ns = m.hold_ns / 2;
	}
	return m;
}

int64_t delivery_gap(const struct delivery *d, int64_t gap_ns, bool gap_auto, int64_t char_ns)
{
	struct reasm_dev m = delivery_model(d, char_ns);
	int64_t floor;

	if (m.trigger > 1) {
		/* the RX timeout fires before the next byte exactly when the silence is
		 * over 3 characters: the FIFO shows those, and no shorter one (a silence
		 * of 3 characters to the nanosecond it hides: the gap is a nanosecond more);
		 * an adapter's receive timeout likewise shows those over its timeout less a
		 * character, but its timeout is known only within the blur: the latest
		 * decides what it may hide (a short read proves the least), and the gap is
		 * never made less */
		floor = m.timeout_ns + (m.whole ? m.blur_ns : 0) - char_ns + 1;
		if (gap_auto && !m.whole)
			return floor;
	} else {
		/* what one delivery can hide, and both blurs */
		floor = m.hold_ns > 0 ? 4 * m.blur_ns : 0;
	}
	return gap_ns > floor ? gap_ns : floor;
}

int64_t delivery_stamp_err(const struct delivery *d, int64_t char_ns)
{
	return delivery_model(d, char_ns).blur_ns;
}
