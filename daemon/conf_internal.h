/* SPDX-License-Identifier: GPL-2.0-or-later */
/* conf_internal.h - what the config's files share: the sections, the key table's rows, the parser's state.
 *
 * conf_keys.c holds the key table and how each type of value is read and written,
 * conf_read.c the line reader, conf_check.c the checks across keys and the derived
 * values, conf_print.c the effective config, conf_err.c the error every one of them
 * reports through. conf.h is the module's one public header. The calls go one way:
 * conf_read calls conf_check and conf_keys, conf_check conf_keys, conf_print
 * conf_keys, and all of them conf_err, which calls none (tests/lint/include_cycles.sh).
 */
#ifndef PORTLOGD_CONF_INTERNAL_H
#define PORTLOGD_CONF_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"

#define CONF_LINE_MAX 198       /* characters after the indentation; inih's 200 less \n\0 */
#define SECTS_MAX (2 + 2 * CONF_MAX_PORTS)      /* [logger], [timer] and the ports */
#define CONF_KEYS_MAX 96        /* rows of the key table at most: a section keeps a line per row */

/* ---- sections ---- */

enum sect_kind { SECT_LOGGER, SECT_TIMER, SECT_SERIAL, SECT_PARALLEL, SECT_KINDS };

/* [WORD], or [WORD NAME] for a port: one struct of an array in struct conf. */
struct sect_type {
	const char *word;
	bool port;
	size_t off;             /* of the struct (port: of the array) in struct conf */
	size_t size;            /* of the struct */
	size_t count_off;       /* port: of the number of ports in struct conf */
	size_t name_off;        /* port: of char name[CONF_NAME_MAX] in the struct */
	size_t line_off;        /* of int line (of the header) in the struct */
};

extern const struct sect_type conf_sect_types[SECT_KINDS];

/* The struct of section kind t, port i (0 for [logger] and [timer]). */
static inline void *sect_at(const struct conf *c, const struct sect_type *t, unsigned i)
{
	return (char *)c + t->off + (size_t)i * t->size;
}

static inline unsigned sect_count(const struct conf *c, const struct sect_type *t)
{
	return t->port ? *(const unsigned *)((const char *)c + t->count_off) : 1;
}

/* Appends item to the list in buf, after sep unless it is the first. */
static inline void list_add(char *buf, size_t len, const char *sep, const char *item)
{
	size_t n = strlen(buf);

	if (n + 1 < len)
		snprintf(buf + n, len - n, "%s%s", n > 0 ? sep : "", item);
}

/* "[logger], [timer], [serial NAME] or [parallel NAME]"; ports_only: the last two. */
const char *conf_sect_list(char *buf, size_t len, bool ports_only);
/* The names of drivers, from the registry; compiled_only: those compiled in. */
const char *conf_driver_list(char *buf, size_t len, bool compiled_only);

/* ---- the key table (conf_keys.c) ---- */

/* A word a key takes and the value it stores. */
struct word {
	const char *word;
	int value;
};

struct ctx;
struct key;

/* A kind of value: how it is read into its field and written back. */
struct type {
	/* Parses x->value into the section struct `sect`; 0, or -1 after fail(). */
	int (*parse)(const struct ctx *x, void *sect);
	/* Writes the value as a config file says it. */
	void (*print)(FILE *out, const struct key *k, const void *sect);
	bool range;             /* takes a number from min to max */
	bool hex;               /* ... written in hex */
	bool text;              /* a string: "" is not set, and conf_print says so in a comment */
};

struct key {
	enum sect_kind sect;
	const char *name;
	const struct type *type;
	size_t off, size;       /* of the field in the section's struct */
	long long min, max;     /* a number's range */
	const struct word *words;       /* the words it takes; a number's one word */
	const char *what;       /* a number with a word: what it is, for errors */
	const char *def;        /* the default as a config file says it; NULL: none, the field stays 0 */
	bool required;          /* conf_validate() says "missing" when it is not set */
	/* this is the old name of that key of the section: it sets the same field,
	 * conf_print writes only the new name, and a file may not set both */
	const char *new_name;
};

/* In the order conf_print writes them and errors list them. */
extern const struct key conf_keys[];
extern const size_t conf_nkeys;

/* Sets the table's defaults of one section, through the same parsers. */
void conf_set_defaults(enum sect_kind kind, void *sect);

/* ---- the parser's state (conf_read.c) and its errors (conf_err.c) ---- */

struct sect {
	enum sect_kind kind;
	unsigned index;         /* into conf->serial / conf->parallel */
	int line;
	char title[CONF_NAME_MAX + 16];
	int key_line[CONF_KEYS_MAX];    /* line of each key seen so far, by row of conf_keys[]; 0 = not set */
};

struct parse {
	struct conf *c;
	const char *path;
	int line;
	char *err;
	size_t errlen;
	int err_line;           /* 0 = no error yet: parsing stops at the first */
	struct sect sects[SECTS_MAX];
	unsigned nsects;
	struct sect *cur;       /* NULL before the first section */
};

/* The first error, as "PATH:LINE: message" in p->err; later ones are dropped.
 * p NULL: a default of the key table does not parse, a bug: abort. */
void conf_vfail(struct parse *p, int line, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* conf_vfail with the message's arguments: every error of the config goes through it. */
static inline void fail(struct parse *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline void fail(struct parse *p, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conf_vfail(p, line, fmt, ap);
	va_end(ap);
}

/* What a value parser gets: where the value is and what it is for. */
struct ctx {
	struct parse *p;        /* NULL while the table's defaults are set */
	int line;
	const char *title;      /* of the section: "serial gps" */
	const struct key *k;
	const char *value;
	const char *word;       /* the key also takes these words ("'auto' or 'off'"): errors offer them */
};

/* ---- the checks across keys and the derived values (conf_check.c) ---- */

/* After the last line: every rule that looks at more than one key, and the
 * derived fields of each port; errors through fail(). */
void conf_validate(struct parse *p);

#endif
