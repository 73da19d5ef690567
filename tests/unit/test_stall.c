/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_stall.c - the stall injector (tests/lib/stall.c) stops what it says, while its records say. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "stall.h"
#include "testutil.h"

#define GAPS 4096
#define GAP_NS 2000000		/* a spinner's silence longer than this is a gap */

/* Where a spinner did not run: the silences between its clock reads over GAP_NS. */
struct gaps {
	int64_t a[GAPS], b[GAPS];
	unsigned n;
};

struct spinner {
	int cpu, prio;			/* prio 0: SCHED_OTHER */
	atomic_bool stop;
	struct gaps *g;
	pthread_t t;
};

/* Reads the clock until stop, every tick_ns (0: without a pause), and keeps its gaps. */
static void spin(atomic_bool *stop, struct gaps *g, long tick_ns)
{
	int64_t last = tu_mono_ns();

	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		int64_t now;

		if (tick_ns > 0)
			nanosleep(&(struct timespec){ 0, tick_ns }, NULL);
		now = tu_mono_ns();

		if (now - last > GAP_NS && g->n < GAPS) {
			g->a[g->n] = last;
			g->b[g->n++] = now;
		}
		last = now;
	}
}

static void *spinner_run(void *arg)
{
	struct spinner *s = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		return NULL;
	if (s->prio > 0 && sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ s->prio }) != 0)
		return NULL;
	/* a SCHED_FIFO one wakes every 200 us, as a reader: spinning, it would hold its CPU
	 * from the injector's workers below it */
	spin(&s->stop, s->g, s->prio > 0 ? 200000 : 0);
	return NULL;
}

/* Did the spinner miss all of [from, to]: one of its silences holds it? */
static bool missed(const struct gaps *g, int64_t from, int64_t to)
{
	for (unsigned i = 0; i < g->n; i++)
		if (g->a[i] <= from && g->b[i] >= to)
			return true;
	return false;
}

/* How long the spinner ran within [from, to]: what none of its silences covers. */
static int64_t ran_within(const struct gaps *g, int64_t from, int64_t to)
{
	int64_t ran = to - from;

	for (unsigned i = 0; i < g->n; i++) {
		int64_t a = g->a[i] > from ? g->a[i] : from, b = g->b[i] < to ? g->b[i] : to;

		if (b > a)
			ran -= b - a;
	}
	return ran;
}

/*
 * What Linux lets a starved SCHED_OTHER thread run beside SCHED_FIFO ones in a run of
 * run_ns: period - runtime of every period the run touches (sched-rt-group.rst's RT
 * throttling; since 6.12 the fair deadline server, 50 ms of each second by default, which
 * also holds with throttling off). This machine's kernel used it once within a 46 ms stall.
 */
/* A number a /proc/sys file holds, def when it cannot be read. */
static long read_sysctl(const char *path, long def)
{
	FILE *f = fopen(path, "r");
	long v = def;

	if (f != NULL) {
		if (fscanf(f, "%ld", &v) != 1)
			v = def;
		fclose(f);
	}
	return v;
}

static int64_t fair_grant_ns(int64_t run_ns)
{
	long period = read_sysctl("/proc/sys/kernel/sched_rt_period_us", 1000000);
	long runtime = read_sysctl("/proc/sys/kernel/sched_rt_runtime_us", 950000);

	if (runtime < 0 || period - runtime < 50000) {
		period = 1000000;
		runtime = 950000;
	}
	return (period - runtime) * 1000LL * (run_ns / (period * 1000LL) + 2);
}

/* cfg for a short run: stalls of 40-60 ms every 40-80 ms. */
static struct stall_cfg quick(enum stall_kind mode, int cpu, pid_t pid)
{
	struct stall_cfg c;

	stall_defaults(&c);
	c.mode = mode;
	c.cpu = cpu;
	c.pid = pid;
	c.min_ms = 40;
	c.max_ms = 60;
	c.pause_min_ms = 40;
	c.pause_max_ms = 80;
	c.seed = tu_seed("test_stall");
	return c;
}

/* Runs the injector ms beside the spinners (fifo may be NULL); the stalls' count. */
static unsigned beside_spinners(struct stall *st, const struct stall_cfg *cfg, int ms,
				struct spinner *other, struct spinner *fifo)
{
	struct spinner *sp[2] = { other, fifo };
	int n;

	for (int i = 0; i < 2 && sp[i] != NULL; i++) {
		atomic_init(&sp[i]->stop, false);
		sp[i]->g->n = 0;
		assert_int_equal(pthread_create(&sp[i]->t, NULL, spinner_run, sp[i]), 0);
	}
	assert_int_equal(stall_start(st, cfg), 0);
	tu_sleep_ms(ms);
	n = stall_stop(st);
	for (int i = 0; i < 2 && sp[i] != NULL; i++) {
		atomic_store(&sp[i]->stop, true);
		pthread_join(sp[i]->t, NULL);
	}
	assert_true(n > 0);
	return (unsigned)n;
}

/*
 * A SCHED_OTHER thread on CPU 0 is held through every stall (cpu:0, all, tty: the tty
 * worker's case) but for what the kernel grants a starved one (fair_grant_ns), and most
 * stalls hold it throughout. With a second CPU, a SCHED_FIFO 60 thread there runs at no
 * moment of an all stall, and through some tty ones (our readers' case). (Not both on one
 * CPU: the SCHED_FIFO one would starve the other whatever the injector does.)
 */
static void cpu_kinds(enum stall_kind kind)
{
	static struct gaps other_g, fifo_g;
	bool two = sysconf(_SC_NPROCESSORS_ONLN) > 1 && kind != STALL_CPU;
	struct spinner other = { .cpu = 0, .prio = 0, .g = &other_g },
		       fifo = { .cpu = 1, .prio = 60, .g = &fifo_g };
	struct stall_cfg cfg = quick(kind, 0, 0);
	struct stall st;
	int64_t t0 = tu_mono_ns();
	unsigned n = beside_spinners(&st, &cfg, 600, &other, two ? &fifo : NULL), ran_through = 0;
	unsigned held = 0;
	int64_t ran = 0, grant = fair_grant_ns(tu_mono_ns() - t0);
	char line[200];

	for (unsigned i = 0; i < n; i++) {
		const struct stall_rec *r = stall_rec(&st, i);

		assert_int_equal(r->kind, kind);
		assert_true(r->end_ns > r->start_ns);
		assert_true(r->end_ns - r->start_ns <= 60 * 1000000LL);
		if (kind == STALL_CPU)
			assert_int_equal(r->who, 0);
		ran += ran_within(other.g, r->start_ns, r->end_ns);
		held += missed(other.g, r->start_ns, r->end_ns);
		if (!two)
			continue;
		if (kind == STALL_TTY)
			ran_through += !missed(fifo.g, r->start_ns, r->end_ns);
		else if (!missed(fifo.g, r->start_ns, r->end_ns))
			fail_msg("stall %u let a SCHED_FIFO 60 thread run", i);
	}
	if (ran > grant || held * 2 <= n)
		fail_msg("a SCHED_OTHER thread of CPU 0 ran %lld us within the stalls (the kernel "
			 "grants %lld us), held throughout %u of %u", (long long)ran / 1000,
			 (long long)grant / 1000, held, n);
	if (two && kind == STALL_TTY)
		assert_true(ran_through > 0);
	stall_summary(&st, line, sizeof(line));
	printf("# %s; a SCHED_OTHER thread held throughout %u (ran %lld us within), a SCHED_FIFO "
	       "60 thread ran through %u\n", line, held, (long long)ran / 1000, ran_through);
	stall_free(&st);
}

static void cpu_stops_its_cpu(void **state)
{
	(void)state;
	cpu_kinds(STALL_CPU);
}

static void all_stops_every_cpu(void **state)
{
	(void)state;
	cpu_kinds(STALL_ALL);
}

static void tty_stops_only_what_is_below(void **state)
{
	(void)state;
	cpu_kinds(STALL_TTY);
}

/* stop:PID: the process runs at no moment of any stall, and runs again after each. */
static void stop_stops_the_process(void **state)
{
	struct gaps *g = mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			      -1, 0);
	atomic_bool *stop = mmap(NULL, sizeof(*stop), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct stall st;
	struct stall_cfg cfg;
	char line[200];
	pid_t pid;
	int n;

	(void)state;
	assert_true(g != MAP_FAILED && stop != MAP_FAILED);
	atomic_init(stop, false);
	g->n = 0;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		spin(stop, g, 0);
		_exit(0);
	}
	cfg = quick(STALL_STOP, -1, pid);
	assert_int_equal(stall_start(&st, &cfg), 0);
	tu_sleep_ms(600);
	n = stall_stop(&st);
	atomic_store(stop, true);
	assert_int_equal(waitpid(pid, NULL, 0), pid);	/* it was continued: it ends */
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		const struct stall_rec *r = stall_rec(&st, (unsigned)i);

		assert_int_equal(r->kind, STALL_STOP);
		assert_int_equal(r->who, pid);
		if (!missed(g, r->start_ns, r->end_ns))
			fail_msg("the process ran during stall %d", i);
	}
	stall_summary(&st, line, sizeof(line));
	printf("# %s\n", line);
	stall_free(&st);
	munmap(g, sizeof(*g));
	munmap(stop, sizeof(*stop));
}

/* Without the privilege to run SCHED_FIFO it says so: never an injector that does not stall. */
static void refused_without_privilege(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct stall_cfg cfg = quick(STALL_ALL, -1, 0);
		struct stall st;

		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(2);
		_exit(stall_start(&st, &cfg) == -EPERM ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cpu_stops_its_cpu),
		cmocka_unit_test(all_stops_every_cpu),
		cmocka_unit_test(tty_stops_only_what_is_below),
		cmocka_unit_test(stop_stops_the_process),
		cmocka_unit_test(refused_without_privilege),
	};

	if (geteuid() != 0) {
		printf("# test_stall: SCHED_FIFO and setuid need root: skipped\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
