/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial.h - one reader thread per [serial NAME]: wait, timestamp, reassemble, push. */
#ifndef PORTLOGD_SERIAL_H
#define PORTLOGD_SERIAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "conf.h"
#include "thread.h"
#include "drv.h"
#include "health.h"
#include "parts.h"
#include "irq.h"
#include "reasm.h"
#include "source.h"

#define SERIAL_READ_MAX 4096
#define SERIAL_RETRY_MS 500     /* reopen attempts while a port is gone */

/* The UART error counters, in the order of their names in serial_err_name. */
enum { SERIAL_ERR_FRAME, SERIAL_ERR_PARITY, SERIAL_ERR_OVERRUN, SERIAL_ERR_BRK,
       SERIAL_ERR_BUF_OVERRUN, SERIAL_NERR };
extern const char *const serial_err_name[SERIAL_NERR];

struct serial_port {
	const struct conf_serial *cfg;
	struct source src;
	struct drv_serial drv;
	struct reasm reasm;
	uint8_t *pkt;               /* cfg->max_packet bytes */
	uint8_t rbuf[SERIAL_READ_MAX];
	int64_t gap_ns;
	int stop_fd;                /* eventfd shared by all readers; readable = stop */
	int last_err;               /* errno of the last failed open, logged once */
	unsigned opens;
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
};

/* Allocates and prefaults the port's ring and buffers. Returns 0 or -errno. */
int serial_init(struct serial_port *p, const struct conf_serial *cfg, uint32_t ring_records,
		int stop_fd);
void serial_fini(struct serial_port *p);
/* Registers the reader (its ring, beat, figures and the port's STAT line) and,
 * with lines = on, the lines thread (its ring and beat; its counters are in
 * the port's STAT line). */
bool serial_parts(struct serial_port *p, struct parts *ps);

/* Opens the port (from main before the thread starts, or from the reader when
 * the port came back); pushes EV open or, once per distinct errno, EV error. */
int serial_open(struct serial_port *p);

int serial_start(struct serial_port *p, int *degraded);
/* After the stop fd has been signalled. Interrupts a lines thread's TIOCMIWAIT
 * with SIGUSR1, whose handler main installs without SA_RESTART. */
void serial_join(struct serial_port *p);

#endif
