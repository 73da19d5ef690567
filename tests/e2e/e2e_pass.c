/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_pass.c - both directions of a link in one source: tx_device (a tap's second port) and pass (a pty relayed to the device), end to end.
 *
 * The real daemon, real ptys, real clients: the simulator plays a request and
 * response exchange on two ptys (a tap's two wires); mbpoll (Debian's Modbus
 * master) polls through pass's pty a Modbus RTU slave of Debian's
 * python3-pymodbus on the device side (a second pty, joined to the device's by
 * socat, because pymodbus opens its port by path and a pty's master has none).
 * Exits 77 (skipped) only when mbpoll, socat or pymodbus is missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "sim/sim.h"
#include "testutil.h"

#define WAIT_MS 10000
#define GAP_US 3000             /* the tap's ptys: wide, as in e2e_serial */
#define MAX_PACKET 256
#define BAUD 19200              /* the pass port's: mbpoll's default */

static struct e2e_daemon live;

static int teardown(void **state)
{
	(void)state;
	e2e_kill(&live);
	e2e_reap_all();         /* socat, the Modbus slave */
	return 0;
}

static void wait_path(const char *path)
{
	e2e_wait_path(path, WAIT_MS);
}

static void start(const char *dir, const char *conf)
{
	assert_int_equal(e2e_start(&live, dir, conf), 0);
	if (e2e_wait_ready(&live, WAIT_MS) != 0) {
		e2e_show_file(live.err_path);
		fail_msg("the daemon did not send READY=1");
	}
}

static void stop(void)
{
	int status = e2e_stop(&live, SIGTERM, WAIT_MS, NULL);

	live.pid = 0;
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The lines of src that hold both needles. */
static size_t count2(const struct e2e_log *log, const char *src, const char *a, const char *b)
{
	size_t n = 0;

	for (size_t i = 0; i < log->n; i++)
		n += strcmp(log->line[i].src, src) == 0 && strstr(log->line[i].text, a) != NULL
		     && strstr(log->line[i].text, b) != NULL;
	return n;
}

/* How many lines of source src hold `needle`. */
static size_t count(const struct e2e_log *log, const char *src, const char *needle)
{
	return count2(log, src, needle, needle);
}

/* The first line of src that holds needle; fails when there is none. */
static const char *find(const struct e2e_log *log, const char *src, const char *needle)
{
	for (size_t i = 0; i < log->n; i++)
		if (strcmp(log->line[i].src, src) == 0 && strstr(log->line[i].text, needle) != NULL)
			return log->line[i].text;
	fail_msg("no line of %s holds '%s'", src, needle);
	return NULL;
}

/* Within one source, lines are in time order (RX and TX merged by the first
 * byte's time); 10 us of slack for a slewed wall clock. A wall clock that was
 * set meanwhile (EV clock-step: another test's, or an NTP step) makes the
 * times jump, and the check is left out. */
static void expect_time_order(const struct e2e_log *log, const char *src)
{
	int64_t prev = INT64_MIN;
	size_t prev_i = 0;

	for (size_t i = 0; i < log->n; i++)
		if (strstr(log->line[i].text, " portlogd EV clock-step ") != NULL) {
			printf("# the wall clock was set during the run: time order not checked\n");
			return;
		}
	for (size_t i = 0; i < log->n; i++) {
		if (strcmp(log->line[i].src, src) != 0)
			continue;
		if (log->line[i].t + 10000 < prev)
			fail_msg("%s: line %zu is older than line %zu:\n%.120s\n%.120s", src, i + 1,
				 prev_i + 1, log->line[prev_i].text, log->line[i].text);
		prev = log->line[i].t;
		prev_i = i;
	}
}

/* ---- tx_device: a tap's two wires ---- */

/*
 * The packets p sent must be the `kind` lines of src, byte-exact, in order;
 * each one line, unless the simulator could not keep its own pauses around it
 * (sim_packet_clean: counted in *unclean) or the log marks its wrong boundaries
 * where the rule puts the marks (e2e_packet_fit): the log's own mark is the only
 * excuse, never the sender's clock.
 * Fills line[k]: the log index of the line that holds packet k's first byte, and
 * marked[k]: whether an EV late-delivery is dated at a line of packet k (its time,
 * and so its order against the other direction, is in doubt).
 * Returns how many were cut wrong with their marks.
 */
static size_t check_direction(const struct e2e_log *log, const char *src, const char *kind,
			      const struct sim_port *p, size_t *line, bool *marked, size_t *unclean)
{
	size_t len, *starts, *idx, n, j = 0, cut = 0;
	uint8_t *got = e2e_concat_kind(log, src, kind, &len, &starts, &idx, &n);

	if (len != p->data_len || memcmp(got, p->data, len) != 0)
		fail_msg("%s %s: the log holds %zu bytes, %zu were sent (or they differ)", src, kind,
			 len, p->data_len);
	for (size_t k = 0; k < p->npkt; k++) {
		const struct sim_packet *pk = &p->pkt[k];
		size_t fl, ll;

		while (j + 1 < n && starts[j + 1] <= pk->off)
			j++;
		line[k] = idx[j];
		marked[k] = false;
		for (size_t q = j; q < n && starts[q] < pk->off + pk->len; q++)
			marked[k] |= e2e_late_mark_at(log, src, log->line[idx[q]].t);
		if (starts[j] == pk->off && starts[j + 1] - starts[j] == pk->len)
			continue;
		if (!sim_packet_clean(p, k)) {
			(*unclean)++;
			continue;
		}
		if (e2e_packet_fit(log, src, starts, idx, n, MAX_PACKET, pk->off, pk->len, &fl, &ll)
		    == E2E_FIT_MARKED) {
			cut++;
			continue;
		}
		fail_msg("%s %s: packet %zu (%u bytes) is not one line, and not marked where the "
			 "boundary rule puts the mark: %s", src, kind, k, pk->len, log->line[idx[j]].text);
	}
	free(got);
	free(starts);
	free(idx);
	return cut;
}

static unsigned packets(unsigned dflt)
{
	const char *e = getenv("PORTLOGD_E2E_PACKETS");

	/* exchanges are slower than e2e_serial's packets: a tenth of its count */
	return e != NULL && atoi(e) >= 10 ? (unsigned)atoi(e) / 10 : dflt;
}

/*
 * Two ptys fed by the simulator as the two wires of a link: requests on the
 * tap's second port (tx_device), each response on the device's 1 to 10 gaps
 * after its request. Every packet exactly once, byte-exact, under its kind
 * (TX the requests, RX the responses), each response after its request and
 * before the next request, the source's lines in time order, and each ring's
 * accounting proven by the log.
 */
static void tap_exchange(void **state)
{
	char text[2048];
	struct sim_cfg cfg = {
		.kind = SIM_MODBUS, .packets = packets(300), .max_len = 64, .max_frags = 3,
		.intra_gap_max_us = GAP_US / 5, .inter_gap_min_us = GAP_US,
		.inter_gap_max_us = 10 * GAP_US, .gap_us = GAP_US, .seed = tu_seed("e2e_pass"),
	};
	struct e2e_tap t;
	struct sim_port *req = &t.req, *resp = &t.resp;
	struct e2e_log log = { 0 };
	size_t *rline, *qline, excused, unclean = 0, misordered = 0;
	bool *rmark, *qmark;

	(void)state;
	snprintf(text, sizeof(text), "baud = 115200\ngap_us = %d\nmax_packet = %d\n", GAP_US,
		 MAX_PACKET);
	e2e_tap_start(&live, &t, "plc", "stat_interval_s = 1\n", text);
	assert_int_equal(sim_exchange_run(req, resp, &cfg), 0);
	tu_sleep_ms(10 * GAP_US / 1000);
	stop();

	assert_int_equal(e2e_read_log(&log, t.log), 0);
	qline = calloc(req->npkt, sizeof(*qline));
	rline = calloc(resp->npkt, sizeof(*rline));
	qmark = calloc(req->npkt, sizeof(*qmark));
	rmark = calloc(resp->npkt, sizeof(*rmark));
	excused = check_direction(&log, "plc", "TX", req, qline, qmark, &unclean);
	excused += check_direction(&log, "plc", "RX", resp, rline, rmark, &unclean);
	/*
	 * Each response after its request, each request after the response
	 * before: in the log's order, which is that of the dates the readers gave
	 * the first bytes. Where the log marks one of them (a reader that may have
	 * found its bytes late: a stalled machine), dates and so order cannot be
	 * judged; those are counted, and may be few.
	 */
	for (size_t k = 0; k < req->npkt; k++) {
		bool late = qmark[k] || rmark[k] || (k > 0 && rmark[k - 1]);

		if (rline[k] > qline[k] && (k == 0 || qline[k] > rline[k - 1]))
			continue;
		if (late) {
			misordered++;
			continue;
		}
		for (size_t d = k > 0 ? k - 1 : 0; d <= k; d++)
			printf("# exchange %zu: request written %.6f, logged %.6f; response written "
			       "%.6f, logged %.6f\n", d, (double)req->pkt[d].t_first_real / 1e9,
			       (double)log.line[qline[d]].t / 1e9, (double)resp->pkt[d].t_first_real / 1e9,
			       (double)log.line[rline[d]].t / 1e9);
		fail_msg("exchange %zu: request (log line %zu), response (log line %zu), response before "
			 "(log line %zu) out of order", k, qline[k] + 1, rline[k] + 1,
			 k > 0 ? rline[k - 1] + 1 : 0);
	}
	expect_time_order(&log, "plc");
	/* each port's events in its own ring: the tap's end in dir=tx */
	snprintf(text, sizeof(text), " EV open device=%s ", req->slave);
	assert_non_null(strstr(find(&log, "plc", text), " dir=tx"));
	snprintf(text, sizeof(text), " EV open device=%s ", resp->slave);
	assert_null(strstr(find(&log, "plc", text), " dir=tx"));
	/* each wire's interrupt is its own reader's to set (irq_priority auto at
	 * priority 97): a pty has none, said once by each */
	assert_int_equal(count(&log, "plc", " EV irq-priority irq=none reason=pty"), 2);
	assert_int_equal(count(&log, "plc", " EV irq-priority irq=none reason=pty dir=tx"), 1);
	e2e_expect_accounted(&log);
	printf("# %zu exchanges: every request a TX line, every response an RX line, in order; "
	       "%zu packets cut wrong with their marks, %zu not one line where the simulator "
	       "did not keep its pauses, %zu out of order at a mark\n", req->npkt,
	       excused, unclean, misordered);
	/* of both directions' packets: else the run proves little */
	assert_true(excused * 10 <= 2 * req->npkt);
	assert_true(unclean * 10 <= 2 * req->npkt);
	assert_true(misordered * 10 <= req->npkt);
	free(qline);
	free(rline);
	free(qmark);
	free(rmark);
	e2e_free_log(&log);
	e2e_tap_close(&t);
}

/* The log, read again until `src` has a line holding needle (the flusher writes every 20 ms). */
static void wait_lines(struct e2e_log *log, const char *path, const char *src, const char *needle,
		       size_t n)
{
	for (int i = 0; i < WAIT_MS / 20; i++) {
		e2e_free_log(log);
		memset(log, 0, sizeof(*log));
		assert_int_equal(e2e_read_log(log, path), 0);
		if (count(log, src, needle) >= n)
			return;
		tu_sleep_ms(20);
	}
	fail_msg("not %zu lines of %s with '%s' within %d ms", n, src, needle, WAIT_MS);
}

static void wait_line(struct e2e_log *log, const char *path, const char *src, const char *needle)
{
	wait_lines(log, path, src, needle, 1);
}

/* The tap's second port hangs up and comes back: its reader says so (dir=tx),
 * reopens it like the port's own, and loses none of what it sent before or after. */
static void tap_reconnect(void **state)
{
	char tx[300], text[64];
	struct sim_cfg cfg = {
		.kind = SIM_BINARY, .packets = 20, .min_len = 1, .max_len = 100, .max_frags = 1,
		.inter_gap_min_us = 3 * GAP_US, .inter_gap_max_us = 4 * GAP_US, .gap_us = GAP_US,
		.seed = tu_seed("e2e_pass reconnect"),
	};
	struct e2e_tap t;
	struct sim_port *req = &t.req;
	const char *logp = t.log;
	struct e2e_log log = { 0 };
	size_t len, *starts, *idx, n, before;
	uint8_t *got, *sent;

	(void)state;
	snprintf(text, sizeof(text), "gap_us = %d\n", GAP_US);
	e2e_tap_start(&live, &t, "plc", "stat_interval_s = 1\n", text);
	snprintf(tx, sizeof(tx), "%s/tx", t.dir);
	assert_int_equal(sim_port_run(req, &cfg), 0);
	before = req->data_len;
	for (int i = 0; i < WAIT_MS / 20; i++) {       /* all of it read before the hang-up */
		wait_line(&log, logp, "plc", " TX ");
		got = e2e_concat_kind(&log, "plc", "TX", &len, &starts, &idx, &n);
		free(got);
		free(starts);
		free(idx);
		if (len == before)
			break;
		tu_sleep_ms(20);
	}
	sent = malloc(2 * before + 1);
	memcpy(sent, req->data, before);
	sim_port_close(req);                    /* hang-up, and the link is gone */
	wait_line(&log, logp, "plc", " EV close reason=hangup dir=tx");
	wait_line(&log, logp, "plc", " EV error op=open");
	assert_int_equal(sim_port_open(req, "req", tx), 0);
	assert_int_equal(sim_port_wait_open(req, WAIT_MS), 0);
	cfg.seed++;
	assert_int_equal(sim_port_run(req, &cfg), 0);
	sent = realloc(sent, before + req->data_len);
	memcpy(sent + before, req->data, req->data_len);
	tu_sleep_ms(5 * GAP_US / 1000);
	stop();

	e2e_free_log(&log);
	memset(&log, 0, sizeof(log));
	assert_int_equal(e2e_read_log(&log, logp), 0);
	got = e2e_concat_kind(&log, "plc", "TX", &len, &starts, &idx, &n);
	assert_int_equal(len, before + req->data_len);
	assert_memory_equal(got, sent, len);
	assert_non_null(strstr(find(&log, "plc", " EV error op=open"), " dir=tx"));
	assert_int_equal(count(&log, "plc", " EV open device="), 3);    /* rx; tx twice */
	/* opens, hang-up, errors, stop, and the pty's interrupt said once (not per
	 * open); besides these only the doubts a stalled machine adds (an EV
	 * late-delivery: CI's ASan run once had one, a 22 ms stall) */
	assert_int_equal(count(&log, "plc", " dir=tx") - count2(&log, "plc", " EV late-delivery ",
							       " dir=tx"),
			 2 + 1 + count(&log, "plc", " EV error ") + 1 + 1);
	expect_time_order(&log, "plc");
	e2e_expect_accounted(&log);
	free(got);
	free(starts);
	free(idx);
	free(sent);
	e2e_free_log(&log);
	e2e_tap_close(&t);
}

/* ---- pass: a pty for an application, relayed to the device ---- */

struct pass_run {
	char dir[256], conf[300], logp[300], dev[300], app[300];
	struct sim_port device;         /* the device: the other end of the daemon's device pty */
	struct e2e_log log;
};

static void pass_begin(struct pass_run *r, const char *extra)
{
	char text[2048];

	memset(r, 0, sizeof(*r));
	e2e_tmpdir(r->dir, sizeof(r->dir));
	snprintf(r->conf, sizeof(r->conf), "%s/portlogd.conf", r->dir);
	snprintf(r->logp, sizeof(r->logp), "%s/portlogd.log", r->dir);
	snprintf(r->dev, sizeof(r->dev), "%s/dev", r->dir);
	snprintf(r->app, sizeof(r->app), "%s/run/app/plc", r->dir);     /* directories made */
	assert_int_equal(sim_port_open(&r->device, "dev", r->dev), 0);
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 1\n"
		 "[serial plc]\ndevice = %s\nbaud = %d\ngap_us = %d\npass = %s\n%s", r->logp,
		 r->dev, BAUD, GAP_US, r->app, extra);
	e2e_write_file(r->conf, text);
	start(r->dir, r->conf);
	assert_int_equal(sim_port_wait_open(&r->device, WAIT_MS), 0);
	wait_path(r->app);
}

static void pass_end(struct pass_run *r)
{
	e2e_free_log(&r->log);
	memset(&r->log, 0, sizeof(r->log));
	assert_int_equal(e2e_read_log(&r->log, r->logp), 0);
	/* the daemon removed its link */
	assert_int_equal(access(r->app, F_OK), -1);
	expect_time_order(&r->log, "plc");
	e2e_expect_accounted(&r->log);
}

/* The `kind` lines of plc are the n writes, byte-exact, in order; a line is one
 * write or, where the reader woke too late to see the pause, several whole ones.
 * Says how many lines there were. */
static void expect_writes(const struct e2e_log *log, const char *kind, const char *const *w,
			  size_t nw)
{
	size_t len, *starts, *idx, n, k = 0, off = 0;
	uint8_t *got = e2e_concat_kind(log, "plc", kind, &len, &starts, &idx, &n);

	for (size_t i = 0; i < nw; i++) {
		if (off + strlen(w[i]) > len || memcmp(got + off, w[i], strlen(w[i])) != 0)
			fail_msg("%s: write %zu ('%s') is not where it should be in the log", kind, i,
				 w[i]);
		while (k < n && starts[k] < off)
			k++;
		if (k < n && starts[k] != off && starts[k] < off + strlen(w[i]))
			fail_msg("%s: write %zu ('%s') is cut by a line: %s", kind, i, w[i],
				 log->line[idx[k]].text);
		off += strlen(w[i]);
	}
	assert_int_equal(len, off);
	printf("# %s: %zu writes in %zu lines\n", kind, nw, n);
	free(got);
	free(starts);
	free(idx);
}

static void pass_close_run(struct pass_run *r)
{
	e2e_free_log(&r->log);
	sim_port_close(&r->device);
}

static int app_open(const char *path)
{
	int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	return fd;
}

/* Reads exactly n bytes from fd (non-blocking) within WAIT_MS. */
static void read_exactly(int fd, uint8_t *buf, size_t n)
{
	size_t got = 0;
	int64_t end = tu_mono_ns() + (int64_t)WAIT_MS * 1000000;

	while (got < n) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t k;

		if (tu_mono_ns() > end)
			fail_msg("%zu of %zu bytes arrived within %d ms", got, n, WAIT_MS);
		(void)poll(&pfd, 1, 100);
		k = read(fd, buf + got, n - got);
		if (k > 0)
			got += (size_t)k;
		else if (k < 0 && errno != EAGAIN && errno != EINTR)
			fail_msg("read: %s", strerror(errno));
	}
}

/* Reads what comes until nothing has come for quiet_ms; returns the count. */
static size_t read_all(int fd, uint8_t *buf, size_t cap, int quiet_ms)
{
	size_t got = 0;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t k;

		if (poll(&pfd, 1, quiet_ms) <= 0)
			return got;
		k = read(fd, buf + got, cap - got);
		if (k > 0)
			got += (size_t)k;
		if (got == cap)
			return got;
	}
}

static void write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t k = write(fd, p, n);

		if (k > 0) {
			p += k;
			n -= (size_t)k;
		} else if (k < 0 && errno != EAGAIN && errno != EINTR) {
			fail_msg("write: %s", strerror(errno));
		} else {
			(void)poll(&pfd, 1, 100);
		}
	}
}

/* A packet of n bytes from the device, then a pause of more than a gap. */
static void device_sends(struct pass_run *r, const uint8_t *data, size_t n)
{
	write_all(r->device.master, data, n);
	tu_sleep_ms(3 * GAP_US / 1000);
}

/*
 * The relay both ways, and an application that closes PATH and opens it again:
 * what the application writes reaches the device and is a TX line, what the
 * device sends reaches the application and is an RX line; what the device sent
 * while PATH was closed waits for the next opener; the pty has the config's
 * group and mode; nothing was lost on the way.
 */
static void pass_relay_and_reopen(void **state)
{
	static const char *const req[] = { "request one", "request two", "three" };
	static const char *const resp[] = { "response one", "while closed A", "while closed B",
					    "while closed C", "response three" };
	struct pass_run r;
	struct stat st;
	const struct group *dialout = getgrnam("dialout");
	char buf[256];
	size_t want = 0;
	int fd;

	(void)state;
	pass_begin(&r, "pass_mode = 0640\n");
	assert_int_equal(stat(r.app, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0640);
	if (dialout != NULL)
		assert_int_equal(st.st_gid, dialout->gr_gid);

	fd = app_open(r.app);
	write_all(fd, req[0], strlen(req[0]));
	read_exactly(r.device.master, (uint8_t *)buf, strlen(req[0]));
	assert_memory_equal(buf, req[0], strlen(req[0]));
	device_sends(&r, (const uint8_t *)resp[0], strlen(resp[0]));
	read_exactly(fd, (uint8_t *)buf, strlen(resp[0]));
	assert_memory_equal(buf, resp[0], strlen(resp[0]));
	tu_sleep_ms(3 * GAP_US / 1000);
	write_all(fd, req[1], strlen(req[1]));
	read_exactly(r.device.master, (uint8_t *)buf, strlen(req[1]));
	close(fd);

	/* closed: the device goes on sending; nothing waits in vain */
	for (int i = 1; i <= 3; i++)
		device_sends(&r, (const uint8_t *)resp[i], strlen(resp[i]));
	wait_line(&r.log, r.logp, "plc", "while\\x20closed\\x20C");
	fd = app_open(r.app);
	for (int i = 1; i <= 3; i++)
		want += strlen(resp[i]);
	read_exactly(fd, (uint8_t *)buf, want);
	assert_memory_equal(buf, "while closed Awhile closed Bwhile closed C", want);
	write_all(fd, req[2], strlen(req[2]));
	read_exactly(r.device.master, (uint8_t *)buf, strlen(req[2]));
	assert_memory_equal(buf, req[2], strlen(req[2]));
	device_sends(&r, (const uint8_t *)resp[4], strlen(resp[4]));
	read_exactly(fd, (uint8_t *)buf, strlen(resp[4]));
	close(fd);
	stop();
	pass_end(&r);

	/* every write byte-exact under its direction's kind, each a line of its own
	 * (a reader that woke late may join writes into one line: never cut one) */
	expect_writes(&r.log, "TX", req, 3);
	expect_writes(&r.log, "RX", resp, 5);
	assert_int_equal(count(&r.log, "plc", " EV relay-lost "), 0);
	assert_non_null(strstr(find(&r.log, "portlogd", " STAT plc "), " relay_lost=0 "));
	assert_non_null(strstr(find(&r.log, "plc", " driver=pass "), " dir=tx"));
	pass_close_run(&r);
}

/*
 * An application that does not read: what the pty and the relay's buffer
 * cannot hold is lost, counted and said (EV relay-lost to=app, STAT
 * relay_lost=), while every byte is still an RX line; the application then
 * gets exactly the beginning of what the device sent, and nothing silently
 * goes missing: what it got and what was said lost add up to what was sent.
 */
static void pass_app_not_reading(void **state)
{
	enum { CHUNK = 4096, CHUNKS = 96 };     /* 384 KiB: more than the pty and the buffer */
	struct pass_run r;
	static uint8_t sent[CHUNK * CHUNKS], got[CHUNK * CHUNKS];
	uint64_t rng = tu_seed("e2e_pass overflow"), said = 0, stat_lost = 0;
	size_t len, *starts, *idx, n, have;
	uint8_t *logged;
	int fd;

	(void)state;
	for (size_t i = 0; i < sizeof(sent); i++)
		sent[i] = (uint8_t)tu_rand(&rng);
	pass_begin(&r, "");
	fd = app_open(r.app);
	for (int i = 0; i < CHUNKS; i++)
		write_all(r.device.master, sent + (size_t)i * CHUNK, CHUNK);
	wait_line(&r.log, r.logp, "plc", " EV relay-lost to=app ");
	for (int i = 0; i < WAIT_MS / 20; i++) {          /* every byte in an RX line */
		logged = e2e_concat_kind(&r.log, "plc", "RX", &len, &starts, &idx, &n);
		free(logged);
		free(starts);
		free(idx);
		if (len == sizeof(sent))
			break;
		wait_line(&r.log, r.logp, "plc", " RX ");
		tu_sleep_ms(20);
	}
	have = read_all(fd, got, sizeof(got), 500);
	close(fd);
	stop();
	pass_end(&r);

	logged = e2e_concat_kind(&r.log, "plc", "RX", &len, &starts, &idx, &n);
	assert_int_equal(len, sizeof(sent));
	assert_memory_equal(logged, sent, len);
	assert_true(have > 0 && have < sizeof(sent));
	assert_memory_equal(got, sent, have);
	for (size_t i = 0; i < r.log.n; i++) {
		const struct e2e_line *l = &r.log.line[i];
		const char *p;

		if (strcmp(l->src, "plc") == 0 && (p = strstr(l->text, " EV relay-lost to=app bytes="))
		    != NULL)
			said += strtoull(p + 28, NULL, 10);
		if (strcmp(l->src, "portlogd") == 0 && (p = strstr(l->text, " STAT plc ")) != NULL)
			stat_lost = strtoull(strstr(p, " relay_lost=") + 12, NULL, 10);
	}
	printf("# the application got %zu of %zu bytes; %llu said lost in EV relay-lost lines, "
	       "STAT relay_lost=%llu\n", have, sizeof(sent), (unsigned long long)said,
	       (unsigned long long)stat_lost);
	assert_int_equal(said, stat_lost);
	assert_int_equal(have + said, sizeof(sent));
	assert_true(count(&r.log, "plc", " reason=full") >= 1);
	free(logged);
	free(starts);
	free(idx);
	pass_close_run(&r);
}

/* The k-th setting of the application's pty: then a TX packet "x", after which its reader
 * looks at the settings; the next setting waits until the log has that packet (the reader
 * pushed it, and looked, however late it ran), not for a time. */
static void app_baud(struct pass_run *r, int fd, speed_t speed, bool two_stop, size_t k)
{
	struct termios tio;

	assert_int_equal(tcgetattr(fd, &tio), 0);
	cfsetispeed(&tio, speed);
	cfsetospeed(&tio, speed);
	tio.c_cflag = two_stop ? tio.c_cflag | CSTOPB : tio.c_cflag & ~(tcflag_t)CSTOPB;
	assert_int_equal(tcsetattr(fd, TCSANOW, &tio), 0);
	write_all(fd, "x", 1);
	wait_lines(&r->log, r->logp, "plc", " TX 1 78 ", k);
}

/* The application sets its pty's baud and stop bits: the device keeps the
 * config's, and the log says so once per change (EV app-settings), none for
 * the same again or for the device's own. */
static void pass_app_settings(void **state)
{
	struct pass_run r;
	const char *l;
	int fd;

	(void)state;
	pass_begin(&r, "");
	fd = app_open(r.app);
	app_baud(&r, fd, B9600, false, 1);
	app_baud(&r, fd, B9600, false, 2);      /* the same: nothing new to say */
	app_baud(&r, fd, B19200, false, 3);     /* the device's own: nothing to say */
	app_baud(&r, fd, B4800, true, 4);
	close(fd);
	stop();
	pass_end(&r);
	assert_int_equal(count(&r.log, "plc", " EV app-settings "), 2);
	l = find(&r.log, "plc", " EV app-settings baud=9600 ");
	assert_non_null(strstr(l, " stop_bits=1 flow=none device_baud=19200 device_format=8N1 "));
	l = find(&r.log, "plc", " EV app-settings baud=4800 ");
	assert_non_null(strstr(l, " stop_bits=2 "));
	{
		static const char *const x[] = { "x", "x", "x", "x" };

		expect_writes(&r.log, "TX", x, 4);
	}
	pass_close_run(&r);
}

/* A pass directory that cannot be made is a config error: file:line:key, exit 78. */
static void pass_directory_error(void **state)
{
	char dir[256], conf[300], text[2048], err[4096], want[1024];
	const char *argv[] = { "portlogd", "-f", "-c", conf, NULL };
	int status;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(text, sizeof(text), "[logger]\nlog_file = %s/log\n[serial plc]\ndevice = %s/dev\n"
		 "pass = /proc/portlogd-e2e/plc\n", dir, dir);
	e2e_write_file(conf, text);
	status = e2e_run(argv, err, sizeof(err));
	snprintf(want, sizeof(want), "%s:5: [serial plc] pass: cannot make the directory "
		 "/proc/portlogd-e2e", conf);
	if (status != 78 || strstr(err, want) == NULL)
		fail_msg("exit %d, stderr: %s", status, err);
	assert_int_equal(access(dir, F_OK), 0);
	snprintf(text, sizeof(text), "%s/log", dir);
	assert_int_equal(access(text, F_OK), -1);       /* it changed nothing */
}

/* ---- pass with real clients: mbpoll and a pymodbus slave ---- */

static uint16_t crc16(const uint8_t *p, size_t n)
{
	return sim_modbus_crc(p, n);
}

static size_t with_crc(uint8_t *f, size_t n)
{
	uint16_t c = crc16(f, n);

	f[n] = (uint8_t)c;
	f[n + 1] = (uint8_t)(c >> 8);
	return n + 2;
}

/*
 * mbpoll opens PATH, polls holding registers in RTU mode and writes some, one
 * process per poll (each opens PATH and closes it again); a pymodbus slave
 * serves them on the device side. Every request mbpoll sent is one TX line and
 * every response one RX line, byte-exact (as the Modbus protocol makes them
 * from mbpoll's arguments and the slave's registers), in order; mbpoll shows
 * the values the slave holds: the relay changed nothing and, across the
 * reopens, lost nothing.
 */
static void pass_mbpoll_pymodbus(void **state)
{
	enum { POLLS = 12 };
	char dir[256], conf[300], logp[300], dev[300], modbus[300], app[300], text[2048];
	char socat_a[400], socat_b[400], out_path[300];
	const char *socat[] = { "socat", socat_a, socat_b, NULL };
	const char *slave[] = { "/usr/bin/python3", PORTLOGD_SRC "/tests/e2e/modbus/slave.py", modbus,
				"19200", NULL };
	uint16_t reg[100];
	uint8_t want_tx[POLLS][64], want_rx[POLLS][300];
	size_t want_txn[POLLS], want_rxn[POLLS];
	uint64_t rng = tu_seed("e2e_pass mbpoll");
	struct e2e_log log = { 0 };
	size_t len, *starts, *idx, n;
	uint8_t *got;
	pid_t sp, pp;

	(void)state;
	for (int a = 0; a < 100; a++)
		reg[a] = (uint16_t)(1000 + a);
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(logp, sizeof(logp), "%s/portlogd.log", dir);
	snprintf(dev, sizeof(dev), "%s/dev", dir);
	snprintf(modbus, sizeof(modbus), "%s/modbus", dir);
	snprintf(app, sizeof(app), "%s/app", dir);
	/* a null-modem cable between two ptys: the daemon's device, the slave's port */
	snprintf(socat_a, sizeof(socat_a), "pty,link=%s,raw,echo=0", dev);
	snprintf(socat_b, sizeof(socat_b), "pty,link=%s,raw,echo=0", modbus);
	snprintf(out_path, sizeof(out_path), "%s/socat.out", dir);
	sp = e2e_spawn(socat, out_path);
	wait_path(dev);
	wait_path(modbus);
	snprintf(out_path, sizeof(out_path), "%s/slave.out", dir);
	pp = e2e_spawn(slave, out_path);
	for (int i = 0; i < WAIT_MS / 10 && !e2e_holds(pp, modbus); i++)
		tu_sleep_ms(10);
	if (!e2e_holds(pp, modbus)) {
		e2e_show_file(out_path);
		fail_msg("the pymodbus slave did not open %s", modbus);
	}
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 1\n"
		 "[serial plc]\ndevice = %s\nbaud = %d\npass = %s\n", logp, dev, BAUD, app);
	e2e_write_file(conf, text);
	start(dir, conf);
	wait_path(app);

	for (int k = 0; k < POLLS; k++) {
		unsigned ref = 1 + (unsigned)(tu_rand(&rng) % 90), cnt = 1 + (unsigned)(tu_rand(&rng) % 8);
		bool write = k % 4 == 3;
		uint8_t *q = want_tx[k], *a = want_rx[k];
		char args[256] = "", *out;
		int status;
		size_t o = 0;

		/* the frames the protocol makes of this poll (mbpoll's -r counts from 1) */
		q[o++] = 1;
		q[o++] = write ? 16 : 3;
		q[o++] = (uint8_t)((ref - 1) >> 8);
		q[o++] = (uint8_t)(ref - 1);
		q[o++] = 0;
		q[o++] = (uint8_t)(write ? 2 : cnt);
		if (write) {
			uint16_t v[2] = { (uint16_t)(tu_rand(&rng) % 30000),
					  (uint16_t)(tu_rand(&rng) % 30000) };

			q[o++] = 4;
			for (int i = 0; i < 2; i++) {
				q[o++] = (uint8_t)(v[i] >> 8);
				q[o++] = (uint8_t)v[i];
				reg[ref - 1 + i] = v[i];
			}
			snprintf(args, sizeof(args), "-- %u %u", v[0], v[1]);
			memcpy(a, q, 6);
			want_rxn[k] = with_crc(a, 6);
		} else {
			size_t m = 0;

			a[m++] = 1;
			a[m++] = 3;
			a[m++] = (uint8_t)(2 * cnt);
			for (unsigned i = 0; i < cnt; i++) {
				a[m++] = (uint8_t)(reg[ref - 1 + i] >> 8);
				a[m++] = (uint8_t)reg[ref - 1 + i];
			}
			want_rxn[k] = with_crc(a, m);
		}
		want_txn[k] = with_crc(q, o);
		if (!write)
			snprintf(args, sizeof(args), "-c %u", cnt);
		out = e2e_sh(&status, "mbpoll -m rtu -b %d -P none -a 1 -t 4 -o 2 -r %u -1 %s %s 2>&1",
			 BAUD, ref, app, args);
		if (status != 0)
			fail_msg("poll %d: mbpoll exited %d:\n%s", k, status, out);
		/* what it shows is what the slave holds */
		for (unsigned i = 0; !write && i < cnt; i++) {
			char line[32];

			snprintf(line, sizeof(line), "[%u]: \t%u\n", ref + i, reg[ref - 1 + i]);
			if (strstr(out, line) == NULL)
				fail_msg("poll %d: mbpoll does not show '%.*s':\n%s", k,
					 (int)strlen(line) - 1, line, out);
		}
		if (write && strstr(out, "Written 2 references.") == NULL)
			fail_msg("poll %d: mbpoll did not write:\n%s", k, out);
		free(out);
	}
	stop();
	e2e_reap(pp);
	e2e_reap(sp);

	assert_int_equal(e2e_read_log(&log, logp), 0);
	got = e2e_concat_kind(&log, "plc", "TX", &len, &starts, &idx, &n);
	assert_int_equal(n, POLLS);
	for (size_t k = 0; k < n; k++) {
		size_t rlen, *rs, *ri, rn;
		uint8_t *r = e2e_concat_kind(&log, "plc", "RX", &rlen, &rs, &ri, &rn);

		assert_int_equal(rn, POLLS);
		if (starts[k + 1] - starts[k] != want_txn[k]
		    || memcmp(got + starts[k], want_tx[k], want_txn[k]) != 0)
			fail_msg("request %zu is not the TX line: %s", k, log.line[idx[k]].text);
		if (rs[k + 1] - rs[k] != want_rxn[k] || memcmp(r + rs[k], want_rx[k], want_rxn[k]) != 0)
			fail_msg("response %zu is not the RX line: %s", k, log.line[ri[k]].text);
		/* in order: request, its response, the next request */
		assert_true(idx[k] < ri[k]);
		assert_true(k + 1 == n || ri[k] < idx[k + 1]);
		free(r);
		free(rs);
		free(ri);
	}
	expect_time_order(&log, "plc");
	e2e_expect_accounted(&log);
	assert_int_equal(count(&log, "plc", " EV relay-lost "), 0);
	assert_int_equal(count(&log, "plc", " EV app-settings "), 0);  /* mbpoll set 19200 8N1 */
	printf("# %d polls of mbpoll through pass, each a TX and an RX line as the protocol "
	       "makes them\n", POLLS);
	free(got);
	free(starts);
	free(idx);
	e2e_free_log(&log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(tap_exchange, teardown),
		cmocka_unit_test_teardown(tap_reconnect, teardown),
		cmocka_unit_test_teardown(pass_relay_and_reopen, teardown),
		cmocka_unit_test_teardown(pass_app_not_reading, teardown),
		cmocka_unit_test_teardown(pass_app_settings, teardown),
		cmocka_unit_test_teardown(pass_directory_error, teardown),
		cmocka_unit_test_teardown(pass_mbpoll_pymodbus, teardown),
	};
	static const char *const tools[] = {
		"command -v mbpoll", "command -v socat",
		"/usr/bin/python3 -c 'import pymodbus.server, serial_asyncio'",
	};

	signal(SIGPIPE, SIG_IGN);
	if (!e2e_have("e2e_pass", tools, sizeof(tools) / sizeof(tools[0])))
		return 77;
	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
