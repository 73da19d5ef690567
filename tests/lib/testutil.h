/* SPDX-License-Identifier: GPL-2.0-or-later */
/* testutil.h - shared by the tests and the simulator: reproducible randomness, spin-waits. */
#ifndef PORTLOGD_TESTUTIL_H
#define PORTLOGD_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>

/* splitmix64 of x: the same numbers from a printed seed on any libc. */
uint64_t tu_mix(uint64_t x);

/* The next number of the sequence in *state. */
uint64_t tu_rand(uint64_t *state);

/* The run's seed: $PORTLOGD_SEED, or the clock. Printed as "# WHO: seed N ...". */
uint64_t tu_seed(const char *who);

/* One pause of a spin-wait. */
void tu_relax(void);

/* $name as a whole number, or def when unset or empty. */
unsigned tu_env_uint(const char *name, unsigned def);

/* Does config text have a [parallel] section of the ieee1284 driver (named, or the default
 * for a section without a driver key)? A build without libieee1284 (-DPORTLOGD_IEEE1284=OFF)
 * refuses such a config: "'ieee1284' is not compiled in". */
bool tu_needs_ieee1284(const char *conf_text);

/* CLOCK_MONOTONIC and CLOCK_REALTIME (the log's TIME) in ns; a sleep of ms milliseconds. */
int64_t tu_mono_ns(void);
int64_t tu_real_ns(void);
void tu_sleep_ms(int ms);

#endif
