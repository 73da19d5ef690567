/* SPDX-License-Identifier: GPL-2.0-or-later */
/* logline.c - the log-line parser: typed fields back from a line fmt wrote. */
#include <stdio.h>
#include <string.h>

#include "fmt.h"
#include "logline.h"

#define NS 1000000000LL

/* Lowercase hex digit values, -1 for any other byte (fmt writes lowercase only). */
static const signed char hexval[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7,
	['7'] = 8, ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14,
	['e'] = 15, ['f'] = 16,
};      /* value + 1, so that the zero default means "not a digit" */

static inline int hex(unsigned char c)
{
	return hexval[c] - 1;
}

static inline bool digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A SOURCE name's characters (conf_read.c's rule), also those of EV and STAT names. */
static inline bool name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || digit((char)c) || c == '_'
	       || c == '-' || c == '.' || c == ':';
}

_Static_assert(LOGLINE_KV_MAX == 64, "the message 'more than 64 key=value fields' says it");

/* The reason: fmt with one %s, the field that failed, shortened and printable. */
static int fail(struct logline_parser *p, const char *fmt, const char *a, size_t alen)
{
	char shown[32];
	size_t k = 0, i;

	/* at most 20 characters of it, then "..." */
	for (i = 0; i < alen && k < 20; i++) {
		unsigned char c = (unsigned char)a[i];

		if (c > 0x20 && c < 0x7f)
			shown[k++] = (char)c;
		else
			k += (size_t)snprintf(shown + k, sizeof(shown) - k, "\\x%02x", c);
	}
	memcpy(shown + k, i < alen ? "..." : "", i < alen ? 4 : 1);
	{
		const char *at = strstr(fmt, "%s");
		int pre = at != NULL ? (int)(at - fmt) : (int)strlen(fmt);

		snprintf(p->why, sizeof(p->why), "%.*s%s%s", pre, fmt, at != NULL ? shown : "",
			 at != NULL ? at + 2 : "");
	}
	return -1;
}

static int why(struct logline_parser *p, const char *msg)
{
	snprintf(p->why, sizeof(p->why), "%s", msg);
	return -1;
}

void logline_init(struct logline_parser *p)
{
	memset(p->why, 0, sizeof(p->why));
	memset(p->cached, 0, sizeof(p->cached));
	p->cached_sec = INT64_MIN;
}

/* sec and ns (below NS) as int64 nanoseconds, if they fit (the years 1677 to 2262).
 * Checked with the compilers' overflow builtins: 32-bit targets have no __int128. */
static int to_ns(int64_t sec, uint64_t ns, int64_t *t)
{
	int64_t frac = (int64_t)ns, v;

	/* before 1970 a whole second less and a negative fraction, so that the earliest
	 * time (-9223372037 s + 0.145224192 s) does not overflow on its way */
	if (sec < 0 && frac > 0) {
		sec++;
		frac -= NS;
	}
	if (__builtin_mul_overflow(sec, NS, &v) || __builtin_add_overflow(v, frac, &v))
		return -1;
	*t = v;
	return 0;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool num(const char *s, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	for (size_t i = 0; i < n; i++) {
		if (!digit(s[i]))
			return false;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	*v = x;
	return n > 0;
}

/* "YYYY-MM-DDTHH:MM:SS" (19 characters) to seconds since the epoch. */
static int iso_seconds(const char *s, int64_t *sec)
{
	static const unsigned char mdays[13] = { 0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	uint64_t y, mo, d, h, mi, se;

	if (s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':'
	    || !num(s, 4, &y) || !num(s + 5, 2, &mo) || !num(s + 8, 2, &d) || !num(s + 11, 2, &h)
	    || !num(s + 14, 2, &mi) || !num(s + 17, 2, &se))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo] || h > 23 || mi > 59 || se > 59)
		return -1;
	if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
		return -1;
	*sec = days_from_civil((int64_t)y, (unsigned)mo, (unsigned)d) * 86400
	       + (int64_t)(h * 3600 + mi * 60 + se);
	return 0;
}

/* Epoch "[-]S" with up to 9 fraction digits (exactly `frac` of them if frac > 0). */
static int epoch_time(const char *s, size_t n, int exact_frac, int64_t *t)
{
	const char *dot = memchr(s, '.', n), *end = s + n;
	bool neg = n > 0 && s[0] == '-';
	uint64_t sec, ns = 0;
	size_t fl;

	if (neg)
		s++;
	if (dot == NULL)
		dot = end;
	if (dot - s > 11 || !num(s, (size_t)(dot - s), &sec))
		return -1;
	fl = dot < end ? (size_t)(end - dot - 1) : 0;
	if ((exact_frac > 0 && (dot == end || fl != (size_t)exact_frac)) || fl > 9
	    || (dot < end && !num(dot + 1, fl, &ns) && fl > 0) || (dot < end && fl == 0))
		return -1;
	for (size_t i = fl; i < 9; i++)
		ns *= 10;
	/* as fmt writes it: no leading zero, no "-0.000000000" */
	if (exact_frac > 0 && ((dot - s > 1 && s[0] == '0') || (neg && sec == 0 && ns == 0)))
		return -1;
	{
		uint64_t mag;

		/* up to 11 digits of seconds: the product may not fit even 64 bits unsigned */
		if (__builtin_mul_overflow(sec, (uint64_t)NS, &mag)
		    || __builtin_add_overflow(mag, ns, &mag)
		    || mag > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
			return -1;
		*t = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	}
	return 0;
}

int logline_time(const char *s, size_t n, int64_t *t)
{
	int64_t sec;
	uint64_t ns;

	if (n == 30 && s[10] == 'T') {
		if (s[19] != '.' || s[29] != 'Z' || !num(s + 20, 9, &ns) || iso_seconds(s, &sec) < 0)
			return -1;
		return to_ns(sec, ns, t);
	}
	return epoch_time(s, n, 9, t);
}

int logline_time_arg(const char *s, int64_t *t)
{
	size_t n = strlen(s);
	int64_t sec;
	uint64_t ns = 0;

	if (n >= 10 && s[4] == '-') {
		char full[20];

		if (n == 10) {
			memcpy(full, s, 10);
			memcpy(full + 10, "T00:00:00", 9);
			s = full;
			n = 19;
		}
		if (n < 19 || iso_seconds(s, &sec) < 0)
			return -1;
		s += 19;
		n -= 19;
		if (n > 0 && s[n - 1] == 'Z')
			n--;
		if (n > 0) {
			if (s[0] != '.' || n < 2 || n > 10 || !num(s + 1, n - 1, &ns))
				return -1;
			for (size_t i = n - 1; i < 9; i++)
				ns *= 10;
		}
		return to_ns(sec, ns, t);
	}
	return epoch_time(s, n, 0, t);
}

long logline_unescape(const char *s, size_t n, uint8_t *out, size_t cap)
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)s[i];

		if (len == cap || b == '"' || b <= 0x20 || b >= 0x7f)
			return -1;
		if (b == '\\') {
			if (++i == n)
				return -1;
			switch (s[i]) {
			case '\\': b = '\\'; break;
			case '"': b = '"'; break;
			case 'r': b = '\r'; break;
			case 'n': b = '\n'; break;
			case 't': b = '\t'; break;
			case 'x':
				if (i + 2 >= n || hex((unsigned char)s[i + 1]) < 0
				    || hex((unsigned char)s[i + 2]) < 0)
					return -1;
				b = (unsigned char)(hex((unsigned char)s[i + 1]) << 4
						    | hex((unsigned char)s[i + 2]));
				/* fmt escapes only what it must: a printable byte as \xHH is not its */
				if (b > 0x20 && b < 0x7f && b != '"' && b != '\\')
					return -1;
				if (b == '\\' || b == '"' || b == '\r' || b == '\n' || b == '\t')
					return -1;
				i += 2;
				break;
			default:
				return -1;
			}
		}
		out[len++] = b;
	}
	return (long)len;
}

/* Splits off the next field at *pos (up to a space or the end). */
static bool next_field(const char *s, size_t n, size_t *pos, const char **f, size_t *fl)
{
	const char *sp;

	if (*pos >= n)
		return false;
	*f = s + *pos;
	sp = memchr(*f, ' ', n - *pos);
	*fl = sp != NULL ? (size_t)(sp - *f) : n - *pos;
	*pos += *fl + 1;
	return true;
}

static int parse_hexval(const char *f, size_t fl, unsigned *v)
{
	unsigned x = 0;

	if (fl < 3 || fl > 6 || fl == 5 || f[0] != '0' || f[1] != 'x')
		return -1;
	for (size_t i = 2; i < fl; i++) {
		int d = hex((unsigned char)f[i]);

		if (d < 0)
			return -1;
		x = x << 4 | (unsigned)d;
	}
	*v = x;
	return (int)(fl - 2);
}

static int parse_payload(struct logline_parser *p, const char *s, size_t n, size_t pos,
			 struct logline *l)
{
	const char *f = s;
	size_t fl = 0;
	uint64_t len;

	if (!next_field(s, n, &pos, &f, &fl))
		return why(p, "LEN is missing");
	if (fl > 5 || !num(f, fl, &len) || (fl > 1 && f[0] == '0'))
		return fail(p, "LEN '%s' is not a number", f, fl);
	if (len > LOGLINE_DATA_MAX)
		return fail(p, "LEN %s is above 65535", f, fl);
	l->len = (size_t)len;
	l->data = p->data;
	if (!next_field(s, n, &pos, &f, &fl))
		return why(p, "no HEX or TEXT field after LEN");
	if (f[0] != '"') {
		l->has_hex = true;
		if (len == 0 ? fl != 1 || f[0] != '-' : fl != 2 * len)
			return fail(p, "HEX '%s' does not hold LEN bytes", f, fl);
		for (size_t i = 0; i < len; i++) {
			int hi = hex((unsigned char)f[2 * i]), lo = hex((unsigned char)f[2 * i + 1]);

			if (hi < 0 || lo < 0)
				return fail(p, "HEX '%s' is not lowercase hex", f + 2 * i, 2);
			p->data[i] = (uint8_t)(hi << 4 | lo);
		}
		if (!next_field(s, n, &pos, &f, &fl))
			return 0;
	}
	if (fl < 2 || f[0] != '"' || f[fl - 1] != '"')
		return fail(p, "TEXT '%s' is not in double quotes", f, fl);
	l->has_text = true;
	if (l->has_hex) {
		/* both: TEXT must say the same bytes; decode it over a second buffer
		 * would cost a copy, so compare as it is decoded */
		uint8_t b[1];
		size_t k = 0;

		for (size_t i = 1; i + 1 < fl; k++) {
			size_t e = f[i] == '\\' ? (f[i + 1] == 'x' ? 4 : 2) : 1;

			if (i + e > fl - 1 || logline_unescape(f + i, e, b, 1) != 1)
				return fail(p, "TEXT has a malformed escape at '%s'", f + i, fl - 1 - i);
			if (k >= len || b[0] != p->data[k])
				return fail(p, "TEXT and HEX differ at '%s'", f + i, fl - 1 - i);
			i += e;
		}
		if (k != len)
			return why(p, "TEXT has fewer bytes than LEN");
	} else {
		long got = logline_unescape(f + 1, fl - 2, p->data, len);

		if (got < 0)
			return fail(p, "TEXT '%s' is malformed or longer than LEN", f, fl);
		if ((size_t)got != len)
			return fail(p, "TEXT '%s' has fewer bytes than LEN", f, fl);
	}
	if (pos <= n)
		return fail(p, "unexpected field '%s' after TEXT", s + pos, n - pos);
	return 0;
}

static int parse_kv(struct logline_parser *p, const char *s, size_t n, size_t pos,
		    struct logline *l)
{
	const char *f;
	size_t fl;
	uint8_t scratch[1];

	if (!next_field(s, n, &pos, &f, &fl))
		return why(p, "no NAME after the KIND");
	for (size_t i = 0; i < fl; i++)
		if (!name_char((unsigned char)f[i]))
			return fail(p, "NAME '%s' has a character a name cannot have", f, fl);
	l->name = f;
	l->name_len = fl;
	while (next_field(s, n, &pos, &f, &fl)) {
		const char *eq = memchr(f, '=', fl);
		struct logline_kv *kv;

		if (eq == NULL || eq == f)
			return fail(p, "'%s' is not key=value", f, fl);
		if (l->nkv == LOGLINE_KV_MAX)
			return fail(p, "more than 64 key=value fields at '%s'", f, fl);
		for (const char *c = f; c < eq; c++)
			if (!((*c >= 'a' && *c <= 'z') || digit(*c) || *c == '_'))
				return fail(p, "key '%s' is not lowercase letters, digits and _", f,
					    (size_t)(eq - f));
		kv = &l->kv[l->nkv++];
		kv->key = f;
		kv->key_len = (size_t)(eq - f);
		kv->val = eq + 1;
		kv->val_len = fl - kv->key_len - 1;
		/* well formed: every escape whole, nothing unescaped that must be */
		for (size_t i = 0; i < kv->val_len;) {
			size_t e = kv->val[i] == '\\'
				   ? (i + 1 < kv->val_len && kv->val[i + 1] == 'x' ? 4 : 2) : 1;

			if (i + e > kv->val_len || logline_unescape(kv->val + i, e, scratch, 1) != 1)
				return fail(p, "value '%s' has a malformed escape", f, fl);
			i += e;
		}
	}
	return 0;
}

/* EV: "dir=tx", if there, is its last field, as fmt writes it. */
static int ev_dir(struct logline_parser *p, struct logline *l)
{
	for (unsigned i = 0; i < l->nkv; i++) {
		const struct logline_kv *kv = &l->kv[i];

		if (kv->key_len != 3 || memcmp(kv->key, "dir", 3) != 0)
			continue;
		if (i + 1 != l->nkv || kv->val_len != 2 || memcmp(kv->val, "tx", 2) != 0)
			return fail(p, "'dir=%s' is not the last field dir=tx", kv->val, kv->val_len);
		l->dir = REC_DIR_TX;
	}
	return 0;
}

/* The next field as a decimal number (no leading zero); what names it in the reason. */
static int field_u64(struct logline_parser *p, const char *s, size_t n, size_t *pos,
		     const char *what, uint64_t *v)
{
	const char *f;
	size_t fl;
	uint64_t x = 0;

	if (!next_field(s, n, pos, &f, &fl)) {
		snprintf(p->why, sizeof(p->why), "%s is missing", what);
		return -1;
	}
	if (fl == 0 || fl > 20 || (fl > 1 && f[0] == '0'))
		goto bad;
	for (size_t i = 0; i < fl; i++) {
		unsigned d = (unsigned)(f[i] - '0');

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			goto bad;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
bad:
	snprintf(p->why, sizeof(p->why), "%s '%.*s' is not a number", what, (int)(fl > 24 ? 24 : fl), f);
	return -1;
}

int logline_parse(struct logline_parser *p, const char *s, size_t n, struct logline *l)
{
	const char *f, *f2;
	size_t fl, fl2, pos = 0;
	unsigned k;
	int d1, d2;

	l->data = NULL;
	l->len = 0;
	l->has_hex = l->has_text = false;
	l->nkv = 0;
	l->name = NULL;
	l->name_len = 0;
	l->dir = REC_DIR_MAIN;
	if (n > 0 && s[n - 1] == ' ')
		return why(p, "a space at the end of the line");
	if (memchr(s, '\n', n) != NULL || memchr(s, '\0', n) != NULL)
		return why(p, "a newline or NUL inside the line");
	if (!next_field(s, n, &pos, &f, &fl) || fl == 0)
		return why(p, "an empty line, or a space before TIME");
	if (fl == 30 && f[10] == 'T' && memcmp(f, p->cached, 19) == 0 && p->cached_sec != INT64_MIN) {
		uint64_t ns;

		if (f[19] != '.' || f[29] != 'Z' || !num(f + 20, 9, &ns) || to_ns(p->cached_sec, ns, &l->t) < 0)
			return fail(p, "TIME '%s' is not ISO 8601 with nanoseconds, nor epoch", f, fl);
	} else {
		if (logline_time(f, fl, &l->t) < 0)
			return fail(p, "TIME '%s' is not ISO 8601 with nanoseconds, nor epoch", f, fl);
		if (fl == 30 && f[10] == 'T') {
			memcpy(p->cached, f, 19);
			p->cached_sec = l->t / NS - (l->t % NS < 0);
		}
	}

	if (!next_field(s, n, &pos, &f, &fl) || fl == 0 || fl >= 32)
		return fail(p, "SOURCE '%s' is missing or longer than 31 characters", f, fl);
	for (size_t i = 0; i < fl; i++)
		if (!name_char((unsigned char)f[i]))
			return fail(p, "SOURCE '%s' has a character a name cannot have", f, fl);
	l->src = f;
	l->src_len = fl;

	if (!next_field(s, n, &pos, &f, &fl))
		return why(p, "no KIND after SOURCE");
	k = fmt_kind_find(f, fl);
	if (k == 0)
		return fail(p, "unknown KIND '%s'", f, fl);
	l->kind = (enum rec_kind)k;

	switch (fmt_kind_shape(k)) {
	case FMT_SHAPE_PAYLOAD:
		return parse_payload(p, s, n, pos, l);
	case FMT_SHAPE_EV:
		if (parse_kv(p, s, n, pos, l) < 0)
			return -1;
		return ev_dir(p, l);
	case FMT_SHAPE_STAT:
		return parse_kv(p, s, n, pos, l);
	case FMT_SHAPE_PINS_TICK:
	case FMT_SHAPE_PINS:
		if (!next_field(s, n, &pos, &f, &fl) || !next_field(s, n, &pos, &f2, &fl2))
			return why(p, "VALUE or CHANGED is missing");
		d1 = parse_hexval(f, fl, &l->value);
		d2 = parse_hexval(f2, fl2, &l->changed);
		if (d1 < 0 || d2 != d1)
			return fail(p, "VALUE and CHANGED are not 0x and 1, 2 or 4 lowercase hex "
				    "digits alike at '%s'", d1 < 0 ? f : f2, d1 < 0 ? fl : fl2);
		l->digits = (unsigned)d1;
		l->tick = 0;
		if (fmt_kind_shape(k) == FMT_SHAPE_PINS) {
			if (d1 != 1)
				return fail(p, "LINES VALUE '%s' is not one hex digit", f, fl);
			break;
		}
		if (field_u64(p, s, n, &pos, "TICK", &l->tick) < 0)
			return -1;
		break;
	case FMT_SHAPE_DROP:
		if (field_u64(p, s, n, &pos, "RECORDS", &l->records) < 0
		    || field_u64(p, s, n, &pos, "BYTES", &l->bytes) < 0)
			return -1;
		if (pos < n && n - pos == 6 && memcmp(s + pos, "dir=tx", 6) == 0) {
			l->dir = REC_DIR_TX;
			pos = n + 1;
		}
		break;
	case FMT_SHAPE_COUNT:
		if (field_u64(p, s, n, &pos, "COUNT", &l->records) < 0)
			return -1;
		break;
	case FMT_NSHAPES:
		return fail(p, "unknown KIND '%s'", f, fl);    /* a table row without a shape */
	}
	if (pos <= n)
		return fail(p, "unexpected field '%s' at the end", s + pos, n - pos);
	return 0;
}

int logline_hexval(int c)
{
	return c >= 0 && c < 256 ? hex((unsigned char)c) : -1;
}

const struct logline_kv *logline_kv(const struct logline *l, const char *key)
{
	size_t kl = strlen(key);

	for (unsigned i = 0; i < l->nkv; i++)
		if (l->kv[i].key_len == kl && memcmp(l->kv[i].key, key, kl) == 0)
			return &l->kv[i];
	return NULL;
}

bool logline_kv_str(const struct logline *l, const char *key, char *out, size_t cap)
{
	const struct logline_kv *kv = logline_kv(l, key);
	uint8_t b[1];
	size_t k = 0;

	if (kv == NULL || cap == 0)
		return false;
	/* escape by escape, so that a value longer than out is cut, not refused */
	for (size_t i = 0; i < kv->val_len && k + 1 < cap;) {
		size_t e = kv->val[i] == '\\' ? (i + 1 < kv->val_len && kv->val[i + 1] == 'x' ? 4 : 2) : 1;

		if (i + e > kv->val_len || logline_unescape(kv->val + i, e, b, 1) != 1)
			return false;
		out[k++] = (char)b[0];
		i += e;
	}
	out[k] = '\0';
	return true;
}

bool logline_kv_u64(const struct logline *l, const char *key, uint64_t *v)
{
	const struct logline_kv *kv = logline_kv(l, key);
	uint64_t x = 0;

	if (kv == NULL || kv->val_len == 0 || kv->val_len > 18)
		return false;
	if (kv->val_len > 2 && kv->val[0] == '0' && kv->val[1] == 'x') {
		for (size_t i = 2; i < kv->val_len; i++) {
			int d = hex((unsigned char)kv->val[i]);

			if (d < 0)
				return false;
			x = x << 4 | (unsigned)d;
		}
	} else if (!num(kv->val, kv->val_len, &x)) {
		return false;
	}
	*v = x;
	return true;
}

const char *logline_kind_name(enum rec_kind k)
{
	const char *w = fmt_kind((unsigned)k);

	return w != NULL ? w : "?";
}
