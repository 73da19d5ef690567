/* SPDX-License-Identifier: GPL-2.0-or-later */
/* conf_keys.c - the config's keys: one table row per key, and how each type of value is read and written.
 *
 * A key is one row of conf_keys[] below: its section, name, type, range, words,
 * default and the field it sets. The line reader (conf_read.c), conf_print
 * (--check-config, conf_print.c) and conf_print_keys (--list-keys, which
 * tests/lint/man_keys.sh holds against the man page) all read that
 * table, so a new key is a new row.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_internal.h"
#include "delivery.h"
#include "drv.h"
#include "grow.h"

/* ---- sections ---- */

const struct sect_type conf_sect_types[SECT_KINDS] = {
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

const char *conf_sect_list(char *buf, size_t len, bool ports_only)
{
	unsigned n = 0, last = 0;
	char one[32];

	buf[0] = '\0';
	for (unsigned k = 0; k < SECT_KINDS; k++)
		if (conf_sect_types[k].port || !ports_only)
			last = k;
	for (unsigned k = 0; k < SECT_KINDS; k++) {
		if (!conf_sect_types[k].port && ports_only)
			continue;
		snprintf(one, sizeof(one), "[%s%s]", conf_sect_types[k].word,
			 conf_sect_types[k].port ? " NAME" : "");
		list_add(buf, len, k == last && n > 0 ? " or " : ", ", one);
		n++;
	}
	return buf;
}

/* ---- the key table ---- */

static const struct type t_path, t_abspath, t_uint, t_hex, t_pow2, t_word, t_numword, t_gap,
			 t_format, t_byte, t_driver, t_idle, t_dma, t_strobe, t_ident, t_octal,
			 t_pass, t_delivery;

static const struct word w_timestamp[] = { { "iso", CONF_TS_ISO }, { "epoch", CONF_TS_EPOCH },
					   { NULL, 0 } };
static const struct word w_payload[] = { { "hex", CONF_PAYLOAD_HEX }, { "text", CONF_PAYLOAD_TEXT },
					 { "both", CONF_PAYLOAD_BOTH }, { NULL, 0 } };
static const struct word w_clock[] = { { "auto", CONF_CLOCK_AUTO }, { "on", CONF_CLOCK_ON },
				       { "off", CONF_CLOCK_OFF }, { NULL, 0 } };
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
/* delivery.h: what stands between a port's wire and read() */
static const struct word w_delivery[] = { { "auto", DELIVERY_AUTO }, { "direct", DELIVERY_DIRECT },
					  { "fifo", DELIVERY_FIFO }, { "usb", DELIVERY_USB },
					  { NULL, 0 } };
static const struct word w_trigger[] = { { "auto", DELIVERY_TRIGGER_AUTO },
					 { "keep", DELIVERY_TRIGGER_KEEP }, { NULL, 0 } };
#define DELIVERY_MAX 255        /* a FIFO level in bytes, an adapter's hold in ms */

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
const struct key conf_keys[] = {
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
	/* written with every STAT round: validate_metrics() in conf_check.c */
	{ SECT_LOGGER, "metrics_file", &t_abspath, AT(logger, metrics_file), .def = NULL },
	/* auto: each port's own by its baud and ring_seconds (conf_ring_serial) */
	{ SECT_LOGGER, "ring_records", &t_pow2, AT(logger, ring_records), 64, CONF_RING_MAX, w_auto,
	  "a power of two", .def = "auto" },
	{ SECT_LOGGER, "ring_seconds", &t_uint, AT(logger, ring_seconds), 1, 3600, .def = "10" },
	PRIORITY(SECT_LOGGER, logger, flusher_priority, "flusher_priority", "other"),
	CPU(SECT_LOGGER, logger, flusher_cpu, "flusher_cpu"),
	{ SECT_LOGGER, "rt", &t_word, AT(logger, rt_required), .words = w_rt, .def = "best-effort" },
	IRQ_PRIORITY(SECT_LOGGER, logger, "auto"),
	{ SECT_LOGGER, "sensor_period_us", &t_uint, AT(logger, sensor_period_us), 100, 100000,
	  .def = "1000" },
	{ SECT_LOGGER, "clock_sensor", &t_word, AT(logger, clock_sensor), .words = w_clock,
	  .def = "auto" },

	{ SECT_TIMER, "period_us", &t_uint, AT(timer, period_us), 20, 1000000, .def = "1000" },
	PRIORITY(SECT_TIMER, timer, priority, "priority", "99"),
	CPU(SECT_TIMER, timer, cpu, "cpu"),
	{ SECT_TIMER, "warmup_ms", &t_uint, AT(timer, warmup_ms), 0, 600000, .def = "1000" },
	/* auto: global:0 unless every real-time thread is pinned, then pinned:0, which
	 * tests/bench/bench_idle.sh measured within 1.1x of global:0 on a quiet machine while
	 * the free CPU halts (tests/bench/RESULTS.md) */
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
	{ SECT_SERIAL, "delivery", &t_delivery, AT(serial, tty.delivery), 1, DELIVERY_MAX,
	  w_delivery, .def = "auto" },
	{ SECT_SERIAL, "rx_trigger", &t_numword, AT(serial, tty.rx_trigger), 1, DELIVERY_MAX,
	  w_trigger, "a receive trigger level; expected bytes from 1 to 255", .def = "auto" },
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
#define NKEYS (sizeof(conf_keys) / sizeof(conf_keys[0]))

/* stored through an int (or a bool): the enums must be as wide */
_Static_assert(sizeof(enum conf_ts) == sizeof(int) && sizeof(enum conf_payload) == sizeof(int)
	       && sizeof(enum drv_flow) == sizeof(int) && sizeof(enum drv_read) == sizeof(int)
	       && sizeof(enum conf_idle) == sizeof(int) && sizeof(enum drv_strobe) == sizeof(int),
	       "an enum of struct conf is not int-sized");
_Static_assert(NKEYS <= CONF_KEYS_MAX, "more rows in the key table than CONF_KEYS_MAX: raise it");
const size_t conf_nkeys = NKEYS;

/* ---- typed value parsers: return 0 or -1 after fail() ---- */

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

static int numword_parse(const struct ctx *x, void *sect);

/* A power of two from min to max, or one of the key's words (ring_records = auto). */
static int pow2_parse(const struct ctx *x, void *sect)
{
	unsigned n;

	for (const struct word *w = x->k->words; w != NULL && w->word != NULL; w++)
		if (strcmp(x->value, w->word) == 0)
			return numword_parse(x, sect);
	if ((x->k->words != NULL ? numword_parse(x, sect) : uint_parse(x, sect)) < 0)
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

/* A user or group: a name as useradd takes it, or a number. Looked up in conf_validate(). */
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

const char *conf_driver_list(char *buf, size_t len, bool compiled_only)
{
	buf[0] = '\0';
	for (const struct drv_input_ops *const *d = drv_inputs; *d != NULL; d++)
		if (!compiled_only || (*d)->open != NULL)
			list_add(buf, len, ", ", (*d)->name);
	return buf;
}

/* A driver by name; one that is not compiled in is found too (conf_validate() says so). */
static int driver_parse(const struct ctx *x, void *sect)
{
	const struct drv_input_ops *ops = drv_input_find(x->value);
	char list[128];

	if (ops == NULL) {
		CTX_FAIL(x, "'%s' is not allowed; expected one of: %s", x->value,
			 conf_driver_list(list, sizeof(list), false));
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

/* Milliseconds with up to 3 decimals ("1", "0.5", "1.125") into *us, at most max_ms;
 * the end of what it read into *end. -1 when there is none. */
static int parse_ms(const char *s, const char **end, unsigned max_ms, unsigned *us)
{
	unsigned long long v = 0;
	unsigned frac = 0, digits = 0;

	if (!isdigit((unsigned char)*s))
		return -1;
	while (isdigit((unsigned char)*s) && v <= max_ms)
		v = v * 10 + (unsigned)(*s++ - '0');
	if (*s == '.') {
		s++;
		while (isdigit((unsigned char)*s) && digits < 3) {
			frac = frac * 10 + (unsigned)(*s++ - '0');
			digits++;
		}
		if (digits == 0 || isdigit((unsigned char)*s))
			return -1;
		while (digits++ < 3)
			frac *= 10;
	}
	if (v > max_ms || (v == max_ms && frac > 0))
		return -1;
	*us = (unsigned)v * 1000 + frac;
	*end = s;
	return 0;
}

/* delivery = auto | direct | fifo:N | usb:MS | usb:MS/SIZE[/POLL] (delivery.h) */
static int delivery_parse(const struct ctx *x, void *sect)
{
	struct conf_serial *sp = sect;
	struct delivery_conf dc = { .kind = -1 };
	const char *v = x->value, *e;
	unsigned long long n = 0;
	char *end;

	for (const struct word *w = w_delivery; w->word != NULL; w++) {
		size_t len = strlen(w->word);
		bool takes_n = w->value == DELIVERY_FIFO || w->value == DELIVERY_USB;

		if (strncmp(v, w->word, len) == 0 && (v[len] == (takes_n ? ':' : '\0')
						     || (w->value == DELIVERY_USB && v[len] == '\0'))) {
			dc.kind = w->value;
			v += len + (v[len] == ':' ? 1 : 0);
			break;
		}
	}
	if (dc.kind == DELIVERY_FIFO) {
		struct ctx num = *x;

		num.value = v;
		if (parse_uint(&num, (unsigned long long)x->k->min, (unsigned long long)x->k->max,
			       &n) < 0)
			return -1;
		dc.trigger = (unsigned)n;
	} else if (dc.kind == DELIVERY_USB && *v == '\0') {
		/* usb alone: an adapter whose hold is not known: learned from its traffic */
	} else if (dc.kind == DELIVERY_USB) {
		/* MS, then /SIZE and /POLL: milliseconds with up to 3 decimals */
		if (parse_ms(v, &e, DELIVERY_MAX, &dc.hold_us) < 0 || dc.hold_us == 0)
			goto bad;
		if (*e == '/') {
			errno = 0;
			n = strtoull(e + 1, &end, 10);
			if (!isdigit((unsigned char)e[1]) || errno != 0 || n < 2 || n > 512)
				goto bad;
			dc.xfer = (unsigned)n;
			dc.poll_us = DELIVERY_USB_POLL_US;
			e = end;
			if (*e == '/' && parse_ms(e + 1, &e, DELIVERY_MAX, &dc.poll_us) < 0)
				goto bad;
		}
		if (*e != '\0')
			goto bad;
	} else if (dc.kind < 0) {
		goto bad;
	}
	sp->tty.delivery = dc;
	return 0;
bad:
	CTX_FAIL(x, "'%s' is not a delivery; expected auto, direct, fifo:N (a 16550-type FIFO "
		 "with receive trigger level N bytes, %lld to %lld), usb (an adapter whose hold is "
		 "learned from its traffic), usb:MS (one that holds a byte up to MS milliseconds) or usb:MS/SIZE[/POLL] (one that hands over a "
		 "transfer of SIZE bytes, 2 to 512, or the rest MS after the last byte, taken by "
		 "the host up to POLL later; portlogd --calibrate measures them); MS and POLL "
		 "up to %lld, with up to 3 decimals", x->value, x->k->min, x->k->max, x->k->max);
	return -1;
}

static void delivery_print(FILE *out, const struct key *k, const void *sect)
{
	const struct conf_serial *sp = sect;
	char text[64];

	(void)k;
	fputs(delivery_conf_text(&sp->tty.delivery, text, sizeof(text)), out);
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

/* parse, print, range, hex, text */
static const struct type t_path = { path_parse, path_print, false, false, true };
static const struct type t_abspath = { abspath_parse, path_print, false, false, true };
static const struct type t_uint = { uint_parse, uint_print, true, false, false };
static const struct type t_hex = { uint_parse, uint_print, true, true, false };
static const struct type t_pow2 = { pow2_parse, word_print, true, false, false };
static const struct type t_word = { word_parse, word_print, false, false, false };
static const struct type t_numword = { numword_parse, word_print, true, false, false };
static const struct type t_gap = { numword_parse, gap_print, true, false, false };
static const struct type t_format = { format_parse, format_print, false, false, false };
static const struct type t_byte = { byte_parse, byte_print, false, false, false };
static const struct type t_driver = { driver_parse, driver_print, false, false, false };
static const struct type t_idle = { idle_parse, idle_print, true, false, false };
static const struct type t_delivery = { delivery_parse, delivery_print, true, false, false };
static const struct type t_dma = { dma_parse, idle_print, true, false, false };
static const struct type t_strobe = { strobe_parse, strobe_print, false, false, false };
static const struct type t_ident = { ident_parse, path_print, false, false, true };
static const struct type t_octal = { octal_parse, octal_print, false, false, false };
static const struct type t_pass = { path_parse, pass_print, false, false, true };

/* ---- defaults ---- */

void conf_set_defaults(enum sect_kind kind, void *sect)
{
	for (size_t i = 0; i < conf_nkeys; i++) {
		struct ctx x = { .title = conf_sect_types[kind].word, .k = &conf_keys[i],
				 .value = conf_keys[i].def };

		if (conf_keys[i].sect == kind && conf_keys[i].def != NULL)
			(void)conf_keys[i].type->parse(&x, sect);
	}
}

void *conf_port_add(struct conf *c, const struct sect_type *t)
{
	void **arr = (void **)((char *)c + t->off);
	unsigned *count = (unsigned *)((char *)c + t->count_off);
	void *base;

	if (!grow_one(arr, *count, t->size, 4))
		return NULL;
	base = (char *)*arr + (size_t)*count * t->size;
	memset(base, 0, t->size);
	conf_set_defaults((enum sect_kind)(t - conf_sect_types), base);
	(*count)++;
	return base;
}

struct conf_serial *conf_add_serial(struct conf *c)
{
	return conf_port_add(c, &conf_sect_types[SECT_SERIAL]);
}

struct conf_parallel *conf_add_parallel(struct conf *c)
{
	return conf_port_add(c, &conf_sect_types[SECT_PARALLEL]);
}

void conf_free(struct conf *c)
{
	free(c->serial);
	free(c->parallel);
	c->serial = NULL;
	c->parallel = NULL;
	c->nserial = c->nparallel = 0;
}

void conf_defaults(struct conf *c)
{
	conf_free(c);
	memset(c, 0, sizeof(*c));
	for (unsigned k = 0; k < SECT_KINDS; k++)
		if (!conf_sect_types[k].port)
			conf_set_defaults(k, sect_at(c, &conf_sect_types[k], 0));
}

/* ---- the table itself (--list-keys) ---- */

void conf_print_keys(FILE *out)
{
	for (size_t i = 0; i < conf_nkeys; i++) {
		const struct key *k = &conf_keys[i];
		const struct sect_type *t = &conf_sect_types[k->sect];
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
