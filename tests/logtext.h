/* logtext.h - the tests' own decoders of the log line's HEX and TEXT fields.
 *
 * Written apart from daemon/fmt.c on purpose, so that a slip in the encoder does
 * not hide in its decoder; one copy for every test (unit, e2e, fuzz), which is
 * why it is header-only: the fuzz targets link no test library.
 */
#ifndef PORTLOGD_LOGTEXT_H
#define PORTLOGD_LOGTEXT_H

#include <stddef.h>
#include <stdint.h>

/* A lowercase hex digit's value, or -1 (upper case is not what fmt writes). */
static inline int logtext_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * Decodes the inside of a quoted TEXT field, s[0..n) without the quotes, into
 * at most cap bytes of out: \\ \" \r \n \t \xHH, every other byte printable
 * ASCII but space, " and \. Returns the byte count, or -1 when it is not well
 * formed or does not fit.
 */
static inline long logtext_unescape(const char *s, size_t n, uint8_t *out, size_t cap)
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
				if (i + 2 >= n || logtext_hexval(s[i + 1]) < 0
				    || logtext_hexval(s[i + 2]) < 0)
					return -1;
				b = (unsigned char)(logtext_hexval(s[i + 1]) << 4
						    | logtext_hexval(s[i + 2]));
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

#endif
