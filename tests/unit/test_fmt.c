/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_fmt.c - unit tests of the log-line formatter (daemon/fmt.c): tables, lines, fields. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <cmocka.h>

#include "fmt.h"
#include "logline.h"
#include "testutil.h"

#define T2026 1795300867123456789LL      /* 2026-11-21T22:41:07.123456789Z */
#define ISO2026 "2026-11-21T22:41:07.123456789Z"
#define GUARD 16                         /* sentinel bytes after each output */

/* Compares n bytes of output (not NUL-terminated) with the expected text. */
static void expect_out(const char *name, const char *got, size_t n, const char *want)
{
	if (n != strlen(want) || memcmp(got, want, n) != 0)
		fail_msg("%s: got \"%.*s\" (%zu bytes), expected \"%s\" (%zu bytes)",
			 name, (int)n, got, n, want, strlen(want));
}

/* The formatters write exactly n bytes: nothing after them. */
static void expect_guard(const char *name, const char *buf, size_t n, size_t size)
{
	for (size_t i = n; i < size; i++)
		if (buf[i] != '~')
			fail_msg("%s: byte %zu written past the returned length %zu", name, i, n);
}

/* An RX line through the one line builder. */
static size_t rx(struct fmt *f, char *out, int64_t t, const char *src, const void *data,
		 size_t len)
{
	struct rec r = { .kind = REC_RX, .t_real = t, .len = (uint16_t)len };

	return fmt_record(f, out, src, &r, data, len, 0);
}

/* ---- timestamps ---- */

/* Formats t fresh in mode ts and twice more (the ISO date cache must not go stale). */
static void check_time(enum conf_ts ts, const char *name, int64_t t, const char *want)
{
	char out[FMT_TIME_MAX + GUARD];
	struct fmt f;
	size_t n;

	memset(out, '~', sizeof(out));
	fmt_init(&f, ts, CONF_PAYLOAD_BOTH);
	n = fmt_time(&f, out, t);
	expect_out(name, out, n, want);
	expect_guard(name, out, n, sizeof(out));
	n = fmt_time(&f, out, t);
	expect_out(name, out, n, want);
}

static void test_time_iso(void **state)
{
	static const struct { const char *name; int64_t t; const char *want; } cases[] = {
		{ "epoch", 0, "1970-01-01T00:00:00.000000000Z" },
		{ "2026 with nanoseconds", T2026, ISO2026 },
		{ "one nanosecond", 1, "1970-01-01T00:00:00.000000001Z" },
		{ "leap day 2000 (400-year rule)", 951825600000000001LL,
		  "2000-02-29T12:00:00.000000001Z" },
		{ "day after leap day 2000", 951868800000000000LL, "2000-03-01T00:00:00.000000000Z" },
		{ "leap day 2024", 1709164800000000000LL, "2024-02-29T00:00:00.000000000Z" },
		{ "day after leap day 2024", 1709251200000000000LL, "2024-03-01T00:00:00.000000000Z" },
		{ "2023 has no leap day", 1677628800000000000LL, "2023-03-01T00:00:00.000000000Z" },
		{ "2100 has no leap day", 4107542400000000000LL, "2100-03-01T00:00:00.000000000Z" },
		{ "last second of February 2100", 4107542399999999999LL,
		  "2100-02-28T23:59:59.999999999Z" },
		{ "end of year", 1767225599999999999LL, "2025-12-31T23:59:59.999999999Z" },
		{ "new year", 1767225600000000000LL, "2026-01-01T00:00:00.000000000Z" },
		{ "2038", 2147483648000000000LL, "2038-01-19T03:14:08.000000000Z" },
		{ "INT64_MAX", INT64_MAX, "2262-04-11T23:47:16.854775807Z" },
		{ "one nanosecond before the epoch", -1, "1969-12-31T23:59:59.999999999Z" },
		{ "1900 has no leap day", -2203891200000000000LL, "1900-03-01T00:00:00.000000000Z" },
		{ "INT64_MIN", INT64_MIN, "1677-09-21T00:12:43.145224192Z" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_time(CONF_TS_ISO, cases[i].name, cases[i].t, cases[i].want);
}

static void test_time_iso_cache(void **state)
{
	static const struct { const char *name; int64_t t; const char *want; } steps[] = {
		{ "t", T2026, ISO2026 },
		{ "t + 1 s", T2026 + 1000000000, "2026-11-21T22:41:08.123456789Z" },
		{ "t again", T2026, ISO2026 },
		{ "same second, other ns", T2026 - 123456789, "2026-11-21T22:41:07.000000000Z" },
		{ "t + 1 day", T2026 + 86400000000000LL, "2026-11-22T22:41:07.123456789Z" },
		{ "t - 1 s", T2026 - 1000000000, "2026-11-21T22:41:06.123456789Z" },
		{ "last ns of a year", 1767225599999999999LL, "2025-12-31T23:59:59.999999999Z" },
		{ "first ns of the next", 1767225600000000000LL, "2026-01-01T00:00:00.000000000Z" },
		{ "last ns again", 1767225599999999999LL, "2025-12-31T23:59:59.999999999Z" },
		{ "before the epoch", -1, "1969-12-31T23:59:59.999999999Z" },
		{ "epoch", 0, "1970-01-01T00:00:00.000000000Z" },
		{ "t once more", T2026, ISO2026 },
	};
	struct fmt f;

	(void)state;
	fmt_init(&f, CONF_TS_ISO, CONF_PAYLOAD_BOTH);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		char out[FMT_TIME_MAX], fresh_out[FMT_TIME_MAX];
		struct fmt fresh;
		size_t n, fn;

		fmt_init(&fresh, CONF_TS_ISO, CONF_PAYLOAD_BOTH);
		n = fmt_time(&f, out, steps[i].t);
		fn = fmt_time(&fresh, fresh_out, steps[i].t);
		expect_out(steps[i].name, out, n, steps[i].want);
		expect_out(steps[i].name, fresh_out, fn, steps[i].want);
	}
}

static void test_time_epoch(void **state)
{
	static const struct { const char *name; int64_t t; const char *want; } cases[] = {
		{ "zero", 0, "0.000000000" },
		{ "2025", 1763764867123456789LL, "1763764867.123456789" },
		{ "nanoseconds zero-padded", 1763764867000000001LL, "1763764867.000000001" },
		{ "below one second", 5, "0.000000005" },
		{ "whole second", 1000000000, "1.000000000" },
		{ "minus one nanosecond", -1, "-0.000000001" },
		{ "minus one and a half seconds", -1500000000, "-1.500000000" },
		{ "minus ten seconds exactly", -10000000000LL, "-10.000000000" },
		{ "INT64_MAX", INT64_MAX, "9223372036.854775807" },
		{ "INT64_MIN", INT64_MIN, "-9223372036.854775808" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_time(CONF_TS_EPOCH, cases[i].name, cases[i].t, cases[i].want);
}

/* ---- building blocks ---- */

static void test_u64_hex(void **state)
{
	static const struct { const char *name; uint64_t v; const char *want; } nums[] = {
		{ "zero", 0, "0" }, { "nine", 9, "9" }, { "ten", 10, "10" },
		{ "4096", 4096, "4096" },
		{ "UINT64_MAX", UINT64_MAX, "18446744073709551615" },
	};
	static const struct { const char *name; const char *data; size_t n; const char *want; }
	hex[] = {
		{ "empty", "", 0, "" },
		{ "lowercase digits", "\x00\x0f\xa0\xff", 4, "000fa0ff" },
		{ "ascii", "AZ\n", 3, "415a0a" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		char out[20 + GUARD];
		size_t n;

		memset(out, '~', sizeof(out));
		n = fmt_u64(out, nums[i].v);
		expect_out(nums[i].name, out, n, nums[i].want);
		expect_guard(nums[i].name, out, n, sizeof(out));
	}
	for (size_t i = 0; i < sizeof(hex) / sizeof(hex[0]); i++) {
		char out[16 + GUARD];
		size_t n;

		memset(out, '~', sizeof(out));
		n = fmt_hex(out, (const uint8_t *)hex[i].data, hex[i].n);
		expect_out(hex[i].name, out, n, hex[i].want);
		expect_guard(hex[i].name, out, n, sizeof(out));
	}
}

static void test_text_escaping(void **state)
{
	static const struct { const char *name; const char *data; size_t n; const char *want; }
	cases[] = {
		{ "empty", "", 0, "\"\"" },
		{ "printable ascii stays", "$GPGGA,1*47~!{}", 15, "\"$GPGGA,1*47~!{}\"" },
		{ "backslash", "a\\b", 3, "\"a\\\\b\"" },
		{ "quote", "a\"b", 3, "\"a\\\"b\"" },
		{ "cr lf tab", "\r\n\t", 3, "\"\\r\\n\\t\"" },
		{ "space is hex", "a b", 3, "\"a\\x20b\"" },
		{ "nul is hex", "\0", 1, "\"\\x00\"" },
		{ "del is hex", "\x7f", 1, "\"\\x7f\"" },
		{ "0x80 is hex", "\x80", 1, "\"\\x80\"" },
		{ "0xff is hex, lowercase", "\xff", 1, "\"\\xff\"" },
		{ "other controls are hex", "\x01\x0b\x0c\x1b\x1f", 5,
		  "\"\\x01\\x0b\\x0c\\x1b\\x1f\"" },
		{ "mixed", "A\x01\xff z\"", 6, "\"A\\x01\\xff\\x20z\\\"\"" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[64 + GUARD];
		size_t n;

		memset(out, '~', sizeof(out));
		n = fmt_text(out, (const uint8_t *)cases[i].data, cases[i].n);
		expect_out(cases[i].name, out, n, cases[i].want);
		expect_guard(cases[i].name, out, n, sizeof(out));
	}
	/* every byte value on its own, against the rule of fmt.h */
	for (unsigned b = 0; b < 256; b++) {
		uint8_t in = (uint8_t)b;
		char out[8], want[8], name[32];
		size_t n;

		if (b == '\\' || b == '"')
			snprintf(want, sizeof(want), "\"\\%c\"", b);
		else if (b == '\r' || b == '\n' || b == '\t')
			snprintf(want, sizeof(want), "\"\\%c\"", b == '\r' ? 'r' : b == '\n' ? 'n' : 't');
		else if (b > ' ' && b < 0x7f)
			snprintf(want, sizeof(want), "\"%c\"", b);
		else
			snprintf(want, sizeof(want), "\"\\x%02x\"", b);
		snprintf(name, sizeof(name), "byte 0x%02x", b);
		n = fmt_text(out, &in, 1);
		expect_out(name, out, n, want);
	}
}

/* ---- whole lines ---- */

static void test_rx_lines(void **state)
{
	static const struct {
		const char *name;
		enum conf_ts ts;
		enum conf_payload payload;
		int64_t t;
		const char *src;
		const char *data;
		size_t n;
		const char *want;
	} cases[] = {
		{ "both", CONF_TS_ISO, CONF_PAYLOAD_BOTH, T2026, "gps", "\x01\x02\xff", 3,
		  ISO2026 " gps RX 3 0102ff \"\\x01\\x02\\xff\"\n" },
		{ "hex", CONF_TS_ISO, CONF_PAYLOAD_HEX, T2026, "gps", "\x01\x02\xff", 3,
		  ISO2026 " gps RX 3 0102ff\n" },
		{ "text", CONF_TS_ISO, CONF_PAYLOAD_TEXT, T2026, "gps", "\x01\x02\xff", 3,
		  ISO2026 " gps RX 3 \"\\x01\\x02\\xff\"\n" },
		{ "nmea sentence", CONF_TS_ISO, CONF_PAYLOAD_BOTH, T2026, "gps", "$GP,1*47\r\n", 10,
		  ISO2026 " gps RX 10 2447502c312a34370d0a \"$GP,1*47\\r\\n\"\n" },
		{ "epoch", CONF_TS_EPOCH, CONF_PAYLOAD_BOTH, 1763764867000000042LL, "plc-1", "AB", 2,
		  "1763764867.000000042 plc-1 RX 2 4142 \"AB\"\n" },
		{ "space and quote in text", CONF_TS_ISO, CONF_PAYLOAD_TEXT, 0, "a", "x \"y", 4,
		  "1970-01-01T00:00:00.000000000Z a RX 4 \"x\\x20\\\"y\"\n" },
		{ "empty packet: HEX is -, never an empty field", CONF_TS_EPOCH, CONF_PAYLOAD_BOTH,
		  0, "a", "", 0, "0.000000000 a RX 0 - \"\"\n" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[256 + GUARD];
		struct fmt f;
		size_t n;

		memset(out, '~', sizeof(out));
		fmt_init(&f, cases[i].ts, cases[i].payload);
		n = rx(&f, out, cases[i].t, cases[i].src, cases[i].data, cases[i].n);
		expect_out(cases[i].name, out, n, cases[i].want);
		expect_guard(cases[i].name, out, n, sizeof(out));
		if (n > fmt_rx_max(cases[i].n))
			fail_msg("%s: %zu bytes > fmt_rx_max %zu", cases[i].name, n,
				 fmt_rx_max(cases[i].n));
	}
}

/* Every other KIND: the record's numbers or fields after TIME SOURCE KIND. */
static void test_record_lines(void **state)
{
	static char longf[FMT_FIELDS_MAX + 100], want_long[FMT_FIELDS_MAX + 100];
	static const struct {
		const char *name;
		enum conf_ts ts;
		const char *src;
		struct rec r;
		const char *data;
		unsigned bits;
		const char *want;
	} cases[] = {
		{ "ev open", CONF_TS_ISO, "gps", { .kind = REC_EV, .a = EV_OPEN },
		  "device=/dev/ttyUSB0 driver=tty", 0,
		  ISO2026 " gps EV open device=/dev/ttyUSB0 driver=tty\n" },
		{ "ev without fields", CONF_TS_ISO, "portlogd", { .kind = REC_EV, .a = EV_START }, "",
		  0, ISO2026 " portlogd EV start\n" },
		{ "ev epoch", CONF_TS_EPOCH, "plc", { .kind = REC_EV, .a = EV_CLOSE },
		  "reason=hangup", 0, "1795300867.123456789 plc EV close reason=hangup\n" },
		{ "ev errno by name", CONF_TS_EPOCH, "plc", { .kind = REC_EV, .a = EV_CLOSE, .b = EIO },
		  "reason=error", 0, "1795300867.123456789 plc EV close reason=error errno=EIO\n" },
		{ "ev errno without a name", CONF_TS_EPOCH, "a",
		  { .kind = REC_EV, .a = EV_ERROR, .b = 99999 }, "op=x", 0,
		  "1795300867.123456789 a EV error op=x errno=99999\n" },
		{ "ev errno, no fields", CONF_TS_EPOCH, "a",
		  { .kind = REC_EV, .a = EV_ERROR, .b = ENOENT }, "", 0,
		  "1795300867.123456789 a EV error errno=ENOENT\n" },
		{ "ev of a code without a name", CONF_TS_EPOCH, "a", { .kind = REC_EV, .a = 9999 },
		  "x=1", 0, "1795300867.123456789 a EV unknown x=1\n" },
		{ "ev name of the flusher", CONF_TS_EPOCH, "portlogd",
		  { .kind = REC_EV, .a = EV_WRITE_RECOVERED }, "errno=EIO", 0,
		  "1795300867.123456789 portlogd EV write-recovered errno=EIO\n" },
		{ "drop", CONF_TS_ISO, "gps", { .kind = REC_DROP, .a = 17, .b = 2048 }, NULL, 0,
		  ISO2026 " gps DROP 17 2048\n" },
		{ "drop of a port's TX ring", CONF_TS_EPOCH, "plc",
		  { .kind = REC_DROP, .a = 3, .b = 24, .c = REC_DIR_TX }, NULL, 0,
		  "1795300867.123456789 plc DROP 3 24 dir=tx\n" },
		{ "ev of a port's TX ring, after errno", CONF_TS_EPOCH, "plc",
		  { .kind = REC_EV, .a = EV_CLOSE, .b = EIO, .c = REC_DIR_TX }, "reason=hangup", 0,
		  "1795300867.123456789 plc EV close reason=hangup errno=EIO dir=tx\n" },
		{ "ev relay-lost", CONF_TS_EPOCH, "plc",
		  { .kind = REC_EV, .a = EV_RELAY_LOST }, "to=app bytes=512 reason=full", 0,
		  "1795300867.123456789 plc EV relay-lost to=app bytes=512 reason=full\n" },
		{ "drop of nothing", CONF_TS_EPOCH, "gps", { .kind = REC_DROP }, NULL, 0,
		  "1795300867.123456789 gps DROP 0 0\n" },
		{ "drop maxima", CONF_TS_ISO, "lpt0", { .kind = REC_DROP, .a = -1, .b = -1 }, NULL, 0,
		  ISO2026 " lpt0 DROP 18446744073709551615 18446744073709551615\n" },
		{ "in, 8 bits", CONF_TS_EPOCH, "lpt0", { .kind = REC_IN, .a = 0x7f, .b = 0x08, .c = 42 },
		  NULL, 8, "1795300867.123456789 lpt0 IN 0x7f 0x08 42\n" },
		{ "in, 16 bits", CONF_TS_EPOCH, "lpt0",
		  { .kind = REC_IN, .a = 0x1ff, .b = 0x100, .c = 0 }, NULL, 16,
		  "1795300867.123456789 lpt0 IN 0x01ff 0x0100 0\n" },
		{ "in, 4 bits", CONF_TS_EPOCH, "pins", { .kind = REC_IN, .a = 0xa, .b = 0xf, .c = 7 },
		  NULL, 4, "1795300867.123456789 pins IN 0xa 0xf 7\n" },
		{ "in, width unknown: 2 digits", CONF_TS_EPOCH, "pins",
		  { .kind = REC_IN, .a = 0x3, .b = 0x1, .c = 1 }, NULL, 0,
		  "1795300867.123456789 pins IN 0x03 0x01 1\n" },
		{ "overrun", CONF_TS_EPOCH, "lpt0", { .kind = REC_OVERRUN, .a = 5 }, NULL, 0,
		  "1795300867.123456789 lpt0 OVERRUN 5\n" },
		{ "lines", CONF_TS_EPOCH, "gps", { .kind = REC_LINES, .a = 0x9, .b = 0x1 }, NULL, 0,
		  "1795300867.123456789 gps LINES 0x9 0x1\n" },
		{ "stat", CONF_TS_EPOCH, "portlogd", { .kind = REC_STAT }, "flusher lines=3", 0,
		  "1795300867.123456789 portlogd STAT flusher lines=3\n" },
		{ "fields are cut at FMT_FIELDS_MAX", CONF_TS_EPOCH, "a", { .kind = REC_EV, .a = EV_STOP },
		  longf, 0, want_long },
	};
	(void)state;
	assert_true(fmt_line_max(FMT_FIELDS_MAX) <= FMT_FIELDS_MAX + 512);
	memset(longf, 'x', sizeof(longf) - 1);
	snprintf(want_long, sizeof(want_long), "1795300867.123456789 a EV stop %.*s\n",
		 FMT_FIELDS_MAX, longf);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[FMT_FIELDS_MAX + 512 + GUARD];     /* above fmt_line_max(FMT_FIELDS_MAX) */
		const char *data = cases[i].data;
		struct rec r = cases[i].r;
		struct fmt f;
		size_t n;

		memset(out, '~', sizeof(out));
		fmt_init(&f, cases[i].ts, CONF_PAYLOAD_BOTH);
		r.t_real = T2026;
		n = fmt_record(&f, out, cases[i].src, &r, data, data ? strlen(data) : 0,
			       cases[i].bits);
		expect_out(cases[i].name, out, n, cases[i].want);
		expect_guard(cases[i].name, out, n, sizeof(out));
		if (n > fmt_line_max(data ? strlen(data) : 0))
			fail_msg("%s: %zu bytes > fmt_line_max", cases[i].name, n);
	}
}

/* A record of a kind the table does not name makes no line: 0, nothing written. */
static void test_unknown_kind(void **state)
{
	static const unsigned bad[] = { 0, REC_NKINDS, REC_NKINDS + 1, 999, 65535 };
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rec r = { .kind = (uint16_t)bad[i], .t_real = T2026, .a = 1 };
		char out[256 + GUARD];
		struct fmt f;

		memset(out, '~', sizeof(out));
		fmt_init(&f, CONF_TS_ISO, CONF_PAYLOAD_BOTH);
		assert_null(fmt_kind(bad[i]));
		assert_int_equal(fmt_record(&f, out, "a", &r, "abc", 3, 8), 0);
		expect_guard("unknown kind", out, 0, sizeof(out));
	}
}

/* Every kind and every event code has its row, each word once, each a single field. */
static void test_tables(void **state)
{
	(void)state;
	for (unsigned k = 1; k < REC_NKINDS; k++) {
		const char *w = fmt_kind(k);

		if (w == NULL || *w == '\0' || strchr(w, ' ') != NULL)
			fail_msg("kind %u has no KIND word", k);
		for (unsigned j = 1; j < k; j++)
			if (strcmp(w, fmt_kind(j)) == 0)
				fail_msg("kinds %u and %u are both %s", j, k, w);
	}
	assert_string_equal(fmt_kind(REC_RX), "RX");
	assert_string_equal(fmt_kind(REC_STAT), "STAT");
	assert_string_equal(fmt_kind(REC_TX), "TX");
	/* the parser's view of the table: words back to kinds, TX with RX's fields */
	for (unsigned k = 1; k < REC_NKINDS; k++) {
		assert_int_equal(fmt_kind_find(fmt_kind(k), strlen(fmt_kind(k))), k);
		assert_true(fmt_kind_shape(k) < FMT_NSHAPES);
	}
	assert_int_equal(fmt_kind_find("RXX", 3), 0);
	assert_int_equal(fmt_kind_find("R", 1), 0);
	assert_int_equal(fmt_kind_find("", 0), 0);
	assert_int_equal(fmt_kind_shape(REC_TX), fmt_kind_shape(REC_RX));
	assert_int_equal(fmt_kind_shape(0), FMT_NSHAPES);
	assert_int_equal(fmt_kind_shape(REC_NKINDS), FMT_NSHAPES);
	for (unsigned c = 1; c < EV_NCODES; c++) {
		const char *nm = fmt_ev_name(c);

		if (nm == NULL || *nm == '\0' || strchr(nm, ' ') != NULL
		    || strlen(nm) >= FMT_EV_NAME_MAX)
			fail_msg("event code %u has no NAME", c);
		for (unsigned j = 1; j < c; j++)
			if (strcmp(nm, fmt_ev_name(j)) == 0)
				fail_msg("event codes %u and %u are both %s", j, c, nm);
	}
	assert_null(fmt_ev_name(0));
	assert_null(fmt_ev_name(EV_NCODES));
	assert_string_equal(fmt_ev_name(EV_LATE), "late-delivery");
	/* the journal's priority: loss is a warning, a boundary doubt is info */
	assert_int_equal(fmt_ev_priority(EV_ERROR), LOG_WARNING);
	assert_int_equal(fmt_ev_priority(EV_LATE), LOG_INFO);
	assert_int_equal(fmt_ev_priority(EV_OPEN), LOG_NOTICE);
	assert_int_equal(fmt_ev_priority(EV_RELAY_LOST), LOG_WARNING);
	assert_int_equal(fmt_ev_priority(EV_NCODES + 5), LOG_NOTICE);
}

/* ---- property test: random packets ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	return tu_rand(&rng_state);
}

/* Decodes a quoted TEXT field into at most cap bytes; its byte count or -1 if malformed. */
static long unescape(const char *s, size_t n, uint8_t *out, size_t cap)
{
	if (n < 2 || s[0] != '"' || s[n - 1] != '"')
		return -1;
	return logline_unescape(s + 1, n - 2, out, cap);
}

static void test_rx_random(void **state)
{
	static const char namech[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "0123456789_-.:";
	static const enum conf_payload payloads[] = {
		CONF_PAYLOAD_HEX, CONF_PAYLOAD_TEXT, CONF_PAYLOAD_BOTH,
	};
	uint64_t seed = tu_seed("test_fmt");
	uint8_t *data = malloc(4096), *back = malloc(4096);
	char *out = malloc(fmt_rx_max(4096) + GUARD);

	(void)state;
	assert_non_null(data);
	assert_non_null(back);
	assert_non_null(out);
	rng_state = seed;
	for (int iter = 0; iter < 2000; iter++) {
		/* 1..4096: the reassembler never emits an empty packet (see the report on
		 * len 0, whose HEX field would be empty) */
		size_t len = 1 + rng() % 4096, n, nfields = 0, want_fields, cap = fmt_rx_max(len);
		enum conf_payload payload = payloads[rng() % 3];
		enum conf_ts ts = rng() % 2 ? CONF_TS_ISO : CONF_TS_EPOCH;
		/* any time from 1677 to 2262, but mostly now-ish */
		int64_t t = rng() % 4 ? T2026 + (int64_t)(rng() % 100000000000000ULL)
				      : (int64_t)rng();
		char name[CONF_NAME_MAX], lenstr[24];
		size_t namelen = 1 + rng() % (CONF_NAME_MAX - 1);
		const char *field[8];
		size_t flen[8];
		struct fmt f;
		int mode = (int)(rng() % 3);

		for (size_t i = 0; i < namelen; i++)
			name[i] = namech[rng() % (sizeof(namech) - 1)];
		name[namelen] = '\0';
		for (size_t i = 0; i < len; i++) {
			/* all bytes, only the escaped ones, or only printable ones */
			uint8_t b = (uint8_t)rng();

			if (mode == 1)
				b = (uint8_t)"\\\"\r\n\t \x00\x7f\x80\xff"[rng() % 10];
			else if (mode == 2)
				b = (uint8_t)(0x21 + rng() % 94);
			data[i] = b;
		}
		memset(out, '~', cap + GUARD);
		fmt_init(&f, ts, payload);
		n = rx(&f, out, t, name, data, len);
		if (n > cap)
			fail_msg("seed %" PRIu64 " iter %d: line of %zu bytes > fmt_rx_max(%zu) = %zu",
				 seed, iter, n, len, cap);
		expect_guard("random line", out, n, cap + GUARD);
		if (n == 0 || out[n - 1] != '\n')
			fail_msg("seed %" PRIu64 " iter %d: line does not end with a newline",
				 seed, iter);
		for (size_t i = 0; i + 1 < n; i++)
			if (out[i] == '\n' || (unsigned char)out[i] < ' '
			    || (unsigned char)out[i] >= 0x7f)
				fail_msg("seed %" PRIu64 " iter %d: byte 0x%02x at %zu of the line",
					 seed, iter, (unsigned char)out[i], i);
		/* split on single spaces, without the newline */
		for (size_t i = 0, start = 0; i <= n - 1; i++) {
			if (i < n - 1 && out[i] != ' ')
				continue;
			if (nfields == 8)
				fail_msg("seed %" PRIu64 " iter %d: too many fields", seed, iter);
			field[nfields] = out + start;
			flen[nfields] = i - start;
			if (flen[nfields] == 0)
				fail_msg("seed %" PRIu64 " iter %d: empty field %zu", seed, iter,
					 nfields + 1);
			nfields++;
			start = i + 1;
		}
		/* TIME SOURCE RX LEN, then HEX and/or TEXT */
		want_fields = payload == CONF_PAYLOAD_BOTH ? 6 : 5;
		if (nfields != want_fields)
			fail_msg("seed %" PRIu64 " iter %d: %zu fields, expected %zu", seed, iter,
				 nfields, want_fields);
		snprintf(lenstr, sizeof(lenstr), "%zu", len);
		if (flen[1] != namelen || memcmp(field[1], name, namelen) != 0
		    || flen[2] != 2 || memcmp(field[2], "RX", 2) != 0
		    || flen[3] != strlen(lenstr) || memcmp(field[3], lenstr, flen[3]) != 0)
			fail_msg("seed %" PRIu64 " iter %d: SOURCE RX LEN fields wrong", seed, iter);
		if (payload & CONF_PAYLOAD_HEX) {
			const char *h = field[4];

			if (flen[4] != 2 * len)
				fail_msg("seed %" PRIu64 " iter %d: HEX has %zu digits for %zu bytes",
					 seed, iter, flen[4], len);
			for (size_t i = 0; i < len; i++) {
				int hi = logline_hexval(h[2 * i]), lo = logline_hexval(h[2 * i + 1]);

				if (hi < 0 || lo < 0 || (uint8_t)(hi << 4 | lo) != data[i])
					fail_msg("seed %" PRIu64 " iter %d: HEX byte %zu does not "
						 "decode to 0x%02x", seed, iter, i, data[i]);
			}
		}
		if (payload & CONF_PAYLOAD_TEXT) {
			size_t k = nfields - 1;
			long got = unescape(field[k], flen[k], back, 4096);

			if (got != (long)len || memcmp(back, data, len) != 0)
				fail_msg("seed %" PRIu64 " iter %d: TEXT does not decode to the "
					 "packet (%ld bytes of %zu)", seed, iter, got, len);
		}
	}
	free(out);
	free(back);
	free(data);
}

/* The bound holds for the longest name, the longest times and the worst bytes. */
static void test_rx_max_worst_case(void **state)
{
	static const size_t lens[] = { 0, 1, 7, 4096, 65535 };
	static const int64_t times[] = { INT64_MIN, INT64_MAX, -1, 0 };
	char name[CONF_NAME_MAX];
	uint8_t *data = calloc(65535, 1);       /* 0x00: \x00, the widest escape */

	(void)state;
	assert_non_null(data);
	memset(name, 'n', CONF_NAME_MAX - 1);
	name[CONF_NAME_MAX - 1] = '\0';
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (size_t t = 0; t < sizeof(times) / sizeof(times[0]); t++)
			for (int ts = 0; ts < 2; ts++) {
				size_t cap = fmt_rx_max(lens[l]), n;
				char *out = malloc(cap + GUARD);
				struct fmt f;

				assert_non_null(out);
				memset(out, '~', cap + GUARD);
				fmt_init(&f, ts ? CONF_TS_EPOCH : CONF_TS_ISO, CONF_PAYLOAD_BOTH);
				n = rx(&f, out, times[t], name, data, lens[l]);
				if (n > cap)
					fail_msg("len %zu time %" PRId64 " ts %d: %zu > %zu", lens[l],
						 times[t], ts, n, cap);
				expect_guard("worst case", out, n, cap + GUARD);
				free(out);
			}
	free(data);
}

/* ---- fmt_kv: the fields of EV and STAT lines ---- */

static void test_kv(void **state)
{
	static const struct {
		const char *name;
		const char *text;       /* before */
		size_t cap;
		const char *key, *value;
		const char *want;
	} cases[] = {
		{ "first pair has no leading space", "", 64, "op", "open", "op=open" },
		{ "later pairs are space separated", "open", 64, "device", "/dev/ttyUSB0",
		  "open device=/dev/ttyUSB0" },
		{ "space in value", "", 64, "note", "a b", "note=a\\x20b" },
		{ "quote and backslash", "", 64, "k", "a\"b\\c", "k=a\\\"b\\\\c" },
		{ "control bytes", "", 64, "k", "\r\n\t\x01\x1f", "k=\\r\\n\\t\\x01\\x1f" },
		{ "del and high bytes", "", 64, "k", "\x7f\x80\xff", "k=\\x7f\\x80\\xff" },
		{ "empty value", "x", 64, "k", "", "x k=" },
		{ "truncated value", "", 10, "reason", "start-up-failure", "reason=st" },
		{ "an escape is never cut", "", 8, "k", "ab c", "k=ab" },
		{ "an escape that just fits", "", 9, "k", "ab c", "k=ab\\x20" },
		{ "key does not fit: nothing", "", 5, "reason", "x", "" },
		{ "key does not fit after text", "open", 8, "device", "x", "open" },
		{ "key fits, no value", "open", 8, "x", "y", "open x=" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[80];
		struct fmt_kv kv = { text, cases[i].cap, strlen(cases[i].text) };
		size_t len;

		memset(text, '~', sizeof(text));
		memcpy(text, cases[i].text, kv.len + 1);
		fmt_kv_str(&kv, cases[i].key, cases[i].value);
		len = kv.len;
		if (len != strlen(cases[i].want) || strcmp(text, cases[i].want) != 0)
			fail_msg("%s: got \"%s\" (len %zu), expected \"%s\"", cases[i].name, text,
				 len, cases[i].want);
		expect_guard(cases[i].name, text, cases[i].cap, sizeof(text));
	}
}

/* Every capacity from 0 up: never a byte past cap, always NUL-terminated, a prefix. */
static void test_kv_small_caps(void **state)
{
	static const struct { const char *name, *start, *key, *value; } cases[] = {
		{ "plain", "", "device", "/dev/ttyUSB0" },
		{ "escapes", "", "note", "a b\x01\"\\\xff!" },
		{ "after text", "open", "reason", "hang up" },
	};
	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char full[128];
		struct fmt_kv fkv = { full, sizeof(full), strlen(cases[c].start) };
		size_t full_len;

		memcpy(full, cases[c].start, fkv.len + 1);
		fmt_kv_str(&fkv, cases[c].key, cases[c].value);
		full_len = fkv.len;
		for (size_t cap = 0; cap <= full_len + 2; cap++) {
			char text[128];
			size_t len = strlen(cases[c].start);

			memset(text, '~', sizeof(text));
			if (cap > len)
				memcpy(text, cases[c].start, len + 1);
			else
				len = cap > 0 ? cap - 1 : 0;   /* what a full text looks like */
			if (cap > 0)
				text[len] = '\0';
			{
				struct fmt_kv kv = { text, cap, len };

				fmt_kv_str(&kv, cases[c].key, cases[c].value);
				len = kv.len;
			}
			expect_guard(cases[c].name, text, cap, sizeof(text));
			if (cap == 0)
				continue;
			if (len >= cap || text[len] != '\0' || strlen(text) != len)
				fail_msg("%s cap %zu: len %zu, not NUL-terminated there", cases[c].name,
					 cap, len);
			if (cap > strlen(cases[c].start) && strncmp(text, full, len) != 0)
				fail_msg("%s cap %zu: \"%s\" is not a prefix of \"%s\"", cases[c].name,
					 cap, text, full);
			if (cap > full_len && strcmp(text, full) != 0)
				fail_msg("%s cap %zu: \"%s\", expected all of \"%s\"", cases[c].name,
					 cap, text, full);
		}
	}
}

/* Numbers, errnos and words; a number is written whole or not at all. */
static void test_kv_numbers(void **state)
{
	char text[64], small[12];
	struct fmt_kv kv;

	(void)state;
	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_word(&kv, "gps");
	fmt_kv_u64(&kv, "n", UINT64_MAX);
	fmt_kv_i64(&kv, "i", INT64_MIN);
	assert_string_equal(text, "gps n=18446744073709551615 i=-9223372036854775808");
	assert_int_equal(kv.len, strlen(text));
	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_delta(&kv, "up", 5);
	fmt_kv_delta(&kv, "down", -3);
	fmt_kv_delta(&kv, "none", 0);
	fmt_kv_i64(&kv, "zero", 0);
	assert_string_equal(text, "up=+5 down=-3 none=+0 zero=0");
	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_errno(&kv, "errno", EIO);
	fmt_kv_errno(&kv, "e", 99999);
	fmt_kv_word(&kv, "a b");
	assert_string_equal(text, "errno=EIO e=99999 a\\x20b");
	/* "k=12345" needs 8 bytes with its NUL, " k=12345" 8 more: cap 12 holds one */
	fmt_kv_init(&kv, small, sizeof(small));
	fmt_kv_u64(&kv, "k", 12345);
	fmt_kv_u64(&kv, "k", 12345);
	assert_string_equal(small, "k=12345");
	assert_int_equal(kv.len, 7);
	fmt_kv_u64(&kv, "k", 1);        /* " k=1": 7 + 4 and the NUL fill 12 */
	assert_string_equal(small, "k=12345 k=1");
	fmt_kv_str(&kv, "s", "");       /* nor a key without room */
	assert_string_equal(small, "k=12345 k=1");
	fmt_kv_init(&kv, small, 0);     /* no room at all: nothing, no write */
	fmt_kv_u64(&kv, "k", 1);
	assert_int_equal(kv.len, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_iso),
		cmocka_unit_test(test_time_iso_cache),
		cmocka_unit_test(test_time_epoch),
		cmocka_unit_test(test_u64_hex),
		cmocka_unit_test(test_text_escaping),
		cmocka_unit_test(test_rx_lines),
		cmocka_unit_test(test_record_lines),
		cmocka_unit_test(test_unknown_kind),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_rx_random),
		cmocka_unit_test(test_rx_max_worst_case),
		cmocka_unit_test(test_kv),
		cmocka_unit_test(test_kv_small_caps),
		cmocka_unit_test(test_kv_numbers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
