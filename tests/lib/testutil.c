/* SPDX-License-Identifier: GPL-2.0-or-later */
/* testutil.c - shared by the tests and the simulator: reproducible randomness, spin-waits. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

#define GOLDEN 0x9e3779b97f4a7c15ULL

uint64_t tu_mix(uint64_t x)
{
	x += GOLDEN;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t tu_rand(uint64_t *state)
{
	uint64_t z = tu_mix(*state);

	*state += GOLDEN;
	return z;
}

uint64_t tu_seed(const char *who)
{
	const char *e = getenv("PORTLOGD_SEED");
	uint64_t seed;

	if (e != NULL && *e != '\0') {
		seed = strtoull(e, NULL, 0);
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
	printf("# %s: seed %" PRIu64 " (PORTLOGD_SEED=%" PRIu64 " repeats it)\n", who, seed, seed);
	fflush(stdout);
	return seed;
}

void tu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

unsigned tu_env_uint(const char *name, unsigned def)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? (unsigned)strtoul(v, NULL, 10) : def;
}

int64_t tu_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t tu_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void tu_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0)
		;
}

bool tu_needs_ieee1284(const char *conf_text)
{
	bool parallel = false, driver = false;

	for (const char *l = conf_text; *l != '\0'; l += strcspn(l, "\n"), l += *l == '\n') {
		if (*l == '[') {
			if (parallel && !driver)
				return true;
			parallel = strncmp(l, "[parallel ", 10) == 0;
			driver = false;
		} else if (parallel && strncmp(l, "driver", 6) == 0 && l[6] != '\0'
			   && strchr(" \t=", l[6]) != NULL) {
			const char *v = l + 6 + strspn(l + 6, " \t=");

			if (strncmp(v, "ieee1284", 8) == 0)
				return true;
			driver = true;
		}
	}
	return parallel && !driver;
}
