/* SPDX-License-Identifier: GPL-2.0-or-later */
/* clockq.c - the clock's quality from adjtimex(2), and when the log says it. */
#include <errno.h>
#include <sys/timex.h>

#include "clockq.h"

void clockq_read(struct clockq_state *st)
{
	struct timex tx = { .modes = 0 };
	int rc = adjtimex(&tx);

	*st = (struct clockq_state){ 0 };
	if (rc < 0) {
		st->err = errno;
		return;
	}
	st->unsync_flag = (tx.status & STA_UNSYNC) != 0;
	st->leap = tx.status & STA_INS ? 1 : tx.status & STA_DEL ? -1 : 0;
	st->maxerror_us = tx.maxerror;
	st->esterror_us = tx.esterror;
	st->synced = tx.maxerror < CLOCKQ_UNSYNC_US;
}

static int sync_of(const struct clockq_state *st)
{
	return st->err != 0 ? CLOCKQ_UNKNOWN : st->synced ? CLOCKQ_SYNCED : CLOCKQ_UNSYNCED;
}

void clockq_init(struct clockq *q)
{
	q->said = CLOCKQ_NOT_READ;
	q->next_poll = INT64_MIN;
	atomic_init(&q->sync, CLOCKQ_NOT_READ);
	atomic_init(&q->maxerror_us, 0);
}

bool clockq_due(struct clockq *q, enum clockq_reason *why, int64_t now_mono,
		struct clockq_state *st)
{
	bool changed;

	if (*why == CLOCKQ_CHANGE && now_mono < q->next_poll)
		return false;
	clockq_read(st);
	q->next_poll = now_mono + CLOCKQ_POLL_NS;
	atomic_store_explicit(&q->maxerror_us, st->maxerror_us, memory_order_relaxed);
	atomic_store_explicit(&q->sync, sync_of(st), memory_order_relaxed);
	changed = q->said != CLOCKQ_NOT_READ && sync_of(st) != q->said;
	if (*why == CLOCKQ_STAT && changed)
		*why = CLOCKQ_CHANGE;
	return *why != CLOCKQ_CHANGE || changed;
}

void clockq_said(struct clockq *q, const struct clockq_state *st)
{
	q->said = sync_of(st);
}

void clockq_fields(struct fmt_kv *kv, enum clockq_reason why, const struct clockq_state *st)
{
	static const char *const reason[] = {
		[CLOCKQ_START] = "start", [CLOCKQ_CHANGE] = "change", [CLOCKQ_STEP] = "step",
		[CLOCKQ_STAT] = "stat",
	};

	if (st->err != 0) {
		fmt_kv_str(kv, "synced", "unknown");
		fmt_kv_str(kv, "reason", reason[why]);
		fmt_kv_errno(kv, "errno", st->err);
		return;
	}
	fmt_kv_str(kv, "synced", st->synced ? "yes" : "no");
	fmt_kv_i64(kv, "maxerror_us", st->maxerror_us);
	fmt_kv_i64(kv, "esterror_us", st->esterror_us);
	fmt_kv_str(kv, "unsync_flag", st->unsync_flag ? "yes" : "no");
	fmt_kv_str(kv, "leap", st->leap > 0 ? "insert" : st->leap < 0 ? "delete" : "none");
	fmt_kv_str(kv, "reason", reason[why]);
}
