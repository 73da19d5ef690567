/* SPDX-License-Identifier: GPL-2.0-or-later */
/* timer.c - the timer thread. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "relaxed.h"
#include "thread.h"
#include "timer.h"

void timer_init(struct timer *t, const struct conf_timer *cfg, struct sampler **samplers,
		unsigned n)
{
	memset(t, 0, sizeof(*t));
	t->period_ns = (int64_t)cfg->period_us * NS_PER_US;
	t->warmup_ns = (int64_t)cfg->warmup_ms * NS_PER_MS;
	t->samplers = samplers;
	t->nsamplers = n;
	t->priority = cfg->priority;
	t->cpu = cfg->cpu;
	atomic_init(&t->stop, false);
	health_beat_init(&t->beat);
	atomic_init(&t->st.min_ns, INT64_MAX);
	atomic_init(&t->st.max_ns, 0);
}

/* Only this thread writes the statistics: plain load + store is enough. */
static void record(struct timer_stats *st, int64_t lat)
{
	int64_t us = lat / NS_PER_US;
	size_t bin = us < 0 ? 0 : us > TIMER_HIST_US ? TIMER_HIST_US : (size_t)us;

	atomic_store_explicit(&st->hist[bin],
			      atomic_load_explicit(&st->hist[bin], memory_order_relaxed) + 1,
			      memory_order_relaxed);
	if (lat < atomic_load_explicit(&st->min_ns, memory_order_relaxed))
		atomic_store_explicit(&st->min_ns, lat, memory_order_relaxed);
	if (lat > atomic_load_explicit(&st->max_ns, memory_order_relaxed))
		atomic_store_explicit(&st->max_ns, lat, memory_order_relaxed);
	atomic_store_explicit(&st->sum_ns,
			      atomic_load_explicit(&st->sum_ns, memory_order_relaxed) + lat,
			      memory_order_relaxed);
	atomic_store_explicit(&st->ticks,
			      atomic_load_explicit(&st->ticks, memory_order_relaxed) + 1,
			      memory_order_release);
}

static void *timer_thread(void *arg)
{
	struct timer *t = arg;
	int64_t now = mono_ns();
	int64_t target = (now / t->period_ns + 1) * t->period_ns;
	int64_t warm_end = now + t->warmup_ns;
	uint64_t tick = 0;

	while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
		struct timespec ts = ns_to_ts(target);
		int64_t lat;

		if (health_stall_wanted(&t->beat)) {
			health_stall(&t->stop, -1);
			continue;
		}
		health_park(&t->beat);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		health_unpark(&t->beat);
		now = mono_ns();
		lat = now - target;
		if (now >= warm_end)
			record(&t->st, lat);
		if (lat >= t->period_ns) {
			/* the targets we slept through are gone: count them, do not replay */
			int64_t skip = lat / t->period_ns;

			atomic_fetch_add_explicit(&t->st.missed, (uint64_t)skip, memory_order_relaxed);
			target += skip * t->period_ns;
		}
		tick++;
		atomic_fetch_add_explicit(&t->st.rounds, 1, memory_order_relaxed);
		for (unsigned i = 0; i < t->nsamplers; i++)
			sampler_trigger(t->samplers[i], tick);
		target += t->period_ns;
	}
	return NULL;
}

static void timer_count(const void *obj, struct part_counts *c)
{
	const struct timer *t = obj;

	c->overruns = LD(t->st.missed);
	c->latency_max_us = LD(t->st.max_ns) / NS_PER_US;
}

/* period_us= triggers= ticks= missed=, then the latency after the warm-up. */
static void timer_stat(const void *obj, struct fmt_kv *kv)
{
	const struct timer *t = obj;
	const struct timer_stats *st = &t->st;
	uint64_t ticks = atomic_load_explicit(&st->ticks, memory_order_acquire);

	fmt_kv_i64(kv, "period_us", t->period_ns / 1000);
	fmt_kv_u64(kv, "triggers", LD(st->rounds));
	fmt_kv_u64(kv, "ticks", ticks);
	fmt_kv_u64(kv, "missed", LD(st->missed));
	if (ticks > 0) {
		fmt_kv_i64(kv, "min_us", LD(st->min_ns) / 1000);
		fmt_kv_i64(kv, "avg_us", LD(st->sum_ns) / (int64_t)ticks / 1000);
		fmt_kv_i64(kv, "p50_us", timer_pct_us(st, 50));
		fmt_kv_i64(kv, "p99_us", timer_pct_us(st, 99));
		fmt_kv_i64(kv, "p999_us", timer_pct_us(st, 99.9));
		fmt_kv_i64(kv, "max_us", LD(st->max_ns) / 1000);
	}
	parts_put_faults(kv, "", &t->thread);
}

/* The histogram's bins of 1 us summed below each bound: bins 0..le-1 hold the
 * wake-ups under le us. The count is the bins' own total, so that it agrees
 * with the buckets read in the same pass (ticks may have moved meanwhile). */
static void timer_latency(const void *obj, const uint32_t *le_us, unsigned n, uint64_t *below,
			  uint64_t *count, int64_t *sum_ns)
{
	const struct timer_stats *st = &((const struct timer *)obj)->st;
	uint64_t seen = 0;
	unsigned k = 0;

	for (size_t i = 0; i <= TIMER_HIST_US; i++) {
		for (; k < n && le_us[k] <= i; k++)
			below[k] = seen;
		seen += LD(st->hist[i]);
	}
	for (; k < n; k++)      /* beyond the range (not asked): what is known to be below */
		below[k] = seen - LD(st->hist[TIMER_HIST_US]);
	*count = seen;
	*sum_ns = LD(st->sum_ns);
}

bool timer_parts(struct timer *t, struct parts *ps)
{
	return parts_add(ps, &(struct part){ .kind = PART_TIMER, .obj = t, .count = timer_count,
					     .stat = timer_stat, .latency = timer_latency },
			 &t->beat);
}

int timer_start(struct timer *t, int *degraded)
{
	return thread_start(&t->thread, "plog-timer", t->priority, t->cpu, timer_thread, t,
			    degraded);
}

void timer_stop(struct timer *t)
{
	atomic_store(&t->stop, true);
	thread_join(&t->thread);
}

int64_t timer_pct_us(const struct timer_stats *st, double pct)
{
	uint64_t total = 0, seen = 0, want;

	for (size_t i = 0; i <= TIMER_HIST_US; i++)
		total += atomic_load_explicit(&st->hist[i], memory_order_relaxed);
	if (total == 0)
		return -1;
	want = (uint64_t)(pct / 100.0 * (double)total + 0.5);
	if (want == 0)
		want = 1;
	for (size_t i = 0; i <= TIMER_HIST_US; i++) {
		seen += atomic_load_explicit(&st->hist[i], memory_order_relaxed);
		if (seen >= want)
			return (int64_t)i;
	}
	return TIMER_HIST_US;
}
