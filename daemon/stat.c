/* stat.c - self-monitoring lines, written by the flusher from the threads' counters. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "stat.h"

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

static void appendf(char *text, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* printf at the end of what text holds (truncating safely). */
static void appendf(char *text, size_t len, const char *fmt, ...)
{
	size_t n = strlen(text);
	va_list ap;

	if (n + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(text + n, len - n, fmt, ap);
	va_end(ap);
}

/* Appends " PREFIXminflt=N PREFIXmajflt=N": the thread's page faults since it
 * started its work ("-" when unknown). */
static void faults(char *text, size_t len, const char *prefix, const struct thread *t)
{
	uint64_t minflt, majflt;

	if (thread_faults(t, &minflt, &majflt))
		appendf(text, len, " %sminflt=%" PRIu64 " %smajflt=%" PRIu64, prefix, minflt,
			prefix, majflt);
	else
		appendf(text, len, " %sminflt=- %smajflt=-", prefix, prefix);
}

static void timer_stat(struct flusher *f, struct timer *t)
{
	const struct timer_stats *st = &t->st;
	uint64_t ticks = atomic_load_explicit(&st->ticks, memory_order_acquire);
	char text[768];

	if (ticks == 0) {
		snprintf(text, sizeof(text), "timer period_us=%" PRId64 " triggers=%" PRIu64
			 " ticks=0 missed=%" PRIu64, t->period_ns / 1000, LD(st->rounds), LD(st->missed));
	} else {
		snprintf(text, sizeof(text),
			 "timer period_us=%" PRId64 " triggers=%" PRIu64 " ticks=%" PRIu64
			 " missed=%" PRIu64
			 " min_us=%" PRId64 " avg_us=%" PRId64 " p50_us=%" PRId64 " p99_us=%" PRId64
			 " p999_us=%" PRId64 " max_us=%" PRId64,
			 t->period_ns / 1000, LD(st->rounds), ticks, LD(st->missed), LD(st->min_ns) / 1000,
			 LD(st->sum_ns) / (int64_t)ticks / 1000, timer_pct_us(st, 50),
			 timer_pct_us(st, 99), timer_pct_us(st, 99.9), LD(st->max_ns) / 1000);
	}
	faults(text, sizeof(text), "", &t->thread);
	flush_line(f, "STAT", text);
}

void stat_hook(void *ctx, struct flusher *f, bool stat_due, bool final)
{
	struct stat_view *v = ctx;
	char text[768];

	if (v->timer != NULL) {
		uint64_t missed = LD(v->timer->st.missed);

		/* the timer has no ring: its missed periods are reported from here */
		if (missed != v->missed_reported) {
			snprintf(text, sizeof(text), "%" PRIu64, missed - v->missed_reported);
			if (flush_line(f, "OVERRUN", text))
				v->missed_reported = missed;    /* else in the next one */
		}
	}
	if (!stat_due && !final)
		return;
	if (v->timer != NULL)
		timer_stat(f, v->timer);
	for (unsigned i = 0; i < v->nsamplers; i++) {
		struct sampler *s = &v->samplers[i];

		snprintf(text, sizeof(text), "%s samples=%" PRIu64 " records=%" PRIu64
			 " overruns=%" PRIu64 " drops=%" PRIu64 " accounted=%" PRIu64
			 " unread=%" PRIu64, s->cfg->name, LD(s->samples), LD(s->src.records),
			 LD(s->overruns), LD(s->src.dropped), s->src.accounted, LD(s->unread));
		faults(text, sizeof(text), "", &s->thread);
		flush_line(f, "STAT", text);
	}
	for (unsigned i = 0; i < v->nserial; i++) {
		struct serial_port *p = &v->serial[i];

		snprintf(text, sizeof(text), "%s records=%" PRIu64 " bytes=%" PRIu64
			 " drops=%" PRIu64 " drop_bytes=%" PRIu64 " wakeups=%" PRIu64,
			 p->cfg->name, LD(p->src.records), LD(p->src.bytes), LD(p->src.dropped),
			 LD(p->src.dropped_bytes), LD(p->wakeups));
		appendf(text, sizeof(text), " accounted=%" PRIu64, p->src.accounted);
		if (p->cfg->lines)
			appendf(text, sizeof(text), " lines_records=%" PRIu64 " lines_drops=%" PRIu64
				" lines_accounted=%" PRIu64, LD(p->lines_src.records),
				LD(p->lines_src.dropped), p->lines_src.accounted);
		for (int e = 0; e < SERIAL_NERR; e++)
			appendf(text, sizeof(text), " %s=%" PRIu64, serial_err_name[e],
				LD(p->errors[e]));
		faults(text, sizeof(text), "", &p->thread);
		if (p->cfg->lines)
			faults(text, sizeof(text), "lines_", &p->lines_thread);
		flush_line(f, "STAT", text);
	}
	snprintf(text, sizeof(text), "flusher lines=%" PRIu64 " bytes=%" PRIu64
		 " write_errors=%" PRIu64, LD(f->lines), LD(f->bytes_written), LD(f->write_errors));
	faults(text, sizeof(text), "", &f->thread);
	flush_line(f, "STAT", text);
}
