/* fmt.c - the log-line formatter. */
#include <string.h>

#include "fmt.h"

static const char hexdig[] = "0123456789abcdef";

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

size_t fmt_rx(struct fmt *f, char *out, int64_t t_real, const char *src,
	      const uint8_t *data, size_t len)
{
	size_t n = head(f, out, t_real, src, "RX");

	out[n++] = ' ';
	n += fmt_u64(out + n, len);
	if (f->payload & CONF_PAYLOAD_HEX) {
		out[n++] = ' ';
		n += fmt_hex(out + n, data, len);
		if (len == 0)
			out[n++] = '-';     /* never an empty field */
	}
	if (f->payload & CONF_PAYLOAD_TEXT) {
		out[n++] = ' ';
		n += fmt_text(out + n, data, len);
	}
	out[n++] = '\n';
	return n;
}

size_t fmt_fields(struct fmt *f, char *out, int64_t t_real, const char *src, const char *kind,
		  const char *fields, size_t len)
{
	size_t n = head(f, out, t_real, src, kind);

	out[n++] = ' ';
	memcpy(out + n, fields, len);
	n += len;
	out[n++] = '\n';
	return n;
}

size_t fmt_ev(struct fmt *f, char *out, int64_t t_real, const char *src, const char *text,
	      size_t text_len)
{
	return fmt_fields(f, out, t_real, src, "EV", text, text_len);
}

size_t fmt_hexval(char *out, unsigned v, unsigned digits)
{
	out[0] = '0';
	out[1] = 'x';
	for (unsigned i = 0; i < digits; i++)
		out[2 + i] = hexdig[(v >> (4 * (digits - 1 - i))) & 15];
	return 2 + digits;
}

size_t fmt_in(struct fmt *f, char *out, int64_t t_real, const char *src, unsigned value,
	      unsigned changed, unsigned digits, uint64_t tick)
{
	size_t n = head(f, out, t_real, src, "IN");

	out[n++] = ' ';
	n += fmt_hexval(out + n, value, digits);
	out[n++] = ' ';
	n += fmt_hexval(out + n, changed, digits);
	out[n++] = ' ';
	n += fmt_u64(out + n, tick);
	out[n++] = '\n';
	return n;
}

size_t fmt_drop(struct fmt *f, char *out, int64_t t_real, const char *src,
		uint64_t records, uint64_t bytes)
{
	size_t n = head(f, out, t_real, src, "DROP");

	out[n++] = ' ';
	n += fmt_u64(out + n, records);
	out[n++] = ' ';
	n += fmt_u64(out + n, bytes);
	out[n++] = '\n';
	return n;
}

void fmt_kv(char *text, size_t cap, size_t *len, const char *key, const char *value)
{
	size_t klen = strlen(key), n = *len;

	if (cap == 0)
		return;
	if (n + klen + 2 >= cap) {
		text[n < cap ? n : cap - 1] = '\0';
		return;
	}
	if (n > 0)
		text[n++] = ' ';
	memcpy(text + n, key, klen);
	n += klen;
	text[n++] = '=';
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
		if (n + e >= cap)
			break;
		memcpy(text + n, esc, e);
		n += e;
	}
	text[n] = '\0';
	*len = n;
}
