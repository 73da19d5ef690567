/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_export.c - portlogd --export, read back by the real tools: tshark, sigrok-cli, vcd2fst.
 *
 * Logs of the real daemon (Modbus RTU frames from the simulator on a pty, both
 * directions of a link through tx_device, and pins of the sim parallel port), exported, then read by Debian's Wireshark
 * (tshark), sigrok-cli and GTKWave's vcd2fst/fst2vcd; what they report is
 * compared with what was sent and what the log says. Exits 77 (skipped) only
 * when one of those tools is missing (tests/deps.sh installs them).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "logline.h"
#include "sim/sim.h"
#include "testutil.h"

#define WAIT_MS 10000
#define PACKETS 80
#define RING 64
#define DOWNSAMPLE 10000        /* sigrok: one sample every 10 us */

static struct e2e_daemon live;

static int teardown(void **state)
{
	(void)state;
	e2e_kill(&live);
	return 0;
}

static int export(const char *format, const char *out, const char *log, char *err, size_t errlen)
{
	const char *argv[] = { "portlogd", "--export", format, "-o", out, log, NULL };

	return e2e_run(argv, err, errlen);
}

/* "S.NNNNNNNNN" (tshark's frame.time_epoch) to ns. */
static int64_t epoch_ns(const char *s)
{
	int64_t t;

	if (logline_time(s, strlen(s), &t) < 0)
		fail_msg("not an epoch time with nanoseconds: '%s'", s);
	return t;
}

static void wait_stalled(void)
{
	char msg[4096];

	for (;;) {      /* READY=1, pings, then the stall */
		int n = e2e_notify_recv(&live, msg, sizeof(msg), WAIT_MS);

		if (n <= 0)
			fail_msg("no 'thread flusher stalled' status (stderr: %s)", live.err_path);
		if (strstr(msg, "watchdog withheld: thread flusher stalled") != NULL)
			return;
	}
}

static void stop_daemon(void)
{
	int status = e2e_stop(&live, SIGTERM, WAIT_MS, NULL);

	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The register values tshark should show for a sent frame ("" for none). */
static void regvals(const uint8_t *f, size_t len, bool response, char *out, size_t cap)
{
	size_t n = 0, from = 0, count = 0;

	out[0] = '\0';
	if (f[1] == 3 && response) {
		from = 3;
		count = f[2] / 2;
	} else if (f[1] == 16 && !response) {
		from = 7;
		count = f[6] / 2;
	}
	for (size_t i = 0; i < count && from + 2 * i + 1 < len; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%u", i ? "," : "",
				      (unsigned)(f[from + 2 * i] << 8 | f[from + 2 * i + 1]));
}

/*
 * Two runs of the daemon append to one log: Modbus RTU requests and responses
 * from the simulator, then (flusher stalled, a small ring) a burst that is
 * dropped in part. Exported to pcapng, tshark must show every frame of the log
 * in order, at its TIME to the nanosecond, on the port's interface; every RX
 * line that is exactly one sent frame decoded as Modbus RTU with the function
 * code and register values sent and a good CRC; every DROP as CAPTURE_DATA_LOST.
 */
static void modbus_in_wireshark(void **state)
{
	static const char *const env[] = { "WATCHDOG_USEC=500000", "PORTLOGD_TEST_STALL=flusher",
					   NULL };
	char dir[256], link[300], conf[300], logp[300], pcap[300], text[1024], err[4096], dev2[64];
	struct sim_cfg cfg = {
		.kind = SIM_MODBUS, .packets = PACKETS, .max_len = 64, .max_frags = 2,
		.intra_gap_max_us = 200, .inter_gap_min_us = 15000, .inter_gap_max_us = 30000,
		.gap_us = 1823, .seed = tu_seed("e2e_export"),
	};
	struct sim_port port;
	struct e2e_log log = { 0 };
	char *out, *line, *save = NULL;
	size_t *starts, *idx, nrx, total, k = 0, pos = 0, exact = 0, drops = 0, frames = 0;
	uint8_t *all;
	bool run2 = false;
	int status, fd2;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(link, sizeof(link), "%s/plc", dir);
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(logp, sizeof(logp), "%s/portlogd.log", dir);
	snprintf(pcap, sizeof(pcap), "%s/out.pcapng", dir);
	assert_int_equal(sim_port_open(&port, "plc", link), 0);
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 0\n"
		 "[serial plc]\ndevice = %s\nbaud = 19200\npriority = other\n", logp, link);
	e2e_write_file(conf, text);
	assert_int_equal(e2e_start(&live, dir, conf), 0);
	assert_int_equal(e2e_wait_ready(&live, WAIT_MS), 0);
	assert_int_equal(sim_port_wait_open(&port, WAIT_MS), 0);
	assert_int_equal(sim_run_all(&port, 1, &cfg, 0), 0);
	for (int i = 0; i < WAIT_MS / 10; i++) {      /* every byte in the log */
		e2e_free_log(&log);
		assert_int_equal(e2e_read_log(&log, logp), 0);
		all = e2e_concat(&log, "plc", &total, &starts, &idx, &nrx);
		free(all);
		free(starts);
		free(idx);
		if (total >= port.data_len)
			break;
		usleep(10000);
	}
	stop_daemon();

	/* the second run: a burst into a small ring the stalled flusher does not drain */
	fd2 = e2e_open_pty(dev2, sizeof(dev2));
	assert_true(fd2 >= 0);
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 0\n"
		 "ring_records = %d\n[serial plc]\ndevice = %s\nbaud = 19200\nmax_packet = 256\n"
		 "priority = other\n", logp, RING, dev2);
	e2e_write_file(conf, text);
	assert_int_equal(e2e_start_env(&live, dir, conf, env), 0);
	wait_stalled();
	{
		static uint8_t burst[65536];

		memset(burst, 0x55, sizeof(burst));
		assert_int_equal(write(fd2, burst, sizeof(burst)), (ssize_t)sizeof(burst));
	}
	stop_daemon();
	close(fd2);

	e2e_free_log(&log);
	assert_int_equal(e2e_read_log(&log, logp), 0);
	status = export("pcapng", pcap, logp, err, sizeof(err));
	if (status != 0)
		fail_msg("--export pcapng exited %d: %s", status, err);
	out = e2e_sh(&status, "tshark -r %s -d rtacser.data,mbrtu -o mbrtu.crc_verification:TRUE "
		  "-T fields -E separator=/t -e frame.interface_name -e frame.time_epoch "
		  "-e rtacser.eventtype -e modbus.func_code -e modbus.regval_uint16 "
		  "-e mbrtu.crc16.status -e frame.comment 2>%s/tshark.err", pcap, dir);
	assert_int_equal(status, 0);

	/* the log's lines that become frames, in order, against tshark's frames */
	line = strtok_r(out, "\n", &save);
	for (size_t i = 0; i < log.n; i++) {
		const struct e2e_line *l = &log.line[i];
		char *f[7] = { 0 }, *p;
		const char *want_type;

		if (strcmp(l->kind, "EV") == 0 && strstr(l->text, " portlogd EV start ") != NULL
		    && i > 0)
			run2 = true;
		if (strcmp(l->kind, "RX") == 0)
			want_type = "0x02";
		else if (strcmp(l->kind, "DROP") == 0)
			want_type = "0x05";
		else if (strcmp(l->kind, "EV") == 0)
			want_type = "0x00";
		else
			continue;       /* STAT: not serial traffic */
		if (line == NULL)
			fail_msg("tshark shows %zu frames; none for log line %zu: %s", frames, i + 1,
				 l->text);
		p = line;
		for (int c = 0; c < 7; c++) {
			f[c] = p;
			p = p != NULL ? strchr(p, '\t') : NULL;
			if (p != NULL)
				*p++ = '\0';
		}
		frames++;
		if (f[2] == NULL || strcmp(f[0], l->src) != 0 || epoch_ns(f[1]) != l->t
		    || strcmp(f[2], want_type) != 0)
			fail_msg("frame %zu: '%s' %s %s, but log line %zu is: %s", frames, f[0],
				 f[1] ? f[1] : "", f[2] ? f[2] : "", i + 1, l->text);
		if (strcmp(l->kind, "DROP") == 0) {
			char want[64];

			snprintf(want, sizeof(want), "DROP %s", strstr(l->text, " DROP ") + 6);
			assert_non_null(f[6]);
			if (strncmp(f[6], want, strlen(want)) != 0)
				fail_msg("frame %zu: comment '%s', log: %s", frames, f[6], l->text);
			drops++;
		}
		if (strcmp(l->kind, "RX") == 0 && !run2) {
			/* which sent frames does this line hold? */
			while (k < port.npkt && port.pkt[k].off < pos)
				k++;
			if (k < port.npkt && port.pkt[k].off == pos && port.pkt[k].len == l->len
			    && memcmp(port.data + pos, l->data, l->len) == 0) {
				const uint8_t *d = l->data;
				char want[256], fc[8];

				regvals(d, l->len, k % 2 == 1, want, sizeof(want));
				snprintf(fc, sizeof(fc), "%u", d[1]);
				if (strcmp(f[3] ? f[3] : "", fc) != 0 || strcmp(f[4] ? f[4] : "", want) != 0
				    || strcmp(f[5] ? f[5] : "", "1") != 0)
					fail_msg("frame %zu (sent frame %zu, %s): tshark shows function "
						 "'%s' registers '%s' crc '%s'; sent %s and '%s'", frames, k,
						 k % 2 ? "response" : "request", f[3] ? f[3] : "",
						 f[4] ? f[4] : "", f[5] ? f[5] : "", fc, want);
				exact++;
			}
			pos += l->len;
		}
		line = strtok_r(NULL, "\n", &save);
	}
	if (line != NULL)
		fail_msg("tshark shows more frames than the log has lines: %s", line);
	/* every byte sent is in the log, in order; most frames are one RX line each
	 * (a late pty delivery on a busy machine may merge two: the log says so) */
	all = e2e_concat(&log, "plc", &total, &starts, &idx, &nrx);
	assert_true(total >= port.data_len && memcmp(all, port.data, port.data_len) == 0);
	free(all);
	free(starts);
	free(idx);
	printf("# %zu frames; %zu of %zu sent Modbus frames exactly one RX line, decoded right; "
	       "%zu DROP as CAPTURE_DATA_LOST\n", frames, exact, port.npkt, drops);
	assert_true(exact * 2 >= port.npkt);
	assert_true(drops >= 1);
	free(out);
	e2e_free_log(&log);
	sim_port_close(&port);
}

/* Splits a tshark fields line at its tabs into at most n fields (missing ones ""). */
static void split_tabs(char *line, char **f, int n)
{
	for (int c = 0; c < n; c++) {
		f[c] = line != NULL ? line : (char *)"";
		line = line != NULL ? strchr(line, '\t') : NULL;
		if (line != NULL)
			*line++ = '\0';
	}
}

/*
 * Both directions of a link (tx_device: the simulator's Modbus requests on the
 * tap's second port, responses on the device's), exported: tshark shows each TX
 * line as a DATA_TX_START frame sent by this end (frame.p2p_dir 0), each RX
 * line as DATA_RX_START received (1), in the log's order, and pairs each Modbus
 * response with its request (modbus.request_frame: its request's frame). Which
 * is the query, tshark 4.0's mbrtu dissector tells from the function code and
 * length, not from the direction: functions 3 and 16, which the simulator
 * sends, differ in length between query and response.
 */
static void modbus_pairs_in_wireshark(void **state)
{
	char pcap[300], err[4096];
	struct sim_cfg cfg = {
		.kind = SIM_MODBUS, .packets = PACKETS, .max_len = 64, .max_frags = 1,
		.inter_gap_min_us = 4000, .inter_gap_max_us = 20000, .gap_us = 2000,
		.seed = tu_seed("e2e_export pairs"),
	};
	struct e2e_tap t;
	struct sim_port *req = &t.req, *resp = &t.resp;
	struct e2e_log log = { 0 };
	size_t frames = 0, paired = 0, qk = 0, rk = 0, qpos = 0, rpos = 0;
	size_t *qframe = calloc(PACKETS, sizeof(size_t));
	char *out, *line, *save = NULL;
	int status;

	(void)state;
	e2e_tap_start(&live, &t, "plc", "stat_interval_s = 0\n", "baud = 19200\ngap_us = 2000\n");
	snprintf(pcap, sizeof(pcap), "%s/pairs.pcapng", t.dir);
	assert_int_equal(sim_exchange_run(req, resp, &cfg), 0);
	usleep(50000);
	stop_daemon();
	assert_int_equal(e2e_read_log(&log, t.log), 0);
	status = export("pcapng", pcap, t.log, err, sizeof(err));
	if (status != 0)
		fail_msg("--export pcapng exited %d: %s", status, err);
	out = e2e_sh(&status, "tshark -r %s -d rtacser.data,mbrtu -T fields -E separator=/t "
		     "-e frame.number -e rtacser.eventtype -e frame.p2p_dir -e modbus.func_code "
		     "-e modbus.request_frame -e _ws.col.Info 2>%s/tshark.err", pcap, t.dir);
	assert_int_equal(status, 0);
	line = strtok_r(out, "\n", &save);
	for (size_t i = 0; i < log.n; i++) {
		const struct e2e_line *l = &log.line[i];
		bool is_tx = strcmp(l->kind, "TX") == 0, is_rx = strcmp(l->kind, "RX") == 0;
		struct sim_port *p = is_tx ? req : resp;
		size_t *k = is_tx ? &qk : &rk, *pos = is_tx ? &qpos : &rpos;
		char *f[6];

		if (strcmp(l->src, "plc") != 0 && strcmp(l->kind, "EV") != 0)
			continue;       /* STAT */
		if (line == NULL)
			fail_msg("no frame for log line %zu: %s", i + 1, l->text);
		split_tabs(line, f, 6);
		line = strtok_r(NULL, "\n", &save);
		frames++;
		if (!is_tx && !is_rx)
			continue;
		if (strcmp(f[1], is_tx ? "0x01" : "0x02") != 0 || strcmp(f[2], is_tx ? "0" : "1") != 0)
			fail_msg("frame %s: event type '%s', p2p_dir '%s' for log line %zu: %s", f[0],
				 f[1], f[2], i + 1, l->text);
		/* the sent frame this line is, if it is exactly one */
		while (*k < p->npkt && p->pkt[*k].off < *pos)
			(*k)++;
		if (*k < p->npkt && p->pkt[*k].off == *pos && p->pkt[*k].len == l->len) {
			if (is_tx) {
				qframe[*k] = (size_t)atol(f[0]);
				if (strstr(f[5], "Query") == NULL)
					fail_msg("frame %s, request %zu: '%s'", f[0], *k, f[5]);
			} else if (qframe[*k] != 0) {
				if ((size_t)atol(f[4]) != qframe[*k] || strstr(f[5], "Response") == NULL)
					fail_msg("frame %s, response %zu: request frame '%s', its request "
						 "is frame %zu: '%s'", f[0], *k, f[4], qframe[*k], f[5]);
				paired++;
			}
		}
		*pos += l->len;
	}
	if (line != NULL)
		fail_msg("tshark shows more frames than the log has lines: %s", line);
	printf("# %zu frames; %zu of %zu responses paired with their request by tshark\n", frames,
	       paired, resp->npkt);
	assert_true(paired * 10 >= resp->npkt * 9);    /* the rest: a proven late delivery */
	free(qframe);
	free(out);
	e2e_free_log(&log);
	e2e_tap_close(&t);
}

/* The value of wire `name` in sigrok's CSV row at sample `row`, or -1. */
struct csv {
	char *names[64];
	unsigned nnames;
	char **rows;
	size_t nrows;
};

static void parse_csv(char *text, struct csv *c)
{
	size_t cap = 1024;
	char *save = NULL;

	c->rows = malloc(cap * sizeof(char *));
	c->nrows = 0;
	c->nnames = 0;
	for (char *l = strtok_r(text, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
		if (strncmp(l, "; Channels", 10) == 0) {
			char *s2 = NULL, *p = strchr(l, ':');

			assert_non_null(p);
			for (char *n = strtok_r(p + 1, ", ", &s2); n != NULL && c->nnames < 64;
			     n = strtok_r(NULL, ", ", &s2))
				c->names[c->nnames++] = n;
			continue;
		}
		if (l[0] != '0' && l[0] != '1')
			continue;       /* comments, META, the header */
		if (c->nrows == cap) {
			cap *= 2;
			c->rows = realloc(c->rows, cap * sizeof(char *));
		}
		c->rows[c->nrows++] = l;
	}
}

static int csv_value(const struct csv *c, const char *name, size_t row)
{
	for (unsigned i = 0; i < c->nnames; i++)
		if (strcmp(c->names[i], name) == 0)
			return row < c->nrows ? c->rows[row][2 * i] - '0' : -1;
	return -1;
}

/* Counts the value changes (lines 0x, 1x, xx) and the $var lines of a VCD. */
static void vcd_counts(const char *text, size_t *changes, size_t *vars)
{
	*changes = *vars = 0;
	for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p) {
		*changes += (*p == '0' || *p == '1' || *p == 'x') && p[1] != '\n';
		*vars += strncmp(p, "$var ", 5) == 0;
	}
}

/*
 * The sim parallel port (status+data, mask 0xfff8: status bits 3-7, data 0-7) through the real daemon,
 * exported to VCD: sigrok-cli reads it and the pins it reports half-way
 * between two IN lines are the bits of the first; vcd2fst converts it silently
 * and fst2vcd reads back the same wires and as many changes.
 */
static void pins_in_sigrok_and_gtkwave(void **state)
{
	static const char *const pins[] = {
		"nERR", "SEL", "PE", "nACK", "BUSY", "D0", "D1", "D2", "D3", "D4", "D5", "D6", "D7",
	};
	static const unsigned bit[] = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
	char dir[256], conf[300], logp[300], sim[300], vcd[300], fst[300], text[1024], err[4096];
	uint64_t rng = tu_seed("e2e_export pins");
	struct e2e_log log = { 0 };
	struct csv csv;
	int64_t t0 = -1, tin[64];
	unsigned vin[64], nin = 0;
	char *out, *back, *body, *p;
	size_t c1, v1, c2, v2;
	int status, fd;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(logp, sizeof(logp), "%s/portlogd.log", dir);
	snprintf(sim, sizeof(sim), "%s/lpt0.sim", dir);
	snprintf(vcd, sizeof(vcd), "%s/out.vcd", dir);
	snprintf(fst, sizeof(fst), "%s/out.fst", dir);
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s\ntimestamp = epoch\nflush_interval_ms = 20\n"
		 "stat_interval_s = 0\n[timer]\nperiod_us = 1000\npriority = other\n"
		 "[parallel lpt0]\ndriver = sim\ndevice = %s\nread = status+data\nmask = 0xfff8\n"
		 "priority = other\n", logp, sim);
	e2e_write_file(conf, text);
	assert_int_equal(e2e_start(&live, dir, conf), 0);
	assert_int_equal(e2e_wait_ready(&live, WAIT_MS), 0);
	fd = open(sim, O_WRONLY);
	assert_true(fd >= 0);
	for (int i = 0; i < 40; i++) {
		uint8_t v[2] = { (uint8_t)tu_rand(&rng), (uint8_t)tu_rand(&rng) };
		struct timespec ts = { 0, (long)(5 + tu_rand(&rng) % 10) * 1000000 };

		assert_int_equal(pwrite(fd, v, 2, 0), 2);
		nanosleep(&ts, NULL);
	}
	close(fd);
	stop_daemon();

	assert_int_equal(e2e_read_log(&log, logp), 0);
	for (size_t i = 0; i < log.n; i++) {
		struct logline_parser *lp = malloc(sizeof(*lp));
		struct logline l;

		assert_non_null(lp);
		logline_init(lp);
		if (strcmp(log.line[i].kind, "IN") == 0 && nin < 64) {
			assert_int_equal(logline_parse(lp, log.line[i].text, strlen(log.line[i].text), &l), 0);
			tin[nin] = l.t;
			vin[nin++] = l.value;
		}
		if (strstr(log.line[i].text, " lpt0 EV open ") != NULL)
			assert_non_null(strstr(log.line[i].text, " driver=sim device=")
					&& strstr(log.line[i].text, " read=status+data mask=0xfff8"));
		free(lp);
	}
	assert_true(nin >= 20);
	status = export("vcd", vcd, logp, err, sizeof(err));
	if (status != 0)
		fail_msg("--export vcd exited %d: %s", status, err);

	/* time 0 as the file says */
	body = e2e_sh(&status, "cat %s", vcd);
	p = strstr(body, "$comment time 0 is ");
	assert_non_null(p);
	p = strstr(p, ", ");
	assert_non_null(p);
	t0 = strtoll(p + 2, NULL, 10);
	assert_true(t0 > 0 && t0 <= tin[0]);

	/* sigrok-cli: every pin at a time between two IN lines is the first's bit */
	out = e2e_sh(&status, "sigrok-cli -I vcd:downsample=%d -i %s -O csv 2>%s/sigrok.err",
		  DOWNSAMPLE, vcd, dir);
	assert_int_equal(status, 0);
	parse_csv(out, &csv);
	assert_int_equal(csv.nnames, 13);
	for (unsigned j = 0; j < nin; j++) {
		int64_t t = j + 1 < nin ? tin[j] + (tin[j + 1] - tin[j]) / 2 : tin[j] + 500000;
		size_t row = (size_t)((t - t0) / DOWNSAMPLE);

		for (size_t q = 0; q < sizeof(pins) / sizeof(pins[0]); q++) {
			char name[32];
			int got;

			snprintf(name, sizeof(name), "lpt0.%s", pins[q]);
			got = csv_value(&csv, name, row);
			if (got != (int)(vin[j] >> bit[q] & 1))
				fail_msg("sigrok: %s = %d at sample %zu (%" PRId64 " ns after time 0), "
					 "but IN line %u says 0x%04x", name, got, row, t - t0, j, vin[j]);
		}
	}
	printf("# sigrok-cli: %u IN values, %zu samples, 13 pins each as logged\n", nin, csv.nrows);

	/* GTKWave's vcd2fst: silent, and fst2vcd gives the same wires and changes back */
	free(e2e_sh(&status, "vcd2fst %s %s >%s/vcd2fst.out 2>&1", vcd, fst, dir));
	assert_int_equal(status, 0);
	back = e2e_sh(&status, "cat %s/vcd2fst.out", dir);
	if (back[0] != '\0')
		fail_msg("vcd2fst said: %s", back);
	free(back);
	back = e2e_sh(&status, "fst2vcd %s", fst);
	assert_int_equal(status, 0);
	vcd_counts(body, &c1, &v1);
	vcd_counts(back, &c2, &v2);
	if (c1 != c2 || v1 != v2 || v1 != 13)
		fail_msg("fst2vcd reads %zu wires and %zu changes; the VCD has %zu and %zu", v2, c2,
			 v1, c1);
	for (size_t q = 0; q < sizeof(pins) / sizeof(pins[0]); q++) {
		char name[32];

		snprintf(name, sizeof(name), " lpt0.%s $end", pins[q]);
		assert_non_null(strstr(back, name));
	}
	free(back);
	free(body);
	free(csv.rows);
	free(out);
	e2e_free_log(&log);
}

/* Lines written by hand: what the command does with bad input, .gz, filters. */
static void bad_input_gz_and_filters(void **state)
{
	static const char good[] =
		"1795310285.000000000 portlogd EV start version=0.1.0 pid=1 config=/x serial=1 parallel=1\n"
		"1795310285.000000000 lpt0 EV open driver=sim device=/x read=status mask=0xf8\n"
		"1795310285.100000000 lpt0 IN 0x80 0x80 1\n"
		"1795310285.200000000 plc EV open device=/dev/pts/0 driver=termios note=pty baud=9600 format=8N1 gap_us=4010\n"
		"1795310286.000000000 lpt0 IN 0x88 0x08 900\n"
		"1795310286.500000000 plc RX 3 010203 \"\\x01\\x02\\x03\"\n"
		"1795310287.000000000 lpt0 IN 0x08 0x80 1900\n";
	char dir[256], path[300], bad[300], gz[300], cut[300], a[300], b[300], err[4096];
	char *va, *vb;
	int status;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/good.log", dir);
	snprintf(bad, sizeof(bad), "%s/bad.log", dir);
	snprintf(gz, sizeof(gz), "%s/good.log.1.gz", dir);
	snprintf(cut, sizeof(cut), "%s/cut.gz", dir);
	snprintf(a, sizeof(a), "%s/a.vcd", dir);
	snprintf(b, sizeof(b), "%s/b.vcd", dir);
	e2e_write_file(path, good);
	{
		char text[2048];

		/* a line of junk and a line cut short in the middle */
		snprintf(text, sizeof(text), "%.*sjunk here\n1795310286.2 plc RX 1 00\n%s",
			 (int)(strstr(good, "1795310286.000") - good), good,
			 strstr(good, "1795310286.000"));
		e2e_write_file(bad, text);
	}
	assert_int_equal(export("vcd", a, path, err, sizeof(err)), 0);
	assert_string_equal(err, "");

	/* bad lines: named with file:line, skipped, counted; exit 1; the rest exported alike */
	assert_int_equal(export("vcd", b, bad, err, sizeof(err)), 1);
	assert_non_null(strstr(err, "bad.log:5: TIME 'junk'"));
	assert_non_null(strstr(err, "bad.log:6: TIME '1795310286.2'"));
	assert_non_null(strstr(err, "2 of 9 lines could not be parsed and were skipped"));
	va = e2e_sh(&status, "cat %s", a);
	vb = e2e_sh(&status, "cat %s", b);
	assert_string_equal(va, vb);
	free(vb);

	/* a .gz as logrotate makes it: the same export */
	free(e2e_sh(&status, "gzip -c %s > %s", path, gz));
	assert_int_equal(export("vcd", b, gz, err, sizeof(err)), 0);
	vb = e2e_sh(&status, "cat %s", b);
	assert_string_equal(va, vb);
	free(vb);
	/* cut short: what was read is exported, the exit says the file was not whole */
	free(e2e_sh(&status, "head -c 120 %s > %s", gz, cut));
	assert_int_equal(export("vcd", b, cut, err, sizeof(err)), 2);
	assert_non_null(strstr(err, "cut.gz: the compressed file is cut short"));
	/* a missing file: nothing written, exit 2 */
	unlink(b);
	{
		const char *argv[] = { "portlogd", "--export", "vcd", "-o", b, path, "/nonexistent/x.log",
				       NULL };

		assert_int_equal(e2e_run(argv, err, sizeof(err)), 2);
		assert_non_null(strstr(err, "/nonexistent/x.log: cannot read"));
		assert_int_equal(access(b, F_OK), -1);
	}
	/* the names of the pins, x before the first value, time 0 at the first line */
	assert_non_null(strstr(va, "$var wire 1 ! lpt0.nERR $end"));
	assert_non_null(strstr(va, " lpt0.BUSY $end"));
	assert_non_null(strstr(va, " plc.RX $end"));
	assert_non_null(strstr(va, "1795310285000000000 ns since the epoch"));
	/* the RX wire: 1 from the packet's start for 3 characters of 10 bits at 9600 baud */
	assert_non_null(strstr(va, "\n#1500000000\n1&\n#1503125000\n0&\n"));
	assert_non_null(strstr(va, "\n#2000000000\n0%\n#2001000000\n"));

	/* --source and --since/--until: only plc; time 0 at --since, the value then */
	{
		const char *argv[] = { "portlogd", "--export", "vcd", "-o", b, "--source", "lpt0",
				       "--since", "1795310285.5", "--until", "2026-11-22T01:18:06.5Z",
				       path, NULL };

		assert_int_equal(e2e_run(argv, err, sizeof(err)), 0);
		vb = e2e_sh(&status, "cat %s", b);
		assert_null(strstr(vb, "plc."));
		assert_non_null(strstr(vb, "1795310285500000000 ns since the epoch"));
		/* at #0: BUSY 1 (IN 0x80 before --since); the change at +0.5 s; the end at --until */
		assert_non_null(strstr(vb, "#0\n0!\n0\"\n0#\n0$\n1%\n#500000000\n1!\n#1000000000\n"));
		free(vb);
	}
	/* bad command lines: exit 2 and what to do */
	{
		const char *argv[] = { "portlogd", "--export", "png", path, NULL };
		const char *argv2[] = { "portlogd", "--export", "vcd", "--since", "yesterday", path,
					NULL };

		assert_int_equal(e2e_run(argv, err, sizeof(err)), 2);
		assert_non_null(strstr(err, "unknown format; give pcapng or vcd"));
		assert_int_equal(e2e_run(argv2, err, sizeof(err)), 2);
		assert_non_null(strstr(err, "--since yesterday: not a time"));
	}
	free(va);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(bad_input_gz_and_filters, teardown),
		cmocka_unit_test_teardown(modbus_in_wireshark, teardown),
		cmocka_unit_test_teardown(modbus_pairs_in_wireshark, teardown),
		cmocka_unit_test_teardown(pins_in_sigrok_and_gtkwave, teardown),
	};
	static const char *const tools[] = { "command -v tshark", "command -v sigrok-cli",
					     "command -v vcd2fst", "command -v fst2vcd",
					     "command -v gzip" };

	if (!e2e_have("e2e_export", tools, sizeof(tools) / sizeof(tools[0])))
		return 77;
	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
