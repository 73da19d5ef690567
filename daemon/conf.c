/* conf.c - config file parsing (inih) and validation. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "conf.h"
#include "reasm.h"

#define CONF_FILE_MAX (1024 * 1024)

enum sect_kind { SECT_NONE, SECT_LOGGER, SECT_TIMER, SECT_SERIAL, SECT_PARALLEL };

struct sect {
	enum sect_kind kind;
	unsigned index;         /* into conf->serial / conf->parallel */
	int line;
	char title[CONF_NAME_MAX + 16];
	/* line of each key seen so far, by key index; 0 = not set */
	int key_line[16];
};

struct parse {
	struct conf *c;
	const char *path;
	const char *text, *pos;
	int line;
	char *err;
	size_t errlen;
	int err_line;           /* 0 = no error yet */
	struct sect sects[2 + 2 * CONF_MAX_PORTS];
	unsigned nsects;
	struct sect *cur;       /* NULL before the first section or after a bad header */
	bool cur_bad;
};

static void fail(struct parse *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct parse *p, int line, const char *fmt, ...)
{
	char msg[CONF_ERR_MAX];
	va_list ap;
	int n;

	if (p->err_line != 0)
		return;         /* keep the first error */
	if (line < 1)
		line = 1;       /* err_line 0 means no error: an empty file fails at line 1 */
	p->err_line = line;
	n = snprintf(p->err, p->errlen, "%s:%d: ", p->path, line);
	if (n < 0 || (size_t)n >= p->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
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

void conf_defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->logger.log_file, sizeof(c->logger.log_file), "%s",
		 "/var/log/portlogd/portlogd.log");
	c->logger.timestamp = CONF_TS_ISO;
	c->logger.payload = CONF_PAYLOAD_BOTH;
	c->logger.flush_interval_ms = 100;
	c->logger.sync_interval_ms = 1000;
	c->logger.stat_interval_s = 60;
	c->logger.ring_records = 65536;
	c->logger.flusher_priority = CONF_PRIO_OTHER;
	c->logger.flusher_cpu = CONF_CPU_ANY;
	c->logger.rt_required = false;
	c->timer.period_us = 1000;
	c->timer.priority = 99;
	c->timer.cpu = CONF_CPU_ANY;
	c->timer.warmup_ms = 1000;
	c->timer.cpu_dma_latency = 0;
}

static void serial_defaults(struct conf_serial *s)
{
	s->baud = 115200;
	s->data_bits = 8;
	s->parity = 'N';
	s->stop_bits = 1;
	s->flow = CONF_FLOW_NONE;
	s->gap_us = 0;
	s->delimiter = -1;
	s->max_packet = 4096;
	s->lines = false;
	s->priority = 97;
	s->cpu = CONF_CPU_ANY;
}

static void parallel_defaults(struct conf_parallel *pp)
{
	pp->driver = CONF_PAR_IEEE1284;
	pp->read = CONF_READ_STATUS;
	pp->mask = 0xff;
	pp->priority = 98;
	pp->cpu = CONF_CPU_ANY;
}

/* ---- typed value parsers: return 0 or -1 after fail() ---- */

struct ctx {
	struct parse *p;
	const char *key;
	const char *value;
	const char *word;       /* the key also takes this word: errors offer it */
};

#define CTX_FAIL(x, ...) fail((x)->p, (x)->p->line, "[%s] %s: " __VA_ARGS__)
/* three %s: ", or 'WORD'" when the key also takes a word, else nothing */
#define OR_WORD(x) (x)->word ? ", or '" : "", (x)->word ? (x)->word : "", (x)->word ? "'" : ""

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
			 x->p->cur->title, x->key, x->value, min, max, OR_WORD(x));
		return -1;
	}
	errno = 0;
	n = strtoull(v, &end, base);
	if (*end != '\0') {
		CTX_FAIL(x, "'%s' is not a number; expected a whole number from %llu to %llu%s%s%s",
			 x->p->cur->title, x->key, x->value, min, max, OR_WORD(x));
		return -1;
	}
	if (errno == ERANGE || n < min || n > max) {
		CTX_FAIL(x, "%s is out of range; expected %llu to %llu%s%s%s",
			 x->p->cur->title, x->key, x->value, min, max, OR_WORD(x));
		return -1;
	}
	*out = n;
	return 0;
}

static int parse_unsigned(const struct ctx *x, unsigned min, unsigned max, unsigned *out)
{
	unsigned long long n;

	if (parse_uint(x, min, max, &n) < 0)
		return -1;
	*out = (unsigned)n;
	return 0;
}

/* One word out of a fixed list; returns its index or -1 after fail(). */
static int parse_word(const struct ctx *x, const char *const *words)
{
	char list[128] = "";
	size_t used = 0;

	for (int i = 0; words[i] != NULL; i++) {
		if (strcmp(x->value, words[i]) == 0)
			return i;
		used += snprintf(list + used, sizeof(list) - used, "%s%s",
				 i ? ", " : "", words[i]);
		if (used >= sizeof(list))
			used = sizeof(list) - 1;
	}
	CTX_FAIL(x, "'%s' is not allowed; expected one of: %s",
		 x->p->cur->title, x->key, x->value, list);
	return -1;
}

/* `word` (stored as word_value), or a decimal number from min to max; `what`
 * says what the value is and what is expected, for the error. */
static int parse_word_or_number(const struct ctx *x, const char *word, int word_value,
				unsigned min, unsigned max, const char *what, int *out)
{
	struct ctx with_word = *x;
	unsigned n;

	if (strcmp(x->value, word) == 0) {
		*out = word_value;
		return 0;
	}
	if (!isdigit((unsigned char)x->value[0])) {
		CTX_FAIL(x, "'%s' is not %s or '%s'", x->p->cur->title, x->key, x->value, what,
			 word);
		return -1;
	}
	with_word.word = word;
	if (parse_unsigned(&with_word, min, max, &n) < 0)
		return -1;
	*out = (int)n;
	return 0;
}

static int parse_priority(const struct ctx *x, int *out)
{
	return parse_word_or_number(x, "other", CONF_PRIO_OTHER, 1, 99,
				    "a priority; expected 1..99 (SCHED_FIFO)", out);
}

/* "any", or the number of the CPU a thread is pinned to. */
static int parse_cpu(const struct ctx *x, int *out)
{
	return parse_word_or_number(x, "any", CONF_CPU_ANY, 0, CONF_CPU_MAX,
				    "a CPU; expected a CPU number (0 is the first)", out);
}

static int parse_bool(const struct ctx *x, bool *out)
{
	static const char *const words[] = { "off", "on", "no", "yes", "false", "true",
					     "0", "1", NULL };
	int i = parse_word(x, words);

	if (i < 0)
		return -1;
	*out = i % 2 == 1;
	return 0;
}

static int parse_path(const struct ctx *x, char *out, size_t outlen, bool absolute)
{
	size_t n = strlen(x->value);
	/* conf_print writes "key = value", which must fit on a line too */
	size_t max = INI_MAX_LINE - 2 - strlen(x->key) - 3;

	if (max > outlen - 1)
		max = outlen - 1;
	if (n > max) {
		CTX_FAIL(x, "path is %zu bytes long; at most %zu are supported",
			 x->p->cur->title, x->key, n, max);
		return -1;
	}
	if (absolute && x->value[0] != '/') {
		CTX_FAIL(x, "'%s' is not an absolute path; write the full path, starting with /",
			 x->p->cur->title, x->key, x->value);
		return -1;
	}
	/* "device =#x" is the value "#x", but "device = #x" (as printed) a comment */
	if (x->value[0] == '#' || x->value[0] == ';') {
		CTX_FAIL(x, "'%s' starts with '%c', which reads as a comment after a blank; "
			 "write ./%s", x->p->cur->title, x->key, x->value, x->value[0], x->value);
		return -1;
	}
	memcpy(out, x->value, n + 1);
	return 0;
}

/* "8N1": data bits 5..8, parity N/E/O/M/S, stop bits 1 or 2. */
static int parse_format(const struct ctx *x, struct conf_serial *s)
{
	const char *v = x->value;

	if (strlen(v) != 3 || v[0] < '5' || v[0] > '8' || strchr("NEOMS", toupper((unsigned char)v[1])) == NULL
	    || (v[2] != '1' && v[2] != '2')) {
		CTX_FAIL(x, "'%s' is not a frame format; expected data bits 5-8, parity N/E/O/M/S "
			 "and stop bits 1-2, such as 8N1 or 7E1", x->p->cur->title, x->key, v);
		return -1;
	}
	s->data_bits = (unsigned)(v[0] - '0');
	s->parity = (char)toupper((unsigned char)v[1]);
	s->stop_bits = (unsigned)(v[2] - '0');
	return 0;
}

/* A byte: none, 0xNN, a decimal number, \n \r \t \0, or one printable character. */
static int parse_delimiter(const struct ctx *x, int *out)
{
	static const struct { const char *s; int b; } esc[] = {
		{ "\\n", '\n' }, { "\\r", '\r' }, { "\\t", '\t' }, { "\\0", 0 },
	};
	const char *v = x->value;
	unsigned long long n;

	if (strcmp(v, "none") == 0) {
		*out = -1;
		return 0;
	}
	for (size_t i = 0; i < sizeof(esc) / sizeof(esc[0]); i++)
		if (strcmp(v, esc[i].s) == 0) {
			*out = esc[i].b;
			return 0;
		}
	if (v[1] == '\0' && !isdigit((unsigned char)v[0])) {
		*out = (unsigned char)v[0];
		return 0;
	}
	if (isdigit((unsigned char)v[0])) {
		if (parse_uint(x, 0, 255, &n) < 0)
			return -1;
		*out = (int)n;
		return 0;
	}
	CTX_FAIL(x, "'%s' is not a byte; expected none, a number such as 0x0a or 10, "
		 "\\n, \\r, \\t, \\0 or a single character", x->p->cur->title, x->key, v);
	return -1;
}

/* ---- keys of each section ---- */

enum { K_LOG_FILE, K_TIMESTAMP, K_PAYLOAD, K_FLUSH, K_SYNC, K_STAT, K_RING, K_FPRIO,
       K_FCPU, K_RT };
static const char *const logger_keys[] = {
	"log_file", "timestamp", "payload", "flush_interval_ms", "sync_interval_ms",
	"stat_interval_s", "ring_records", "flusher_priority", "flusher_cpu", "rt", NULL,
};

enum { K_PERIOD, K_TPRIO, K_WARMUP, K_DMA, K_TCPU };
static const char *const timer_keys[] = {
	"period_us", "priority", "warmup_ms", "cpu_dma_latency", "cpu", NULL,
};

enum { K_DEVICE, K_BAUD, K_FORMAT, K_FLOW, K_GAP, K_DELIM, K_MAXPKT, K_LINES, K_SPRIO,
       K_SCPU };
static const char *const serial_keys[] = {
	"device", "baud", "format", "flow", "gap_us", "delimiter", "max_packet", "lines",
	"priority", "cpu", NULL,
};

enum { K_DRIVER, K_PDEVICE, K_READ, K_MASK, K_PPRIO, K_PCPU };
static const char *const parallel_keys[] = {
	"driver", "device", "read", "mask", "priority", "cpu", NULL,
};

static int set_logger(const struct ctx *x, int key)
{
	static const char *const ts[] = { "iso", "epoch", NULL };
	static const char *const payload[] = { "hex", "text", "both", NULL };
	static const char *const rt[] = { "best-effort", "required", NULL };
	struct conf_logger *l = &x->p->c->logger;
	unsigned n;
	int i;

	switch (key) {
	case K_LOG_FILE:
		return parse_path(x, l->log_file, sizeof(l->log_file), true);
	case K_TIMESTAMP:
		if ((i = parse_word(x, ts)) < 0)
			return -1;
		l->timestamp = i == 0 ? CONF_TS_ISO : CONF_TS_EPOCH;
		return 0;
	case K_PAYLOAD:
		if ((i = parse_word(x, payload)) < 0)
			return -1;
		l->payload = (enum conf_payload)(i + 1);
		return 0;
	case K_FLUSH:
		return parse_unsigned(x, 1, 60000, &l->flush_interval_ms);
	case K_SYNC:
		return parse_unsigned(x, 0, 3600000, &l->sync_interval_ms);
	case K_STAT:
		return parse_unsigned(x, 0, 86400, &l->stat_interval_s);
	case K_RING:
		if (parse_unsigned(x, 64, 1u << 24, &n) < 0)
			return -1;
		if ((n & (n - 1)) != 0) {
			CTX_FAIL(x, "%u is not a power of two; use one such as 16384 or 65536",
				 x->p->cur->title, x->key, n);
			return -1;
		}
		l->ring_records = n;
		return 0;
	case K_FPRIO:
		return parse_priority(x, &l->flusher_priority);
	case K_FCPU:
		return parse_cpu(x, &l->flusher_cpu);
	case K_RT:
		if ((i = parse_word(x, rt)) < 0)
			return -1;
		l->rt_required = i == 1;
		return 0;
	}
	return -1;
}

static int set_timer(const struct ctx *x, int key)
{
	struct conf_timer *t = &x->p->c->timer;

	switch (key) {
	case K_PERIOD:
		return parse_unsigned(x, 20, 1000000, &t->period_us);
	case K_WARMUP:
		return parse_unsigned(x, 0, 600000, &t->warmup_ms);
	case K_DMA:
		return parse_word_or_number(x, "off", -1, 0, 1000000, "a latency; expected "
					    "microseconds from 0 to 1000000", &t->cpu_dma_latency);
	case K_TCPU:
		return parse_cpu(x, &t->cpu);
	}
	return parse_priority(x, &t->priority);
}

static int set_serial(const struct ctx *x, int key, struct conf_serial *s)
{
	static const char *const flow[] = { "none", "rtscts", "xonxoff", "dtrdsr", NULL };
	int i;

	switch (key) {
	case K_DEVICE:
		return parse_path(x, s->device, sizeof(s->device), true);
	case K_BAUD:
		return parse_unsigned(x, 50, 4000000, &s->baud);
	case K_FORMAT:
		return parse_format(x, s);
	case K_FLOW:
		if ((i = parse_word(x, flow)) < 0)
			return -1;
		s->flow = (enum conf_flow)i;
		return 0;
	case K_GAP:
		if (parse_word_or_number(x, "auto", 0, 1, 10000000,
					 "a gap in microseconds; expected 1 to 10000000", &i) < 0)
			return -1;
		s->gap_us = (unsigned)i;
		return 0;
	case K_DELIM:
		return parse_delimiter(x, &s->delimiter);
	case K_MAXPKT:
		return parse_unsigned(x, 1, 65535, &s->max_packet);
	case K_LINES:
		return parse_bool(x, &s->lines);
	case K_SPRIO:
		return parse_priority(x, &s->priority);
	case K_SCPU:
		return parse_cpu(x, &s->cpu);
	}
	return -1;
}

static int set_parallel(const struct ctx *x, int key, struct conf_parallel *pp)
{
	static const char *const drivers[] = { "ieee1284", "lines", "sim", NULL };
	static const char *const reads[] = { "status", "data", "status+data", NULL };
	unsigned long long n;
	int i;

	switch (key) {
	case K_DRIVER:
		if ((i = parse_word(x, drivers)) < 0)
			return -1;
		pp->driver = (enum conf_par_driver)i;
		return 0;
	case K_PDEVICE:
		return parse_path(x, pp->device, sizeof(pp->device), false);
	case K_READ:
		if ((i = parse_word(x, reads)) < 0)
			return -1;
		pp->read = (enum conf_par_read)(i + 1);
		return 0;
	case K_MASK:
		if (parse_uint(x, 1, 0xffff, &n) < 0)
			return -1;
		pp->mask = (unsigned)n;
		return 0;
	case K_PPRIO:
		return parse_priority(x, &pp->priority);
	case K_PCPU:
		return parse_cpu(x, &pp->cpu);
	}
	return -1;
}

static const char *const *section_keys(enum sect_kind kind)
{
	switch (kind) {
	case SECT_LOGGER: return logger_keys;
	case SECT_TIMER: return timer_keys;
	case SECT_SERIAL: return serial_keys;
	case SECT_PARALLEL: return parallel_keys;
	default: return NULL;
	}
}

/* inih calls this for every key = value line. */
static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parse *p = user;
	struct sect *s = p->cur;
	const char *const *keys;
	struct ctx x = { .p = p, .key = name, .value = value };
	char list[256] = "";
	size_t used = 0;
	int key = -1;

	(void)section;  /* p->cur, registered by the line reader, is authoritative */
	if (p->err_line != 0)
		return 1;
	if (s == NULL) {
		if (!p->cur_bad)
			fail(p, p->line, "%s: key outside of any section; put it under [logger], "
			     "[timer], [serial NAME] or [parallel NAME]", name);
		return 1;
	}
	if (name[0] == '\0') {
		fail(p, p->line, "[%s]: '= %s' has no key; write key = value", s->title, value);
		return 1;
	}
	keys = section_keys(s->kind);
	for (int i = 0; keys[i] != NULL; i++) {
		if (strcmp(keys[i], name) == 0)
			key = i;
		used += snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", keys[i]);
		if (used >= sizeof(list))
			used = sizeof(list) - 1;
	}
	if (key < 0) {
		fail(p, p->line, "[%s] %s: unknown key; keys of this section are: %s",
		     s->title, name, list);
		return 1;
	}
	if (s->key_line[key] != 0) {
		fail(p, p->line, "[%s] %s: set twice (first at line %d); keep one",
		     s->title, name, s->key_line[key]);
		return 1;
	}
	s->key_line[key] = p->line;
	if (value[0] == '\0') {
		fail(p, p->line, "[%s] %s: empty value; give a value or remove the line",
		     s->title, name);
		return 1;
	}
	switch (s->kind) {
	case SECT_LOGGER: (void)set_logger(&x, key); break;
	case SECT_TIMER: (void)set_timer(&x, key); break;
	case SECT_SERIAL: (void)set_serial(&x, key, &p->c->serial[s->index]); break;
	case SECT_PARALLEL: (void)set_parallel(&x, key, &p->c->parallel[s->index]); break;
	default: break;
	}
	/* errors are collected in p; returning 0 would only make inih count them too */
	return 1;
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

static struct sect *find_sect(struct parse *p, const char *title)
{
	for (unsigned i = 0; i < p->nsects; i++)
		if (strcmp(p->sects[i].title, title) == 0)
			return &p->sects[i];
	return NULL;
}

/* A "[...]" header line, seen by the reader before inih parses it. */
static void open_section(struct parse *p, const char *start)
{
	const char *end = strchr(start, ']');
	char raw[128], type[16] = "", name[128] = "";
	struct sect new_sect, *s = &new_sect, *dup;
	size_t n;
	int fields;

	p->cur = NULL;
	p->cur_bad = true;
	if (end == NULL)
		return;         /* inih reports the syntax error */
	n = (size_t)(end - start - 1);
	if (n >= sizeof(raw)) {
		fail(p, p->line, "[%.20s...]: section header of %zu characters; a port name has at "
		     "most %d", start + 1, n, CONF_NAME_MAX - 1);
		return;
	}
	memcpy(raw, start + 1, n);
	raw[n] = '\0';
	/* inih ignores what follows the ']': a CR-only file would be one line */
	for (end++; isspace((unsigned char)*end); end++)
		;
	if (*end != '\0' && *end != ';') {
		fail(p, p->line, "[%s]: '%.40s' after the section header; put keys on lines of "
		     "their own", raw, end);
		return;
	}
	fields = sscanf(raw, " %15s %127s", type, name);
	if (fields == 1 && (strcmp(type, "logger") == 0 || strcmp(type, "timer") == 0)) {
		/* fine */
	} else if (fields == 2 && (strcmp(type, "serial") == 0 || strcmp(type, "parallel") == 0)) {
		char rest[2];
		if (sscanf(raw, " %*s %*s %1s", rest) == 1) {
			fail(p, p->line, "[%s]: a port name is one word; write [%s NAME]", raw, type);
			return;
		}
		if (!valid_name(name)) {
			fail(p, p->line, "[%s]: '%s' cannot be a port name; use up to %d letters, "
			     "digits, '_', '-', '.' or ':', and not 'portlogd'", raw, name,
			     CONF_NAME_MAX - 1);
			return;
		}
	} else {
		fail(p, p->line, "[%s]: unknown section; expected [logger], [timer], "
		     "[serial NAME] or [parallel NAME]", raw);
		return;
	}
	/* built aside, stored once accepted: sects[] only has room for accepted ones */
	memset(s, 0, sizeof(*s));
	s->line = p->line;
	if (fields == 1) {
		snprintf(s->title, sizeof(s->title), "%s", type);
	} else {
		snprintf(s->title, sizeof(s->title), "%s %s", type, name);
		/* one name space for all ports: the name is the log's SOURCE field */
		for (unsigned i = 0; i < p->nsects; i++) {
			const char *t = p->sects[i].title;
			const char *sp = strchr(t, ' ');
			if (sp != NULL && strcmp(sp + 1, name) == 0 && strcmp(t, s->title) != 0) {
				fail(p, p->line, "[%s]: the name '%s' is already used by [%s] at line %d; "
				     "port names must be unique", s->title, name, t, p->sects[i].line);
				return;
			}
		}
	}
	dup = find_sect(p, s->title);
	if (dup != NULL) {
		fail(p, p->line, "[%s]: duplicate section (first at line %d); merge the two",
		     s->title, dup->line);
		return;
	}
	if (strcmp(type, "logger") == 0) {
		s->kind = SECT_LOGGER;
		p->c->logger.line = p->line;
	} else if (strcmp(type, "timer") == 0) {
		s->kind = SECT_TIMER;
		p->c->timer.line = p->line;
	} else if (strcmp(type, "serial") == 0) {
		if (p->c->nserial == CONF_MAX_PORTS) {
			fail(p, p->line, "[%s]: more than %d serial ports; run a second portlogd "
			     "for the rest", s->title, CONF_MAX_PORTS);
			return;
		}
		s->kind = SECT_SERIAL;
		s->index = p->c->nserial++;
		serial_defaults(&p->c->serial[s->index]);
		snprintf(p->c->serial[s->index].name, CONF_NAME_MAX, "%s", name);
		p->c->serial[s->index].line = p->line;
	} else {
		if (p->c->nparallel == CONF_MAX_PORTS) {
			fail(p, p->line, "[%s]: more than %d parallel ports; run a second portlogd "
			     "for the rest", s->title, CONF_MAX_PORTS);
			return;
		}
		s->kind = SECT_PARALLEL;
		s->index = p->c->nparallel++;
		parallel_defaults(&p->c->parallel[s->index]);
		snprintf(p->c->parallel[s->index].name, CONF_NAME_MAX, "%s", name);
		p->c->parallel[s->index].line = p->line;
	}
	p->cur = &p->sects[p->nsects++];
	*p->cur = *s;
	p->cur_bad = false;
}

/*
 * inih's line reader. Debian builds inih without INI_HANDLER_LINENO, so we count
 * lines here: inih calls the handler for a line before it reads the next one.
 * We also strip leading blanks, which turns off inih's multi-line values (an
 * indented "key = value" would otherwise silently continue the previous value),
 * and register section headers so that empty and duplicate sections are seen.
 */
static char *read_line(char *str, int num, void *stream)
{
	struct parse *p = stream;
	const char *nl, *start = p->pos;
	size_t n;

	if (*p->pos == '\0' || p->err_line != 0)
		return NULL;
	p->line++;
	nl = strchr(p->pos, '\n');
	n = nl != NULL ? (size_t)(nl - p->pos) : strlen(p->pos);
	p->pos += n + (nl != NULL);
	if (p->line == 1 && n >= 3 && memcmp(start, "\xef\xbb\xbf", 3) == 0) {
		start += 3;     /* a UTF-8 byte order mark, as some editors write */
		n -= 3;
	}
	while (n > 0 && (*start == ' ' || *start == '\t')) {
		start++;
		n--;
	}
	/* '#' after a blank starts a comment, like ';' does in inih: people write
	 * "baud = 9600  # the PLC" and mean it */
	for (size_t i = 1; i < n; i++)
		if (start[i] == '#' && (start[i - 1] == ' ' || start[i - 1] == '\t')) {
			n = i;
			break;
		}
	if (n >= (size_t)num - 1) {
		fail(p, p->line, "line is longer than %d characters; shorten it", num - 2);
		return NULL;
	}
	memcpy(str, start, n);
	str[n] = '\0';
	if (start[0] == '[')
		open_section(p, str);
	return str;
}

static int validate(struct parse *p)
{
	struct conf *c = p->c;

	for (unsigned i = 0; i < c->nserial; i++) {
		struct conf_serial *s = &c->serial[i];
		if (s->device[0] == '\0')
			fail(p, s->line, "[serial %s] device: missing; set the port's device, "
			     "such as device = /dev/ttyUSB0", s->name);
		else if (s->gap_us == 0 && conf_gap_ns(s) < 1000)
			fail(p, s->line, "[serial %s] gap_us: auto gap below 1 us at this baud; "
			     "set gap_us", s->name);
	}
	for (unsigned i = 0; i < c->nparallel; i++) {
		struct conf_parallel *pp = &c->parallel[i];
		if (pp->device[0] == '\0')
			fail(p, pp->line, "[parallel %s] device: missing; set the port, such as "
			     "device = parport0 (ieee1284), /dev/ttyS0 (lines) or a file (sim)",
			     pp->name);
	}
	if (p->err_line == 0 && c->nserial + c->nparallel == 0)
		fail(p, p->line, "no [serial NAME] or [parallel NAME] section: nothing to log; "
		     "add at least one port");
	return p->err_line == 0 ? 0 : -1;
}

/* inih found a line that is no section, key = value or comment: quote it. */
static void syntax_error(struct parse *p, int line)
{
	const char *t = p->text;
	char sect[CONF_NAME_MAX + 24] = "";
	int n;

	for (int i = 1; i < line && strchr(t, '\n') != NULL; i++)
		t = strchr(t, '\n') + 1;
	if (line == 1 && strncmp(t, "\xef\xbb\xbf", 3) == 0)
		t += 3;
	t += strspn(t, " \t");
	n = (int)strcspn(t, "\r\n");
	/* sections before the line were all accepted, or that would be the error */
	for (unsigned i = 0; i < p->nsects && p->sects[i].line < line; i++)
		snprintf(sect, sizeof(sect), "[%s]: ", p->sects[i].title);
	if (t[0] == '[')
		fail(p, line, "syntax error: '%.*s' has no closing ']'; write [logger], [timer], "
		     "[serial NAME] or [parallel NAME]", n < 40 ? n : 40, t);
	else
		fail(p, line, "%ssyntax error: '%.*s' is not key = value; write key = value, "
		     "a [section], or a comment starting with # or ;", sect, n < 40 ? n : 40, t);
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
	*p = (struct parse){ .c = c, .path = path, .text = text, .pos = text,
			     .err = err, .errlen = errlen };
	if (errlen > 0)
		err[0] = '\0';
	rc = ini_parse_stream(read_line, p, on_key, p);
	if (rc > 0 && (p->err_line == 0 || rc < p->err_line)) {
		p->err_line = 0;
		syntax_error(p, rc);
	} else if (rc < 0 && p->err_line == 0) {
		fail(p, 0, "cannot parse (inih error %d)", rc);
	}
	if (p->err_line == 0)
		(void)validate(p);
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

unsigned conf_frame_bits(const struct conf_serial *s)
{
	return 1 + s->data_bits + (s->parity != 'N') + s->stop_bits;
}

int64_t conf_gap_ns(const struct conf_serial *s)
{
	if (s->gap_us != 0)
		return (int64_t)s->gap_us * 1000;
	return reasm_auto_gap_ns(s->baud, conf_frame_bits(s));
}

/* A thread's scheduling keys; `prefix` names them in [logger] ("flusher_"). */
static void print_sched(FILE *out, const char *prefix, int prio, int cpu)
{
	if (prio == CONF_PRIO_OTHER)
		fprintf(out, "%spriority = other\n", prefix);
	else
		fprintf(out, "%spriority = %d\n", prefix, prio);
	if (cpu == CONF_CPU_ANY)
		fprintf(out, "%scpu = any\n", prefix);
	else
		fprintf(out, "%scpu = %d\n", prefix, cpu);
}

const char *conf_par_driver_name(enum conf_par_driver d)
{
	static const char *const drivers[] = { "ieee1284", "lines", "sim" };

	return (unsigned)d < 3 ? drivers[d] : "?";
}

const char *conf_par_read_name(enum conf_par_read r)
{
	static const char *const reads[] = { "", "status", "data", "status+data" };

	return (unsigned)r < 4 ? reads[r] : "?";
}

void conf_print(const struct conf *c, FILE *out)
{
	static const char *const payload[] = { "", "hex", "text", "both" };
	static const char *const flow[] = { "none", "rtscts", "xonxoff", "dtrdsr" };
	const struct conf_logger *l = &c->logger;
	size_t plen = strlen(c->path);

	/* the comment, too, must fit on a line: the end of a long path */
	fprintf(out, "# effective configuration of %s%s\n[logger]\n", plen > 160 ? "..." : "",
		c->path + (plen > 160 ? plen - 160 : 0));
	fprintf(out, "log_file = %s\ntimestamp = %s\npayload = %s\n", l->log_file,
		l->timestamp == CONF_TS_ISO ? "iso" : "epoch", payload[l->payload]);
	fprintf(out, "flush_interval_ms = %u\nsync_interval_ms = %u\nstat_interval_s = %u\n"
		"ring_records = %u\n", l->flush_interval_ms, l->sync_interval_ms,
		l->stat_interval_s, l->ring_records);
	print_sched(out, "flusher_", l->flusher_priority, l->flusher_cpu);
	fprintf(out, "rt = %s\n", l->rt_required ? "required" : "best-effort");
	fprintf(out, "\n[timer]\nperiod_us = %u\n", c->timer.period_us);
	print_sched(out, "", c->timer.priority, c->timer.cpu);
	fprintf(out, "warmup_ms = %u\n", c->timer.warmup_ms);
	if (c->timer.cpu_dma_latency < 0)
		fprintf(out, "cpu_dma_latency = off\n");
	else
		fprintf(out, "cpu_dma_latency = %d\n", c->timer.cpu_dma_latency);
	for (unsigned i = 0; i < c->nserial; i++) {
		const struct conf_serial *s = &c->serial[i];
		fprintf(out, "\n[serial %s]\ndevice = %s\nbaud = %u\nformat = %u%c%u\nflow = %s\n",
			s->name, s->device, s->baud, s->data_bits, s->parity, s->stop_bits,
			flow[s->flow]);
		if (s->gap_us == 0)
			fprintf(out, "gap_us = auto  ; %" PRId64 " us\n", conf_gap_ns(s) / 1000);
		else
			fprintf(out, "gap_us = %u\n", s->gap_us);
		if (s->delimiter < 0)
			fprintf(out, "delimiter = none\n");
		else
			fprintf(out, "delimiter = 0x%02x\n", (unsigned)s->delimiter);
		fprintf(out, "max_packet = %u\nlines = %s\n", s->max_packet, s->lines ? "on" : "off");
		print_sched(out, "", s->priority, s->cpu);
	}
	for (unsigned i = 0; i < c->nparallel; i++) {
		const struct conf_parallel *pp = &c->parallel[i];
		fprintf(out, "\n[parallel %s]\ndriver = %s\ndevice = %s\nread = %s\nmask = 0x%02x\n",
			pp->name, conf_par_driver_name(pp->driver), pp->device, conf_par_read_name(pp->read), pp->mask);
		print_sched(out, "", pp->priority, pp->cpu);
	}
}
