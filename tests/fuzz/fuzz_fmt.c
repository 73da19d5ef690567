/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_fmt.c - libFuzzer target: log lines of every kind, read back.
 *
 * Input: a flags byte (timestamp, payload), the time (8 bytes), a source name
 * (a length byte and as many bytes, mapped to the characters a name may have),
 * numbers for DROP and IN (25 bytes), the cap of a truncated EV text (1 byte),
 * a record kind (1 byte), then the payload. Each line (all made by fmt_record)
 * must end with its only '\n', be no longer than its bound, start with TIME
 * SOURCE KIND, and give back what was formatted: the time, the numbers, and the
 * payload from the HEX and TEXT fields; a kind the table lacks makes no line.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "fuzz.h"
#include "logline.h"

#define MAX_FIELDS 8

struct in {
	const uint8_t *p, *end;
};

static uint64_t take(struct in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v = v << 8 | (in->p < in->end ? *in->p++ : 0);
	return v;
}

/* Splits a whole line into its space-separated fields (in place: the spaces and
 * the newline become NULs); checks there is one newline, at the end, and no
 * empty field. Returns the number of fields. */
static int split(char *line, size_t n, char **field)
{
	int nf = 0;

	CHECK(n > 0 && line[n - 1] == '\n');
	CHECK(memchr(line, '\n', n - 1) == NULL);
	CHECK(memchr(line, '\0', n) == NULL);
	line[n - 1] = '\0';
	for (char *f = line; f != NULL; nf++) {
		char *sp = strchr(f, ' ');

		CHECK(nf < MAX_FIELDS);
		field[nf] = f;
		if (sp != NULL)
			*sp++ = '\0';
		CHECK(*f != '\0');
		f = sp;
	}
	return nf;
}

static uint64_t digits(const char *s, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++) {
		CHECK(s[i] >= '0' && s[i] <= '9');
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	return v;
}

/* TIME is t_real, as ISO 8601 UTC or epoch seconds. */
static void check_time(const char *s, enum conf_ts ts, int64_t t_real)
{
	int64_t sec = t_real / 1000000000, nsec = t_real % 1000000000;

	CHECK(strlen(s) <= FMT_TIME_MAX);
	if (ts == CONF_TS_EPOCH) {
		bool neg = s[0] == '-';
		const char *dot = strchr(s, '.');
		uint64_t mag = t_real < 0 ? (uint64_t)0 - (uint64_t)t_real : (uint64_t)t_real;

		CHECK(neg == (t_real < 0));
		CHECK(dot != NULL && strlen(dot + 1) == 9 && dot > s + neg);
		CHECK(digits(s + neg, (size_t)(dot - s - neg)) == mag / 1000000000);
		CHECK(digits(dot + 1, 9) == mag % 1000000000);
		return;
	}
	if (nsec < 0) {
		nsec += 1000000000;
		sec--;
	}
	/* YYYY-MM-DDTHH:MM:SS.NNNNNNNNNZ; int64 ns stay within years 1677..2262; the
	 * date read back by the log's parser (logline.c, written apart from fmt) */
	CHECK(strlen(s) == 30 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' &&
	      s[16] == ':' && s[19] == '.' && s[29] == 'Z');
	{
		int64_t back;

		CHECK(logline_time(s, 30, &back) == 0 && back == t_real);
	}
	CHECK(digits(s + 20, 9) == (uint64_t)nsec);
}

static unsigned hexdigit(char c)
{
	int v = logline_hexval(c);

	CHECK(v >= 0);
	return (unsigned)v;
}

/* Decodes TEXT escapes of s[0..n) (well formed and within cap bytes, or the run
 * stops) into out; returns the length. */
static size_t unescape(const char *s, size_t n, uint8_t *out, size_t cap)
{
	long len = logline_unescape(s, n, out, cap);

	CHECK(len >= 0);
	return (size_t)len;
}

static void check_head(char **field, const struct fmt *f, int64_t t, const char *src,
		       const char *kind)
{
	check_time(field[0], f->ts, t);
	CHECK(strcmp(field[1], src) == 0);
	CHECK(strcmp(field[2], kind) == 0);
}

static void check_rx(struct fmt *f, int64_t t, const char *src, const uint8_t *data,
		     size_t len)
{
	size_t max = fmt_rx_max(len), n;
	char *line = malloc(max), *field[MAX_FIELDS];
	uint8_t *back = malloc(len + 1);
	int nf, i = 4;

	CHECK(line != NULL && back != NULL);
	n = fmt_record(f, line, src, &(struct rec){ .kind = REC_RX, .t_real = t }, data, len, 0);
	CHECK(n <= max);
	nf = split(line, n, field);
	CHECK(nf == 4 + !!(f->payload & CONF_PAYLOAD_HEX) + !!(f->payload & CONF_PAYLOAD_TEXT));
	check_head(field, f, t, src, "RX");
	CHECK(digits(field[3], strlen(field[3])) == len);
	if (f->payload & CONF_PAYLOAD_HEX) {
		const char *h = field[i++];

		if (len == 0) {
			CHECK(strcmp(h, "-") == 0);
		} else {
			CHECK(strlen(h) == 2 * len);
			for (size_t k = 0; k < len; k++)
				CHECK((hexdigit(h[2 * k]) << 4 | hexdigit(h[2 * k + 1])) == data[k]);
		}
	}
	if (f->payload & CONF_PAYLOAD_TEXT) {
		const char *q = field[i];
		size_t ql = strlen(q);

		CHECK(ql >= 2 && q[0] == '"' && q[ql - 1] == '"');
		CHECK(unescape(q + 1, ql - 2, back, len + 1) == len && memcmp(back, data, len) == 0);
	}
	free(back);
	free(line);
}

/* An EV line with one key whose value is the payload up to its first NUL. */
static void check_ev(struct fmt *f, int64_t t, const char *src, const uint8_t *data,
		     size_t len, size_t small_cap)
{
	char *value = malloc(len + 1), *text, *line, *field[MAX_FIELDS];
	size_t vlen, cap, n, max;
	struct fmt_kv kv;
	uint8_t *back;

	CHECK(value != NULL);
	memcpy(value, data, len);
	value[len] = '\0';
	vlen = strlen(value);
	cap = 4 * vlen + 16;
	text = malloc(cap);
	back = malloc(vlen + 1);
	max = fmt_line_max(cap);
	line = malloc(max);
	CHECK(text != NULL && back != NULL && line != NULL);
	fmt_kv_init(&kv, text, cap);
	fmt_kv_str(&kv, "v", value);
	CHECK(kv.len < cap && strlen(text) == kv.len);
	n = fmt_record(f, line, src, &(struct rec){ .kind = REC_EV, .t_real = t, .a = EV_OPEN },
		       text, kv.len, 0);
	CHECK(n <= max);
	/* fields beyond FMT_FIELDS_MAX are cut, maybe inside an escape: no round trip */
	if (kv.len <= FMT_FIELDS_MAX) {
		CHECK(split(line, n, field) == 5);
		check_head(field, f, t, src, "EV");
		CHECK(strcmp(field[3], "open") == 0 && strncmp(field[4], "v=", 2) == 0);
		CHECK(unescape(field[4] + 2, strlen(field[4] + 2), back, vlen + 1) == vlen);
		CHECK(memcmp(back, value, vlen) == 0);
	}

	/* too small a text: cut whole escapes, NUL-terminated, within cap */
	fmt_kv_init(&kv, text, small_cap);
	fmt_kv_str(&kv, "v", value);
	CHECK(kv.len < small_cap && strlen(text) == kv.len);
	if (kv.len > 0) {
		CHECK(strncmp(text, "v=", 2) == 0);
		n = unescape(text + 2, kv.len - 2, back, vlen + 1);
		CHECK(n <= vlen && memcmp(back, value, n) == 0);
	}
	free(line);
	free(back);
	free(text);
	free(value);
}

static void check_drop_in(struct fmt *f, int64_t t, const char *src, struct in *in)
{
	static const unsigned widths[] = { 1, 2, 4 };
	uint64_t records = take(in, 8), bytes = take(in, 8), tick = take(in, 4);
	unsigned value = (unsigned)take(in, 2), changed = (unsigned)take(in, 2);
	unsigned w = widths[take(in, 1) % 3], mask = (1u << (4 * w)) - 1;
	char line[FMT_TIME_MAX + CONF_NAME_MAX + 64], *field[MAX_FIELDS];
	size_t n;

	n = fmt_record(f, line, src, &(struct rec){ .kind = REC_DROP, .t_real = t,
		       .a = (int64_t)records, .b = (int64_t)bytes }, NULL, 0, 0);
	CHECK(n <= sizeof(line) && split(line, n, field) == 5);
	check_head(field, f, t, src, "DROP");
	CHECK(digits(field[3], strlen(field[3])) == records && strlen(field[3]) <= 20);
	CHECK(digits(field[4], strlen(field[4])) == bytes && strlen(field[4]) <= 20);
	CHECK(field[3][0] != '0' || field[3][1] == '\0');

	n = fmt_record(f, line, src, &(struct rec){ .kind = REC_IN, .t_real = t, .a = value,
		       .b = changed, .c = (int64_t)tick }, NULL, 0, 4 * w);
	CHECK(n <= sizeof(line) && split(line, n, field) == 6);
	check_head(field, f, t, src, "IN");
	for (int k = 3; k <= 4; k++) {
		unsigned v = 0;

		CHECK(strlen(field[k]) == 2 + w && strncmp(field[k], "0x", 2) == 0);
		for (unsigned d = 0; d < w; d++)
			v = v << 4 | hexdigit(field[k][2 + d]);
		CHECK(v == ((k == 3 ? value : changed) & mask));
	}
	CHECK(digits(field[5], strlen(field[5])) == tick);
}

/* Any kind byte: a named kind makes one line that starts with its word, an
 * unnamed one makes nothing; fields beyond FMT_FIELDS_MAX are cut. */
static void check_any_kind(struct fmt *f, int64_t t, const char *src, unsigned kind,
			   const uint8_t *data, size_t len)
{
	size_t max = fmt_kind_shape(kind) == FMT_SHAPE_PAYLOAD ? fmt_rx_max(len) : fmt_line_max(len), n;
	char *line = malloc(max + 1), *field[MAX_FIELDS];
	uint8_t *fields = malloc(len + 1);
	struct rec r = { .kind = (uint16_t)kind, .t_real = t, .a = 1, .b = 2, .c = 3 };

	CHECK(line != NULL && fields != NULL);
	/* EV and STAT fields are preformatted: no newline, no space at either end */
	for (size_t i = 0; i < len; i++)
		fields[i] = data[i] > 0x20 && data[i] < 0x7f ? data[i] : '.';
	memset(line, '~', max + 1);
	n = fmt_record(f, line, src, &r, fields, len, 8);
	CHECK(line[max] == '~' && n <= max);
	if (fmt_kind(kind) == NULL) {
		CHECK(n == 0 && line[0] == '~');
	} else {
		CHECK(split(line, n, field) >= 3);
		check_head(field, f, t, src, fmt_kind(kind));
	}
	free(fields);
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char name_chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:";
	struct in in = { data, data + size };
	unsigned flags = (unsigned)take(&in, 1);
	int64_t t = (int64_t)take(&in, 8);
	size_t nlen = 1 + take(&in, 1) % (CONF_NAME_MAX - 1), small_cap;
	unsigned kind;
	char src[CONF_NAME_MAX], tbuf[FMT_TIME_MAX + 1];
	struct fmt f;

	for (size_t i = 0; i < nlen; i++)
		src[i] = name_chars[take(&in, 1) % (sizeof(name_chars) - 1)];
	src[nlen] = '\0';
	fmt_init(&f, flags & 1 ? CONF_TS_EPOCH : CONF_TS_ISO,
		 (enum conf_payload)(1 + (flags >> 1) % 3));
	tbuf[fmt_time(&f, tbuf, t)] = '\0';
	check_time(tbuf, f.ts, t);
	check_drop_in(&f, t, src, &in);
	small_cap = 1 + take(&in, 1) % 48;
	kind = (unsigned)take(&in, 1);
	/* the rest is the payload; a second time just after uses the date cache */
	check_rx(&f, t, src, in.p, (size_t)(in.end - in.p));
	check_ev(&f, t < INT64_MAX - 32 ? t + (flags >> 3) : t, src, in.p,
		 (size_t)(in.end - in.p), small_cap);
	check_any_kind(&f, t, src, kind, in.p, (size_t)(in.end - in.p));
	return 0;
}
