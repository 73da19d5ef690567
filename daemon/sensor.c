/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sensor.c - the sensors of what the serial readers cannot see: a thread per CPU, each probing the tty path in turn. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "libc.h"
#include "relaxed.h"
#include "sensor.h"

#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- stall windows: one writer (the sensor's thread), readers that never wait ---- */

/* Sets the two times. */
static void pair_put(struct sensor_win *w, int64_t from, int64_t to)
{
	uint32_t seq = LD(w->seq);

	ST(w->seq, seq + 1);
	/* orders the odd count before the fields: a reader that sees a field's new
	 * value sees the count odd, or changed, and reads again */
	atomic_thread_fence(memory_order_release);
	ST(w->from, from);
	ST(w->to, to);
	/* orders the fields before the even count that says they are whole */
	atomic_store_explicit(&w->seq, seq + 2, memory_order_release);
}

/*
 * Opens a window from `from` to `to`, or widens the latest when the two touch (a
 * stall that goes on across wake-ups is one window, from its first start).
 */
static void win_put(struct sensor_win *w, int64_t from, int64_t to, int64_t touch)
{
	int64_t old_to = LD(w->to);

	if (old_to != 0 && from <= old_to + touch && LD(w->from) < from)
		from = LD(w->from);
	pair_put(w, from, to);
}

/* The two times, whole; false when there are none yet (or its writer keeps changing
 * them, which a thread that writes once a period does not). */
static bool win_get(const struct sensor_win *w, int64_t *from, int64_t *to)
{
	for (int tries = 0; tries < 4; tries++) {
		/* pairs with win_put's last store: the fields it wrote are visible */
		uint32_t s1 = atomic_load_explicit(&w->seq, memory_order_acquire);

		*from = LD(w->from);
		*to = LD(w->to);
		/* orders the field loads before the second count load */
		atomic_thread_fence(memory_order_acquire);
		if (s1 % 2 == 0 && s1 == LD(w->seq))
			return s1 != 0;
	}
	return false;
}

/* ---- the set ---- */

static void cpu_fini(struct sensor_cpu *sc)
{
	if (sc->pty_master >= 0)
		close(sc->pty_master);
	if (sc->pty_slave >= 0)
		close(sc->pty_slave);
	sc->pty_master = sc->pty_slave = -1;
}

/* The probe's pty: raw, the slave non-blocking (a probe read never waits). */
static int cpu_open_pty(struct sensor_cpu *sc)
{
	struct termios t;

	if (openpty(&sc->pty_master, &sc->pty_slave, NULL, NULL, NULL) < 0)
		return -errno;
	if (tcgetattr(sc->pty_slave, &t) < 0)
		return -errno;
	cfmakeraw(&t);
	if (tcsetattr(sc->pty_slave, TCSANOW, &t) < 0
	    || fcntl(sc->pty_slave, F_SETFL, O_NONBLOCK) < 0
	    || fcntl(sc->pty_master, F_SETFD, FD_CLOEXEC) < 0
	    || fcntl(sc->pty_slave, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	return 0;
}

int sensors_init(struct sensors *s, const struct conf *c)
{
	cpu_set_t mask;
	bool any = false;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	for (int i = 0; i <= CONF_CPU_MAX; i++)
		s->cpu_index[i] = -1;
	atomic_init(&s->stop, false);
	if (c->nserial == 0)
		return 0;
	s->conf_period_ns = (int64_t)c->logger.sensor_period_us * NS_PER_US;
	atomic_init(&s->period_ns, s->conf_period_ns);
	atomic_init(&s->unseen_ns, s->conf_period_ns + s->conf_period_ns / 4);
	CPU_ZERO(&mask);
	for (unsigned i = 0; i < c->nserial; i++) {
		const struct conf_serial *p = &c->serial[i];

		if (p->cpu == CONF_CPU_ANY)
			any = true;
		else if (p->cpu <= CONF_CPU_MAX)
			CPU_SET(p->cpu, &mask);
	}
	s->priority = parts_sensor_priority(c);
	if (any && sched_getaffinity(0, sizeof(mask), &mask) < 0)
		return -errno;
	s->cpu = calloc((size_t)CPU_COUNT(&mask), sizeof(*s->cpu));
	if (s->cpu == NULL)
		return -ENOMEM;
	/* a sensor on every CPU of the mask: as many as there are */
	for (int cpu = 0; cpu <= CONF_CPU_MAX && cpu < CPU_SETSIZE; cpu++) {
		struct sensor_cpu *sc;

		if (!CPU_ISSET(cpu, &mask))
			continue;
		sc = &s->cpu[s->n];
		sc->set = s;
		sc->cpu = cpu;
		sc->index = s->n;
		sc->pty_master = sc->pty_slave = -1;
		health_beat_init(&sc->beat);
		s->cpu_index[cpu] = (int)s->n++;
		if (rc == 0)
			rc = cpu_open_pty(sc);
	}
	return rc;
}

void sensors_fini(struct sensors *s)
{
	for (unsigned i = 0; i < s->n; i++)
		cpu_fini(&s->cpu[i]);
	free(s->cpu);
	s->cpu = NULL;
	s->n = 0;
}

/* ---- the thread ---- */

/* Only this thread writes its statistics: plain load and store. */
static void add(_Atomic uint64_t *x, uint64_t v)
{
	ST(*x, LD(*x) + v);
}

static void raise_to(_Atomic int64_t *x, int64_t v)
{
	if (v > LD(*x))
		ST(*x, v);
}

/* The probe came back at t: its delivery, and a window when it was late. */
static void probe_back(struct sensor_cpu *sc, int64_t t)
{
	const struct sensors *s = sc->set;
	int64_t out = LD(sc->probe_out), d = t - out;
	size_t bin = d < 0 ? 0 : (size_t)(d / 10000);
	char buf[64];

	while (read(sc->pty_slave, buf, sizeof(buf)) > 0)
		;       /* one byte; more only if a probe was written twice */
	if (out == 0)
		return;
	add(&sc->hist[bin < SENSOR_HIST ? bin : SENSOR_HIST], 1);
	add(&sc->probes, 1);
	raise_to(&sc->tty_max_ns, d);
	if (d > LD(s->period_ns) / 4)
		add(&sc->tty_stalls, 1);
	pair_put(&sc->probe[sc->probe_next], out, t);
	sc->probe_next = (sc->probe_next + 1) % SENSOR_PROBES;
	ST(sc->probe_out, 0);
}

/* Sleeps until `target`; meanwhile takes its probe back when it comes. */
static void wait_until(struct sensor_cpu *sc, int64_t target)
{
	for (;;) {
		struct pollfd pfd = { .fd = sc->pty_slave, .events = POLLIN };
		int64_t left = target - mono_ns();
		struct timespec ts;

		if (left <= 0)
			return;
		if (LD(sc->probe_out) == 0) {
			ts = ns_to_ts(target);
			health_park(&sc->beat);
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
			health_unpark(&sc->beat);
			return;
		}
		ts = ns_to_ts(left);
		health_park(&sc->beat);
		(void)libc_ppoll(&pfd, 1, &ts, NULL);   /* EINTR: look again */
		health_unpark(&sc->beat);
		if (pfd.revents != 0)
			probe_back(sc, mono_ns());
	}
}

int64_t sensor_budget_period(int64_t period, int64_t conf_period, int64_t used_ns,
			     int64_t span_ns)
{
	if (used_ns * 100 > span_ns * SENSOR_BUDGET_PCT)
		return MIN(period * 2, conf_period * SENSOR_SLOW_MAX);
	if (used_ns * 400 < span_ns * SENSOR_BUDGET_PCT)
		return MAX(period / 2, conf_period);
	return period;
}

/*
 * Once a second: the CPU this thread took, against the budget. The first sensor alone
 * sets the set's period, from every sensor's verdict: longer when any is over, said
 * (unseen) before any sensor sleeps it; shorter only when every one is cheap, and
 * unseen follows it down a check later, when no sensor can still be in a sleep of the
 * longer one (sensor.h).
 */
static void budget(struct sensor_cpu *sc, int64_t now)
{
	struct sensors *s = sc->set;
	int64_t period = LD(s->period_ns), cpu, next;

	if (now - sc->budget_at < NS_PER_S)
		return;
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	next = sensor_budget_period(period, s->conf_period_ns, cpu - LD(sc->cpu_ns),
				    now - sc->budget_at);
	ST(sc->cpu_ns, cpu);
	ST(sc->verdict, next > period ? 1 : next < period ? -1 : 0);
	sc->budget_at = now;
	if (sc->index != 0)
		return;
	for (unsigned i = 1; i < s->n; i++) {
		int v = LD(s->cpu[i].verdict);

		if (v > 0 || (v == 0 && next < period))
			next = v > 0 ? MIN(period * 2, s->conf_period_ns * SENSOR_SLOW_MAX) : period;
	}
	if (next > period) {
		ST(s->unseen_ns, next + next / 4);
		/* release: unseen before the period (a fence ThreadSanitizer cannot build) */
		atomic_store_explicit(&s->period_ns, next, memory_order_release);
	} else {
		if (sc->budget_period == period)
			ST(s->unseen_ns, period + period / 4);
		if (next < period)
			ST(s->period_ns, next);
	}
	sc->budget_period = period;
}

static void *sensor_thread(void *arg)
{
	struct sensor_cpu *sc = arg;
	struct sensors *s = sc->set;
	int64_t period = LD(s->period_ns), now = mono_ns();
	int64_t target = (now / period + 1) * period, last = now;
	uint64_t tick = 0;

	pair_put(&sc->looks, now, now);
	sc->budget_at = now;
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		int64_t late;

		if (health_stall_wanted(&sc->beat)) {
			health_stall(&s->stop, -1);
			continue;
		}
		wait_until(sc, target);
		now = mono_ns();
		late = now - target;
		add(&sc->ticks, 1);
		if (late > period / 4) {
			/* the CPU may have stopped right after the last wake-up */
			win_put(&sc->cpu_win, last, now, LD(s->unseen_ns));
			add(&sc->stalls, 1);
			raise_to(&sc->stall_max_ns, now - last);
			ST(sc->stall_ns, LD(sc->stall_ns) + late);
		}
		/* its turn to probe the tty path, with no probe out */
		if (tick % s->n == sc->index && LD(sc->probe_out) == 0) {
			int64_t t = mono_ns();

			ST(sc->probe_out, t);
			if (write(sc->pty_master, "p", 1) != 1)
				ST(sc->probe_out, 0);   /* cannot probe: the tty path stays unseen */
		}
		/* the end of this look: a reader woken well after it was not waiting to run */
		pair_put(&sc->looks, mono_ns(), last);
		last = LD(sc->looks.from);
		tick++;
		budget(sc, now);
		period = LD(s->period_ns);
		target += period;
		if (target <= now)      /* slept through targets: skip them, do not replay */
			target = (now / period + 1) * period;
	}
	return NULL;
}

int sensors_start(struct sensors *s, int *degraded)
{
	char name[16];

	for (; s->started < s->n; s->started++) {
		struct sensor_cpu *sc = &s->cpu[s->started];
		int rc;

		snprintf(name, sizeof(name), "plog-cpu%d", sc->cpu);
		rc = thread_start(&sc->thread, name, s->priority, sc->cpu, sensor_thread, sc,
				  degraded);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void sensors_stop(struct sensors *s)
{
	atomic_store(&s->stop, true);
	for (unsigned i = 0; i < s->started; i++)
		thread_join(&s->cpu[i].thread);
	s->started = 0;
}

/* ---- the readers' question ---- */

/* When the bytes a reader woken at w on this sensor's CPU found can have reached the
 * line discipline, by the sensor: not before its latest look (the reader would have
 * run then), or the one before when the reader ran right after it; not before a
 * window that had not closed `unseen` before w began. */
static int64_t cpu_since(const struct sensor_cpu *sc, int64_t w, int64_t unseen)
{
	int64_t latest, before, from, to, t;

	if (!win_get(&sc->looks, &latest, &before))
		return INT64_MIN;       /* it never looked */
	t = w - latest > LD(sc->set->period_ns) / 4 ? latest : before;
	if (win_get(&sc->cpu_win, &from, &to) && to >= w - unseen && from < t)
		t = from;
	return t;
}

/*
 * When any CPU's stall can have held the bytes: the tty work of a port runs on the
 * kernel's unbound workers, on any CPU, not where the probe's ran (a worker caught
 * in flush_to_ldisc by a stopped vCPU hands the bytes on when it resumes, the probes
 * meanwhile served by another), and a reader woken on a stopped CPU can be moved to
 * the one it reads on before that CPU's sensor runs again. A window that had not
 * closed `unseen` before d (the bytes reached the line discipline after it), or a
 * sensor overdue at w (its CPU may be stopped still: since its latest look).
 * INT64_MAX: none.
 */
static int64_t any_since(const struct sensor_cpu *sc, int64_t d, int64_t w, int64_t unseen)
{
	int64_t latest, before, from, to, t = INT64_MAX;

	if (win_get(&sc->looks, &latest, &before) && w - latest > unseen)
		t = latest;
	if (win_get(&sc->cpu_win, &from, &to) && to >= d - unseen && from < t)
		t = from;
	return t;
}

int64_t sensors_held(const struct sensors *s, int cpu, int64_t t)
{
	int k = cpu >= 0 && cpu <= CONF_CPU_MAX ? s->cpu_index[cpu] : -1;
	int64_t held = INT64_MAX, latest, before;

	for (unsigned i = 0; i < s->n; i++) {
		const struct sensor_cpu *sc = &s->cpu[i];

		/* the reader's CPU runs it: an interrupt that waited there was taken first */
		if ((int)i == k)
			continue;
		/* another CPU may have stopped right after its latest look */
		if (win_get(&sc->looks, &latest, &before))
			held = MIN(held, latest);
		/* ... or just resumed (its sensor can look before the interrupt's handler
		 * runs): any_since's window */
		held = MIN(held, any_since(sc, t, t, LD(s->unseen_ns)));
	}
	return held;
}

int64_t sensors_from(const struct sensors *s, int cpu, int64_t w, bool woken,
		     enum reasm_stage *stage)
{
	int k = cpu >= 0 && cpu <= CONF_CPU_MAX ? s->cpu_index[cpu] : -1;
	int64_t d = w, from = INT64_MIN, sent, back, held = INT64_MAX;

	*stage = REASM_STAGE_TTY;
	if (s->n == 0)
		return w;
	for (unsigned i = 0; woken && i < s->n; i++) {
		/* the reader's CPU, or each it may have run on when not known */
		int64_t t;

		if (k >= 0 && (unsigned)k != i)
			continue;
		t = cpu_since(&s->cpu[i], w, LD(s->unseen_ns));
		if (t < d)
			d = t;
	}
	/* a sensor that never looked (its thread not run yet: a reader woken at the
	 * start of a slow machine) bounds nothing: as early as the reader's floor (1,
	 * not INT64_MIN: the arithmetic below and the reassembler's stay in range; 0
	 * would say "no bound") */
	if (d == INT64_MIN) {
		*stage = REASM_STAGE_CPU;
		return 1;
	}
	/* the latest probe back before d: bytes that reached the line discipline after
	 * it were handed to the tty worker after it was written */
	for (unsigned i = 0; i < s->n; i++)
		for (unsigned j = 0; j < SENSOR_PROBES; j++)
			if (win_get(&s->cpu[i].probe[j], &sent, &back) && back < d && sent > from)
				from = sent;
	if (from == INT64_MIN)
		from = d - LD(s->unseen_ns);    /* none to lean on: a period and a quarter */
	/* ... but a probe still out is a stall of the tty path that has not ended */
	for (unsigned i = 0; i < s->n; i++) {
		int64_t out = LD(s->cpu[i].probe_out);

		if (out != 0 && d - out > LD(s->period_ns) / 4 && out < from)
			from = out;
	}
	/* ... and every CPU's stall that can have held them, seen or still going on */
	for (unsigned i = 0; i < s->n; i++)
		held = MIN(held, any_since(&s->cpu[i], d, w, LD(s->unseen_ns)));
	if (w - d >= d - from || held < from)
		*stage = REASM_STAGE_CPU;
	return MAX(MIN(from, held), 1);
}

/* ---- figures ---- */

int64_t sensors_tty_pct_us(const struct sensors *s, double pct)
{
	uint64_t total = 0, seen = 0;

	for (unsigned i = 0; i < s->n; i++)
		total += LD(s->cpu[i].probes);
	if (total == 0)
		return -1;
	for (size_t bin = 0; bin <= SENSOR_HIST; bin++) {
		for (unsigned i = 0; i < s->n; i++)
			seen += LD(s->cpu[i].hist[bin]);
		if ((double)seen >= pct / 100.0 * (double)total)
			return (int64_t)bin * 10;
	}
	return SENSOR_HIST * 10;
}

/* One CPU's sensor: cpu= period_us= ticks= stalls= stall_max_us= stall_late_us=, its
 * probes of the tty path and theirs (tty_) over all CPUs once, on the first line. */
static void sensor_stat(const void *obj, struct fmt_kv *kv)
{
	const struct sensor_cpu *sc = obj;
	const struct sensors *s = sc->set;

	fmt_kv_i64(kv, "cpu", sc->cpu);
	fmt_kv_i64(kv, "period_us", LD(s->period_ns) / 1000);
	fmt_kv_i64(kv, "unseen_us", LD(s->unseen_ns) / 1000);
	fmt_kv_u64(kv, "ticks", LD(sc->ticks));
	fmt_kv_u64(kv, "stalls", LD(sc->stalls));
	fmt_kv_i64(kv, "stall_max_us", LD(sc->stall_max_ns) / 1000);
	fmt_kv_i64(kv, "stall_late_us", LD(sc->stall_ns) / 1000);
	fmt_kv_u64(kv, "tty_probes", LD(sc->probes));
	fmt_kv_u64(kv, "tty_stalls", LD(sc->tty_stalls));
	fmt_kv_i64(kv, "tty_max_us", LD(sc->tty_max_ns) / 1000);
	fmt_kv_i64(kv, "cpu_us", LD(sc->cpu_ns) / 1000);
	if (sc->index == 0 && sensors_tty_pct_us(s, 50) >= 0) {
		fmt_kv_i64(kv, "tty_p50_us", sensors_tty_pct_us(s, 50));
		fmt_kv_i64(kv, "tty_p99_us", sensors_tty_pct_us(s, 99));
	}
	parts_put_faults(kv, "", &sc->thread);
}

/* Its probes' delivery for the metrics file (parts.h, latency): the 10 us bins wholly
 * under each bound, all of them, and their sum, which the bins only estimate: each
 * probe at its bin's middle, one beyond the last bin midway to the slowest. */
static void sensor_hist(const void *obj, const uint32_t *le_us, unsigned n, uint64_t *below,
			uint64_t *count, int64_t *sum_ns)
{
	const struct sensor_cpu *sc = obj;
	int64_t top = (int64_t)SENSOR_HIST * 10000, max = LD(sc->tty_max_ns), sum = 0;
	uint64_t seen = 0, h = 0;
	unsigned k = 0;

	for (size_t bin = 0; bin <= SENSOR_HIST; bin++) {
		for (; k < n && le_us[k] / 10 <= bin; k++)
			below[k] = seen;
		h = LD(sc->hist[bin]);
		seen += h;
		sum += (int64_t)h * (bin < SENSOR_HIST ? (int64_t)bin * 10000 + 5000
				     : top + (max > top ? (max - top) / 2 : 0));
	}
	for (; k < n; k++)      /* beyond the range (not asked): what is known to be below */
		below[k] = seen - h;
	*count = seen;
	*sum_ns = sum;
}

bool sensors_parts(struct sensors *s, struct parts *ps)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct part p = { .kind = PART_SENSOR, .obj = &s->cpu[i], .stat = sensor_stat,
				  .latency = sensor_hist };

		if (!parts_add(ps, &p, &s->cpu[i].beat))
			return false;
	}
	return true;
}
