/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_rt.c - the real-time runtime end to end: thread policies, pinning, page faults,
 * and a run without privileges.
 *
 * The real binary on real ptys and a sim parallel port. What the kernel says
 * about each thread (/proc/PID/task/TID/stat and status) is compared with the
 * config; the final STAT lines must show no major fault after start-up.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "sim/sim.h"
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER 1     /* the daemon skips mlockall in these builds */
#else
#define SANITIZER 0
#endif

#define GAP_US 4000

static struct e2e_daemon live;

static int teardown(void **state)
{
	(void)state;
	e2e_kill(&live);
	return 0;
}

struct thr {
	char comm[16];
	int policy, prio;
	char cpus[64];
};

static int read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Every thread of pid as the kernel sees it; returns how many. */
static size_t threads_of(pid_t pid, struct thr *t, size_t max)
{
	char dir[64], path[384], buf[2048];
	struct dirent *e;
	size_t n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d)) != NULL && n < max) {
		char *p, *c;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/comm", dir, e->d_name);
		if (read_text(path, buf, sizeof(buf)) < 0)
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(t[n].comm, sizeof(t[n].comm), "%.15s", buf);
		snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
		if (read_text(path, buf, sizeof(buf)) < 0 || (p = strrchr(buf, ')')) == NULL)
			continue;
		/* fields 3.. follow the name: rt_priority is field 40, policy 41 */
		p++;
		for (int f = 3; f < 40 && p != NULL; f++)
			p = strchr(p + 1, ' ');
		assert_non_null(p);
		assert_int_equal(sscanf(p, " %d %d", &t[n].prio, &t[n].policy), 2);
		snprintf(path, sizeof(path), "%s/%s/status", dir, e->d_name);
		if (read_text(path, buf, sizeof(buf)) < 0 || (c = strstr(buf, "Cpus_allowed_list:")) == NULL)
			continue;
		c += strlen("Cpus_allowed_list:");
		c += strspn(c, " \t");
		c[strcspn(c, "\n")] = '\0';
		snprintf(t[n].cpus, sizeof(t[n].cpus), "%s", c);
		n++;
	}
	closedir(d);
	return n;
}

static const struct thr *find_thr(const struct thr *t, size_t n, const char *comm)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].comm, comm) == 0)
			return &t[i];
	fail_msg("no thread named %s", comm);
	return NULL;
}

static void expect_thr(const struct thr *t, size_t n, const char *comm, int policy, int prio,
		       const char *cpus)
{
	const struct thr *x = find_thr(t, n, comm);

	printf("# thread %-12s policy %d priority %2d cpus %s\n", x->comm, x->policy, x->prio,
	       x->cpus);
	if (x->policy != policy || x->prio != prio)
		fail_msg("%s: policy %d priority %d, configured %d %d", comm, x->policy, x->prio,
			 policy, prio);
	if (cpus != NULL && strcmp(x->cpus, cpus) != 0)
		fail_msg("%s: runs on CPUs %s, configured %s", comm, x->cpus, cpus);
}

static long status_kb(pid_t pid, const char *key)
{
	char path[64], buf[4096], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	assert_int_equal(read_text(path, buf, sizeof(buf)), 0);
	p = strstr(buf, key);
	assert_non_null(p);
	return strtol(p + strlen(key), NULL, 10);
}

static struct sim_cfg traffic(unsigned packets)
{
	return (struct sim_cfg){
		.kind = SIM_BINARY, .packets = packets, .min_len = 1, .max_len = 256,
		.max_frags = 3, .intra_gap_max_us = 400, .inter_gap_min_us = 10000,
		.inter_gap_max_us = 12000, .gap_us = GAP_US, .seed = tu_seed("e2e_rt"),
	};
}

/* Toggles the sim port's status byte until the traffic thread is done. */
static unsigned toggle_pins(const char *sim, struct sim_port *p, unsigned n, unsigned packets)
{
	int fd = open(sim, O_WRONLY | O_CLOEXEC);
	unsigned changes = 0;

	assert_true(fd >= 0);
	for (;;) {
		struct timespec ts = { 0, 20 * 1000000 };
		uint8_t v = (uint8_t)(1u << (changes % 8));
		bool done = true;

		for (unsigned i = 0; i < n; i++)
			done &= atomic_load(&p[i].done) >= packets;
		if (done)
			break;
		assert_int_equal(pwrite(fd, &v, 1, 0), 1);
		changes++;
		nanosleep(&ts, NULL);
	}
	close(fd);
	return changes;
}

static void open_port(struct sim_port *p, const char *name, const char *dir)
{
	char link[300];

	snprintf(link, sizeof(link), "%s/%s", dir, name);
	assert_int_equal(sim_port_open(p, name, link), 0);
}

/* Every byte each of the n ports sent is in the log, in order, as RX lines; then the
 * ports are closed. */
static void every_byte(const struct e2e_log *log, struct sim_port *p, int n)
{
	for (int i = 0; i < n; i++) {
		size_t len, *starts, *idx, nl;
		uint8_t *got = e2e_concat(log, p[i].name, &len, &starts, &idx, &nl);

		assert_int_equal(len, p[i].data_len);
		assert_memory_equal(got, p[i].data, len);
		free(got);
		free(starts);
		free(idx);
		sim_port_close(&p[i]);
	}
}

/* " key=value..." of the last STAT line for `name` in a log (with its leading space). */
static bool last_stat(const struct e2e_log *log, const char *name, char *out, size_t len)
{
	char key[64];

	snprintf(key, sizeof(key), " portlogd STAT %s", name);
	for (size_t i = log->n; i > 0; i--) {
		const char *p = strstr(log->line[i - 1].text, key);
		if (p != NULL && p[strlen(key)] == ' ') {
			snprintf(out, len, "%s", p + strlen(key));
			return true;
		}
	}
	return false;
}

static unsigned long long field(const char *fields, const char *key)
{
	char k[32];
	const char *p;

	snprintf(k, sizeof(k), " %s=", key);
	p = strstr(fields, k);
	if (p == NULL)
		fail_msg("no %s= in '%s'", key, fields);
	return strtoull(p + strlen(k), NULL, 10);
}

/*
 * Non-default priorities and pinning on every kind of thread, under traffic;
 * then the final STAT lines: no major page fault in any thread after start-up.
 */
static void threads_as_configured(void **state)
{
	unsigned seconds = tu_env_uint("PORTLOGD_E2E_RT_SECONDS", 5);
	unsigned packets = seconds * 85;
	char dir[256], conf[300], text[2048], sim[300], logp[300], cpu_a[12], cpu_b[12];
	struct sim_port p[2];
	struct e2e_daemon d;
	struct e2e_log log = { 0 };
	struct thr t[32];
	struct sim_cfg cfg = traffic(packets);
	struct sim_bg b;
	cpu_set_t set;
	int first = -1, last = -1, status;
	size_t n;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set)) {
			if (first < 0)
				first = i;
			last = i;
		}
	snprintf(cpu_a, sizeof(cpu_a), "%d", first);
	snprintf(cpu_b, sizeof(cpu_b), "%d", last);
	e2e_tmpdir(dir, sizeof(dir));
	open_port(&p[0], "a", dir);
	open_port(&p[1], "b", dir);
	snprintf(sim, sizeof(sim), "%s/pins.sim", dir);
	snprintf(logp, sizeof(logp), "%s/portlogd.log", dir);
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s\nflusher_priority = 10\nflusher_cpu = %d\n"
		 "stat_interval_s = 1\n"
		 "[timer]\npriority = 90\ncpu = %d\n"
		 "[parallel pins]\ndriver = sim\ndevice = %s\npriority = 80\ncpu = %d\n"
		 "[serial a]\ndevice = %s/a\ngap_us = %d\npriority = 70\ncpu = %d\nlines = on\n"
		 "[serial b]\ndevice = %s/b\ngap_us = %d\npriority = other\n",
		 logp, last, first, sim, last, dir, GAP_US, first, dir, GAP_US);
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	e2e_write_file(conf, text);
	assert_int_equal(e2e_start(&d, dir, conf), 0);
	live = d;
	assert_int_equal(e2e_wait_ready(&d, 10000), 0);
	/* the service status says real time is in place */
	if (strstr(d.ready_msg, ", rt ok") == NULL)
		fail_msg("STATUS does not say 'rt ok': %s", d.ready_msg);
	for (int i = 0; i < 2; i++)
		assert_int_equal(sim_port_wait_open(&p[i], 5000), 0);

	assert_int_equal(sim_bg_start(&b, p, 2, &cfg, 50), 0);
	n = threads_of(d.pid, t, 32);
	expect_thr(t, n, "portlogd", SCHED_OTHER, 0, NULL);
	expect_thr(t, n, "plog-timer", SCHED_FIFO, 90, cpu_a);
	expect_thr(t, n, "plog-pins", SCHED_FIFO, 80, cpu_b);
	expect_thr(t, n, "plog-a", SCHED_FIFO, 70, cpu_a);
	expect_thr(t, n, "plogl-a", SCHED_FIFO, 70, cpu_a);
	expect_thr(t, n, "plog-b", SCHED_OTHER, 0, NULL);
	expect_thr(t, n, "plog-flush", SCHED_FIFO, 10, cpu_b);
	/* the journal's sender may block in journald: never real-time */
	expect_thr(t, n, "plog-journal", SCHED_OTHER, 0, NULL);
	/* every page of the process is locked (not in sanitizer builds) */
	if (!SANITIZER)
		assert_true(status_kb(d.pid, "VmLck:") >= status_kb(d.pid, "VmRSS:") * 9 / 10);
	printf("# pin changes written: %u\n", toggle_pins(sim, p, 2, packets));
	assert_int_equal(sim_bg_join(&b), 0);

	status = e2e_stop(&d, SIGTERM, 10000, NULL);
	live.pid = 0;
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(e2e_read_log(&log, logp), 0);
	e2e_expect_accounted(&log);
	{
		static const char *const names[] = { "timer", "pins", "a", "b", "flusher" };
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			char f[512];
			assert_true(last_stat(&log, names[i], f, sizeof(f)));
			printf("# %us of traffic, after start-up: %-7s minflt=%llu majflt=%llu\n",
			       seconds, names[i], field(f, "minflt"), field(f, "majflt"));
			/* a property of locked memory: sanitizer builds skip mlockall, and
			 * there a fault retried after mmap_lock contention counts as major */
			if (SANITIZER)
				continue;
			assert_int_equal(field(f, "majflt"), 0);
			if (strcmp(names[i], "a") == 0)
				assert_int_equal(field(f, "lines_majflt"), 0);
		}
	}
	every_byte(&log, p, 2);        /* the pinning took nothing away */
	e2e_free_log(&log);
}

static bool log_has(const struct e2e_log *log, const char *a, const char *b)
{
	for (size_t i = 0; i < log->n; i++)
		if (strstr(log->line[i].text, a) != NULL && (b == NULL || strstr(log->line[i].text, b)))
			return true;
	return false;
}

/*
 * As nobody, with RLIMIT_RTPRIO 0 and RLIMIT_MEMLOCK 64 KiB: no SCHED_FIFO, no
 * mlockall, no /dev/cpu_dma_latency. The daemon runs and logs all the same,
 * each missing item is one EV rt-missing line and one warning that names what
 * to grant; with rt = required it refuses to start.
 */
static void unprivileged_user(void **state)
{
	const struct e2e_child nobody = { .uid = 65534, .gid = 65534, .rtprio = 0,
					  .memlock = 64 * 1024 };
	char dir[256], conf[300], text[1024], sim[300], logp[300], err[4096];
	struct sim_port p;
	struct e2e_daemon d;
	struct e2e_log log = { 0 };
	struct thr t[16];
	struct sim_cfg cfg = traffic(30);
	size_t n, len, *starts, *idx, nl;
	uint8_t *got;
	int status, fd;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	assert_int_equal(chmod(dir, 0777), 0);
	open_port(&p, "a", dir);
	assert_int_equal(chmod(p.slave, 0666), 0);
	snprintf(sim, sizeof(sim), "%s/pins.sim", dir);
	fd = open(sim, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0666), 0);
	close(fd);
	snprintf(logp, sizeof(logp), "%s/portlogd.log", dir);
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s\n"
		 "[parallel pins]\ndriver = sim\ndevice = %s\n"
		 "[serial a]\ndevice = %s/a\ngap_us = %d\n", logp, sim, dir, GAP_US);
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	e2e_write_file(conf, text);
	e2e_set_child(&nobody);
	assert_int_equal(e2e_start(&d, dir, conf), 0);
	live = d;
	if (e2e_wait_ready(&d, 10000) != 0) {
		e2e_show_file(d.err_path);
		fail_msg("the unprivileged daemon did not become ready");
	}
	assert_int_equal(sim_port_wait_open(&p, 5000), 0);
	/* and the service status says what is missing */
	printf("# READY: %s\n", d.ready_msg);
	if (strstr(d.ready_msg, ", rt degraded: no sched_fifo") == NULL
	    || strstr(d.ready_msg, "no cpu_dma_latency") == NULL)
		fail_msg("STATUS does not say what real time lacks: %s", d.ready_msg);
	n = threads_of(d.pid, t, 16);
	for (size_t i = 0; i < n; i++)
		if (t[i].policy != SCHED_OTHER)
			fail_msg("%s runs with policy %d without the privilege", t[i].comm, t[i].policy);
	assert_int_equal(sim_run_all(&p, 1, &cfg, 0), 0);
	status = e2e_stop(&d, SIGTERM, 10000, NULL);
	live.pid = 0;
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(e2e_read_log(&log, logp), 0);
	e2e_expect_accounted(&log);
	/* it logged all the same: every byte */
	got = e2e_concat(&log, "a", &len, &starts, &idx, &nl);
	assert_int_equal(len, p.data_len);
	assert_memory_equal(got, p.data, len);
	free(got);
	free(starts);
	free(idx);
	/* and said what it lost, each once, in the log and in its diagnostics */
	assert_true(log_has(&log, " portlogd EV rt-missing item=sched_fifo need=CAP_SYS_NICE "
			    "rlimit_rtprio=0 ", "errno=EPERM"));
	assert_true(log_has(&log, " portlogd EV rt-missing item=cpu_dma_latency ", "errno=EACCES"));
	assert_int_equal(read_text(d.err_path, err, sizeof(err)), 0);
	printf("# warnings:\n%s", err);
	assert_non_null(strstr(err, "Grant CAP_SYS_NICE"));
	assert_non_null(strstr(err, "/dev/cpu_dma_latency"));
	if (!SANITIZER) {
		assert_true(log_has(&log, " portlogd EV rt-missing item=mlockall need=CAP_IPC_LOCK "
				    "rlimit_memlock=65536", NULL));
		assert_non_null(strstr(err, "Grant CAP_IPC_LOCK"));
	}
	e2e_free_log(&log);

	/* rt = required: the same missing items stop the start-up, with exit 1 */
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s\nrt = required\n"
		 "[serial a]\ndevice = %s/a\n", logp, dir);
	e2e_write_file(conf, text);
	e2e_set_child(&nobody);
	{
		const char *const argv[] = { "portlogd", "-f", "-c", conf, NULL };
		int rc = e2e_run(argv, err, sizeof(err));
		printf("# rt = required: exit %d: %s", rc, strstr(err, "rt = required") ?
		       strstr(err, "rt = required") : err);
		assert_int_equal(rc, 1);
		assert_non_null(strstr(err, "portlogd.conf:1: [logger] rt = required, and rt "
				       "degraded: no sched_fifo"));
	}
	sim_port_close(&p);
}

/*
 * Issue 31: a config beyond what this machine can hold stops the start-up, exit 1,
 * saying which limit and what to do, before anything is allocated. Memory: rings of
 * 2^24 records (2 GiB each) on more ports than MemAvailable holds.
 */
static void beyond_memory(void **state)
{
	char dir[256], conf[300], err[4096], *text, *avail;
	const char *const argv[] = { "portlogd", "-f", "-c", conf, NULL };
	size_t cap, o;
	unsigned long long kb;
	unsigned n;
	int status, rc;

	(void)state;
	avail = e2e_sh(&status, "sed -n 's/^MemAvailable: *\\([0-9]*\\) kB/\\1/p' /proc/meminfo");
	assert_non_null(avail);
	kb = strtoull(avail, NULL, 10);
	free(avail);
	assert_true(kb > 0);
	n = (unsigned)(kb / (2ull << 20)) + 2;      /* 2 GiB a ring: more than there is */
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	cap = 128 + (size_t)n * 64;
	text = malloc(cap);
	assert_non_null(text);
	o = (size_t)snprintf(text, cap, "[logger]\nlog_file = %s/portlogd.log\n"
			     "ring_records = 16777216\n", dir);
	for (unsigned i = 0; i < n; i++)
		o += (size_t)snprintf(text + o, cap - o, "[serial p%u]\ndevice = %s/p%u\n", i, dir, i);
	e2e_write_file(conf, text);
	free(text);
	rc = e2e_run(argv, err, sizeof(err));
	printf("# %u ports of 2 GiB rings, %llu MiB available: exit %d: %s", n, kb >> 10, rc, err);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "portlogd.conf: the config takes about "));
	assert_non_null(strstr(err, "this machine has available (MemAvailable in /proc/meminfo); "
			       "fix: lower [logger] ring_seconds (now 10) or set ring_records"));
	/* --check-config says what it would lock; --check-system that it will not start */
	{
		const char *const check[] = { "portlogd", "-c", conf, "--check-config", NULL };
		const char *const sys[] = { "portlogd", "-c", conf, "--check-system", NULL };
		char out[1 << 16];

		assert_int_equal(e2e_run(check, out, sizeof(out)), 0);
		assert_non_null(strstr(out, "# rings of 16777216 records (2097152 KiB each)"));
		assert_non_null(strstr(out, "# memory: the daemon locks about "));
		assert_int_equal(e2e_run(sys, out, sizeof(out)), 1);
		assert_non_null(strstr(out, "FAIL memory "));
	}
	e2e_remove_dir(dir);
}

/*
 * RLIMIT_MEMLOCK at 8 MiB (systemd's default for a service), above what the daemon has
 * when it locks but below what its config locks with the threads' stacks (2 ports at
 * 1200 baud: about 10 MiB). Before issue 31 mlockall locked what there was, and the
 * stall sensors' stacks then failed: "cannot start the stall sensors' threads: Resource
 * temporarily unavailable", exit 1. Now mlockall is not tried, one EV rt-missing says
 * what the config locks and the limit, and every port opens and logs.
 */
static void memlock_below_the_config(void **state)
{
	enum { N = 2 };
	const struct e2e_child nobody = { .uid = 65534, .gid = 65534, .rtprio = -1,
					  .memlock = 8 << 20 };
	struct sim_port p[N];
	char dir[256], conf[300], logp[300], err[8192], *text;
	size_t cap = 256 + N * 300, o;
	struct e2e_daemon d;
	struct e2e_log log = { 0 };
	struct sim_cfg cfg = traffic(5);
	int status;

	(void)state;
	if (SANITIZER) {
		printf("# built with a sanitizer: the daemon locks nothing\n");
		return;
	}
	e2e_tmpdir(dir, sizeof(dir));
	assert_int_equal(chmod(dir, 0777), 0);
	snprintf(logp, sizeof(logp), "%s/portlogd.log", dir);
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	text = malloc(cap);
	assert_non_null(text);
	o = (size_t)snprintf(text, cap, "[logger]\nlog_file = %s\n", logp);
	for (int i = 0; i < N; i++) {
		char name[8];

		snprintf(name, sizeof(name), "p%d", i);
		open_port(&p[i], name, dir);
		assert_int_equal(chmod(p[i].slave, 0666), 0);
		o += (size_t)snprintf(text + o, cap - o, "[serial p%d]\ndevice = %s/p%d\nbaud = 1200\n"
				      "gap_us = %d\n", i, dir, i, GAP_US);
	}
	e2e_write_file(conf, text);
	free(text);
	e2e_set_child(&nobody);
	assert_int_equal(e2e_start(&d, dir, conf), 0);
	live = d;
	if (e2e_wait_ready(&d, 20000) != 0) {
		e2e_show_file(d.err_path);
		fail_msg("the daemon did not become ready under RLIMIT_MEMLOCK 8 MiB");
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(sim_port_wait_open(&p[i], 5000), 0);
	assert_int_equal(sim_run_all(p, N, &cfg, 0), 0);
	status = e2e_stop(&d, SIGTERM, 10000, NULL);
	live.pid = 0;
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(e2e_read_log(&log, logp), 0);
	e2e_expect_accounted(&log);
	every_byte(&log, p, N);
	assert_true(log_has(&log, " portlogd EV rt-missing item=mlockall need=CAP_IPC_LOCK "
			    "rlimit_memlock=8388608 locks_kib=", "errno=ENOMEM"));
	assert_int_equal(read_text(d.err_path, err, sizeof(err)), 0);
	printf("# warnings:\n%s", err);
	assert_non_null(strstr(err, "not locking memory: the config locks about "));
	assert_non_null(strstr(err, "MiB and RLIMIT_MEMLOCK is 8192 KiB"));
	e2e_free_log(&log);
	e2e_remove_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(threads_as_configured, teardown),
		cmocka_unit_test_teardown(unprivileged_user, teardown),
		cmocka_unit_test_teardown(beyond_memory, teardown),
		cmocka_unit_test_teardown(memlock_below_the_config, teardown),
	};

	if (geteuid() != 0) {
		printf("# e2e_rt needs root (SCHED_FIFO, and becoming nobody): skipped\n");
		return 77;
	}
	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
