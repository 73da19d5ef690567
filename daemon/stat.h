/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stat.h - self-monitoring: the STAT lines of every registered part (and the metrics file), and OVERRUN lines for those without a ring. */
#ifndef PORTLOGD_STAT_H
#define PORTLOGD_STAT_H

#include <stdbool.h>

#include "flush.h"
#include "parts.h"

/* The flusher's hook (ctx: the struct parts): runs in the flusher after each
 * drain. Overruns of a part without a ring (the timer's missed periods) become
 * OVERRUN lines of source portlogd at once; every stat_interval_s and at the
 * end, each part with a STAT function gets its STAT line, in registry order.
 * With f->metrics, the metrics file is written from those lines' fields when
 * metrics_due() says so (metrics.h). */
void stat_hook(void *ctx, struct flusher *f, bool stat_due, bool final);

#endif
