/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_logline.c - libFuzzer target: any bytes as a log line, and as a --since TIME.
 *
 * The parser must never crash, and be exactly as strict as fmt: a line it
 * accepts, formatted again by fmt from the parsed fields (in the time and
 * payload modes the line shows), is the same line byte for byte. Every key of
 * an EV or STAT line decodes. The input also goes to logline_time_arg.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "fuzz.h"
#include "logline.h"

static struct logline_parser parser;
static char out[FMT_TIME_MAX + CONF_NAME_MAX + 64 + 6 * LOGLINE_DATA_MAX + 64];

static void check_same(const uint8_t *data, size_t size, size_t n)
{
	CHECK(n == size + 1 && out[n - 1] == '\n' && memcmp(out, data, size) == 0);
}

static void reformat(const uint8_t *data, size_t size, const struct logline *l)
{
	const char *s = (const char *)data;
	enum conf_ts ts = size > 10 && s[10] == 'T' ? CONF_TS_ISO : CONF_TS_EPOCH;
	enum conf_payload pm = (enum conf_payload)((l->has_hex ? CONF_PAYLOAD_HEX : 0)
						   | (l->has_text ? CONF_PAYLOAD_TEXT : 0));
	char src[CONF_NAME_MAX];
	struct rec rec = { .t_real = l->t };
	struct fmt f;
	size_t n, fl;

	CHECK(l->src_len < sizeof(src));
	memcpy(src, l->src, l->src_len);
	src[l->src_len] = '\0';
	fmt_init(&f, ts, l->kind == REC_RX || l->kind == REC_TX ? pm : CONF_PAYLOAD_BOTH);
	switch (l->kind) {
	case REC_RX:
	case REC_TX:
		CHECK(pm != 0 && l->len <= LOGLINE_DATA_MAX);
		rec.kind = l->kind;
		n = fmt_record(&f, out, src, &rec, l->data, l->len, 8);
		check_same(data, size, n);
		break;
	case REC_IN:
		rec.kind = REC_IN;
		rec.a = l->value;
		rec.b = l->changed;
		rec.c = (int64_t)l->tick;
		n = fmt_record(&f, out, src, &rec, NULL, 0, 4 * l->digits);
		check_same(data, size, n);
		break;
	case REC_LINES:
		rec.kind = REC_LINES;
		rec.a = l->value;
		rec.b = l->changed;
		n = fmt_record(&f, out, src, &rec, NULL, 0, 4);
		check_same(data, size, n);
		break;
	case REC_DROP:
		rec.kind = REC_DROP;
		rec.a = (int64_t)l->records;
		rec.b = (int64_t)l->bytes;
		rec.c = l->dir;
		n = fmt_record(&f, out, src, &rec, NULL, 0, 8);
		check_same(data, size, n);
		break;
	case REC_OVERRUN:
		rec.kind = REC_OVERRUN;
		rec.a = (int64_t)l->records;
		n = fmt_record(&f, out, src, &rec, NULL, 0, 8);
		check_same(data, size, n);
		break;
	case REC_EV:
	case REC_STAT:
		/* TIME SOURCE KIND again (a STAT record's line, its word swapped for
		 * EV's); the rest is the line's own text */
		rec.kind = REC_STAT;
		n = fmt_record(&f, out, src, &rec, NULL, 0, 8);
		CHECK(n > 6 && memcmp(out + n - 6, " STAT\n", 6) == 0);
		n -= 5;
		fl = strlen(logline_kind_name(l->kind));
		memcpy(out + n, logline_kind_name(l->kind), fl);
		n += fl;
		out[n++] = ' ';
		memcpy(out + n, l->name, size - (size_t)(l->name - s));
		n += size - (size_t)(l->name - s);
		out[n++] = '\n';
		check_same(data, size, n);
		for (unsigned i = 0; i < l->nkv; i++) {
			char key[64], val[16];

			CHECK(l->kv[i].key_len > 0);
			if (l->kv[i].key_len >= sizeof(key))
				continue;
			memcpy(key, l->kv[i].key, l->kv[i].key_len);
			key[l->kv[i].key_len] = '\0';
			CHECK(logline_kv_str(l, key, val, sizeof(val)));
		}
		break;
	case REC_NKINDS:
		CHECK(0);       /* the parser names only kinds of the table */
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct logline l;
	char *arg;

	logline_init(&parser);
	if (logline_parse(&parser, (const char *)data, size, &l) == 0)
		reformat(data, size, &l);
	else
		CHECK(parser.why[0] != '\0' && strlen(parser.why) < sizeof(parser.why));
	arg = malloc(size + 1);
	CHECK(arg != NULL);
	memcpy(arg, data, size);
	arg[size] = '\0';
	{
		int64_t t;

		(void)logline_time_arg(arg, &t);
	}
	free(arg);
	return 0;
}
