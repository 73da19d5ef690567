/* fmt.h - formatting of log lines, by hand: no printf per line (pure, no I/O).
 *
 *   TIME SOURCE KIND FIELDS...\n
 *
 * Fields never contain a space. Packet text is quoted with C-style escapes:
 * printable ASCII stays, \\ \" \r \n \t, and every other byte (space included)
 * is \xHH with exactly two lowercase hex digits.
 */
#ifndef PORTLOGD_FMT_H
#define PORTLOGD_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"

#define FMT_TIME_MAX 40

struct fmt {
	enum conf_ts ts;
	enum conf_payload payload;
	/* cache: "YYYY-MM-DDTHH:MM:SS." of the last whole second formatted */
	int64_t cached_sec;
	char cached[32];
	size_t cached_len;
};

void fmt_init(struct fmt *f, enum conf_ts ts, enum conf_payload payload);

/* Upper bound of the length of an RX line with len payload bytes and any name. */
size_t fmt_rx_max(size_t len);

/* Each writes one whole line at out (which must have room) and returns its length. */
size_t fmt_time(struct fmt *f, char *out, int64_t t_real);
size_t fmt_rx(struct fmt *f, char *out, int64_t t_real, const char *src,
	      const uint8_t *data, size_t len);
/* EV: `text` is "NAME key=value ..." and must contain no newline. */
size_t fmt_ev(struct fmt *f, char *out, int64_t t_real, const char *src, const char *text,
	      size_t text_len);
size_t fmt_drop(struct fmt *f, char *out, int64_t t_real, const char *src,
		uint64_t records, uint64_t bytes);

/* IN: value and changed bits in hex, `digits` wide (1, 2 or 4), and the tick. */
size_t fmt_in(struct fmt *f, char *out, int64_t t_real, const char *src, unsigned value,
	      unsigned changed, unsigned digits, uint64_t tick);
/* Any KIND with preformatted fields (no newline, no leading space): OVERRUN, STAT. */
size_t fmt_fields(struct fmt *f, char *out, int64_t t_real, const char *src, const char *kind,
		  const char *fields, size_t len);

/* Building blocks, exposed for tests and for lines of later kinds. */
size_t fmt_u64(char *out, uint64_t v);
/* "0x" and `digits` lowercase hex digits of v. */
size_t fmt_hexval(char *out, unsigned v, unsigned digits);
size_t fmt_hex(char *out, const uint8_t *data, size_t len);
size_t fmt_text(char *out, const uint8_t *data, size_t len);



/* Appends " key=value" to an EV text of capacity cap at *len, escaping the value
 * like packet text (without quotes) so it holds no space. Truncates safely. */
void fmt_kv(char *text, size_t cap, size_t *len, const char *key, const char *value);
#endif
