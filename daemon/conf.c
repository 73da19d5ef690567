/* SPDX-License-Identifier: GPL-2.0-or-later */
/* conf.c - the config file: one table row per key, a line parser, validation.
 *
 * A key is one row of keys[] below: its section, name, type, range, words,
 * default and the field it sets. The parser, conf_print (--check-config) and
 * conf_print_keys (--list-keys, which tests/man_keys.sh holds against the man
 * page and the README) all read that table, so a new key is a new row.
 *
 * The line parser is ours, not inih's. Debian builds libinih without
 * INI_HANDLER_LINENO, hands a section to the handler only with its first key,
 * returns a syntax error as a bare line number, and continues an indented line
 * as the previous value: we counted the lines, registered the headers, re-read
 * the line to quote it, stripped blanks and cut '#' comments ourselves, so what
 * was left to the library was the split at '=' and the ';' comment. The rules
 * it applied are kept (parse_line), so every config reads as it did.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "drv.h"
#include "reasm.h"

#define CONF_FILE_MAX (1024 * 1024)
#define CONF_LINE_MAX 198       /* characters after the indentation; inih's 200 less \n\0 */
#define SECTS_MAX (2 + 2 * CONF_MAX_PORTS)      /* [logger], [timer] and the ports */

/* ---- sections ---- */

enum sect_kind { SECT_LOGGER, SECT_TIMER, SECT_SERIAL, SECT_PARALLEL, SECT_KINDS };

/* [WORD], or [WORD NAME] for a port: one struct of an array in struct conf. */
static const struct sect_type {
	const char *word;
	bool port;
	size_t off;             /* of the struct (port: of the array) in struct conf */
	size_t size;            /* of the struct */
	size_t count_off;       /* port: of the number of ports in struct conf */
	size_t name_off;        /* port: of char name[CONF_NAME_MAX] in the struct */
	size_t line_off;        /* of int line (of the header) in the struct */
} sect_types[SECT_KINDS] = {
	[SECT_LOGGER] = { "logger", false, offsetof(struct conf, logger),
			  sizeof(struct conf_logger), 0, 0, offsetof(struct conf_logger, line) },
	[SECT_TIMER] = { "timer", false, offsetof(struct conf, timer),
			 sizeof(struct conf_timer), 0, 0, offsetof(struct conf_timer, line) },
	[SECT_SERIAL] = { "serial", true, offsetof(struct conf, serial),
			  sizeof(struct conf_serial), offsetof(struct conf, nserial),
			  offsetof(struct conf_serial, name), offsetof(struct conf_serial, line) },
	[SECT_PARALLEL] = { "parallel", true, offsetof(struct conf, parallel),
			    sizeof(struct conf_parallel), offsetof(struct conf, nparallel),
			    offsetof(struct conf_parallel, name), offsetof(struct conf_parallel, line) },
};

/* The struct of section kind t, port i (0 for [logger] and [timer]). */
static void *sect_at(const struct conf *c, const struct sect_type *t, unsigned i)
{
	return (char *)c + t->off + (size_t)i * t->size;
}

static unsigned sect_count(const struct conf *c, const struct sect_type *t)
{
	return t->port ? *(const unsigned *)((const char *)c + t->count_off) : 1;
}

/* Appends item to the list in buf, after sep unless it is the first. */
static void list_add(char *buf, size_t len, const char *sep, const char *item)
{
	size_t n = strlen(buf);

	if (n + 1 < len)
		snprintf(buf + n, len - n, "%s%s", n > 0 ? sep : "", item);
}

/* "[logger], [timer], [serial NAME] or [parallel NAME]"; ports_only: the last two. */
static const char *sect_list(char *buf, size_t len, bool ports_only)
{
	unsigned n = 0, last = 0;
	char one[32];

	buf[0] = '\0';
	for (unsigned k = 0; k < SECT_KINDS; k++)
		if (sect_types[k].port || !ports_only)
			last = k;
	for (unsigned k = 0; k < SECT_KINDS; k++) {
		if (!sect_types[k].port && ports_only)
			continue;
		snprintf(one, sizeof(one), "[%s%s]", sect_types[k].word,
			 sect_types[k].port ? " NAME" : "");
		list_add(buf, len, k == last && n > 0 ? " or " : ", ", one);
		n++;
	}
	return buf;
}

/* ---- the key table ---- */

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
	bool required;          /* validate() says "missing" when it is not set */
	/* this is the old name of that key of the section: it sets the same field,
	 * conf_print writes only the new name, and a file may not set both */
	const char *new_name;
};

static const struct type t_path, t_abspath, t_uint, t_hex, t_pow2, t_word, t_numword, t_gap,
			 t_format, t_byte, t_driver, t_idle, t_dma, t_strobe, t_ident, t_octal,
			 t_pass;

static const struct word w_timestamp[] = { { "iso", CONF_TS_ISO }, { "epoch", CONF_TS_EPOCH },
					   { NULL, 0 } };
static const struct word w_payload[] = { { "hex", CONF_PAYLOAD_HEX }, { "text", CONF_PAYLOAD_TEXT },
					 { "both", CONF_PAYLOAD_BOTH }, { NULL, 0 } };
static const struct word w_rt[] = { { "best-effort", false }, { "required", true }, { NULL, 0 } };
static const struct word w_flow[] = { { "none", DRV_FLOW_NONE }, { "rtscts", DRV_FLOW_RTSCTS },
				      { "xonxoff", DRV_FLOW_XONXOFF },
				      { "dtrdsr", DRV_FLOW_DTRDSR }, { NULL, 0 } };
static const struct word w_bool[] = { { "off", 0 }, { "on", 1 }, { "no", 0 }, { "yes", 1 },
				      { "false", 0 }, { "true", 1 }, { "0", 0 }, { "1", 1 },
				      { NULL, 0 } };
static const struct word w_read[] = { { "status", DRV_READ_STATUS }, { "data", DRV_READ_DATA },
				      { "status+data", DRV_READ_BOTH }, { NULL, 0 } };
static const struct word w_other[] = { { "other", CONF_PRIO_OTHER }, { NULL, 0 } };
static const struct word w_any[] = { { "any", CONF_CPU_ANY }, { NULL, 0 } };
static const struct word w_off[] = { { "off", -1 }, { NULL, 0 } };
static const struct word w_auto[] = { { "auto", 0 }, { NULL, 0 } };
static const struct word w_none[] = { { "none", -1 }, { NULL, 0 } };
static const struct word w_irq[] = { { "auto", CONF_IRQ_AUTO }, { "off", CONF_IRQ_OFF },
				     { NULL, 0 } };
/* the words of idle_latency and strobe, for --list-keys (their parsers read the rest) */
static const struct word w_idle[] = { { "off", CONF_IDLE_OFF }, { "auto", CONF_IDLE_AUTO },
				      { "global", CONF_IDLE_GLOBAL }, { "pinned", CONF_IDLE_PINNED },
				      { NULL, 0 } };
static const struct word w_strobe[] = { { "none", DRV_STROBE_NONE }, { "data", DRV_STROBE_DATA },
					{ "control", DRV_STROBE_CONTROL }, { NULL, 0 } };
static const struct word w_level[] = { { "high", true }, { "low", false }, { NULL, 0 } };

/* the field's offset and size in struct conf_X */
#define AT(x, member) offsetof(struct conf_##x, member), sizeof(((struct conf_##x *)0)->member)
#define PRIORITY(s, x, member, name, dflt) { s, name, &t_numword, AT(x, member), 1, 99, w_other, \
	"a priority; expected 1..99 (SCHED_FIFO)", .def = dflt }
#define CPU(s, x, member, name) { s, name, &t_numword, AT(x, member), 0, CONF_CPU_MAX, w_any, \
	"a CPU; expected a CPU number (0 is the first)", .def = "any" }
/* a port's IRQ threads (irq.h); not set in a port: [logger]'s */
#define IRQ_PRIORITY(s, x, dflt) { s, "irq_priority", &t_numword, AT(x, irq_priority), 1, 99, \
	w_irq, "an IRQ thread priority; expected 1..99 (SCHED_FIFO)", .def = dflt }
#define IDLE_MAX 1000000        /* us: a second, far beyond any idle state */

/* In the order conf_print writes them and errors list them. */
static const struct key keys[] = {
	{ SECT_LOGGER, "log_file", &t_abspath, AT(logger, log_file),
	  .def = "/var/log/portlogd/portlogd.log" },
	{ SECT_LOGGER, "timestamp", &t_word, AT(logger, timestamp), .words = w_timestamp,
	  .def = "iso" },
	{ SECT_LOGGER, "payload", &t_word, AT(logger, payload), .words = w_payload, .def = "both" },
	{ SECT_LOGGER, "flush_interval_ms", &t_uint, AT(logger, flush_interval_ms), 1, 60000,
	  .def = "100" },
	{ SECT_LOGGER, "sync_interval_ms", &t_uint, AT(logger, sync_interval_ms), 0, 3600000,
	  .def = "1000" },
	{ SECT_LOGGER, "stat_interval_s", &t_uint, AT(logger, stat_interval_s), 0, 86400,
	  .def = "60" },
	{ SECT_LOGGER, "ring_records", &t_pow2, AT(logger, ring_records), 64, 1 << 24,
	  .def = "65536" },
	PRIORITY(SECT_LOGGER, logger, flusher_priority, "flusher_priority", "other"),
	CPU(SECT_LOGGER, logger, flusher_cpu, "flusher_cpu"),
	{ SECT_LOGGER, "rt", &t_word, AT(logger, rt_required), .words = w_rt, .def = "best-effort" },
	IRQ_PRIORITY(SECT_LOGGER, logger, "auto"),

	{ SECT_TIMER, "period_us", &t_uint, AT(timer, period_us), 20, 1000000, .def = "1000" },
	PRIORITY(SECT_TIMER, timer, priority, "priority", "99"),
	CPU(SECT_TIMER, timer, cpu, "cpu"),
	{ SECT_TIMER, "warmup_ms", &t_uint, AT(timer, warmup_ms), 0, 600000, .def = "1000" },
	/* auto: global:0 unless every real-time thread is pinned, then pinned:0, which
	 * tests/bench_idle.sh measured within 1.1x of global:0 on a quiet machine while
	 * the free CPU halts (README, Benchmarks) */
	{ SECT_TIMER, "idle_latency", &t_idle, AT(timer, idle_scope), 0, IDLE_MAX, w_idle,
	  .def = "auto" },
	{ SECT_TIMER, "cpu_dma_latency", &t_dma, AT(timer, idle_scope), 0, IDLE_MAX, w_off,
	  "a latency; expected microseconds from 0 to 1000000", .new_name = "idle_latency" },

	{ SECT_SERIAL, "device", &t_abspath, AT(serial, device), .required = true },
	{ SECT_SERIAL, "tx_device", &t_abspath, AT(serial, tx_device), .def = NULL },
	{ SECT_SERIAL, "pass", &t_pass, AT(serial, pass), .def = NULL },
	{ SECT_SERIAL, "pass_owner", &t_ident, AT(serial, pass_owner), .def = NULL },
	{ SECT_SERIAL, "pass_group", &t_ident, AT(serial, pass_group), .def = "dialout" },
	{ SECT_SERIAL, "pass_mode", &t_octal, AT(serial, pass_mode), 0, 0777, .def = "0660" },
	{ SECT_SERIAL, "baud", &t_uint, AT(serial, tty.baud), 50, 4000000, .def = "115200" },
	{ SECT_SERIAL, "format", &t_format, AT(serial, tty.data_bits), .def = "8N1" },
	{ SECT_SERIAL, "flow", &t_word, AT(serial, tty.flow), .words = w_flow, .def = "none" },
	{ SECT_SERIAL, "gap_us", &t_gap, AT(serial, gap_us), 1, 10000000, w_auto,
	  "a gap in microseconds; expected 1 to 10000000", .def = "auto" },
	{ SECT_SERIAL, "delimiter", &t_byte, AT(serial, delimiter), 0, 255, w_none, .def = "none" },
	{ SECT_SERIAL, "max_packet", &t_uint, AT(serial, max_packet), 1, 65535, .def = "4096" },
	{ SECT_SERIAL, "lines", &t_word, AT(serial, lines), .words = w_bool, .def = "off" },
	PRIORITY(SECT_SERIAL, serial, priority, "priority", "97"),
	CPU(SECT_SERIAL, serial, cpu, "cpu"),
	IRQ_PRIORITY(SECT_SERIAL, serial, NULL),

	{ SECT_PARALLEL, "driver", &t_driver, AT(parallel, driver), .def = "ieee1284" },
	{ SECT_PARALLEL, "device", &t_path, AT(parallel, in.device), .required = true },
	{ SECT_PARALLEL, "read", &t_word, AT(parallel, in.read), .words = w_read, .def = "status" },
	{ SECT_PARALLEL, "mask", &t_hex, AT(parallel, mask), 1, 0xffff, .def = "0xff" },
	PRIORITY(SECT_PARALLEL, parallel, priority, "priority", "98"),
	CPU(SECT_PARALLEL, parallel, cpu, "cpu"),
	IRQ_PRIORITY(SECT_PARALLEL, parallel, NULL),
	{ SECT_PARALLEL, "strobe", &t_strobe, AT(parallel, in.strobe), .words = w_strobe,
	  .def = "none" },
	{ SECT_PARALLEL, "strobe_us", &t_uint, AT(parallel, strobe_us), 0, 1000000, .def = "0" },
	{ SECT_PARALLEL, "strobe_level", &t_word, AT(parallel, in.strobe_high), .words = w_level,
	  .def = "high" },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* stored through an int (or a bool): the enums must be as wide */
_Static_assert(sizeof(enum conf_ts) == sizeof(int) && sizeof(enum conf_payload) == sizeof(int)
	       && sizeof(enum drv_flow) == sizeof(int) && sizeof(enum drv_read) == sizeof(int)
	       && sizeof(enum conf_idle) == sizeof(int) && sizeof(enum drv_strobe) == sizeof(int),
	       "an enum of struct conf is not int-sized");

/* ---- parser state and errors ---- */

struct sect {
	enum sect_kind kind;
	unsigned index;         /* into conf->serial / conf->parallel */
	int line;
	char title[CONF_NAME_MAX + 16];
	int key_line[NKEYS];    /* line of each key seen so far, by row of keys[]; 0 = not set */
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

static void fail(struct parse *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* p NULL: a default of the key table does not parse, a bug. */
static void fail(struct parse *p, int line, const char *fmt, ...)
{
	char msg[CONF_ERR_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p == NULL) {
		fprintf(stderr, "portlogd: a default of the key table is wrong: %s\n", msg);
		abort();
	}
	if (p->err_line != 0)
		return;         /* keep the first error */
	if (line < 1)
		line = 1;       /* err_line 0 means no error: an empty file fails at line 1 */
	p->err_line = line;
	n = snprintf(p->err, p->errlen, "%s:%d: ", p->path, line);
	if (n < 0 || (size_t)n >= p->errlen)
		return;
	/* the message quotes the file, which can hold any byte: keep control
	 * characters (a terminal's escapes) and non-ASCII bytes out, as \xHH */
	for (const unsigned char *m = (const unsigned char *)msg; *m != '\0'; m++) {
		bool plain = *m >= 0x20 && *m < 0x7f;

		if ((size_t)n + (plain ? 1 : 4) >= p->errlen)
			break;
		if (plain)
			p->err[n++] = (char)*m;
		else
			n += snprintf(p->err + n, p->errlen - n, "\\x%02x", *m);
	}
	p->err[n] = '\0';
}

/* ---- typed value parsers: return 0 or -1 after fail() ---- */

struct ctx {
	struct parse *p;        /* NULL while the table's defaults are set */
	int line;
	const char *title;      /* of the section: "serial gps" */
	const struct key *k;
	const char *value;
	const char *word;       /* the key also takes these words ("'auto' or 'off'"): errors offer them */
};

#define CTX_FAIL(x, fmt, ...) fail((x)->p, (x)->line, "[%s] %s: " fmt, (x)->title, \
				   (x)->k->name, __VA_ARGS__)
/* three %s: ", or 'WORD'" when the key also takes a word, else nothing */
#define OR_WORD(x) (x)->word ? ", or " : "", (x)->word ? (x)->word : "", ""

static void *field(const struct key *k, void *sect)
{
	return (char *)sect + k->off;
}

static void store_int(const struct key *k, void *sect, long long v)
{
	if (k->size == sizeof(bool)) {
		*(bool *)field(k, sect) = v != 0;
	} else {
		int i = (int)v;

		memcpy(field(k, sect), &i, sizeof(i));  /* an int, unsigned or enum */
	}
}

static long long load_int(const struct key *k, const void *sect)
{
	const char *f = (const char *)sect + k->off;
	int i;

	if (k->size == sizeof(bool))
		return *(const bool *)f;
	memcpy(&i, f, sizeof(i));
	return i;
}

static int parse_uint(const struct ctx *x, unsigned long long min, unsigned long long max,
		      unsigned long long *out)
{
	const char *v = x->value;
	char *end;
	int base = 10;
	unsigned long long n;

	if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
		base = 16;
		v += 2;
		if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X'))
			v = "";     /* strtoull would take a second 0x */
	}
	if (!isxdigit((unsigned char)v[0]) || (base == 10 && !isdigit((unsigned char)v[0]))) {
		CTX_FAIL(x, "'%s' is not a number; expected a whole number from %llu to %llu%s%s%s",
			 x->value, min, max, OR_WORD(x));
		return -1;
	}
	errno = 0;
	n = strtoull(v, &end, base);
	if (*end != '\0') {
		CTX_FAIL(x, "'%s' is not a number; expected a whole number from %llu to %llu%s%s%s",
			 x->value, min, max, OR_WORD(x));
		return -1;
	}
	if (errno == ERANGE || n < min || n > max) {
		CTX_FAIL(x, "%s is out of range; expected %llu to %llu%s%s%s",
			 x->value, min, max, OR_WORD(x));
		return -1;
	}
	*out = n;
	return 0;
}

static int uint_parse(const struct ctx *x, void *sect)
{
	unsigned long long n;

	if (parse_uint(x, (unsigned long long)x->k->min, (unsigned long long)x->k->max, &n) < 0)
		return -1;
	store_int(x->k, sect, (long long)n);
	return 0;
}

static int pow2_parse(const struct ctx *x, void *sect)
{
	unsigned n;

	if (uint_parse(x, sect) < 0)
		return -1;
	n = (unsigned)load_int(x->k, sect);
	if ((n & (n - 1)) != 0) {
		CTX_FAIL(x, "%u is not a power of two; use one such as 16384 or 65536", n);
		return -1;
	}
	return 0;
}

/* One of the key's words: stores what it stands for. */
static int word_parse(const struct ctx *x, void *sect)
{
	char list[128] = "";

	for (const struct word *w = x->k->words; w->word != NULL; w++) {
		if (strcmp(x->value, w->word) == 0) {
			store_int(x->k, sect, w->value);
			return 0;
		}
		list_add(list, sizeof(list), ", ", w->word);
	}
	CTX_FAIL(x, "'%s' is not allowed; expected one of: %s", x->value, list);
	return -1;
}

/* The key's words (auto, off, other, any), or a decimal number from min to max. */
static int numword_parse(const struct ctx *x, void *sect)
{
	struct ctx with_word = *x;
	char words[64] = "", one[24];

	for (const struct word *w = x->k->words; w->word != NULL; w++) {
		if (strcmp(x->value, w->word) == 0) {
			store_int(x->k, sect, w->value);
			return 0;
		}
		snprintf(one, sizeof(one), "'%s'", w->word);
		list_add(words, sizeof(words), " or ", one);
	}
	if (!isdigit((unsigned char)x->value[0])) {
		CTX_FAIL(x, "'%s' is not %s or %s", x->value, x->k->what, words);
		return -1;
	}
	with_word.word = words;
	return uint_parse(&with_word, sect);
}

/* idle_latency: off, auto, global:US or pinned:US; sets the scope and the latency. */
static int idle_parse(const struct ctx *x, void *sect)
{
	struct conf_timer *t = sect;
	struct ctx num = *x;
	const char *colon = strchr(x->value, ':');
	unsigned long long us = 0;

	for (const struct word *w = w_idle; w->word != NULL; w++) {
		size_t n = strlen(w->word);
		bool takes_us = w->value == CONF_IDLE_GLOBAL || w->value == CONF_IDLE_PINNED;

		if (strncmp(x->value, w->word, n) != 0
		    || x->value[n] != (takes_us ? ':' : '\0'))
			continue;
		num.value = colon != NULL ? colon + 1 : "";
		if (takes_us && parse_uint(&num, 0, (unsigned long long)x->k->max, &us) < 0)
			return -1;
		t->idle_scope = (enum conf_idle)w->value;
		t->idle_us = (int)us;
		return 0;
	}
	CTX_FAIL(x, "'%s' is not an idle latency; expected off, auto, global:US or pinned:US "
		 "(US: microseconds from 0 to %lld)", x->value, x->k->max);
	return -1;
}

/* cpu_dma_latency, the old name: N is global:N, off is off. */
static int dma_parse(const struct ctx *x, void *sect)
{
	struct conf_timer *t = sect;
	struct ctx num = *x;
	unsigned long long us;

	if (strcmp(x->value, "off") == 0) {
		t->idle_scope = CONF_IDLE_OFF;
		t->idle_us = 0;
		return 0;
	}
	if (!isdigit((unsigned char)x->value[0])) {
		CTX_FAIL(x, "'%s' is not %s or 'off'", x->value, x->k->what);
		return -1;
	}
	num.word = "'off'";
	if (parse_uint(&num, 0, (unsigned long long)x->k->max, &us) < 0)
		return -1;
	t->idle_scope = CONF_IDLE_GLOBAL;
	t->idle_us = (int)us;
	return 0;
}

/* strobe: none, data:BIT (0-7) or control:BIT (0-3, the four control lines). */
static int strobe_parse(const struct ctx *x, void *sect)
{
	static const unsigned bits[] = { [DRV_STROBE_DATA] = 8, [DRV_STROBE_CONTROL] = 4 };
	struct conf_parallel *pp = sect;
	const char *v = x->value, *colon = strchr(v, ':');
	char *end;
	unsigned long bit;

	if (strcmp(v, "none") == 0) {
		pp->in.strobe = DRV_STROBE_NONE;
		pp->in.strobe_bit = 0;
		return 0;
	}
	for (const struct word *w = w_strobe; w->word != NULL; w++) {
		size_t n = strlen(w->word);

		if (w->value == DRV_STROBE_NONE || colon == NULL || (size_t)(colon - v) != n
		    || strncmp(v, w->word, n) != 0)
			continue;
		bit = strtoul(colon + 1, &end, 10);
		if (!isdigit((unsigned char)colon[1]) || *end != '\0' || bit >= bits[w->value]) {
			CTX_FAIL(x, "'%s': the %s register has bits 0 to %u; write %s:BIT such as "
				 "%s:0", v, w->word, bits[w->value] - 1, w->word, w->word);
			return -1;
		}
		pp->in.strobe = (enum drv_strobe)w->value;
		pp->in.strobe_bit = (unsigned)bit;
		return 0;
	}
	if (colon != NULL && (size_t)(colon - v) == 6 && strncmp(v, "status", 6) == 0)
		CTX_FAIL(x, "'%s': the status lines are inputs, a strobe must be an output; "
			 "expected data:BIT (0-7) or control:BIT (0-3)", v);
	else
		CTX_FAIL(x, "'%s' is not a pin; expected none, data:BIT (0-7) or control:BIT (0-3, "
			 "the control lines nStrobe, nAutoFd, nInit, nSelectIn)", v);
	return -1;
}

static int path_check(const struct ctx *x, void *sect, bool absolute)
{
	size_t n = strlen(x->value);
	/* conf_print writes "key = value", which must fit on a line too */
	size_t max = CONF_LINE_MAX - strlen(x->k->name) - 3;

	if (max > x->k->size - 1)
		max = x->k->size - 1;
	if (n > max) {
		CTX_FAIL(x, "path is %zu bytes long; at most %zu are supported", n, max);
		return -1;
	}
	if (absolute && x->value[0] != '/') {
		CTX_FAIL(x, "'%s' is not an absolute path; write the full path, starting with /",
			 x->value);
		return -1;
	}
	/* "device =#x" is the value "#x", but "device = #x" (as printed) a comment */
	if (x->value[0] == '#' || x->value[0] == ';') {
		CTX_FAIL(x, "'%s' starts with '%c', which reads as a comment after a blank; "
			 "write ./%s", x->value, x->value[0], x->value);
		return -1;
	}
	memcpy(field(x->k, sect), x->value, n + 1);
	return 0;
}

static int path_parse(const struct ctx *x, void *sect)
{
	return path_check(x, sect, false);
}

static int abspath_parse(const struct ctx *x, void *sect)
{
	return path_check(x, sect, true);
}

/* "8N1": data bits 5..8, parity N/E/O/M/S, stop bits 1 or 2; three fields. */
static int format_parse(const struct ctx *x, void *sect)
{
	struct conf_serial *s = sect;
	const char *v = x->value;

	if (strlen(v) != 3 || v[0] < '5' || v[0] > '8' || strchr("NEOMS", toupper((unsigned char)v[1])) == NULL
	    || (v[2] != '1' && v[2] != '2')) {
		CTX_FAIL(x, "'%s' is not a frame format; expected data bits 5-8, parity N/E/O/M/S "
			 "and stop bits 1-2, such as 8N1 or 7E1", v);
		return -1;
	}
	s->tty.data_bits = (unsigned)(v[0] - '0');
	s->tty.parity = (char)toupper((unsigned char)v[1]);
	s->tty.stop_bits = (unsigned)(v[2] - '0');
	return 0;
}

/* A byte: none, 0xNN, a decimal number, \n \r \t \0, or one printable character. */
static int byte_parse(const struct ctx *x, void *sect)
{
	static const struct word esc[] = {
		{ "\\n", '\n' }, { "\\r", '\r' }, { "\\t", '\t' }, { "\\0", 0 }, { NULL, 0 },
	};
	const char *v = x->value;

	if (strcmp(v, x->k->words[0].word) == 0) {
		store_int(x->k, sect, x->k->words[0].value);
		return 0;
	}
	for (const struct word *e = esc; e->word != NULL; e++)
		if (strcmp(v, e->word) == 0) {
			store_int(x->k, sect, e->value);
			return 0;
		}
	if (v[1] == '\0' && !isdigit((unsigned char)v[0])) {
		store_int(x->k, sect, (unsigned char)v[0]);
		return 0;
	}
	if (isdigit((unsigned char)v[0]))
		return uint_parse(x, sect);
	CTX_FAIL(x, "'%s' is not a byte; expected none, a number such as 0x0a or 10, "
		 "\\n, \\r, \\t, \\0 or a single character", v);
	return -1;
}

/* A user or group: a name as useradd takes it, or a number. Looked up in validate(). */
static int ident_parse(const struct ctx *x, void *sect)
{
	const char *v = x->value;
	size_t n = strlen(v);
	bool ok = n > 0 && n < x->k->size && (isalpha((unsigned char)v[0]) || v[0] == '_'
					    || isdigit((unsigned char)v[0]));

	for (size_t i = 0; ok && i < n; i++)
		ok = isalnum((unsigned char)v[i]) || strchr("_-.", v[i]) != NULL;
	if (!ok) {
		CTX_FAIL(x, "'%s' is not a user or group; expected a name such as dialout, or a "
			 "number", v);
		return -1;
	}
	memcpy(field(x->k, sect), v, n + 1);
	return 0;
}

/* Permission bits in octal, as chmod takes them: 0660, 660. */
static int octal_parse(const struct ctx *x, void *sect)
{
	const char *v = x->value;
	char *end;
	unsigned long m;

	errno = 0;
	m = strtoul(v, &end, 8);
	if (!isdigit((unsigned char)v[0]) || *end != '\0' || errno != 0
	    || m > (unsigned long)x->k->max) {
		CTX_FAIL(x, "'%s' is not a mode; expected octal permission bits from 0 to %llo, "
			 "such as 0660", v, x->k->max);
		return -1;
	}
	store_int(x->k, sect, (long long)m);
	return 0;
}

/* The names of drivers, from the registry; compiled_only: those compiled in. */
static const char *driver_list(char *buf, size_t len, bool compiled_only)
{
	buf[0] = '\0';
	for (const struct drv_input_ops *const *d = drv_inputs; *d != NULL; d++)
		if (!compiled_only || (*d)->open != NULL)
			list_add(buf, len, ", ", (*d)->name);
	return buf;
}

/* A driver by name; one that is not compiled in is found too (validate() says so). */
static int driver_parse(const struct ctx *x, void *sect)
{
	const struct drv_input_ops *ops = drv_input_find(x->value);
	char list[128];

	if (ops == NULL) {
		CTX_FAIL(x, "'%s' is not allowed; expected one of: %s", x->value,
			 driver_list(list, sizeof(list), false));
		return -1;
	}
	memcpy(field(x->k, sect), &ops, sizeof(ops));
	return 0;
}

/* ---- printers: the value as a config file says it ---- */

static void path_print(FILE *out, const struct key *k, const void *sect)
{
	fputs((const char *)sect + k->off, out);
}

static void uint_print(FILE *out, const struct key *k, const void *sect)
{
	fprintf(out, k->type->hex ? "0x%02x" : "%u", (unsigned)load_int(k, sect));
}

/* the first word for the value; a number with a word: the number */
static void word_print(FILE *out, const struct key *k, const void *sect)
{
	long long v = load_int(k, sect);

	for (const struct word *w = k->words; w->word != NULL; w++)
		if (w->value == v) {
			fputs(w->word, out);
			return;
		}
	fprintf(out, "%lld", v);
}

static void gap_print(FILE *out, const struct key *k, const void *sect)
{
	if (load_int(k, sect) == 0)
		fprintf(out, "auto  ; %" PRId64 " us", ((const struct conf_serial *)sect)->gap_ns / 1000);
	else
		word_print(out, k, sect);
}

static const char *word_of(const struct word *words, int value)
{
	for (const struct word *w = words; w->word != NULL; w++)
		if (w->value == value)
			return w->word;
	return "?";
}

const char *conf_par_read_name(enum drv_read r)
{
	return word_of(w_read, (int)r);
}

static void format_print(FILE *out, const struct key *k, const void *sect)
{
	const struct conf_serial *s = sect;

	(void)k;
	fprintf(out, "%u%c%u", s->tty.data_bits, s->tty.parity, s->tty.stop_bits);
}

static void byte_print(FILE *out, const struct key *k, const void *sect)
{
	long long v = load_int(k, sect);

	if (v < 0)
		fputs(k->words[0].word, out);
	else
		fprintf(out, "0x%02x", (unsigned)v);
}

static void idle_print(FILE *out, const struct key *k, const void *sect)
{
	const struct conf_timer *t = sect;

	(void)k;
	if (t->idle_scope == CONF_IDLE_GLOBAL || t->idle_scope == CONF_IDLE_PINNED)
		fprintf(out, "%s:%d", conf_idle_name(t->idle_scope), t->idle_us);
	else
		fputs(conf_idle_name(t->idle_scope), out);
}

static void strobe_print(FILE *out, const struct key *k, const void *sect)
{
	const struct conf_parallel *pp = sect;

	(void)k;
	if (pp->in.strobe == DRV_STROBE_NONE)
		fputs("none", out);
	else
		fprintf(out, "%s:%u", conf_strobe_name(pp->in.strobe), pp->in.strobe_bit);
}

const char *conf_strobe_name(enum drv_strobe s)
{
	return word_of(w_strobe, (int)s);
}

const char *conf_idle_name(enum conf_idle s)
{
	return word_of(w_idle, (int)s);
}

/* a relative pass = NAME says where it goes, in a '#' comment: the reader cuts
 * that off before it measures the line, so a long name still prints to a line
 * that reads back */
static void pass_print(FILE *out, const struct key *k, const void *sect)
{
	const struct conf_serial *s = sect;

	path_print(out, k, sect);
	if (s->pass[0] != '/')
		fprintf(out, "  # %s", s->pass_path);
}

static void octal_print(FILE *out, const struct key *k, const void *sect)
{
	fprintf(out, "0%03o", (unsigned)load_int(k, sect));
}

static void driver_print(FILE *out, const struct key *k, const void *sect)
{
	const struct drv_input_ops *ops;

	memcpy(&ops, (const char *)sect + k->off, sizeof(ops));
	fputs(ops->name, out);
}

static const struct type t_path = { path_parse, path_print, false, false };
static const struct type t_abspath = { abspath_parse, path_print, false, false };
static const struct type t_uint = { uint_parse, uint_print, true, false };
static const struct type t_hex = { uint_parse, uint_print, true, true };
static const struct type t_pow2 = { pow2_parse, uint_print, true, false };
static const struct type t_word = { word_parse, word_print, false, false };
static const struct type t_numword = { numword_parse, word_print, true, false };
static const struct type t_gap = { numword_parse, gap_print, true, false };
static const struct type t_format = { format_parse, format_print, false, false };
static const struct type t_byte = { byte_parse, byte_print, false, false };
static const struct type t_driver = { driver_parse, driver_print, false, false };
static const struct type t_idle = { idle_parse, idle_print, true, false };
static const struct type t_dma = { dma_parse, idle_print, true, false };
static const struct type t_strobe = { strobe_parse, strobe_print, false, false };
static const struct type t_ident = { ident_parse, path_print, false, false };
static const struct type t_octal = { octal_parse, octal_print, false, false };
static const struct type t_pass = { path_parse, pass_print, false, false };

/* ---- defaults ---- */

/* The table's defaults of one section, through the same parsers. */
static void set_defaults(enum sect_kind kind, void *sect)
{
	for (size_t i = 0; i < NKEYS; i++) {
		struct ctx x = { .title = sect_types[kind].word, .k = &keys[i], .value = keys[i].def };

		if (keys[i].sect == kind && keys[i].def != NULL)
			(void)keys[i].type->parse(&x, sect);
	}
}

void conf_defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	for (unsigned k = 0; k < SECT_KINDS; k++)
		if (!sect_types[k].port)
			set_defaults(k, sect_at(c, &sect_types[k], 0));
}

/* ---- the line parser ---- */

/* A key = value line in the current section. */
static void on_key(struct parse *p, const char *name, const char *value)
{
	struct sect *s = p->cur;
	struct ctx x = { .p = p, .line = p->line, .value = value };
	char list[256] = "";
	const struct key *k = NULL;

	if (s == NULL) {
		fail(p, p->line, "%s: key outside of any section; put it under %s", name,
		     sect_list(list, sizeof(list), false));
		return;
	}
	if (name[0] == '\0') {
		fail(p, p->line, "[%s]: '= %s' has no key; write key = value", s->title, value);
		return;
	}
	for (size_t i = 0; i < NKEYS; i++) {
		if (keys[i].sect != s->kind)
			continue;
		if (strcmp(keys[i].name, name) == 0)
			k = &keys[i];
		list_add(list, sizeof(list), ", ", keys[i].name);
	}
	if (k == NULL) {
		fail(p, p->line, "[%s] %s: unknown key; keys of this section are: %s",
		     s->title, name, list);
		return;
	}
	if (s->key_line[k - keys] != 0) {
		fail(p, p->line, "[%s] %s: set twice (first at line %d); keep one",
		     s->title, name, s->key_line[k - keys]);
		return;
	}
	s->key_line[k - keys] = p->line;
	if (value[0] == '\0') {
		fail(p, p->line, "[%s] %s: empty value; give a value or remove the line",
		     s->title, name);
		return;
	}
	x.title = s->title;
	x.k = k;
	(void)k->type->parse(&x, sect_at(p->c, &sect_types[s->kind], s->index));
}

static bool valid_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= CONF_NAME_MAX || strcmp(name, "portlogd") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && strchr("_-.:", name[i]) == NULL)
			return false;
	return true;
}

/* [WORD] or [WORD NAME] after the checks; NULL after fail(). */
static const struct sect_type *header_type(struct parse *p, const char *raw, int fields,
					   const char *word, const char *name)
{
	char rest[2], list[128];

	for (unsigned k = 0; k < SECT_KINDS; k++) {
		const struct sect_type *t = &sect_types[k];

		if (strcmp(t->word, word) != 0 || fields != (t->port ? 2 : 1))
			continue;
		if (!t->port)
			return t;
		if (sscanf(raw, " %*s %*s %1s", rest) == 1) {
			fail(p, p->line, "[%s]: a port name is one word; write [%s NAME]", raw, word);
			return NULL;
		}
		if (!valid_name(name)) {
			fail(p, p->line, "[%s]: '%s' cannot be a port name; use up to %d letters, "
			     "digits, '_', '-', '.' or ':', and not 'portlogd'", raw, name,
			     CONF_NAME_MAX - 1);
			return NULL;
		}
		return t;
	}
	fail(p, p->line, "[%s]: unknown section; expected %s", raw,
	     sect_list(list, sizeof(list), false));
	return NULL;
}

/* A "[...]" line that has a ']': opens its section, with the table's defaults. */
static void open_section(struct parse *p, const char *start)
{
	const char *end = strchr(start, ']');
	char raw[128], word[16] = "", name[128] = "";
	const struct sect_type *t;
	struct sect new_sect, *s = &new_sect;
	unsigned *count;
	void *base;
	size_t n = (size_t)(end - start - 1);

	if (n >= sizeof(raw)) {
		fail(p, p->line, "[%.20s...]: section header of %zu characters; a port name has at "
		     "most %d", start + 1, n, CONF_NAME_MAX - 1);
		return;
	}
	memcpy(raw, start + 1, n);
	raw[n] = '\0';
	/* a CR-only file would be one line: say so rather than ignore the rest */
	for (end++; isspace((unsigned char)*end); end++)
		;
	if (*end != '\0' && *end != ';') {
		fail(p, p->line, "[%s]: '%.40s' after the section header; put keys on lines of "
		     "their own", raw, end);
		return;
	}
	t = header_type(p, raw, sscanf(raw, " %15s %127s", word, name), word, name);
	if (t == NULL)
		return;
	/* built aside, stored once accepted: sects[] only has room for accepted ones */
	memset(s, 0, sizeof(*s));
	s->kind = (enum sect_kind)(t - sect_types);
	s->line = p->line;
	snprintf(s->title, sizeof(s->title), t->port ? "%s %s" : "%s", word, name);
	for (unsigned i = 0; i < p->nsects; i++) {
		const char *other = p->sects[i].title, *sp = strchr(other, ' ');

		if (strcmp(other, s->title) == 0) {
			fail(p, p->line, "[%s]: duplicate section (first at line %d); merge the two",
			     s->title, p->sects[i].line);
			return;
		}
		/* one name space for all ports: the name is the log's SOURCE field */
		if (t->port && sp != NULL && strcmp(sp + 1, name) == 0) {
			fail(p, p->line, "[%s]: the name '%s' is already used by [%s] at line %d; "
			     "port names must be unique", s->title, name, other, p->sects[i].line);
			return;
		}
	}
	if (t->port) {
		count = (unsigned *)((char *)p->c + t->count_off);
		if (*count == CONF_MAX_PORTS) {
			fail(p, p->line, "[%s]: more than %d %s ports; run a second portlogd for the "
			     "rest", s->title, CONF_MAX_PORTS, word);
			return;
		}
		s->index = (*count)++;
	}
	base = sect_at(p->c, t, s->index);
	if (t->port) {
		set_defaults(s->kind, base);
		snprintf((char *)base + t->name_off, CONF_NAME_MAX, "%s", name);
	}
	*(int *)((char *)base + t->line_off) = p->line;
	p->cur = &p->sects[p->nsects++];
	*p->cur = *s;
}

/*
 * Where the comment after a value starts in text[0..n), or n: a '#' after a
 * space or tab (people write "baud = 9600  # the PLC" and mean it), or, as
 * inih has it, a ';' after any white space.
 */
static size_t comment_start(const char *text, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if ((text[i] == '#' && (text[i - 1] == ' ' || text[i - 1] == '\t'))
		    || (text[i] == ';' && isspace((unsigned char)text[i - 1])))
			return i;
	return n;
}

static char *skip_space(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

static void trim_end(char *s, char *end)
{
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
}

/*
 * One line of the file, without its '\n', as chrony's parser takes a line:
 * blank, a comment (# or ; first, or after a blank), [section] or key = value
 * (inih's '=' or ':'; ';' after a blank starts a comment). A UTF-8 byte order
 * mark on line 1 is skipped. Indentation is only indentation: an indented line
 * never continues the previous value, as inih's multi-line values would.
 */
static void parse_line(struct parse *p, const char *text, size_t n)
{
	char buf[CONF_LINE_MAX + 1], list[128], *start, *end, *value;
	size_t quoted = 0;      /* of text, for a syntax error: up to a CR */

	p->line++;
	if (p->line == 1 && n >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
		text += 3;      /* as some editors write */
		n -= 3;
	}
	while (n > 0 && (*text == ' ' || *text == '\t')) {
		text++;
		n--;
	}
	while (quoted < n && text[quoted] != '\r')
		quoted++;
	/* a comment after a value, and the blanks before it, do not count against
	 * the length of a line (a line that is all comment does): the printed
	 * config says "pass = NAME  # /run/portlogd/NAME" after a NAME as long as
	 * allowed */
	n = comment_start(text, n);
	while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t'))
		n--;
	if (n > CONF_LINE_MAX) {
		fail(p, p->line, "line is longer than %d characters; shorten it", CONF_LINE_MAX);
		return;
	}
	memcpy(buf, text, n);
	buf[n] = '\0';
	start = skip_space(buf);
	if (*start == '\0' || *start == '#' || *start == ';')
		return;
	if (*start == '[' && strchr(start, ']') != NULL) {
		open_section(p, start);
		return;
	}
	if (*start == '[') {
		fail(p, p->line, "syntax error: '%.*s' has no closing ']'; write %s",
		     quoted < 40 ? (int)quoted : 40, text, sect_list(list, sizeof(list), false));
		return;
	}
	trim_end(start, start + strlen(start));
	end = start + strcspn(start, "=:");
	if (*end == '\0') {
		fail(p, p->line, "%s%s%ssyntax error: '%.*s' is not key = value; write key = value, "
		     "a [section], or a comment starting with # or ;", p->cur ? "[" : "",
		     p->cur ? p->cur->title : "", p->cur ? "]: " : "",
		     quoted < 40 ? (int)quoted : 40, text);
		return;
	}
	*end = '\0';
	trim_end(start, end);
	value = skip_space(end + 1);
	on_key(p, start, value);
}

/* ---- validation and derived values ---- */

void conf_resolve_serial(struct conf_serial *s)
{
	s->frame_bits = 1 + s->tty.data_bits + (s->tty.parity != 'N') + s->tty.stop_bits;
	s->char_ns = reasm_char_ns(s->tty.baud, s->frame_bits);
	s->gap_ns = s->gap_us != 0 ? (int64_t)s->gap_us * 1000
		    : reasm_auto_gap_ns(s->tty.baud, s->frame_bits);
	if (s->pass[0] == '\0')
		s->pass_path[0] = '\0';
	else if (s->pass[0] == '/')
		snprintf(s->pass_path, sizeof(s->pass_path), "%s", s->pass);
	else
		snprintf(s->pass_path, sizeof(s->pass_path), CONF_PASS_DIR "/%s", s->pass);
}

void conf_resolve_parallel(struct conf_parallel *pp)
{
	pp->bits = pp->driver->value_bits(&pp->in);
}

/* The line where a port's key was set, or 0 when it was not (header: its header's). */
static int set_line(const struct parse *p, enum sect_kind kind, unsigned index, const char *name,
		    bool header)
{
	for (unsigned i = 0; i < p->nsects; i++) {
		const struct sect *s = &p->sects[i];

		if (s->kind != kind || s->index != index)
			continue;
		for (size_t k = 0; k < NKEYS; k++)
			if (keys[k].sect == kind && strcmp(keys[k].name, name) == 0
			    && s->key_line[k] != 0)
				return s->key_line[k];
		return header ? s->line : 0;
	}
	return 0;
}

/* The line where a port's key was set, or its header's when it was not. */
static int key_line(const struct parse *p, enum sect_kind kind, unsigned index, const char *name)
{
	return set_line(p, kind, index, name, true);
}

/* Two device paths name the same device: links resolved where they can be (a
 * device that is not there now is compared as written). */
static bool same_device(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	if (realpath(a, ra) == NULL)
		snprintf(ra, sizeof(ra), "%s", a);
	if (realpath(b, rb) == NULL)
		snprintf(rb, sizeof(rb), "%s", b);
	return strcmp(ra, rb) == 0;
}

/* The first existing directory above path, or where path cannot have one: false
 * with the component that exists and is no directory in bad. */
static bool dir_creatable(const char *path, char *bad, size_t len)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	while ((slash = strrchr(dir, '/')) != NULL) {
		*(slash == dir ? slash + 1 : slash) = '\0';
		if (stat(dir, &st) == 0) {
			snprintf(bad, len, "%s", dir);
			return S_ISDIR(st.st_mode);
		}
		if (errno != ENOENT) {
			snprintf(bad, len, "%s", dir);
			return errno != ENOTDIR;
		}
		if (slash == dir)
			break;
	}
	return true;
}

/* A user's or group's number: the name looked up, or the number as written; -1
 * (after fail) when there is none. */
static int id_of(struct parse *p, unsigned i, const char *key, const char *value, bool user)
{
	const char *what = user ? "user" : "group";
	char *end;
	long v = strtol(value, &end, 10);
	const struct passwd *pw;
	const struct group *gr;

	if (*end == '\0' && v >= 0 && v < INT_MAX)
		return (int)v;
	pw = user ? getpwnam(value) : NULL;
	gr = user ? NULL : getgrnam(value);
	if (pw != NULL || gr != NULL)
		return pw != NULL ? (int)pw->pw_uid : (int)gr->gr_gid;
	fail(p, key_line(p, SECT_SERIAL, i, key), "[serial %s] %s: no %s '%s' on this system; "
	     "give a %s name or number%s", p->c->serial[i].name, key, what, value, what,
	     user ? "" : " (the application's user must be in it)");
	return -1;
}

/* pass_owner and pass_group to numbers. */
static void resolve_ids(struct parse *p, unsigned i, struct conf_serial *s)
{
	s->pass_uid = s->pass_owner[0] != '\0' ? id_of(p, i, "pass_owner", s->pass_owner, true) : -1;
	s->pass_gid = s->pass_group[0] != '\0' ? id_of(p, i, "pass_group", s->pass_group, false) : -1;
}

/* tx_device and pass: one of them, on a device of their own, with a pty path
 * that can be made. pass_owner, pass_group and pass_mode without pass are
 * unused (as [timer] keys without a [parallel] port). */
static void validate_tx(struct parse *p, unsigned i)
{
	struct conf *c = p->c;
	struct conf_serial *s = &c->serial[i];
	int tx = set_line(p, SECT_SERIAL, i, "tx_device", false);
	int pass = set_line(p, SECT_SERIAL, i, "pass", false);
	char bad[PATH_MAX];
	struct stat st;

	if (tx != 0 && pass != 0) {
		fail(p, tx > pass ? tx : pass, "[serial %s] %s: tx_device (line %d) and pass (line "
		     "%d) both give the port its second direction; keep one: tx_device for a tap's "
		     "second port, pass for an application on this PC", s->name,
		     tx > pass ? "tx_device" : "pass", tx, pass);
		return;
	}
	if (tx != 0) {
		if (same_device(s->tx_device, s->device)) {
			fail(p, tx, "[serial %s] tx_device: '%s' is the port's device; tx_device is "
			     "the tap's other port, the one that hears what goes to the device",
			     s->name, s->tx_device);
			return;
		}
		for (unsigned j = 0; j < c->nserial; j++)
			if (j != i && (same_device(s->tx_device, c->serial[j].device)
				       || (c->serial[j].tx_device[0] != '\0'
					   && same_device(s->tx_device, c->serial[j].tx_device)))) {
				fail(p, tx, "[serial %s] tx_device: '%s' is read by [serial %s] too; a "
				     "port is read by one reader", s->name, s->tx_device,
				     c->serial[j].name);
				return;
			}
	}
	if (pass == 0)
		return;
	s->pass_line = pass;
	if (strlen(s->pass_path) >= CONF_PATH_MAX) {
		fail(p, pass, "[serial %s] pass: %s is %zu bytes long; at most %d are supported",
		     s->name, s->pass_path, strlen(s->pass_path), CONF_PATH_MAX - 1);
		return;
	}
	for (unsigned j = 0; j < i; j++)
		if (strcmp(c->serial[j].pass_path, s->pass_path) == 0) {
			fail(p, pass, "[serial %s] pass: %s is [serial %s]'s pass too; give each port "
			     "its own", s->name, s->pass_path, c->serial[j].name);
			return;
		}
	if (!dir_creatable(s->pass_path, bad, sizeof(bad))) {
		fail(p, pass, "[serial %s] pass: the directory of %s cannot be created: %s is not a "
		     "directory; choose a path in a directory (a name alone goes to %s/)", s->name,
		     s->pass_path, bad, CONF_PASS_DIR);
		return;
	}
	if (lstat(s->pass_path, &st) == 0 && !S_ISLNK(st.st_mode)) {
		fail(p, pass, "[serial %s] pass: %s exists and is not a symbolic link; portlogd "
		     "makes it a link to its pty and replaces only a link: remove it or choose "
		     "another path", s->name, s->pass_path);
		return;
	}
	resolve_ids(p, i, s);
}

/* A key and its old name (cpu_dma_latency for idle_latency) set the same field: one only. */
static void validate_old_names(struct parse *p)
{
	for (unsigned i = 0; i < p->nsects; i++) {
		const struct sect *s = &p->sects[i];

		for (size_t k = 0; k < NKEYS; k++) {
			size_t n = 0;

			if (keys[k].sect != s->kind || keys[k].new_name == NULL || s->key_line[k] == 0)
				continue;
			while (n < NKEYS && (keys[n].sect != s->kind
					     || strcmp(keys[n].name, keys[k].new_name) != 0))
				n++;
			if (n == NKEYS || s->key_line[n] == 0)
				continue;
			if (s->key_line[k] > s->key_line[n])
				fail(p, s->key_line[k], "[%s] %s: the old name of %s, which line %d "
				     "sets already; keep %s only", s->title, keys[k].name,
				     keys[n].name, s->key_line[n], keys[n].name);
			else
				fail(p, s->key_line[n], "[%s] %s: its old name %s is set at line %d "
				     "already; keep %s only", s->title, keys[n].name, keys[k].name,
				     s->key_line[k], keys[n].name);
		}
	}
}

/* A strobe needs a driver that drives a pin, fits in the period, and is not read back. */
static void validate_strobe(struct parse *p, const struct conf *c, unsigned i)
{
	const struct conf_parallel *pp = &c->parallel[i];
	unsigned readback = pp->in.read == DRV_READ_DATA ? pp->in.strobe_bit
			    : pp->in.read == DRV_READ_BOTH ? pp->in.strobe_bit + 8 : 16;

	if (pp->in.strobe == DRV_STROBE_NONE)
		return;
	if (pp->driver->strobe == NULL)
		fail(p, key_line(p, SECT_PARALLEL, i, "strobe"), "[parallel %s] strobe: driver %s "
		     "cannot drive an output pin; use driver = ieee1284 (a parallel port's data "
		     "or control lines), or strobe = none", pp->name, pp->driver->name);
	else if (pp->strobe_us >= c->timer.period_us)
		fail(p, key_line(p, SECT_PARALLEL, i, "strobe_us"), "[parallel %s] strobe_us: %u us "
		     "is not shorter than [timer] period_us = %u: no sample would end within its "
		     "period; shorten strobe_us or lengthen period_us", pp->name, pp->strobe_us,
		     c->timer.period_us);
	else if (pp->in.strobe == DRV_STROBE_DATA && readback < 16 && (pp->mask >> readback & 1))
		fail(p, key_line(p, SECT_PARALLEL, i, "strobe"), "[parallel %s] strobe: data:%u is "
		     "read back by read = %s (bit %u of mask 0x%x): every IN value would hold the "
		     "strobe; take bit %u out of mask (mask = 0x%x), or strobe a control line",
		     pp->name, pp->in.strobe_bit, conf_par_read_name(pp->in.read), readback,
		     pp->mask, readback, pp->mask & ~(1u << readback));
}

static void validate(struct parse *p)
{
	struct conf *c = p->c;
	char list[192], one[64];

	for (unsigned i = 0; i < c->nserial; i++) {
		struct conf_serial *s = &c->serial[i];

		conf_resolve_serial(s);
		if (s->device[0] == '\0')
			fail(p, s->line, "[serial %s] device: missing; set the port's device, "
			     "such as device = /dev/ttyUSB0", s->name);
		else if (s->gap_us == 0 && s->gap_ns < 1000)
			fail(p, s->line, "[serial %s] gap_us: auto gap below 1 us at this baud; "
			     "set gap_us", s->name);
		else
			validate_tx(p, i);
		if (s->irq_priority == CONF_IRQ_AS_LOGGER)
			s->irq_priority = c->logger.irq_priority;
	}
	for (unsigned i = 0; i < c->nparallel; i++) {
		struct conf_parallel *pp = &c->parallel[i];

		if (pp->in.device[0] == '\0') {
			const struct drv_input_ops *const *d;

			list[0] = '\0';
			for (d = drv_inputs; *d != NULL; d++) {
				snprintf(one, sizeof(one), "%s (%s)", (*d)->device_example, (*d)->name);
				list_add(list, sizeof(list), d[1] == NULL ? " or " : ", ", one);
			}
			fail(p, pp->line, "[parallel %s] device: missing; set the port, such as "
			     "device = %s", pp->name, list);
		} else if (pp->driver->open == NULL) {
			fail(p, key_line(p, SECT_PARALLEL, i, "driver"), "[parallel %s] driver: '%s' "
			     "is not compiled in; this portlogd has: %s", pp->name, pp->driver->name,
			     driver_list(list, sizeof(list), true));
		} else {
			conf_resolve_parallel(pp);
			validate_strobe(p, c, i);
		}
		if (pp->irq_priority == CONF_IRQ_AS_LOGGER)
			pp->irq_priority = c->logger.irq_priority;
	}
	validate_old_names(p);
	if (p->err_line == 0 && c->nserial + c->nparallel == 0)
		fail(p, p->line, "no %s section: nothing to log; add at least one port",
		     sect_list(list, sizeof(list), true));
}

int conf_parse_string(struct conf *c, const char *path, const char *text,
		      char *err, size_t errlen)
{
	struct parse *p = calloc(1, sizeof(*p));
	int rc;

	if (p == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	conf_defaults(c);
	snprintf(c->path, sizeof(c->path), "%s", path);
	*p = (struct parse){ .c = c, .path = path, .err = err, .errlen = errlen };
	if (errlen > 0)
		err[0] = '\0';
	for (const char *pos = text; *pos != '\0' && p->err_line == 0;) {
		const char *nl = strchr(pos, '\n');
		size_t n = nl != NULL ? (size_t)(nl - pos) : strlen(pos);

		parse_line(p, pos, n);
		pos += n + (nl != NULL);
	}
	if (p->err_line == 0)
		validate(p);
	rc = p->err_line == 0 ? 0 : -1;
	free(p);
	return rc;
}

int conf_load(struct conf *c, const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *text;
	ssize_t n;
	size_t got = 0;
	bool regular;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open the config file: %s", path, strerror(errno));
		return -2;
	}
	regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (!regular || st.st_size > CONF_FILE_MAX) {
		if (!regular)
			snprintf(err, errlen, "%s: not a regular file; give the path of the config "
				 "file", path);
		else
			snprintf(err, errlen, "%s: %lld bytes; a config file has at most %d",
				 path, (long long)st.st_size, CONF_FILE_MAX);
		close(fd);
		return -2;
	}
	text = malloc((size_t)st.st_size + 1);
	if (text == NULL) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -2;
	}
	while (got < (size_t)st.st_size && (n = read(fd, text + got, (size_t)st.st_size - got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "%s: cannot read the config file: %s", path, strerror(errno));
			free(text);
			close(fd);
			return -2;
		}
		got += (size_t)n;
	}
	close(fd);
	text[got] = '\0';
	if (strlen(text) != got) {
		int line = 1;
		for (const char *q = text; *q != '\0'; q++)
			line += *q == '\n';
		snprintf(err, errlen, "%s:%d: a NUL byte: this is not a text file; save the config "
			 "as plain text (ASCII or UTF-8, not UTF-16)", path, line);
		free(text);
		return -1;
	}
	rc = conf_parse_string(c, path, text, err, errlen);
	free(text);
	return rc;
}

/* ---- printing ---- */

void conf_print(const struct conf *c, FILE *out)
{
	size_t plen = strlen(c->path);
	bool first = true;

	/* the comment, too, must fit on a line: the end of a long path */
	fprintf(out, "# effective configuration of %s%s\n", plen > 160 ? "..." : "",
		c->path + (plen > 160 ? plen - 160 : 0));
	for (unsigned kind = 0; kind < SECT_KINDS; kind++) {
		const struct sect_type *t = &sect_types[kind];

		for (unsigned i = 0; i < sect_count(c, t); i++) {
			const char *base = sect_at(c, t, i);

			fprintf(out, "%s[%s%s%s]\n", first ? "" : "\n", t->word, t->port ? " " : "",
				t->port ? base + t->name_off : "");
			first = false;
			for (size_t k = 0; k < NKEYS; k++) {
				if (keys[k].sect != kind || keys[k].new_name != NULL)
					continue;
				/* an optional path or name that is not set: no value to print */
				if ((keys[k].type->print == path_print || keys[k].type->print == pass_print)
				    && base[keys[k].off] == '\0') {
					fprintf(out, "# %s = (not set)\n", keys[k].name);
					continue;
				}
				fprintf(out, "%s = ", keys[k].name);
				keys[k].type->print(out, &keys[k], base);
				fputc('\n', out);
			}
		}
	}
}

void conf_print_keys(FILE *out)
{
	for (size_t i = 0; i < NKEYS; i++) {
		const struct key *k = &keys[i];
		const struct sect_type *t = &sect_types[k->sect];
		char words[128] = "", range[48] = "-";

		if (k->type == &t_driver) {
			for (const struct drv_input_ops *const *d = drv_inputs; *d != NULL; d++)
				list_add(words, sizeof(words), "|", (*d)->name);
		} else if (k->words != NULL) {
			/* the first word of each value: "on" and "off", not "yes" too */
			for (const struct word *w = k->words; w->word != NULL; w++) {
				const struct word *seen = k->words;

				while (seen != w && seen->value != w->value)
					seen++;
				if (seen == w)
					list_add(words, sizeof(words), "|", w->word);
			}
		}
		if (k->type->range)
			snprintf(range, sizeof(range), k->type->hex ? "0x%llx..0x%llx" : "%lld..%lld",
				 k->min, k->max);
		fprintf(out, "[%s%s]\t%s\t%s\t%s\t%s\n", t->word, t->port ? " NAME" : "", k->name,
			k->def != NULL ? k->def : k->required ? "(required)" : "(none)",
			words[0] != '\0' ? words : "-", range);
	}
}
