/* SPDX-License-Identifier: GPL-2.0-or-later */
/* conf.h - the configuration file: one table row per key, parsed and validated into one struct. */
#ifndef PORTLOGD_CONF_H
#define PORTLOGD_CONF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "drv.h"

#define CONF_NAME_MAX 32
#define CONF_PATH_MAX DRV_PATH_MAX  /* the longest device path is the drivers' */
#define CONF_ERR_MAX 512
#define CONF_PRIO_OTHER 0           /* priority = other: SCHED_OTHER */
#define CONF_CPU_ANY (-1)           /* cpu = any: not pinned */
#define CONF_CPU_MAX 1023           /* CPU_SETSIZE - 1 */
#define CONF_IRQ_AS_LOGGER 0        /* a port's irq_priority not set: [logger]'s applies */
#define CONF_IRQ_AUTO (-1)          /* irq_priority = auto: the rule of irq.h */
#define CONF_IRQ_OFF (-2)           /* irq_priority = off: leave the IRQ threads alone */
#define CONF_PASS_DIR "/run/portlogd"
#define CONF_RING_AUTO 0            /* ring_records = auto: each ring by its port */
#define CONF_RING_MIN 256           /* records: the fewest a ring gets (events at open, marks) */
#define CONF_RING_MAX (1u << 24)   /* where a relative pass = PATH goes (the unit's RuntimeDirectory) */

enum conf_ts { CONF_TS_ISO, CONF_TS_EPOCH };
/* [logger] clock_sensor: the RTC's seconds against the clock (clocksensor.h) */
enum conf_clock { CONF_CLOCK_AUTO, CONF_CLOCK_ON, CONF_CLOCK_OFF };
enum conf_payload { CONF_PAYLOAD_HEX = 1, CONF_PAYLOAD_TEXT = 2, CONF_PAYLOAD_BOTH = 3 };
/* [timer] idle_latency: how CPUs are kept out of idle states slower than idle_us */
enum conf_idle {
	CONF_IDLE_OFF,          /* not at all */
	CONF_IDLE_AUTO,         /* PINNED when every real-time thread is pinned, else GLOBAL (idle.h) */
	CONF_IDLE_GLOBAL,       /* every CPU: /dev/cpu_dma_latency */
	CONF_IDLE_PINNED,       /* the CPUs of the real-time threads: cpuN/power/pm_qos_resume_latency_us */
};
/*
 * Each key is one row of the table in conf_keys.c (section, name, type, range,
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
	char metrics_file[CONF_PATH_MAX];       /* node_exporter's textfile (metrics.h); "" = off */
	unsigned ring_records;          /* CONF_RING_AUTO, or every ring's records */
	unsigned ring_seconds;          /* auto: what a port can make in this long (conf_ring_*) */
	int flusher_priority;           /* CONF_PRIO_OTHER or 1..99 */
	int flusher_cpu;                /* CONF_CPU_ANY or a CPU number */
	bool rt_required;               /* rt = required: a missing RT privilege is fatal */
	int irq_priority;               /* CONF_IRQ_AUTO, CONF_IRQ_OFF or 1..99: the ports' default */
	unsigned sensor_period_us;      /* the stall sensors' period (sensor.h) */
	enum conf_clock clock_sensor;   /* auto: where the machine is virtual (clocksensor.h) */
	int line;                       /* of the section header; 0 if absent */
};

struct conf_timer {
	unsigned period_us;
	int priority;
	int cpu;                        /* CONF_CPU_ANY or a CPU number */
	unsigned warmup_ms;             /* latency statistics start after this */
	enum conf_idle idle_scope;      /* idle_latency (or its old name cpu_dma_latency) */
	int idle_us;                    /* ... the latency in us CPUs are held at */
	int line;
};

struct conf_serial {
	char name[CONF_NAME_MAX];
	char device[CONF_PATH_MAX];
	/* the other direction of the link, one of the two (or neither): */
	char tx_device[CONF_PATH_MAX];  /* a tap's second port: its bytes are TX; "" = none */
	char pass[CONF_PATH_MAX];       /* a pty for an application, relayed to the device;
					 * relative: under CONF_PASS_DIR; "" = none */
	char pass_owner[CONF_NAME_MAX]; /* user of the pty: a name or number; "" = the daemon's */
	char pass_group[CONF_NAME_MAX]; /* its group */
	unsigned pass_mode;             /* its permission bits */
	struct drv_serial_config tty;   /* baud, format, flow: what the driver sets */
	unsigned gap_us;                /* 0 = auto */
	int delimiter;                  /* -1 = none */
	unsigned max_packet;
	bool lines;
	int priority;
	int cpu;
	int irq_priority;               /* CONF_IRQ_AUTO, CONF_IRQ_OFF or 1..99 ([logger]'s if not set) */
	int line;                       /* line of the section header */
	unsigned frame_bits;            /* derived: start + data + parity + stop bits */
	int64_t char_ns;                /* derived: one character time at baud */
	int64_t gap_ns;                 /* derived: gap_us, or 3.5 character times when auto */
	char pass_path[CONF_PATH_MAX + sizeof(CONF_PASS_DIR)];  /* derived: pass, absolute */
	int pass_uid, pass_gid;         /* derived: pass_owner, pass_group; -1 = leave as is */
	int pass_line;                  /* derived: the line of pass =, for errors at start */
};

/* Has the port a second direction (TX lines): a tap's second port, or pass? */
static inline bool conf_serial_has_tx(const struct conf_serial *s)
{
	return s->tx_device[0] != '\0' || s->pass[0] != '\0';
}

struct conf_parallel {
	char name[CONF_NAME_MAX];
	const struct drv_input_ops *driver;     /* found by name in drv_inputs[] */
	struct drv_input_config in;     /* device, read, strobe: what the driver opens */
	unsigned mask;
	int priority;
	int cpu;
	int irq_priority;               /* as [serial]'s */
	unsigned strobe_us;             /* from setting the strobe's pin to the read */
	int line;
	unsigned bits;                  /* derived: width of the value (the driver's value_bits) */
};

/*
 * The ports are arrays as long as the config makes them (no limit here: what the
 * machine can hold is checked at start, against the plan of parts.h). A struct
 * conf is zeroed (static, calloc, = { 0 }) before its first use; conf_defaults and
 * conf_parse_string free what it held, conf_free at the end.
 */
struct conf {
	char path[CONF_PATH_MAX];
	struct conf_logger logger;
	struct conf_timer timer;
	struct conf_serial *serial;     /* nserial of them */
	unsigned nserial;
	struct conf_parallel *parallel; /* nparallel of them */
	unsigned nparallel;
};

/* Fills c with the defaults of DESIGN.md and no ports (freeing those it had). */
void conf_defaults(struct conf *c);
/* Frees the ports; c has none after. */
void conf_free(struct conf *c);
/* Appends a port with its keys' defaults and no name: for tests that build a config
 * by hand (set the keys, then conf_resolve_serial or _parallel). NULL when out of
 * memory. */
struct conf_serial *conf_add_serial(struct conf *c);
struct conf_parallel *conf_add_parallel(struct conf *c);

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

/* Writes the key table (portlogd --list-keys, for tests/lint/man_keys.sh), one key a line,
 * tab-separated: [SECTION] KEY DEFAULT WORDS RANGE, such as "[serial NAME] gap_us auto
 * auto 1..10000000"; DEFAULT "(required)" or "(none)" for a key without one; WORDS
 * "a|b" (the first word of each value) and RANGE "MIN..MAX", or "-". */
void conf_print_keys(FILE *out);

/* Sets the derived fields of a port from its keys; conf_parse_string does it for
 * every port, tests that build a struct by hand call these. The parallel port's
 * driver must be compiled in. */
void conf_resolve_serial(struct conf_serial *s);
void conf_resolve_parallel(struct conf_parallel *pp);

/*
 * The records of a port's rings (each of them: RX, TX, lines): ring_records, or
 * with auto what the port can make in ring_seconds while the flusher is held up,
 * as a power of two from CONF_RING_MIN to CONF_RING_MAX, rounded up. A serial
 * port makes at most bytes/s / m records a second, m the characters of its
 * smallest packet with the silence that ends it (1 with a delimiter, else 1 + the
 * gap, or max_packet when fewer), and a packet longer than a ring slot's 80 bytes
 * at most one record (slot) per 40 characters more; bytes/s = baud / frame bits
 * (portlogd.conf(5), MEMORY). A parallel port at most one a timer period. The
 * derived fields (conf_resolve_serial) must be set.
 */
uint32_t conf_ring_serial(const struct conf_logger *lg, const struct conf_serial *s);
uint32_t conf_ring_parallel(const struct conf_logger *lg, const struct conf_timer *t);
/* How many records a second the two count on (for --check-config's figures). */
double conf_rate_serial(const struct conf_serial *s);
double conf_rate_parallel(const struct conf_timer *t);

/* The config's word for a read mode ("status+data"); a driver's is its ops' name. */
const char *conf_par_read_name(enum drv_read r);
/* The config's words for a strobe register ("data") and an idle scope ("pinned"). */
const char *conf_strobe_name(enum drv_strobe s);
const char *conf_idle_name(enum conf_idle s);

#endif
