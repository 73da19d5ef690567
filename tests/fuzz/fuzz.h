/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz.h - what the libFuzzer targets share: the entry point and CHECK. */
#ifndef PORTLOGD_FUZZ_H
#define PORTLOGD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant: abort() is what libFuzzer reports as a crash, with the input. */
#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

#endif
