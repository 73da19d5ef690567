/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_flush.c - the flusher: merge, rejoin, EV and DROP lines, stop accounting, what the log file's events say, reopen. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"
#include "clock.h"
#include "failio.h"
#include "flush.h"
#include "log.h"
#include "logline.h"
#include "rec.h"
#include "source.h"
#include "stat.h"
#include "testutil.h"
#include "timer.h"

#define T_REAL_BASE 1763764867000000000LL

/* hup_in_write: the next write on the log first asks for a reopen (a SIGHUP that
 * comes while the flusher is in the middle of one) */
static _Atomic(struct flusher *) hup_in_write;

static void hup_hook(void)
{
	struct flusher *f = atomic_exchange(&hup_in_write, NULL);

	if (f != NULL)
		flush_reopen(f);
}

static uint64_t seed;
static const uint8_t filler[4096];     /* payload of records that are dropped */

/* ---- fixture: a temporary directory, a config, sources and a flusher ---- */

struct fx {
	char dir[64];
	char path[CONF_PATH_MAX];
	struct conf conf;
	struct source src[2];
	struct parts parts;     /* the sources, registered as the flusher finds them */
	unsigned nsrc;
	struct flusher f;
	bool f_open;
	char err[CONF_ERR_MAX];
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/portlogd-test-flush-XXXXXX");
	if (mkdtemp(fx->dir) == NULL) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/portlogd.log", fx->dir);
	conf_defaults(&fx->conf);
	snprintf(fx->conf.logger.log_file, sizeof(fx->conf.logger.log_file), "%s", fx->path);
	/* the flusher sizes its packet buffer by the largest configured max_packet */
	if (conf_add_serial(&fx->conf) == NULL)
		return -1;
	snprintf(fx->conf.serial[0].name, sizeof(fx->conf.serial[0].name), "a");
	fx->conf.serial[0].max_packet = 4096;
	failio_reset();
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	DIR *d;
	struct dirent *e;

	if (fx->f_open)
		flush_fini(&fx->f);
	for (unsigned i = 0; i < fx->nsrc; i++)
		source_fini(&fx->src[i]);
	d = opendir(fx->dir);
	if (d != NULL) {
		while ((e = readdir(d)) != NULL) {
			char p[CONF_PATH_MAX + 300];

			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(p, sizeof(p), "%s/%s", fx->dir, e->d_name);
			(void)unlink(p);        /* best effort: it is a temporary directory */
		}
		closedir(d);
	}
	(void)rmdir(fx->dir);
	conf_free(&fx->conf);
	parts_fini(&fx->parts);
	free(fx);
	return 0;
}

static void fx_sources(struct fx *fx, unsigned n, uint32_t ring_records)
{
	static const char *const names[] = { "a", "b" };

	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(source_init(&fx->src[i], names[i], ring_records), 0);
		fx->nsrc = i + 1;
	}
}

/* The sources as the parts the flusher drains, in their order. */
static struct parts *fx_parts(struct fx *fx)
{
	parts_init(&fx->parts);
	for (unsigned i = 0; i < fx->nsrc; i++)
		assert_true(parts_add(&fx->parts, &(struct part){ .kind = PART_SERIAL,
				      .port = fx->src[i].name, .src = &fx->src[i] }, NULL));
	return &fx->parts;
}

static void fx_init(struct fx *fx)
{
	int rc = flush_init(&fx->f, &fx->conf, fx_parts(fx), fx->err, sizeof(fx->err));

	if (rc != 0)
		fail_msg("flush_init: %d %s", rc, fx->err);
	fx->f_open = true;
}

/* A port's two rings, a (RX) and b (TX), merged in time order; epoch times; the flusher. */
static void fx_pair(struct fx *fx)
{
	fx->conf.logger.timestamp = CONF_TS_EPOCH;
	fx_sources(fx, 2, 64);
	fx->src[0].pair = &fx->src[1];
	fx->src[1].pair = &fx->src[0];
	fx->src[1].dir = REC_DIR_TX;
	fx_init(fx);
}

/* Drains every ring into the file. */
static uint32_t fx_flush(struct fx *fx)
{
	uint32_t slots = flush_drain(&fx->f, true);

	assert_int_equal(flush_write(&fx->f), 0);
	assert_int_equal(fx->f.log.len, 0);
	return slots;
}

/* ---- reading the log back ---- */

struct lines {
	char *buf;
	char **v;
	size_t n;
	size_t clock;           /* EV clock lines, left out of v (test_clockq has them) */
};

/* Reads a whole file into a NUL-terminated buffer. */
static char *slurp(const char *path, long *size)
{
	FILE *fp = fopen(path, "rb");
	char *buf;

	if (fp == NULL)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	*size = ftell(fp);
	assert_true(*size >= 0);
	rewind(fp);
	buf = malloc((size_t)*size + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)*size, fp), (size_t)*size);
	fclose(fp);
	buf[*size] = '\0';
	return buf;
}

/* Reads a log file as lines; every line must end with a newline. */
static void read_lines(const char *path, struct lines *l)
{
	long size;
	size_t n = 0;

	l->buf = slurp(path, &size);
	assert_int_equal(strlen(l->buf), (size_t)size);    /* no NUL byte in the log */
	if (size > 0 && l->buf[size - 1] != '\n')
		fail_msg("%s: the last line has no newline", path);
	for (long i = 0; i < size; i++)
		n += l->buf[i] == '\n';
	l->v = calloc(n + 1, sizeof(*l->v));
	assert_non_null(l->v);
	l->n = 0;
	l->clock = 0;
	for (char *p = l->buf; *p != '\0';) {
		char *nl = strchr(p, '\n');

		*nl = '\0';
		/* the flusher thread's own, at start, with STAT rounds and at stop */
		if (strstr(p, " portlogd EV clock synced=") != NULL)
			l->clock++;
		else
			l->v[l->n++] = p;
		p = nl + 1;
	}
	assert_int_equal(l->n + l->clock, n);
}

static void free_lines(struct lines *l)
{
	free(l->buf);
	free(l->v);
	l->buf = NULL;
	l->v = NULL;
}

/* The line without its TIME field. */
static const char *after_time(const char *line)
{
	const char *p = strchr(line, ' ');

	assert_non_null(p);
	return p + 1;
}

/* Splits a copy of a line at spaces; returns the number of fields. */
static size_t split(const char *line, char *copy, size_t cap, char **f, size_t max)
{
	size_t n = 0;
	char *p = copy;

	assert_true(strlen(line) < cap);
	strcpy(copy, line);
	while (n < max) {
		f[n++] = p;
		p = strchr(p, ' ');
		if (p == NULL)
			break;
		*p++ = '\0';
	}
	return n;
}

static long decode_hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = strlen(s);

	if (n % 2 != 0 || n / 2 > cap)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = logline_hexval(s[2 * i]), lo = logline_hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (long)(n / 2);
}

/* Decodes the quoted packet text of fmt.h; -1 when it is not well formed. */
static long decode_text(const char *s, uint8_t *out, size_t cap)
{
	size_t len = strlen(s);

	if (len < 2 || s[0] != '"' || s[len - 1] != '"')
		return -1;
	return logline_unescape(s + 1, len - 2, out, cap);
}

/* Checks an RX line: source, length, HEX and TEXT both decode to the payload. */
static void check_rx(const char *line, const char *src, const uint8_t *data, size_t len)
{
	size_t cap = strlen(line) + 1;
	char *copy = malloc(cap);
	uint8_t *got = malloc(len + 1);
	char *f[8], num[24];

	assert_non_null(copy);
	assert_non_null(got);
	assert_int_equal(split(line, copy, cap, f, 8), 6);
	assert_string_equal(f[1], src);
	assert_string_equal(f[2], "RX");
	snprintf(num, sizeof(num), "%zu", len);
	assert_string_equal(f[3], num);
	assert_int_equal(decode_hex(f[4], got, len + 1), (long)len);
	assert_memory_equal(got, data, len);
	assert_int_equal(decode_text(f[5], got, len + 1), (long)len);
	assert_memory_equal(got, data, len);
	free(copy);
	free(got);
}

/* The TIME field of a record with this t_real, with timestamp = epoch. */
static void epoch_time(char *out, size_t cap, int64_t t_real)
{
	snprintf(out, cap, "%lld.%09lld", (long long)(t_real / 1000000000),
		 (long long)(t_real % 1000000000));
}

static void check_time(const char *line, int64_t t_real)
{
	char want[40];
	size_t n;

	epoch_time(want, sizeof(want), t_real);
	n = strlen(want);
	if (strncmp(line, want, n) != 0 || line[n] != ' ')
		fail_msg("line \"%s\" does not start with time %s", line, want);
}

static size_t count_kind(const struct lines *l, const char *needle)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++)
		n += strstr(l->v[i], needle) != NULL;
	return n;
}

static bool push(struct source *s, int64_t t_mono, const void *data, uint32_t len)
{
	struct rec head = { .t_real = T_REAL_BASE + t_mono, .t_mono = t_mono, .kind = REC_RX };

	return source_push(s, &head, data, len);
}

/* A record whose payload is a letter and a number of `width` digits, like "r00042". */
static bool push_label(struct source *s, int64_t t_mono, char letter, int width, unsigned v)
{
	char label[32];
	int n = snprintf(label, sizeof(label), "%c%0*u", letter, width, v);

	return push(s, t_mono, label, (uint32_t)n);
}

/* ---- merge ---- */

/* The heads are merged by t_mono; a source's own order is never changed. */
static void test_merge_keeps_source_order(void **state)
{
	static const struct { unsigned src; int64_t t; } in[] = {
		{ 0, 10 }, { 0, 30 }, { 0, 20 }, { 0, 40 }, { 1, 15 }, { 1, 25 }, { 1, 35 },
	};
	static const char *const want[] = {
		"a RX 3 613130 \"a10\"", "b RX 3 623135 \"b15\"", "b RX 3 623235 \"b25\"",
		"a RX 3 613330 \"a30\"", "a RX 3 613230 \"a20\"", "b RX 3 623335 \"b35\"",
		"a RX 3 613430 \"a40\"",
	};
	struct fx *fx = *state;
	struct lines l;

	fx->conf.logger.timestamp = CONF_TS_EPOCH;
	fx_sources(fx, 2, 64);
	fx_init(fx);
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		char label[8];

		snprintf(label, sizeof(label), "%c%02u", "ab"[in[i].src], (unsigned)in[i].t);
		assert_true(push(&fx->src[in[i].src], in[i].t, label, 3));
	}
	assert_int_equal(fx_flush(fx), 7);
	assert_int_equal(flush_drain(&fx->f, true), 0);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, 7);
	for (size_t i = 0; i < l.n; i++)
		assert_string_equal(after_time(l.v[i]), want[i]);
	check_time(l.v[4], T_REAL_BASE + 20);   /* each line shows its record's own time */
	free_lines(&l);
}

/* ---- the clock sensor (clocksensor.h) ---- */

/* A line as a reader pushes it: read_by (b) and the deadline's empty read (c), ms after base. */
static void push_read(struct source *s, int64_t base, int64_t t_ms, int64_t read_ms,
		      int64_t silence_ms, const char *text)
{
	struct rec head = { .t_real = T_REAL_BASE + base + t_ms * NS_PER_MS,
			    .t_mono = base + t_ms * NS_PER_MS, .kind = REC_RX,
			    .b = base + read_ms * NS_PER_MS,
			    .c = silence_ms != 0 ? base + silence_ms * NS_PER_MS : 0 };

	assert_true(source_push(s, &head, text, (uint32_t)strlen(text)));
}

/* A sensor that is a struct: its horizon, a stop said (ms after base). */
static void sensor_says(struct clock_sensor *c, int64_t base, int64_t horizon_ms)
{
	atomic_store(&c->horizon, base + horizon_ms * NS_PER_MS);
}

static void sensor_stop(struct clock_sensor *c, int64_t base, int64_t from_ms, int64_t to_ms,
			int64_t lost_ms)
{
	uint64_t n = atomic_load(&c->nstops);

	c->stops[n % CLOCK_SENSOR_STOPS] = (struct clockwatch_stop){
		base + from_ms * NS_PER_MS, base + to_ms * NS_PER_MS, lost_ms * NS_PER_MS };
	atomic_store(&c->nstops, n + 1);
}

/*
 * A serial line waits until the sensor has read an update after its reads (one of a
 * byte does not: it cannot hide a silence), then goes with EV late-delivery
 * case=clock before it if a stop's window began before its last read, and so do the
 * lines after it up to the first a silence read after the window closes. The marks
 * count in the port's late= and are numbered there.
 */
static void test_clock_stop_marks(void **state)
{
	static const char *const want[] = {
		"b RX 1 78 \"x\"", "a RX 3 413130 \"A10\"",
		"a EV late-delivery wait_us=200000 bytes=4 case=clock stage=machine joined=yes mark=1",
		"a RX 4 41353030 \"A500\"",
		"a EV late-delivery wait_us=9 bytes=4 case=stall stage=cpu joined=no mark=2",
		"a EV late-delivery wait_us=200000 bytes=4 case=clock stage=machine joined=yes mark=3",
		"a RX 4 41393030 \"A900\"",
		"a EV late-delivery wait_us=200000 bytes=2 case=clock stage=machine joined=yes mark=4",
		"a RX 2 4134 \"A4\"", "a RX 2 4135 \"A5\"",
	};
	struct fx *fx = *state;
	struct clock_sensor cs = { .fd = -1 };
	_Atomic uint64_t late = 7;      /* the reader's own marks so far */
	int64_t base = mono_ns();
	struct lines l;

	fx->conf.logger.timestamp = CONF_TS_EPOCH;
	fx_sources(fx, 2, 64);
	fx->src[0].late = &late;
	fx_init(fx);
	fx->f.rtc.c = &cs;
	sensor_says(&cs, base, 0);
	push_read(&fx->src[0], base, 10, 20, 25, "A10");
	push_read(&fx->src[1], base, 15, 16, 0, "x");
	assert_int_equal(flush_drain(&fx->f, false), 1);       /* x; A10 waits */
	/* the update at 1000 ms saw the clock stand still for 200 ms since the one before */
	sensor_stop(&cs, base, 30, 1000, 200);
	sensor_says(&cs, base, 1000);
	push_read(&fx->src[0], base, 500, 520, 530, "A500");   /* its silence before the end */
	{       /* the reader's own mark, numbered 8 as pushed: 2 as written */
		static const char ev_text[] = "wait_us=9 bytes=4 case=stall stage=cpu joined=no mark=8";
		struct rec ev = { .kind = REC_EV, .a = EV_LATE, .t_mono = base + 900 * NS_PER_MS,
				  .t_real = T_REAL_BASE + base + 900 * NS_PER_MS };

		assert_true(source_push(&fx->src[0], &ev, ev_text, sizeof(ev_text) - 1));
	}
	push_read(&fx->src[0], base, 900, 1005, 0, "A900");
	assert_int_equal(flush_drain(&fx->f, false), 3);       /* A10 clean, A500, the EV; A900 waits */
	sensor_says(&cs, base, 2000);
	push_read(&fx->src[0], base, 1100, 1150, 1160, "A4");  /* closed by a silence after */
	push_read(&fx->src[0], base, 1200, 1250, 1260, "A5");
	assert_int_equal(flush_drain(&fx->f, false), 3);
	assert_int_equal(flush_write(&fx->f), 0);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < l.n; i++)
		assert_string_equal(after_time(l.v[i]), want[i]);
	check_time(l.v[2], T_REAL_BASE + base + 500 * NS_PER_MS);  /* the mark at its line */
	assert_int_equal(atomic_load(&late), 10);       /* the reader's 7 (8 pushed here by hand) and 3 */
	assert_int_equal(atomic_load(&cs.marked), 3);
	assert_int_equal(atomic_load(&cs.unvouched), 0);
	free_lines(&l);
}

/*
 * A sensor silent for CLOCK_SILENT_NS cannot vouch: the line goes, marked; at stop
 * nothing waits. A port's two rings stay in time order while one of its lines waits.
 */
static void test_clock_silent_and_pair(void **state)
{
	struct fx *fx = *state;
	struct clock_sensor cs = { .fd = -1 };
	struct source *a = &fx->src[0], *b = &fx->src[1];
	int64_t base = mono_ns();
	struct lines l;

	fx_pair(fx);
	fx->f.rtc.c = &cs;
	source_set_horizon(a, INT64_MAX);
	source_set_horizon(b, INT64_MAX);
	sensor_says(&cs, base, -10000);
	push_read(a, base, -4100, -4000, 0, "old");            /* read 4 s ago: unvouched */
	push_read(a, base, 100, 110, 0, "A100");
	push_read(b, base, 50, 60, 0, "B50");
	push_read(b, base, 200, 210, 0, "B200");
	assert_int_equal(flush_drain(&fx->f, false), 1);       /* old; the rest waits */
	sensor_says(&cs, base, 100);
	assert_int_equal(flush_drain(&fx->f, false), 1);       /* B50; B200 waits behind A100 */
	assert_int_equal(flush_drain(&fx->f, true), 2);        /* stop: A100, B200, marked */
	assert_int_equal(flush_write(&fx->f), 0);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, 7);
	assert_non_null(strstr(l.v[0], "bytes=3 case=clock stage=machine joined=yes"));
	assert_non_null(strstr(l.v[1], "\"old\""));
	assert_non_null(strstr(l.v[2], "\"B50\""));
	assert_non_null(strstr(l.v[3], "a EV late-delivery"));
	assert_non_null(strstr(l.v[4], "\"A100\""));
	assert_non_null(strstr(l.v[5], "b EV late-delivery"));
	assert_non_null(strstr(l.v[5], "dir=tx"));
	assert_non_null(strstr(l.v[6], "\"B200\""));
	assert_int_equal(atomic_load(&cs.unvouched), 3);
	free_lines(&l);
}

/* A port's modem lines wait behind its RX line the clock sensor holds (one source in
 * the log: its lines in time order). */
static void test_clock_lines_follow(void **state)
{
	struct fx *fx = *state;
	struct clock_sensor cs = { .fd = -1 };
	struct rec lines = { .kind = REC_LINES, .a = 1, .b = 1 };
	int64_t base = mono_ns();
	struct lines l;

	fx->conf.logger.timestamp = CONF_TS_EPOCH;
	fx_sources(fx, 2, 64);
	fx->src[1].follows = &fx->src[0];
	fx_init(fx);
	fx->f.rtc.c = &cs;
	sensor_says(&cs, base, 0);
	push_read(&fx->src[0], base, 10, 20, 0, "A10");
	lines.t_mono = base + 15 * NS_PER_MS;
	lines.t_real = T_REAL_BASE + lines.t_mono;
	assert_true(source_push(&fx->src[1], &lines, NULL, 0));
	assert_int_equal(flush_drain(&fx->f, false), 0);       /* A10 waits, the LINES behind it */
	sensor_says(&cs, base, 100);
	assert_int_equal(flush_drain(&fx->f, false), 2);
	assert_int_equal(flush_write(&fx->f), 0);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, 2);
	assert_non_null(strstr(l.v[0], "\"A10\""));
	assert_non_null(strstr(l.v[1], " b LINES "));
	free_lines(&l);
}

/*
 * The two rings of one port (RX and TX) merge in time order: a record waits
 * while the other ring is empty and its producer's horizon says it may still
 * push an older one; a drop not yet reported holds that horizon at the lost
 * record's time; at stop nothing waits.
 */
static void test_pair_waits_for_horizon(void **state)
{
	static const char *const want[] = {
		"b RX 4 62303830 \"b080\"", "a RX 4 61313030 \"a100\"", "b DROP 1 65536 dir=tx",
		"a RX 4 61313630 \"a160\"", "a RX 4 61343030 \"a400\"",
	};
	struct fx *fx = *state;
	struct source *a = &fx->src[0], *b = &fx->src[1];
	struct lines l;

	fx_pair(fx);
	assert_true(push_label(a, 100, 'a', 3, 100));
	assert_int_equal(flush_drain(&fx->f, false), 0);       /* b has said nothing yet */
	source_set_horizon(b, 50);
	assert_int_equal(flush_drain(&fx->f, false), 0);
	assert_true(push_label(b, 80, 'b', 3, 80));             /* older: it goes first */
	source_set_horizon(b, 90);
	assert_int_equal(flush_drain(&fx->f, false), 1);       /* b080; a100 still waits */
	source_set_horizon(b, 200);
	assert_int_equal(flush_drain(&fx->f, false), 1);       /* a100 */
	/* b loses a record at 150: its horizon stays there until the DROP is pushed */
	assert_false(push(b, 150, filler, SOURCE_LEN_MAX + 1));
	source_set_horizon(b, 300);
	assert_int_equal(atomic_load(&b->horizon), 150);
	assert_true(push_label(a, 160, 'a', 3, 160));
	assert_int_equal(flush_drain(&fx->f, false), 0);
	assert_true(source_push_drops(b));
	assert_false(source_push_drops(b));                    /* nothing more to say */
	source_set_horizon(b, 300);
	assert_int_equal(flush_drain(&fx->f, false), 2);       /* the DROP, then a160 */
	assert_true(push_label(a, 400, 'a', 3, 400));
	assert_int_equal(flush_drain(&fx->f, false), 0);
	assert_int_equal(fx_flush(fx), 1);                      /* at stop nothing waits */
	read_lines(fx->path, &l);
	assert_int_equal(l.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < l.n; i++)
		assert_string_equal(after_time(l.v[i]), want[i]);
	assert_int_equal(a->accounted + b->accounted, 4 + 1);
	free_lines(&l);
}

static void test_merge_random_interleaving(void **state)
{
	enum { N = 3000 };
	struct fx *fx = *state;
	uint64_t rng = tu_mix(seed ^ 0x3e26e);
	unsigned char who[N];
	unsigned next[2] = { 0, 0 }, got[2] = { 0, 0 };
	uint32_t slots = 0;
	struct lines l;

	fx->conf.logger.timestamp = CONF_TS_EPOCH;
	fx_sources(fx, 2, 8192);
	fx_init(fx);
	/* globally increasing, distinct times; each record goes to a random source and
	 * sometimes takes two slots, so the heads of the two rings do not line up */
	for (unsigned i = 0; i < N; i++) {
		char label[200];
		uint32_t len;

		rng = tu_mix(rng);
		who[i] = (unsigned char)(rng & 1);
		len = (uint32_t)snprintf(label, sizeof(label), "%c%04u", "ab"[who[i]], next[who[i]]);
		if ((rng >> 8) % 4 == 0) {
			memset(label + len, '.', 100);
			len += 100;
		}
		next[who[i]]++;
		assert_true(push(&fx->src[who[i]], 1000 + 7 * (int64_t)i, label, len));
		slots += rec_slots(len);
	}
	assert_int_equal(fx_flush(fx), slots);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, N);
	for (unsigned i = 0; i < N; i++) {
		char want[16];
		const char *p = after_time(l.v[i]), *text;

		check_time(l.v[i], T_REAL_BASE + 1000 + 7 * (int64_t)i);
		assert_true(p[0] == "ab"[who[i]] && p[1] == ' ');
		text = strchr(p, '"');
		assert_non_null(text);
		snprintf(want, sizeof(want), "\"%c%04u", "ab"[who[i]], got[who[i]]++);
		assert_memory_equal(text, want, strlen(want));
	}
	assert_int_equal(got[0], next[0]);
	assert_int_equal(got[1], next[1]);
	free_lines(&l);
}

/*
 * The merge over many rings (a heap since issue 31): 300 rings, records pushed in
 * time order to random rings, times often equal (ties go in ring order, as the
 * scan before took them). Two of the rings are a port's pair whose TX side says
 * nothing: its RX records wait, while every other ring's flow past them; at stop
 * they come in their place. Every record once, in time order, ties by ring.
 */
static void test_merge_many_rings(void **state)
{
	enum { RINGS = 300, N = 20000 };
	struct fx *fx = *state;
	struct source *src = calloc(RINGS, sizeof(*src));
	struct parts *ps = calloc(1, sizeof(*ps));
	struct flusher f;
	uint64_t rng = tu_mix(seed ^ 0x300);
	unsigned *count = calloc(RINGS, sizeof(*count)), held = 0;
	int64_t t = 0, last_t = -1;
	long last_ring = -1;
	struct lines l;
	uint32_t slots = 0;

	assert_non_null(src);
	assert_non_null(ps);
	assert_non_null(count);
	fx->conf.logger.timestamp = CONF_TS_EPOCH;
	parts_init(ps);
	for (unsigned i = 0; i < RINGS; i++) {
		char name[8];

		snprintf(name, sizeof(name), "r%03u", i);
		assert_int_equal(source_init(&src[i], name, 256), 0);
		assert_true(parts_add(ps, &(struct part){ .kind = PART_SERIAL, .port = src[i].name,
						      .src = &src[i] }, NULL));
	}
	src[7].pair = &src[8];      /* a port's RX (7) and TX (8); TX says nothing */
	src[8].pair = &src[7];
	src[8].dir = REC_DIR_TX;
	assert_int_equal(flush_init(&f, &fx->conf, ps, fx->err, sizeof(fx->err)), 0);
	for (unsigned k = 0; k < N; k++) {
		unsigned i;

		rng = tu_mix(rng);
		i = (unsigned)(rng % RINGS);
		if (i == 8 || count[i] == 64)
			continue;       /* the silent TX side; a full ring */
		t += (int64_t)((rng >> 32) % 3);        /* 0: a tie */
		assert_true(push_label(&src[i], t, 'r', 3, i));
		count[i]++;
		held += i == 7;
	}
	for (unsigned i = 0; i < RINGS; i++)
		slots += count[i];
	assert_true(held > 0);
	assert_int_equal(flush_drain(&f, false), slots - held);
	assert_int_equal(flush_drain(&f, true), held);     /* at stop nothing waits */
	assert_int_equal(flush_write(&f), 0);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, slots);
	/* first every other ring's lines by time, ties by ring; then the held ones */
	for (size_t j = 0; j < l.n; j++) {
		long long sec, tt;
		long ring;

		assert_int_equal(sscanf(l.v[j], "%lld.%lld r%ld ", &sec, &tt, &ring), 3);
		assert_true((ring == 7) == (j >= l.n - held));
		if (j > 0 && j != l.n - held)
			assert_true(tt > last_t || (tt == last_t && ring >= last_ring));
		last_t = tt;
		last_ring = ring;
	}
	free_lines(&l);
	flush_fini(&f);
	for (unsigned i = 0; i < RINGS; i++)
		source_fini(&src[i]);
	free(src);
	parts_fini(ps);
	free(ps);
	free(count);
}

/* ---- payloads and events ---- */

static void test_rx_multislot_rejoined(void **state)
{
	struct fx *fx = *state;
	uint64_t rng = tu_mix(seed ^ 0x4096);
	uint8_t big[4096], mid[81];
	struct lines l;

	fx_sources(fx, 1, 256);
	fx_init(fx);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)((rng = tu_mix(rng)) >> 56);
	for (size_t i = 0; i < sizeof(mid); i++)
		mid[i] = (uint8_t)(' ' + i);
	assert_true(push(&fx->src[0], 1, "abc", 3));
	assert_true(push(&fx->src[0], 2, big, sizeof(big)));
	assert_true(push(&fx->src[0], 3, mid, sizeof(mid)));
	assert_int_equal(ring_fill(&fx->src[0].ring), 1 + 33 + 2);
	assert_int_equal(fx_flush(fx), 1 + 33 + 2);
	assert_int_equal(ring_fill(&fx->src[0].ring), 0);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, 3);
	check_rx(l.v[0], "a", (const uint8_t *)"abc", 3);
	check_rx(l.v[1], "a", big, sizeof(big));
	check_rx(l.v[2], "a", mid, sizeof(mid));
	free_lines(&l);
}

static void test_ev_lines(void **state)
{
	struct fx *fx = *state;
	char longtext[601], want_long[SOURCE_EV_MAX + 16];
	struct lines l;

	fx_sources(fx, 1, 256);
	fx_init(fx);
	memset(longtext, 'x', sizeof(longtext) - 1);
	longtext[sizeof(longtext) - 1] = '\0';
	assert_true(source_event(&fx->src[0], EV_OPEN, 0, "device=/dev/ttyUSB0 driver=sp baud=9600"));
	assert_true(source_event(&fx->src[0], EV_ERROR, ENOENT, "op=open device=/dev/ttyUSB9"));
	assert_true(source_event(&fx->src[0], EV_CLOSE, 0, ""));
	assert_true(source_event(&fx->src[0], EV_CLOSE, EIO, "reason=read-error"));
	assert_true(source_event(&fx->src[0], EV_START, 99999, "pid=1"));
	assert_true(source_event(&fx->src[0], EV_STOP, 0, longtext));   /* multi-slot */
	fx_flush(fx);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, 6);
	assert_string_equal(after_time(l.v[0]), "a EV open device=/dev/ttyUSB0 driver=sp baud=9600");
	assert_string_equal(after_time(l.v[1]), "a EV error op=open device=/dev/ttyUSB9 errno=ENOENT");
	assert_string_equal(after_time(l.v[2]), "a EV close");
	assert_string_equal(after_time(l.v[3]), "a EV close reason=read-error errno=EIO");
	assert_string_equal(after_time(l.v[4]), "a EV start pid=1 errno=99999");
	/* event texts are cut at SOURCE_EV_MAX */
	snprintf(want_long, sizeof(want_long), "a EV stop %.*s", SOURCE_EV_MAX, longtext);
	assert_string_equal(after_time(l.v[5]), want_long);
	free_lines(&l);
}

/* A record of a kind no table names (a producer's bug) is never dropped silently:
 * an EV bad-record line stands at its place, counted, and the source's
 * accounting still adds up; the records around it are untouched. */
static void test_unknown_kind_said(void **state)
{
	struct fx *fx = *state;
	struct rec bad = { .t_real = T_REAL_BASE + 2, .t_mono = 2, .kind = 200 };
	struct lines l;

	fx->conf.logger.timestamp = CONF_TS_EPOCH;
	fx_sources(fx, 1, 16);
	fx_init(fx);
	assert_true(push_label(&fx->src[0], 1, 'r', 2, 1));
	assert_true(source_push(&fx->src[0], &bad, "junk", 4));
	bad.kind = 0;
	bad.t_mono = 3;
	bad.t_real = T_REAL_BASE + 3;
	assert_true(source_push(&fx->src[0], &bad, NULL, 0));
	assert_true(push_label(&fx->src[0], 4, 'r', 2, 4));
	fx_flush(fx);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, 4);
	assert_string_equal(after_time(l.v[0]), "a RX 3 723031 \"r01\"");
	check_time(l.v[1], T_REAL_BASE + 2);
	assert_string_equal(after_time(l.v[1]), "a EV bad-record kind=200 seq=1 count=1");
	assert_string_equal(after_time(l.v[2]), "a EV bad-record kind=0 seq=2 count=2");
	assert_string_equal(after_time(l.v[3]), "a RX 3 723034 \"r04\"");
	assert_int_equal(fx->f.bad_records, 2);
	assert_int_equal(fx->src[0].accounted, atomic_load(&fx->src[0].records));
	assert_int_equal(atomic_load(&fx->f.lines), 4);
	free_lines(&l);
}

/* ---- drops ---- */

static void test_drop_lines(void **state)
{
	struct fx *fx = *state;
	struct lines l;
	size_t i = 0;

	fx->conf.logger.timestamp = CONF_TS_EPOCH;
	fx_sources(fx, 1, 16);
	fx_init(fx);
	for (unsigned k = 0; k < 16; k++)
		assert_true(push_label(&fx->src[0], k, 'r', 5, k));
	assert_false(push(&fx->src[0], 16, "12345", 5));
	assert_false(push(&fx->src[0], 17, filler, 300));
	assert_false(push(&fx->src[0], 18, "", 0));
	assert_int_equal(fx_flush(fx), 16);
	/* the gap is reported with the next record that fits */
	assert_true(push_label(&fx->src[0], 19, 'r', 3, 19));
	for (unsigned k = 20; k < 34; k++)
		assert_true(push_label(&fx->src[0], k, 'r', 5, k));
	assert_false(push(&fx->src[0], 34, "x", 1));
	assert_false(push(&fx->src[0], 35, "xy", 2));
	assert_int_equal(fx_flush(fx), 16);
	assert_true(push_label(&fx->src[0], 36, 'r', 4, 36));
	assert_int_equal(fx_flush(fx), 2);

	read_lines(fx->path, &l);
	assert_int_equal(l.n, 16 + 1 + 1 + 14 + 1 + 1);
	assert_int_equal(count_kind(&l, " DROP "), 2);
	assert_int_equal(count_kind(&l, "seq-gap"), 0);
	for (unsigned k = 0; k < 16; k++, i++)
		check_time(l.v[i], T_REAL_BASE + k);
	/* DROP at the time of the first record lost, with the exact counts */
	check_time(l.v[i], T_REAL_BASE + 16);
	assert_string_equal(after_time(l.v[i++]), "a DROP 3 305");
	assert_string_equal(after_time(l.v[i++]), "a RX 4 72303139 \"r019\"");
	for (unsigned k = 20; k < 34; k++, i++)
		check_time(l.v[i], T_REAL_BASE + k);
	check_time(l.v[i], T_REAL_BASE + 34);
	assert_string_equal(after_time(l.v[i++]), "a DROP 2 3");   /* the delta, not the total */
	assert_string_equal(after_time(l.v[i++]), "a RX 5 7230303336 \"r0036\"");
	free_lines(&l);
}

/* Drops that no later record can carry are written by the final accounting. */
static void test_drop_at_stop(void **state)
{
	struct fx *fx = *state;
	struct lines l;
	int degraded = 0;
	size_t i = 0;

	fx->conf.logger.timestamp = CONF_TS_EPOCH;
	fx_sources(fx, 2, 16);
	fx_init(fx);
	for (unsigned k = 0; k < 16; k++)
		assert_true(push_label(&fx->src[0], k, 'r', 5, k));
	assert_false(push(&fx->src[0], 16, "abc", 3));
	assert_false(push(&fx->src[0], 17, "abcd", 4));
	assert_int_equal(fx_flush(fx), 16);
	assert_true(push_label(&fx->src[0], 18, 'r', 5, 18));    /* carries DROP 2 7 */
	for (unsigned k = 19; k < 33; k++)
		assert_true(push_label(&fx->src[0], k, 'r', 5, k));
	assert_int_equal(ring_fill(&fx->src[0].ring), 16);
	assert_false(push(&fx->src[0], 33, filler, 10));
	assert_false(push(&fx->src[0], 34, filler, 20));
	assert_false(push(&fx->src[0], 35, filler, 30));
	for (unsigned k = 0; k < 3; k++)
		assert_true(push_label(&fx->src[1], 100 + k, 'b', 4, k));

	assert_int_equal(flush_start(&fx->f, &degraded), 0);
	flush_stop(&fx->f);
	assert_int_equal(ring_fill(&fx->src[0].ring), 0);
	assert_int_equal(ring_fill(&fx->src[1].ring), 0);

	read_lines(fx->path, &l);
	assert_int_equal(l.n, 16 + 1 + 15 + 3 + 1);
	assert_true(l.clock >= 2);      /* at start and with the final round, maybe a change */
	assert_int_equal(count_kind(&l, " DROP "), 2);
	assert_int_equal(count_kind(&l, " b DROP "), 0);
	assert_int_equal(count_kind(&l, "seq-gap"), 0);
	i = 16;
	check_time(l.v[i], T_REAL_BASE + 16);
	assert_string_equal(after_time(l.v[i++]), "a DROP 2 7");
	for (unsigned k = 18; k < 33; k++, i++)
		check_time(l.v[i], T_REAL_BASE + k);
	for (unsigned k = 0; k < 3; k++, i++)
		check_time(l.v[i], T_REAL_BASE + 100 + k);
	check_time(l.v[i], T_REAL_BASE + 33);
	assert_string_equal(after_time(l.v[i++]), "a DROP 3 60");
	assert_int_equal(i, l.n);
	free_lines(&l);
}

/* ---- the journal's share, the watchdog's beats ---- */

/* Runs the flusher from start to stop with its echo to stderr, which is a pipe
 * meanwhile; returns what it said there (malloc'd). */
static char *echo_run(struct fx *fx)
{
	int p[2], saved, degraded = 0;
	char *out = malloc(65536);
	size_t n = 0;
	ssize_t k;

	assert_non_null(out);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	saved = dup(2);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(p[1], 2), 2);
	close(p[1]);
	fx->f.echo = true;      /* log_init's sink: stderr, sent at once (no log_start) */
	if (flush_start(&fx->f, &degraded) == 0)
		flush_stop(&fx->f);
	fflush(stderr);
	(void)dup2(saved, 2);   /* the pipe's last writer gone: read to its end */
	close(saved);
	while ((k = read(p[0], out + n, 65535 - n)) > 0)
		n += (size_t)k;
	close(p[0]);
	out[n] = '\0';
	return out;
}

static unsigned count_text(const char *text, const char *needle)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/*
 * A hundred EV late-delivery records at once (a stalling machine): the journal
 * hears the first LOG_LIMIT_BURST and one message that says how many more the
 * log has; a notice among them and a DROP pass whatever the share; the log has
 * every line.
 */
static void test_journal_share(void **state)
{
	struct fx *fx = *state;
	char want[160], *out;
	struct lines l;

	fx->conf.logger.timestamp = CONF_TS_EPOCH;
	fx_sources(fx, 1, 256);
	fx_init(fx);
	for (unsigned k = 0; k < 100; k++) {
		char text[64];

		snprintf(text, sizeof(text), "wait_us=%u bytes=1 case=stall stage=cpu joined=no", k);
		assert_true(source_event(&fx->src[0], EV_LATE, 0, text));
		if (k == 50)
			assert_true(source_event(&fx->src[0], EV_OPEN, 0, "device=/dev/ttyS0"));
	}
	out = echo_run(fx);
	assert_int_equal(count_text(out, "portlogd: a EV late-delivery wait_us="), LOG_LIMIT_BURST);
	assert_non_null(strstr(out, "portlogd: a EV late-delivery wait_us=9 bytes=1 "));
	assert_int_equal(count_text(out, "portlogd: a EV open device=/dev/ttyS0"), 1);
	snprintf(want, sizeof(want), "portlogd: a: %d info events (EV late-delivery) were not sent "
		 "to the journal: it hears %d at once, then %d a minute, of each source; the log file "
		 "has every one\n", 100 - LOG_LIMIT_BURST, LOG_LIMIT_BURST, 60 / LOG_LIMIT_EVERY_S);
	if (count_text(out, want) != 1)
		fail_msg("not once: %swhat the journal heard:\n%s", want, out);
	free(out);
	read_lines(fx->path, &l);
	assert_int_equal(count_kind(&l, " a EV late-delivery "), 100);
	free_lines(&l);
}

/* The bucket itself: LOG_LIMIT_BURST at once, then one every LOG_LIMIT_EVERY_S; the
 * summary takes a token too, and at stop (force) is said without one. */
static void test_journal_share_bucket(void **state)
{
	const int64_t t0 = 5 * NS_PER_S, every = (int64_t)LOG_LIMIT_EVERY_S * NS_PER_S;
	struct log_limit lim = { 0 };

	(void)state;
	for (int i = 0; i < LOG_LIMIT_BURST; i++)
		assert_true(log_limit_take(&lim, t0));
	assert_false(log_limit_take(&lim, t0));
	assert_false(log_limit_take(&lim, t0 + every - 1));
	assert_int_equal(lim.suppressed, 2);
	assert_int_equal(log_limit_summary(&lim, t0 + every - 1, false), 0);   /* no token yet */
	assert_int_equal(log_limit_summary(&lim, t0 + every, false), 2);       /* takes it */
	assert_int_equal(lim.suppressed, 0);
	assert_false(log_limit_take(&lim, t0 + every));
	assert_true(log_limit_take(&lim, t0 + 2 * every));
	assert_int_equal(log_limit_summary(&lim, t0 + 2 * every, true), 1);   /* at stop */
	assert_int_equal(log_limit_summary(&lim, t0 + 2 * every, true), 0);   /* nothing held */
	/* a quiet spell fills the bucket again, no more than full */
	for (int i = 0; i < LOG_LIMIT_BURST; i++)
		assert_true(log_limit_take(&lim, t0 + 1000 * every));
	assert_false(log_limit_take(&lim, t0 + 1000 * every));
}

/*
 * A drain with a lot to write is progress: the flusher tells the watchdog so
 * while it writes (every 256 records), not only when it comes back to its wait;
 * a flusher stuck in one write never gets there (health.h).
 */
static void test_long_drain_beats(void **state)
{
	struct fx *fx = *state;
	uint64_t before;
	uint32_t slots;

	fx_sources(fx, 1, 4096);
	fx_init(fx);
	for (unsigned k = 0; k < 4000; k++)
		assert_true(push_label(&fx->src[0], k, 'r', 5, k));
	before = atomic_load(&fx->f.beat.beats);
	slots = fx_flush(fx);
	assert_int_equal(slots, 4000);
	assert_true(atomic_load(&fx->f.beat.beats) - before >= slots / 256);
}

/* ---- the file: repair, reopen, errors ---- */

static void write_file(const char *path, const char *data, size_t len)
{
	FILE *fp = fopen(path, "wb");

	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

/* An incomplete last line is cut at start (test_logfile has every case): the EV line says it. */
static void test_repair_said(void **state)
{
	struct fx *fx = *state;
	struct lines l;

	fx_sources(fx, 1, 16);
	write_file(fx->path, "x 1\nx 2\nzzzzzzz", 15);
	fx_init(fx);
	assert_int_equal(flush_write(&fx->f), 0);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.v[1], "x 2");
	assert_string_equal(after_time(l.v[2]), "portlogd EV repair cut=7 reason=incomplete-last-line");
	free_lines(&l);
}

static void collect(const struct lines *l, unsigned char *seen, unsigned n,
		    unsigned *lo, unsigned *hi)
{
	*lo = n;
	*hi = 0;
	for (size_t i = 0; i < l->n; i++) {
		const char *p = strstr(l->v[i], " a RX 6 ");
		unsigned k;

		if (p == NULL)
			continue;
		p = strchr(p, '"');
		assert_non_null(p);
		assert_int_equal(sscanf(p, "\"r%5u\"", &k), 1);
		assert_true(k < n);
		assert_int_equal(seen[k], 0);   /* no line twice */
		seen[k] = 1;
		if (k < *lo)
			*lo = k;
		if (k > *hi)
			*hi = k;
	}
}

static void run_reopen(struct fx *fx, bool wait_for_reopen)
{
	enum { N1 = 3000, N2 = 3000 };
	char old[CONF_PATH_MAX + 8], want[CONF_PATH_MAX + 32];
	unsigned char seen[N1 + N2] = { 0 };
	unsigned lo_old, hi_old, lo_new, hi_new;
	struct lines lo, ln;
	int degraded = 0;

	fx_sources(fx, 1, 8192);        /* never fills: every record must arrive */
	fx_init(fx);
	assert_int_equal(flush_start(&fx->f, &degraded), 0);
	for (unsigned k = 0; k < N1; k++)
		assert_true(push_label(&fx->src[0], k, 'r', 5, k));
	snprintf(old, sizeof(old), "%s.1", fx->path);
	assert_int_equal(rename(fx->path, old), 0);
	flush_reopen(&fx->f);
	if (wait_for_reopen) {
		/* not a guess at timing: the flusher signals reopened_fd once it reopened */
		struct pollfd pfd = { .fd = fx->f.reopened_fd, .events = POLLIN };

		assert_int_equal(poll(&pfd, 1, 10000), 1);
	}
	for (unsigned k = N1; k < N1 + N2; k++)
		assert_true(push_label(&fx->src[0], k, 'r', 5, k));
	flush_stop(&fx->f);
	assert_int_equal(atomic_load(&fx->src[0].dropped), 0);

	read_lines(old, &lo);
	read_lines(fx->path, &ln);
	collect(&lo, seen, N1 + N2, &lo_old, &hi_old);
	collect(&ln, seen, N1 + N2, &lo_new, &hi_new);
	for (unsigned k = 0; k < N1 + N2; k++)
		if (!seen[k])
			fail_msg("record %u is in neither file", k);
	assert_int_equal(lo.n + ln.n, N1 + N2 + 1);
	/* the reopen line opens the new file, and the old file ends before it */
	snprintf(want, sizeof(want), "portlogd EV reopen file=%s", fx->path);
	assert_true(ln.n >= 1);
	assert_string_equal(after_time(ln.v[0]), want);
	assert_int_equal(count_kind(&lo, " EV reopen "), 0);
	assert_int_equal(count_kind(&ln, " EV reopen "), 1);
	if (lo.n > 0 && ln.n > 1)
		assert_true(hi_old < lo_new);
	if (wait_for_reopen) {
		/* everything pushed before the request was drained into the old file */
		assert_int_equal(lo.n, N1);
		assert_int_equal(lo_old, 0);
		assert_int_equal(hi_old, N1 - 1);
		assert_int_equal(lo_new, N1);
		assert_int_equal(hi_new, N1 + N2 - 1);
	}
	free_lines(&lo);
	free_lines(&ln);
}

static void test_reopen_while_running(void **state)
{
	run_reopen(*state, false);
}

static void test_reopen_handled_before_more(void **state)
{
	run_reopen(*state, true);
}

static void test_init_missing_directory(void **state)
{
	struct fx *fx = *state;
	int rc;

	snprintf(fx->conf.logger.log_file, sizeof(fx->conf.logger.log_file),
		 "%s/missing/portlogd.log", fx->dir);
	fx_sources(fx, 1, 16);
	rc = flush_init(&fx->f, &fx->conf, fx_parts(fx), fx->err, sizeof(fx->err));
	assert_int_equal(rc, -ENOENT);
	if (strstr(fx->err, fx->conf.logger.log_file) == NULL)
		fail_msg("the message does not name the path: %s", fx->err);
	flush_fini(&fx->f);     /* safe after a failed init */
}

/*
 * EIO: the lines stay in the buffer (test_logfile checks the back-off), and once
 * writing works they go out, followed by an EV write-recovered line with the
 * errno, the tries and the records dropped meanwhile.
 */
static void test_write_error_recovered(void **state)
{
	struct fx *fx = *state;
	struct lines l;

	fx->conf.logger.timestamp = CONF_TS_EPOCH;
	fx_sources(fx, 1, 16);
	fx_init(fx);
	for (unsigned k = 0; k < 3; k++)
		assert_true(push_label(&fx->src[0], k, 'r', 4, k));
	failio_fd = fx->f.log.fd;
	failio_errno = EIO;
	failio_writes = 0;
	assert_int_equal(flush_drain(&fx->f, true), 3);
	for (unsigned i = 0; i < 8; i++) {
		assert_int_equal(flush_write(&fx->f), -EIO);
		assert_int_equal(failio_writes, i + 1);
		logfile_retry_now(&fx->f.log);  /* let the back-off time pass */
	}
	assert_true(fx->f.log.len > 0);     /* nothing thrown away */
	assert_int_equal(atomic_load(&fx->f.log.write_errors), 8);
	failio_errno = 0;
	assert_int_equal(flush_write(&fx->f), 0);
	assert_int_equal(fx->f.log.write_errno, 0);
	assert_int_equal(flush_write(&fx->f), 0);      /* the EV line said after the lines */
	failio_fd = -1;
	read_lines(fx->path, &l);
	assert_int_equal(l.n, 4);
	assert_string_equal(after_time(l.v[0]), "a RX 5 7230303030 \"r0000\"");
	assert_string_equal(after_time(l.v[2]), "a RX 5 7230303032 \"r0002\"");
	if (strncmp(after_time(l.v[3]), "portlogd EV write-recovered errno=EIO down_ms=", 46) != 0
	    || strlen(l.v[3]) < 21
	    || strcmp(l.v[3] + strlen(l.v[3]) - 21, " failures=8 dropped=0") != 0)
		fail_msg("not a write-recovered line: %s", l.v[3]);
	free_lines(&l);
}

/* The log file removed (rm), then its directory: a new one of each, said in the log. */
static void test_removed_log_replaced(void **state)
{
	struct fx *fx = *state;
	char sub[80];
	struct lines l;

	snprintf(sub, sizeof(sub), "%s/logs", fx->dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(fx->conf.logger.log_file, sizeof(fx->conf.logger.log_file), "%s/p.log", sub);
	fx_sources(fx, 1, 16);
	fx_init(fx);
	assert_true(push_label(&fx->src[0], 0, 'r', 4, 0));
	fx_flush(fx);
	/* k = 1: the file removed; k = 2: the file and its directory */
	for (unsigned k = 1; k <= 2; k++) {
		char want[64];

		assert_int_equal(unlink(fx->conf.logger.log_file), 0);
		if (k == 2)
			assert_int_equal(rmdir(sub), 0);
		assert_true(push_label(&fx->src[0], k, 'r', 4, k));
		fx_flush(fx);
		read_lines(fx->conf.logger.log_file, &l);
		assert_int_equal(l.n, 2);
		assert_string_equal(after_time(l.v[0]), "portlogd EV reopen reason=removed");
		snprintf(want, sizeof(want), "a RX 5 723030303%u \"r000%u\"", k, k);
		assert_string_equal(after_time(l.v[1]), want);
		free_lines(&l);
	}
	flush_fini(&fx->f);
	fx->f_open = false;
	unlink(fx->conf.logger.log_file);
	rmdir(sub);
}

/*
 * The disk fills in the middle of a line, then the log is removed to make room:
 * the new file must not start with the rest of that line. It is cut, and the
 * reopen line says how many bytes (cut=).
 */
static void test_torn_line_not_carried_over(void **state)
{
	struct fx *fx = *state;
	char want[64];
	const char *nl;
	size_t first_len;
	struct lines l;

	fx_sources(fx, 1, 16);
	fx_init(fx);
	for (unsigned k = 0; k < 3; k++)
		assert_true(push_label(&fx->src[0], k, 'r', 4, k));
	assert_int_equal(flush_drain(&fx->f, true), 3);
	nl = memchr(fx->f.log.buf, '\n', fx->f.log.len);
	assert_non_null(nl);
	first_len = (size_t)(nl + 1 - fx->f.log.buf);
	failio_fd = fx->f.log.fd;
	failio_errno = 0;
	failio_short = 10;
	assert_int_equal(flush_write(&fx->f), -ENOSPC);
	assert_int_equal(unlink(fx->path), 0);
	failio_fd = -1;
	failio_errno = 0;
	logfile_retry_now(&fx->f.log);
	assert_int_equal(flush_write(&fx->f), 0);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, 3);
	snprintf(want, sizeof(want), "portlogd EV reopen reason=removed cut=%zu", first_len - 10);
	assert_string_equal(after_time(l.v[0]), want);
	assert_string_equal(after_time(l.v[1]), "a RX 5 7230303031 \"r0001\"");
	assert_string_equal(after_time(l.v[2]), "a RX 5 7230303032 \"r0002\"");
	free_lines(&l);
}

/* A SIGHUP while the flusher reopens (a second rotation) is not lost: a second reopen. */
static void test_hup_during_reopen(void **state)
{
	struct fx *fx = *state;
	struct pollfd pfd;
	uint64_t done = 0, v;
	int degraded = 0;

	fx->conf.logger.flush_interval_ms = 60000;  /* no write but the reopen's */
	fx_sources(fx, 1, 16);
	fx_init(fx);
	assert_int_equal(flush_start(&fx->f, &degraded), 0);
	assert_true(push_label(&fx->src[0], 0, 'r', 4, 0));
	failio_fd = fx->f.log.fd;
	failio_hook = hup_hook;
	hup_in_write = &fx->f;
	flush_reopen(&fx->f);
	pfd = (struct pollfd){ .fd = fx->f.reopened_fd, .events = POLLIN };
	while (done < 2 && poll(&pfd, 1, 10000) == 1 && read(pfd.fd, &v, sizeof(v)) == sizeof(v))
		done += v;
	failio_fd = -1;
	assert_null(atomic_load(&hup_in_write));     /* the write did come */
	flush_stop(&fx->f);
	assert_int_equal(done, 2);
}

/* Missed timer periods (the overruns of a part without a ring) found while the
 * buffer is full wait for room: the OVERRUN line that finally says them has every one. */
static void test_overrun_waits_for_room(void **state)
{
	struct fx *fx = *state;
	struct timer t;
	struct parts ps;
	size_t len;
	struct lines l;

	fx_sources(fx, 1, 16);
	fx_init(fx);
	timer_init(&t, &fx->conf.timer, NULL, 0);
	parts_init(&ps);
	assert_true(timer_parts(&t, &ps));     /* a part without a ring */
	atomic_store(&t.st.missed, 7);
	len = fx->f.log.len;
	fx->f.log.len = fx->f.log.cap - 60;        /* unwritten lines fill the buffer */
	stat_hook(&ps, &fx->f, false, false);
	assert_int_equal(fx->f.log.len, fx->f.log.cap - 60);   /* no room: nothing said */
	atomic_store(&t.st.missed, 9);
	fx->f.log.len = len;                        /* written meanwhile */
	stat_hook(&ps, &fx->f, false, false);
	assert_int_equal(flush_write(&fx->f), 0);
	read_lines(fx->path, &l);
	assert_int_equal(l.n, 1);
	assert_string_equal(after_time(l.v[0]), "portlogd OVERRUN 9");
	free_lines(&l);
	parts_fini(&ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_merge_keeps_source_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_random_interleaving, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_many_rings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pair_waits_for_horizon, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clock_stop_marks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clock_silent_and_pair, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clock_lines_follow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_multislot_rejoined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ev_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_kind_said, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_at_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_said, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_while_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_handled_before_more, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_missing_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_error_recovered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_removed_log_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_line_not_carried_over, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hup_during_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overrun_waits_for_room, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_share, setup, teardown),
		cmocka_unit_test(test_journal_share_bucket),
		cmocka_unit_test_setup_teardown(test_long_drain_beats, setup, teardown),
	};

	seed = tu_seed("test_flush");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
