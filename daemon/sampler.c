/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sampler.c - the sampler threads of the transient recorder. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "fmt.h"
#include "log.h"
#include "relaxed.h"
#include "sampler.h"
#include "thread.h"

#define OVERRUN_REPORT_NS NS_PER_S   /* at most one OVERRUN line a second */

static void event_open(struct sampler *s, const uint64_t *unread);

int sampler_init(struct sampler *s, const struct conf_parallel *cfg, uint32_t ring_records,
		 char *err, size_t errlen)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->last = -1;
	s->ops = cfg->driver;
	s->bits = cfg->bits;
	s->strobe = cfg->in.strobe != DRV_STROBE_NONE && s->ops->strobe != NULL;
	s->strobe_ns = (int64_t)cfg->strobe_us * NS_PER_US;
	s->strobe_sleep = cfg->strobe_us > SAMPLER_SPIN_MAX_US;
	atomic_init(&s->busy, 0);
	atomic_init(&s->tick, 0);
	atomic_init(&s->overruns, 0);
	atomic_init(&s->samples, 0);
	atomic_init(&s->unread, 0);
	atomic_init(&s->reopens, 0);
	atomic_init(&s->link, SAMPLER_UP);
	atomic_init(&s->stop, false);
	health_beat_init(&s->beat);
	if (sem_init(&s->go, 0, 0) < 0)
		return -errno;
	rc = source_init(&s->src, cfg->name, ring_records);
	s->src.value_bits = s->bits;
	if (rc < 0) {
		snprintf(err, errlen, "cannot allocate the ring of %u records", ring_records);
		return rc;
	}
	rc = s->ops->open(&cfg->in, &s->state, err, errlen);
	if (rc < 0)
		source_fini(&s->src);
	return rc;
}

void sampler_fini(struct sampler *s)
{
	s->ops->close(s->state);
	s->state = NULL;
	source_fini(&s->src);
	sem_destroy(&s->go);
}

static void sampler_count(const void *obj, struct part_counts *c)
{
	const struct sampler *s = obj;

	c->port = true;
	c->up = LD(s->link) != SAMPLER_LOST;
	c->overruns = LD(s->overruns);
}

/* samples= records= overruns= drops= accounted= unread= reopens=, and its faults. */
static void sampler_stat(const void *obj, struct fmt_kv *kv)
{
	const struct sampler *s = obj;

	fmt_kv_u64(kv, "samples", LD(s->samples));
	fmt_kv_u64(kv, "records", LD(s->src.records));
	fmt_kv_u64(kv, "overruns", LD(s->overruns));
	fmt_kv_u64(kv, "drops", LD(s->src.dropped));
	fmt_kv_u64(kv, "accounted", s->src.accounted);
	fmt_kv_u64(kv, "unread", LD(s->unread));
	fmt_kv_u64(kv, "reopens", LD(s->reopens));
	parts_put_faults(kv, "", &s->thread);
}

bool sampler_parts(struct sampler *s, struct parts *ps)
{
	return parts_add(ps, &(struct part){ .kind = PART_PARALLEL, .port = s->cfg->name,
					     .src = &s->src, .obj = s, .count = sampler_count,
					     .stat = sampler_stat }, &s->beat);
}

/* In-band, so the count sits between the IN lines it belongs to. */
static void report_overruns(struct sampler *s, int64_t t_mono, int64_t t_real, bool force)
{
	uint64_t n = atomic_load_explicit(&s->overruns, memory_order_relaxed);
	struct rec r = { .kind = REC_OVERRUN, .t_mono = t_mono, .t_real = t_real };

	if (n == s->overruns_reported
	    || (!force && t_mono - s->overrun_reported_mono < OVERRUN_REPORT_NS))
		return;
	r.a = (int64_t)(n - s->overruns_reported);
	if (source_push(&s->src, &r, NULL, 0)) {
		s->overruns_reported = n;
		s->overrun_reported_mono = t_mono;
	}
}

/*
 * EV open: what an IN value is (driver, register, mask), so that a reader of the
 * log (portlogd --export vcd) can name the pins; at start and at each reopen.
 * `read=` is the driver's value_name: `lines` for the four modem lines.
 */
static void event_open(struct sampler *s, const uint64_t *unread)
{
	char text[SOURCE_EV_MAX], mask[16];
	struct fmt_kv kv;

	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_str(&kv, "driver", s->ops->name);
	fmt_kv_str(&kv, "device", s->cfg->in.device);
	fmt_kv_str(&kv, "read", s->ops->value_name != NULL ? s->ops->value_name
		   : conf_par_read_name(s->cfg->in.read));
	mask[fmt_hexval(mask, s->cfg->mask & ((1u << s->bits) - 1), s->bits / 4)] = '\0';
	fmt_kv_str(&kv, "mask", mask);
	if (s->strobe) {
		const char *reg = conf_strobe_name(s->cfg->in.strobe);
		char pin[16];
		size_t n = strlen(reg);

		/* by hand: this may run in the sampler, where no stdio is called */
		memcpy(pin, reg, n);            /* "data" or "control" */
		pin[n] = ':';
		pin[n + 1] = (char)('0' + s->cfg->in.strobe_bit % 10);  /* 0-7 */
		pin[n + 2] = '\0';
		fmt_kv_str(&kv, "strobe", pin);
		fmt_kv_u64(&kv, "strobe_us", s->cfg->strobe_us);
		fmt_kv_str(&kv, "strobe_level", s->cfg->in.strobe_high ? "high" : "low");
	}
	if (unread != NULL)
		fmt_kv_u64(&kv, "unread", *unread);
	(void)source_event(&s->src, EV_OPEN, 0, text);     /* rare; fmt_kv does not allocate */
}

/* The port is back (main reopened it): say so, with the ticks it missed, and
 * start over: the next value is an IN line whatever the pins did meanwhile. */
static void port_back(struct sampler *s)
{
	uint64_t unread = atomic_load_explicit(&s->unread, memory_order_relaxed);
	uint64_t missed = unread - s->unread_said;

	event_open(s, &missed);
	irq_port_report(&s->irq, &s->src);
	s->unread_said = unread;
	atomic_fetch_add_explicit(&s->reopens, 1, memory_order_relaxed);
	s->last = -1;
	s->last_err = 0;
	atomic_store_explicit(&s->link, SAMPLER_UP, memory_order_relaxed);
}

/*
 * From setting the strobe to the read: at least strobe_ns, what an ADC's
 * conversion needs. Up to SAMPLER_SPIN_MAX_US the sampler spins on the clock
 * (the vDSO, no system call): a SCHED_FIFO wake-up from a sleep costs tens of
 * microseconds even on PREEMPT_RT (seed 000: 35 us worst case on a tuned PC;
 * hundreds on a busy VM), so a shorter sleep would in fact last its latency,
 * with that latency's jitter, and spinning is both shorter and exact. The CPU
 * is held meanwhile, at most a tenth of the default 1 ms period. A longer wait
 * sleeps in clock_nanosleep(TIMER_ABSTIME) and gives the CPU to the threads
 * below (serial readers): it may end late, never early.
 */
static void strobe_wait(const struct sampler *s, int64_t set_mono)
{
	int64_t until = set_mono + s->strobe_ns;

	if (s->strobe_sleep) {
		struct timespec ts = ns_to_ts(until);

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	spin_until_ns(until);
}

static void sample(struct sampler *s)
{
	uint64_t tick = atomic_load_explicit(&s->tick, memory_order_relaxed);
	int link = atomic_load_explicit(&s->link, memory_order_acquire), v, rc;
	int64_t t_real, t_mono;
	const char *op = "read";

	if (link == SAMPLER_LOST) {
		atomic_fetch_add_explicit(&s->samples, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->unread, 1, memory_order_relaxed);
		return;
	}
	if (link == SAMPLER_REOPENED)
		port_back(s);
	if (s->strobe) {
		/* set, wait, read, reset: the IN record is dated at the read */
		v = s->ops->strobe(s->state, true);
		if (v == 0) {
			strobe_wait(s, mono_ns());
			v = s->ops->read(s->state);
		} else {
			op = "strobe";
		}
		t_real = real_ns();
		t_mono = mono_ns();
		rc = s->ops->strobe(s->state, false);
		if (rc < 0 && v >= 0) {
			v = rc;
			op = "strobe";
		}
	} else {
		v = s->ops->read(s->state);
		t_real = real_ns();
		t_mono = mono_ns();     /* right after the read */
	}
	atomic_fetch_add_explicit(&s->samples, 1, memory_order_relaxed);
	if (v >= 0)
		v &= (int)s->cfg->mask;
	/* overruns before a change are said before it, even within the rate limit */
	report_overruns(s, t_mono, t_real, v >= 0 && v != s->last);
	if (v < 0) {
		if (v != s->last_err) {
			char text[64];
			struct fmt_kv kv;

			fmt_kv_init(&kv, text, sizeof(text));
			fmt_kv_str(&kv, "op", op);
			(void)source_event(&s->src, EV_ERROR, -v, text);
		}
		s->last_err = v;
		/* release: this thread is done with state before main may reopen it */
		atomic_store_explicit(&s->link, SAMPLER_LOST, memory_order_release);
		return;
	}
	s->last_err = 0;
	if (v != s->last) {
		struct rec r = {
			.kind = REC_IN, .t_real = t_real, .t_mono = t_mono, .a = v,
			.b = s->last < 0 ? v : v ^ s->last, .c = (int64_t)tick,
		};
		(void)source_push(&s->src, &r, NULL, 0);     /* a drop is counted */
		s->last = v;
	}
}

static void *sampler_thread(void *arg)
{
	struct sampler *s = arg;

	for (;;) {
		health_park(&s->beat);
		while (sem_wait(&s->go) < 0 && errno == EINTR)
			;
		health_unpark(&s->beat);
		if (health_stall_wanted(&s->beat))
			health_stall(&s->stop, -1);
		if (atomic_load_explicit(&s->busy, memory_order_acquire)) {
			sample(s);
			/* release: the sample is done before the timer may start the next */
			atomic_store_explicit(&s->busy, 0, memory_order_release);
		}
		if (atomic_load(&s->stop))
			break;
	}
	report_overruns(s, mono_ns(), real_ns(), true);
	return NULL;
}

int sampler_start(struct sampler *s, int *degraded)
{
	char name[16];

	snprintf(name, sizeof(name), "plog-%.10s", s->cfg->name);
	/* pushed before the thread runs (thread creation orders it), so it is the
	 * port's first line, after EV start */
	event_open(s, NULL);
	(void)irq_port_apply(&s->irq, "");
	irq_port_report(&s->irq, &s->src);
	return thread_start(&s->thread, name, s->cfg->priority, s->cfg->cpu, sampler_thread, s,
			    degraded);
}

bool sampler_reopen(struct sampler *s)
{
	char err[CONF_ERR_MAX] = "";
	void *state = NULL;
	int rc;

	/* acquire: pairs with the sampler's release, its last read of state is done */
	if (atomic_load_explicit(&s->link, memory_order_acquire) != SAMPLER_LOST)
		return false;
	s->ops->close(s->state);
	s->state = NULL;
	rc = s->ops->open(&s->cfg->in, &state, err, sizeof(err));
	if (rc < 0) {
		if (rc != s->open_err)
			log_warn("[parallel %s] device %s: lost; reopening every %d ms: %s",
				 s->cfg->name, s->cfg->in.device, SAMPLER_RETRY_MS,
				 err[0] ? err : strerror(-rc));
		s->open_err = rc;
		return true;
	}
	s->open_err = 0;
	s->state = state;
	(void)irq_port_apply(&s->irq, "");     /* a UART's thread (driver lines) is new */
	log_info("[parallel %s] device %s: open again", s->cfg->name, s->cfg->in.device);
	/* release: the new state is in place before the sampler sees the port back */
	atomic_store_explicit(&s->link, SAMPLER_REOPENED, memory_order_release);
	return false;
}

void sampler_stop(struct sampler *s)
{
	atomic_store(&s->stop, true);
	(void)sem_post(&s->go);
	thread_join(&s->thread);
}
