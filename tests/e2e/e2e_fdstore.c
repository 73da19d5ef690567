/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_fdstore.c - the real binary restarted under a file descriptor store: ports stay open, nothing is lost, the held bytes are marked. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "testutil.h"

#define WAIT_MS 15000               /* every wait ends as soon as what it waits for comes */
#define DOWN_MS 400                 /* no daemon runs this long at each restart */

static struct e2e_daemon live;
static struct e2e_store store;

/* ---- a device that never stops: numbered lines into a pty's master, 1 ms apart ---- */

struct writer {
	int fd;                     /* the device's side (a pty's master), blocking */
	pthread_t thread;
	atomic_bool stop;
	atomic_int err;             /* errno of a failed write (cmocka asserts only in main) */
	pthread_mutex_t lock;       /* sent, n, t0, t1 */
	uint8_t *sent;
	size_t n, cap;
	/* CLOCK_MONOTONIC before and after each line's write, one per byte: a byte went into
	 * the pty between the two, whenever this thread stalls */
	int64_t *t0, *t1;
	unsigned seq;
	char tag;                   /* the lines' first character (0: a hex digit, as the rest) */
};

static void *write_lines(void *arg)
{
	struct writer *w = arg;

	while (!atomic_load(&w->stop)) {
		char line[16];
		int len = w->tag != 0 ? snprintf(line, sizeof(line), "%c%07x\n", w->tag, w->seq++)
			  : snprintf(line, sizeof(line), "%08x\n", w->seq++);
		int64_t t0 = tu_mono_ns();

		/* blocking: a full tty buffer holds the writer back, it loses nothing */
		if (write(w->fd, line, (size_t)len) != len) {
			atomic_store(&w->err, errno ? errno : EIO);
			break;
		}
		pthread_mutex_lock(&w->lock);
		if (w->n + (size_t)len > w->cap) {
			w->cap = w->cap ? 2 * w->cap : 65536;
			w->sent = realloc(w->sent, w->cap);
			w->t0 = realloc(w->t0, w->cap * sizeof(*w->t0));
			w->t1 = realloc(w->t1, w->cap * sizeof(*w->t1));
			if (w->sent == NULL || w->t0 == NULL || w->t1 == NULL)
				abort();
		}
		memcpy(w->sent + w->n, line, (size_t)len);
		for (int i = 0; i < len; i++) {
			w->t0[w->n + (size_t)i] = t0;
			w->t1[w->n + (size_t)i] = tu_mono_ns();
		}
		w->n += (size_t)len;
		pthread_mutex_unlock(&w->lock);
		tu_sleep_ms(1);
	}
	return NULL;
}

static void writer_start_tagged(struct writer *w, int fd, char tag)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->tag = tag;
	pthread_mutex_init(&w->lock, NULL);
	assert_int_equal(pthread_create(&w->thread, NULL, write_lines, w), 0);
}

static void writer_start(struct writer *w, int fd)
{
	writer_start_tagged(w, fd, 0);
}

static void writer_stop(struct writer *w)
{
	atomic_store(&w->stop, true);
	pthread_join(w->thread, NULL);
	assert_int_equal(atomic_load(&w->err), 0);
}

/* The bytes whose write had returned by t (CLOCK_MONOTONIC): the least the writer had
 * written then. */
static size_t written_by(struct writer *w, int64_t t)
{
	size_t n = 0;

	pthread_mutex_lock(&w->lock);
	while (n < w->n && w->t1[n] <= t)
		n++;
	pthread_mutex_unlock(&w->lock);
	return n;
}

/* The bytes whose write had begun by t: the most the writer can have written then. */
static size_t begun_by(struct writer *w, int64_t t)
{
	size_t n = 0;

	pthread_mutex_lock(&w->lock);
	while (n < w->n && w->t0[n] <= t)
		n++;
	pthread_mutex_unlock(&w->lock);
	return n;
}

static void writer_free(struct writer *w)
{
	free(w->sent);
	free(w->t0);
	free(w->t1);
	pthread_mutex_destroy(&w->lock);
}

/* ---- the daemon under a store ---- */

struct pty {
	int master;
	char slave[64];
};

static void new_pty(struct pty *p)
{
	p->master = e2e_open_pty(p->slave, sizeof(p->slave));
	assert_true(p->master >= 0);
}

static int teardown(void **state)
{
	(void)state;
	e2e_kill(&live);
	e2e_store_clear(&store);
	return 0;
}

/* A config of ports NAME=DEVICE (newline-delimited packets), the log in dir. */
static void write_conf(const char *dir, const char *conf, const char *ports)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s/portlogd.log\nflush_interval_ms = 20\nstat_interval_s = 0\n"
		 "%s", dir, ports);
	e2e_write_file(conf, text);
}

/* Starts the daemon with what the store holds; every notification up to READY=1 is read. */
static void start_stored(const char *dir, const char *conf, const char *const *env)
{
	char msg[4096];

	assert_int_equal(e2e_start_store(&live, dir, conf, env, &store), 0);
	for (;;) {
		int n = e2e_notify_recv(&live, msg, sizeof(msg), WAIT_MS);

		if (n <= 0)
			fail_msg("no READY=1 (stderr: %s)", live.err_path);
		if (e2e_notify_has(msg, "READY", "1") != NULL)
			return;
	}
}

/* Reads notifications for ms (the store keeps what they say). */
static void listen_ms(int ms)
{
	char msg[4096];
	int64_t end = tu_mono_ns() + (int64_t)ms * 1000000;

	while (tu_mono_ns() < end)
		if (e2e_notify_recv(&live, msg, sizeof(msg), 20) < 0)
			return;
}

/* Stops the daemon with sig, reading its notifications to the end; returns when it
 * exited (its wait status). */
static int stop_daemon(int sig)
{
	char msg[4096];
	int status;

	assert_int_equal(kill(live.pid, sig), 0);
	while (e2e_notify_recv(&live, msg, sizeof(msg), WAIT_MS) >= 0)
		;
	status = e2e_stop(&live, sig, WAIT_MS, NULL);
	assert_true(status != -1);
	return status;
}

static void read_log(const char *dir, struct e2e_log *log)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/portlogd.log", dir);
	memset(log, 0, sizeof(*log));
	assert_int_equal(e2e_read_log(log, path), 0);
}

/* The index of the first line holding every one of the words (NULL-terminated) from
 * line `from` on, or -1. */
static long find_line(const struct e2e_log *log, size_t from, const char *const *words)
{
	for (size_t i = from; i < log->n; i++) {
		bool all = true;

		for (const char *const *w = words; *w != NULL && all; w++)
			all = strstr(log->line[i].text, *w) != NULL;
		if (all)
			return (long)i;
	}
	return -1;
}

#define FIND(log, from, ...) find_line((log), (from), (const char *const[]){ __VA_ARGS__, NULL })

/* The number after "key=" in a line, or -1. */
static int64_t field(const char *text, const char *key)
{
	char k[48];
	const char *p;

	snprintf(k, sizeof(k), " %s=", key);
	p = strstr(text, k);
	return p != NULL ? strtoll(p + strlen(k), NULL, 10) : -1;
}

/* Sums bytes= of src's EV late-delivery case=restart lines (dir=tx ones or not), and
 * the least wait_us of them; checks every one says where its wait began. */
static uint64_t held_said(const struct e2e_log *log, const char *src, bool tx, int64_t *min_wait)
{
	uint64_t sum = 0;

	*min_wait = INT64_MAX;
	for (size_t i = 0; i < log->n; i++) {
		const char *t = log->line[i].text;

		if (strcmp(log->line[i].src, src) != 0 || strstr(t, " EV late-delivery ") == NULL
		    || strstr(t, " case=restart") == NULL || (strstr(t, " dir=tx") != NULL) != tx)
			continue;
		sum += (uint64_t)field(t, "bytes");
		if (field(t, "wait_us") < *min_wait)
			*min_wait = field(t, "wait_us");
		assert_null(strstr(t, "wait_from="));  /* the state page said when */
	}
	return sum;
}

/* The last STAT line's value of key for src. */
static int64_t last_stat(const struct e2e_log *log, const char *src, const char *key)
{
	int64_t v = -1;
	char want[64];

	snprintf(want, sizeof(want), " STAT %s ", src);
	for (size_t i = 0; i < log->n; i++)
		if (strstr(log->line[i].text, want) != NULL)
			v = field(log->line[i].text, key);
	return v;
}

/* ---- the tests ---- */

/* The next daemon, with what the store holds: 300 ms of the writer's lines, then the
 * writer stopped, and the daemon (SIGTERM) once it has read the last of them. */
static void run_again(const char *dir, const char *conf, struct writer *w)
{
	start_stored(dir, conf, NULL);
	listen_ms(300);
	writer_stop(w);
	listen_ms(100);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
}

/* Port a on a pty whose device writes a numbered line every ms (the writer started):
 * its config in dir, newline-delimited. */
static void one_port_writing(char *dir, size_t dlen, char *conf, size_t clen, struct pty *a,
			     struct writer *w)
{
	char ports[512];

	e2e_tmpdir(dir, dlen);
	snprintf(conf, clen, "%s/portlogd.conf", dir);
	new_pty(a);
	snprintf(ports, sizeof(ports), "[serial a]\ndevice = %s\ndelimiter = \\n\npriority = other\n",
		 a->slave);
	write_conf(dir, conf, ports);
	writer_start(w, a->master);
}

/*
 * A device writes a numbered line every millisecond while the daemon is stopped
 * (SIGTERM, as systemctl restart does), left down DOWN_MS and started again with
 * what it stored: every byte is in the log once, in order; the bytes that came
 * while no daemon ran are said (EV late-delivery case=restart, bytes= in all
 * STAT held_bytes=, wait_us at least the time down) at the line they begin.
 */
static void restart_keeps_every_byte(void **state)
{
	char dir[256], conf[300];
	struct e2e_log log;
	struct writer w;
	struct pty a;
	size_t len, *starts, *idx, nl, down_bytes;
	uint8_t *rx;
	int64_t t_exit, t_start, min_wait;
	long run2, open2, late;
	uint64_t held;

	(void)state;
	one_port_writing(dir, sizeof(dir), conf, sizeof(conf), &a, &w);

	start_stored(dir, conf, NULL);
	assert_true(e2e_store_find(&store, "a/rx") >= 0);
	assert_true(e2e_store_find(&store, "portlogd-state") >= 0);
	listen_ms(300);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	t_exit = tu_mono_ns();
	/* the port stayed open in the store: the keeper is there still */
	assert_true(e2e_store_find(&store, "a/rx") >= 0);
	tu_sleep_ms(DOWN_MS);
	t_start = tu_mono_ns();
	/* written while no daemon ran, for sure: begun after the exit, done before the start */
	down_bytes = written_by(&w, t_start) - begun_by(&w, t_exit);
	run_again(dir, conf, &w);

	read_log(dir, &log);
	rx = e2e_concat(&log, "a", &len, &starts, &idx, &nl);
	printf("# sent %zu bytes, %zu of them while no daemon ran; the log has %zu\n", w.n,
	       down_bytes, len);
	assert_int_equal(len, w.n);
	assert_memory_equal(rx, w.sent, len);
	assert_true(FIND(&log, 0, " a EV close ", "reason=stop", "store=kept") >= 0);
	run2 = FIND(&log, 1, " portlogd EV start ");
	open2 = FIND(&log, (size_t)run2, " a EV open ", "store=kept");
	assert_true(run2 > 0 && open2 > run2);
	/* what came while no daemon ran: said, counted, at least what the writer wrote then */
	held = held_said(&log, "a", false, &min_wait);
	printf("# held %" PRIu64 " bytes, unread %" PRId64 " us (down %d ms)\n", held, min_wait,
	       DOWN_MS);
	assert_true(held >= down_bytes && down_bytes > 0);
	assert_int_equal((int64_t)held, last_stat(&log, "a", "held_bytes"));
	assert_true(min_wait >= DOWN_MS * 1000);
	/* the first line after the restart is marked where the boundary rule puts it */
	late = FIND(&log, (size_t)open2, " a EV late-delivery ", "case=restart");
	for (size_t k = 0; k < nl; k++)
		if (idx[k] > (size_t)open2) {
			assert_true(e2e_late_mark_at(&log, "a", log.line[idx[k]].t));
			assert_true(late > open2 && (size_t)late < idx[k]);
			break;
		}
	e2e_expect_accounted(&log);
	free(rx);
	free(starts);
	free(idx);
	e2e_free_log(&log);
	writer_free(&w);
	close(a.master);
}

/*
 * SIGSTOP pid (a child of this process), hold it stopped for ms, and say when it was
 * last seen stopped for sure: CLOCK_MONOTONIC once waitpid reported the stop, so that
 * it read nothing after it. Someone else's SIGCONT meanwhile (a stall injector's: it
 * stops processes too, and continues what it stopped) is seen and the stop made again.
 */
static int64_t stop_for(pid_t pid, int ms)
{
	int64_t t;
	int st;

	for (;;) {
		assert_int_equal(kill(pid, SIGSTOP), 0);
		assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
		assert_true(WIFSTOPPED(st));
		t = tu_mono_ns();
		tu_sleep_ms(ms);
		if (waitpid(pid, &st, WCONTINUED | WNOHANG) == 0)
			return t;
		printf("# the daemon was continued by someone else: stopped again\n");
	}
}

/*
 * kill -9 while the device writes: the killed daemon loses what it had read but
 * not written (at most what its rings and its log buffer held), nothing else.
 * The log is what was sent with one hole, of bytes all sent before the kill, and
 * the next daemon's first bytes are said as held, with the time since the killed
 * one last found the port empty (the state page survives a crash).
 */
static void crash(bool stopped_first)
{
	char dir[256], conf[300];
	struct e2e_log log;
	struct writer w;
	struct pty a;
	size_t len1 = 0, len2 = 0, off;
	int64_t t_gone, min_wait;
	long run2;

	one_port_writing(dir, sizeof(dir), conf, sizeof(conf), &a, &w);
	start_stored(dir, conf, NULL);
	listen_ms(500);
	if (stopped_first) {
		/* as the watchdog finds a daemon that stopped making progress: it reads
		 * nothing from here on, while the kernel holds more than a line
		 * discipline's 4 KiB, then it is killed */
		t_gone = stop_for(live.pid, 1500);
		assert_true(WIFSIGNALED(stop_daemon(SIGKILL)));
	} else {
		assert_true(WIFSIGNALED(stop_daemon(SIGKILL)));
		t_gone = tu_mono_ns();		/* reaped: it reads nothing more */
	}
	tu_sleep_ms(DOWN_MS);
	run_again(dir, conf, &w);

	read_log(dir, &log);
	run2 = FIND(&log, 1, " portlogd EV start ");
	assert_true(run2 > 0);
	for (size_t i = 0; i < log.n; i++)
		if (strcmp(log.line[i].kind, "RX") == 0 && strcmp(log.line[i].src, "a") == 0) {
			uint8_t *want = w.sent + ((long)i < run2 ? len1 : 0);

			if ((long)i < run2) {
				/* the killed daemon's lines: the start of what was sent */
				assert_memory_equal(log.line[i].data, want, log.line[i].len);
				len1 += log.line[i].len;
			} else {
				len2 += log.line[i].len;
			}
		}
	/* the next daemon's bytes: the end of what was sent, from one place on */
	off = w.n - len2;
	assert_true(off >= len1);
	{
		size_t o = off;

		for (size_t i = (size_t)run2; i < log.n; i++)
			if (strcmp(log.line[i].kind, "RX") == 0 && strcmp(log.line[i].src, "a") == 0) {
				assert_memory_equal(log.line[i].data, w.sent + o, log.line[i].len);
				o += log.line[i].len;
			}
	}
	printf("# sent %zu bytes; the killed daemon logged %zu, the next %zu; lost %zu bytes, "
	       "all sent before it read its last (at most %zu were)\n", w.n, len1, len2,
	       off - len1, begun_by(&w, t_gone));
	assert_true(off <= begun_by(&w, t_gone));
	assert_true(held_said(&log, "a", false, &min_wait) > 0);
	assert_true(min_wait >= DOWN_MS * 1000);
	e2e_free_log(&log);
	writer_free(&w);
	close(a.master);
}

static void crash_loses_only_what_was_read(void **state)
{
	(void)state;
	crash(false);
}

/* Stopped (SIGSTOP) for 1.5 s, 13 KB coming meanwhile, then killed: as kill -9 */
static void stopped_then_killed(void **state)
{
	(void)state;
	crash(true);
}

/* The device's link, DIR/dev -> target, replaced as udev replaces a by-id link. */
static void link_to(const char *dir, const char *target)
{
	char link[300], tmp[310];

	snprintf(link, sizeof(link), "%s/dev", dir);
	snprintf(tmp, sizeof(tmp), "%s.new", link);
	unlink(tmp);
	assert_int_equal(symlink(target, tmp), 0);
	assert_int_equal(rename(tmp, link), 0);
}

static dev_t rdev_of_fd(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return st.st_rdev;
}

static dev_t rdev_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_rdev;
}

/* Nobody holds the flock of the tty at path any more: the daemon and the store let go. */
static bool lock_free(const char *path)
{
	int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	bool free_ = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;

	if (fd >= 0)
		close(fd);
	return free_;
}

/*
 * The device went away while no daemon ran (its keeper hung up: an adapter
 * unplugged; here the pty's master closed), and came back as another tty under
 * the same link; or the link now names another device. Either way the kept
 * descriptor is dropped (the store forgets it), the port is opened anew, EV open
 * says which (store=hung-up, store=other-device), and the new keeper is stored.
 */
static void kept_port_gone(bool hang_up)
{
	char dir[256], conf[300], ports[512], link[300];
	struct e2e_log log;
	struct pty a, b;
	char buf[32];
	int k;

	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(link, sizeof(link), "%s/dev", dir);
	new_pty(&a);
	new_pty(&b);
	link_to(dir, a.slave);
	snprintf(ports, sizeof(ports), "[serial a]\ndevice = %s\ndelimiter = \\n\npriority = other\n",
		 link);
	write_conf(dir, conf, ports);
	start_stored(dir, conf, NULL);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	if (hang_up) {
		close(a.master);        /* unplugged: the kept slave hangs up */
		a.master = -1;
	}
	link_to(dir, b.slave);
	/* not pruned: the daemon must see for itself (systemd may pass it on before) */
	store.log[0] = '\0';
	start_stored(dir, conf, NULL);
	assert_int_equal(write(b.master, "after\n", 6), 6);
	listen_ms(200);
	/* forgotten, then the new keeper stored */
	printf("# store: %s\n", store.log);
	assert_non_null(strstr(store.log, "-a/rx +a/rx "));
	k = e2e_store_find(&store, "a/rx");
	assert_true(k >= 0);
	assert_int_equal(rdev_of_fd(store.fd[k]), rdev_of(b.slave));
	if (!hang_up)
		assert_true(lock_free(a.slave));    /* the old device is free for others */
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	read_log(dir, &log);
	snprintf(buf, sizeof(buf), "store=%s", hang_up ? "hung-up" : "other-device");
	assert_true(FIND(&log, 1, " a EV open ", buf, b.slave) > 0);
	assert_true(FIND(&log, 1, " a RX 6 ") > 0);
	e2e_free_log(&log);
	if (a.master >= 0)
		close(a.master);
	close(b.master);
}

static void hung_up_is_opened_anew(void **state)
{
	(void)state;
	kept_port_gone(true);
}

static void other_device_is_opened_anew(void **state)
{
	(void)state;
	kept_port_gone(false);
}

/* A port the new config no longer has: its kept descriptor is closed and forgotten. */
static void unwanted_is_released(void **state)
{
	char dir[256], conf[300], ports[512], err[4096] = "";
	struct pty a, b;
	FILE *f;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	new_pty(&a);
	new_pty(&b);
	snprintf(ports, sizeof(ports), "[serial a]\ndevice = %s\npriority = other\n"
		 "[serial b:1]\ndevice = %s\npriority = other\n", a.slave, b.slave);
	write_conf(dir, conf, ports);
	start_stored(dir, conf, NULL);
	/* ':' may not be in a stored name: '+' stands for it */
	assert_true(e2e_store_find(&store, "b+1/rx") >= 0);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	assert_false(lock_free(b.slave));       /* held in the store */
	snprintf(ports, sizeof(ports), "[serial a]\ndevice = %s\npriority = other\n", a.slave);
	write_conf(dir, conf, ports);
	store.log[0] = '\0';
	start_stored(dir, conf, NULL);
	listen_ms(100);
	assert_non_null(strstr(store.log, "-b+1/rx "));
	assert_int_equal(e2e_store_find(&store, "b+1/rx"), -1);
	assert_true(lock_free(b.slave));
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	f = fopen(live.err_path, "r");
	assert_non_null(f);
	(void)!fread(err, 1, sizeof(err) - 1, f);
	fclose(f);
	assert_non_null(strstr(err, "descriptor b+1/rx kept across the restart: no port of this "
				    "config takes it; closed"));
	close(a.master);
	close(b.master);
}

/* Reads what is there within ms into buf (NUL-terminated); -1 at EOF or an error. */
static ssize_t read_within(int fd, char *buf, size_t len, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	int64_t end = tu_mono_ns() + (int64_t)ms * 1000000;

	while (got < len - 1 && tu_mono_ns() < end) {
		ssize_t n;

		if (poll(&pfd, 1, 20) != 1)
			continue;
		if ((pfd.revents & POLLIN) == 0)
			return -1;
		n = read(fd, buf + got, len - 1 - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

/*
 * pass: an application holds PATH open across the restart. Its pty is kept (master
 * and the daemon's slave descriptor in the store), so it sees no hang-up, and what
 * each side wrote while no daemon ran reaches the other afterwards, logged and
 * marked (the TX reader's EV late-delivery case=restart dir=tx).
 */
static void pass_survives_restart(void **state)
{
	char dir[256], conf[300], ports[512], path[300], pts1[64] = "", pts2[64] = "", buf[64];
	struct e2e_log log;
	struct pty dev;
	int app;
	ssize_t n;
	int64_t min_wait;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(path, sizeof(path), "%s/app", dir);
	new_pty(&dev);
	snprintf(ports, sizeof(ports), "[serial p]\ndevice = %s\npass = %s\ndelimiter = \\n\n"
		 "priority = other\n", dev.slave, path);
	write_conf(dir, conf, ports);
	start_stored(dir, conf, NULL);
	assert_true(e2e_store_find(&store, "p/pty") >= 0 && e2e_store_find(&store, "p/pts") >= 0);
	assert_true(readlink(path, pts1, sizeof(pts1) - 1) > 0);
	app = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(app >= 0);
	assert_int_equal(write(dev.master, "d1\n", 3), 3);
	n = read_within(app, buf, 4, 2000);
	assert_int_equal(n, 3);
	assert_string_equal(buf, "d1\n");
	assert_int_equal(write(app, "a1\n", 3), 3);
	assert_int_equal(read_within(dev.master, buf, 4, 2000), 3);
	assert_string_equal(buf, "a1\n");
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));

	/* no daemon: the link stays, both sides write */
	assert_true(readlink(path, pts2, sizeof(pts2) - 1) > 0);
	assert_string_equal(pts1, pts2);
	assert_int_equal(write(app, "a2\n", 3), 3);
	assert_int_equal(write(dev.master, "d2\n", 3), 3);
	tu_sleep_ms(DOWN_MS);
	start_stored(dir, conf, NULL);
	assert_int_equal(read_within(app, buf, 4, 2000), 3);
	assert_string_equal(buf, "d2\n");
	assert_int_equal(read_within(dev.master, buf, 4, 2000), 3);
	assert_string_equal(buf, "a2\n");
	assert_int_equal(write(app, "a3\n", 3), 3);
	assert_int_equal(read_within(dev.master, buf, 4, 2000), 3);
	assert_string_equal(buf, "a3\n");
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));

	read_log(dir, &log);
	assert_true(FIND(&log, 1, " p EV open ", "driver=pass", "store=kept") > 0);
	assert_true(FIND(&log, 1, " p TX 3 61330a ") > 0);
	for (int tx = 1; tx >= 0; tx--) {
		uint64_t held = held_said(&log, "p", tx, &min_wait);

		if (held != 3 || min_wait < DOWN_MS * 1000) {
			for (size_t i = 0; i < log.n; i++)
				if (strcmp(log.line[i].src, "p") == 0)
					print_message("# %s\n", log.line[i].text);
			fail_msg("%s: %" PRIu64 " bytes held, the least wait %" PRId64 " us (want 3, "
				 "at least %d ms)", tx ? "TX" : "RX", held, min_wait, DOWN_MS);
		}
	}
	assert_int_equal(last_stat(&log, "p", "tx_held_bytes"), 3);
	e2e_free_log(&log);
	close(app);
	close(dev.master);
}

/* Without $FDSTORE (a service manager that keeps nothing) nothing is sent to be kept,
 * and a stop closes the port as it always did. */
static void no_store_without_fdstore(void **state)
{
	static const char *const env[] = { "FDSTORE=", NULL };
	char dir[256], conf[300], ports[512];
	struct e2e_log log;
	struct pty a;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	new_pty(&a);
	snprintf(ports, sizeof(ports), "[serial a]\ndevice = %s\npriority = other\n", a.slave);
	write_conf(dir, conf, ports);
	start_stored(dir, conf, env);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	assert_int_equal(store.puts, 0);
	assert_true(lock_free(a.slave));
	read_log(dir, &log);
	assert_true(FIND(&log, 0, " a EV close ", "reason=stop") >= 0);
	assert_int_equal(FIND(&log, 0, "store="), -1);
	e2e_free_log(&log);
	close(a.master);
}

/* src's RX bytes in the log's lines [from, to), concatenated (malloc'd; *len their count). */
static uint8_t *rx_between(const struct e2e_log *log, const char *src, size_t from, size_t to,
			   size_t *len)
{
	uint8_t *out = malloc(1);
	size_t n = 0;

	assert_non_null(out);
	for (size_t i = from; i < to && i < log->n; i++) {
		if (strcmp(log->line[i].kind, "RX") != 0 || strcmp(log->line[i].src, src) != 0)
			continue;
		out = realloc(out, n + log->line[i].len + 1);
		assert_non_null(out);
		memcpy(out + n, log->line[i].data, log->line[i].len);
		n += log->line[i].len;
	}
	*len = n;
	return out;
}

/* Every byte the writer sent is in the log once, in order: under src1 before line `split`
 * (the first daemon) and under src2 from there on (the next one). */
static void expect_device(const struct e2e_log *log, const struct writer *w, const char *src1,
			  const char *src2, size_t split)
{
	size_t n1, n2;
	uint8_t *b1 = rx_between(log, src1, 0, split, &n1);
	uint8_t *b2 = rx_between(log, src2, split, log->n, &n2);

	printf("# device %c: sent %zu bytes; %zu logged as %s, then %zu as %s\n", w->tag, w->n, n1,
	       src1, n2, src2);
	assert_int_equal(n1 + n2, w->n);
	assert_memory_equal(b1, w->sent, n1);
	assert_memory_equal(b2, w->sent + n1, n2);
	assert_true(n2 > 0);
	free(b1);
	free(b2);
}

/* A config of the ports NAME=DEVICE..., newline-delimited (NULL-terminated pairs). */
static void write_ports(const char *dir, const char *conf, const char *const *nd)
{
	char ports[1024] = "";

	for (; nd[0] != NULL; nd += 2) {
		size_t o = strlen(ports);

		snprintf(ports + o, sizeof(ports) - o, "[serial %s]\ndevice = %s\ndelimiter = \\n\n"
			 "priority = other\n", nd[0], nd[1]);
	}
	write_conf(dir, conf, ports);
}

/*
 * The config changed across the restart so that the kept ports are other ports' now:
 * renamed (a's device is b's), or two ports' devices swapped. The kept descriptor goes
 * to the port of its device, whatever its name: no EV error (the old keeper's flock),
 * every byte the devices sent logged once, under the port that had the device then.
 */
static void kept_ports_change_names(bool swap)
{
	char dir[256], conf[300];
	struct e2e_log log;
	struct writer wa, wb;
	struct pty a, b;
	long run2;

	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	new_pty(&a);
	new_pty(&b);
	write_ports(dir, conf, (const char *const[]){ "a", a.slave, "b", b.slave, NULL });
	writer_start_tagged(&wa, a.master, 'A');
	writer_start_tagged(&wb, b.master, 'B');
	start_stored(dir, conf, NULL);
	listen_ms(300);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	if (swap)
		write_ports(dir, conf, (const char *const[]){ "a", b.slave, "b", a.slave, NULL });
	else    /* a is called c now, b stays */
		write_ports(dir, conf, (const char *const[]){ "c", a.slave, "b", b.slave, NULL });
	tu_sleep_ms(DOWN_MS);
	store.log[0] = '\0';
	start_stored(dir, conf, NULL);
	listen_ms(300);
	writer_stop(&wa);
	writer_stop(&wb);
	listen_ms(100);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	printf("# store: %s\n", store.log);

	read_log(dir, &log);
	run2 = FIND(&log, 1, " portlogd EV start ");
	assert_true(run2 > 0);
	/* (the clock sensor's, on a virtual machine without an RTC, is no port's) */
	for (size_t i = (size_t)run2; i < log.n; i++)
		if (strstr(log.line[i].text, " EV error ") != NULL
		    && strstr(log.line[i].text, " op=clock-sensor ") == NULL)
			fail_msg("an error after the restart: %s", log.line[i].text);
	if (swap) {
		expect_device(&log, &wa, "a", "b", (size_t)run2);
		expect_device(&log, &wb, "b", "a", (size_t)run2);
		assert_true(FIND(&log, (size_t)run2, " a EV open ", b.slave, "store=kept") > 0);
		assert_true(FIND(&log, (size_t)run2, " b EV open ", a.slave, "store=kept") > 0);
	} else {
		expect_device(&log, &wa, "a", "c", (size_t)run2);
		expect_device(&log, &wb, "b", "b", (size_t)run2);
		assert_true(FIND(&log, (size_t)run2, " c EV open ", a.slave, "store=kept") > 0);
		/* kept under its new name only */
		assert_true(e2e_store_find(&store, "c/rx") >= 0);
		assert_int_equal(e2e_store_find(&store, "a/rx"), -1);
	}
	/* each device once in the store, under its port's name */
	assert_int_equal(rdev_of_fd(store.fd[e2e_store_find(&store, swap ? "a/rx" : "c/rx")]),
			 rdev_of(swap ? b.slave : a.slave));
	assert_int_equal(rdev_of_fd(store.fd[e2e_store_find(&store, "b/rx")]),
			 rdev_of(swap ? a.slave : b.slave));
	e2e_expect_accounted(&log);
	e2e_free_log(&log);
	writer_free(&wa);
	writer_free(&wb);
	close(a.master);
	close(b.master);
}

static void renamed_port_keeps_every_byte(void **state)
{
	(void)state;
	kept_ports_change_names(false);
}

static void swapped_ports_keep_every_byte(void **state)
{
	(void)state;
	kept_ports_change_names(true);
}

/* Reads notifications until the daemon exits; returns its wait status. */
static int until_exit(void)
{
	char msg[4096];
	int status;

	while (e2e_notify_recv(&live, msg, sizeof(msg), WAIT_MS) >= 0)
		;
	status = e2e_stop(&live, SIGTERM, WAIT_MS, NULL);
	assert_true(status != -1);
	return status;
}

/* The daemon's stderr (NUL-terminated, at most len - 1 bytes). */
static void read_stderr(char *buf, size_t len)
{
	FILE *f = fopen(live.err_path, "r");

	assert_non_null(f);
	buf[fread(buf, 1, len - 1, f)] = '\0';
	fclose(f);
}

/*
 * A start-up that fails (RLIMIT_NPROC for the user it runs as: the threads the config
 * needs are counted before any starts) leaves the store as it was (nothing forgotten),
 * so the next daemon still finds the port open and logs every byte the device sent
 * meanwhile.
 */
static void failed_start_keeps_store(void **state)
{
	char dir[256], conf[300], path[300], err[8192];
	struct writer w;
	struct pty a;
	struct e2e_log log;
	size_t len, *starts, *idx, nl;
	uint8_t *rx;
	int status;

	(void)state;
	one_port_writing(dir, sizeof(dir), conf, sizeof(conf), &a, &w);
	start_stored(dir, conf, NULL);
	listen_ms(300);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	assert_true(e2e_store_find(&store, "a/rx") >= 0);
	/* the next start as a user of its own, with room for three threads: fewer than the
	 * config needs */
	assert_int_equal(chmod(dir, 0777), 0);
	snprintf(path, sizeof(path), "%s/portlogd.log", dir);
	assert_int_equal(chmod(path, 0666), 0);
	store.log[0] = '\0';
	e2e_set_child(&(struct e2e_child){ .uid = 54321, .gid = 54321, .rtprio = -1, .memlock = -1,
					   .nproc = 3 });
	assert_int_equal(e2e_start_store(&live, dir, conf, NULL, &store), 0);
	status = until_exit();
	read_stderr(err, sizeof(err));
	printf("# the start that failed: exit %d; store: %s\n",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1, store.log);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	assert_non_null(strstr(err, "RLIMIT_NPROC"));
	assert_null(strstr(store.log, "-"));
	assert_true(e2e_store_find(&store, "a/rx") >= 0);
	assert_true(e2e_store_find(&store, "portlogd-state") >= 0);

	tu_sleep_ms(DOWN_MS);
	run_again(dir, conf, &w);
	read_log(dir, &log);
	rx = e2e_concat(&log, "a", &len, &starts, &idx, &nl);
	printf("# sent %zu bytes; the log has %zu\n", w.n, len);
	assert_int_equal(len, w.n);
	assert_memory_equal(rx, w.sent, len);
	free(rx);
	free(starts);
	free(idx);
	e2e_free_log(&log);
	writer_free(&w);
	close(a.master);
}

/*
 * The service manager keeps no more than $FDSTORE descriptors (FileDescriptorStoreMax=)
 * and closes what comes beyond: a port it refused is not said kept (EV close without
 * store=kept) and closes as any port does.
 */
static void refused_is_not_kept(void **state)
{
	static const char *const env[] = { "FDSTORE=2", NULL };
	char dir[256], conf[300];
	struct e2e_log log;
	struct pty a, b;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	new_pty(&a);
	new_pty(&b);
	write_ports(dir, conf, (const char *const[]){ "a", a.slave, "b", b.slave, NULL });
	store.max = 2;          /* the state page and one port */
	start_stored(dir, conf, env);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	printf("# store: %s\n", store.log);
	assert_true(e2e_store_find(&store, "a/rx") >= 0);
	assert_int_equal(e2e_store_find(&store, "b/rx"), -1);
	assert_true(lock_free(b.slave));
	read_log(dir, &log);
	assert_true(FIND(&log, 0, " a EV close ", "store=kept") > 0);
	assert_true(FIND(&log, 0, " b EV close ") > 0);
	assert_int_equal(FIND(&log, 0, " b EV close ", "store=kept"), -1);
	e2e_free_log(&log);
	close(a.master);
	close(b.master);
}

/* A pass pty kept in the store whose pass_open then fails (the next daemon runs as a
 * user who may not give the pty to pass_group): the daemon exits 78 and the store
 * forgets the pty (it would hold it for ever). */
static void failed_pass_leaves_store(void **state)
{
	char dir[256], conf[300], ports[512], path[300];
	struct pty dev;
	int status;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(path, sizeof(path), "%s/app", dir);
	new_pty(&dev);
	snprintf(ports, sizeof(ports), "[serial p]\ndevice = %s\npass = %s\npriority = other\n",
		 dev.slave, path);
	write_conf(dir, conf, ports);
	start_stored(dir, conf, NULL);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	assert_true(e2e_store_find(&store, "p/pty") >= 0 && e2e_store_find(&store, "p/pts") >= 0);
	assert_int_equal(chmod(dir, 0755), 0);
	store.log[0] = '\0';
	e2e_set_child(&(struct e2e_child){ .uid = 54321, .gid = 54321, .rtprio = -1, .memlock = -1 });
	assert_int_equal(e2e_start_store(&live, dir, conf, NULL, &store), 0);
	status = until_exit();
	printf("# exit %d; store: %s\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1, store.log);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 78);
	assert_int_equal(e2e_store_find(&store, "p/pty"), -1);
	assert_int_equal(e2e_store_find(&store, "p/pts"), -1);
	close(dev.master);
}

/* Handed over under a service manager that did not set $FDSTORE (systemd 252 without the
 * unit's Environment=FDSTORE): what no port wants is still forgotten there. */
static void forgotten_without_fdstore(void **state)
{
	static const char *const env[] = { "FDSTORE=", NULL };
	char dir[256], conf[300];
	struct pty a, b;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	new_pty(&a);
	new_pty(&b);
	write_ports(dir, conf, (const char *const[]){ "a", a.slave, "b", b.slave, NULL });
	start_stored(dir, conf, NULL);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	write_ports(dir, conf, (const char *const[]){ "a", a.slave, NULL });
	store.log[0] = '\0';
	start_stored(dir, conf, env);
	listen_ms(100);
	printf("# store: %s\n", store.log);
	assert_non_null(strstr(store.log, "-b/rx "));
	assert_true(lock_free(b.slave));
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	close(a.master);
	close(b.master);
}

/*
 * LISTEN_FDNAMES with fewer names than LISTEN_FDS (sd_listen_fds_with_names refuses it):
 * the descriptors are still the daemon's to take or close, so the kept port is taken
 * back by its device and nothing is lost (not left open and busy until a full stop).
 */
static void names_miscounted(void **state)
{
	static const char *const env[] = { "LISTEN_FDNAMES=a/rx", NULL };
	char dir[256], conf[300];
	struct e2e_log log;
	struct writer w;
	struct pty a;
	size_t len, *starts, *idx, nl;
	uint8_t *rx;
	long run2;

	(void)state;
	one_port_writing(dir, sizeof(dir), conf, sizeof(conf), &a, &w);
	start_stored(dir, conf, NULL);
	listen_ms(300);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	assert_int_equal(store.n, 2);   /* the state page and a/rx: two descriptors, one name */
	tu_sleep_ms(DOWN_MS);
	start_stored(dir, conf, env);
	listen_ms(300);
	writer_stop(&w);
	listen_ms(100);
	assert_true(WIFEXITED(stop_daemon(SIGTERM)));
	read_log(dir, &log);
	rx = e2e_concat(&log, "a", &len, &starts, &idx, &nl);
	printf("# sent %zu bytes; the log has %zu\n", w.n, len);
	run2 = FIND(&log, 1, " portlogd EV start ");
	assert_true(run2 > 0);
	assert_int_equal(FIND(&log, (size_t)run2, " a EV error "), -1);
	assert_true(FIND(&log, (size_t)run2, " a EV open ", "store=kept") > 0);
	assert_int_equal(len, w.n);
	assert_memory_equal(rx, w.sent, len);
	free(rx);
	free(starts);
	free(idx);
	e2e_free_log(&log);
	writer_free(&w);
	close(a.master);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(restart_keeps_every_byte, teardown),
		cmocka_unit_test_teardown(crash_loses_only_what_was_read, teardown),
		cmocka_unit_test_teardown(stopped_then_killed, teardown),
		cmocka_unit_test_teardown(hung_up_is_opened_anew, teardown),
		cmocka_unit_test_teardown(other_device_is_opened_anew, teardown),
		cmocka_unit_test_teardown(unwanted_is_released, teardown),
		cmocka_unit_test_teardown(pass_survives_restart, teardown),
		cmocka_unit_test_teardown(no_store_without_fdstore, teardown),
		cmocka_unit_test_teardown(renamed_port_keeps_every_byte, teardown),
		cmocka_unit_test_teardown(swapped_ports_keep_every_byte, teardown),
		cmocka_unit_test_teardown(failed_start_keeps_store, teardown),
		cmocka_unit_test_teardown(refused_is_not_kept, teardown),
		cmocka_unit_test_teardown(failed_pass_leaves_store, teardown),
		cmocka_unit_test_teardown(forgotten_without_fdstore, teardown),
		cmocka_unit_test_teardown(names_miscounted, teardown),
	};

	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
