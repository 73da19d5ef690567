/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ring.c - creation of the SPSC rings; the operations are inline in ring.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

int ring_create(struct ring *r, uint32_t records)
{
	if (records < 2 || (records & (records - 1)) != 0)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->slots = aligned_alloc(64, (size_t)records * sizeof(union rec_slot));
	if (r->slots == NULL)
		return -ENOMEM;
	/* Touch every page now, before the real-time threads start. */
	memset(r->slots, 0, (size_t)records * sizeof(union rec_slot));
	r->mask = records - 1;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	return 0;
}

void ring_destroy(struct ring *r)
{
	if (r == NULL)
		return;
	free(r->slots);
	r->slots = NULL;
}
