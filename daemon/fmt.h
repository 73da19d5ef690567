/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fmt.h - the log line: its KIND and EV NAME tables, one line builder, one field builder.
 *
 *   TIME SOURCE KIND FIELDS...\n
 *
 * Every line the daemon writes is made here: fmt_record() turns a record (RX,
 * TX, EV, DROP, IN, OVERRUN, LINES, STAT) into its line, and the fields of EV and
 * STAT lines ("key=value ...") are built with struct fmt_kv, by the producers
 * and by the flusher alike. Pure: no I/O, no allocation, no stdio, so a
 * real-time thread may build an event's fields.
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
#include "rec.h"

#define FMT_TIME_MAX 40
#define FMT_FIELDS_MAX 1024     /* the fields of an EV or STAT line are cut here */
#define FMT_EV_NAME_MAX 24      /* the longest EV NAME, with room to spare */

struct fmt {
	enum conf_ts ts;
	enum conf_payload payload;
	/* cache: "YYYY-MM-DDTHH:MM:SS." of the last whole second formatted */
	int64_t cached_sec;
	char cached[32];
	size_t cached_len;
};

void fmt_init(struct fmt *f, enum conf_ts ts, enum conf_payload payload);

/*
 * What a KIND's fields are made of: the contract the parser (logline.c) reads
 * back. Kinds of one shape have the same fields (TX has RX's), so a new kind
 * of an existing shape is one enum value and one row of the KIND table.
 */
enum fmt_shape {
	FMT_SHAPE_PAYLOAD,      /* RX, TX: LEN HEX TEXT (payload = hex|text: one of the two) */
	FMT_SHAPE_EV,           /* EV: NAME key=value... [errno=E] [dir=tx] */
	FMT_SHAPE_STAT,         /* STAT: NAME key=value... */
	FMT_SHAPE_DROP,         /* DROP: RECORDS BYTES [dir=tx] */
	FMT_SHAPE_COUNT,        /* OVERRUN: COUNT */
	FMT_SHAPE_PINS_TICK,    /* IN: VALUE CHANGED TICK */
	FMT_SHAPE_PINS,         /* LINES: VALUE CHANGED (one hex digit each) */
	FMT_NSHAPES,
};

/* The KIND word of a record kind ("RX"), or NULL for a kind the table lacks. */
const char *fmt_kind(unsigned kind);
/* The shape of a kind's fields; FMT_NSHAPES for a kind the table lacks. */
enum fmt_shape fmt_kind_shape(unsigned kind);
/* The kind whose word is word[0..len) ("TX"), or 0 when none is. */
unsigned fmt_kind_find(const char *word, size_t len);
/* The NAME of an event ("late-delivery"), or NULL for a code the table lacks. */
const char *fmt_ev_name(unsigned code);
/* How loud an event is in the journal (syslog priority); LOG_NOTICE by default. */
int fmt_ev_priority(unsigned code);

/* Upper bound of the length of an RX or TX line with len payload bytes and any name. */
size_t fmt_rx_max(size_t len);
/* Upper bound of the length of any other line with len bytes of fields. */
size_t fmt_line_max(size_t len);

/*
 * Writes the line of record r of source src at out (which must have room:
 * fmt_rx_max or fmt_line_max) and returns its length. data and len: the
 * payload (RX: the packet, rejoined; EV and STAT: the fields, cut at
 * FMT_FIELDS_MAX, no newline). bits: the width of IN values (4, 8 or 16).
 * EV: "NAME fields", then "errno=E" when r->b is not 0, then "dir=tx" when r->c
 * is REC_DIR_TX (DROP too). Returns 0, writing
 * nothing, for a kind the table does not name: the caller says so.
 */
size_t fmt_record(struct fmt *f, char *out, const char *src, const struct rec *r,
		  const void *data, size_t len, unsigned bits);

/* TIME alone, for tests and tools. */
size_t fmt_time(struct fmt *f, char *out, int64_t t_real);

/* Building blocks, exposed for tests and tools. */
size_t fmt_u64(char *out, uint64_t v);
size_t fmt_i64(char *out, int64_t v);
/* "0x" and `digits` lowercase hex digits of v. */
size_t fmt_hexval(char *out, unsigned v, unsigned digits);
size_t fmt_hex(char *out, const uint8_t *data, size_t len);
size_t fmt_text(char *out, const uint8_t *data, size_t len);

/*
 * The fields of an EV or STAT line, "word key=value key=value", built in the
 * caller's buffer of cap bytes (a stack array: no allocation). Items are
 * separated by one space; values are escaped like packet text without its
 * quotes, so no space survives. The text is always NUL-terminated and len is
 * its length. What does not fit is cut safely: a string value between two
 * escapes (its key stays), a number never (it is left out whole, key and all).
 */
struct fmt_kv {
	char *text;
	size_t cap;
	size_t len;
};

void fmt_kv_init(struct fmt_kv *kv, char *text, size_t cap);
/* A bare word, escaped like a value: the name a STAT line starts with. */
void fmt_kv_word(struct fmt_kv *kv, const char *word);
void fmt_kv_str(struct fmt_kv *kv, const char *key, const char *value);
void fmt_kv_u64(struct fmt_kv *kv, const char *key, uint64_t v);
void fmt_kv_i64(struct fmt_kv *kv, const char *key, int64_t v);
/* With its sign always: "+5", "-3", "+0" (a clock step). */
void fmt_kv_delta(struct fmt_kv *kv, const char *key, int64_t v);
/* The errno's name ("EIO"), or its number where the C library has no name. */
void fmt_kv_errno(struct fmt_kv *kv, const char *key, int64_t err);

#endif
