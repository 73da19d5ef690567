/* SPDX-License-Identifier: GPL-2.0-or-later */
/* logline.h - a log line read back into its typed fields: the inverse of fmt (pure, no I/O).
 *
 *   TIME SOURCE KIND FIELDS...
 *
 * Strict: a line parses only if fmt could have written it (one space between
 * fields, TIME with nine fraction digits, lowercase HEX, TEXT escapes as fmt
 * makes them, both payload fields equal when both are there); anything else
 * fails with a reason. Written apart from fmt.c on purpose: the tests decode
 * what fmt encodes with this module, so a slip in one does not hide in the other.
 * Only the KIND table is shared (fmt_kind_find, fmt_kind_shape): the words
 * and which fields each kind has, so that a new kind is one row there.
 */
#ifndef PORTLOGD_LOGLINE_H
#define PORTLOGD_LOGLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rec.h"

#define LOGLINE_DATA_MAX 65535  /* an RX/TX line's LEN at most (max_packet's limit) */
/* key=value fields of an EV or STAT line: a serial port's STAT line with its TX reader and
 * its lines thread has 39 */
#define LOGLINE_KV_MAX 64
#define LOGLINE_WHY_MAX 128

/* One key=value field; the value as written (escaped like TEXT, without quotes). */
struct logline_kv {
	const char *key, *val;
	size_t key_len, val_len;
};

/* A parsed line. Pointers point into the line, or (data) into the parser. */
struct logline {
	int64_t t;                  /* ns since the epoch, UTC */
	const char *src;
	size_t src_len;
	/* its KIND, one of fmt.c's table (the words are looked up there, and the
	 * fields read by the table's shape for the kind: TX has RX's fields) */
	enum rec_kind kind;
	/* EV, DROP: which ring of the port ("dir=tx": what went to the device) */
	enum rec_dir dir;

	/* RX, TX: the payload, from HEX or TEXT (both checked when both are there) */
	const uint8_t *data;
	size_t len;
	bool has_hex, has_text;

	/* IN, LINES: value and changed bits; IN: the tick and the width in hex digits */
	unsigned value, changed, digits;
	uint64_t tick;

	/* DROP: records and bytes lost; OVERRUN: the count in records */
	uint64_t records, bytes;

	/* EV, STAT: the name after KIND and the key=value fields */
	const char *name;
	size_t name_len;
	struct logline_kv kv[LOGLINE_KV_MAX];
	unsigned nkv;
};

struct logline_parser {
	char why[LOGLINE_WHY_MAX];  /* the reason of the last failure */
	/* cache: the "YYYY-MM-DDTHH:MM:SS" of the last ISO time and its seconds */
	char cached[19];
	int64_t cached_sec;
	uint8_t data[LOGLINE_DATA_MAX];
};

void logline_init(struct logline_parser *p);

/*
 * Parses the line s[0..n), without its newline, into *l. Returns 0, or -1 with
 * the reason in p->why. l->data points into p: valid until the next call.
 */
int logline_parse(struct logline_parser *p, const char *s, size_t n, struct logline *l);

/* The log's TIME, strictly: ISO 8601 "YYYY-MM-DDTHH:MM:SS.NNNNNNNNNZ" or epoch
 * "[-]S.NNNNNNNNN". Returns 0 or -1. */
int logline_time(const char *s, size_t n, int64_t *t);

/* A TIME given by a person (--since): ISO 8601 UTC with 0 to 9 fraction digits
 * and an optional Z, a date alone (midnight UTC), or epoch seconds with 0 to 9
 * fraction digits. Returns 0 or -1. */
int logline_time_arg(const char *s, int64_t *t);

/* Decodes TEXT escapes of s[0..n) (the inside of the quotes, or an EV value)
 * into at most cap bytes; returns the count, or -1 if malformed or too long. */
long logline_unescape(const char *s, size_t n, uint8_t *out, size_t cap);

/* A lowercase hex digit's value, or -1 (fmt writes no upper case). */
int logline_hexval(int c);

/* The value of key in an EV or STAT line, or NULL. */
const struct logline_kv *logline_kv(const struct logline *l, const char *key);
/* ... as a NUL-terminated unescaped string in out (cut to cap - 1 bytes); false
 * when the key is missing or its value malformed. */
bool logline_kv_str(const struct logline *l, const char *key, char *out, size_t cap);
/* ... as a whole number (decimal, or 0x hex); false when missing or not a number. */
bool logline_kv_u64(const struct logline *l, const char *key, uint64_t *v);

/* The KIND's name as in the log ("RX"), "?" for none. */
const char *logline_kind_name(enum rec_kind k);

#endif
