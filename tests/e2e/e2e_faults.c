/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_faults.c - faults a monitoring PC meets, end to end: the daemon survives and
 * accounts for every record.
 *
 * The real binary on real ptys. Packets are NMEA sentences cut by the
 * delimiter (\n), one write each, so their boundaries do not depend on this
 * VM's scheduling: every RX line must be one sent packet, in order, and every
 * packet that is not there must be counted in a DROP line (or, after kill -9,
 * be among the last ones sent before the kill).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "sim/sim.h"
#include "testutil.h"

static struct e2e_daemon live;

static char mounted[272];        /* disk_full's tmpfs, until it is unmounted */

static int teardown(void **state)
{
	(void)state;
	e2e_kill(&live);
	/* a failed disk_full leaves no mount behind (nor its directory busy) */
	if (mounted[0] != '\0' && umount2(mounted, MNT_DETACH) != 0)
		perror(mounted);
	mounted[0] = '\0';
	return 0;
}

static int64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* NMEA sentences, one write each, `gap_lo`..`gap_hi` us apart. */
static struct sim_cfg nmea(unsigned packets, unsigned gap_lo, unsigned gap_hi)
{
	return (struct sim_cfg){
		.kind = SIM_NMEA, .packets = packets, .max_frags = 1, .inter_gap_min_us = gap_lo,
		.inter_gap_max_us = gap_hi, .gap_us = 100000, .seed = tu_seed("e2e_faults"),
	};
}

struct fx {
	char dir[256], conf[300], log[300];
	struct e2e_daemon d;
};

static void fx_dir(struct fx *x)
{
	e2e_tmpdir(x->dir, sizeof(x->dir));
	snprintf(x->conf, sizeof(x->conf), "%s/portlogd.conf", x->dir);
	snprintf(x->log, sizeof(x->log), "%s/portlogd.log", x->dir);
}

/* Writes the config: [logger] with log_file and `logger`, then `ports`. */
static void fx_conf(struct fx *x, const char *logger, const char *ports)
{
	size_t len = strlen(x->log) + strlen(logger) + strlen(ports) + 64;
	char *text = malloc(len);

	assert_non_null(text);
	snprintf(text, len, "[logger]\nlog_file = %s\nflush_interval_ms = 20\n%s\n%s", x->log,
		 logger, ports);
	e2e_write_file(x->conf, text);
	free(text);
}

static void fx_start(struct fx *x)
{
	assert_int_equal(e2e_start(&x->d, x->dir, x->conf), 0);
	live = x->d;
	if (e2e_wait_ready(&x->d, 10000) != 0) {
		e2e_show_file(x->d.err_path);
		fail_msg("the daemon did not become ready");
	}
}

static void fx_stop(struct fx *x)
{
	int status = e2e_stop(&x->d, SIGTERM, 20000, NULL);

	live.pid = 0;
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void open_port(struct sim_port *p, const char *name, const char *dir)
{
	char link[300];

	snprintf(link, sizeof(link), "%s/%s", dir, name);
	assert_int_equal(sim_port_open(p, name, link), 0);
}

/* One simulated port NAME with `keys` in its section, `logger` in [logger];
 * the daemon started and the port open. */
static void fx_one_port(struct fx *x, struct sim_port *p, const char *name, const char *keys,
			const char *logger)
{
	char ports[512];

	open_port(p, name, x->dir);
	snprintf(ports, sizeof(ports), "[serial %s]\ndevice = %s/%s\n%s\n", name, x->dir, name,
		 keys);
	fx_conf(x, logger, ports);
	fx_start(x);
	assert_int_equal(sim_port_wait_open(p, 5000), 0);
}

/* Polls a file (bounded) until it contains `needle`; returns the ms it took or -1. */
static int wait_for_text(const char *path, const char *needle, int timeout_ms)
{
	int64_t start = mono();

	for (;;) {
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "grep -qF -- '%s' '%s' 2>/dev/null", needle, path);
		if (system(cmd) == 0)
			return (int)((mono() - start) / 1000000);
		if (mono() - start > (int64_t)timeout_ms * 1000000)
			return -1;
		sleep_ms(10);
	}
}

/*
 * Waits (bounded) until the log at `path` has, for each of the n ports p, a STAT line
 * showing that at least `sent` records were produced and every one pushed into its
 * ring is written above it: the daemon has caught up with what was sent. (Drops after
 * the last record that fitted are reported with the next one, or at stop.)
 */
static void wait_caught_up(const char *path, const struct sim_port *p, unsigned n,
			   unsigned long long sent)
{
	unsigned long long *lines = calloc(n, sizeof(*lines));
	bool *up = calloc(n, sizeof(*up));

	assert_non_null(lines);
	assert_non_null(up);
	for (int64_t end = mono() + 20000000000LL;; sleep_ms(50)) {
		struct e2e_log tmp = { 0 };
		unsigned left = n;

		if (mono() > end)
			fail_msg("the daemon did not catch up within 20 s");
		assert_int_equal(e2e_read_log(&tmp, path), 0);
		memset(lines, 0, n * sizeof(*lines));
		for (size_t i = 0; i < tmp.n; i++) {
			const char *t = tmp.line[i].text, *r;

			for (unsigned k = 0; k < n; k++) {
				char pre[64];

				if (strcmp(tmp.line[i].src, p[k].name) == 0
				    && strcmp(tmp.line[i].kind, "DROP") != 0)
					lines[k]++;
				snprintf(pre, sizeof(pre), " portlogd STAT %s ", p[k].name);
				if (strstr(t, pre) != NULL && (r = strstr(t, " records=")) != NULL) {
					unsigned long long rec = strtoull(r + 9, NULL, 10);
					unsigned long long d = strtoull(strstr(t, " drops=") + 7, NULL, 10);

					up[k] = lines[k] == rec && rec + d >= sent;
				}
			}
		}
		e2e_free_log(&tmp);
		for (unsigned k = 0; k < n; k++)
			left -= up[k];
		if (left == 0)
			break;
	}
	free(lines);
	free(up);
}

struct tally {
	size_t matched;                 /* packets whole in the log */
	size_t lost, lost_bytes;        /* packets with bytes in no line (whole or part), bytes */
	size_t unmarked;                /* wrong boundaries with no EV late-delivery */
	size_t first_lost, last_lost;   /* packet numbers; first_lost = SIZE_MAX if none */
};

/* The offset in p's stream of byte o of packet k (k = npkt: the end). */
static size_t stream_at(const struct sim_port *p, size_t k, size_t o)
{
	return k < p->npkt ? p->pkt[k].off + o : p->data_len;
}

/* The bytes from byte o of packet k to byte oj of packet j of p are in no line: lost, in
 * at least one record for each packet they touch (a record holds one packet at most:
 * the delimiter ends it). */
static void lose(struct tally *t, const struct sim_port *p, size_t k, size_t o, size_t j,
		 size_t oj)
{
	if (k == j && o == oj)
		return;
	t->lost_bytes += stream_at(p, j, oj) - stream_at(p, k, o);
	for (; k < j || (k == j && oj > 0); k++) {
		if (t->first_lost == SIZE_MAX)
			t->first_lost = k;
		if (t->last_lost != k || t->lost == 0)
			t->lost++;
		t->last_lost = k;
	}
}

/* Are l's bytes the sent stream from byte o of packet j on? */
static bool holds_stream(const struct sim_port *p, size_t j, size_t o, const struct e2e_line *l)
{
	size_t at = stream_at(p, j, o);

	return at + l->len <= p->data_len && memcmp(p->data + at, l->data, l->len) == 0;
}

/*
 * Where line l lies in p's stream after byte o of packet k, when it does not go on from
 * there: a packet of its length, whole, first (so that a cut line's prefix cannot pass
 * for a later packet), then the start of a packet, then the end of one (the rest of a
 * packet whose first record was lost). False when it is in none.
 */
static bool find_line(const struct sim_port *p, size_t k, size_t o, const struct e2e_line *l,
		      size_t *j, size_t *oj)
{
	size_t first = o > 0 ? k + 1 : k;

	for (*oj = 0, *j = first; *j < p->npkt; ++*j)
		if (p->pkt[*j].len == l->len && holds_stream(p, *j, 0, l))
			return true;
	for (*j = first; *j < p->npkt; ++*j)
		if (holds_stream(p, *j, 0, l))
			return true;
	for (*j = k; *j < p->npkt; ++*j) {
		if (l->len >= p->pkt[*j].len)
			continue;
		*oj = p->pkt[*j].len - l->len;
		if ((*j > k || *oj > o) && holds_stream(p, *j, *oj, l))
			return true;
	}
	return false;
}

/*
 * Every RX line of p (in file order, from line `from` on) must be sent bytes, in
 * order, from packet `pkt0` on; the bytes not there are lost: whole packets, or the part
 * of one that a stall cut into two records when one of them was dropped (the DROP bytes
 * must then hold exactly them: e2e_expect_drops). A line is one packet, or a wrong
 * boundary: those the reader saw are marked (daemon/README.md, "Packet boundaries": an
 * EV late-delivery of p dated at a line that begins inside a packet or runs past one's
 * end); the unmarked ones are counted and shown. These tests judge loss: whether a
 * boundary is right under load is e2e_serial's question, which tells a daemon's error
 * from a stall of this machine (a pty's bytes held back by the kernel's tty worker for
 * longer than the gap look like a silence to the reader; CI's ASan run once cut a
 * one-write NMEA sentence of a port nothing happened to).
 */
static struct tally match_packets(const struct e2e_log *log, size_t from, const struct sim_port *p,
				  size_t pkt0)
{
	struct tally t = { .first_lost = SIZE_MAX };
	size_t k = pkt0, o = 0;         /* the next byte expected: byte o of packet k */

	for (size_t i = from; i < log->n; i++) {
		const struct e2e_line *l = &log->line[i];
		size_t j = k, oj = o, rest = l->len;
		bool marked, crossed = false;

		if (strcmp(l->src, p->name) != 0 || strcmp(l->kind, "RX") != 0)
			continue;
		marked = e2e_late_mark_at(log, p->name, l->t);
		if (k == p->npkt || !holds_stream(p, k, o, l)) {
			if (!find_line(p, k, o, l, &j, &oj))
				fail_msg("%s: log line %zu is no sent bytes after byte %zu of packet %zu: "
					 "%.100s", p->name, i + 1, o, k, l->text);
			lose(&t, p, k, o, j, oj);
		}
		if (oj > 0 && !marked) {
			printf("# %s: log line %zu begins inside packet %zu (byte %zu) with no EV "
			       "late-delivery: %.100s\n", p->name, i + 1, j, oj, l->text);
			t.unmarked++;
		}
		while (rest > 0) {
			size_t take = p->pkt[j].len - oj < rest ? p->pkt[j].len - oj : rest;

			rest -= take;
			oj += take;
			if (oj == p->pkt[j].len) {
				/* whole in the log: no byte of it lost */
				t.matched += t.lost == 0 || t.last_lost != j;
				j++;
				oj = 0;
				crossed |= rest > 0;
			}
		}
		if (crossed && !marked) {
			printf("# %s: log line %zu runs past the end of a packet with no EV "
			       "late-delivery: %.100s\n", p->name, i + 1, l->text);
			t.unmarked++;
		}
		k = j;
		o = oj;
	}
	if (o > 0)
		lose(&t, p, k, o, k + 1, 0);
	lose(&t, p, k + (o > 0), 0, p->npkt, 0);
	return t;
}

/*
 * match_packets on a made-up log: a packet cut in two records of which one was dropped
 * (its first part logged, or its second) is lost in part, its bytes counted, not a
 * failure.
 */
static void cut_packet_is_counted(void **state)
{
	static uint8_t data[] = "$A,1\n$B,22\n$C,333\n$D,4\n";
	static struct sim_packet pkt[] = { { .off = 0, .len = 5 }, { .off = 5, .len = 6 },
					   { .off = 11, .len = 7 }, { .off = 18, .len = 5 } };
	struct sim_port p = { .name = "a", .data = data, .data_len = 23, .pkt = pkt, .npkt = 4 };
	/* packet 0 whole, the first 3 bytes of 1, the last 4 of 2, packet 3 whole */
	struct e2e_line line[] = {
		{ .src = "a", .kind = "RX", .data = data, .len = 5, .text = "0" },
		{ .src = "a", .kind = "RX", .data = data + 5, .len = 3, .text = "1" },
		{ .src = "a", .kind = "RX", .data = data + 14, .len = 4, .text = "2" },
		{ .src = "a", .kind = "RX", .data = data + 18, .len = 5, .text = "3" },
	};
	struct e2e_log log = { .line = line, .n = 4 };
	struct tally t;

	(void)state;
	t = match_packets(&log, 0, &p, 0);
	assert_int_equal(t.matched, 2);
	assert_int_equal(t.lost, 2);                    /* packets 1 and 2, in part */
	assert_int_equal(t.lost_bytes, 3 + 3);          /* "22\n" of 1, "$C," of 2 */
	assert_int_equal(t.first_lost, 1);
	assert_int_equal(t.last_lost, 2);
}

/* Sum of the DROP lines of src: records and bytes. */
static void drops_of(const struct e2e_log *log, const char *src, size_t *records, size_t *bytes)
{
	*records = *bytes = 0;
	for (size_t i = 0; i < log->n; i++)
		if (strcmp(log->line[i].src, src) == 0 && strcmp(log->line[i].kind, "DROP") == 0) {
			unsigned long long r, b;
			assert_int_equal(sscanf(strstr(log->line[i].text, " DROP ") + 6, "%llu %llu",
						&r, &b), 2);
			*records += r;
			*bytes += b;
		}
}

/* The k-th line (from 1) holding a and b (b may be NULL), or NULL. */
static const struct e2e_line *nth_line(const struct e2e_log *log, const char *a, const char *b,
				       unsigned k)
{
	for (size_t i = 0; i < log->n; i++)
		if (strstr(log->line[i].text, a) != NULL && (b == NULL || strstr(log->line[i].text, b))
		    && --k == 0)
			return &log->line[i];
	return NULL;
}

static bool has_line(const struct e2e_log *log, const char *a, const char *b)
{
	return nth_line(log, a, b, 1) != NULL;
}

/*
 * How long after t_done (CLOCK_REALTIME, read once the test's action had returned) the
 * daemon says it reacted: the TIME of that line of the log. The daemon's own time: a
 * stall of the test's thread before or after the action can only make it shorter.
 */
static int ms_after(const struct e2e_line *l, int64_t t_done)
{
	assert_non_null(l);
	return (int)((l->t - t_done) / 1000000);
}

/* The value of key= in the last "portlogd STAT NAME" line. */
static unsigned long long stat_value(const struct e2e_log *log, const char *name, const char *key)
{
	char pre[64], k[40];

	snprintf(pre, sizeof(pre), " portlogd STAT %s ", name);
	snprintf(k, sizeof(k), " %s=", key);
	for (size_t i = log->n; i > 0; i--) {
		const char *t = log->line[i - 1].text, *v;
		if (strstr(t, pre) != NULL && (v = strstr(t, k)) != NULL)
			return strtoull(v + strlen(k), NULL, 10);
	}
	fail_msg("no STAT %s line with %s=", name, key);
	return 0;
}

/*
 * Disk full: the log on a small tmpfs that a filler file fills up. The daemon
 * keeps running, keeps the lines it could not write, counts what did not fit
 * in DROP lines, backs off (a few attempts a second, no spin), and once space
 * returns writes again within a second, saying so.
 */
static void disk_full(void **state)
{
	const unsigned n1 = 6000, n2 = 200;
	char logs[272], fill[320];
	struct sim_port p;
	struct fx x;
	struct e2e_log log = { 0 };
	struct sim_cfg cfg;
	struct tally t;
	size_t drec, dbytes;
	int64_t t_free;
	int fd, ms, status;

	(void)state;
	fx_dir(&x);
	snprintf(logs, sizeof(logs), "%s/logs", x.dir);
	assert_int_equal(mkdir(logs, 0755), 0);
	if (mount("tmpfs", logs, "tmpfs", 0, "size=2m") != 0) {
		printf("# cannot mount a tmpfs (%s): skipped\n", strerror(errno));
		skip();
	}
	snprintf(mounted, sizeof(mounted), "%s", logs);
	snprintf(x.log, sizeof(x.log), "%s/portlogd.log", logs);
	fx_one_port(&x, &p, "a", "delimiter = \\n\nmax_packet = 128", "ring_records = 256\n"
		    "stat_interval_s = 1");

	/* fill the file system to the last block */
	snprintf(fill, sizeof(fill), "%s/fill", logs);
	fd = open(fill, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	{
		static const char block[4096];
		while (write(fd, block, sizeof(block)) > 0)
			;
		assert_int_equal(errno, ENOSPC);
	}
	close(fd);
	cfg = nmea(n1, 300, 600);
	assert_int_equal(sim_run_all(&p, 1, &cfg, 50), 0);
	assert_int_equal(waitpid(x.d.pid, &status, WNOHANG), 0);     /* still running */

	assert_int_equal(unlink(fill), 0);
	t_free = tu_real_ns();		/* the space is back by now */
	assert_true(wait_for_text(x.log, " portlogd EV write-recovered errno=ENOSPC ", 10000) >= 0);
	/* caught up: what comes now is all written */
	wait_caught_up(x.log, &p, 1, n1);
	cfg = nmea(n2, 2000, 3000);
	assert_int_equal(sim_run_all(&p, 1, &cfg, 50), 0);
	fx_stop(&x);

	assert_int_equal(e2e_read_log(&log, x.log), 0);
	e2e_expect_accounted(&log);
	ms = ms_after(nth_line(&log, " portlogd EV write-recovered errno=ENOSPC ", NULL, 1), t_free);
	printf("# writing resumed %d ms after space returned\n", ms);
	assert_true(ms < 1000);
	t = match_packets(&log, 0, &p, 0);
	drops_of(&log, "a", &drec, &dbytes);
	printf("# disk full: %zu of %zu packets written, %zu dropped (%zu bytes) = DROP lines %zu "
	       "(%zu bytes); %llu failed writes\n", t.matched, p.npkt, t.lost, t.lost_bytes, drec,
	       dbytes, stat_value(&log, "flusher", "write_errors"));
	assert_true(t.lost > 0);                /* the disk really was full */
	e2e_expect_drops(&log, "a", 0, t.lost_bytes, t.lost, 0, 0);
	assert_true(t.last_lost < n1);          /* after recovery nothing is lost */
	/* backing off: a few attempts a second while the disk was full, not a spin */
	assert_true(stat_value(&log, "flusher", "write_errors") < 100);
	e2e_free_log(&log);
	sim_port_close(&p);
	assert_int_equal(umount2(logs, MNT_DETACH), 0);
	mounted[0] = '\0';
}

/* Reads the FIFO slowly until `fast`, then as fast as it can, into a file. */
struct sink {
	char fifo[300], out[300];
	_Atomic bool fast;
	pthread_t t;
	size_t bytes;
};

static void *sink_run(void *arg)
{
	struct sink *s = arg;
	int in = open(s->fifo, O_RDONLY | O_CLOEXEC), out;
	char buf[65536];

	out = open(s->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (in < 0 || out < 0)
		return NULL;
	for (;;) {
		bool fast = atomic_load(&s->fast);
		ssize_t n = read(in, buf, fast ? sizeof(buf) : 2048);

		if (n <= 0)
			break;
		if (write(out, buf, (size_t)n) != n)
			break;
		s->bytes += (size_t)n;
		if (!fast)
			sleep_ms(50);       /* 40 KB/s: far slower than the traffic's lines */
	}
	close(in);
	close(out);
	return NULL;
}

/*
 * Overload: the log is a FIFO read slowly, so the flusher blocks in write() and
 * the rings fill. The readers never block (the simulator is never held up),
 * every lost packet is in a DROP count, and once the sink is fast again the
 * daemon catches up: nothing sent afterwards is lost. n ports with `keys` each,
 * `logger` in [logger]; n1 packets a port while the sink is slow, n2 after.
 */
static void run_overload(const char *what, unsigned n, const char *logger, const char *keys,
			 unsigned n1, unsigned n2)
{
	struct sim_port *p = calloc(n, sizeof(*p));
	static struct sink sink;    /* static: a failed test unwinds without joining it */
	size_t cap = (size_t)n * (128 + strlen(keys)), o = 0;
	char *ports = malloc(cap);
	struct fx x;
	struct e2e_log log = { 0 };
	struct sim_cfg cfg;
	size_t lost = 0, lost_ports = 0;

	assert_non_null(p);
	assert_non_null(ports);
	fx_dir(&x);
	memset(&sink, 0, sizeof(sink));
	snprintf(sink.fifo, sizeof(sink.fifo), "%s/log.fifo", x.dir);
	snprintf(sink.out, sizeof(sink.out), "%s/log.out", x.dir);
	assert_int_equal(mkfifo(sink.fifo, 0644), 0);
	snprintf(x.log, sizeof(x.log), "%s", sink.fifo);
	for (unsigned i = 0; i < n; i++) {
		char name[8];

		snprintf(name, sizeof(name), "p%u", i);
		open_port(&p[i], name, x.dir);
		o += (size_t)snprintf(ports + o, cap - o, "[serial p%u]\ndevice = %s/p%u\n%s\n", i,
				      x.dir, i, keys);
	}
	fx_conf(&x, logger, ports);
	free(ports);
	atomic_init(&sink.fast, false);
	assert_int_equal(pthread_create(&sink.t, NULL, sink_run, &sink), 0);
	fx_start(&x);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(sim_port_wait_open(&p[i], 5000), 0);
	cfg = nmea(n1, 300, 600);
	assert_int_equal(sim_run_all(p, n, &cfg, 50), 0);
	atomic_store(&sink.fast, true);
	/* caught up when a STAT line shows nothing left in the rings */
	wait_caught_up(sink.out, p, n, n1);
	cfg = nmea(n2, 2000, 3000);
	assert_int_equal(sim_run_all(p, n, &cfg, 50), 0);
	fx_stop(&x);
	pthread_join(sink.t, NULL);

	assert_int_equal(e2e_read_log(&log, sink.out), 0);
	e2e_expect_accounted(&log);
	for (unsigned i = 0; i < n; i++) {
		struct tally t = match_packets(&log, 0, &p[i], 0);
		size_t drec, dbytes;

		drops_of(&log, p[i].name, &drec, &dbytes);
		if (n <= 4 || i == 0 || i == n - 1)
			printf("# %s %s: %zu of %zu packets written, %zu dropped = DROP lines %zu, "
			       "%zu bytes = %zu\n", what, p[i].name, t.matched, p[i].npkt, t.lost,
			       drec, t.lost_bytes, dbytes);
		e2e_expect_drops(&log, p[i].name, 0, t.lost_bytes, t.lost, 0, 0);
		if (t.lost > 0)
			assert_true(t.last_lost < n1);  /* caught up: nothing lost afterwards */
		lost += t.lost;
		lost_ports += t.lost > 0;
		sim_port_close(&p[i]);
	}
	printf("# %s: %u ports, %zu of them lost packets, %zu in all, each in a DROP count\n",
	       what, n, lost_ports, lost);
	assert_true(lost > 0);      /* the sink really was too slow */
	e2e_free_log(&log);
	free(p);
}

static void overload(void **state)
{
	(void)state;
	run_overload("overload", 2, "ring_records = 256\nstat_interval_s = 1",
		     "delimiter = \\n\nmax_packet = 128", 4000, 200);
}

/*
 * The same at 128 ports whose rings are as small as their baud makes them (issue 31:
 * 1200 baud with a delimiter, ring_seconds 1: 120 records a second, the least ring, 256
 * records): every ring fills while the sink is slow, and the STAT lines and DROP counts
 * still account for every record.
 */
static void overload_128(void **state)
{
	(void)state;
	run_overload("overload_128", 128, "ring_seconds = 1\nstat_interval_s = 1",
		     "baud = 1200\ndelimiter = \\n\nmax_packet = 128", 400, 20);
}

/*
 * A port vanishes (the device hangs up, its path is removed) and comes back:
 * the other port logs on, the lost one is reopened within a second of its
 * return, and the log says both.
 */
static void port_vanishes(void **state)
{
	struct sim_port a1, a2, b;
	struct sim_bg bg;
	struct sim_cfg cfg;
	char ports[1024];
	struct fx x;
	struct e2e_log log = { 0 };
	struct tally t;
	int64_t t_back;
	int ms;

	(void)state;
	fx_dir(&x);
	open_port(&a1, "a", x.dir);
	open_port(&b, "b", x.dir);
	snprintf(ports, sizeof(ports),
		 "[serial a]\ndevice = %s/a\ndelimiter = \\n\n[serial b]\ndevice = %s/b\ndelimiter = \\n\n",
		 x.dir, x.dir);
	fx_conf(&x, "stat_interval_s = 1", ports);
	fx_start(&x);
	assert_int_equal(sim_port_wait_open(&a1, 5000), 0);
	assert_int_equal(sim_port_wait_open(&b, 5000), 0);
	cfg = nmea(1500, 2000, 3000);
	assert_int_equal(sim_bg_start(&bg, &b, 1, &cfg, 50), 0);
	cfg = nmea(100, 2000, 3000);
	assert_int_equal(sim_run_all(&a1, 1, &cfg, 50), 0);
	wait_caught_up(x.log, &a1, 1, a1.npkt + 1);   /* the packets and EV open: in the log */

	/* unplugged: the device hangs up and its path goes away */
	close(a1.master);
	a1.master = -1;
	assert_int_equal(unlink(a1.link), 0);
	a1.link[0] = '\0';
	assert_true(wait_for_text(x.log, " a EV close ", 5000) >= 0);
	assert_true(wait_for_text(x.log, " a EV error op=open ", 5000) >= 0);
	sleep_ms(300);

	/* plugged in again */
	open_port(&a2, "a", x.dir);
	t_back = tu_real_ns();		/* the link is there by now */
	assert_int_equal(sim_port_wait_open(&a2, 5000), 0);
	assert_int_equal(sim_run_all(&a2, 1, &cfg, 50), 0);
	assert_int_equal(sim_bg_join(&bg), 0);
	fx_stop(&x);

	assert_int_equal(e2e_read_log(&log, x.log), 0);
	e2e_expect_accounted(&log);
	ms = ms_after(nth_line(&log, " a EV open ", NULL, 2), t_back);
	printf("# the port was open again %d ms after it came back\n", ms);
	assert_true(ms < 1000);
	assert_true(has_line(&log, " a EV close reason=hangup", NULL));
	assert_true(has_line(&log, " a EV error op=open ", "errno=ENOENT"));
	{
		size_t opens = 0;
		for (size_t i = 0; i < log.n; i++)
			opens += strstr(log.line[i].text, " a EV open ") != NULL;
		assert_int_equal(opens, 2);
	}
	/* STAT reopens= counts the return (the metrics file's portlogd_port_reopens_total) */
	assert_true(has_line(&log, " portlogd STAT a ", " reopens=1 "));
	assert_false(has_line(&log, " portlogd STAT b ", " reopens=1 "));
	/* a pty has no interrupt whose thread irq_priority = auto could raise: said once
	 * per port, in the log and in the diagnostics (stderr with -f), not at each open */
	{
		size_t said = 0;
		char *err = NULL, *p;
		size_t len = 0;
		FILE *f = fopen(x.d.err_path, "r");

		for (size_t i = 0; i < log.n; i++)
			said += strstr(log.line[i].text, " a EV irq-priority ") != NULL;
		assert_int_equal(said, 1);
		assert_true(has_line(&log, " a EV irq-priority irq=none reason=pty", NULL));
		assert_true(has_line(&log, " b EV irq-priority irq=none reason=pty", NULL));
		assert_non_null(f);
		assert_true(getdelim(&err, &len, '\0', f) > 0);
		fclose(f);
		said = 0;
		for (p = err; (p = strstr(p, " a EV irq-priority irq=none reason=pty")) != NULL; p++)
			said++;
		assert_int_equal(said, 1);
		free(err);
	}
	/* nothing lost on either side of the gap, nor on the other port */
	{
		size_t n_a2 = 0, i;
		for (i = 0; i < log.n; i++)
			if (strstr(log.line[i].text, " a EV open ") != NULL && ++n_a2 == 2)
				break;
		struct e2e_log before = { .line = log.line, .n = i };

		t = match_packets(&before, 0, &a1, 0);
		assert_int_equal(t.lost, 0);
		assert_int_equal(t.matched, a1.npkt);
		t = match_packets(&log, i, &a2, 0);
		assert_int_equal(t.lost, 0);
	}
	t = match_packets(&log, 0, &b, 0);
	printf("# port b logged %zu of %zu packets meanwhile\n", t.matched, b.npkt);
	assert_int_equal(t.lost, 0);
	e2e_free_log(&log);
	sim_port_close(&a1);
	sim_port_close(&a2);
	sim_port_close(&b);
}

/* Every line of a file is whole: ends in a newline, TIME SOURCE KIND at least. */
static size_t check_whole_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;

	assert_non_null(f);
	while ((len = getline(&buf, &cap, f)) > 0) {
		char t[64], s[64], k[16];
		n++;
		if (buf[len - 1] != '\n')
			fail_msg("line %zu has no newline: a torn line: %.80s", n, buf);
		if (sscanf(buf, "%63s %63s %15s", t, s, k) != 3 || (t[4] != '-' && t[10] != '.'))
			fail_msg("line %zu is not TIME SOURCE KIND: %.80s", n, buf);
	}
	free(buf);
	fclose(f);
	return n;
}

/*
 * kill -9 during traffic, and a torn last line as a power cut leaves it: the
 * restart cuts the torn line off (EV repair), no line in the file is torn, the
 * packets before the kill are there without a hole (only the last ones, in
 * flight, are missing), and logging goes on.
 */
static void kill9_restart(void **state)
{
	static const char torn[] = "2026-11-22T01:02:03.123456789Z a RX 5 41424344";
	struct sim_port p;
	struct sim_bg bg;
	struct sim_cfg cfg;
	struct fx x;
	struct e2e_log log = { 0 };
	struct tally t;
	size_t start2 = 0, n;
	int fd, status;

	(void)state;
	fx_dir(&x);
	fx_one_port(&x, &p, "a", "delimiter = \\n", "sync_interval_ms = 0");
	cfg = nmea(0, 500, 1500);
	assert_int_equal(sim_bg_start(&bg, &p, 1, &cfg, 50), 0);
	while (atomic_load(&p.done) < 500)
		sleep_ms(5);
	assert_int_equal(kill(x.d.pid, SIGKILL), 0);
	assert_int_equal(waitpid(x.d.pid, &status, 0), x.d.pid);
	live.pid = 0;
	atomic_store(&p.stop, true);
	(void)sim_bg_join(&bg);     /* ends with EPIPE or stopped: the reader is gone */
	n = p.npkt;
	/* what a power cut can leave: half a line */
	fd = open(x.log, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, torn, strlen(torn)), (ssize_t)strlen(torn));
	close(fd);

	fx_start(&x);
	assert_int_equal(sim_port_wait_open(&p, 5000), 0);
	atomic_store(&p.stop, false);
	cfg = nmea(300, 1000, 2000);
	assert_int_equal(sim_run_all(&p, 1, &cfg, 50), 0);
	fx_stop(&x);

	printf("# %zu whole lines\n", check_whole_lines(x.log));
	assert_int_equal(e2e_read_log(&log, x.log), 0);
	assert_true(has_line(&log, " portlogd EV repair cut=", "reason=incomplete-last-line"));
	for (size_t i = 0; i < log.n; i++)
		if (strstr(log.line[i].text, " portlogd EV start ") != NULL)
			start2 = i;
	/* before the kill: the first packets, no hole; only the last ones missing */
	{
		struct e2e_log first = { .line = log.line, .n = start2 };
		struct sim_port before = p;

		before.npkt = n;
		t = match_packets(&first, 0, &before, 0);
		printf("# before kill -9: %zu of %zu packets in the file, the last %zu in flight\n",
		       t.matched, n, t.lost);
		assert_true(t.matched > 0);
		if (t.lost > 0)
			assert_int_equal(t.first_lost, t.matched);    /* a tail, not a hole */
	}
	/* after the restart: what the pty still held from before, then everything
	 * sent since; only packets that were inside the killed daemon are missing */
	{
		size_t before_matched = t.matched;

		t = match_packets(&log, start2, &p, before_matched);
		printf("# after the restart: %zu packets, %zu of those sent before the kill lost "
		       "with the process\n", t.matched, t.lost);
		if (t.lost > 0)
			assert_true(t.last_lost < n);
		assert_true(t.matched >= p.npkt - n);
	}
	e2e_free_log(&log);
	sim_port_close(&p);
}

/*
 * Garbage: random bytes in bursts up to 1000 bytes with max_packet 64. Nothing
 * crashes, every byte is logged once, in order, and each burst is cut into
 * lines of 64 bytes and a rest.
 */
static void garbage(void **state)
{
	struct sim_port p;
	struct sim_cfg cfg = {
		.kind = SIM_BINARY, .packets = 300, .min_len = 1, .max_len = 1000, .max_frags = 1,
		.inter_gap_min_us = 10000, .inter_gap_max_us = 12000, .gap_us = 3000,
		.seed = tu_seed("e2e_faults garbage"),
	};
	struct fx x;
	struct e2e_log log = { 0 };
	size_t len, *starts, *idx, nl, late = 0;
	uint8_t *got;

	(void)state;
	fx_dir(&x);
	fx_one_port(&x, &p, "g", "gap_us = 3000\nmax_packet = 64", "");
	assert_int_equal(sim_run_all(&p, 1, &cfg, 50), 0);
	fx_stop(&x);
	assert_int_equal(e2e_read_log(&log, x.log), 0);
	e2e_expect_accounted(&log);
	got = e2e_concat(&log, "g", &len, &starts, &idx, &nl);
	assert_int_equal(len, p.data_len);
	assert_memory_equal(got, p.data, len);
	for (size_t i = 0; i < nl; i++)
		assert_true(log.line[idx[i]].len <= 64);
	/*
	 * Each burst: lines at its start and every 64 bytes after. A burst cut
	 * otherwise is allowed only where the log marks it where the boundary rule
	 * puts the mark (e2e_packet_fit): the log's own mark, never the sender's clock.
	 */
	for (size_t k = 0, j = 0; k < p.npkt; k++) {
		const struct sim_packet *b = &p.pkt[k];
		size_t fl, ll;
		bool ok = true;

		while (j < nl && starts[j] < b->off)
			j++;
		for (uint32_t o = 0, i = (uint32_t)j; o < b->len; o += 64, i++)
			ok &= i < nl && starts[i] == b->off + o;
		if (ok || !sim_packet_clean(&p, k))
			continue;
		late++;
		if (e2e_packet_fit(&log, "g", starts, idx, nl, 64, b->off, b->len, &fl, &ll)
		    != E2E_FIT_MARKED)
			fail_msg("burst %zu (%u bytes at offset %u) is not cut at its start and every "
				 "64 bytes, and not marked where the boundary rule puts the mark", k,
				 b->len, b->off);
	}
	printf("# garbage: %zu bytes in %zu bursts, %zu lines; %zu bursts cut otherwise, marked\n",
	       len, p.npkt, nl, late);
	free(got);
	free(starts);
	free(idx);
	e2e_free_log(&log);
	sim_port_close(&p);
}

/*
 * clock_sensor = on where the RTC cannot be read (this machine has none, or another
 * program holds it): said in the log (EV error op=clock-sensor, at start) and the
 * journal, and the daemon logs on without it: every byte, no line held back or
 * marked for a clock it does not watch. Where it can be read, the sensor runs: its
 * STAT clock line, every byte.
 */
static void clock_sensor_unavailable(void **state)
{
	struct sim_port p;
	struct sim_cfg cfg = {
		.kind = SIM_BINARY, .packets = 60, .min_len = 2, .max_len = 40, .max_frags = 1,
		.inter_gap_min_us = 10000, .inter_gap_max_us = 12000, .gap_us = 3000,
		.seed = tu_seed("e2e_faults clock_sensor"),
	};
	struct fx x;
	struct e2e_log log = { 0 };
	size_t len, *starts, *idx, nl, errors = 0, stats = 0, clock_marks = 0;
	uint8_t *got;
	bool rtc = access("/dev/rtc0", R_OK) == 0;

	(void)state;
	fx_dir(&x);
	fx_one_port(&x, &p, "c", "gap_us = 3000", "clock_sensor = on\nstat_interval_s = 1");
	assert_int_equal(sim_run_all(&p, 1, &cfg, 50), 0);
	fx_stop(&x);
	assert_int_equal(e2e_read_log(&log, x.log), 0);
	e2e_expect_accounted(&log);
	got = e2e_concat(&log, "c", &len, &starts, &idx, &nl);
	assert_int_equal(len, p.data_len);
	assert_memory_equal(got, p.data, len);
	for (size_t i = 0; i < log.n; i++) {
		const char *t = log.line[i].text;

		errors += strstr(t, " portlogd EV error ") != NULL
			  && strstr(t, "op=clock-sensor device=/dev/rtc0") != NULL;
		stats += strstr(t, " portlogd STAT clock updates=") != NULL;
		clock_marks += strstr(t, " case=clock ") != NULL;
	}
	printf("# clock_sensor = on, /dev/rtc0 %s: %zu EV error, %zu STAT clock lines, %zu "
	       "case=clock marks, %zu lines of %zu packets\n", rtc ? "readable" : "not there",
	       errors, stats, clock_marks, nl, p.npkt);
	if (rtc) {
		assert_true(stats > 0);
	} else {
		assert_int_equal(errors, 1);
		assert_int_equal(stats, 0);
		assert_int_equal(clock_marks, 0);
		char *err = e2e_read_file(x.d.err_path, NULL);

		assert_non_null(err);
		if (strstr(err, "/dev/rtc0 cannot be read for its seconds") == NULL)
			fail_msg("no warning about /dev/rtc0 in the daemon's stderr:\n%s", err);
		free(err);
	}
	free(got);
	free(starts);
	free(idx);
	e2e_free_log(&log);
	sim_port_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cut_packet_is_counted),
		cmocka_unit_test_teardown(disk_full, teardown),
		cmocka_unit_test_teardown(overload, teardown),
		cmocka_unit_test_teardown(overload_128, teardown),
		cmocka_unit_test_teardown(port_vanishes, teardown),
		cmocka_unit_test_teardown(kill9_restart, teardown),
		cmocka_unit_test_teardown(garbage, teardown),
		cmocka_unit_test_teardown(clock_sensor_unavailable, teardown),
	};

	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
