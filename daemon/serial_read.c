/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_read.c - a reader's reads: what the kernel holds, to the reassembler, at a
 * wake-up, a deadline or the stop; and first, after a restart, what the port held
 * while no reader ran. */
#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include "clock.h"
#include "serial_internal.h"

/*
 * One read of what the tty holds. A read that finds the line discipline empty
 * first waits for the tty's flip-buffer worker (n_tty_read calls
 * tty_buffer_flush_work), so this also gets bytes the kernel has received but
 * not yet handed on: on a busy machine that worker, a SCHED_OTHER kernel
 * thread, can be milliseconds late. Returns the byte count, 0 when there is
 * nothing, or -1 when the port was lost (closed and reported).
 */
static ssize_t port_read(struct serial_port *p, int64_t t0)
{
	ssize_t n = read(p->drv.fd, p->rbuf, sizeof(p->rbuf));

	/* an empty read proves the kernel held nothing older than t0, and so does one
	 * that took less than a full line discipline (its tty worker had handed on what
	 * came, but for its own lag): if the port is kept across a restart, what the next
	 * process finds came after t0 (one store to the shared page, no system call) */
	if (p->slot != NULL && (n > 0 ? n < SERIAL_LDISC_FULL : n < 0 && errno == EAGAIN))
		atomic_store_explicit(&p->slot->empty_mono, t0, memory_order_relaxed);
	if (n > 0) {
		/* pass: straight on to the other side, before anything else (a
		 * non-blocking write: microseconds, inside the read's time) */
		if (p->relaying)
			relay_send(&p->relay, p->rbuf, (size_t)n);
		return n;
	}
	if (n == 0) {
		serial_port_lost(p, 0, "hangup", false);
		return -1;
	}
	if (errno == EAGAIN || errno == EINTR)
		return 0;
	serial_port_lost(p, errno, errno == EIO ? "hangup" : "error", false);
	return -1;
}

/*
 * Reads until the kernel holds nothing for the port. A read that finds the line
 * discipline empty first waits for the tty's flip-buffer worker, so the last
 * read, empty, proves that nothing had reached the kernel before it began
 * (reasm_expire, which also ends the packet once its deadline has passed). The
 * first read's bytes woke the reader at w (woken), or were found by a read no
 * wake-up announced (the deadline's, or at stop; ppoll saw nothing at w): the
 * sensors bound how long before w they can have reached the kernel (through the
 * reader's CPU only when they woke it). A later read finds what came meanwhile,
 * or what the tty worker still held when the one before emptied the line
 * discipline. Returns false when the port was lost (closed and reported).
 */
bool serial_take(struct serial_port *p, bool woken, int64_t w, int64_t w_real)
{
	bool sensed = p->sensors != NULL && p->sensors->n > 0;
	enum reasm_stage stage = REASM_STAGE_TTY;
	/* which CPU the reader runs on: a load from glibc's rseq area */
	int64_t from = sensed ? sensors_from(p->sensors, sched_getcpu(), w, woken, &stage) : 0;

	for (;;) {
		int64_t t0 = mono_ns();
		ssize_t n = port_read(p, t0);
		int64_t end = mono_ns();
		struct reasm_read rd = { .woken = woken, .seen_mono = woken ? w : end,
					 .seen_real = w_real + ((woken ? w : end) - w),
					 .end_mono = end, .from_mono = from, .from_stage = stage };

		if (n < 0)
			return false;
		if (n == 0) {
			/* a packet its deadline ends now: its record says when this read began */
			p->empty_read = t0;
			reasm_expire(&p->reasm, t0, sensed ? sensors_held(p->sensors, sched_getcpu(), t0)
							    : INT64_MAX);
			p->empty_read = 0;
			return true;
		}
		reasm_read(&p->reasm, p->rbuf, (size_t)n, &rd);
		serial_learn_read(p, (size_t)n, from, rd.seen_mono);
		serial_learn_apply(p);
		woken = false;
		if (sensed)
			from = sensors_from(p->sensors, -1, end, false, &stage);
	}
}

/*
 * The port stayed open while no reader ran (fdstore.h): what the kernel holds came
 * meanwhile, at times no one saw. Read it all first, as held (reasm_held: EV
 * late-delivery case=restart, the wait since a reader last found the kernel
 * empty), and count it. pass: relayed as read, the TX reader's to the device it
 * is given first.
 */
void serial_take_held(struct serial_port *p)
{
	bool first = true;

	if (p->relaying)
		relay_poll(&p->relay, false);
	while (p->held && p->drv.fd >= 0) {
		int64_t t0 = mono_ns(), r0 = real_ns();
		ssize_t n = port_read(p, t0);
		int64_t end = mono_ns();
		struct reasm_read rd = { .woken = false, .seen_mono = end,
					 .seen_real = r0 + (end - t0), .end_mono = end };

		if (n <= 0)
			break;
		reasm_held(&p->reasm, p->rbuf, (size_t)n, &rd,
			   end - (p->unread_from >= 0 ? p->unread_from : p->opened_mono));
		atomic_fetch_add_explicit(&p->held_bytes, (uint64_t)n, memory_order_relaxed);
		/* a first read of less than the line discipline holds: it was never
		 * full, so nothing waited behind it, and what comes next came while this
		 * reader ran (a pass application answers what was just relayed to it
		 * within microseconds): not held. After a full one the kernel's buffers
		 * may refill it: read on until it is empty. */
		if (first && n < SERIAL_LDISC_FULL)
			break;
		first = false;
	}
	p->held = false;
}
