/* SPDX-License-Identifier: GPL-2.0-or-later */
/* drv.h - the driver interface: one const ops table per backend, no statics in drivers.
 *
 * The core owns the port object; a driver only opens, configures and closes the
 * device and hands back a non-blocking fd that the reader polls and reads.
 *
 * Drivers know nothing of the config: what they are asked to open is told in
 * the structs below, which the config embeds (conf.h includes this header, never
 * the other way), as chrony's refclock drivers get their parameters and not
 * conf.c's. The config finds drivers by name in drv_inputs[].
 */
#ifndef PORTLOGD_DRV_H
#define PORTLOGD_DRV_H

#include <stdbool.h>
#include <stddef.h>

#include "delivery.h"

#define DRV_PATH_MAX 256            /* a device path, with its NUL */

enum drv_flow { DRV_FLOW_NONE, DRV_FLOW_RTSCTS, DRV_FLOW_XONXOFF, DRV_FLOW_DTRDSR };

/* How a serial port is set, as libserialport's sp_port_config: [serial]'s baud,
 * format and flow. */
struct drv_serial_config {
	unsigned baud;
	unsigned data_bits;             /* 5..8 */
	char parity;                    /* N E O M S */
	unsigned stop_bits;             /* 1, 2 */
	enum drv_flow flow;
	struct delivery_conf delivery;  /* what the config says of the device (delivery.h) */
	int rx_trigger;                 /* DELIVERY_TRIGGER_AUTO, _KEEP, or a level in bytes */
};

/* Bits of one character on the wire: start, data, parity (none with N), stop. */
static inline unsigned drv_frame_bits(const struct drv_serial_config *t)
{
	return 1 + t->data_bits + (t->parity != 'N') + t->stop_bits;
}

struct drv_serial_ops {
	const char *name;           /* shown in EV open lines: driver=NAME */
	/* Opens the device at `path` (resolved to its real path) and sets it as
	 * cfg says; returns 0 with *state and a non-blocking *fd, or -errno. */
	int (*open)(const struct drv_serial_config *cfg, const char *path, void **state, int *fd);
	/* Closes what open returned; accepts a NULL state. */
	void (*close)(void *state, int fd);
};

extern const struct drv_serial_ops drv_serial_sp;       /* libserialport */
extern const struct drv_serial_ops drv_serial_tty;      /* plain termios, for pseudo-terminals */

/* What became of a port's keeper handed over from before a restart (drv_serial_open). */
enum drv_kept {
	DRV_KEPT_NONE,          /* none was handed over */
	DRV_KEPT_YES,           /* the port stayed open: taken back, set as the config says */
	DRV_KEPT_HUNG_UP,       /* it had hung up meanwhile (unplugged): closed, opened anew */
	DRV_KEPT_OTHER,         /* of another device than the config's: closed, opened anew */
};

/* EV open's store= word for a kept outcome ("kept", "hung-up", "other-device"); NULL for none. */
const char *drv_kept_name(enum drv_kept k);

struct drv_serial {
	const struct drv_serial_ops *ops;
	void *state;
	int fd;
	/* our own descriptor of the port holding its flock (the keeper), never read: what
	 * keeps the port open across a restart (fdstore.h), or -1 */
	int lock_fd;
	enum drv_kept kept;         /* at the last open */
	bool stored;                /* the keeper is in the service manager's store: closing ours
				     * is not the port's last close (the FIFO's level stays) */
	char path[DRV_PATH_MAX];    /* the resolved device path */
	int low_latency;            /* drv_serial_low_latency() at open */
	int latency_timer;          /* drv_ftdi_latency() at open */
	int latency_err;            /* errno of a refused latency_timer write, or 0 */
	struct delivery dlv;        /* what stands between the wire and read(), at open */
};

/*
 * Opens serial port `device`, set as cfg says, with the right driver:
 * libserialport for real ports; termios for pseudo-terminals, which
 * libserialport 0.1.1 cannot look up. The port is first made ours (flock on a
 * descriptor of our own, the keeper), then a real port's receive FIFO's trigger
 * level is set (cfg->rx_trigger; delivery.h), then the driver opens and sets it.
 * Returns 0 or -errno; *note, when not NULL, names a fallback worth logging.
 * Closing puts the trigger level back, unless the keeper is stored.
 *
 * kept: the keeper of this port from before a restart (fdstore.h), or -1; taken
 * over either way (port->kept says what became of it). When it is of this
 * device and has not hung up, the port never closed: it stays the keeper, the
 * trigger level is left alone (writing it empties the FIFO, with bytes that came
 * while no one read), and the driver opens the port once more beside it and sets
 * it as the config says. Closed otherwise, with its FIFO's level put back to
 * kept_trigger (the level found before portlogd set one; 0: none), as at a last close.
 */
int drv_serial_open(const char *device, const struct drv_serial_config *cfg, int kept,
		    unsigned kept_trigger, struct drv_serial *port, const char **note);
void drv_serial_close(struct drv_serial *port);

/* A keeper no port wants any more (fdstore_release): closed, and the FIFO's level
 * found before portlogd set one (trigger_found, 0: none) put back. */
void drv_serial_forget(int keeper, unsigned trigger_found);

/*
 * Input drivers, for [parallel NAME] sections: the parallel port's registers
 * (libieee1284), the four modem input lines of a serial port, and a simulated
 * port. read() runs in a real-time sampler thread on every tick: it makes the
 * port access and nothing else (no allocation, no logging, no lock).
 *
 * The value read: `read = status` gives the status register in bits 0-7,
 * `data` the data register in bits 0-7, `status+data` status in bits 0-7 and
 * data in bits 8-15. The `lines` driver gives CTS, DSR, DCD, RI in bits 0-3.
 *
 * The core names no driver: it finds one by name in drv_inputs[] and asks it
 * everything through these slots. A driver that is compiled out keeps its table
 * with only the name and device_example set (open NULL), so a config naming it
 * gets "not compiled in" instead of "unknown".
 */

/* The registers `read =` names (the config's words: status, data, status+data). */
enum drv_read { DRV_READ_STATUS = 1, DRV_READ_DATA = 2, DRV_READ_BOTH = 3 };
/* The register of the output pin pulsed before each read, or none. */
enum drv_strobe { DRV_STROBE_NONE, DRV_STROBE_DATA, DRV_STROBE_CONTROL };

/* What an input driver opens and how: [parallel NAME]'s device, read and strobe keys. */
struct drv_input_config {
	char device[DRV_PATH_MAX];
	enum drv_read read;
	enum drv_strobe strobe;         /* the pin pulsed before each read, or none */
	unsigned strobe_bit;            /* ... its bit in that register (data 0-7, control 0-3) */
	bool strobe_high;               /* the pin's level during the pulse (it rests at the other) */
};

/* What --check-system looks at before a driver opens its device. */
struct drv_device_check {
	char path[DRV_PATH_MAX + 8];    /* the node or file open() uses */
	char fix[128];                  /* what to do when it is missing or not accessible */
	bool created;                   /* open() creates a missing file: its directory must be writable */
};

struct drv_input_ops {
	const char *name;               /* driver = NAME in the config, and in messages */
	const char *device_example;     /* offered when device = is missing: "parport0" */
	/* Width of the values read() gives for this config: 4, 8 or 16 bits. */
	unsigned (*value_bits)(const struct drv_input_config *cfg);
	/* What they are, for EV open's read=: "lines"; NULL: the registers, which
	 * EV open names by the config's read = word ("status+data"). */
	const char *value_name;
	/* Fills chk for cfg->device (--check-system); port is the config's name
	 * of the port, for chk->fix. */
	void (*device_check)(const struct drv_input_config *cfg, const char *port,
			     struct drv_device_check *chk);
	/* Opens cfg->device; 0 with *state, or -errno with what to do in err.
	 * NULL: the driver is not compiled in. */
	int (*open)(const struct drv_input_config *cfg, void **state, char *err, size_t errlen);
	/* One sample: the value (>= 0), or -errno. */
	int (*read)(void *state);
	/* Drives the pin of cfg->strobe (opened with it) to its active level, or
	 * back to rest: 0 or -errno. The sampler calls it around read(), in real
	 * time: one port access, nothing else. NULL: the driver has no output pin,
	 * and a config asking for a strobe is refused. */
	int (*strobe)(void *state, bool active);
	/* Releases what open returned; accepts NULL. */
	void (*close)(void *state);
	/* The port's interrupt line, read below root ("" live, a fixture in tests),
	 * or -1 with *why (irq.h's IRQ_WHY_*): for irq_priority and --check-system.
	 * NULL: none (a driver that is not compiled in). */
	int (*irq)(const struct drv_input_config *cfg, const char *root, const char **why);
};

/* Every input driver, NULL-terminated (drv.c): a new driver is one file and a line there. */
extern const struct drv_input_ops *const drv_inputs[];

/* The driver called `name`, compiled in or not; NULL if there is none. */
const struct drv_input_ops *drv_input_find(const char *name);

/* value_bits of drivers that read the registers `read =` names: 8 bits for
 * one, 16 for both. */
unsigned drv_read_bits(const struct drv_input_config *cfg);

/* TIOCMGET bits to the 4-bit value of the modem input lines: CTS bit 0, DSR
 * bit 1, DCD bit 2, RI bit 3 (par_lines.c and [serial] lines = on). */
int drv_lines_map(int tiocm);

/* The termios speed (speed_t) of a baud rate, B0 when termios has none; and
 * the baud rate of a termios speed, 0 when it is none of them. */
unsigned drv_tty_speed(unsigned baud);
unsigned drv_tty_baud(unsigned speed);
/* A tty raw (cfmakeraw, CS8, CLOCAL, CREAD, VMIN 1) at cfg's baud and stop bits,
 * and with `flow` its flow control. 0 or -errno. */
int drv_tty_raw(int fd, const struct drv_serial_config *cfg, bool flow);

/* Exclusive access, so a second logger or a terminal program cannot steal bytes:
 * drv.c takes the flock on the keeper before a driver opens the port, and the
 * driver's descriptor sets TIOCEXCL. 0, -EBUSY when another holds it, or -errno. */
int drv_serial_flock(int fd);

/*
 * Sets ASYNC_LOW_LATENCY on a UART (TIOCGSERIAL/TIOCSSERIAL). Returns 1 when it
 * is on, 0 when the port has no such setting (a pty, most USB adapters), or
 * -errno when it could not be set.
 */
int drv_serial_low_latency(int fd);

/*
 * An FTDI USB adapter holds received bytes up to its latency timer (16 ms by
 * default) before it sends a short USB packet: set it to 1 ms through
 * SYSROOT/sys/bus/usb-serial/devices/NAME/latency_timer (NAME: the basename of
 * the resolved device path; sysroot "" in the daemon, a fixture in tests).
 * Returns the timer in ms as it is afterwards (>= 0), -ENODEV when the device
 * is not an FTDI adapter (no such file), or -errno when the file cannot be
 * read; *set_err gets the errno of a refused write, else 0.
 */
int drv_ftdi_latency(const char *sysroot, const char *devpath, int *set_err);

#endif
