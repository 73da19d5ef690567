/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_checksys.c - portlogd --check-system, the real binary on this machine. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"

#define OUT_MAX 65536

/* The system checks every report has, in order. */
static const char *const system_checks[] = {
	"config", "kernel-rt", "rt-throttle", "cpufreq", "cpuidle", "cpu-dma-latency", "smt",
	"isolation", "irqbalance", "rt-tasks", "tty-worker", "stall-sensors", "clock-sensor",
	"rlimit-rtprio",
	"rlimit-memlock", "memory", "threads", "clocksource", "clock", "apparmor",
};
#define NSYSTEM (sizeof(system_checks) / sizeof(system_checks[0]))

struct report {
	unsigned lines, count[3];       /* OK, WARN, FAIL */
	unsigned sum[3];                /* from the summary line */
	char name[64][64];              /* the check names, in order */
	bool fail[64];
};

static char out[OUT_MAX];
static char dir[256], conf[300];
static int ptm = -1;
static const char *pty;

static int setup(void **state)
{
	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	ptm = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (ptm < 0 || grantpt(ptm) < 0 || unlockpt(ptm) < 0 || (pty = ptsname(ptm)) == NULL)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (ptm >= 0)
		close(ptm);
	return 0;
}

/*
 * Parses a report: every line but the last is "LEVEL NAME TEXT" with LEVEL
 * OK, WARN or FAIL, every WARN and FAIL has "; fix: ", the last line is
 * "N OK, N WARN, N FAIL" and agrees with the lines.
 */
static void parse_report(const char *text, struct report *r)
{
	static const char *const level[] = { "OK   ", "WARN ", "FAIL " };
	const char *l = text;

	memset(r, 0, sizeof(*r));
	for (;;) {
		const char *nl = strchr(l, '\n');
		int lv = -1;

		if (nl == NULL)
			fail_msg("the report does not end in a newline:\n%s", text);
		if (nl[1] == '\0') {
			if (sscanf(l, "%u OK, %u WARN, %u FAIL\n", &r->sum[0], &r->sum[1],
				   &r->sum[2]) != 3)
				fail_msg("last line is not the summary: %.*s", (int)(nl - l), l);
			break;
		}
		for (int i = 0; i < 3; i++)
			if (strncmp(l, level[i], 5) == 0)
				lv = i;
		if (lv < 0 || r->lines == 64)
			fail_msg("not a check line: %.*s", (int)(nl - l), l);
		if (sscanf(l + 5, "%63s", r->name[r->lines]) != 1)
			fail_msg("no check name: %.*s", (int)(nl - l), l);
		if (lv > 0 && strstr(l, "; fix: ") == NULL)
			fail_msg("a %s without a fix: %.*s", level[lv], (int)(nl - l), l);
		r->fail[r->lines] = lv == 2;
		r->count[lv]++;
		r->lines++;
		l = nl + 1;
	}
	for (int i = 0; i < 3; i++)
		if (r->count[i] != r->sum[i])
			fail_msg("summary says %u %s, the report has %u:\n%s", r->sum[i], level[i],
				 r->count[i], text);
}

/* Is there a line "LEVEL NAME ...fragment..."? */
static bool has_line(const char *level, const char *name, const char *fragment)
{
	for (const char *l = out; *l != '\0'; l = strchr(l, '\n') + 1) {
		const char *nl = strchr(l, '\n');
		char n[64];

		if (nl == NULL)
			return false;
		if (strncmp(l, level, strlen(level)) == 0 && l[strlen(level)] == ' '
		    && sscanf(l + 5, "%63s", n) == 1 && strcmp(n, name) == 0
		    && memmem(l, (size_t)(nl - l), fragment, strlen(fragment)) != NULL)
			return true;
	}
	return false;
}

/* The system checks, then exactly `ports` in order. */
static void expect_names(const struct report *r, const char *const *ports, unsigned nports)
{
	if (r->lines != NSYSTEM + nports)
		fail_msg("%u check lines, expected %zu:\n%s", r->lines, NSYSTEM + nports, out);
	for (unsigned i = 0; i < NSYSTEM; i++)
		assert_string_equal(r->name[i], system_checks[i]);
	for (unsigned i = 0; i < nports; i++)
		assert_string_equal(r->name[NSYSTEM + i], ports[i]);
}

static int check_system(const char *root)
{
	const char *argv[] = { "portlogd", "--check-system", "-c", conf, root ? "--root" : NULL,
			       root, NULL };

	return e2e_run(argv, out, sizeof(out));
}

/* Writes the config, runs --check-system, checks the form and the check names. */
static int run_checked(struct report *r, const char *const *ports, unsigned nports,
		       const char *config)
{
	int rc;

	e2e_write_file(conf, config);
	rc = check_system(NULL);
	parse_report(out, r);
	expect_names(r, ports, nports);
	return rc;
}

/* A pty and a device that does not exist: the missing one fails, exit 1. */
static void test_missing_device(void **state)
{
	static const char *const ports[] = { "port:pty", "port:pty:low-latency",
					     "port:pty:delivery", "port:pty:irq", "port:gone" };
	struct report r;
	char text[1024];
	int rc;

	(void)state;
	snprintf(text, sizeof(text), "[serial pty]\ndevice = %s\n[serial gone]\n"
		 "device = %s/ttyUSB9\n", pty, dir);
	rc = run_checked(&r, ports, 5, text);
	printf("%s", out);      /* the real machine's report, for the record */
	for (unsigned i = 0; i < 4; i++)
		assert_false(r.fail[NSYSTEM + i]);
	assert_true(r.fail[NSYSTEM + 4]);
	assert_true(has_line("FAIL", "port:gone", "ttyUSB9: no such device; fix: "));
	/* a pty has no low-latency flag and no interrupt */
	assert_true(has_line("OK", "port:pty:low-latency", "is not a UART"));
	assert_true(has_line("OK", "port:pty:irq", "n/a: a pseudo-terminal has no interrupt"));
	assert_true(has_line("OK", "port:pty:delivery", "pty: each byte reaches the reader as it "
			     "comes"));
	assert_int_equal(rc, 1);
}

/* Devices that exist: exit 0 exactly when no line is a FAIL. */
static void test_present_devices(void **state)
{
	static const char *const ports[] = { "port:pty", "port:pty:low-latency",
					     "port:pty:delivery", "port:pty:irq", "port:lpt",
					     "port:lpt:irq" };
	struct report r;
	char text[1024];
	int rc;

	(void)state;
	snprintf(text, sizeof(text), "[serial pty]\ndevice = %s\n[parallel lpt]\ndriver = sim\n"
		 "device = %s/lpt.sim\n", pty, dir);
	rc = run_checked(&r, ports, 6, text);
	for (unsigned i = NSYSTEM; i < r.lines; i++)
		assert_false(r.fail[i]);
	assert_int_equal(rc, r.count[2] == 0 ? 0 : 1);
}

/* The first line of a small file (its newline cut) in buf; false when it cannot be read. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok = f != NULL && fgets(buf, (int)len, f) != NULL;

	if (f != NULL)
		fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* This machine's UART (the VM's 16550A at ttyS0, if there is one): its interrupt
 * line is named, and on a kernel that does not thread interrupts (this VM's
 * PREEMPT_DYNAMIC without threadirqs) the row says there is nothing to set. */
static void test_uart_irq(void **state)
{
	static const char *const ports[] = { "port:u", "port:u:low-latency", "port:u:delivery",
					     "port:u:irq" };
	char text[256], irq[32], want[64], rt[8] = "", cmdline[4096] = "", type[8] = "";
	struct report r;
	bool threaded;

	(void)state;
	if (!read_line("/sys/class/tty/ttyS0/irq", irq, sizeof(irq)) || atoi(irq) <= 0
	    || access("/dev/ttyS0", F_OK) < 0) {
		printf("# no UART at /dev/ttyS0 with an interrupt: skipped\n");
		skip();
	}
	(void)read_line("/sys/kernel/realtime", rt, sizeof(rt));
	(void)read_line("/proc/cmdline", cmdline, sizeof(cmdline));
	threaded = rt[0] == '1' || strstr(cmdline, "threadirqs") != NULL;
	(void)read_line("/sys/class/tty/ttyS0/type", type, sizeof(type));
	snprintf(text, sizeof(text), "[serial u]\ndevice = /dev/ttyS0\n");
	(void)run_checked(&r, ports, 4, text);
	/* the kernel's own 16550A: its type and level read from sysfs, and root may set it */
	if (atoi(type) == 4 && geteuid() == 0)
		assert_true(has_line("OK", "port:u:delivery", "16550A")
			    && (has_line("OK", "port:u:delivery", "portlogd sets 1 when it opens")
				|| has_line("OK", "port:u:delivery", "at receive trigger 1")));
	snprintf(want, sizeof(want), "irq %d", atoi(irq));
	printf("# threaded interrupts: %s\n", threaded ? "yes" : "no");
	if (!threaded)
		assert_true(has_line("OK", "port:u:irq", "is not threaded"));
	assert_true(has_line("OK", "port:u:irq", want) || has_line("WARN", "port:u:irq", want));
}

/* --root: every path is read below it, so the machine's own pty is not seen. */
static void test_root(void **state)
{
	static const char *const ports[] = { "port:pty" };
	struct report r;
	char text[1024], root[300], path[400];
	int rc;

	(void)state;
	snprintf(root, sizeof(root), "%s/root", dir);
	assert_int_equal(mkdir(root, 0755), 0);
	snprintf(path, sizeof(path), "%s/proc", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/proc/version", root);
	e2e_write_file(path, "Linux version 6.1.0-rt (gcc) #1 SMP PREEMPT_RT Debian\n");
	snprintf(text, sizeof(text), "[serial pty]\ndevice = %s\n", pty);
	e2e_write_file(conf, text);
	rc = check_system(root);
	parse_report(out, &r);
	expect_names(&r, ports, 1);
	assert_true(has_line("OK", "kernel-rt", "PREEMPT_RT kernel (/proc/version)"));
	assert_true(has_line("WARN", "rt-throttle", "cannot read"));
	assert_true(has_line("WARN", "tty-worker", "cannot read /sys/devices/virtual/workqueue/"
			     "cpumask (ENOENT)"));
	assert_true(has_line("FAIL", "port:pty", ": no such device"));
	assert_int_equal(rc, 1);
}

/* A task that has been busy, pinned to cpu, then SCHED_FIFO 1 (sleeping: it takes no
 * CPU from anyone, but it has used most of one since it started). */
static pid_t busy_rt_child(int cpu)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct sched_param sp = { .sched_priority = 1 };
		struct timespec t;
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((size_t)cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			_exit(1);
		(void)prctl(PR_SET_NAME, "tty-starver");
		do
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
		while (t.tv_sec == 0 && t.tv_nsec < 50000000);
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			_exit(2);
		for (;;)
			pause();
	}
	for (int i = 0; i < 1000 && sched_getscheduler(pid) != SCHED_FIFO; i++) {
		assert_int_equal(waitpid(pid, NULL, WNOHANG), 0);
		usleep(1000);
	}
	assert_int_equal(sched_getscheduler(pid), SCHED_FIFO);
	return pid;
}

static bool cpu_online(int c)
{
	char path[64], v[8] = "1";

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", c);
	if (access(path, F_OK) < 0)
		return false;
	/* CPU 0 may have no online file: it cannot go offline */
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", c);
	(void)read_line(path, v, sizeof(v));
	return v[0] == '1';
}

/* This machine's tty worker: with a busy SCHED_FIFO task pinned to every CPU of the
 * unbound workqueue's cpumask (as root), the row WARNs, and names them when nothing
 * else made it warn. */
static void test_tty_worker(void **state)
{
	static const char *const ports[] = { "port:pty", "port:pty:low-latency",
					     "port:pty:delivery", "port:pty:irq" };
	char text[1024], mask[64] = "", online[64] = "", want[64];
	pid_t child[32];
	unsigned n = 0;
	cpu_set_t mine;
	struct report r;
	bool clear;

	(void)state;
	if (!read_line("/sys/devices/virtual/workqueue/cpumask", mask, sizeof(mask))
	    || geteuid() != 0 || sched_getaffinity(0, sizeof(mine), &mine) < 0) {
		printf("# not root, or no workqueue cpumask: skipped\n");
		skip();
	}
	assert_true(read_line("/sys/devices/system/cpu/online", online, sizeof(online)));
	snprintf(text, sizeof(text), "[serial pty]\ndevice = %s\n", pty);
	(void)run_checked(&r, ports, 4, text);
	assert_true(has_line("OK", "tty-worker", "the kernel's unbound workers (the tty worker) "
			     "may run on CPUs") || has_line("WARN", "tty-worker", "; fix: "));
	/* busy real-time tasks of others (another test's stalls) would be listed with ours */
	clear = has_line("OK", "tty-worker", "no busy real-time task runs there");
	assert_true(has_line("OK", "stall-sensors", "sensor_period_us = 1000: a thread on each "
			     "CPU it may use"));
	/* a busy task on each online CPU of the mask (one this process may not use: skip) */
	if (strchr(mask, ',') != NULL) {
		printf("# more than 32 CPUs: skipped\n");
		skip();
	}
	for (int c = 0; c < 32; c++) {
		if (!(strtoul(mask, NULL, 16) >> c & 1) || !cpu_online(c))
			continue;
		if (!CPU_ISSET((size_t)c, &mine)) {
			for (unsigned i = 0; i < n; i++)
				kill(child[i], SIGKILL);
			printf("# CPU %d of the mask is not this process's: skipped\n", c);
			skip();
		}
		child[n++] = busy_rt_child(c);
	}
	assert_true(n > 0);
	(void)run_checked(&r, ports, 4, text);
	for (unsigned i = 0; i < n; i++) {
		kill(child[i], SIGKILL);
		waitpid(child[i], NULL, 0);
	}
	printf("# online %s, cpumask %s: %u busy SCHED_FIFO tasks, one a CPU%s\n", online, mask, n,
	       clear ? "" : " (the row warned before them: their names not asserted)");
	if (!has_line("WARN", "tty-worker", "can hold all of them at once"))
		fail_msg("%u busy SCHED_FIFO tasks on the mask's CPUs, but:\n%s", n, out);
	for (unsigned i = 0; i < n && n <= 6 && clear; i++) {
		snprintf(want, sizeof(want), "%d tty-starver SCHED_FIFO 1 on CPUs ", (int)child[i]);
		if (!has_line("WARN", "tty-worker", want))
			fail_msg("no '%s' in:\n%s", want, out);
	}
}

/* What is not a report: config errors stay 78, bad options 1. */
static void test_errors(void **state)
{
	const char *no_root[] = { "portlogd", "--check-system", "-c", conf, "--root",
				  "/nonexistent-root", NULL };
	const char *root_alone[] = { "portlogd", "-c", conf, "--root", "/", NULL };

	(void)state;
	e2e_write_file(conf, "[serial a]\nbaud = 9600\n");
	assert_int_equal(check_system(NULL), 78);
	assert_non_null(strstr(out, "[serial a] device: missing"));
	assert_null(strstr(out, "kernel-rt"));
	e2e_write_file(conf, "[serial a]\ndevice = /dev/ttyS0\n");
	assert_int_equal(e2e_run(no_root, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "--root /nonexistent-root: not a directory"));
	assert_int_equal(e2e_run(root_alone, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "--root DIR only goes with --check-system"));
}

/* Without -c and without the default config: system checks only, said in one line. */
static void test_no_config(void **state)
{
	const char *argv[] = { "portlogd", "--check-system", NULL };
	struct report r;

	(void)state;
	if (access("/etc/portlogd/portlogd.conf", F_OK) == 0)
		skip();         /* an installed config: its ports would be checked */
	(void)e2e_run(argv, out, sizeof(out));
	parse_report(out, &r);
	expect_names(&r, NULL, 0);
	assert_true(has_line("WARN", "config", "/etc/portlogd/portlogd.conf: not found: port "
			     "checks skipped"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_device),
		cmocka_unit_test(test_present_devices),
		cmocka_unit_test(test_uart_irq),
		cmocka_unit_test(test_tty_worker),
		cmocka_unit_test(test_root),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_no_config),
	};

	return e2e_finish(cmocka_run_group_tests(tests, setup, teardown));
}
