/* SPDX-License-Identifier: GPL-2.0-or-later */
/* grow.h - arrays sized at start-up as the config fills them: doubled at powers of two. */
#ifndef PORTLOGD_GROW_H
#define PORTLOGD_GROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

/*
 * Room for one more element of size in the array *arr, which holds n: the array
 * is reallocated to twice n when n is a power of two (to `first` when it is 0),
 * so its length alone says its room and it needs no field of its own (first: a
 * power of two). For the
 * tables main fills before any thread starts; never on a real-time path. False
 * when out of memory (*arr unchanged).
 */
static inline bool grow_one(void *arr, size_t n, size_t size, size_t first)
{
	void **a = arr, *q;

	if (n != 0 && (n < first || (n & (n - 1)) != 0))
		return true;
	q = realloc(*a, (n == 0 ? first : 2 * n) * size);
	if (q == NULL)
		return false;
	*a = q;
	return true;
}

#endif
