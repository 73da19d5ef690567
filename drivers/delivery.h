/* SPDX-License-Identifier: GPL-2.0-or-later */
/* delivery.h - what stands between a serial port's wire and read(): found, made small, put back.
 *
 * A pty hands bytes to the reader as they are written. A UART of the 8250 family
 * holds them in its receive FIFO until it holds the trigger level or its RX timeout
 * (4 character times of silence) passes; Linux shows that level, and sets it, in
 * /sys/class/tty/NAME/rx_trig_bytes for the types that have one (16550A: 1, 4, 8,
 * 14; a written value is rounded down to a level the part has). A USB adapter hands
 * bytes over in transfers, on its own timer: an FTDI chip on its latency timer
 * (drv.c sets it), the others on their firmware's, which Linux does not show.
 *
 * Read below a root directory ("" live, a fixture tree in the tests), as
 * --check-system reads the kernel's files. The reader's rule (reasm.h) takes the
 * model of delivery_model(); EV open and --check-system say what was found.
 */
#ifndef PORTLOGD_DELIVERY_H
#define PORTLOGD_DELIVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reasm.h"

/* [serial] delivery = auto | direct | fifo:N | usb:..., and rx_trigger = auto | keep | N */
#define DELIVERY_AUTO 0
#define DELIVERY_DIRECT 1
#define DELIVERY_FIFO 2
#define DELIVERY_USB 3
#define DELIVERY_TRIGGER_AUTO (-1)   /* the lowest level the part has, where it can be set */
#define DELIVERY_TRIGGER_KEEP 0      /* leave the level as it is */

/* An adapter whose hold Linux does not show is assumed to hold a byte this long: FTDI's
 * own default latency timer, a common firmware timeout; delivery = usb:MS says better,
 * and the reader learns better from the traffic (learn.h). */
#define DELIVERY_USB_UNKNOWN_MS 16
/* usb:MS/SIZE without /POLL: the host takes a transfer within a full-speed USB frame */
#define DELIVERY_USB_POLL_US 1000

/*
 * [serial] delivery as the config says it (delivery = auto | direct | fifo:N | usb | usb:MS |
 * usb:MS/SIZE[/POLL]). usb: an adapter whose hold is not known (the assumption,
 * then what its traffic shows). usb:MS: an adapter that holds a byte up to MS (FTDI's latency
 * timer and a frame). usb:MS/SIZE: one on a receive timeout (learn.h): a transfer as
 * soon as SIZE bytes wait, the rest MS after the last byte, taken by the host up to
 * POLL later.
 */
struct delivery_conf {
	int kind;               /* DELIVERY_AUTO, _DIRECT, _FIFO or _USB */
	unsigned trigger;       /* fifo:N */
	unsigned hold_us;       /* usb:MS, in microseconds; 0: usb (learned) */
	unsigned xfer;          /* usb:MS/SIZE: SIZE; 0: usb:MS */
	unsigned poll_us;       /* usb:MS/SIZE/POLL: POLL, in microseconds */
};

struct delivery {
	int kind;               /* DELIVERY_DIRECT, _FIFO or _USB as found (or configured) */
	char what[24];          /* "pty", the UART's type ("16550A"), the USB driver ("ftdi_sio") */
	bool configured;        /* delivery = in the config said it, not the kernel */
	unsigned fifo;          /* FIFO: its size in bytes (0: not known) */
	unsigned trigger;       /* FIFO: its receive trigger level now (0: not known: the
				 * whole FIFO is assumed) */
	unsigned trigger_found; /* FIFO: the level before portlogd set one, put back at close
				 * (0: not changed) */
	int trigger_err;        /* errno of a refused or failed write of rx_trig_bytes, or 0 */
	int latency_ms;         /* USB: the adapter's timer as Linux shows it (FTDI), or -1 */
	unsigned hold_us;       /* USB: the longest a byte stays in the adapter, as taken
				 * (on a receive timeout: its timeout and the host's poll) */
	/* USB on a receive timeout (configured usb:MS/SIZE, or learned: learn.h): its
	 * transfers' size (0: the adapter is taken to hold a byte up to hold_us), the
	 * likeliest delay of a short transfer after its last byte, how far either way */
	unsigned xfer;
	int64_t timeout_ns, poll_ns;
	bool learned;           /* xfer and the timeout are the traffic's (delivery_learned) */
	bool learn;             /* delivery = usb: said to be an adapter, its hold not known */
};

/*
 * What stands between the device's wire and read(). pty: the device is a pty;
 * latency_ms: drv.c's FTDI latency timer (-1 none); dc: the config's word
 * (DELIVERY_AUTO: find out). Never fails: what cannot be found is said as unknown.
 */
void delivery_find(const char *root, const char *devpath, bool pty, int latency_ms,
		   const struct delivery_conf *dc, struct delivery *d);

/* May the reader learn this adapter's hand-over from its traffic (learn.h)? A USB
 * adapter found, whose timer Linux does not show and the config does not say (or
 * says delivery = usb). */
bool delivery_learns(const struct delivery *d);

/* The learned receive timeout (learn.h: xfer bytes, the least, the dated and the latest
 * delay of a last part) in place of the assumption; xfer 1: each byte alone, held up to
 * hi_ns; xfer 0: the assumption again. */
void delivery_learned(struct delivery *d, unsigned xfer, int64_t lo_ns, int64_t ns,
		      int64_t hi_ns);

/*
 * Sets a FIFO's trigger level (want > 0; DELIVERY_TRIGGER_AUTO: 1, rounded up by the
 * kernel to the lowest the part has) through rx_trig_bytes, before the port is
 * opened: the kernel empties the FIFO when the level is written, which loses nothing
 * only while no one has the port open. Does nothing unless the level is known and
 * differs; a refusal is kept in trigger_err (the reader says EV rt-missing). 0 or -errno.
 */
int delivery_set_trigger(const char *root, const char *devpath, int want, struct delivery *d);

/* After the port is open: the level the kernel uses now (it forces 1 below 2400 baud),
 * and an adapter's timer as drv.c left it (latency_ms, -1 none). */
void delivery_reread(const char *root, const char *devpath, int latency_ms, struct delivery *d);

/* After the port is closed: the level that was found, if portlogd changed it. */
void delivery_restore(const char *root, const char *devpath, struct delivery *d);

/* The reader's model (reasm.h) for this delivery at this character time. */
struct reasm_dev delivery_model(const struct delivery *d, int64_t char_ns);

/*
 * The gap the port resolves: the config's (gap_auto: it said auto, 3.5 characters),
 * where the device can hide a shorter silence inside one delivery raised to what it
 * shows; a FIFO above trigger 1 shows exactly the silences of over 3 characters (its
 * RX timeout of 4 fires before the next byte), and auto becomes that.
 */
int64_t delivery_gap(const struct delivery *d, int64_t gap_ns, bool gap_auto, int64_t char_ns);

/* How far the device alone may put a first byte's time off, either way (EV open's
 * stamp_err_us): an adapter, half its hold; a FIFO, half a character for its part. */
int64_t delivery_stamp_err(const struct delivery *d, int64_t char_ns);

/* The config's word for a delivery kind ("fifo"). */
const char *delivery_kind_name(int kind);

/* The config's value for a delivery ("usb:1.25/32/0.125", "fifo:8"), into buf. */
const char *delivery_conf_text(const struct delivery_conf *dc, char *buf, size_t len);

/* A duration in milliseconds as the config writes it: "1", "0.5", "1.25" (from us). */
const char *delivery_ms_text(int64_t us, char *buf, size_t len);

#endif
