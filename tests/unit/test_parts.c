/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_parts.c - the daemon's parts: the threads a config asks for (one rule for the timer), the registry, and what STATUS= and STAT lines make of it. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"
#include "flush.h"
#include "notify.h"
#include "parts.h"
#include "rt.h"
#include "stat.h"

static struct conf conf;        /* large: not on the stack */

/* Built without libieee1284 (-DPORTLOGD_IEEE1284=OFF) the parallel port takes the sim
 * driver, on a line after the others: the config lines the plan names stay where they are. */
#ifdef PORTLOGD_IEEE1284
#define LPT_DRIVER ""
#else
#define LPT_DRIVER "driver = sim\n"
#endif

static void load(const char *text)
{
	char err[CONF_ERR_MAX];

	if (conf_parse_string(&conf, "t.conf", text, err, sizeof(err)) != 0)
		fail_msg("config: %s", err);
}

/* ---- the plan: every thread the config asks for ---- */

static void test_plan_every_kind(void **state)
{
	static const struct {
		enum part_kind kind;
		const char *port, *key;
		int priority, cpu, line;
		uint32_t ring;          /* its records (conf_ring_*); 0: none */
	} want[] = {
		{ PART_FLUSHER, NULL, "[logger] flusher_cpu", 10, 1, 1, 0 },
		{ PART_TIMER, NULL, "[timer] cpu", 90, 0, 4, 0 },
		/* 9600 baud: 2133 records in 10 s */
		{ PART_SERIAL, "gps", "[serial gps] cpu", 70, 1, 7, 4096 },
		{ PART_LINES, "gps", "[serial gps] cpu", 70, 1, 7, 4096 },
		/* 115200 baud: 25600 */
		{ PART_SERIAL, "plc", "[serial plc] cpu", 97, CONF_CPU_ANY, 13, 32768 },
		{ PART_TX, "plc", "[serial plc] cpu", 97, CONF_CPU_ANY, 13, 32768 },
		/* a timer period of 1 ms: 10000 */
		{ PART_PARALLEL, "lpt0", "[parallel lpt0] cpu", CONF_PRIO_OTHER, 0, 16, 16384 },
		/* plc's readers may run on any CPU: a sensor on each, at gps's 70 */
		{ PART_SENSOR, NULL, "[serial NAME] cpu", 70, CONF_CPU_ANY, 1, 0 },
	};
	struct part_plan *t;
	unsigned n;

	(void)state;
	load("[logger]\nflusher_priority = 10\nflusher_cpu = 1\n"          /* 1 */
	     "[timer]\npriority = 90\ncpu = 0\n"                            /* 4 */
	     "[serial gps]\ndevice = /dev/ttyS0\npriority = 70\ncpu = 1\nlines = on\n" /* 7 */
	     "baud = 9600\n"
	     "[serial plc]\ndevice = /dev/ttyS1\ntx_device = /dev/ttyS2\n"   /* 13 */
	     "[parallel lpt0]\ndevice = parport0\npriority = other\ncpu = 0\n" /* 16 */
	     LPT_DRIVER);
	t = parts_plan(&conf, &n);
	assert_non_null(t);
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (unsigned i = 0; i < n; i++) {
		char key[64];

		assert_int_equal(t[i].kind, want[i].kind);
		if (want[i].port == NULL)
			assert_null(t[i].port);
		else
			assert_string_equal(t[i].port, want[i].port);
		assert_int_equal(t[i].priority, want[i].priority);
		assert_int_equal(t[i].cpu, want[i].cpu);
		assert_int_equal(t[i].line, want[i].line);
		assert_int_equal(t[i].ring, want[i].ring);
		parts_cpu_key(&t[i], key, sizeof(key));
		assert_string_equal(key, want[i].key);
	}
	free(t);
}

/*
 * The one rule: the timer runs exactly when there is a [parallel] port. Without
 * one it is no thread: not in the plan, not in the SCHED_FIFO probe's priority,
 * and its cpu is not checked (with one, a CPU no thread can use is an error).
 */
static void test_timer_rule(void **state)
{
	struct part_plan *t;
	struct rt rt;
	char err[CONF_ERR_MAX];
	unsigned n;

	(void)state;
	load("[timer]\npriority = 99\ncpu = 1023\n[serial gps]\ndevice = /dev/ttyS0\n");
	assert_false(parts_timer_runs(&conf));
	t = parts_plan(&conf, &n);
	assert_int_equal(n, 3);
	assert_int_equal(t[0].kind, PART_FLUSHER);
	assert_int_equal(t[1].kind, PART_SERIAL);
	assert_int_equal(t[2].kind, PART_SENSOR);
	rt_init(&rt, &conf);
	assert_int_equal(rt.fifo_prio, 97);     /* the reader's, not the timer's 99 */
	assert_int_equal(rt_check_cpus(&conf, err, sizeof(err)), 0);

	load("[timer]\npriority = 99\ncpu = 1023\n[parallel lpt0]\ndevice = parport0\n"
	     LPT_DRIVER);
	assert_true(parts_timer_runs(&conf));
	free(t);
	t = parts_plan(&conf, &n);
	assert_int_equal(n, 3);     /* no serial port: no sensor */
	assert_int_equal(t[1].kind, PART_TIMER);
	free(t);
	rt_init(&rt, &conf);
	assert_int_equal(rt.fifo_prio, 99);
	assert_int_equal(rt_check_cpus(&conf, err, sizeof(err)), -1);
	if (strstr(err, "t.conf:1: [timer] cpu: no thread of this process can run on CPU 1023")
	    == NULL)
		fail_msg("not the timer's CPU error: %s", err);
}

/* No limit but the machine's (issue 31): 256 serial ports, each pinned to a CPU of
 * its own (a stall sensor each) with a lines thread and a tap's second port, and 32
 * parallel ports: every thread in the plan, every ring sized by its port. */
static void test_plan_scale(void **state)
{
	struct part_plan *t;
	unsigned rings = 0, n;

	(void)state;
	conf_defaults(&conf);
	for (unsigned i = 0; i < 256; i++) {
		struct conf_serial *s = conf_add_serial(&conf);

		assert_non_null(s);
		s->lines = true;
		s->cpu = (int)i;
		s->tty.baud = i % 2 ? 9600 : 115200;
		snprintf(s->name, sizeof(s->name), "s%u", i);
		snprintf(s->device, sizeof(s->device), "/dev/s%u", i);
		snprintf(s->tx_device, sizeof(s->tx_device), "/dev/t%u", i);
		conf_resolve_serial(s);
	}
	for (unsigned i = 0; i < 32; i++) {
		struct conf_parallel *p = conf_add_parallel(&conf);

		assert_non_null(p);
		snprintf(p->name, sizeof(p->name), "p%u", i);
	}
	t = parts_plan(&conf, &n);
	assert_non_null(t);
	/* flusher, timer, 3 a serial port, 32 samplers, a sensor on each of 256 CPUs */
	assert_int_equal(n, 2 + 3 * 256 + 32 + 256);
	for (unsigned i = 0; i < n; i++) {
		if (t[i].ring == 0)
			continue;
		rings++;
		if (t[i].kind == PART_PARALLEL)
			assert_int_equal(t[i].ring, 16384);
		else    /* the port's baud: s0 115200, s1 9600 ... */
			assert_int_equal(t[i].ring, strtoul(t[i].port + 1, NULL, 10) % 2 ? 4096 : 32768);
	}
	assert_int_equal(rings, 3 * 256 + 32);
	free(t);
	conf_free(&conf);
}

/* ---- the registry ---- */

struct fake {
	struct part_counts c;
	const char *fields;
};

static void fake_count(const void *obj, struct part_counts *c)
{
	*c = ((const struct fake *)obj)->c;
}

static void fake_stat(const void *obj, struct fmt_kv *kv)
{
	fmt_kv_str(kv, "x", ((const struct fake *)obj)->fields);
}

/* Probes only for parts with a thread, named kind or kind:port; the registry grows
 * as parts come (thousands), each part and probe where it was put. */
static void test_registry(void **state)
{
	static struct parts ps;
	static struct health_beat beat[3];
	struct source src;

	(void)state;
	memset(&src, 0, sizeof(src));
	for (int i = 0; i < 3; i++)
		health_beat_init(&beat[i]);
	parts_init(&ps);
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_MAIN, .src = &src }, NULL));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_TIMER }, &beat[0]));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_SERIAL, .port = "gps",
						    .src = &src }, &beat[1]));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_FLUSHER }, &beat[2]));
	assert_int_equal(ps.n, 4);
	assert_int_equal(ps.nprobe, 3);
	assert_string_equal(ps.probe[0].name, "timer");
	assert_string_equal(ps.probe[1].name, "serial:gps");
	assert_string_equal(ps.probe[2].name, "flusher");
	assert_ptr_equal(ps.probe[1].beat, &beat[1]);
	assert_int_equal(health_find(ps.probe, ps.nprobe, "serial:gps"), 1);
	assert_string_equal(parts_stat_name(&ps.part[1]), "timer");
	assert_string_equal(parts_stat_name(&ps.part[2]), "gps");
	while (ps.n < 5000)
		assert_true(parts_add(&ps, &(struct part){ .kind = PART_LINES, .port = "x" },
				      ps.n % 2 ? &beat[0] : NULL));
	assert_int_equal(ps.n, 5000);
	assert_int_equal(ps.nprobe, 3 + 4996 / 2);
	assert_string_equal(ps.probe[1].name, "serial:gps");
	assert_ptr_equal(ps.probe[1].beat, &beat[1]);
	assert_string_equal(ps.probe[ps.nprobe - 1].name, "lines:x");
	assert_int_equal(ps.part[4999].kind, PART_LINES);
	assert_ptr_equal(ps.part[2].src, &src);
	parts_fini(&ps);
	assert_int_equal(ps.n, 0);
}

/* STATUS= sums the parts' figures: ports and the ones up, the ports' records and
 * drops (not main's own ring), overruns, the largest latency, lines. */
static void test_status_figures(void **state)
{
	static struct parts ps;
	static struct notify n;
	struct source mainsrc, a, b;
	struct fake timer = { .c = { .overruns = 3, .latency_max_us = 45 } };
	/* -1: they measure no latency (what the real count functions leave alone) */
	struct fake reader = { .c = { .port = true, .up = true, .latency_max_us = -1 } };
	struct fake sampler = { .c = { .port = true, .overruns = 4, .latency_max_us = -1 } };
	struct fake flusher = { .c = { .lines = 1240, .latency_max_us = -1 } };
	struct notify_figures fig;

	(void)state;
	memset(&mainsrc, 0, sizeof(mainsrc));
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	atomic_store(&mainsrc.records, 1000);
	atomic_store(&a.records, 100);
	atomic_store(&a.dropped, 2);
	atomic_store(&b.records, 20);
	atomic_store(&b.dropped, 3);
	parts_init(&ps);
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_MAIN, .src = &mainsrc }, NULL));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_TIMER, .obj = &timer,
						    .count = fake_count }, NULL));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_SERIAL, .port = "gps", .src = &a,
						    .obj = &reader, .count = fake_count }, NULL));
	/* a lines thread: its ring counts, it is no port of its own */
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_LINES, .port = "gps", .src = &b },
			      NULL));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_PARALLEL, .port = "lpt0",
						    .obj = &sampler, .count = fake_count }, NULL));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_FLUSHER, .obj = &flusher,
						    .count = fake_count }, NULL));
	unsetenv("NOTIFY_SOCKET");
	notify_init(&n, &ps);
	notify_figures(&n, &fig);
	assert_int_equal(fig.ports, 2);
	assert_int_equal(fig.ports_up, 1);
	assert_int_equal(fig.records, 120);
	assert_int_equal(fig.drops, 5);
	assert_int_equal(fig.overruns, 7);
	assert_int_equal(fig.timer_max_us, 45);
	assert_int_equal(fig.lines, 1240);
	assert_null(fig.stalled);
	/* without a part that measures latency, no timer figure */
	ps.part[1].count = NULL;
	notify_figures(&n, &fig);
	assert_int_equal(fig.timer_max_us, -1);
	assert_int_equal(fig.overruns, 4);
	notify_fini(&n);
}

/* STAT lines in registry order, each starting with its part's name; overruns of a
 * part without a ring become OVERRUN lines of portlogd (once each), those of a
 * part with one do not (it says them in its own ring). */
static void test_stat_lines(void **state)
{
	static struct parts ps;
	static struct flusher f;
	char dir[] = "/tmp/portlogd-test-parts-XXXXXX", path[64], line[256];
	struct fake timer = { .c = { .overruns = 5 }, .fields = "t" };
	struct fake sampler = { .c = { .port = true, .overruns = 9 }, .fields = "s" };
	struct fake flusher = { .fields = "f" };
	struct source src;
	static const char *const want[] = {
		"portlogd OVERRUN 5", "portlogd OVERRUN 2", "portlogd STAT timer x=t",
		"portlogd STAT lpt0 x=s", "portlogd STAT flusher x=f",
	};
	char err[CONF_ERR_MAX];
	FILE *fp;
	unsigned k = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/log", dir);
	conf_defaults(&conf);
	conf.logger.timestamp = CONF_TS_EPOCH;
	snprintf(conf.logger.log_file, sizeof(conf.logger.log_file), "%s", path);
	assert_int_equal(source_init(&src, "lpt0", 16), 0);
	parts_init(&ps);
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_TIMER, .obj = &timer,
						    .count = fake_count, .stat = fake_stat }, NULL));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_PARALLEL, .port = "lpt0",
						    .src = &src, .obj = &sampler,
						    .count = fake_count, .stat = fake_stat }, NULL));
	if (flush_init(&f, &conf, &ps, err, sizeof(err)) != 0)
		fail_msg("flush_init: %s", err);
	assert_int_equal(f.nsrc, 1);            /* the rings of the parts, not the others */
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_FLUSHER, .obj = &flusher,
						    .stat = fake_stat }, NULL));
	stat_hook(&ps, &f, false, false);       /* OVERRUN 5, no STAT yet */
	stat_hook(&ps, &f, false, false);       /* nothing new */
	timer.c.overruns = 7;
	stat_hook(&ps, &f, true, false);        /* OVERRUN 2, and the STAT lines */
	assert_int_equal(flush_write(&f), 0);
	fp = fopen(path, "r");
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		assert_true(k < sizeof(want) / sizeof(want[0]));
		assert_string_equal(strchr(line, ' ') + 1, want[k++]);
	}
	fclose(fp);
	assert_int_equal(k, sizeof(want) / sizeof(want[0]));
	flush_fini(&f);
	source_fini(&src);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_every_kind),
		cmocka_unit_test(test_timer_rule),
		cmocka_unit_test(test_plan_scale),
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_status_figures),
		cmocka_unit_test(test_stat_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
