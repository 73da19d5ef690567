/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_metrics.c - the metrics file (daemon/metrics.c): its text from the registry, when it is due, how it is replaced. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "clockq.h"
#include "metrics.h"
#include "parts.h"
#include "sensor.h"
#include "timer.h"

/* A part whose STAT fields and figures the test sets. */
struct fake {
	const char *fields;     /* "key=value key=value" */
	struct part_counts c;
};

static void fake_count(const void *obj, struct part_counts *c)
{
	*c = ((const struct fake *)obj)->c;
}

static void fake_stat(const void *obj, struct fmt_kv *kv)
{
	char item[128];
	const char *p = ((const struct fake *)obj)->fields;

	while (*p != '\0') {
		size_t n = strcspn(p, " ");
		char *eq;

		snprintf(item, sizeof(item), "%.*s", (int)n, p);
		eq = strchr(item, '=');
		assert_non_null(eq);
		*eq = '\0';
		fmt_kv_str(kv, item, eq + 1);
		p += n + (p[n] == ' ');
	}
}

static struct parts ps;
static struct timer timer;
static struct conf_timer timer_cfg = { .period_us = 1000 };
static struct fake main_part, gps, lpt, flusher;
static struct metrics m;
/* two real stall sensors (their STAT lines, their histograms), on CPUs 0 and 3; no thread */
static struct sensors sensors;
static struct sensor_cpu sensor_cpu[2];

static void sensors_fake(void)
{
	static const int cpu[2] = { 0, 3 };

	memset(sensor_cpu, 0, sizeof(sensor_cpu));
	sensors = (struct sensors){ .period_ns = 1000000, .unseen_ns = 1250000, .n = 2,
				    .cpu = sensor_cpu };
	for (unsigned i = 0; i < 2; i++)
		sensor_cpu[i] = (struct sensor_cpu){ .set = &sensors, .cpu = cpu[i], .index = i,
						     .pty_master = -1, .pty_slave = -1 };
}

/* The STAT lines' texts, as stat.c hands them over: "NAME fields". */
static void take_all(void)
{
	for (unsigned i = 0; i < ps.n; i++) {
		char text[FMT_FIELDS_MAX];

		if (ps.part[i].stat == NULL)
			continue;
		parts_stat_text(&ps.part[i], text);
		metrics_take(&m, i, text);
	}
}

/* main, the timer (real: its histogram), a serial port with a TX reader, a
 * parallel port, the flusher. */
static int setup(void **state)
{
	(void)state;
	main_part = (struct fake){ .fields = "" };
	gps = (struct fake){
		.fields = "records=5 bytes=40 drops=1 drop_bytes=8 wakeups=9 accounted=6 late=2 "
			  "reopens=1 frame=0 parity=3 overrun=0 brk=0 buf_overrun=0 minflt=- "
			  "majflt=- tx_records=7 tx_bytes=70 tx_drops=0 tx_drop_bytes=0 "
			  "tx_wakeups=1 tx_accounted=7 tx_late=4 tx_reopens=0 tx_frame=1 "
			  "tx_parity=0 tx_overrun=0 tx_brk=0 tx_buf_overrun=0",
		.c = { .port = true, .up = true },
	};
	lpt = (struct fake){
		.fields = "samples=1000 records=3 overruns=4 drops=0 accounted=3 unread=0 "
			  "reopens=2 minflt=0 majflt=0",
		.c = { .port = true, .up = false },
	};
	flusher = (struct fake){
		.fields = "lines=10 bytes=700 write_errors=0 minflt=1 majflt=0",
		.c = { .clock = CLOCKQ_SYNCED, .clock_maxerror_us = 1500 },
	};
	parts_init(&ps);
	timer_init(&timer, &timer_cfg, NULL, 0);
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_MAIN, .obj = &main_part,
						    .count = fake_count }, NULL));
	assert_true(timer_parts(&timer, &ps));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_SERIAL, .port = "gps",
						    .obj = &gps, .count = fake_count,
						    .stat = fake_stat }, NULL));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_TX, .port = "gps" }, NULL));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_PARALLEL, .port = "lpt0",
						    .obj = &lpt, .count = fake_count,
						    .stat = fake_stat }, NULL));
	assert_true(parts_add(&ps, &(struct part){ .kind = PART_FLUSHER, .obj = &flusher,
						    .count = fake_count, .stat = fake_stat }, NULL));
	sensors_fake();
	assert_true(sensors_parts(&sensors, &ps));
	assert_int_equal(metrics_init(&m, "/nonexistent/portlogd.prom", &ps), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	metrics_fini(&m);
	parts_fini(&ps);
	return 0;
}

static const char *format(bool final)
{
	size_t n;

	take_all();
	n = metrics_format(&m, final);
	assert_true(n > 0 && n < m.cap);
	m.out[n] = '\0';     /* for strstr: the buffer has room for much more */
	return m.out;
}

/* text has the whole line `line`. */
/* The metrics of every part of set (a STAT text each, as a round takes them), formatted:
 * the length, more than 0. */
static size_t format_all(struct metrics *mm, struct parts *set)
{
	size_t n;

	assert_int_equal(metrics_init(mm, "/nonexistent/x.prom", set), 0);
	for (unsigned i = 0; i < set->n; i++) {
		char text[FMT_FIELDS_MAX];

		if (set->part[i].stat == NULL)
			continue;
		parts_stat_text(&set->part[i], text);
		metrics_take(mm, i, text);
	}
	n = metrics_format(mm, false);
	assert_true(n > 0);
	return n;
}

static void expect_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return;
	fail_msg("no line '%s' in:\n%s", line, text);
}

static void expect_no(const char *text, const char *what)
{
	if (strstr(text, what) != NULL)
		fail_msg("'%s' in:\n%s", what, text);
}

/* Prometheus's text format: each family's HELP, TYPE, then all its samples
 * together, and no family twice. */
static void expect_grouped(const char *text)
{
	char seen[64][64];
	unsigned nseen = 0;
	char cur[64] = "";

	for (const char *l = text; *l != '\0'; l = strchr(l, '\n') + 1) {
		char name[64];
		size_t n;

		assert_non_null(strchr(l, '\n'));
		if (strncmp(l, "# HELP ", 7) == 0) {
			n = strcspn(l + 7, " ");
			snprintf(name, sizeof(name), "%.*s", (int)n, l + 7);
			for (unsigned i = 0; i < nseen; i++)
				if (strcmp(seen[i], name) == 0)
					fail_msg("family %s twice", name);
			assert_true(nseen < 64);
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
			snprintf(cur, sizeof(cur), "%s", name);
			continue;
		}
		if (l[0] == '#') {
			assert_int_equal(strncmp(l, "# TYPE ", 7), 0);
			assert_int_equal(strncmp(l + 7, cur, strlen(cur)), 0);
			continue;
		}
		/* a sample of the current family (a histogram's with its suffixes) */
		assert_int_equal(strncmp(l, cur, strlen(cur)), 0);
		assert_true(strchr("{ _", l[strlen(cur)]) != NULL);
	}
}

/* Each STAT field a row names is the sample's value, as written; a TX reader's
 * has dir="tx"; fields no row names (wakeups, faults) and "-" are left out. */
static void test_values_are_the_stat_fields(void **state)
{
	const char *t;

	(void)state;
	t = format(false);
	expect_grouped(t);
	expect_line(t, "portlogd_build_info{version=\"" PORTLOGD_VERSION "\"} 1");
	expect_line(t, "# TYPE portlogd_records_total counter");
	expect_line(t, "portlogd_records_total{port=\"gps\"} 5");
	expect_line(t, "portlogd_records_total{port=\"gps\",dir=\"tx\"} 7");
	expect_line(t, "portlogd_records_total{port=\"lpt0\"} 3");
	expect_line(t, "portlogd_bytes_total{port=\"gps\",dir=\"tx\"} 70");
	expect_line(t, "portlogd_dropped_records_total{port=\"gps\"} 1");
	expect_line(t, "portlogd_dropped_bytes_total{port=\"gps\"} 8");
	expect_line(t, "portlogd_late_deliveries_total{port=\"gps\"} 2");
	expect_line(t, "portlogd_late_deliveries_total{port=\"gps\",dir=\"tx\"} 4");
	expect_line(t, "portlogd_port_reopens_total{port=\"gps\"} 1");
	expect_line(t, "portlogd_port_reopens_total{port=\"lpt0\"} 2");
	expect_line(t, "portlogd_uart_parity_errors_total{port=\"gps\"} 3");
	expect_line(t, "portlogd_uart_frame_errors_total{port=\"gps\",dir=\"tx\"} 1");
	expect_line(t, "portlogd_sampler_overruns_total{port=\"lpt0\"} 4");
	expect_line(t, "portlogd_log_lines_total 10");
	expect_line(t, "portlogd_log_bytes_total 700");
	expect_line(t, "portlogd_log_write_errors_total 0");
	/* the serial STAT key "bytes" is not the flusher's, nor "records" a sampler's bytes */
	expect_no(t, "portlogd_bytes_total{port=\"lpt0\"}");
	expect_no(t, "portlogd_bytes_total 700");
	expect_no(t, "wakeups_total{port");
	expect_no(t, "minflt");
	expect_no(t, "relay_lost");     /* no pass: the family is left out, HELP and all */
	expect_line(t, "portlogd_port_up{port=\"gps\"} 1");
	expect_line(t, "portlogd_port_up{port=\"lpt0\"} 0");
	expect_line(t, "portlogd_clock_synced 1");
	expect_line(t, "portlogd_clock_max_error_seconds 0.001500");
	expect_line(t, "portlogd_watchdog_withheld 0");
}

/* Each sensor's STAT fields with its CPU as the label: counters, the longest ones as
 * gauges, microseconds in seconds (exactly); fields no row names (period_us, the
 * percentiles) are left out. */
static void test_sensor_fields(void **state)
{
	struct sensor_cpu *a = &sensor_cpu[0], *b = &sensor_cpu[1];
	const char *t;

	(void)state;
	atomic_store(&a->ticks, 60000);
	atomic_store(&a->stalls, 3);
	atomic_store(&a->stall_max_ns, 101234567);
	atomic_store(&a->stall_ns, 123456789012);
	atomic_store(&a->probes, 30000);
	atomic_store(&a->tty_stalls, 2);
	atomic_store(&a->tty_max_ns, 35000999);
	atomic_store(&b->ticks, 59999);
	atomic_store(&b->probes, 29999);
	t = format(false);
	expect_grouped(t);
	expect_line(t, "# TYPE portlogd_sensor_wakeups_total counter");
	expect_line(t, "portlogd_sensor_wakeups_total{cpu=\"0\"} 60000");
	expect_line(t, "portlogd_sensor_wakeups_total{cpu=\"3\"} 59999");
	expect_line(t, "portlogd_cpu_stalls_total{cpu=\"0\"} 3");
	expect_line(t, "portlogd_cpu_stalls_total{cpu=\"3\"} 0");
	expect_line(t, "# TYPE portlogd_cpu_stall_lateness_seconds_total counter");
	expect_line(t, "portlogd_cpu_stall_lateness_seconds_total{cpu=\"0\"} 123.456789");
	expect_line(t, "# TYPE portlogd_cpu_stall_max_seconds gauge");
	expect_line(t, "portlogd_cpu_stall_max_seconds{cpu=\"0\"} 0.101234");
	expect_line(t, "portlogd_cpu_stall_max_seconds{cpu=\"3\"} 0.000000");
	expect_line(t, "portlogd_tty_probes_total{cpu=\"0\"} 30000");
	expect_line(t, "portlogd_tty_probes_total{cpu=\"3\"} 29999");
	expect_line(t, "portlogd_tty_stalls_total{cpu=\"0\"} 2");
	expect_line(t, "# TYPE portlogd_tty_delivery_max_seconds gauge");
	expect_line(t, "portlogd_tty_delivery_max_seconds{cpu=\"0\"} 0.035000");
	expect_no(t, "portlogd_period");
	expect_no(t, "sensor_period");
	expect_no(t, "unseen");
	expect_no(t, "p50");
	expect_no(t, "p99");
	expect_no(t, "portlogd_sensor_wakeups_total 60000");    /* never without its label */
	expect_no(t, "{port=\"sensor\"}");
	/* the order of the file: after the timer's counters, before the log's */
	assert_true(strstr(t, "portlogd_timer_missed_periods_total")
		    < strstr(t, "portlogd_sensor_wakeups_total"));
	assert_true(strstr(t, "portlogd_tty_delivery_max_seconds")
		    < strstr(t, "portlogd_log_lines_total"));
}

/* The tty path's histogram: both sensors' 10 us bins summed into the buckets (from
 * 10 us: a bin is not split), +Inf and _count the probes; the sum from the bins'
 * middles, the last bin's probes midway between 10.24 ms and the slowest. */
static void test_tty_histogram(void **state)
{
	static const struct { unsigned s; size_t bin; uint64_t n; } bins[] = {
		{ 0, 0, 2 }, { 1, 0, 3 },       /* under 10 us */
		{ 0, 1, 5 },                    /* 10-20 us */
		{ 1, 9, 7 },                    /* 90-100 us */
		{ 0, 10, 11 },                  /* 100-110 us */
		{ 1, 999, 13 },                 /* 9.99-10 ms */
		{ 0, 1000, 17 },                /* 10-10.01 ms: under no bucket but +Inf */
		{ 1, SENSOR_HIST, 19 },         /* 10.24 ms or more */
	};
	int64_t sum = 0;
	char line[96];
	const char *t;

	(void)state;
	for (size_t i = 0; i < sizeof(bins) / sizeof(bins[0]); i++) {
		atomic_store(&sensor_cpu[bins[i].s].hist[bins[i].bin], bins[i].n);
		sum += (int64_t)bins[i].n * (bins[i].bin < SENSOR_HIST
					     ? (int64_t)bins[i].bin * 10000 + 5000 : 0);
	}
	atomic_store(&sensor_cpu[1].tty_max_ns, 30240000);      /* the slowest: 30.24 ms */
	sum += 19 * (10240000 + 10000000);
	t = format(false);
	expect_grouped(t);
	expect_line(t, "# TYPE portlogd_tty_delivery_seconds histogram");
	expect_no(t, "portlogd_tty_delivery_seconds_bucket{le=\"5e-06\"}");
	expect_line(t, "portlogd_tty_delivery_seconds_bucket{le=\"1e-05\"} 5");
	expect_line(t, "portlogd_tty_delivery_seconds_bucket{le=\"2e-05\"} 10");
	expect_line(t, "portlogd_tty_delivery_seconds_bucket{le=\"5e-05\"} 10");
	expect_line(t, "portlogd_tty_delivery_seconds_bucket{le=\"0.0001\"} 17");
	expect_line(t, "portlogd_tty_delivery_seconds_bucket{le=\"0.0002\"} 28");
	expect_line(t, "portlogd_tty_delivery_seconds_bucket{le=\"0.005\"} 28");
	expect_line(t, "portlogd_tty_delivery_seconds_bucket{le=\"0.01\"} 41");
	expect_line(t, "portlogd_tty_delivery_seconds_bucket{le=\"+Inf\"} 77");
	expect_line(t, "portlogd_tty_delivery_seconds_count 77");
	snprintf(line, sizeof(line), "portlogd_tty_delivery_seconds_sum %lld.%09lld",
		 (long long)(sum / 1000000000), (long long)(sum % 1000000000));
	expect_line(t, line);
	/* after the timer's histogram, which keeps its 5 us bucket */
	expect_line(t, "portlogd_timer_latency_seconds_bucket{le=\"5e-06\"} 0");
	assert_true(strstr(t, "portlogd_timer_latency_seconds_count")
		    < strstr(t, "# HELP portlogd_tty_delivery_seconds "));
}

/* No serial port, no sensors: none of their families, HELP and all. */
static void test_no_sensors(void **state)
{
	struct parts few;
	struct metrics mm;
	size_t n;

	(void)state;
	parts_init(&few);
	assert_true(timer_parts(&timer, &few));
	n = format_all(&mm, &few);
	assert_true(n < mm.cap);
	mm.out[n] = '\0';
	expect_line(mm.out, "portlogd_timer_latency_seconds_count 0");
	expect_no(mm.out, "tty_");
	expect_no(mm.out, "cpu_stall");
	expect_no(mm.out, "sensor");
	metrics_fini(&mm);
	parts_fini(&few);
}

/* At stop no port is logged: every port_up is 0, the counters are the last STAT's. */
static void test_final_ports_down(void **state)
{
	const char *t;

	(void)state;
	t = format(true);
	expect_line(t, "portlogd_port_up{port=\"gps\"} 0");
	expect_line(t, "portlogd_port_up{port=\"lpt0\"} 0");
	expect_line(t, "portlogd_records_total{port=\"gps\"} 5");
}

/* The timer's 1 us bins: a bucket counts the wake-ups under its bound; the
 * count is the bins' total (+Inf); the sum in seconds, exact. */
static void test_latency_histogram(void **state)
{
	static const struct { size_t bin; uint64_t n; } bins[] = {
		{ 0, 2 }, { 4, 3 }, { 5, 5 }, { 99, 7 }, { 100, 11 }, { 9999, 13 },
		{ TIMER_HIST_US, 17 },
	};
	const char *t;

	(void)state;
	for (size_t i = 0; i < sizeof(bins) / sizeof(bins[0]); i++)
		atomic_store(&timer.st.hist[bins[i].bin], bins[i].n);
	atomic_store(&timer.st.sum_ns, 123456789012);
	t = format(false);
	expect_line(t, "# TYPE portlogd_timer_latency_seconds histogram");
	expect_line(t, "portlogd_timer_latency_seconds_bucket{le=\"5e-06\"} 5");
	expect_line(t, "portlogd_timer_latency_seconds_bucket{le=\"1e-05\"} 10");
	expect_line(t, "portlogd_timer_latency_seconds_bucket{le=\"5e-05\"} 10");
	expect_line(t, "portlogd_timer_latency_seconds_bucket{le=\"0.0001\"} 17");
	expect_line(t, "portlogd_timer_latency_seconds_bucket{le=\"0.0002\"} 28");
	expect_line(t, "portlogd_timer_latency_seconds_bucket{le=\"0.005\"} 28");
	expect_line(t, "portlogd_timer_latency_seconds_bucket{le=\"0.01\"} 41");
	expect_line(t, "portlogd_timer_latency_seconds_bucket{le=\"+Inf\"} 58");
	expect_line(t, "portlogd_timer_latency_seconds_count 58");
	expect_line(t, "portlogd_timer_latency_seconds_sum 123.456789012");
	expect_line(t, "portlogd_timer_wakeups_total 0");   /* the timer's own STAT fields */
	expect_line(t, "portlogd_timer_missed_periods_total 0");
}

/* Unsynchronised: synced 0 and the kernel's bound; unknown (adjtimex refused):
 * synced 0 and no bound at all. */
static void test_clock_states(void **state)
{
	const char *t;

	(void)state;
	flusher.c.clock = CLOCKQ_UNSYNCED;
	flusher.c.clock_maxerror_us = 16000000;
	t = format(false);
	expect_line(t, "portlogd_clock_synced 0");
	expect_line(t, "portlogd_clock_max_error_seconds 16.000000");
	flusher.c.clock = CLOCKQ_UNKNOWN;
	t = format(false);
	expect_line(t, "portlogd_clock_synced 0");
	expect_no(t, "portlogd_clock_max_error_seconds");
}

/* Due at the first pass, with every STAT round, and when the watchdog's verdict
 * changes (then at once, and only once). */
static void test_due(void **state)
{
	const char *t;

	(void)state;
	assert_true(metrics_due(&m, false));            /* the first pass */
	assert_int_equal(metrics_write(&m, false), -ENOENT);    /* no such directory */
	assert_false(metrics_due(&m, false));
	assert_true(metrics_due(&m, true));
	main_part.c.withheld = true;
	assert_true(metrics_due(&m, false));
	t = format(false);
	expect_line(t, "portlogd_watchdog_withheld 1");
	assert_false(metrics_due(&m, false));
	main_part.c.withheld = false;
	assert_true(metrics_due(&m, false));
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[65536];
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The file is replaced whole: a reader that opened the old one reads it to its
 * end; the new one is readable by others whatever the umask; nothing is left
 * beside it. A failed write leaves the old file and works again later. */
static void test_write_replaces(void **state)
{
	char dir[] = "/tmp/portlogd-test-metrics-XXXXXX", path[128], tmp[160];
	char *old;
	struct stat st;
	mode_t mask;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/portlogd.prom", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	metrics_fini(&m);
	assert_int_equal(metrics_init(&m, path, &ps), 0);
	mask = umask(077);
	take_all();
	assert_int_equal(metrics_write(&m, false), 0);
	umask(mask);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(access(tmp, F_OK), -1);
	old = strdup(read_file(path));
	assert_int_equal((size_t)st.st_size, strlen(old));
	assert_non_null(strstr(old, "portlogd_records_total{port=\"gps\"} 5\n"));
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	gps.fields = "records=6";
	take_all();
	assert_int_equal(metrics_write(&m, false), 0);
	{
		char buf[65536];
		ssize_t n = read(fd, buf, sizeof(buf) - 1);

		assert_true(n >= 0);
		buf[n] = '\0';
		assert_string_equal(buf, old);      /* the old file, whole */
	}
	close(fd);
	assert_non_null(strstr(read_file(path), "portlogd_records_total{port=\"gps\"} 6\n"));
	/* the new file cannot be made (a directory in its place; EACCES for the
	 * service user): the old file stays as it was, and the next round works */
	assert_int_equal(mkdir(tmp, 0755), 0);
	gps.fields = "records=7";
	take_all();
	assert_int_equal(metrics_write(&m, false), -EISDIR);
	assert_non_null(strstr(read_file(path), "port=\"gps\"} 6\n"));
	assert_int_equal(rmdir(tmp), 0);
	take_all();
	assert_int_equal(metrics_write(&m, false), 0);
	assert_non_null(strstr(read_file(path), "port=\"gps\"} 7\n"));
	free(old);
	unlink(path);
	rmdir(dir);
}

struct reader {
	const char *path;
	atomic_bool stop;
	unsigned reads, torn;
};

/* Reads the file whole, again and again, as node_exporter does at each scrape. */
static void *reader_main(void *arg)
{
	static const char head[] = "# HELP portlogd_build_info ";
	static const char tail[] = "\nportlogd_watchdog_withheld 0\n";
	struct reader *r = arg;
	static char buf[65536];

	while (!atomic_load(&r->stop)) {
		int fd = open(r->path, O_RDONLY | O_CLOEXEC);
		size_t n = 0;
		ssize_t k;

		if (fd < 0)
			continue;       /* not there yet */
		while ((k = read(fd, buf + n, sizeof(buf) - n)) > 0)
			n += (size_t)k;
		close(fd);
		r->reads++;
		if (n < sizeof(head) + sizeof(tail) || memcmp(buf, head, sizeof(head) - 1) != 0
		    || memcmp(buf + n - (sizeof(tail) - 1), tail, sizeof(tail) - 1) != 0)
			r->torn++;
	}
	return NULL;
}

/* A reader racing thousands of replacements never reads a part of a file. */
static void test_readers_never_see_half_a_file(void **state)
{
	char dir[] = "/tmp/portlogd-test-metrics-XXXXXX", path[128], fields[32];
	struct reader r = { .path = path };
	pthread_t t;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/portlogd.prom", dir);
	metrics_fini(&m);
	assert_int_equal(metrics_init(&m, path, &ps), 0);
	atomic_init(&r.stop, false);
	assert_int_equal(pthread_create(&t, NULL, reader_main, &r), 0);
	for (unsigned i = 0; i < 3000; i++) {
		snprintf(fields, sizeof(fields), "records=%u", i * 7919);    /* lengths vary */
		gps.fields = fields;
		take_all();
		assert_int_equal(metrics_write(&m, false), 0);
	}
	atomic_store(&r.stop, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	print_message("3000 replacements, %u whole reads, %u torn\n", r.reads, r.torn);
	assert_int_equal(r.torn, 0);
	assert_true(r.reads > 0);
	unlink(path);
	rmdir(dir);
}

/* Two writers of one path (the service and a foreground run of its config): each
 * writes its own temporary file, so every read is one writer's file, whole, and no
 * write fails because the other renamed its file away. */
static void test_two_writers_never_mix(void **state)
{
	char dir[] = "/tmp/portlogd-test-metrics-XXXXXX", path[128], want[2][160];
	static char text[2][65536], buf[65536];
	static const char *const fields[2] = { "records=1", "records=22222222222222" };
	size_t len[2] = { 0, 0 };
	unsigned reads = 0, mixed = 0, running = 2;
	pid_t pid[2];
	int status;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/portlogd.prom", dir);
	for (unsigned w = 0; w < 2; w++) {
		snprintf(want[w], sizeof(want[w]), "%s/want%u", dir, w);
		pid[w] = fork();
		assert_true(pid[w] >= 0);
		if (pid[w] == 0) {
			struct metrics mm;
			char tmp[400];
			unsigned failed = 0;
			FILE *f;

			if (metrics_init(&mm, path, &ps) < 0)
				_exit(2);
			gps.fields = fields[w];
			for (unsigned i = 0; i < 3000; i++) {
				for (unsigned k = 0; k < ps.n; k++) {
					char t[FMT_FIELDS_MAX];

					if (ps.part[k].stat == NULL)
						continue;
					parts_stat_text(&ps.part[k], t);
					metrics_take(&mm, k, t);
				}
				failed += metrics_write(&mm, false) < 0;
				if (i == 0) {
					/* this writer's file, for the reader to compare with */
					snprintf(tmp, sizeof(tmp), "%s.new", want[w]);
					f = fopen(tmp, "w");
					if (f == NULL || fwrite(mm.out, 1, mm.len, f) != mm.len || fclose(f) != 0
					    || rename(tmp, want[w]) < 0)
						_exit(3);
				}
			}
			metrics_fini(&mm);
			_exit(failed > 0);
		}
	}
	while (running > 0) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		for (unsigned w = 0; w < 2; w++)
			if (len[w] == 0 && access(want[w], F_OK) == 0) {
				const char *t = read_file(want[w]);

				len[w] = strlen(t);
				memcpy(text[w], t, len[w]);
			}
		if (fd >= 0) {
			size_t n = 0;
			ssize_t k;

			while ((k = read(fd, buf + n, sizeof(buf) - n)) > 0)
				n += (size_t)k;
			close(fd);
			if (len[0] > 0 && len[1] > 0) {
				reads++;
				if (!(n == len[0] && memcmp(buf, text[0], n) == 0)
				    && !(n == len[1] && memcmp(buf, text[1], n) == 0))
					mixed++;
			}
		}
		for (unsigned w = 0; w < 2; w++)
			if (pid[w] > 0 && waitpid(pid[w], &status, WNOHANG) == pid[w]) {
				if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
					fail_msg("writer %u: %s %d (1: a write failed)", w,
						 WIFEXITED(status) ? "exit" : "signal",
						 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
				pid[w] = 0;
				running--;
			}
	}
	print_message("two writers, 3000 files each: %u reads, %u mixed\n", reads, mixed);
	assert_int_equal(mixed, 0);
	assert_true(len[0] != len[1]);
	{
		/* nothing left beside it: each writer's temporary file was renamed */
		DIR *d = opendir(dir);
		struct dirent *e;

		assert_non_null(d);
		while ((e = readdir(d)) != NULL)
			if (strstr(e->d_name, ".tmp") != NULL)
				fail_msg("left beside the file: %s", e->d_name);
		closedir(d);
	}
	for (unsigned w = 0; w < 2; w++)
		unlink(want[w]);
	unlink(path);
	rmdir(dir);
}

/* A label's value is escaped as the text format says (\\, \", \n), whatever the
 * config allowed: a name cannot end the label or the line. */
static void test_label_escaped(void **state)
{
	struct parts few;
	struct metrics mm;
	struct fake odd = { .fields = "records=5", .c = { .port = true, .up = true } };
	size_t n;

	(void)state;
	parts_init(&few);
	assert_true(parts_add(&few, &(struct part){ .kind = PART_SERIAL, .port = "a\"b\\c\nd",
						     .obj = &odd, .count = fake_count,
						     .stat = fake_stat }, NULL));
	n = format_all(&mm, &few);
	assert_true(n < mm.cap);
	mm.out[n] = '\0';
	expect_line(mm.out, "portlogd_records_total{port=\"a\\\"b\\\\c\\nd\"} 5");
	expect_line(mm.out, "portlogd_port_up{port=\"a\\\"b\\\\c\\nd\"} 1");
	metrics_fini(&mm);
	parts_fini(&few);
}

/* A histogram hook at its largest: every bucket and the count at 2^64 - 1. */
static void full_hist(const void *obj, const uint32_t *le_us, unsigned n, uint64_t *below,
		      uint64_t *count, int64_t *sum_ns)
{
	(void)obj;
	(void)le_us;
	for (unsigned k = 0; k < n; k++)
		below[k] = UINT64_MAX;
	*count = UINT64_MAX;
	*sum_ns = INT64_MAX;
}

/* The text has room for what the registry holds (sized by it): 256 serial ports
 * with a TX reader and lines = on, names of 31 characters, a stall sensor on each
 * of 256 CPUs, every counter at 2^64 - 1. */
#define BIG_PORTS 256
#define BIG_SENSORS 256
static void test_room_for_the_largest(void **state)
{
	static struct parts big;
	static struct fake port[BIG_PORTS], sensor = {
		.fields = "cpu=1023 period_us=100000 unseen_us=125000 ticks=18446744073709551615 "
			  "stalls=18446744073709551615 stall_max_us=18446744073709551615 "
			  "stall_late_us=18446744073709551615 tty_probes=18446744073709551615 "
			  "tty_stalls=18446744073709551615 tty_max_us=18446744073709551615 "
			  "tty_p50_us=10240 tty_p99_us=10240 minflt=18446744073709551615 "
			  "majflt=18446744073709551615",
	};
	static char names[BIG_PORTS][CONF_NAME_MAX];
	static const char *const keys[] = {
		"records", "bytes", "drops", "drop_bytes", "late", "reopens", "frame", "parity",
		"overrun", "brk", "buf_overrun", "relay_lost", "lines_records", "lines_drops",
	};
	static char fields[FMT_FIELDS_MAX];
	struct metrics mm;
	const char *last;
	size_t o = 0, n;

	(void)state;
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		o += (size_t)snprintf(fields + o, sizeof(fields) - o, "%s%s=18446744073709551615 "
				      "tx_%s=18446744073709551615", o ? " " : "", keys[k], keys[k]);
	assert_true(o + CONF_NAME_MAX < FMT_FIELDS_MAX);    /* one STAT line holds them all */
	parts_init(&big);
	assert_true(parts_add(&big, &(struct part){ .kind = PART_MAIN, .obj = &main_part,
						     .count = fake_count }, NULL));
	assert_true(timer_parts(&timer, &big));
	for (unsigned i = 0; i < BIG_PORTS; i++) {
		snprintf(names[i], sizeof(names[i]), "port-%026u", i);
		port[i] = (struct fake){ .fields = fields, .c = { .port = true, .up = true } };
		assert_true(parts_add(&big, &(struct part){ .kind = PART_SERIAL, .port = names[i],
							     .obj = &port[i], .count = fake_count,
							     .stat = fake_stat }, NULL));
		assert_true(parts_add(&big, &(struct part){ .kind = PART_LINES, .port = names[i] },
				      NULL));
		assert_true(parts_add(&big, &(struct part){ .kind = PART_TX, .port = names[i] },
				      NULL));
	}
	assert_true(parts_add(&big, &(struct part){ .kind = PART_FLUSHER, .obj = &flusher,
						     .count = fake_count, .stat = fake_stat }, NULL));
	for (unsigned i = 0; i < BIG_SENSORS; i++)
		assert_true(parts_add(&big, &(struct part){ .kind = PART_SENSOR, .obj = &sensor,
							     .stat = fake_stat, .latency = full_hist },
				      NULL));
	n = format_all(&mm, &big);
	print_message("%d ports and %d sensors, every counter at its largest: %zu bytes of %zu\n",
		      BIG_PORTS, BIG_SENSORS, n, mm.cap);
	last = "portlogd_modem_line_dropped_records_total{port=\"port-00000000000000000000000255\","
	       "dir=\"tx\"} 18446744073709551615\n";
	assert_non_null(memmem(mm.out, n, last, strlen(last)));
	last = "portlogd_cpu_stall_lateness_seconds_total{cpu=\"1023\"} 18446744073709.551615\n";
	assert_non_null(memmem(mm.out, n, last, strlen(last)));
	last = "portlogd_tty_delivery_seconds_bucket{le=\"+Inf\"} ";
	assert_non_null(memmem(mm.out, n, last, strlen(last)));
	last = "\nportlogd_watchdog_withheld 0\n";        /* the last line: all of it fits */
	assert_int_equal(memcmp(mm.out + n - strlen(last), last, strlen(last)), 0);
	metrics_fini(&mm);
	parts_fini(&big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_values_are_the_stat_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_final_ports_down, setup, teardown),
		cmocka_unit_test_setup_teardown(test_latency_histogram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sensor_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tty_histogram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_sensors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clock_states, setup, teardown),
		cmocka_unit_test_setup_teardown(test_due, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_replaces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readers_never_see_half_a_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_writers_never_mix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_label_escaped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_room_for_the_largest, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
