/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_notify.c - the real binary under a real NOTIFY_SOCKET: READY, STATUS, WATCHDOG, reload, stop. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "testutil.h"

#define WAIT_MS 15000               /* generous: every wait ends as soon as its message comes */

static struct e2e_daemon live;
static int pty_master = -1;
static char transcript[16384];      /* every datagram, printed when a test fails */

static int teardown(void **state)
{
	(void)state;
	e2e_kill(&live);
	if (pty_master >= 0)
		close(pty_master);
	pty_master = -1;
	return 0;
}

static int64_t clock_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t real_now(void) { return clock_of(CLOCK_REALTIME); }
static int64_t mono_now(void) { return clock_of(CLOCK_MONOTONIC); }

/* A serial port on a pty and a sim parallel port, so every kind of thread runs;
 * with `metrics`, the metrics file DIR/portlogd.prom and STAT rounds every minute
 * (none while the test runs: the file is written at start and when it must). */
static void setup_with(char *dir, size_t dlen, char *conf, size_t clen, bool metrics)
{
	char text[1024], slave[64];

	e2e_tmpdir(dir, dlen);
	pty_master = e2e_open_pty(slave, sizeof(slave));    /* for [serial a] */
	assert_true(pty_master >= 0);
	snprintf(conf, clen, "%s/portlogd.conf", dir);
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s/portlogd.log\nflush_interval_ms = 20\n%s%s%s"
		 "[timer]\nperiod_us = 1000\nwarmup_ms = 0\npriority = other\ncpu_dma_latency = off\n"
		 "[parallel lpt0]\ndriver = sim\ndevice = %s/lpt0.sim\npriority = other\n"
		 "[serial a]\ndevice = %s\ndelimiter = \\n\npriority = other\n",
		 dir, metrics ? "stat_interval_s = 60\nmetrics_file = " : "stat_interval_s = 0\n",
		 metrics ? dir : "", metrics ? "/portlogd.prom\n" : "", dir, slave);
	e2e_write_file(conf, text);
	transcript[0] = '\0';
}

static void setup(char *dir, size_t dlen, char *conf, size_t clen)
{
	setup_with(dir, dlen, conf, clen, false);
}

/* Waits until the metrics file has the line `line` (a failure after WAIT_MS). */
static void wait_metrics(const char *dir, const char *line)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/portlogd.prom", dir);
	for (int waited = 0;; waited += 10) {
		char *text = e2e_read_file(path, NULL);
		bool has = text != NULL && strstr(text, line) != NULL;

		free(text);
		if (has)
			return;
		if (waited >= WAIT_MS)
			fail_msg("%s never had '%s'", path, line);
		tu_sleep_ms(10);
	}
}

/* The next datagram, or a failure naming what we waited for. */
static void next_msg(char *buf, size_t len, const char *waiting_for)
{
	int n = e2e_notify_recv(&live, buf, len, WAIT_MS);
	size_t tl = strlen(transcript);

	if (n <= 0)
		fail_msg("%s while waiting for %s; received so far:\n%s(stderr: %s)",
			 n < 0 ? "the daemon exited" : "nothing came", waiting_for, transcript,
			 live.err_path);
	snprintf(transcript + tl, sizeof(transcript) - tl, "[%s]\n", buf);
}

static bool is_ping(const char *msg)
{
	return e2e_notify_has(msg, "WATCHDOG", "1") != NULL;
}

/* A periodic status: STATUS= alone, no state change with it. */
static bool is_status_only(const char *msg)
{
	return strncmp(msg, "STATUS=", 7) == 0 && strchr(msg, '\n') == NULL;
}

/* CLOCK_MONOTONIC timerfds the daemon holds, from /proc (the flusher also
 * holds a CLOCK_REALTIME one, which tells it of clock steps). */
static int count_timerfds(pid_t pid)
{
	char path[64], target[64];
	struct dirent *e;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
	dir = opendir(path);
	assert_non_null(dir);
	while ((e = readdir(dir)) != NULL) {
		char link[320];
		ssize_t k;

		snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
		k = readlink(link, target, sizeof(target) - 1);
		if (k > 0) {
			char info[320], line[128];
			FILE *f;

			target[k] = '\0';
			if (strcmp(target, "anon_inode:[timerfd]") != 0)
				continue;
			snprintf(info, sizeof(info), "/proc/%ld/fdinfo/%s", (long)pid, e->d_name);
			f = fopen(info, "r");
			assert_non_null(f);
			while (fgets(line, sizeof(line), f) != NULL)
				n += strcmp(line, "clockid: 1\n") == 0;    /* CLOCK_MONOTONIC */
			fclose(f);
		}
	}
	closedir(dir);
	return n;
}

/* Waits (bounded) until the log holds a line containing `what`; returns that line's time. */
static int64_t wait_log(const char *dir, const char *what)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/portlogd.log", dir);
	for (int i = 0; i < WAIT_MS / 10; i++) {
		struct e2e_log log = { 0 };
		int64_t t = -1;

		if (e2e_read_log(&log, path) == 0)
			for (size_t k = 0; k < log.n && t < 0; k++)
				if (strstr(log.line[k].text, what) != NULL)
					t = log.line[k].t;
		e2e_free_log(&log);
		if (t >= 0)
			return t;
		usleep(10000);
	}
	fail_msg("no line with '%s' in %s", what, path);
	return -1;
}

static void expect_stop(void)
{
	char msg[4096];
	int status;

	assert_int_equal(kill(live.pid, SIGTERM), 0);
	do
		next_msg(msg, sizeof(msg), "STOPPING=1");
	while (is_ping(msg) || is_status_only(msg));
	if (e2e_notify_has(msg, "STOPPING", "1") == NULL)
		fail_msg("after SIGTERM the next message is not STOPPING=1:\n%s", transcript);
	status = e2e_stop(&live, SIGTERM, WAIT_MS, NULL);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * The whole life under systemd: READY=1 first (after the ports are open), then
 * WATCHDOG=1 pings and STATUS= figures while healthy, RELOADING=1 and READY=1
 * around SIGHUP's reopen, STOPPING=1 on SIGTERM, exit 0.
 */
static void lifecycle(void **state)
{
	static const char *const env[] = { "WATCHDOG_USEC=1000000", NULL };
	char dir[256], conf[300], msg[4096], pid[24];
	int pings = 0, statuses = 0;
	int64_t t_ready, t_open;

	(void)state;
	setup(dir, sizeof(dir), conf, sizeof(conf));
	assert_int_equal(e2e_start_env(&live, dir, conf, env), 0);
	next_msg(msg, sizeof(msg), "READY=1");
	t_ready = real_now();
	/* nothing comes before READY=1, and it names the main pid */
	assert_non_null(e2e_notify_has(msg, "READY", "1"));
	snprintf(pid, sizeof(pid), "%ld", (long)live.pid);
	assert_non_null(e2e_notify_has(msg, "MAINPID", pid));
	assert_non_null(strstr(msg, "STATUS=2/2 ports up"));
	/* the port was opened before READY=1 was sent */
	t_open = wait_log(dir, " a EV open ");
	assert_true(t_open < t_ready);
	/* one timer, for the watchdog and the status */
	assert_int_equal(count_timerfds(live.pid), 1);

	assert_int_equal(write(pty_master, "hello\n", 6), 6);
	while (pings < 3 || statuses < 1) {
		next_msg(msg, sizeof(msg), "WATCHDOG=1 and STATUS=");
		if (is_ping(msg)) {
			pings++;
		} else if (is_status_only(msg)) {
			/* the live figures: ports, records (the packet, the open event), the timer */
			assert_non_null(strstr(msg, "STATUS=2/2 ports up, "));
			assert_non_null(strstr(msg, " records, 0 drops, "));
			assert_non_null(strstr(msg, " lines, timer max "));
			statuses++;
		} else {
			fail_msg("unexpected message while running:\n%s", transcript);
		}
	}

	assert_int_equal(kill(live.pid, SIGHUP), 0);
	do
		next_msg(msg, sizeof(msg), "RELOADING=1");
	while (is_ping(msg) || is_status_only(msg));
	if (e2e_notify_has(msg, "RELOADING", "1") == NULL || e2e_notify_has(msg, "MONOTONIC_USEC", NULL) == NULL)
		fail_msg("after SIGHUP the next message is not RELOADING=1 with MONOTONIC_USEC=:\n%s",
			 transcript);
	do
		next_msg(msg, sizeof(msg), "READY=1 after the reopen");
	while (is_ping(msg) || is_status_only(msg));
	if (e2e_notify_has(msg, "READY", "1") == NULL)
		fail_msg("after RELOADING=1 the next message is not READY=1:\n%s", transcript);
	(void)wait_log(dir, " portlogd EV reopen file=");

	expect_stop();
	(void)wait_log(dir, " a RX 6 68656c6c6f0a ");
}

/*
 * PORTLOGD_TEST_STALL makes one thread stop progressing, without waiting, after
 * the second ping (at its next wake-up): the daemon must say which thread stalled and send no
 * WATCHDOG=1 after that (systemd would restart it), yet still stop cleanly. The
 * metrics file says it at once, unless the flusher, its writer, is the thread
 * that stalled.
 */
static void stall(const char *thread)
{
	char dir[256], conf[300], msg[4096], env_stall[64], want[128];
	const char *const env[] = { "WATCHDOG_USEC=500000", env_stall, NULL };
	int pings = 0;
	int64_t quiet_end;

	snprintf(env_stall, sizeof(env_stall), "PORTLOGD_TEST_STALL=%s", thread);
	snprintf(want, sizeof(want), "STATUS=watchdog withheld: thread %s stalled; ", thread);
	setup_with(dir, sizeof(dir), conf, sizeof(conf), true);
	assert_int_equal(e2e_start_env(&live, dir, conf, env), 0);
	next_msg(msg, sizeof(msg), "READY=1");
	assert_non_null(e2e_notify_has(msg, "READY", "1"));
	wait_metrics(dir, "\nportlogd_watchdog_withheld 0\n");
	for (;;) {
		next_msg(msg, sizeof(msg), want);
		/* a stall begins at the thread's next wake-up: give the reader bytes */
		assert_int_equal(write(pty_master, "x", 1), 1);
		if (is_ping(msg))
			pings++;
		else if (strncmp(msg, want, strlen(want)) == 0)
			break;
		else if (!is_status_only(msg))
			fail_msg("unexpected message before the stall:\n%s", transcript);
	}
	assert_true(pings >= 2);
	if (strcmp(thread, "flusher") != 0)
		wait_metrics(dir, "\nportlogd_watchdog_withheld 1\n");
	/* four watchdog intervals without a ping: systemd would have acted twice over */
	quiet_end = mono_now() + 2000 * 1000000LL;
	for (int64_t left; (left = (quiet_end - mono_now()) / 1000000) > 0;) {
		int n = e2e_notify_recv(&live, msg, sizeof(msg), (int)left);

		if (n < 0)
			fail_msg("the stalled daemon exited by itself (stderr: %s)", live.err_path);
		if (n > 0 && is_ping(msg))
			fail_msg("WATCHDOG=1 after thread %s stalled:\n%s[%s]", thread, transcript, msg);
		if (n > 0 && !is_status_only(msg))
			fail_msg("unexpected message after the stall: %s", msg);
	}
	if (strcmp(thread, "flusher") == 0)     /* its writer stalled: the file is as it was */
		wait_metrics(dir, "\nportlogd_watchdog_withheld 0\n");
	expect_stop();
}

static void stall_flusher(void **state)
{
	(void)state;
	stall("flusher");
}

static void stall_serial(void **state)
{
	(void)state;
	stall("serial:a");
}

static void stall_timer(void **state)
{
	(void)state;
	stall("timer");
}

/* Not under systemd: nothing to notify, and no timer is armed for it. */
static void no_notify_socket(void **state)
{
	static const char *const env[] = { "NOTIFY_SOCKET=", "WATCHDOG_USEC=1000000", NULL };
	char dir[256], conf[300];
	int status;

	(void)state;
	setup(dir, sizeof(dir), conf, sizeof(conf));
	assert_int_equal(e2e_start_env(&live, dir, conf, env), 0);
	(void)wait_log(dir, " a EV open ");
	assert_int_equal(count_timerfds(live.pid), 0);
	status = e2e_stop(&live, SIGTERM, WAIT_MS, NULL);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The journal's native protocol, datagrams of KEY=value lines: the one with
 * MESSAGE=<prefix>..., or a failure after WAIT_MS. */
static void journal_wait(int fd, const char *prefix, char *buf, size_t len)
{
	for (int waited = 0; waited < WAIT_MS; waited += 100) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		const char *m;
		ssize_t n;

		if (poll(&pfd, 1, 100) != 1)
			continue;
		n = recv(fd, buf, len - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		m = e2e_notify_has(buf, "MESSAGE", NULL);
		if (m != NULL && strncmp(m, prefix, strlen(prefix)) == 0)
			return;
	}
	fail_msg("no journal entry with MESSAGE=%s...", prefix);
}

/*
 * Under systemd without -f, port events go to the journal with PORTLOGD_SOURCE=
 * and a priority. sd_journal_send writes to /run/systemd/journal/socket: in a
 * mount namespace of this test process (the last test, it keeps it) a tmpfs on
 * /run lets a socket of ours take that place; the host's journal sees nothing.
 */
static void journal_fields(void **state)
{
	static const char *const env[] = { NULL };
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = "/run/systemd/journal/socket" };
	char dir[256], conf[300], msg[4096], entry[4096];
	struct stat st;
	int fd;

	(void)state;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0
	    || mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") < 0) {
		printf("# journal_fields: no mount namespace here (%s)\n", strerror(errno));
		skip();
	}
	assert_int_equal(mkdir("/run/systemd", 0755), 0);
	assert_int_equal(mkdir("/run/systemd/journal", 0755), 0);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);

	setup(dir, sizeof(dir), conf, sizeof(conf));
	assert_int_equal(e2e_start_opts(&live, dir, conf, env, false), 0);
	next_msg(msg, sizeof(msg), "READY=1");
	assert_non_null(e2e_notify_has(msg, "READY", "1"));
	journal_wait(fd, "a EV open device=/dev/pts/", entry, sizeof(entry));
	assert_non_null(e2e_notify_has(entry, "PRIORITY", "5"));
	assert_non_null(e2e_notify_has(entry, "PORTLOGD_SOURCE", "a"));
	assert_non_null(e2e_notify_has(entry, "SYSLOG_IDENTIFIER", "portlogd"));
	/* the source location would always be log.c: left out */
	assert_null(e2e_notify_has(entry, "CODE_FILE", NULL));
	expect_stop();
	journal_wait(fd, "a EV close reason=stop", entry, sizeof(entry));
	assert_non_null(e2e_notify_has(entry, "PRIORITY", "5"));
	assert_non_null(e2e_notify_has(entry, "PORTLOGD_SOURCE", "a"));
	journal_wait(fd, "portlogd EV stop reason=SIGTERM", entry, sizeof(entry));
	assert_non_null(e2e_notify_has(entry, "PORTLOGD_SOURCE", "portlogd"));
	/* and none of it went to stderr */
	assert_int_equal(stat(live.err_path, &st), 0);
	assert_int_equal(st.st_size, 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(lifecycle, teardown),
		cmocka_unit_test_teardown(stall_flusher, teardown),
		cmocka_unit_test_teardown(stall_serial, teardown),
		cmocka_unit_test_teardown(stall_timer, teardown),
		cmocka_unit_test_teardown(no_notify_socket, teardown),
		cmocka_unit_test_teardown(journal_fields, teardown),   /* last: a mount namespace */
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
