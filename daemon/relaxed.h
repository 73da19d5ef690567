/* SPDX-License-Identifier: GPL-2.0-or-later */
/* relaxed.h - LD(x): a relaxed load of an atomic counter or flag.
 *
 * What one thread counts and another only reports (STAT, the metrics file, the
 * watchdog's progress, the notify status) needs atomicity, never ordering: each
 * value stands alone. LD(x) takes the lvalue, not its address, so that a field
 * reads as one (LD(p->src.records)).
 */
#ifndef PORTLOGD_RELAXED_H
#define PORTLOGD_RELAXED_H

#include <stdatomic.h>

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

#endif
