/* SPDX-License-Identifier: GPL-2.0-or-later */
/* conf.h - the configuration file: one table row per key, parsed and validated into one struct. */
#ifndef PORTLOGD_CONF_H
#define PORTLOGD_CONF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CONF_MAX_PORTS 32
#define CONF_NAME_MAX 32
#define CONF_PATH_MAX 256
#define CONF_ERR_MAX 512
#define CONF_PRIO_OTHER 0           /* priority = other: SCHED_OTHER */
#define CONF_CPU_ANY (-1)           /* cpu = any: not pinned */
#define CONF_CPU_MAX 1023           /* CPU_SETSIZE - 1 */

enum conf_ts { CONF_TS_ISO, CONF_TS_EPOCH };
enum conf_payload { CONF_PAYLOAD_HEX = 1, CONF_PAYLOAD_TEXT = 2, CONF_PAYLOAD_BOTH = 3 };
enum conf_flow { CONF_FLOW_NONE, CONF_FLOW_RTSCTS, CONF_FLOW_XONXOFF, CONF_FLOW_DTRDSR };
enum conf_par_read { CONF_READ_STATUS = 1, CONF_READ_DATA = 2, CONF_READ_BOTH = 3 };

struct drv_input_ops;               /* drivers/drv.h: a [parallel] port's driver */

/*
 * Each key is one row of the table in conf.c (section, name, type, range,
 * default, the field it sets); the parser, conf_print and conf_print_keys read
 * it. Fields marked "derived" are no keys: conf_parse_string resolves them once
 * from the keys after validation, for every user.
 */
struct conf_logger {
	char log_file[CONF_PATH_MAX];
	enum conf_ts timestamp;
	enum conf_payload payload;
	unsigned flush_interval_ms;
	unsigned sync_interval_ms;
	unsigned stat_interval_s;
	unsigned ring_records;
	int flusher_priority;           /* CONF_PRIO_OTHER or 1..99 */
	int flusher_cpu;                /* CONF_CPU_ANY or a CPU number */
	bool rt_required;               /* rt = required: a missing RT privilege is fatal */
	int line;                       /* of the section header; 0 if absent */
};

struct conf_timer {
	unsigned period_us;
	int priority;
	int cpu;                        /* CONF_CPU_ANY or a CPU number */
	unsigned warmup_ms;             /* latency statistics start after this */
	int cpu_dma_latency;            /* us to hold /dev/cpu_dma_latency at; -1 = off */
	int line;
};

struct conf_serial {
	char name[CONF_NAME_MAX];
	char device[CONF_PATH_MAX];
	unsigned baud;
	unsigned data_bits;             /* 5..8 */
	char parity;                    /* N E O M S */
	unsigned stop_bits;             /* 1, 2 */
	enum conf_flow flow;
	unsigned gap_us;                /* 0 = auto */
	int delimiter;                  /* -1 = none */
	unsigned max_packet;
	bool lines;
	int priority;
	int cpu;
	int line;                       /* line of the section header */
	unsigned frame_bits;            /* derived: start + data + parity + stop bits */
	int64_t char_ns;                /* derived: one character time at baud */
	int64_t gap_ns;                 /* derived: gap_us, or 3.5 character times when auto */
};

struct conf_parallel {
	char name[CONF_NAME_MAX];
	const struct drv_input_ops *driver;     /* found by name in drv_inputs[] */
	char device[CONF_PATH_MAX];
	enum conf_par_read read;
	unsigned mask;
	int priority;
	int cpu;
	int line;
	unsigned bits;                  /* derived: width of the value (the driver's value_bits) */
};

struct conf {
	char path[CONF_PATH_MAX];
	struct conf_logger logger;
	struct conf_timer timer;
	struct conf_serial serial[CONF_MAX_PORTS];
	unsigned nserial;
	struct conf_parallel parallel[CONF_MAX_PORTS];
	unsigned nparallel;
};

/* Fills c with the defaults of DESIGN.md and no ports. */
void conf_defaults(struct conf *c);

/*
 * Parses and validates the text of a config file; `path` is only used in
 * messages. Returns 0, or -1 with a message "PATH:LINE: [SECTION] KEY: what is
 * wrong; what to do" in err.
 */
int conf_parse_string(struct conf *c, const char *path, const char *text,
		      char *err, size_t errlen);

/* Reads and parses a file. Returns 0, -1 for a config error (exit 78), or
 * -2 when the file cannot be read (exit 1); err says which. */
int conf_load(struct conf *c, const char *path, char *err, size_t errlen);

/* Writes the effective configuration, every key, in config-file syntax. */
void conf_print(const struct conf *c, FILE *out);

/* Writes the key table (portlogd --list-keys, for tests/man_keys.sh), one key a line,
 * tab-separated: [SECTION] KEY DEFAULT WORDS RANGE, such as "[serial NAME] gap_us auto
 * auto 1..10000000"; DEFAULT "(required)" or "(none)" for a key without one; WORDS
 * "a|b" (the first word of each value) and RANGE "MIN..MAX", or "-". */
void conf_print_keys(FILE *out);

/* Sets the derived fields of a port from its keys; conf_parse_string does it for
 * every port, tests that build a struct by hand call these. The parallel port's
 * driver must be compiled in. */
void conf_resolve_serial(struct conf_serial *s);
void conf_resolve_parallel(struct conf_parallel *pp);

/* The config's word for a read mode ("status+data"); a driver's is its ops' name. */
const char *conf_par_read_name(enum conf_par_read r);

#endif
