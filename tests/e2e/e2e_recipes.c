/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_recipes.c - the grep/awk recipes of portlogd-log(5), run on a log of the real daemon. */
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "sim/sim.h"
#include "testutil.h"

#define WAIT_MS 15000
#define BURST 200                   /* packets sent while the flusher is stalled */
#define RING 64                     /* ring_records: far fewer than BURST */

static struct e2e_daemon live;
static int gps = -1, plc = -1;      /* pty masters */
static int mb = -1, mb_tx = -1;     /* a tap's two wires: mb's device and its tx_device */
static struct sim_port rtu;         /* a half-duplex RS-485 bus: Modbus RTU, all RX */
static bool rtu_open;

/* Every Modbus RTU frame on the bus, in order: the simulator's, then the test's own. */
#define FRAMES 32
static struct {
	uint8_t data[4096];
	size_t off[FRAMES], len[FRAMES], n, end;
	bool request[FRAMES], answered[FRAMES];
} bus;

static int teardown(void **state)
{
	(void)state;
	e2e_kill(&live);
	if (gps >= 0)
		close(gps);
	if (plc >= 0)
		close(plc);
	if (mb >= 0)
		close(mb);
	if (mb_tx >= 0)
		close(mb_tx);
	gps = plc = mb = mb_tx = -1;
	if (rtu_open)
		sim_port_close(&rtu);
	rtu_open = false;
	return 0;
}

/* A growing string. */
struct buf {
	char *s;
	size_t len, cap;
};

static void put(struct buf *b, const char *data, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = realloc(b->s, b->cap);
		assert_non_null(b->s);
	}
	memcpy(b->s + b->len, data, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void putf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct buf *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(tmp));
	put(b, tmp, (size_t)n);
}

static void send_all(int fd, const char *s)
{
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

/* Waits (bounded) until the log has at least n lines containing `what`. */
static void wait_lines(const char *path, const char *what, size_t n)
{
	for (int i = 0; i < WAIT_MS / 10; i++) {
		struct e2e_log log = { 0 };
		size_t k = 0;

		if (e2e_read_log(&log, path) == 0)
			for (size_t j = 0; j < log.n; j++)
				k += strstr(log.line[j].text, what) != NULL;
		e2e_free_log(&log);
		if (k >= n)
			return;
		usleep(10000);
	}
	fail_msg("fewer than %zu lines with '%s' in %s", n, what, path);
}

static void stop_daemon(void)
{
	int status = e2e_stop(&live, SIGTERM, WAIT_MS, NULL);

	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Writes a Modbus RTU frame (its CRC added) onto the bus, and notes it. */
static void rtu_frame(const uint8_t *pdu, size_t n, bool request, bool answered)
{
	uint16_t crc = sim_modbus_crc(pdu, n);
	uint8_t *f = bus.data + bus.end;

	assert_true(bus.n < FRAMES && bus.end + n + 2 <= sizeof(bus.data));
	memcpy(f, pdu, n);
	f[n] = (uint8_t)crc;
	f[n + 1] = (uint8_t)(crc >> 8);
	assert_int_equal(write(rtu.master, f, n + 2), (ssize_t)(n + 2));
	bus.off[bus.n] = bus.end;
	bus.len[bus.n] = n + 2;
	bus.request[bus.n] = request;
	bus.answered[bus.n++] = answered;
	bus.end += n + 2;
	usleep(20000);          /* the next frame after a silence of many characters */
}

/*
 * Two runs of the daemon append to one log, with the default ISO times: the
 * first logs a few packets of two ports, requests and responses on a tap's two
 * wires (port mb, tx_device), and Modbus RTU on a half-duplex bus (port rs485,
 * all RX: the simulator's exchanges, then the test's own frames); in the second the flusher is stalled (PORTLOGD_TEST_STALL) while
 * a burst arrives, so the ring overflows and the log gets DROP lines.
 */
static void make_log(const char *dir, char *path, size_t plen)
{
	static const char *const env[] = { "WATCHDOG_USEC=500000", "PORTLOGD_TEST_STALL=flusher",
					   NULL };
	char conf[300], text[1400], gps_dev[64], plc_dev[64], mb_dev[64], mb_tx_dev[64], msg[4096];
	char rtu_dev[300];
	struct buf burst = { 0 };
	struct sim_cfg cfg = {
		.kind = SIM_MODBUS, .packets = 10, .max_len = 64, .max_frags = 1,
		.inter_gap_min_us = 15000, .inter_gap_max_us = 30000, .gap_us = 1823,
		.seed = tu_seed("e2e_recipes"),
	};

	gps = e2e_open_pty(gps_dev, sizeof(gps_dev));
	plc = e2e_open_pty(plc_dev, sizeof(plc_dev));
	mb = e2e_open_pty(mb_dev, sizeof(mb_dev));
	mb_tx = e2e_open_pty(mb_tx_dev, sizeof(mb_tx_dev));
	assert_true(gps >= 0 && plc >= 0 && mb >= 0 && mb_tx >= 0);
	snprintf(path, plen, "%s/portlogd.log", dir);
	snprintf(rtu_dev, sizeof(rtu_dev), "%s/rs485", dir);
	assert_int_equal(sim_port_open(&rtu, "rs485", rtu_dev), 0);
	rtu_open = true;
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s\nflush_interval_ms = 20\n"
		 "stat_interval_s = 0\nring_records = %d\n"
		 "[serial gps]\ndevice = %s\ndelimiter = \\n\npriority = other\n"
		 "[serial plc]\ndevice = %s\ndelimiter = \\n\npriority = other\n"
		 "[serial mb]\ndevice = %s\ntx_device = %s\ndelimiter = \\n\npriority = other\n"
		 "[serial rs485]\ndevice = %s\nbaud = 19200\npriority = other\n",
		 path, RING, gps_dev, plc_dev, mb_dev, mb_tx_dev, rtu_dev);
	e2e_write_file(conf, text);

	assert_int_equal(e2e_start(&live, dir, conf), 0);
	assert_int_equal(e2e_wait_ready(&live, WAIT_MS), 0);
	send_all(gps, "$GPGGA,1*41\r\n$GPGGA,2*42\r\n");
	send_all(plc, "plc one\n");
	wait_lines(path, " plc RX ", 1);
	send_all(plc, "plc two\n");
	wait_lines(path, " plc RX ", 2);
	send_all(plc, "plc three\n");
	send_all(gps, "$GPGGA,3*43\r\n");
	wait_lines(path, " plc RX ", 3);
	wait_lines(path, " gps RX ", 3);
	for (int i = 1; i <= 3; i++) {          /* a request, its response */
		putf(&burst, "read %d\n", i);
		send_all(mb_tx, burst.s);
		wait_lines(path, " mb TX ", (size_t)i);
		burst.len = 0;
		putf(&burst, "value %d\n", 10 * i);
		send_all(mb, burst.s);
		wait_lines(path, " mb RX ", (size_t)i);
		burst.len = 0;
	}
	send_all(mb_tx, "unanswered\n");
	wait_lines(path, " mb TX ", 4);
	/* the bus: the simulator's requests and responses, then a request its slave
	 * does not answer, a request answered with an exception, and a last one unanswered */
	assert_int_equal(sim_port_wait_open(&rtu, WAIT_MS), 0);
	assert_int_equal(sim_run_all(&rtu, 1, &cfg, 0), 0);
	for (size_t k = 0; k < rtu.npkt; k++) {
		assert_true(bus.n < FRAMES && bus.end + rtu.pkt[k].len <= sizeof(bus.data));
		memcpy(bus.data + bus.end, rtu.data + rtu.pkt[k].off, rtu.pkt[k].len);
		bus.off[bus.n] = bus.end;
		bus.len[bus.n] = rtu.pkt[k].len;
		bus.request[bus.n] = k % 2 == 0;
		bus.answered[bus.n++] = k % 2 == 0;
		bus.end += rtu.pkt[k].len;
	}
	usleep(20000);
	rtu_frame((const uint8_t[]){ 2, 3, 0, 7, 0, 1 }, 6, true, false);
	rtu_frame((const uint8_t[]){ 1, 3, 0, 9, 0, 2 }, 6, true, true);
	rtu_frame((const uint8_t[]){ 1, 0x83, 2 }, 3, false, false);
	rtu_frame((const uint8_t[]){ 3, 16, 0, 1, 0, 1, 2, 0, 42 }, 9, true, false);
	{
		char hex[40];

		for (size_t i = 0; i < 11; i++)
			sprintf(hex + 2 * i, "%02x", bus.data[bus.off[bus.n - 1] + i]);
		wait_lines(path, hex, 1);
	}
	stop_daemon();

	assert_int_equal(e2e_start_env(&live, dir, conf, env), 0);
	for (;;) {      /* READY=1, pings, then the stall */
		int n = e2e_notify_recv(&live, msg, sizeof(msg), WAIT_MS);

		if (n <= 0)
			fail_msg("no 'thread flusher stalled' status (stderr: %s)", live.err_path);
		if (strstr(msg, "watchdog withheld: thread flusher stalled") != NULL)
			break;
	}
	for (int i = 0; i < BURST; i++)
		putf(&burst, "burst %03d\n", i);
	send_all(gps, burst.s);
	free(burst.s);
	/* no wait: at stop the reader takes all the kernel holds, into its full ring */
	stop_daemon();
}

/* Roff source of a recipe line to what a reader of the page types. */
static void unroff(const char *in, struct buf *out)
{
	static const struct { const char *roff, *text; } esc[] = {
		{ "\\(aq", "'" }, { "\\(dq", "\"" }, { "\\-", "-" }, { "\\e", "\\" },
		{ "\\&", "" },
	};

	while (*in != '\0' && *in != '\n') {
		size_t i;

		for (i = 0; i < sizeof(esc) / sizeof(esc[0]); i++)
			if (strncmp(in, esc[i].roff, strlen(esc[i].roff)) == 0)
				break;
		if (i < sizeof(esc) / sizeof(esc[0])) {
			put(out, esc[i].text, strlen(esc[i].text));
			in += strlen(esc[i].roff);
		} else {
			if (*in == '\\')
				fail_msg("unknown roff escape in a recipe: %s", in);
			put(out, in++, 1);
		}
	}
}

/* The recipe named `name` from the man page: the .EX block after its marker. */
static char *recipe(const char *page, const char *name)
{
	char marker[64];
	const char *p, *end;
	struct buf out = { 0 };

	snprintf(marker, sizeof(marker), ".\\\" recipe %s\n.EX\n", name);
	p = strstr(page, marker);
	if (p == NULL)
		fail_msg("no recipe '%s' in %s", name, PORTLOGD_MAN_LOG);
	p += strlen(marker);
	end = strstr(p, ".EE\n.\\\" end\n");
	assert_non_null(end);
	for (; p < end; p = strchr(p, '\n') + 1) {
		unroff(p, &out);
		put(&out, "\n", 1);
	}
	return out.s;
}

static char *slurp_cmd(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	struct buf b = { 0 };
	char tmp[4096];
	size_t n;

	assert_non_null(f);
	put(&b, "", 0);
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		put(&b, tmp, n);
	if (pclose(f) != 0)
		fail_msg("'%s' failed", cmd);
	return b.s;
}

static char *slurp_file(const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "cat '%s'", path);
	return slurp_cmd(cmd);
}

/* Runs a recipe in dir (where portlogd.log is) and compares its output. */
static void check(const char *page, const char *rendered, const char *dir, const char *name,
		  const char *expected)
{
	char *r = recipe(page, name), *out, cmd[600], path[512];

	/* the page shows the recipe as it is run: each line appears in the rendered text */
	for (char *line = r, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		char want[1024];

		snprintf(want, sizeof(want), "\n%.*s\n", (int)(nl - line), line);
		if (strstr(rendered, want) == NULL)
			fail_msg("recipe %s: the rendered page does not show the line\n%.*s",
				 name, (int)(nl - line), line);
	}
	/* run by sh (dash on Debian), in the log's directory */
	snprintf(path, sizeof(path), "%s/recipe.sh", dir);
	e2e_write_file(path, r);
	snprintf(cmd, sizeof(cmd), "cd '%s' && LC_ALL=C sh recipe.sh 2>&1", dir);
	out = slurp_cmd(cmd);
	if (strcmp(out, expected) != 0)
		fail_msg("recipe %s:\n%s-- printed --\n%s-- expected --\n%s", name, r, out, expected);
	printf("# recipe %s: %zu bytes of output as expected\n", name, strlen(out));
	free(out);
	free(r);
}

static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

/* The value of "key=N" in a line, or -1. */
static long long field(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	return p != NULL ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* The n-th space-separated field (1-based) of a line, copied into out. */
static void nth(const char *line, int n, char *out, size_t len)
{
	const char *p = line;

	for (int i = 1; i < n && p != NULL; i++) {
		p = strchr(p, ' ');
		p = p != NULL ? p + 1 : NULL;
	}
	assert_non_null(p);
	snprintf(out, len, "%.*s", (int)strcspn(p, " "), p);
}

/*
 * The rtu-pairs recipe's output, worked out from the log's rs485 RX lines: each
 * request with the next line of its slave address and function code (an exception's
 * 0x80 aside), or "no response". Checked against the frames put on the bus: every
 * answered request paired with its response's line, every unanswered one flagged,
 * unless the log marks the boundary it doubts: an EV late-delivery dated at the line
 * that holds the frame's first or last byte (a mark is dated at its packet's start).
 */
#define LINES 256

/* Is a frame (bus bytes off..off+len) in a line a mark of the port is dated at? */
static bool frame_marked(size_t off, size_t len, const size_t *start, const int64_t *t,
			 size_t nl, const int64_t *mark, size_t nmark)
{
	for (size_t i = 0; i < nl; i++) {
		size_t end = i + 1 < nl ? start[i + 1] : SIZE_MAX;

		if (!((off >= start[i] && off < end) || (off + len - 1 >= start[i] && off + len - 1 < end)))
			continue;
		for (size_t m = 0; m < nmark; m++)
			if (mark[m] == t[i])
				return true;
	}
	return false;
}

static void rtu_expect(const struct e2e_log *log, struct buf *out)
{
	char req[64] = "", f[64], want[200];
	int64_t req_t = 0;
	int key = -1;
	size_t pos = 0, j = 0, pairs = 0, lone = 0, late = 0;
	const char *line_of[FRAMES] = { 0 };
	size_t start[LINES], nl = 0;
	int64_t line_t[LINES], mark[LINES];

	put(out, "", 0);
	for (size_t i = 0; i < log->n; i++) {
		const struct e2e_line *l = &log->line[i];
		int k;

		if (strcmp(l->src, "rs485") == 0 && strstr(l->text, " EV late-delivery ") != NULL) {
			assert_true(late < LINES);
			mark[late++] = l->t;
		}
		if (strcmp(l->src, "rs485") != 0 || strcmp(l->kind, "RX") != 0)
			continue;
		assert_true(nl < LINES);
		start[nl] = pos;
		line_t[nl++] = l->t;
		assert_true(l->len >= 2 && pos + l->len <= bus.end);
		assert_memory_equal(l->data, bus.data + pos, l->len);
		while (j < bus.n && bus.off[j] < pos)
			j++;
		if (j < bus.n && bus.off[j] == pos && bus.len[j] == l->len)
			line_of[j] = l->text;
		pos += l->len;
		k = l->data[0] << 8 | (l->data[1] & 0x7f);
		nth(l->text, 1, f, sizeof(f));
		if (req[0] != '\0' && k == key) {
			putf(out, "%s %s %.3f\n", req, f, (double)(l->t - req_t) / 1e6);
			req[0] = '\0';
			continue;
		}
		if (req[0] != '\0')
			putf(out, "%s no response\n", req);
		snprintf(req, sizeof(req), "%s", f);
		req_t = l->t;
		key = k;
	}
	if (req[0] != '\0')
		putf(out, "%s no response\n", req);
	assert_int_equal(pos, bus.end);         /* every byte on the bus, in order */

	for (j = 0; j < bus.n; j++) {
		char q[64], r[64];

		if (!bus.request[j])
			continue;
		if (line_of[j] == NULL || (bus.answered[j] && line_of[j + 1] == NULL)) {
			size_t b = line_of[j] ? j + 1 : j;

			if (!frame_marked(bus.off[b], bus.len[b], start, line_t, nl, mark, late))
				fail_msg("frame %zu of the bus is not one RX line, and no EV "
					 "late-delivery at its line says why", b);
			continue;
		}
		nth(line_of[j], 1, q, sizeof(q));
		if (bus.answered[j]) {
			nth(line_of[j + 1], 1, r, sizeof(r));
			snprintf(want, sizeof(want), "%s %s ", q, r);
			pairs++;
		} else {
			snprintf(want, sizeof(want), "%s no response\n", q);
			lone++;
		}
		if (strstr(out->s, want) == NULL)
			fail_msg("the bus's frame %zu (%s): no '%s' in\n%s", j,
				 bus.answered[j] ? "answered" : "unanswered", want, out->s);
	}
	printf("# rs485: %zu frames, %zu requests paired, %zu flagged unanswered, %zu EV "
	       "late-delivery\n", bus.n, pairs, lone, late);
	assert_true(late > 0 || (pairs == 6 && lone == 2));
}

static void recipes(void **state)
{
	char dir[256], path[300], cmd[600], f[256];
	struct e2e_log log = { 0 };
	struct buf port_packets = { 0 }, per_source = { 0 }, lost = { 0 }, intervals = { 0 },
		   decode = { 0 }, events = { 0 }, stretches = { 0 }, pairs = { 0 },
		   rtu_pairs = { 0 };
	char bad_from[256] = "";
	int64_t req_t = 0;
	char req[64] = "";
	size_t gps_rx = 0, plc_rx = 0, rs485_rx = 0, burst_rx = 0, gps_open = 0, gps_close = 0, lost_ev;
	size_t starts = 0, run2 = 0, burst_rx2 = 0, burst_bytes = 0, lost_bytes;
	long long drop_records = 0, drop_bytes = 0, stat_drops = -1, stat_drop_bytes = -1;
	char *page, *rendered;
	bool have_prev = false;
	int64_t prev = 0;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	make_log(dir, path, sizeof(path));
	assert_int_equal(e2e_read_log(&log, path), 0);

	/* what each recipe must print, worked out here from the parsed log */
	for (size_t i = 0; i < log.n; i++) {
		const struct e2e_line *l = &log.line[i];

		if (strcmp(l->kind, "EV") == 0 && strstr(l->text, " portlogd EV start ") != NULL
		    && ++starts == 2)
			run2 = i;	/* the burst's run */
		if (strcmp(l->kind, "RX") == 0 && strcmp(l->src, "gps") == 0) {
			putf(&port_packets, "%s\n", l->text);
			if (gps_rx++ == 0)
				put(&decode, (const char *)l->data, l->len);
			burst_rx += strstr(l->text, " \"burst\\x20") != NULL;
			if (run2 > 0) {
				burst_rx2++;
				burst_bytes += l->len;
			}
		}
		rs485_rx += strcmp(l->kind, "RX") == 0 && strcmp(l->src, "rs485") == 0;
		if (strcmp(l->kind, "RX") == 0 && strcmp(l->src, "plc") == 0) {
			plc_rx++;
			if (have_prev) {        /* the test waited for each line: never 0 */
				assert_true(l->t > prev);
				putf(&intervals, "%.3f\n", (double)(l->t - prev) / 1e6);
			}
			prev = l->t;
			have_prev = true;
		}
		/* each request with the response after it, and the time between, in us */
		if (strcmp(l->src, "mb") == 0 && strcmp(l->kind, "TX") == 0) {
			nth(l->text, 5, req, sizeof(req));
			req_t = l->t;
		}
		if (strcmp(l->src, "mb") == 0 && strcmp(l->kind, "RX") == 0 && req[0] != '\0') {
			nth(l->text, 5, f, sizeof(f));
			putf(&pairs, "%s %s %lld\n", req, f, (long long)((l->t - req_t) / 1000));
			req[0] = '\0';
		}
		if (strcmp(l->kind, "DROP") == 0) {
			assert_string_equal(l->src, "gps");     /* only gps had a burst */
			nth(l->text, 4, f, sizeof(f));
			drop_records += atoll(f);
			nth(l->text, 5, f, sizeof(f));
			drop_bytes += atoll(f);
		}
		if (strcmp(l->kind, "EV") == 0 && strcmp(l->src, "portlogd") != 0) {
			nth(l->text, 4, f, sizeof(f));
			putf(&events, "%s %s\n", l->src, f);
			gps_open += strcmp(l->src, "gps") == 0 && strcmp(f, "open") == 0;
			gps_close += strcmp(l->src, "gps") == 0 && strcmp(f, "close") == 0;
		}
		if (strcmp(l->kind, "EV") == 0 && strcmp(l->src, "portlogd") == 0
		    && strstr(l->text, " portlogd EV clock ") != NULL) {
			/* not synchronised, unknown, or a maximum error over 10 ms */
			const char *sy = strstr(l->text, " synced=");
			bool bad = sy == NULL || strncmp(sy, " synced=yes ", 12) != 0
				   || field(l->text, " maxerror_us=") > 10000;

			nth(l->text, 1, f, sizeof(f));
			if (bad && bad_from[0] == '\0')
				snprintf(bad_from, sizeof(bad_from), "%s", f);
			if (!bad && bad_from[0] != '\0') {
				putf(&stretches, "%s to %s\n", bad_from, f);
				bad_from[0] = '\0';
			}
		}
		if (strncmp(l->text + strcspn(l->text, " "), " portlogd STAT gps ", 19) == 0) {
			stat_drops = field(l->text, " drops=");
			stat_drop_bytes = field(l->text, " drop_bytes=");
		}
	}
	putf(&per_source, "gps %zu\nmb 3\nplc %zu\nrs485 %zu\n", gps_rx, plc_rx, rs485_rx);
	rtu_expect(&log, &rtu_pairs);
	if (bad_from[0] != '\0')
		putf(&stretches, "%s to the end\n", bad_from);
	put(&stretches, "", 0);
	putf(&lost, "gps %lld\n", drop_bytes);

	/* the log is what the recipes need: drops, every burst byte accounted for. The
	 * burst's lines are counted by their bytes: a stall can cut a packet in two */
	assert_int_equal(plc_rx, 3);
	assert_int_equal(gps_rx - burst_rx2, 3);	/* the first run's three */
	assert_true(drop_records > 0 && burst_rx > 0);
	/* the full ring may also have cost the second run its "EV close reason=stop":
	 * then that event is one of the dropped records */
	assert_true(gps_open == 2 && (gps_close == 1 || gps_close == 2));
	lost_ev = gps_open - gps_close;
	assert_true(burst_bytes <= BURST * strlen("burst 000\n"));
	lost_bytes = BURST * strlen("burst 000\n") - burst_bytes;
	/* a packet in a record at most (the delimiter ends it): the lost ones' records */
	e2e_expect_drops(&log, "gps", run2, lost_bytes,
			 (lost_bytes + strlen("burst 000\n") - 1) / strlen("burst 000\n"), lost_ev,
			 lost_ev * strlen("reason=stop"));
	/* the second run's final STAT counts the same drops */
	assert_int_equal(stat_drops, drop_records);
	assert_int_equal(stat_drop_bytes, drop_bytes);
	assert_memory_equal(decode.s, "$GPGGA,1*41\r\n", 13);
	assert_int_equal(strncmp(pairs.s, "7265616420310a 76616c75652031300a ", 34), 0);
	assert_int_equal(count_lines(pairs.s), 3);      /* the unanswered request: no line */

	page = slurp_file(PORTLOGD_MAN_LOG);
	snprintf(cmd, sizeof(cmd), "groff -man -Tutf8 -P-cbou -rLL=300n '%s' | sed 's/^ *//'",
		 PORTLOGD_MAN_LOG);
	rendered = slurp_cmd(cmd);
	check(page, rendered, dir, "port-packets", port_packets.s);
	check(page, rendered, dir, "per-source", per_source.s);
	check(page, rendered, dir, "lost-bytes", lost.s);
	check(page, rendered, dir, "intervals", intervals.s);
	check(page, rendered, dir, "decode", decode.s);
	check(page, rendered, dir, "port-events", events.s);
	check(page, rendered, dir, "clock-stretches", stretches.s);
	check(page, rendered, dir, "pairs", pairs.s);
	check(page, rendered, dir, "rtu-pairs", rtu_pairs.s);
	free(page);
	free(rendered);
	free(port_packets.s);
	free(per_source.s);
	free(lost.s);
	free(intervals.s);
	free(decode.s);
	free(events.s);
	free(stretches.s);
	free(pairs.s);
	free(rtu_pairs.s);
	e2e_free_log(&log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(recipes, teardown),
	};

	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
