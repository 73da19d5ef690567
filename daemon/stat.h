/* stat.h - self-monitoring: STAT lines for timer, samplers, ports and flusher; the timer's OVERRUN. */
#ifndef PORTLOGD_STAT_H
#define PORTLOGD_STAT_H

#include <stdbool.h>
#include <stdint.h>

#include "flush.h"
#include "sampler.h"
#include "serial.h"
#include "timer.h"

struct stat_view {
	struct timer *timer;            /* NULL without [parallel] sections */
	struct sampler *samplers;
	unsigned nsamplers;
	struct serial_port *serial;
	unsigned nserial;
	uint64_t missed_reported;       /* flusher-private */
};

/* The flusher's hook: runs in the flusher after each drain. */
void stat_hook(void *ctx, struct flusher *f, bool stat_due, bool final);

#endif
