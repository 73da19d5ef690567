/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vm_sent.h - what portlogd-sim --output recorded of one port, read back by the guest
 * test's checkers (vm_check, vm_wire). */
#ifndef PORTLOGD_VM_SENT_H
#define PORTLOGD_VM_SENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/sim.h"
#define VM_SENT_WINDOWS 64      /* record files at most (usbplug: one a cycle) */

/* The packets of one port over one or more record files (windows), in the order read. */
struct vm_sent {
	uint8_t *data;              /* the bytes written, in order */
	size_t len;
	size_t *pkt_off, *pkt_len;  /* in data */
	int64_t *pkt_t;             /* host CLOCK_REALTIME of its first write, ns */
	int64_t *pkt_end;           /* ... and of the return of its last write */
	int64_t *pkt_pause;         /* its longest pause inside, ns (MAXPAUSE_US) */
	bool *pkt_clean;            /* its pauses as measured kept to the gap, nothing lost */
	uint32_t *pkt_lost;         /* its bytes lost on the wire (portlogd-sim --pace --hold) */
	char **pkt_note;            /* the rest of its line: hand-overs (LEN@LATENESS_US), lost= */
	size_t n, cap;
	size_t win_end[VM_SENT_WINDOWS]; /* the first packet after each file read */
	unsigned nwin;
};

/*
 * Appends the packets of port in a portlogd-sim --output file (NAME SECONDS LEN HEX
 * DURATION_US MAXPAUSE_US clean|unclean [hand-overs] [lost=N] a line; HEX "-" for a
 * packet whose bytes were all lost; "# " lines skipped) as one more window. Returns 0
 * or -errno.
 */
int vm_sent_read(struct vm_sent *s, const char *path, const char *port);
void vm_sent_free(struct vm_sent *s);
/*
 * The packets read as a simulator port in wire mode at baud (one fragment each, its
 * bytes back to back), named name, every time moved by shift ns (to the guest's clock),
 * for e2e's judgements of a wire port (e2e_late_merge). sim_port_close frees it.
 * Returns 0 or -ENOMEM.
 */
int vm_sent_port(const struct vm_sent *s, const char *name, unsigned baud, int64_t shift,
		 struct sim_port *p);

#endif
