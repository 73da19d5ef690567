/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial.h - one reader thread per [serial NAME]: wait, timestamp, reassemble, push.
 *
 * A port with tx_device or pass has a second reader, of the same kind and run
 * by the same loop, for what goes to the device: a tap's second port, or the
 * pty an application writes to (pass.h). Its packets are TX records in a ring
 * of its own, paired with the port's ring so that the flusher merges the two in
 * time order (source.h, horizon); the port's STAT line has its counters too
 * (tx_ fields). With pass, each reader also relays what it read: the RX reader
 * to the application's pty, the TX reader to the device.
 */
#ifndef PORTLOGD_SERIAL_H
#define PORTLOGD_SERIAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "conf.h"
#include "thread.h"
#include "drv.h"
#include "fdstore.h"
#include "health.h"
#include "parts.h"
#include "irq.h"
#include "learn.h"
#include "pass.h"
#include "reasm.h"
#include "sensor.h"
#include "source.h"

#define SERIAL_READ_MAX 4096
#define SERIAL_LDISC_FULL 4095  /* the most n_tty holds for a read (N_TTY_BUF_SIZE less 1) */
#define SERIAL_RETRY_MS 500     /* reopen attempts while a port is gone */
/* A reader of a port with two directions wakes at least this often while idle,
 * to say that it holds nothing older (the other direction's lines wait for it) */
#define SERIAL_IDLE_MS 20

/* The UART error counters, in the order of their names in serial_err_name. */
enum { SERIAL_ERR_FRAME, SERIAL_ERR_PARITY, SERIAL_ERR_OVERRUN, SERIAL_ERR_BRK,
       SERIAL_ERR_BUF_OVERRUN, SERIAL_NERR };
extern const char *const serial_err_name[SERIAL_NERR];

struct serial_port {
	const struct conf_serial *cfg;
	enum rec_kind kind;         /* its packets: REC_RX, or REC_TX (the second direction) */
	struct source src;
	struct drv_serial drv;
	struct reasm reasm;
	/* an adapter whose hold Linux does not show: learned from the reads (learn.h,
	 * serial_learn.c); what is in use, for STAT, as the reader last set it */
	struct learn learn;
	bool learning, learn_pending;
	_Atomic bool dlv_learning;
	_Atomic unsigned dlv_state;     /* enum learn_state */
	_Atomic int64_t dlv_hold_us;
	_Atomic unsigned dlv_xfer;
	uint8_t *pkt;               /* cfg->max_packet bytes */
	uint8_t rbuf[SERIAL_READ_MAX];
	int64_t gap_ns;
	int stop_fd;                /* eventfd shared by all readers; readable = stop */
	const struct sensors *sensors;  /* what bounds the path to the reader, or NULL */
	int last_err;               /* errno of the last failed open, logged once */
	unsigned opens;
	_Atomic uint64_t reopens;   /* opens after the first: the port came back (STAT reopens=) */
	_Atomic uint64_t late;      /* EV late-delivery lines pushed (STAT late=) */
	_Atomic uint64_t wakeups;   /* progress, for status */
	_Atomic bool up;            /* the port is open, for status */
	struct health_beat beat, lines_beat;    /* for the watchdog */
	struct irq_port irq;        /* its UART's interrupt threads, set at each open */

	/* UART error counters (TIOCGICOUNT), where the port has them (not a pty):
	 * the kernel's values at the last look, and what changed since start */
	bool has_icount;
	uint32_t icount_last[SERIAL_NERR];
	_Atomic uint64_t errors[SERIAL_NERR];
	struct thread thread;

	/* lines = on: a second thread waits for modem-line edges (TIOCMIWAIT
	 * blocks and cannot be polled), with its own ring */
	struct source lines_src;
	_Atomic int lines_fd;       /* a dup of the port's fd, handed over at each open */
	int lines_wake;             /* eventfd: a new lines_fd is there */
	_Atomic bool lines_stop;
	struct thread lines_thread;

	/* tx_device or pass: the port (the RX reader) owns the TX reader, a reader
	 * like itself with the port's config but its own device (tx_cfg) */
	struct serial_port *tx;
	struct serial_port *peer;   /* the other direction's reader, or NULL */
	struct conf_serial tx_cfg;  /* the TX reader's config: tx_device, or the pty */
	struct pass *pty;           /* pass: the pty (the RX reader's, shared) */
	struct relay relay;         /* pass: where what it reads goes (app or device) */
	bool relaying;

	/* kept open across a restart (fdstore.h) */
	struct fdstore *store;      /* NULL: nothing is stored */
	enum fdstore_role role;     /* its keeper's name there: FDSTORE_RX or FDSTORE_TX */
	struct fdstore_slot *slot;  /* its state across restarts, or NULL */
	bool asked_store;           /* the first open took what the store handed over */
	bool renamed;               /* it was kept under another name: stored under its own */
	enum drv_kept gone;         /* none of its device kept: what became of the one kept
				     * under its name (EV open store=) */
	bool held;                  /* the port stayed open: what came meanwhile is read first */
	int64_t unread_from;        /* held: when a reader last found the kernel empty, or -1 */
	int64_t opened_mono;        /* the last open (held, unread_from unknown: from there) */
	int64_t empty_read;         /* while reasm_expire runs: its empty read's start; else 0 */
	_Atomic uint64_t held_bytes; /* read as held since start (STAT held_bytes) */
};

/* Allocates and prefaults the port's ring and buffers, and those of its TX
 * reader (tx_device, pass); store (NULL: none) keeps their ports open across a
 * restart. Returns 0 or -errno. */
int serial_init(struct serial_port *p, const struct conf_serial *cfg, uint32_t ring_records,
		int stop_fd, struct fdstore *store);
/* The stall sensors that bound the path from the kernel to the port's readers
 * (sensor.h); without them a reader takes itself to be on time. */
void serial_sensed(struct serial_port *p, const struct sensors *s);
/* pass: makes the pty and PATH's link (pass.h), or takes back the ones kept in the
 * store, before the threads. 0 (also without pass), or -errno with what failed,
 * and what to do, in err. */
int serial_pass_open(struct serial_port *p, char *err, size_t errlen);
void serial_fini(struct serial_port *p);
/* Registers the reader (its ring, beat, figures and the port's STAT line) and,
 * with lines = on, the lines thread, and the TX reader (their rings and beats;
 * their counters are in the port's STAT line). */
bool serial_parts(struct serial_port *p, struct parts *ps);

/* Opens the port (from main before the thread starts, or from the reader when
 * the port came back); pushes EV open or, once per distinct errno, EV error.
 * main opens a port's TX reader (p->tx) too. The first open takes back the port's
 * keeper from the store, if it was kept; every open of a port not kept stores
 * its keeper. */
int serial_open(struct serial_port *p);

int serial_start(struct serial_port *p, int *degraded);
/* After the stop fd has been signalled. Interrupts a lines thread's TIOCMIWAIT
 * with SIGUSR1, whose handler main installs without SA_RESTART. */
void serial_join(struct serial_port *p);

/* An EV late-delivery line's fields (serial_push.c): the doubt d, its number mark. The
 * readers', and the flusher's case=clock marks. */
struct fmt_kv;
void serial_late_fields(struct fmt_kv *kv, const struct reasm_doubt *d, uint64_t mark);

#endif
