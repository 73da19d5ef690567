/* stat.c - self-monitoring lines, written by the flusher from the threads' counters. */
#include <stdio.h>
#include <string.h>

#include "stat.h"

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* Appends "PREFIXminflt=N PREFIXmajflt=N": the thread's page faults since it
 * started its work ("-" when unknown). */
static void faults(struct fmt_kv *kv, const char *prefix, const struct thread *t)
{
	char min[24], maj[24];
	uint64_t minflt, majflt;
	bool known = thread_faults(t, &minflt, &majflt);

	snprintf(min, sizeof(min), "%sminflt", prefix);
	snprintf(maj, sizeof(maj), "%smajflt", prefix);
	if (known) {
		fmt_kv_u64(kv, min, minflt);
		fmt_kv_u64(kv, maj, majflt);
	} else {
		fmt_kv_str(kv, min, "-");
		fmt_kv_str(kv, maj, "-");
	}
}

static void timer_stat(struct flusher *f, struct timer *t)
{
	const struct timer_stats *st = &t->st;
	uint64_t ticks = atomic_load_explicit(&st->ticks, memory_order_acquire);
	char text[768];
	struct fmt_kv kv;

	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_word(&kv, "timer");
	fmt_kv_i64(&kv, "period_us", t->period_ns / 1000);
	fmt_kv_u64(&kv, "triggers", LD(st->rounds));
	fmt_kv_u64(&kv, "ticks", ticks);
	fmt_kv_u64(&kv, "missed", LD(st->missed));
	if (ticks > 0) {
		fmt_kv_i64(&kv, "min_us", LD(st->min_ns) / 1000);
		fmt_kv_i64(&kv, "avg_us", LD(st->sum_ns) / (int64_t)ticks / 1000);
		fmt_kv_i64(&kv, "p50_us", timer_pct_us(st, 50));
		fmt_kv_i64(&kv, "p99_us", timer_pct_us(st, 99));
		fmt_kv_i64(&kv, "p999_us", timer_pct_us(st, 99.9));
		fmt_kv_i64(&kv, "max_us", LD(st->max_ns) / 1000);
	}
	faults(&kv, "", &t->thread);
	flush_line(f, REC_STAT, 0, text);
}

void stat_hook(void *ctx, struct flusher *f, bool stat_due, bool final)
{
	struct stat_view *v = ctx;
	char text[768];
	struct fmt_kv kv;

	if (v->timer != NULL) {
		uint64_t missed = LD(v->timer->st.missed);

		/* the timer has no ring: its missed periods are reported from here */
		if (missed != v->missed_reported
		    && flush_line(f, REC_OVERRUN, (int64_t)(missed - v->missed_reported), ""))
			v->missed_reported = missed;    /* else in the next one */
	}
	if (!stat_due && !final)
		return;
	if (v->timer != NULL)
		timer_stat(f, v->timer);
	for (unsigned i = 0; i < v->nsamplers; i++) {
		struct sampler *s = &v->samplers[i];

		fmt_kv_init(&kv, text, sizeof(text));
		fmt_kv_word(&kv, s->cfg->name);
		fmt_kv_u64(&kv, "samples", LD(s->samples));
		fmt_kv_u64(&kv, "records", LD(s->src.records));
		fmt_kv_u64(&kv, "overruns", LD(s->overruns));
		fmt_kv_u64(&kv, "drops", LD(s->src.dropped));
		fmt_kv_u64(&kv, "accounted", s->src.accounted);
		fmt_kv_u64(&kv, "unread", LD(s->unread));
		faults(&kv, "", &s->thread);
		flush_line(f, REC_STAT, 0, text);
	}
	for (unsigned i = 0; i < v->nserial; i++) {
		struct serial_port *p = &v->serial[i];

		fmt_kv_init(&kv, text, sizeof(text));
		fmt_kv_word(&kv, p->cfg->name);
		fmt_kv_u64(&kv, "records", LD(p->src.records));
		fmt_kv_u64(&kv, "bytes", LD(p->src.bytes));
		fmt_kv_u64(&kv, "drops", LD(p->src.dropped));
		fmt_kv_u64(&kv, "drop_bytes", LD(p->src.dropped_bytes));
		fmt_kv_u64(&kv, "wakeups", LD(p->wakeups));
		fmt_kv_u64(&kv, "accounted", p->src.accounted);
		if (p->cfg->lines) {
			fmt_kv_u64(&kv, "lines_records", LD(p->lines_src.records));
			fmt_kv_u64(&kv, "lines_drops", LD(p->lines_src.dropped));
			fmt_kv_u64(&kv, "lines_accounted", p->lines_src.accounted);
		}
		for (int e = 0; e < SERIAL_NERR; e++)
			fmt_kv_u64(&kv, serial_err_name[e], LD(p->errors[e]));
		faults(&kv, "", &p->thread);
		if (p->cfg->lines)
			faults(&kv, "lines_", &p->lines_thread);
		flush_line(f, REC_STAT, 0, text);
	}
	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_word(&kv, "flusher");
	fmt_kv_u64(&kv, "lines", LD(f->lines));
	fmt_kv_u64(&kv, "bytes", LD(f->log.bytes_written));
	fmt_kv_u64(&kv, "write_errors", LD(f->log.write_errors));
	faults(&kv, "", &f->thread);
	flush_line(f, REC_STAT, 0, text);
}
