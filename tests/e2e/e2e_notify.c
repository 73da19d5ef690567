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
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "log.h"            /* LOG_QUEUE_LEN, LOG_DRAIN_MS: what the daemon's queue holds */
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
 * The journal's socket, /run/systemd/journal/socket, as a socket of ours, which
 * sd_journal_send then writes to: in a mount namespace of this test process
 * (the journal tests come last: it keeps it) a tmpfs on /run lets it take that
 * place; the host's journal sees nothing. A network namespace of its own too,
 * for its net.unix.max_dgram_qlen: the kernel queues that many datagrams plus
 * one (the default, 10, in a new namespace; systemd sets 512 on the host) on a
 * datagram socket nobody reads, and then a sender blocks. Its receive buffer
 * does not bound an AF_UNIX datagram queue. A fresh socket each call.
 */
static int journal_socket(const char *test)
{
	static bool inside;
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = "/run/systemd/journal/socket" };
	int fd;

	if (!inside) {
		if (unshare(CLONE_NEWNS | CLONE_NEWNET) < 0
		    || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0
		    || mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") < 0) {
			printf("# %s: no mount and network namespace here (%s)\n", test,
			       strerror(errno));
			skip();
		}
		assert_int_equal(mkdir("/run/systemd", 0755), 0);
		assert_int_equal(mkdir("/run/systemd/journal", 0755), 0);
		inside = true;
	}
	(void)unlink(sa.sun_path);      /* the last test's */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Under systemd without -f, port events go to the journal with PORTLOGD_SOURCE=
 * and a priority. */
static void journal_fields(void **state)
{
	static const char *const env[] = { NULL };
	char dir[256], conf[300], msg[4096], entry[4096];
	struct stat st;
	int fd;

	(void)state;
	fd = journal_socket("journal_fields");
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

/* ---- a journal that does not read ---- */

/*
 * The application of a pass port sets its pty to one baud after another (none
 * the device's 9600): each setting makes an EV app-settings line of a (notice:
 * not held back by the info share), a message for the journal. The reader looks
 * at the settings after each packet the application sends, having relayed it to
 * the device first; so after each setting the application sends "x\n", waits
 * for it at the device, then "y\n" and waits for that: the reader has looked
 * after "x\n" with this setting in place before the next one is made, and finds
 * each new exactly once (after its "x\n", or already after the "y\n" before).
 * And the device sends "r\n". Every packet must be a line of the log.
 */
static const speed_t app_bauds[] = { B1200, B2400, B4800, B19200, B38400, B57600, B115200,
				     B230400 };

struct jrun {
	char dir[256], conf[300], logp[300], app[300];
	int app_fd;
	unsigned settings;      /* made so far, each a TX "x\n" and "y\n" and an RX "r\n" */
	int pings;              /* WATCHDOG=1 while it ran */
};

/* Writes all of buf to a descriptor, waiting (bounded) while it is full. */
static void put_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n;

		if (poll(&pfd, 1, WAIT_MS) != 1)
			fail_msg("a pty took nothing for %d ms", WAIT_MS);
		n = write(fd, buf, len);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			fail_msg("write: %s", strerror(errno));
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		}
	}
}

/* Reads the two bytes of what the daemon relayed to the device; fails after WAIT_MS. */
static void relayed(const char *want)
{
	char got[2];
	size_t n = 0;

	while (n < 2) {
		struct pollfd pfd = { .fd = pty_master, .events = POLLIN };
		ssize_t k;

		if (poll(&pfd, 1, WAIT_MS) != 1)
			fail_msg("the daemon did not relay '%c' to the device within %d ms", want[0],
				 WAIT_MS);
		k = read(pty_master, got + n, 2 - n);
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			fail_msg("read: %s", strerror(errno));
		n += k > 0 ? (size_t)k : 0;
	}
	if (memcmp(got, want, 2) != 0)
		fail_msg("the device got '%.2s', not '%.2s'", got, want);
}

/* The notifications that came within ms: pings counted; a withheld watchdog fails. */
static void watch(struct jrun *r, int ms)
{
	int64_t end = mono_now() + (int64_t)ms * 1000000;
	char msg[4096];

	for (;;) {
		int64_t left = (end - mono_now()) / 1000000;
		int n = e2e_notify_recv(&live, msg, sizeof(msg), left > 0 ? (int)left : 0);
		size_t tl = strlen(transcript);

		if (n < 0)
			fail_msg("the daemon exited (stderr: %s)", live.err_path);
		if (n == 0)
			return;
		snprintf(transcript + tl, sizeof(transcript) - tl, "[%s]\n", msg);
		if (is_ping(msg))
			r->pings++;
		else if (strstr(msg, "STATUS=watchdog withheld") != NULL)
			fail_msg("the watchdog was withheld while the journal did not read:\n%s",
				 transcript);
		else if (!is_status_only(msg))
			fail_msg("unexpected message:\n%s", transcript);
	}
}

/* Lines of source src whose text holds `what`, in the log now. */
static unsigned count_lines(const char *path, const char *src, const char *what)
{
	struct e2e_log log = { 0 };
	unsigned n = 0;

	if (e2e_read_log(&log, path) == 0)
		for (size_t k = 0; k < log.n; k++)
			n += strcmp(log.line[k].src, src) == 0 && strstr(log.line[k].text, what) != NULL;
	e2e_free_log(&log);
	return n;
}

/* n more WATCHDOG=1 (a withheld watchdog fails), the journal still not read. */
static void more_pings(struct jrun *r, int n)
{
	int64_t t = mono_now();

	for (int want = r->pings + n, had = r->pings; r->pings < want; watch(r, 100)) {
		if (r->pings > had) {
			had = r->pings;
			t = mono_now();
		}
		if (mono_now() - t > (int64_t)WAIT_MS * 1000000)
			fail_msg("no WATCHDOG=1 for %d ms with the journal not reading:\n%s", WAIT_MS,
				 transcript);
	}
}

/*
 * n settings, as above, while the notifications are watched; then `pings` more
 * WATCHDOG=1, and the log must hold every packet and one EV app-settings line
 * per setting (failing after WAIT_MS: its writer held back).
 */
static void burst(struct jrun *r, unsigned n, int pings)
{
	int64_t t0;

	for (unsigned i = 0; i < n; i++, r->settings++) {
		speed_t b = app_bauds[r->settings % (sizeof(app_bauds) / sizeof(app_bauds[0]))];
		struct termios tio;

		assert_int_equal(tcgetattr(r->app_fd, &tio), 0);
		cfsetispeed(&tio, b);
		cfsetospeed(&tio, b);
		assert_int_equal(tcsetattr(r->app_fd, TCSANOW, &tio), 0);
		put_all(r->app_fd, "x\n", 2);
		relayed("x\n");
		put_all(r->app_fd, "y\n", 2);
		relayed("y\n");
		put_all(pty_master, "r\n", 2);
		watch(r, 0);
	}
	more_pings(r, pings);
	for (t0 = mono_now();
	     count_lines(r->logp, "a", " TX 2 780a ") < r->settings
	     || count_lines(r->logp, "a", " TX 2 790a ") < r->settings
	     || count_lines(r->logp, "a", " RX 2 720a ") < r->settings
	     || count_lines(r->logp, "a", " EV app-settings ") < r->settings; watch(r, 20))
		if (mono_now() - t0 > (int64_t)WAIT_MS * 1000000)
			fail_msg("after %u settings the log lacks packets or EV app-settings lines "
				 "(%u): its writer is held back\n%s", r->settings,
				 count_lines(r->logp, "a", " EV app-settings "), transcript);
}

struct jtally {
	unsigned events;        /* a's EV lines but late-delivery ones */
	unsigned summaries;     /* "the journal did not keep up" */
	uint64_t dropped;       /* their counts */
	unsigned all;
};

/* One journal entry into t; true when it was a dropped-messages summary. */
static bool journal_count(const char *entry, struct jtally *t)
{
	static const char keep_up[] = "the journal did not keep up: ";
	const char *m = e2e_notify_has(entry, "MESSAGE", NULL);
	const char *src = e2e_notify_has(entry, "PORTLOGD_SOURCE", NULL);

	t->all++;
	if (m == NULL || src == NULL)
		fail_msg("a journal entry without MESSAGE= or PORTLOGD_SOURCE=: %s", entry);
	if (strncmp(m, keep_up, strlen(keep_up)) == 0) {
		char *end;

		t->dropped += strtoull(m + strlen(keep_up), &end, 10);
		if (strncmp(end, " messages to it were dropped; the log file ", 43) != 0
		    || strstr(end, " has every EV and DROP line\n") == NULL
		    || e2e_notify_has(entry, "PRIORITY", "4") == NULL
		    || e2e_notify_has(entry, "PORTLOGD_SOURCE", "portlogd") == NULL)
			fail_msg("not the dropped-messages warning: %s", entry);
		t->summaries++;
		return true;
	}
	if (strncmp(src, "a\n", 2) == 0 && strncmp(m, "a EV ", 5) == 0
	    && strncmp(m, "a EV late-delivery ", 19) != 0)
		t->events++;
	return false;
}

/* Reads the journal's entries: until the first dropped-messages summary (failing
 * after WAIT_MS), or with until_summary false those waiting now. */
static void journal_read(int fd, struct jtally *t, bool until_summary)
{
	char entry[8192];

	for (int waited = 0; waited < WAIT_MS;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, until_summary ? 100 : 0) != 1) {
			if (!until_summary)
				return;
			waited += 100;
			continue;
		}
		n = recv(fd, entry, sizeof(entry) - 1, 0);
		assert_true(n > 0);
		entry[n] = '\0';
		if (journal_count(entry, t) && until_summary)
			return;
	}
	fail_msg("no journal entry says how many messages were dropped (%u entries read)", t->all);
}

/*
 * journald does not read (hung in its rotation, starved of CPU): the log file's
 * writer never waits for it. The journal's socket here is never read while
 * events come, more than it and the daemon's queue hold (LOG_QUEUE_LEN), under
 * a watchdog: WATCHDOG=1 keeps coming, the log has every packet and event and
 * no DROP line; read at last, the journal gets the queue's messages and a
 * warning of how many were dropped. Then the socket fills again and SIGTERM
 * stops the daemon all the same, after LOG_DRAIN_MS, its log saying what the
 * journal never got (EV journal-lost). Every a's EV line is in the journal, or
 * counted as dropped or lost.
 */
static void journal_not_reading(void **state)
{
	static const char *const env[] = { "WATCHDOG_USEC=1000000", NULL };
	struct jrun r = { .app_fd = -1 };
	struct jtally t = { 0 };
	char slave[64], text[1024], msg[4096];
	struct e2e_log log = { 0 };
	unsigned lines = 0, late = 0, own = 0;
	unsigned long long queued = 0, lost = 0;
	const char *jl = NULL;
	int fd;

	(void)state;
	fd = journal_socket("journal_not_reading");
	e2e_tmpdir(r.dir, sizeof(r.dir));
	pty_master = e2e_open_pty(slave, sizeof(slave));
	assert_true(pty_master >= 0);
	snprintf(r.conf, sizeof(r.conf), "%s/portlogd.conf", r.dir);
	snprintf(r.logp, sizeof(r.logp), "%s/portlogd.log", r.dir);
	snprintf(r.app, sizeof(r.app), "%s/app/a", r.dir);
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 0\n"
		 "[serial a]\ndevice = %s\nbaud = 9600\ndelimiter = \\n\npass = %s\n"
		 "priority = other\n", r.logp, slave, r.app);
	e2e_write_file(r.conf, text);
	transcript[0] = '\0';
	assert_int_equal(e2e_start_opts(&live, r.dir, r.conf, env, false), 0);
	next_msg(msg, sizeof(msg), "READY=1");
	assert_non_null(e2e_notify_has(msg, "READY", "1"));
	r.app_fd = open(r.app, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	assert_true(r.app_fd >= 0);

	/* more events than the socket (11 here) and the queue hold: some are dropped */
	burst(&r, LOG_QUEUE_LEN + 64, 3);
	printf("# %u settings, each an EV app-settings line, %d pings; the journal not read\n",
	       r.settings, r.pings);
	journal_read(fd, &t, true);
	printf("# read at last: %u entries, then: %llu messages dropped\n", t.all - 1,
	       (unsigned long long)t.dropped);
	assert_true(t.dropped > 0);

	/* the socket fills again, and stays full at the stop */
	burst(&r, 64, 1);
	expect_stop();      /* within WAIT_MS: the queue is given LOG_DRAIN_MS */
	journal_read(fd, &t, false);
	close(fd);

	assert_int_equal(e2e_read_log(&log, r.logp), 0);
	for (size_t k = 0; k < log.n; k++) {
		const struct e2e_line *l = &log.line[k];

		if (strcmp(l->kind, "DROP") == 0)
			fail_msg("a DROP line: %s", l->text);
		if (strcmp(l->src, "a") == 0 && strcmp(l->kind, "EV") == 0)
			*(strstr(l->text, " EV late-delivery ") != NULL ? &late : &lines) += 1;
		if (strcmp(l->src, "portlogd") == 0 && strcmp(l->kind, "EV") == 0)
			own++;
		if (strstr(l->text, " portlogd EV journal-lost ") != NULL)
			jl = l->text;
	}
	assert_int_equal(count_lines(r.logp, "a", " TX 2 780a "), r.settings);
	assert_int_equal(count_lines(r.logp, "a", " TX 2 790a "), r.settings);
	assert_int_equal(count_lines(r.logp, "a", " RX 2 720a "), r.settings);
	assert_int_equal(count_lines(r.logp, "a", " EV app-settings "), r.settings);
	if (jl == NULL)
		fail_msg("no EV journal-lost line: the stop did not say what the journal missed");
	assert_int_equal(sscanf(strstr(jl, " queued="), " queued=%llu dropped=%llu", &queued, &lost),
			 2);
	{
		char waited[32];

		snprintf(waited, sizeof(waited), " waited_ms=%d", LOG_DRAIN_MS);
		assert_non_null(strstr(jl, waited));
	}
	printf("# %u settings; a's EV lines: %u (and %u late-delivery); the journal got %u of "
	       "them, %llu said dropped, at stop %llu queued and %llu dropped unsent\n", r.settings,
	       lines, late, t.events, (unsigned long long)t.dropped, queued, lost);
	assert_true(queued > 0);
	/* every line: in the journal, or in a count; the counts hold no more than
	 * the a's other lines (late-delivery, which may go to the journal too) and the
	 * daemon's own EV lines could add */
	assert_true(t.events + t.dropped + queued + lost >= lines);
	assert_true(t.events + t.dropped + queued + lost <= lines + late + own);
	e2e_expect_accounted(&log);
	e2e_free_log(&log);
	close(r.app_fd);
	e2e_remove_dir(r.dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(lifecycle, teardown),
		cmocka_unit_test_teardown(stall_flusher, teardown),
		cmocka_unit_test_teardown(stall_serial, teardown),
		cmocka_unit_test_teardown(stall_timer, teardown),
		cmocka_unit_test_teardown(no_notify_socket, teardown),
		/* last: a mount and network namespace */
		cmocka_unit_test_teardown(journal_fields, teardown),
		cmocka_unit_test_teardown(journal_not_reading, teardown),
	};

	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
