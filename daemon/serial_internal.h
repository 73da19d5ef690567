/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_internal.h - what the serial reader's files share: each file's calls into another.
 *
 * serial.h is the module's one public header. The files, each one job, and the calls
 * going one way (tests/lint/include_cycles.sh checks it):
 *   serial_port.c   a port's readers and threads: made, started, joined, freed
 *   serial_reader.c the reader thread's loop: waits, and says what it may still push
 *   serial_read.c   the reads, to the reassembler; first the bytes held across a restart
 *   serial_open.c   the port opened (EV open) and lost (EV close)
 *   serial_store.c  the port kept open across a restart (fdstore.h)
 *   serial_push.c   what the reassembler hands over, pushed: packets, UART errors, doubts
 *   serial_lines.c  the lines thread (lines = on)
 *   serial_stat.c   the port's STAT fields and its part in the registry
 *   serial_learn.c  an adapter's hold learned from the reads (learn.h): applied, said
 * serial_port.c calls serial_reader.c and serial_lines.c; serial_reader.c calls
 * serial_read.c, serial_open.c and serial_push.c; serial_read.c calls serial_open.c
 * and serial_learn.c; serial_open.c calls serial_store.c, serial_lines.c,
 * serial_push.c and serial_learn.c; serial_stat.c reads serial_push.c's names and
 * serial_learn.c's fields.
 */
#ifndef PORTLOGD_SERIAL_INTERNAL_H
#define PORTLOGD_SERIAL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "serial.h"

/* ---- the reader's loop (serial_reader.c) and the lines thread (serial_lines.c) ---- */

void *serial_thread(void *arg);
/* The lines thread: a LINES record for each modem-line edge. */
void *serial_lines_thread(void *arg);
/* At each open: the lines thread gets its own descriptor of the port. */
void serial_lines_give(struct serial_port *p);
/* Stops the lines thread, if it runs, and joins it. */
void serial_lines_join(struct serial_port *p);

/* ---- the reads (serial_read.c) ---- */

/* Reads until the kernel holds nothing for the port; false when the port was lost. */
bool serial_take(struct serial_port *p, bool woken, int64_t w, int64_t w_real);
/* A port kept open while no reader ran: reads what it holds first, as held. */
void serial_take_held(struct serial_port *p);

/* ---- open and close (serial_open.c) ---- */

/* The port is closed: lost, or the reader stops (stopping: a stored port stays kept). */
void serial_port_lost(struct serial_port *p, int err, const char *reason, bool stopping);

/* ---- an adapter's hold learned (serial_learn.c) ---- */

/* At each open, after the delivery is applied: learning anew, if the port's device
 * is an adapter whose hold Linux does not show (delivery.h). */
void serial_learn_open(struct serial_port *p, int64_t char_ns);
/* After each read: its bytes and their hand-over's bounds to the learner. */
void serial_learn_read(struct serial_port *p, size_t n, int64_t from, int64_t seen);
/* Before the next read: a change of the model applied (delivery, the reassembler's
 * device and gap) and said (EV delivery). */
void serial_learn_apply(struct serial_port *p);
/* The port's STAT fields of it (delivery= hold_us= xfer=), from the flusher. */
void serial_learn_stat(const struct serial_port *p, struct fmt_kv *kv);

/* ---- the store (serial_store.c) ---- */

/* The keeper the last process left in the store for this reader (first open
 * only; not pass's TX reader, whose pty serial_pass_open takes), or -1. */
int serial_store_take(struct serial_port *p, bool pass_tx);
/* The open with the keeper `kept` returned rc: a keeper not kept is dropped. */
void serial_store_taken(struct serial_port *p, int kept, int rc);
/* A port just opened (not pass's TX reader): took back, or now stored. */
void serial_store_opened(struct serial_port *p);
/* The port closes: whether it stays kept in the store (stopping, and stored);
 * if not, it leaves the store, and its trigger level is to be put back. */
bool serial_store_release(struct serial_port *p, bool stopping);

/* ---- what a reader pushes (serial_push.c) ---- */

/* The UART's error counters now; false if the port has none (a pty: ENOTTY). */
bool serial_read_icount(int fd, uint32_t now[SERIAL_NERR]);
/* The reassembler's callbacks (reasm.h): a packet ended; a doubt about a boundary. */
void serial_on_packet(void *ctx, const struct reasm_packet *pkt);
void serial_report_late(void *ctx, const struct reasm_doubt *d);
/* pass: the application changed its pty's settings (pkt NULL: idle, dated now). */
void serial_check_app_settings(struct serial_port *p, const struct reasm_packet *pkt);

#endif
