/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_logline.c - unit tests of the log-line parser (daemon/export/logline.c), against fmt. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fmt.h"
#include "logline.h"
#include "testutil.h"

#define ISO "2026-11-21T22:41:07.123456789Z"
#define T2026 1795300867123456789LL

static struct logline_parser parser;

static int parse(const char *s, struct logline *l)
{
	return logline_parse(&parser, s, strlen(s), l);
}

/* Lines fmt writes (by hand here, the round trip is below): each field back. */
static void test_good_lines(void **state)
{
	struct logline l;

	(void)state;
	logline_init(&parser);
	assert_int_equal(parse(ISO " gps RX 3 0a2022 \"\\n\\x20\\\"\"", &l), 0);
	assert_int_equal(l.t, T2026);
	assert_true(l.kind == REC_RX && l.src_len == 3 && memcmp(l.src, "gps", 3) == 0);
	assert_true(l.len == 3 && l.has_hex && l.has_text);
	assert_memory_equal(l.data, "\n \"", 3);

	assert_int_equal(parse("1795300867.123456789 plc TX 2 \"ab\"", &l), 0);
	assert_true(l.t == T2026 && l.kind == REC_TX && l.len == 2 && !l.has_hex);
	assert_memory_equal(l.data, "ab", 2);
	assert_int_equal(parse("-1.500000000 plc RX 0 -", &l), 0);
	assert_true(l.t == -1500000000LL && l.len == 0 && l.has_hex && !l.has_text);
	assert_int_equal(parse(ISO " plc RX 0 - \"\"", &l), 0);

	assert_int_equal(parse(ISO " lpt0 IN 0x7f 0x08 12345", &l), 0);
	assert_true(l.kind == REC_IN && l.value == 0x7f && l.changed == 0x08 && l.digits == 2
		    && l.tick == 12345);
	assert_int_equal(parse(ISO " lpt0 IN 0xbeef 0x0001 0", &l), 0);
	assert_true(l.value == 0xbeef && l.digits == 4);
	assert_int_equal(parse(ISO " gps LINES 0x9 0x1", &l), 0);
	assert_true(l.kind == REC_LINES && l.value == 9 && l.changed == 1);
	assert_int_equal(parse(ISO " gps DROP 17 2345", &l), 0);
	assert_true(l.kind == REC_DROP && l.records == 17 && l.bytes == 2345
		    && l.dir == REC_DIR_MAIN);
	assert_int_equal(parse(ISO " plc DROP 2 16 dir=tx", &l), 0);
	assert_true(l.kind == REC_DROP && l.records == 2 && l.bytes == 16 && l.dir == REC_DIR_TX);
	assert_int_equal(parse(ISO " plc EV close reason=hangup errno=EIO dir=tx", &l), 0);
	assert_true(l.kind == REC_EV && l.dir == REC_DIR_TX && l.nkv == 3);
	assert_int_equal(parse(ISO " plc EV close reason=hangup", &l), 0);
	assert_true(l.dir == REC_DIR_MAIN);
	assert_int_equal(parse(ISO " portlogd OVERRUN 18446744073709551615", &l), 0);
	assert_true(l.kind == REC_OVERRUN && l.records == UINT64_MAX);

	assert_int_equal(parse(ISO " gps EV open device=/dev/ttyS0 driver=termios note=pty "
			       "baud=9600 format=8N1", &l), 0);
	assert_true(l.kind == REC_EV && l.name_len == 4 && memcmp(l.name, "open", 4) == 0);
	assert_int_equal(l.nkv, 5);
	{
		char v[32];
		uint64_t baud;

		assert_true(logline_kv_str(&l, "device", v, sizeof(v)));
		assert_string_equal(v, "/dev/ttyS0");
		assert_true(logline_kv_u64(&l, "baud", &baud) && baud == 9600);
		assert_false(logline_kv_u64(&l, "format", &baud));
		assert_null(logline_kv(&l, "mask"));
	}
	assert_int_equal(parse(ISO " lpt0 EV open device=a\\x20b read=status mask=0xf8", &l), 0);
	{
		char v[8];
		uint64_t mask;

		assert_true(logline_kv_str(&l, "device", v, sizeof(v)) && strcmp(v, "a b") == 0);
		assert_true(logline_kv_u64(&l, "mask", &mask) && mask == 0xf8);
		assert_true(logline_kv_str(&l, "device", v, 2) && strcmp(v, "a") == 0);  /* cut */
	}
	assert_int_equal(parse(ISO " gps EV close", &l), 0);
	assert_true(l.nkv == 0 && l.name_len == 5);
	assert_int_equal(parse(ISO " portlogd STAT timer period_us=1000 p50_us=3", &l), 0);
	assert_true(l.kind == REC_STAT && l.nkv == 2);
	assert_int_equal(parse(ISO " portlogd EV clock-step delta_us=+3000000", &l), 0);
	assert_int_equal(parse(ISO " a.b-c:d_9 EV x k=", &l), 0);
	assert_true(l.kv[0].val_len == 0);
}

/* Every way a line can be wrong: refused, with a reason that names the field. */
static void test_bad_lines(void **state)
{
	static const struct { const char *line, *why; } cases[] = {
		{ "", "empty" },
		{ " " ISO " gps RX 1 00", "empty" },
		{ ISO " gps RX 1 00 ", "space at the end" },
		{ "2026-11-21T22:41:07.12345678Z gps RX 1 00", "TIME" },
		{ "2026-11-21 22:41:07.123456789Z gps RX 1 00", "TIME" },
		{ "2026-13-21T22:41:07.123456789Z gps RX 1 00", "TIME" },
		{ "2026-02-29T22:41:07.123456789Z gps RX 1 00", "TIME" },
		{ "2026-11-21T24:41:07.123456789Z gps RX 1 00", "TIME" },
		{ "1795300867.12345678 gps RX 1 00", "TIME" },
		{ "1795300867 gps RX 1 00", "TIME" },
		{ "99999999999.000000000 gps RX 1 00", "TIME" },
		{ ISO, "SOURCE" },
		{ ISO " gps", "KIND" },
		{ ISO " g/s RX 1 00", "SOURCE" },
		{ ISO " abcdefghijabcdefghijabcdefghijab RX 1 00", "SOURCE" },
		{ ISO " gps  RX 1 00", "KIND" },
		{ ISO " gps rx 1 00", "unknown KIND 'rx'" },
		{ ISO " gps RX", "LEN" },
		{ ISO " gps RX x 00", "LEN 'x'" },
		{ ISO " gps RX 01 00", "LEN" },
		{ ISO " gps RX 65536 00", "above 65535" },
		{ ISO " gps RX 1", "no HEX or TEXT" },
		{ ISO " gps RX 1 0A", "lowercase" },
		{ ISO " gps RX 1 0g", "lowercase" },
		{ ISO " gps RX 2 00", "LEN bytes" },
		{ ISO " gps RX 0 00", "LEN bytes" },
		{ ISO " gps RX 1 00 \"\\x01\"", "differ" },
		{ ISO " gps RX 1 00 \"\\x00\\x00\"", "differ" },
		{ ISO " gps RX 2 0000 \"\\x00\"", "fewer" },
		{ ISO " gps RX 1 \"a\" 61", "unexpected field" },
		{ ISO " gps RX 1 61 \"a\" \"a\"", "unexpected" },
		{ ISO " gps RX 1 \"a", "quotes" },
		{ ISO " gps RX 1 \"\\x41\"", "malformed" },          /* fmt writes 'A' as is */
		{ ISO " gps RX 1 \"\\x0a\"", "malformed" },          /* ... and \n as \n */
		{ ISO " gps RX 1 \"\\q\"", "malformed" },
		{ ISO " gps RX 1 \"\\x0\"", "malformed" },
		{ ISO " gps RX 1 \"\\\"", "malformed" },
		{ ISO " gps RX 2 \"a\"", "fewer" },
		{ ISO " gps RX 1 \"ab\"", "longer" },
		{ ISO " gps RX 1 \"\xc3\"", "malformed" },
		{ ISO " lpt0 IN 0x7f 0x8 1", "alike" },
		{ ISO " lpt0 IN 0x7F 0x08 1", "alike" },
		{ ISO " lpt0 IN 0x123 0x123 1", "alike" },
		{ ISO " lpt0 IN 7f 08 1", "alike" },
		{ ISO " lpt0 IN 0x7f 0x08", "TICK is missing" },
		{ ISO " lpt0 IN 0x7f 0x08 -1", "TICK '-1'" },
		{ ISO " lpt0 IN 0x7f", "CHANGED" },
		{ ISO " lpt0 IN 0x7f 0x08 1 2", "unexpected" },
		{ ISO " gps LINES 0x09 0x01", "one hex digit" },
		{ ISO " gps DROP 17", "BYTES is missing" },
		{ ISO " gps DROP 17 1e3", "BYTES '1e3'" },
		{ ISO " gps DROP 18446744073709551616 0", "RECORDS" },
		{ ISO " gps DROP 17 1 dir=rx", "unexpected" },
		{ ISO " gps DROP 17 1 tx", "unexpected" },
		{ ISO " gps DROP 17 1 dir=tx x", "unexpected" },
		{ ISO " gps EV close dir=tx reason=x", "last field dir=tx" },
		{ ISO " gps EV close dir=rx", "last field dir=tx" },
		{ ISO " gps OVERRUN", "COUNT" },
		{ ISO " gps EV", "NAME" },
		{ ISO " gps EV open device", "key=value" },
		{ ISO " gps EV open =x", "key=value" },
		{ ISO " gps EV open Dev=x", "key" },
		{ ISO " gps EV open d=\"x", "escape" },
		{ ISO " gps EV open d=x\\", "escape" },
		{ ISO " gps EV op/en", "NAME" },
		{ ISO " gps RX 1 00\n", "newline" },
	};
	struct logline l;

	(void)state;
	logline_init(&parser);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (parse(cases[i].line, &l) == 0)
			fail_msg("case %zu accepted: %s", i, cases[i].line);
		if (strstr(parser.why, cases[i].why) == NULL)
			fail_msg("case %zu (%s): reason \"%s\" lacks \"%s\"", i, cases[i].line,
				 parser.why, cases[i].why);
	}
	/* more than LOGLINE_KV_MAX fields */
	{
		char line[1024];
		size_t n = (size_t)snprintf(line, sizeof(line), ISO " gps EV x");

		for (int k = 0; k <= LOGLINE_KV_MAX; k++)
			n += (size_t)snprintf(line + n, sizeof(line) - n, " k%d=1", k);
		assert_int_equal(parse(line, &l), -1);
		assert_non_null(strstr(parser.why, "more than 64"));
	}
}

static void test_time_args(void **state)
{
	static const struct { const char *arg; int64_t t; } good[] = {
		{ ISO, T2026 },
		{ "2026-11-21T22:41:07.123456789", T2026 },
		{ "2026-11-21T22:41:07Z", T2026 - 123456789 },
		{ "2026-11-21T22:41:07.5Z", T2026 - 123456789 + 500000000 },
		{ "2026-11-21", T2026 - (22 * 3600 + 41 * 60 + 7) * 1000000000LL - 123456789 },
		{ "1795300867.123456789", T2026 },
		{ "1795300867", T2026 - 123456789 },
		{ "1795300867.1", T2026 - 23456789 },
		{ "-1.5", -1500000000 },
	};
	static const char *const bad[] = {
		"", "x", "2026-11-21T22:41", "2026-11-21T22:41:07.", "2026-11-21T22:41:07.1234567890",
		"2026-11-21T22:41:07+01:00", "1795300867.", "17953008671234", "1.2.3", "2026-11-32",
	};
	int64_t t;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (logline_time_arg(good[i].arg, &t) != 0 || t != good[i].t)
			fail_msg("%s: got %" PRId64 ", expected %" PRId64, good[i].arg, t, good[i].t);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (logline_time_arg(bad[i], &t) == 0)
			fail_msg("%s: accepted", bad[i]);
}

/*
 * The ends of int64 nanoseconds, and the first second past a signed 32-bit time_t: every
 * architecture parses them alike (32-bit ones without __int128: the overflow is still
 * caught), and fmt prints them back as they were.
 */
static void test_time_limits(void **state)
{
	static const struct { const char *s; bool ok; int64_t t; } cases[] = {
		{ "2262-04-11T23:47:16.854775807Z", true, INT64_MAX },
		{ "2262-04-11T23:47:16.854775808Z", false, 0 },
		{ "2262-04-12T00:00:00.000000000Z", false, 0 },
		{ "1677-09-21T00:12:43.145224192Z", true, INT64_MIN },
		{ "1677-09-21T00:12:43.145224191Z", false, 0 },
		{ "2038-01-19T03:14:08.000000000Z", true, 2147483648LL * 1000000000 },
		{ "2040-02-29T12:00:00.123456789Z", true, 2214129600123456789LL },
		{ "9223372036.854775807", true, INT64_MAX },
		{ "9223372036.854775808", false, 0 },
		{ "-9223372036.854775808", true, INT64_MIN },
		{ "-9223372036.854775809", false, 0 },
		{ "9999999999.999999999", false, 0 },
		{ "2214129600.123456789", true, 2214129600123456789LL },
	};
	int64_t t;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = logline_time(cases[i].s, strlen(cases[i].s), &t);

		if (rc != (cases[i].ok ? 0 : -1) || (cases[i].ok && t != cases[i].t))
			fail_msg("%s: returned %d, t %" PRId64 " (expected %s %" PRId64 ")",
				 cases[i].s, rc, rc == 0 ? t : 0, cases[i].ok ? "0," : "-1", cases[i].t);
		if (cases[i].ok) {
			char back[FMT_TIME_MAX + 1];
			struct fmt f;

			/* the form it came in: ISO with a T, else epoch */
			fmt_init(&f, cases[i].s[10] == 'T' ? CONF_TS_ISO : CONF_TS_EPOCH,
				 CONF_PAYLOAD_HEX);
			back[fmt_time(&f, back, t)] = '\0';
			assert_string_equal(back, cases[i].s);
		}
	}
	/* the command line's forms (--since, --until) reach the same limits */
	assert_int_equal(logline_time_arg("2262-04-11T23:47:16.854775807", &t), 0);
	assert_true(t == INT64_MAX);
	assert_int_equal(logline_time_arg("2262-04-11T23:47:17", &t), -1);
	assert_int_equal(logline_time_arg("1677-09-21T00:12:43.145224192Z", &t), 0);
	assert_true(t == INT64_MIN);
	assert_int_equal(logline_time_arg("2040-02-29", &t), 0);
	assert_true(t == 2214086400LL * 1000000000);
	assert_int_equal(logline_time_arg("-9223372036.854775809", &t), -1);
	assert_int_equal(logline_time_arg("99999999999", &t), -1);
}

/* Whatever fmt writes, in every mode, the parser gives back: random lines. */
static void test_round_trip(void **state)
{
	static const enum conf_payload modes[] = { CONF_PAYLOAD_HEX, CONF_PAYLOAD_TEXT,
						   CONF_PAYLOAD_BOTH };
	uint64_t rng = tu_seed("test_logline");
	size_t cap = fmt_rx_max(LOGLINE_DATA_MAX);
	char *line = malloc(cap);
	uint8_t *data = malloc(LOGLINE_DATA_MAX);
	struct logline l;

	(void)state;
	assert_non_null(line);
	assert_non_null(data);
	logline_init(&parser);
	for (int i = 0; i < 3000; i++) {
		struct fmt f;
		int64_t t = (int64_t)(tu_rand(&rng) % (4000000000ULL * 1000000000ULL))
			    - (i % 7 == 0 ? 2000000000LL * 1000000000LL : 0);
		size_t len = i == 0 ? LOGLINE_DATA_MAX : tu_rand(&rng) % (i % 10 == 0 ? 4000 : 40);
		unsigned digits = (unsigned[]){ 1, 2, 4 }[i % 3], v, c;
		size_t n;

		fmt_init(&f, i % 2 ? CONF_TS_EPOCH : CONF_TS_ISO, modes[i % 3]);
		if (f.ts == CONF_TS_ISO && t < 0)
			t = -t;
		for (size_t k = 0; k < len; k++)
			data[k] = (uint8_t)tu_rand(&rng);
		n = fmt_record(&f, line, "src-1", &(struct rec){ .kind = REC_RX, .t_real = t },
			       data, len, 8);
		if (logline_parse(&parser, line, n - 1, &l) != 0)
			fail_msg("RX %zu bytes, mode %d: %s: %.200s", len, modes[i % 3], parser.why, line);
		assert_int_equal(l.t, t);
		assert_true(l.kind == REC_RX && l.len == len);
		assert_memory_equal(l.data, data, len);

		v = (unsigned)tu_rand(&rng) & ((1u << 4 * digits) - 1);
		c = (unsigned)tu_rand(&rng) & ((1u << 4 * digits) - 1);
		n = fmt_record(&f, line, "lpt0", &(struct rec){ .kind = REC_IN, .t_real = t, .a = v,
			       .b = c, .c = (int64_t)(tu_rand(&rng) >> 1) }, NULL, 0, 4 * digits);
		assert_int_equal(logline_parse(&parser, line, n - 1, &l), 0);
		assert_true(l.kind == REC_IN && l.value == v && l.changed == c && l.digits == digits);

		n = fmt_record(&f, line, "gps", &(struct rec){ .kind = REC_TX, .t_real = t },
			       data, len, 8);
		assert_int_equal(logline_parse(&parser, line, n - 1, &l), 0);
		assert_true(l.kind == REC_TX && l.len == len);
		assert_memory_equal(l.data, data, len);

		n = fmt_record(&f, line, "gps", &(struct rec){ .kind = REC_DROP, .t_real = t,
			       .a = (int64_t)(tu_rand(&rng) >> 1),
			       .b = (int64_t)(tu_rand(&rng) >> (1 + i % 63)), .c = i % 2 }, NULL, 0, 8);
		assert_int_equal(logline_parse(&parser, line, n - 1, &l), 0);
		assert_true(l.kind == REC_DROP && l.dir == (enum rec_dir)(i % 2));

		{
			char text[256], value[40];
			struct fmt_kv kv;

			fmt_kv_init(&kv, text, sizeof(text));
			for (size_t k = 0; k + 1 < sizeof(value); k++)
				value[k] = (char)(1 + tu_rand(&rng) % 255);
			value[sizeof(value) - 1] = '\0';
			fmt_kv_str(&kv, "device", value);
			n = fmt_record(&f, line, "gps", &(struct rec){ .kind = REC_EV, .t_real = t,
				       .a = EV_OPEN }, kv.text, kv.len, 8);
			assert_int_equal(logline_parse(&parser, line, n - 1, &l), 0);
			assert_true(l.kind == REC_EV && l.nkv == 1);
			{
				char back[64];

				assert_true(logline_kv_str(&l, "device", back, sizeof(back)));
				assert_string_equal(back, value);
			}
		}
	}
	free(data);
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_lines),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_time_args),
		cmocka_unit_test(test_time_limits),
		cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
