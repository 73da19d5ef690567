/* SPDX-License-Identifier: GPL-2.0-or-later */
/* calibrate.h - portlogd --calibrate: a port's hand-over measured through a loopback.
 *
 * The port's TX wired to its RX (a loopback plug), or to a second port (--to):
 * bursts of 1 to 190 bytes are written, each in one write(), with the line quiet
 * before each, and every read of what comes back is timestamped. The reads go
 * through the learner of the daemon's reader (learn.h): full transfers streaming at
 * the baud give the transfer size, the last part's delay beyond its bytes the
 * hold, their scatter the host's poll. calibrate_judge turns what it showed, and
 * what the kernel shows of the device (delivery.h), into the line for the config.
 * The bytes that come back must be the bytes sent, in order.
 */
#ifndef PORTLOGD_CALIBRATE_H
#define PORTLOGD_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "delivery.h"
#include "learn.h"

/* What the traffic showed, as the config says it. */
struct calibrate_verdict {
	bool shown;                     /* the learner showed a model */
	struct delivery_conf dc;        /* the delivery = line */
	char why[320];                  /* what it rests on, for the printout */
};

/*
 * The config's delivery for a device (found: what the kernel shows; a UART's FIFO
 * is fifo:N, its level the transfers; an adapter usb:MS/SIZE/POLL, or usb:MS when
 * it handed every byte over alone) from the learner fed with every read, `reads` of
 * them, `at_level` of as many bytes as the FIFO's trigger level Linux shows (one at
 * trigger 1). Pure.
 */
void calibrate_judge(const struct learn *l, const struct delivery *found, int64_t char_ns,
		     unsigned at_level, unsigned reads, struct calibrate_verdict *v);

/* portlogd --calibrate PORT [--to PORT2] [--baud N] [--format 8N1] [--bursts N]:
 * 0 measured, 1 nothing or a wrong byte came back, 2 a bad command line or an
 * open that failed. */
int calibrate_main(int argc, char **argv);

#endif
