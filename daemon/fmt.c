/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmt.c - the log-line formatter: the KIND and EV tables, lines, fields. */
#include <stdbool.h>
#include <string.h>
#include <syslog.h>

#include "fmt.h"

static const char hexdig[] = "0123456789abcdef";

/* Every EV NAME, and how loud it is in the journal: a warning where data may be
 * missing, info where only a packet boundary is in doubt. */
static const struct {
	const char *name;
	int priority;
} events[] = {
	[EV_START] = { "start", LOG_NOTICE },
	[EV_STOP] = { "stop", LOG_NOTICE },
	[EV_OPEN] = { "open", LOG_NOTICE },
	[EV_CLOSE] = { "close", LOG_WARNING },
	[EV_ERROR] = { "error", LOG_WARNING },
	[EV_LATE] = { "late-delivery", LOG_INFO },
	[EV_RT_MISSING] = { "rt-missing", LOG_NOTICE },
	[EV_UART_ERRORS] = { "uart-errors", LOG_NOTICE },
	[EV_IRQ] = { "irq-priority", LOG_NOTICE },
	[EV_REPAIR] = { "repair", LOG_NOTICE },
	[EV_REOPEN] = { "reopen", LOG_NOTICE },
	[EV_WRITE_RECOVERED] = { "write-recovered", LOG_NOTICE },
	[EV_SYNC_FAILED] = { "sync-failed", LOG_NOTICE },
	[EV_CLOCK_STEP] = { "clock-step", LOG_NOTICE },
	[EV_CLOCK] = { "clock", LOG_INFO },
	[EV_SEQ_GAP] = { "seq-gap", LOG_NOTICE },
	[EV_BAD_RECORD] = { "bad-record", LOG_NOTICE },
	[EV_RELAY_LOST] = { "relay-lost", LOG_WARNING },
	[EV_APP_SETTINGS] = { "app-settings", LOG_NOTICE },
	[EV_JOURNAL_LOST] = { "journal-lost", LOG_WARNING },
	[EV_DELIVERY] = { "delivery", LOG_NOTICE },
};
_Static_assert(sizeof(events) / sizeof(events[0]) == EV_NCODES,
	       "every enum ev_code needs its row in events[]");

void fmt_init(struct fmt *f, enum conf_ts ts, enum conf_payload payload)
{
	memset(f, 0, sizeof(*f));
	f->ts = ts;
	f->payload = payload;
	f->cached_sec = INT64_MIN;
}

size_t fmt_rx_max(size_t len)
{
	/* time, name, kind, length, spaces, newline + 2 hex + 4 escaped per byte + quotes */
	return FMT_TIME_MAX + CONF_NAME_MAX + 16 + 24 + 6 * len + 2;
}

size_t fmt_u64(char *out, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

static void put2(char *out, unsigned v)
{
	out[0] = (char)('0' + v / 10);
	out[1] = (char)('0' + v % 10);
}

/* Days since 1970-01-01 to a civil date (H. Hinnant's days_from_civil, inverted). */
static void civil(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;

	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static size_t put_nsec(char *out, int64_t nsec)
{
	for (int i = 8; i >= 0; i--) {
		out[i] = (char)('0' + nsec % 10);
		nsec /= 10;
	}
	return 9;
}

size_t fmt_time(struct fmt *f, char *out, int64_t t_real)
{
	int64_t sec = t_real / 1000000000, nsec = t_real % 1000000000;
	size_t n;

	if (nsec < 0) {
		nsec += 1000000000;
		sec--;
	}
	if (f->ts == CONF_TS_EPOCH) {
		/* a negative time prints as -S.N of its magnitude, so awk reads it right */
		uint64_t mag = t_real < 0 ? (uint64_t)0 - (uint64_t)t_real : (uint64_t)t_real;

		n = 0;
		if (t_real < 0)
			out[n++] = '-';
		n += fmt_u64(out + n, mag / 1000000000);
		out[n++] = '.';
		return n + put_nsec(out + n, (int64_t)(mag % 1000000000));
	}
	if (sec != f->cached_sec) {
		int64_t days = sec / 86400, rem = sec % 86400, y;
		unsigned m, d;
		char *c = f->cached;

		if (rem < 0) {
			rem += 86400;
			days--;
		}
		civil(days, &y, &m, &d);
		if (y < 0 || y > 9999)
			y = 0;      /* outside ISO 8601's four digits; not a time we log */
		put2(c, (unsigned)(y / 100));
		put2(c + 2, (unsigned)(y % 100));
		c[4] = '-';
		put2(c + 5, m);
		c[7] = '-';
		put2(c + 8, d);
		c[10] = 'T';
		put2(c + 11, (unsigned)(rem / 3600));
		c[13] = ':';
		put2(c + 14, (unsigned)(rem / 60 % 60));
		c[16] = ':';
		put2(c + 17, (unsigned)(rem % 60));
		c[19] = '.';
		f->cached_len = 20;
		f->cached_sec = sec;
	}
	memcpy(out, f->cached, f->cached_len);
	n = f->cached_len + put_nsec(out + f->cached_len, nsec);
	out[n++] = 'Z';
	return n;
}

size_t fmt_hex(char *out, const uint8_t *data, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hexdig[data[i] >> 4];
		out[2 * i + 1] = hexdig[data[i] & 15];
	}
	return 2 * len;
}

size_t fmt_text(char *out, const uint8_t *data, size_t len)
{
	char *o = out;

	*o++ = '"';
	for (size_t i = 0; i < len; i++) {
		uint8_t b = data[i];
		switch (b) {
		case '\\': *o++ = '\\'; *o++ = '\\'; break;
		case '"': *o++ = '\\'; *o++ = '"'; break;
		case '\r': *o++ = '\\'; *o++ = 'r'; break;
		case '\n': *o++ = '\\'; *o++ = 'n'; break;
		case '\t': *o++ = '\\'; *o++ = 't'; break;
		default:
			if (b > 0x20 && b < 0x7f) {
				*o++ = (char)b;
			} else {
				*o++ = '\\';
				*o++ = 'x';
				*o++ = hexdig[b >> 4];
				*o++ = hexdig[b & 15];
			}
		}
	}
	*o++ = '"';
	return (size_t)(o - out);
}

static size_t head(struct fmt *f, char *out, int64_t t_real, const char *src, const char *kind)
{
	size_t n = fmt_time(f, out, t_real);
	size_t l = strlen(src);

	out[n++] = ' ';
	memcpy(out + n, src, l);
	n += l;
	out[n++] = ' ';
	l = strlen(kind);
	memcpy(out + n, kind, l);
	return n + l;
}

size_t fmt_i64(char *out, int64_t v)
{
	if (v >= 0)
		return fmt_u64(out, (uint64_t)v);
	out[0] = '-';
	return 1 + fmt_u64(out + 1, (uint64_t)0 - (uint64_t)v);
}

size_t fmt_hexval(char *out, unsigned v, unsigned digits)
{
	out[0] = '0';
	out[1] = 'x';
	for (unsigned i = 0; i < digits; i++)
		out[2 + i] = hexdig[(v >> (4 * (digits - 1 - i))) & 15];
	return 2 + digits;
}

/* The errno's name, or its number: what follows "errno=". */
static size_t put_errno(char *out, int64_t err)
{
	const char *name = strerrorname_np((int)err);
	size_t n;

	if (name == NULL)
		return fmt_i64(out, err);
	n = strlen(name);
	memcpy(out, name, n);
	return n;
}

/* ---- the fields of each KIND, written after "TIME SOURCE KIND" ---- */

/* What a line's fields are made of. */
struct line {
	const struct fmt *f;
	const struct rec *r;
	const uint8_t *data;
	size_t len;
	unsigned bits;
};

/* Writes the fields, each after a space, at out; returns their length. */
typedef size_t fields_fn(char *out, const struct line *l);

static size_t rx_fields(char *out, const struct line *l)
{
	size_t n = 0;

	out[n++] = ' ';
	n += fmt_u64(out + n, l->len);
	if (l->f->payload & CONF_PAYLOAD_HEX) {
		out[n++] = ' ';
		n += fmt_hex(out + n, l->data, l->len);
		if (l->len == 0)
			out[n++] = '-';     /* never an empty field */
	}
	if (l->f->payload & CONF_PAYLOAD_TEXT) {
		out[n++] = ' ';
		n += fmt_text(out + n, l->data, l->len);
	}
	return n;
}

/* " dir=tx" for an EV or DROP record of a port's TX ring, else nothing. */
static size_t put_dir(char *out, const struct rec *r)
{
	if (r->c != REC_DIR_TX)
		return 0;
	memcpy(out, " dir=tx", 7);
	return 7;
}

/* STAT, and EV after its NAME: the preformatted fields, if any. */
static size_t text_fields(char *out, const struct line *l)
{
	size_t len = l->len < FMT_FIELDS_MAX ? l->len : FMT_FIELDS_MAX;

	/* source_event caps at SOURCE_EV_MAX, below FMT_FIELDS_MAX */
	if (len == 0)
		return 0;
	out[0] = ' ';
	memcpy(out + 1, l->data, len);
	return 1 + len;
}

static size_t ev_fields(char *out, const struct line *l)
{
	const char *name = fmt_ev_name((unsigned)l->r->a);
	size_t n;

	if (name == NULL)
		name = "unknown";
	n = strlen(name);
	out[0] = ' ';
	memcpy(out + 1, name, n);
	n += 1 + text_fields(out + 1 + n, l);
	if (l->r->b != 0) {
		memcpy(out + n, " errno=", 7);
		n += 7;
		n += put_errno(out + n, l->r->b);
	}
	return n + put_dir(out + n, l->r);
}

/* Two numbers, or one (b NULL): DROP's records and bytes, OVERRUN's count. */
static size_t put_counts(char *out, uint64_t a, const uint64_t *b)
{
	size_t n = 0;

	out[n++] = ' ';
	n += fmt_u64(out + n, a);
	if (b != NULL) {
		out[n++] = ' ';
		n += fmt_u64(out + n, *b);
	}
	return n;
}

static size_t drop_fields(char *out, const struct line *l)
{
	uint64_t bytes = (uint64_t)l->r->b;
	size_t n = put_counts(out, (uint64_t)l->r->a, &bytes);

	return n + put_dir(out + n, l->r);
}

static size_t overrun_fields(char *out, const struct line *l)
{
	return put_counts(out, (uint64_t)l->r->a, NULL);
}

/* A value and the bits that changed, in hex, `digits` wide. */
static size_t put_pins(char *out, const struct rec *r, unsigned digits)
{
	size_t n = 0;

	out[n++] = ' ';
	n += fmt_hexval(out + n, (unsigned)r->a, digits);
	out[n++] = ' ';
	return n + fmt_hexval(out + n, (unsigned)r->b, digits);
}

/* IN: value and changed bits, as wide as the port's value, and the tick. */
static size_t in_fields(char *out, const struct line *l)
{
	size_t n = put_pins(out, l->r, l->bits != 0 ? l->bits / 4 : 2);

	out[n++] = ' ';
	return n + fmt_u64(out + n, (uint64_t)l->r->c);
}

/* LINES: CTS, DSR, DCD, RI as one hex digit, and the ones that changed. */
static size_t lines_fields(char *out, const struct line *l)
{
	return put_pins(out, l->r, 1);
}

/* The writer of each shape of fields (fmt.h), which the parser reads back. */
static fields_fn *const shape_fields[FMT_NSHAPES] = {
	[FMT_SHAPE_PAYLOAD] = rx_fields, [FMT_SHAPE_EV] = ev_fields,
	[FMT_SHAPE_STAT] = text_fields, [FMT_SHAPE_DROP] = drop_fields,
	[FMT_SHAPE_COUNT] = overrun_fields, [FMT_SHAPE_PINS_TICK] = in_fields,
	[FMT_SHAPE_PINS] = lines_fields,
};

/* Every KIND: its word and the shape of its fields. */
static const struct {
	const char *word;
	enum fmt_shape shape;
} kinds[] = {
	[REC_RX] = { "RX", FMT_SHAPE_PAYLOAD },
	[REC_EV] = { "EV", FMT_SHAPE_EV },
	[REC_DROP] = { "DROP", FMT_SHAPE_DROP },
	[REC_IN] = { "IN", FMT_SHAPE_PINS_TICK },
	[REC_OVERRUN] = { "OVERRUN", FMT_SHAPE_COUNT },
	[REC_LINES] = { "LINES", FMT_SHAPE_PINS },
	[REC_STAT] = { "STAT", FMT_SHAPE_STAT },
	[REC_TX] = { "TX", FMT_SHAPE_PAYLOAD },
};
_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == REC_NKINDS,
	       "every enum rec_kind needs its row in kinds[]");

const char *fmt_kind(unsigned kind)
{
	return kind < REC_NKINDS ? kinds[kind].word : NULL;
}

enum fmt_shape fmt_kind_shape(unsigned kind)
{
	return kind < REC_NKINDS && kinds[kind].word != NULL ? kinds[kind].shape : FMT_NSHAPES;
}

unsigned fmt_kind_find(const char *word, size_t len)
{
	for (unsigned k = 0; k < REC_NKINDS; k++)
		if (kinds[k].word != NULL && strlen(kinds[k].word) == len
		    && memcmp(kinds[k].word, word, len) == 0)
			return k;
	return 0;
}

const char *fmt_ev_name(unsigned code)
{
	return code < EV_NCODES ? events[code].name : NULL;
}

int fmt_ev_priority(unsigned code)
{
	return code < EV_NCODES && events[code].name != NULL ? events[code].priority : LOG_NOTICE;
}

size_t fmt_line_max(size_t len)
{
	/* time, name, kind, EV name, errno, dir=tx, spaces, newline */
	return FMT_TIME_MAX + CONF_NAME_MAX + 16 + FMT_EV_NAME_MAX + 40 + len + 2;
}

size_t fmt_record(struct fmt *f, char *out, const char *src, const struct rec *r,
		  const void *data, size_t len, unsigned bits)
{
	struct line l = { .f = f, .r = r, .data = data, .len = len, .bits = bits };
	size_t n;

	if (fmt_kind(r->kind) == NULL)
		return 0;
	n = head(f, out, r->t_real, src, kinds[r->kind].word);
	n += shape_fields[kinds[r->kind].shape](out + n, &l);
	out[n++] = '\n';
	return n;
}

/* ---- the fields of EV and STAT lines ---- */

void fmt_kv_init(struct fmt_kv *kv, char *text, size_t cap)
{
	kv->text = text;
	kv->cap = cap;
	kv->len = 0;
	if (cap > 0)
		text[0] = '\0';
}

/*
 * Starts an item: " key=" (no space first, no "key=" for a bare word) when it
 * and `more` bytes fit with the NUL, else nothing, and false.
 */
static bool put_key(struct fmt_kv *kv, const char *key, size_t more)
{
	size_t klen = key != NULL ? strlen(key) : 0, n = kv->len;

	if (kv->cap == 0)
		return false;
	if (n + klen + 2 + more >= kv->cap) {
		kv->text[n < kv->cap ? n : kv->cap - 1] = '\0';
		return false;
	}
	if (n > 0)
		kv->text[n++] = ' ';
	if (key != NULL) {
		memcpy(kv->text + n, key, klen);
		n += klen;
		kv->text[n++] = '=';
	}
	kv->text[n] = '\0';
	kv->len = n;
	return true;
}

/* Appends a value escaped like packet text (without quotes), cut between escapes. */
static void put_escaped(struct fmt_kv *kv, const char *value)
{
	size_t n = kv->len;

	for (const uint8_t *v = (const uint8_t *)value; *v != '\0'; v++) {
		char esc[4];
		size_t e = 1;

		esc[0] = (char)*v;
		if (*v <= 0x20 || *v >= 0x7f || *v == '"' || *v == '\\') {
			/* fmt_text with one byte, minus its quotes */
			char q[8];
			size_t ql = fmt_text(q, v, 1);

			e = ql - 2;
			memcpy(esc, q + 1, e);
		}
		if (n + e >= kv->cap)
			break;
		memcpy(kv->text + n, esc, e);
		n += e;
	}
	kv->text[n] = '\0';
	kv->len = n;
}

void fmt_kv_word(struct fmt_kv *kv, const char *word)
{
	if (put_key(kv, NULL, 0))
		put_escaped(kv, word);
}

void fmt_kv_str(struct fmt_kv *kv, const char *key, const char *value)
{
	if (put_key(kv, key, 0))
		put_escaped(kv, value);
}

/* A number is written whole or not at all: a cut number would lie. */
static void put_number(struct fmt_kv *kv, const char *key, const char *digits, size_t n)
{
	if (!put_key(kv, key, n))
		return;
	memcpy(kv->text + kv->len, digits, n);
	kv->len += n;
	kv->text[kv->len] = '\0';
}

void fmt_kv_u64(struct fmt_kv *kv, const char *key, uint64_t v)
{
	char num[24];

	put_number(kv, key, num, fmt_u64(num, v));
}

void fmt_kv_i64(struct fmt_kv *kv, const char *key, int64_t v)
{
	char num[24];

	put_number(kv, key, num, fmt_i64(num, v));
}

void fmt_kv_delta(struct fmt_kv *kv, const char *key, int64_t v)
{
	char num[24];

	num[0] = '+';
	put_number(kv, key, num, v < 0 ? fmt_i64(num, v) : 1 + fmt_u64(num + 1, (uint64_t)v));
}

void fmt_kv_errno(struct fmt_kv *kv, const char *key, int64_t err)
{
	char name[32];

	put_number(kv, key, name, put_errno(name, err));
}
