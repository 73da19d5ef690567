/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_conf.c - unit tests of config parsing, validation and printing (daemon/conf_*.c). */
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"
#include "drv.h"
#include "testutil.h"

#define PATH "/etc/portlogd/test.conf"
#define GPS "[serial gps]\ndevice = /dev/ttyUSB0\n"     /* lines 1 and 2 */
#define X10 "xxxxxxxxxx"
#define X50 X10 X10 X10 X10 X10
#define X250 X50 X50 X50 X50 X50

/* struct conf is about 20 KiB: keep it off the stack */
static struct conf conf_a, conf_b;

static int parse(struct conf *c, const char *text, char *err)
{
	return conf_parse_string(c, PATH, text, err, CONF_ERR_MAX);
}

/*
 * Built without libieee1284 (-DPORTLOGD_IEEE1284=OFF), a [parallel] port without a driver
 * line (the default, ieee1284) is refused: each good case of that kind must be, and the
 * bad cases of that kind are left out (which error comes first is not theirs to say).
 */
#ifdef PORTLOGD_IEEE1284
#define HAVE_IEEE1284 true
#else
#define HAVE_IEEE1284 false
#endif

static void expect_no_ieee1284(const char *what, const char *text)
{
	char err[CONF_ERR_MAX];

	if (parse(&conf_b, text, err) != -1 || strstr(err, "'ieee1284' is not compiled in") == NULL)
		fail_msg("%s, without libieee1284: not refused as 'not compiled in' (err \"%s\")",
			 what, err);
}

/* ---- field-by-field comparison ---- */

#define EQ_NUM(what, a, b) do { \
	if ((long long)(a) != (long long)(b)) \
		fail_msg("%s: %s is %lld, expected %lld", (what), #a, (long long)(a), \
			 (long long)(b)); \
} while (0)
#define EQ_STR(what, a, b) do { \
	if (strcmp((a), (b)) != 0) \
		fail_msg("%s: %s is \"%s\", expected \"%s\"", (what), #a, (a), (b)); \
} while (0)

/* Compares everything but the path and, unless `lines`, the section lines. */
static void expect_conf_equal(const char *what, const struct conf *g, const struct conf *w,
			      bool lines)
{
	EQ_STR(what, g->logger.log_file, w->logger.log_file);
	EQ_STR(what, g->logger.metrics_file, w->logger.metrics_file);
	EQ_NUM(what, g->logger.timestamp, w->logger.timestamp);
	EQ_NUM(what, g->logger.payload, w->logger.payload);
	EQ_NUM(what, g->logger.flush_interval_ms, w->logger.flush_interval_ms);
	EQ_NUM(what, g->logger.sync_interval_ms, w->logger.sync_interval_ms);
	EQ_NUM(what, g->logger.stat_interval_s, w->logger.stat_interval_s);
	EQ_NUM(what, g->logger.ring_records, w->logger.ring_records);
	EQ_NUM(what, g->logger.ring_seconds, w->logger.ring_seconds);
	EQ_NUM(what, g->logger.flusher_priority, w->logger.flusher_priority);
	EQ_NUM(what, g->logger.flusher_cpu, w->logger.flusher_cpu);
	EQ_NUM(what, g->logger.rt_required, w->logger.rt_required);
	EQ_NUM(what, g->logger.irq_priority, w->logger.irq_priority);
	EQ_NUM(what, g->timer.period_us, w->timer.period_us);
	EQ_NUM(what, g->timer.priority, w->timer.priority);
	EQ_NUM(what, g->timer.cpu, w->timer.cpu);
	EQ_NUM(what, g->timer.idle_scope, w->timer.idle_scope);
	EQ_NUM(what, g->timer.idle_us, w->timer.idle_us);
	EQ_NUM(what, g->nserial, w->nserial);
	EQ_NUM(what, g->nparallel, w->nparallel);
	for (unsigned i = 0; i < g->nserial && i < w->nserial; i++) {
		const struct conf_serial *s = &g->serial[i], *ws = &w->serial[i];

		EQ_STR(what, s->name, ws->name);
		EQ_STR(what, s->device, ws->device);
		EQ_NUM(what, s->tty.baud, ws->tty.baud);
		EQ_NUM(what, s->tty.data_bits, ws->tty.data_bits);
		EQ_NUM(what, s->tty.parity, ws->tty.parity);
		EQ_NUM(what, s->tty.stop_bits, ws->tty.stop_bits);
		EQ_NUM(what, s->tty.flow, ws->tty.flow);
		EQ_NUM(what, s->gap_us, ws->gap_us);
		EQ_NUM(what, s->delimiter, ws->delimiter);
		EQ_NUM(what, s->max_packet, ws->max_packet);
		EQ_NUM(what, s->lines, ws->lines);
		EQ_NUM(what, s->priority, ws->priority);
		EQ_NUM(what, s->cpu, ws->cpu);
		EQ_NUM(what, s->irq_priority, ws->irq_priority);
		EQ_STR(what, s->tx_device, ws->tx_device);
		EQ_STR(what, s->pass, ws->pass);
		EQ_STR(what, s->pass_owner, ws->pass_owner);
		EQ_STR(what, s->pass_group, ws->pass_group);
		EQ_NUM(what, s->pass_mode, ws->pass_mode);
		if (lines)
			EQ_NUM(what, s->line, ws->line);
	}
	for (unsigned i = 0; i < g->nparallel && i < w->nparallel; i++) {
		const struct conf_parallel *pp = &g->parallel[i], *wp = &w->parallel[i];

		EQ_STR(what, pp->name, wp->name);
		EQ_STR(what, pp->driver->name, wp->driver->name);
		EQ_STR(what, pp->in.device, wp->in.device);
		EQ_NUM(what, pp->in.read, wp->in.read);
		EQ_NUM(what, pp->mask, wp->mask);
		EQ_NUM(what, pp->priority, wp->priority);
		EQ_NUM(what, pp->cpu, wp->cpu);
		EQ_NUM(what, pp->irq_priority, wp->irq_priority);
		EQ_NUM(what, pp->in.strobe, wp->in.strobe);
		EQ_NUM(what, pp->in.strobe_bit, wp->in.strobe_bit);
		EQ_NUM(what, pp->strobe_us, wp->strobe_us);
		EQ_NUM(what, pp->in.strobe_high, wp->in.strobe_high);
		if (lines)
			EQ_NUM(what, pp->line, wp->line);
	}
}

/* ---- good configs ---- */

static void test_defaults(void **state)
{
	struct conf *c = &conf_a;
	const struct conf_serial *s;
	char err[CONF_ERR_MAX];

	(void)state;
	if (parse(c, GPS, err) != 0)
		fail_msg("minimal config rejected: %s", err);
	s = c->serial;      /* each parse makes the ports anew */
	EQ_STR("minimal", c->path, PATH);
	EQ_STR("minimal", c->logger.log_file, "/var/log/portlogd/portlogd.log");
	EQ_NUM("minimal", c->logger.timestamp, CONF_TS_ISO);
	EQ_NUM("minimal", c->logger.payload, CONF_PAYLOAD_BOTH);
	EQ_NUM("minimal", c->logger.flush_interval_ms, 100);
	EQ_NUM("minimal", c->logger.sync_interval_ms, 1000);
	EQ_NUM("minimal", c->logger.stat_interval_s, 60);
	EQ_NUM("minimal", c->logger.ring_records, CONF_RING_AUTO);
	EQ_NUM("minimal", c->logger.ring_seconds, 10);
	EQ_NUM("minimal", c->logger.flusher_priority, CONF_PRIO_OTHER);
	EQ_NUM("minimal", c->timer.period_us, 1000);
	EQ_NUM("minimal", c->timer.priority, 99);
	EQ_NUM("minimal", c->timer.cpu, CONF_CPU_ANY);
	EQ_NUM("minimal", c->timer.idle_scope, CONF_IDLE_AUTO);
	EQ_NUM("minimal", c->timer.idle_us, 0);
	EQ_NUM("minimal", c->logger.irq_priority, CONF_IRQ_AUTO);
	EQ_NUM("minimal", c->logger.flusher_cpu, CONF_CPU_ANY);
	EQ_NUM("minimal", c->logger.rt_required, false);
	EQ_NUM("minimal", c->nserial, 1);
	EQ_NUM("minimal", c->nparallel, 0);
	EQ_STR("minimal", s->name, "gps");
	EQ_STR("minimal", s->device, "/dev/ttyUSB0");
	EQ_NUM("minimal", s->tty.baud, 115200);
	EQ_NUM("minimal", s->tty.data_bits, 8);
	EQ_NUM("minimal", s->tty.parity, 'N');
	EQ_NUM("minimal", s->tty.stop_bits, 1);
	EQ_NUM("minimal", s->tty.flow, DRV_FLOW_NONE);
	EQ_NUM("minimal", s->gap_us, 0);
	EQ_NUM("minimal", s->delimiter, -1);
	EQ_NUM("minimal", s->max_packet, 4096);
	EQ_NUM("minimal", s->lines, false);
	EQ_NUM("minimal", s->priority, 97);
	EQ_NUM("minimal", s->cpu, CONF_CPU_ANY);
	EQ_NUM("minimal", s->irq_priority, CONF_IRQ_AUTO);      /* [logger]'s */
	EQ_NUM("minimal", s->line, 1);
	EQ_NUM("minimal", s->frame_bits, 10);
	EQ_NUM("minimal", s->gap_ns, 304000);

	/* conf_defaults alone: the same logger and timer, no ports */
	conf_defaults(&conf_b);
	assert_non_null(conf_add_serial(&conf_b));
	conf_b.serial[0] = *s;
	expect_conf_equal("conf_defaults", c, &conf_b, true);
	conf_defaults(&conf_b);
	EQ_NUM("conf_defaults", conf_b.nserial, 0);
	EQ_NUM("conf_defaults", conf_b.nparallel, 0);

	/* a parallel port alone is enough too */
	if (!HAVE_IEEE1284) {
		expect_no_ieee1284("minimal parallel config", "[parallel lpt0]\ndevice = parport0\n");
		return;
	}
	if (parse(c, "[parallel lpt0]\ndevice = parport0\n", err) != 0)
		fail_msg("minimal parallel config rejected: %s", err);
	EQ_NUM("parallel", c->nparallel, 1);
	EQ_STR("parallel", c->parallel[0].name, "lpt0");
	EQ_STR("parallel", c->parallel[0].driver->name, "ieee1284");
	EQ_NUM("parallel", c->parallel[0].in.read, DRV_READ_STATUS);
	EQ_NUM("parallel", c->parallel[0].mask, 0xff);
	EQ_NUM("parallel", c->parallel[0].priority, 98);
	EQ_NUM("parallel", c->parallel[0].irq_priority, CONF_IRQ_AUTO);
	EQ_NUM("parallel", c->parallel[0].in.strobe, DRV_STROBE_NONE);
	EQ_NUM("parallel", c->parallel[0].strobe_us, 0);
	EQ_NUM("parallel", c->parallel[0].in.strobe_high, true);
}

static const char every_key[] =
	"[logger]\n"                                    /* 1 */
	"log_file = /srv/log/ports.log\n"
	"timestamp = epoch\n"
	"payload = hex\n"
	"flush_interval_ms = 250\n"                     /* 5 */
	"sync_interval_ms = 0\n"
	"stat_interval_s = 3600\n"
	"metrics_file = /srv/metrics/portlogd.prom\n"
	"ring_records = 1024\n"
	"flusher_priority = 10\n"                       /* 10 */
	"flusher_cpu = 1\n"
	"rt = required\n"
	"irq_priority = off\n"
	"ring_seconds = 30\n"
	"[timer]\n"                                     /* 15 */
	"period_us = 500\n"
	"priority = 90\n"
	"cpu = 0\n"
	"idle_latency = pinned:5\n"
	"\n"                                            /* 20 */
	"[serial plc]\n"
	"device = /dev/serial/by-id/usb-FTDI_FT232R-if00-port0\n"
	"baud = 19200\n"
	"format = 7E2\n"
	"flow = rtscts\n"                               /* 25 */
	"gap_us = 1500\n"
	"delimiter = 0x0d\n"
	"max_packet = 256\n"
	"lines = on\n"
	"priority = 80\n"                               /* 30 */
	"cpu = 1\n"
	"irq_priority = 85\n"
	"\n"
	"[parallel lpt0]\n"
	"driver = sim\n"                                /* 35 */
	"device = /run/portlogd/lpt0.sim\n"
	"read = status+data\n"
	"mask = 0x1ff\n"
	"priority = other\n"
	"cpu = 0\n"                                     /* 40 */
	"irq_priority = auto\n"
	"strobe = control:2\n"
	"strobe_us = 150\n"
	"strobe_level = low\n";

static void test_every_key(void **state)
{
	struct conf *c = &conf_a, *w = &conf_b;
	char err[CONF_ERR_MAX];

	(void)state;
	if (parse(c, every_key, err) != 0)
		fail_msg("every key: rejected: %s", err);
	conf_defaults(w);
	snprintf(w->logger.log_file, sizeof(w->logger.log_file), "/srv/log/ports.log");
	w->logger.timestamp = CONF_TS_EPOCH;
	w->logger.payload = CONF_PAYLOAD_HEX;
	w->logger.flush_interval_ms = 250;
	w->logger.sync_interval_ms = 0;
	w->logger.stat_interval_s = 3600;
	snprintf(w->logger.metrics_file, sizeof(w->logger.metrics_file), "/srv/metrics/portlogd.prom");
	w->logger.ring_records = 1024;
	w->logger.ring_seconds = 30;
	w->logger.flusher_priority = 10;
	w->logger.flusher_cpu = 1;
	w->logger.rt_required = true;
	w->logger.irq_priority = CONF_IRQ_OFF;
	w->timer.period_us = 500;
	w->timer.priority = 90;
	w->timer.cpu = 0;
	w->timer.idle_scope = CONF_IDLE_PINNED;
	w->timer.idle_us = 5;
	assert_non_null(conf_add_serial(w));
	w->serial[0] = (struct conf_serial){
		.name = "plc", .device = "/dev/serial/by-id/usb-FTDI_FT232R-if00-port0",
		.tty = { .baud = 19200, .data_bits = 7, .parity = 'E', .stop_bits = 2,
			 .flow = DRV_FLOW_RTSCTS },
		.gap_us = 1500, .delimiter = 0x0d, .max_packet = 256,
		.lines = true, .priority = 80, .cpu = 1, .irq_priority = 85, .line = 21,
		.pass_group = "dialout", .pass_mode = 0660,
	};
	assert_non_null(conf_add_parallel(w));
	w->parallel[0] = (struct conf_parallel){
		.name = "lpt0", .driver = drv_input_find("sim"),
		.in = { .device = "/run/portlogd/lpt0.sim", .read = DRV_READ_BOTH,
			.strobe = DRV_STROBE_CONTROL, .strobe_bit = 2, .strobe_high = false },
		.mask = 0x1ff, .priority = CONF_PRIO_OTHER, .cpu = 0,
		.irq_priority = CONF_IRQ_AUTO, .strobe_us = 150, .line = 34,
	};
	expect_conf_equal("every key", c, w, true);
	EQ_NUM("every key", c->serial[0].frame_bits, 11);
	EQ_NUM("every key", c->serial[0].gap_ns, 1500000);
}

enum field {
	F_DELIM, F_BAUD, F_DATA_BITS, F_PARITY, F_STOP, F_FRAME_BITS, F_GAP_NS, F_FLOW, F_GAP,
	F_MAXPKT, F_LINES, F_SPRIO, F_DEVICE, F_NAME, F_NSERIAL, F_TS, F_PAYLOAD, F_FLUSH,
	F_SYNC, F_STAT, F_RING, F_FPRIO, F_LOG_FILE, F_PERIOD, F_TPRIO, F_PDRIVER, F_PDEVICE,
	F_PREAD, F_PMASK, F_PPRIO, F_NPARALLEL, F_SCPU, F_RT, F_PBITS, F_CHAR_NS,
	F_LIRQ, F_SIRQ, F_PIRQ, F_IDLE, F_IDLE_US, F_STROBE, F_STROBE_BIT, F_STROBE_US,
	F_STROBE_HIGH, F_METRICS_FILE, F_RSEC, F_DLV_HOLD, F_DLV_XFER, F_DLV_POLL,
};

/* Numeric fields of the first serial/parallel port, or of [logger]/[timer]. */
static long long get_num(const struct conf *c, enum field f)
{
	const struct conf_serial *s = c->serial;
	const struct conf_parallel *pp = c->parallel;

	switch (f) {
	case F_DELIM: return s->delimiter;
	case F_BAUD: return s->tty.baud;
	case F_DATA_BITS: return s->tty.data_bits;
	case F_PARITY: return s->tty.parity;
	case F_STOP: return s->tty.stop_bits;
	case F_FRAME_BITS: return s->frame_bits;
	case F_GAP_NS: return s->gap_ns;
	case F_FLOW: return s->tty.flow;
	case F_GAP: return s->gap_us;
	case F_MAXPKT: return s->max_packet;
	case F_LINES: return s->lines;
	case F_SPRIO: return s->priority;
	case F_NSERIAL: return c->nserial;
	case F_TS: return c->logger.timestamp;
	case F_PAYLOAD: return c->logger.payload;
	case F_FLUSH: return c->logger.flush_interval_ms;
	case F_SYNC: return c->logger.sync_interval_ms;
	case F_STAT: return c->logger.stat_interval_s;
	case F_RING: return c->logger.ring_records;
	case F_RSEC: return c->logger.ring_seconds;
	case F_FPRIO: return c->logger.flusher_priority;
	case F_PERIOD: return c->timer.period_us;
	case F_TPRIO: return c->timer.priority;
	case F_PREAD: return pp->in.read;
	case F_PMASK: return pp->mask;
	case F_PPRIO: return pp->priority;
	case F_NPARALLEL: return c->nparallel;
	case F_SCPU: return s->cpu;
	case F_RT: return c->logger.rt_required;
	case F_PBITS: return pp->bits;
	case F_CHAR_NS: return s->char_ns;
	case F_LIRQ: return c->logger.irq_priority;
	case F_SIRQ: return s->irq_priority;
	case F_PIRQ: return pp->irq_priority;
	case F_IDLE: return c->timer.idle_scope;
	case F_IDLE_US: return c->timer.idle_us;
	case F_STROBE: return pp->in.strobe;
	case F_STROBE_BIT: return pp->in.strobe_bit;
	case F_STROBE_US: return pp->strobe_us;
	case F_STROBE_HIGH: return pp->in.strobe_high;
	case F_DLV_HOLD: return s->tty.delivery.hold_us;
	case F_DLV_XFER: return s->tty.delivery.xfer;
	case F_DLV_POLL: return s->tty.delivery.poll_us;
	default: return -12345;
	}
}

static const char *get_str(const struct conf *c, enum field f)
{
	switch (f) {
	case F_DEVICE: return c->serial[0].device;
	case F_NAME: return c->serial[0].name;
	case F_LOG_FILE: return c->logger.log_file;
	case F_METRICS_FILE: return c->logger.metrics_file;
	case F_PDEVICE: return c->parallel[0].in.device;
	case F_PDRIVER: return c->parallel[0].driver->name;
	default: return "(not a string field)";
	}
}

#define LPT "[parallel lpt0]\ndevice = parport0\n"

static const struct good_case {
	const char *name;
	const char *text;
	enum field field;
	long long want;
	const char *want_str;   /* instead of want, for string fields */
} good_cases[] = {
	/* delimiter forms */
	{ "delimiter none", GPS "delimiter = none\n", F_DELIM, -1, NULL },
	{ "delimiter 0x0a", GPS "delimiter = 0x0a\n", F_DELIM, 10, NULL },
	{ "delimiter 0X0A", GPS "delimiter = 0X0A\n", F_DELIM, 10, NULL },
	{ "delimiter 10", GPS "delimiter = 10\n", F_DELIM, 10, NULL },
	{ "delimiter \\n", GPS "delimiter = \\n\n", F_DELIM, '\n', NULL },
	{ "delimiter \\r", GPS "delimiter = \\r\n", F_DELIM, '\r', NULL },
	{ "delimiter \\t", GPS "delimiter = \\t\n", F_DELIM, '\t', NULL },
	{ "delimiter \\0", GPS "delimiter = \\0\n", F_DELIM, 0, NULL },
	{ "delimiter 0", GPS "delimiter = 0\n", F_DELIM, 0, NULL },
	{ "delimiter 0x00", GPS "delimiter = 0x00\n", F_DELIM, 0, NULL },
	{ "delimiter 255", GPS "delimiter = 255\n", F_DELIM, 255, NULL },
	{ "delimiter 0xff", GPS "delimiter = 0xff\n", F_DELIM, 255, NULL },
	{ "delimiter $", GPS "delimiter = $\n", F_DELIM, '$', NULL },
	{ "delimiter 0x23 (#: a bare # after a blank starts a comment)", GPS "delimiter = 0x23\n",
	  F_DELIM, '#', NULL },
	{ "baud with a # comment after it", GPS "baud = 9600  # the PLC\n", F_BAUD, 9600, NULL },
	{ "delimiter x", GPS "delimiter = x\n", F_DELIM, 'x', NULL },
	/* priorities */
	{ "serial priority other", GPS "priority = other\n", F_SPRIO, CONF_PRIO_OTHER, NULL },
	{ "serial priority 1", GPS "priority = 1\n", F_SPRIO, 1, NULL },
	{ "serial priority 99", GPS "priority = 99\n", F_SPRIO, 99, NULL },
	{ "timer priority other", "[timer]\npriority = other\n" GPS, F_TPRIO, CONF_PRIO_OTHER,
	  NULL },
	{ "flusher priority 5", "[logger]\nflusher_priority = 5\n" GPS, F_FPRIO, 5, NULL },
	{ "flusher priority other", "[logger]\nflusher_priority = other\n" GPS, F_FPRIO,
	  CONF_PRIO_OTHER, NULL },
	{ "parallel priority other", LPT "priority = other\n", F_PPRIO, CONF_PRIO_OTHER, NULL },
	{ "serial cpu any", GPS "cpu = any\n", F_SCPU, CONF_CPU_ANY, NULL },
	{ "serial cpu 1023", GPS "cpu = 1023\n", F_SCPU, 1023, NULL },
	{ "rt best-effort", "[logger]\nrt = best-effort\n" GPS, F_RT, 0, NULL },
	/* interrupt threads: a port without irq_priority takes [logger]'s */
	{ "irq_priority default", GPS, F_SIRQ, CONF_IRQ_AUTO, NULL },
	{ "irq_priority from [logger]", "[logger]\nirq_priority = 60\n" GPS, F_SIRQ, 60, NULL },
	{ "irq_priority [logger] off", "[logger]\nirq_priority = off\n" GPS, F_LIRQ, CONF_IRQ_OFF,
	  NULL },
	{ "irq_priority of the port wins", "[logger]\nirq_priority = off\n" GPS
	  "irq_priority = auto\n", F_SIRQ, CONF_IRQ_AUTO, NULL },
	{ "irq_priority 99", GPS "irq_priority = 99\n", F_SIRQ, 99, NULL },
	{ "irq_priority 1", GPS "irq_priority = 1\n", F_SIRQ, 1, NULL },
	{ "parallel irq_priority from [logger]", "[logger]\nirq_priority = 7\n" LPT, F_PIRQ, 7,
	  NULL },
	{ "parallel irq_priority off", LPT "irq_priority = off\n", F_PIRQ, CONF_IRQ_OFF, NULL },
	/* idle latency, and its old name */
	{ "idle_latency off", "[timer]\nidle_latency = off\n" GPS, F_IDLE, CONF_IDLE_OFF, NULL },
	{ "idle_latency auto", "[timer]\nidle_latency = auto\n" GPS, F_IDLE, CONF_IDLE_AUTO, NULL },
	{ "idle_latency global:0", "[timer]\nidle_latency = global:0\n" GPS, F_IDLE,
	  CONF_IDLE_GLOBAL, NULL },
	{ "idle_latency global:20 us", "[timer]\nidle_latency = global:20\n" GPS, F_IDLE_US, 20,
	  NULL },
	{ "idle_latency pinned:1000000", "[timer]\nidle_latency = pinned:1000000\n" GPS,
	  F_IDLE_US, 1000000, NULL },
	{ "idle_latency pinned", "[timer]\nidle_latency = pinned:3\n" GPS, F_IDLE,
	  CONF_IDLE_PINNED, NULL },
	{ "cpu_dma_latency 0 is global:0", "[timer]\ncpu_dma_latency = 0\n" GPS, F_IDLE,
	  CONF_IDLE_GLOBAL, NULL },
	{ "cpu_dma_latency 7 us", "[timer]\ncpu_dma_latency = 7\n" GPS, F_IDLE_US, 7, NULL },
	{ "cpu_dma_latency off", "[timer]\ncpu_dma_latency = off\n" GPS, F_IDLE, CONF_IDLE_OFF,
	  NULL },
	/* the strobe */
	{ "strobe none", LPT "strobe = none\n", F_STROBE, DRV_STROBE_NONE, NULL },
	{ "strobe data:7", LPT "strobe = data:7\n", F_STROBE, DRV_STROBE_DATA, NULL },
	{ "strobe data:7 bit", LPT "strobe = data:7\n", F_STROBE_BIT, 7, NULL },
	{ "strobe control:3", LPT "strobe = control:3\n", F_STROBE, DRV_STROBE_CONTROL, NULL },
	{ "strobe control:0 bit", LPT "strobe = control:0\n", F_STROBE_BIT, 0, NULL },
	{ "strobe data read back, masked out", LPT "read = data\nmask = 0xfe\nstrobe = data:0\n",
	  F_STROBE, DRV_STROBE_DATA, NULL },
	{ "strobe data:1 and status+data, bit 9 masked", LPT "read = status+data\nmask = 0xfdff\n"
	  "strobe = data:1\n", F_STROBE_BIT, 1, NULL },
	{ "strobe_us 999 of 1000", LPT "strobe = control:0\nstrobe_us = 999\n", F_STROBE_US, 999,
	  NULL },
	{ "strobe_level low", LPT "strobe_level = low\n", F_STROBE_HIGH, 0, NULL },
	/* frame formats */
	{ "format 7E1 data", GPS "format = 7E1\n", F_DATA_BITS, 7, NULL },
	{ "format 7E1 parity", GPS "format = 7E1\n", F_PARITY, 'E', NULL },
	{ "format 7E1 stop", GPS "format = 7E1\n", F_STOP, 1, NULL },
	{ "format 7E1 frame", GPS "format = 7E1\n", F_FRAME_BITS, 10, NULL },
	{ "format 8O2 data", GPS "format = 8O2\n", F_DATA_BITS, 8, NULL },
	{ "format 8O2 parity", GPS "format = 8O2\n", F_PARITY, 'O', NULL },
	{ "format 8O2 stop", GPS "format = 8O2\n", F_STOP, 2, NULL },
	{ "format 8O2 frame", GPS "format = 8O2\n", F_FRAME_BITS, 12, NULL },
	{ "format 5N1 data", GPS "format = 5N1\n", F_DATA_BITS, 5, NULL },
	{ "format 5N1 parity", GPS "format = 5N1\n", F_PARITY, 'N', NULL },
	{ "format 5N1 frame", GPS "format = 5N1\n", F_FRAME_BITS, 7, NULL },
	{ "format 6M1 parity", GPS "format = 6M1\n", F_PARITY, 'M', NULL },
	{ "format 7S2 parity", GPS "format = 7S2\n", F_PARITY, 'S', NULL },
	{ "format 8e1 lowercase parity", GPS "format = 8e1\n", F_PARITY, 'E', NULL },
	{ "auto gap at 19200 8E1", GPS "baud = 19200\nformat = 8E1\n", F_GAP_NS, 2006000, NULL },
	{ "auto gap at 9600 8N1", GPS "baud = 9600\n", F_GAP_NS, 3646000, NULL },
	{ "explicit gap", GPS "gap_us = 1500\n", F_GAP_NS, 1500000, NULL },
	/* other serial keys */
	{ "baud 50", GPS "baud = 50\n", F_BAUD, 50, NULL },
	{ "baud 4000000", GPS "baud = 4000000\n", F_BAUD, 4000000, NULL },
	{ "flow rtscts", GPS "flow = rtscts\n", F_FLOW, DRV_FLOW_RTSCTS, NULL },
	{ "flow xonxoff", GPS "flow = xonxoff\n", F_FLOW, DRV_FLOW_XONXOFF, NULL },
	{ "flow dtrdsr", GPS "flow = dtrdsr\n", F_FLOW, DRV_FLOW_DTRDSR, NULL },
	{ "flow none", GPS "flow = none\n", F_FLOW, DRV_FLOW_NONE, NULL },
	{ "gap_us auto", GPS "gap_us = auto\n", F_GAP, 0, NULL },
	{ "gap_us 1", GPS "gap_us = 1\n", F_GAP, 1, NULL },
	{ "gap_us 10000000", GPS "gap_us = 10000000\n", F_GAP, 10000000, NULL },
	{ "max_packet 1", GPS "max_packet = 1\n", F_MAXPKT, 1, NULL },
	{ "max_packet 65535", GPS "max_packet = 65535\n", F_MAXPKT, 65535, NULL },
	{ "lines on", GPS "lines = on\n", F_LINES, 1, NULL },
	{ "lines off", GPS "lines = off\n", F_LINES, 0, NULL },
	{ "lines yes", GPS "lines = yes\n", F_LINES, 1, NULL },
	{ "lines no", GPS "lines = no\n", F_LINES, 0, NULL },
	{ "lines true", GPS "lines = true\n", F_LINES, 1, NULL },
	{ "lines false", GPS "lines = false\n", F_LINES, 0, NULL },
	{ "lines 1", GPS "lines = 1\n", F_LINES, 1, NULL },
	{ "lines 0", GPS "lines = 0\n", F_LINES, 0, NULL },
	/* [logger] and [timer] */
	{ "timestamp iso", "[logger]\ntimestamp = iso\n" GPS, F_TS, CONF_TS_ISO, NULL },
	{ "timestamp epoch", "[logger]\ntimestamp = epoch\n" GPS, F_TS, CONF_TS_EPOCH, NULL },
	{ "payload hex", "[logger]\npayload = hex\n" GPS, F_PAYLOAD, CONF_PAYLOAD_HEX, NULL },
	{ "payload text", "[logger]\npayload = text\n" GPS, F_PAYLOAD, CONF_PAYLOAD_TEXT, NULL },
	{ "payload both", "[logger]\npayload = both\n" GPS, F_PAYLOAD, CONF_PAYLOAD_BOTH, NULL },
	{ "flush_interval_ms 1", "[logger]\nflush_interval_ms = 1\n" GPS, F_FLUSH, 1, NULL },
	{ "sync_interval_ms 0", "[logger]\nsync_interval_ms = 0\n" GPS, F_SYNC, 0, NULL },
	{ "stat_interval_s 0", "[logger]\nstat_interval_s = 0\n" GPS, F_STAT, 0, NULL },
	{ "ring_records 64", "[logger]\nring_records = 64\n" GPS, F_RING, 64, NULL },
	{ "ring_records 2^24", "[logger]\nring_records = 16777216\n" GPS, F_RING, 16777216,
	  NULL },
	{ "ring_records auto", "[logger]\nring_records = auto\n" GPS, F_RING, CONF_RING_AUTO, NULL },
	{ "ring_seconds 1", "[logger]\nring_seconds = 1\n" GPS, F_RSEC, 1, NULL },
	{ "ring_seconds 3600", "[logger]\nring_seconds = 3600\n" GPS, F_RSEC, 3600, NULL },
	{ "log_file", "[logger]\nlog_file = /tmp/p.log\n" GPS, F_LOG_FILE, 0, "/tmp/p.log" },
	{ "metrics_file off", GPS, F_METRICS_FILE, 0, "" },
	{ "metrics_file", "[logger]\nmetrics_file = /var/lib/prometheus/node-exporter/portlogd.prom\n"
	  GPS, F_METRICS_FILE, 0, "/var/lib/prometheus/node-exporter/portlogd.prom" },
	{ "period_us 20", "[timer]\nperiod_us = 20\n" GPS, F_PERIOD, 20, NULL },
	{ "period_us 1000000", "[timer]\nperiod_us = 1000000\n" GPS, F_PERIOD, 1000000, NULL },
	/* [parallel NAME] */
	{ "driver lines", LPT "driver = lines\n", F_PDRIVER, 0, "lines" },
	{ "driver sim", LPT "driver = sim\n", F_PDRIVER, 0, "sim" },
	{ "driver ieee1284", LPT "driver = ieee1284\n", F_PDRIVER, 0, "ieee1284" },
	{ "read data", LPT "read = data\n", F_PREAD, DRV_READ_DATA, NULL },
	{ "read status+data", LPT "read = status+data\n", F_PREAD, DRV_READ_BOTH, NULL },
	{ "mask 0x1ff", LPT "mask = 0x1ff\n", F_PMASK, 0x1ff, NULL },
	/* derived once, from the driver's value_bits */
	{ "value width of a register", LPT, F_PBITS, 8, NULL },
	{ "value width of status+data", LPT "read = status+data\n", F_PBITS, 16, NULL },
	{ "value width of the modem lines", LPT "driver = lines\nread = status+data\n", F_PBITS, 4,
	  NULL },
	{ "character time at 9600 8N1", GPS "baud = 9600\n", F_CHAR_NS, 1041667, NULL },
	{ "mask 15", LPT "mask = 15\n", F_PMASK, 15, NULL },
	{ "parallel device needs no slash", LPT, F_PDEVICE, 0, "parport0" },
	/* the reader: blanks, comments, line ends */
	{ "indented keys are keys, not continuations",
	  "[serial gps]\n  device = /dev/ttyS0\n\tbaud = 9600\n", F_DEVICE, 0, "/dev/ttyS0" },
	{ "indented keys: the second one", "[serial gps]\n  device = /dev/ttyS0\n\tbaud = 9600\n",
	  F_BAUD, 9600, NULL },
	{ "indented section header", "  [serial gps]\n  device = /dev/ttyS0\n", F_NSERIAL, 1, NULL },
	{ "a UTF-8 byte order mark before the first section",
	  "\xef\xbb\xbf[serial gps]\ndevice = /dev/ttyS0\n", F_NSERIAL, 1, NULL },
	{ "comments with # and ;",
	  "# a comment\n; another\n[serial gps] ; after the header\n  # indented comment\n"
	  "device = /dev/ttyS1 ; inline\nbaud = 19200\n", F_DEVICE, 0, "/dev/ttyS1" },
	{ "value after comments", "# a\n; b\n[serial gps]\n# c\ndevice = /dev/ttyS1\n; d\n"
	  "baud = 19200 ; inline\n", F_BAUD, 19200, NULL },
	{ "blanks around = and the value", "[serial gps]\ndevice=/dev/ttyS2\nbaud   =   2400   \n",
	  F_BAUD, 2400, NULL },
	{ "CRLF line ends", "[serial gps]\r\ndevice = /dev/ttyS3\r\nbaud = 300\r\n", F_DEVICE, 0,
	  "/dev/ttyS3" },
	{ "CRLF line ends: number", "[serial gps]\r\ndevice = /dev/ttyS3\r\nbaud = 300\r\n",
	  F_BAUD, 300, NULL },
	{ "no newline at the end", "[serial gps]\ndevice = /dev/ttyS4", F_DEVICE, 0, "/dev/ttyS4" },
	/* inih took a line starting with \r, \v or \f for the previous value's
	 * continuation, and a header after one as a section we never saw */
	{ "a form feed before a header is indentation",
	  "[serial a]\ndevice = /dev/a\n\f[serial b]\ndevice = /dev/b\n", F_NSERIAL, 2, NULL },
	{ "a line after a vertical tab is a key of its own", GPS "\vbaud = 9600\n", F_BAUD, 9600,
	  NULL },
	{ "key: value, as inih took it", GPS "baud: 9600\n", F_BAUD, 9600, NULL },
	{ "a line of 198 characters", "[serial gps]\ndevice = /dev/ttyS5\n"
	  "# " X50 X50 X50 X10 X10 X10 X10 "xxxxxx\n", F_NSERIAL, 1, NULL },
	/* port names */
	{ "name with _ - . :", "[serial a_b-c.d:0]\ndevice = /dev/x\n", F_NAME, 0, "a_b-c.d:0" },
	{ "name of 31 characters", "[serial abcdefghijklmnopqrstuvwxyz01234]\ndevice = /dev/x\n",
	  F_NAME, 0, "abcdefghijklmnopqrstuvwxyz01234" },
	{ "two serial ports", GPS "[serial plc]\ndevice = /dev/ttyS0\n", F_NSERIAL, 2, NULL },
	{ "serial and parallel", GPS LPT, F_NPARALLEL, 1, NULL },
	/* no port: valid, the package's config until one is written (nothing is logged) */
	{ "no port sections", "[logger]\n[timer]\n", F_NSERIAL, 0, NULL },
	{ "only comments", "# nothing\n", F_NPARALLEL, 0, NULL },
	{ "empty file", "", F_NSERIAL, 0, NULL },
	/* an adapter on a receive timeout (portlogd --calibrate prints it) */
	{ "delivery usb:MS/SIZE/POLL", GPS "delivery = usb:1.25/32/0.125\n", F_DLV_XFER, 32, NULL },
	{ "delivery usb:MS/SIZE", GPS "delivery = usb:0.5/64\n", F_DLV_POLL, 1000, NULL },
	{ "delivery usb:MS fraction", GPS "delivery = usb:2.5\n", F_DLV_HOLD, 2500, NULL },
};

static void test_good_values(void **state)
{
	char err[CONF_ERR_MAX];
	unsigned refused = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(good_cases) / sizeof(good_cases[0]); i++) {
		const struct good_case *g = &good_cases[i];

		if (!HAVE_IEEE1284 && tu_needs_ieee1284(g->text)) {
			expect_no_ieee1284(g->name, g->text);
			refused++;
			continue;
		}
		if (parse(&conf_a, g->text, err) != 0)
			fail_msg("%s: rejected: %s", g->name, err);
		if (err[0] != '\0')
			fail_msg("%s: accepted but err says \"%s\"", g->name, err);
		if (g->want_str != NULL) {
			if (strcmp(get_str(&conf_a, g->field), g->want_str) != 0)
				fail_msg("%s: \"%s\", expected \"%s\"", g->name,
					 get_str(&conf_a, g->field), g->want_str);
		} else if (get_num(&conf_a, g->field) != g->want) {
			fail_msg("%s: %lld, expected %lld", g->name, get_num(&conf_a, g->field),
				 g->want);
		}
	}
	if (refused > 0)
		printf("# built without libieee1284: %u cases of the ieee1284 driver refused as "
		       "'not compiled in'\n", refused);
}

/* ---- bad configs ---- */

static const struct bad_case {
	const char *name;
	const char *text;
	int line;
	const char *frags[4];   /* each must be in the message */
} bad_cases[] = {
	{ "unknown serial key", GPS "speed = 9600\n", 3,
	  { "[serial gps] speed", "unknown key", "baud" } },
	{ "unknown logger key", "[logger]\nlogfile = /x\n" GPS, 2,
	  { "[logger] logfile", "unknown key", "log_file" } },
	{ "unknown parallel key", LPT "pins = 8\n", 3, { "[parallel lpt0] pins", "unknown key" } },
	/* metrics_file: node_exporter reads NAME.prom, written with the STAT rounds */
	{ "metrics_file not .prom", "[logger]\nmetrics_file = /var/lib/p/portlogd.txt\n" GPS, 2,
	  { "[logger] metrics_file", "'/var/lib/p/portlogd.txt' does not end in .prom",
	    "reads only NAME.prom files" } },
	{ "metrics_file .prom alone", "[logger]\nmetrics_file = /var/lib/p/.prom\n" GPS, 2,
	  { "[logger] metrics_file", "does not end in .prom" } },
	{ "metrics_file relative", "[logger]\nmetrics_file = portlogd.prom\n" GPS, 2,
	  { "[logger] metrics_file", "not an absolute path" } },
	{ "metrics_file without STAT lines",
	  "[logger]\nstat_interval_s = 0\nmetrics_file = /var/lib/p/portlogd.prom\n" GPS, 3,
	  { "[logger] metrics_file", "stat_interval_s = 0 turns off", "set stat_interval_s" } },
	{ "metrics_file is the log",
	  "[logger]\nlog_file = /var/log/x.prom\nmetrics_file = /var/log/x.prom\n" GPS, 3,
	  { "[logger] metrics_file", "is the log file too" } },
	{ "baud fast", GPS "baud = fast\n", 3, { "[serial gps] baud", "'fast'", "not a number" } },
	{ "baud 0", GPS "baud = 0\n", 3, { "[serial gps] baud", "out of range" } },
	{ "baud 9999999", GPS "baud = 9999999\n", 3, { "[serial gps] baud", "out of range" } },
	{ "baud 49", GPS "baud = 49\n", 3, { "baud", "out of range" } },
	{ "baud negative", GPS "baud = -9600\n", 3, { "baud", "not a number" } },
	{ "baud with junk", GPS "baud = 9600bps\n", 3, { "baud", "not a number" } },
	{ "delimiter # is a comment: empty", GPS "delimiter = #\n", 3, { "delimiter", "empty value" } },
	{ "a second 0x prefix", GPS "delimiter = 0x0x5\n", 3, { "delimiter", "not a number" } },
	{ "a # without a blank before it stays in the value", GPS "baud = 9600#x\n", 3,
	  { "baud", "'9600#x' is not a number" } },
	{ "format 8X1", GPS "format = 8X1\n", 3, { "[serial gps] format", "'8X1'", "frame format" } },
	{ "format 9N1", GPS "format = 9N1\n", 3, { "[serial gps] format", "'9N1'" } },
	{ "format 4N1", GPS "format = 4N1\n", 3, { "format", "'4N1'" } },
	{ "format 8N3", GPS "format = 8N3\n", 3, { "[serial gps] format", "'8N3'" } },
	{ "format 8N0", GPS "format = 8N0\n", 3, { "format", "'8N0'" } },
	{ "format 8N", GPS "format = 8N\n", 3, { "[serial gps] format", "'8N'" } },
	{ "format 8N1 and more", GPS "format = 8N11\n", 3, { "format", "'8N11'" } },
	{ "missing serial device", "[logger]\n\n[serial gps]\nbaud = 9600\n", 3,
	  { "[serial gps] device", "missing" } },
	{ "missing device of the second port", GPS "[serial plc]\nbaud = 9600\n", 3,
	  { "[serial plc] device", "missing" } },
	{ "missing parallel device", "[parallel lpt0]\ndriver = sim\n", 1,
	  { "[parallel lpt0] device", "missing" } },
	{ "duplicate serial section", GPS "baud = 9600\n[serial gps]\n", 4,
	  { "[serial gps]", "duplicate section", "first at line 1" } },
	{ "duplicate logger section", "[logger]\n[timer]\n[logger]\n" GPS, 3,
	  { "[logger]", "duplicate section", "first at line 1" } },
	{ "duplicate key", GPS "baud = 9600\nbaud = 19200\n", 4,
	  { "[serial gps] baud", "set twice", "first at line 3" } },
	{ "duplicate device", "[serial gps]\ndevice = /dev/a\ndevice = /dev/b\n", 3,
	  { "[serial gps] device", "set twice", "first at line 2" } },
	{ "duplicate logger key", "[logger]\npayload = hex\npayload = hex\n" GPS, 3,
	  { "[logger] payload", "set twice" } },
	{ "empty value", GPS "baud =\n", 3, { "[serial gps] baud", "empty value" } },
	{ "value only a comment", GPS "baud = ; none\n", 3, { "baud", "empty value" } },
	{ "unknown section", "[serail gps]\ndevice = /dev/x\n", 1,
	  { "[serail gps]", "unknown section" } },
	{ "serial without a name", "[serial]\ndevice = /dev/x\n", 1,
	  { "[serial]", "unknown section" } },
	{ "logger with a name", "[logger main]\n" GPS, 1, { "[logger main]", "unknown section" } },
	{ "key before any section", "device = /dev/ttyUSB0\n" GPS, 1,
	  { "device", "outside of any section" } },
	{ "key after a comment, before any section", "# hi\n\nbaud = 9600\n" GPS, 3,
	  { "baud", "outside of any section" } },
	{ "port named portlogd", "[serial portlogd]\ndevice = /dev/x\n", 1,
	  { "'portlogd'", "cannot be a port name" } },
	{ "parallel port named portlogd", "[parallel portlogd]\ndevice = x\n", 1,
	  { "'portlogd'", "cannot be a port name" } },
	{ "name with a slash", "[serial gps/1]\ndevice = /dev/x\n", 1,
	  { "'gps/1'", "cannot be a port name" } },
	{ "name with a dollar", GPS "[serial plc$]\ndevice = /dev/x\n", 3,
	  { "'plc$'", "cannot be a port name" } },
	{ "name with a quote", "[serial \"gps\"]\ndevice = /dev/x\n", 1,
	  { "cannot be a port name" } },
	{ "name of two words", "[serial my gps]\ndevice = /dev/x\n", 1,
	  { "[serial my gps]", "one word" } },
	{ "name of 32 characters", "[serial abcdefghijklmnopqrstuvwxyz012345]\ndevice = /dev/x\n",
	  1, { "cannot be a port name" } },
	{ "same name for serial and parallel", GPS "[parallel gps]\ndevice = parport0\n", 3,
	  { "[parallel gps]", "'gps'", "already used by [serial gps] at line 1" } },
	{ "same name for parallel and serial", LPT "[serial lpt0]\ndevice = /dev/x\n", 3,
	  { "[serial lpt0]", "already used by [parallel lpt0] at line 1" } },
	{ "ring_records not a power of two", "[logger]\nring_records = 1000\n" GPS, 2,
	  { "[logger] ring_records", "1000 is not a power of two" } },
	{ "ring_records below range", "[logger]\nring_records = 32\n" GPS, 2,
	  { "[logger] ring_records", "out of range" } },
	{ "ring_records above range", "[logger]\nring_records = 33554432\n" GPS, 2,
	  { "[logger] ring_records", "out of range" } },
	{ "ring_records a word", "[logger]\nring_records = big\n" GPS, 2,
	  { "[logger] ring_records", "'big' is not a power of two or 'auto'" } },
	{ "ring_seconds 0", "[logger]\nring_seconds = 0\n" GPS, 2,
	  { "[logger] ring_seconds", "out of range; expected 1 to 3600" } },
	{ "ring_seconds an hour and one", "[logger]\nring_seconds = 3601\n" GPS, 2,
	  { "[logger] ring_seconds", "out of range" } },
	{ "priority 0", GPS "priority = 0\n", 3, { "[serial gps] priority", "out of range" } },
	{ "priority 100", GPS "priority = 100\n", 3, { "[serial gps] priority", "out of range" } },
	{ "priority high", GPS "priority = high\n", 3,
	  { "[serial gps] priority", "'high'", "not a priority" } },
	{ "timer priority 100", "[timer]\npriority = 100\n" GPS, 2,
	  { "[timer] priority", "out of range" } },
	{ "flusher priority high", "[logger]\nflusher_priority = high\n" GPS, 2,
	  { "[logger] flusher_priority", "not a priority" } },
	{ "parallel priority 0", LPT "priority = 0\n", 3, { "[parallel lpt0] priority" } },
	{ "cpu -1", GPS "cpu = -1\n", 3, { "[serial gps] cpu", "'-1'", "not a CPU", "or 'any'" } },
	{ "cpu 1024", GPS "cpu = 1024\n", 3, { "[serial gps] cpu", "out of range", "0 to 1023" } },
	{ "cpu first", LPT "cpu = first\n", 3, { "[parallel lpt0] cpu", "not a CPU" } },
	{ "timer cpu empty", "[timer]\ncpu =\n" GPS, 2, { "[timer] cpu", "empty value" } },
	{ "flusher_cpu x", "[logger]\nflusher_cpu = x\n" GPS, 2,
	  { "[logger] flusher_cpu", "not a CPU" } },
	{ "rt maybe", "[logger]\nrt = maybe\n" GPS, 2,
	  { "[logger] rt", "'maybe'", "best-effort, required" } },
	{ "gap_us 0", GPS "gap_us = 0\n", 3, { "[serial gps] gap_us", "out of range", "or 'auto'" } },
	{ "gap_us fast", GPS "gap_us = fast\n", 3, { "[serial gps] gap_us", "not a gap in", "or 'auto'" } },
	{ "gap_us 12ms", GPS "gap_us = 12ms\n", 3, { "[serial gps] gap_us", "not a number", "or 'auto'" } },
	{ "gap_us too long", GPS "gap_us = 10000001\n", 3, { "gap_us", "out of range" } },
	{ "max_packet 0", GPS "max_packet = 0\n", 3, { "[serial gps] max_packet", "out of range" } },
	{ "max_packet 70000", GPS "max_packet = 70000\n", 3,
	  { "[serial gps] max_packet", "out of range" } },
	{ "log_file relative", "[logger]\nlog_file = portlogd.log\n" GPS, 2,
	  { "[logger] log_file", "'portlogd.log'", "not an absolute path" } },
	{ "serial device relative", "[serial gps]\ndevice = ttyUSB0\n", 2,
	  { "[serial gps] device", "not an absolute path" } },
	{ "line without =", GPS "baud 9600\n", 3,
	  { "[serial gps]: syntax error", "'baud 9600' is not key = value" } },
	{ "text before any section", "hello\n" GPS, 1, { "syntax error: 'hello'" } },
	{ "section without ]", "[serial gps\ndevice = /dev/x\n", 1,
	  { "syntax error", "'[serial gps' has no closing ']'" } },
	{ "text after ]", "[serial gps] receiver\ndevice = /dev/x\n", 1,
	  { "[serial gps]", "'receiver' after the section header" } },
	{ "CR line ends", "[serial gps]\rdevice = /dev/x\r", 1,
	  { "'device = /dev/x\\x0d' after the section header" } },
	{ "= without a key", GPS "= 9600\n", 3, { "[serial gps]: '= 9600' has no key" } },
	{ "section header of 150 characters", "[serial " X50 X50 X50 "]\n", 1,
	  { "[serial xxxxxxxxxxxxx...]", "157 characters", "at most 31" } },
	{ "control bytes are escaped", "[serial g\033[2J]\ndevice = /dev/x\n", 1,
	  { "'g\\x1b[2J' cannot be a port name" } },
	{ "cpu_dma_latency low", "[timer]\ncpu_dma_latency = low\n" GPS, 2,
	  { "[timer] cpu_dma_latency", "'low' is not a latency", "or 'off'" } },
	{ "cpu_dma_latency 2000000", "[timer]\ncpu_dma_latency = 2000000\n" GPS, 2,
	  { "[timer] cpu_dma_latency", "out of range", "or 'off'" } },
	{ "cpu_dma_latency and idle_latency", "[timer]\ncpu_dma_latency = 0\n"
	  "idle_latency = off\n" GPS, 3, { "[timer] idle_latency: its old name cpu_dma_latency "
	  "is set at line 2 already; keep idle_latency only" } },
	{ "idle_latency and cpu_dma_latency", "[timer]\nidle_latency = off\n"
	  "cpu_dma_latency = 0\n" GPS, 3, { "[timer] cpu_dma_latency: the old name of "
	  "idle_latency, which line 2 sets already" } },
	{ "idle_latency pinned without us", "[timer]\nidle_latency = pinned\n" GPS, 2,
	  { "[timer] idle_latency", "'pinned' is not an idle latency", "pinned:US" } },
	{ "idle_latency global:", "[timer]\nidle_latency = global:\n" GPS, 2,
	  { "[timer] idle_latency", "not a number" } },
	{ "idle_latency auto:5", "[timer]\nidle_latency = auto:5\n" GPS, 2,
	  { "[timer] idle_latency", "not an idle latency" } },
	{ "idle_latency too long", "[timer]\nidle_latency = pinned:1000001\n" GPS, 2,
	  { "[timer] idle_latency", "out of range" } },
	{ "irq_priority 0", GPS "irq_priority = 0\n", 3,
	  { "[serial gps] irq_priority", "out of range", "or 'auto' or 'off'" } },
	{ "irq_priority high", "[logger]\nirq_priority = high\n" GPS, 2,
	  { "[logger] irq_priority", "'high' is not an IRQ thread priority" } },
	{ "irq_priority 100", LPT "irq_priority = 100\n", 3,
	  { "[parallel lpt0] irq_priority", "out of range" } },
	{ "strobe on a status line", LPT "strobe = status:3\n", 3,
	  { "[parallel lpt0] strobe", "the status lines are inputs" } },
	{ "strobe data:8", LPT "strobe = data:8\n", 3,
	  { "[parallel lpt0] strobe", "'data:8'", "bits 0 to 7" } },
	{ "strobe control:4", LPT "strobe = control:4\n", 3,
	  { "[parallel lpt0] strobe", "bits 0 to 3" } },
	{ "strobe control:", LPT "strobe = control:\n", 3, { "strobe", "bits 0 to 3" } },
	{ "strobe control:1x", LPT "strobe = control:1x\n", 3, { "strobe", "bits 0 to 3" } },
	{ "strobe pin 3", LPT "strobe = 3\n", 3, { "strobe", "'3' is not a pin" } },
	{ "strobe with the lines driver", "[parallel lpt0]\ndriver = lines\ndevice = /dev/ttyS0\n"
	  "strobe = control:0\n", 4, { "[parallel lpt0] strobe: driver lines cannot drive an "
	  "output pin" } },
	{ "strobe_us as long as the period", "[timer]\nperiod_us = 500\n" LPT
	  "strobe = data:1\nstrobe_us = 500\n", 6, { "[parallel lpt0] strobe_us", "not shorter "
	  "than [timer] period_us = 500" } },
	{ "strobe read back", LPT "read = data\nstrobe = data:2\n", 4,
	  { "[parallel lpt0] strobe: data:2 is read back by read = data", "mask = 0xfb" } },
	{ "strobe read back, status+data", LPT "read = status+data\nmask = 0xffff\n"
	  "strobe = data:0\n", 5, { "bit 8 of mask 0xffff", "mask = 0xfeff" } },
	{ "strobe_level middle", LPT "strobe_level = middle\n", 3,
	  { "[parallel lpt0] strobe_level", "high, low" } },
	{ "line longer than 200 characters", GPS "# " X250 "\n", 3, { "longer than" } },
	{ "a line of 199 characters", GPS "# " X50 X50 X50 X10 X10 X10 X10 "xxxxxxx\n", 3,
	  { "longer than 198 characters" } },
	{ "long line that is a key", GPS "baud = 9600" X250 "\n", 3, { "longer than" } },
	/* found by fuzz_conf: --check-config printed "log_file = " and 188 bytes, too long */
	{ "log_file too long to print", "[logger]\nlog_file=/" X50 X50 X50 X10 X10 X10 "xxxxxxx\n"
	  GPS, 2, { "[logger] log_file", "188 bytes long", "at most 187" } },
	/* found by fuzz_conf: printed as "device = #lpt", a comment */
	{ "device starting with #", "[parallel lpt0]\ndevice =#lpt\n", 2,
	  { "[parallel lpt0] device", "'#lpt' starts with '#'", "write ./#lpt" } },
	{ "device starting with ;", "[parallel lpt0]\ndevice =;lpt\n", 2,
	  { "[parallel lpt0] device", "starts with ';'" } },
	{ "timestamp local", "[logger]\ntimestamp = local\n" GPS, 2,
	  { "[logger] timestamp", "'local'", "iso, epoch" } },
	{ "payload ascii", "[logger]\npayload = ascii\n" GPS, 2,
	  { "[logger] payload", "hex, text, both" } },
	{ "flow hardware", GPS "flow = hardware\n", 3, { "[serial gps] flow", "rtscts" } },
	{ "lines maybe", GPS "lines = maybe\n", 3, { "[serial gps] lines", "'maybe'" } },
	{ "driver usb", LPT "driver = usb\n", 3, { "[parallel lpt0] driver", "ieee1284, lines, sim" } },
	{ "read both", LPT "read = both\n", 3, { "[parallel lpt0] read", "status+data" } },
	{ "mask 0", LPT "mask = 0\n", 3, { "[parallel lpt0] mask", "out of range" } },
	{ "mask 0x10000", LPT "mask = 0x10000\n", 3, { "[parallel lpt0] mask", "out of range" } },
	{ "delimiter of two characters", GPS "delimiter = ab\n", 3,
	  { "[serial gps] delimiter", "'ab'", "not a byte" } },
	{ "delimiter 256", GPS "delimiter = 256\n", 3, { "[serial gps] delimiter", "out of range" } },
	{ "delimiter -1", GPS "delimiter = -1\n", 3, { "delimiter", "not a byte" } },
	{ "delimiter 0x", GPS "delimiter = 0x\n", 3, { "delimiter", "not a number" } },
	{ "period_us 10", "[timer]\nperiod_us = 10\n" GPS, 2, { "[timer] period_us", "out of range" } },
	{ "flush_interval_ms 0", "[logger]\nflush_interval_ms = 0\n" GPS, 2,
	  { "[logger] flush_interval_ms", "out of range" } },
	{ "the first error is reported", GPS "baud = fast\nformat = 9N1\n", 3, { "baud" } },
	/* inih saw a section here that we did not: b's device went to [serial a] */
	{ "a header after a form feed is a header", "[serial a]\n\f[serial b]\ndevice = /dev/b\n",
	  1, { "[serial a] device", "missing" } },
	{ "an error before a missing device", "[serial gps]\nbaud = 1\n", 2, { "baud" } },
};

static void test_bad_configs(void **state)
{
	char err[CONF_ERR_MAX], prefix[64];
	unsigned left_out = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *b = &bad_cases[i];
		int rc;

		if (!HAVE_IEEE1284 && tu_needs_ieee1284(b->text)) {
			left_out++;
			continue;
		}
		memset(err, 0, sizeof(err));
		rc = parse(&conf_a, b->text, err);
		if (rc != -1)
			fail_msg("%s: returned %d, expected -1 (err \"%s\")", b->name, rc, err);
		snprintf(prefix, sizeof(prefix), PATH ":%d: ", b->line);
		if (strncmp(err, prefix, strlen(prefix)) != 0)
			fail_msg("%s: \"%s\" does not start with \"%s\"", b->name, err, prefix);
		for (size_t f = 0; f < 4 && b->frags[f] != NULL; f++)
			if (strstr(err, b->frags[f]) == NULL)
				fail_msg("%s: \"%s\" does not say \"%s\"", b->name, err, b->frags[f]);
	}
	if (left_out > 0)
		printf("# built without libieee1284: %u cases of the ieee1284 driver left out\n",
		       left_out);
}

/* Truncated messages stay NUL-terminated and within errlen. */
static void test_small_err_buffer(void **state)
{
	static const size_t lens[] = { 1, 5, 10, 30, 60 };
	char err[80];

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(err, '~', sizeof(err));
		if (conf_parse_string(&conf_a, PATH, GPS "baud = fast\n", err, lens[i]) != -1)
			fail_msg("errlen %zu: bad config accepted", lens[i]);
		if (strlen(err) >= lens[i])
			fail_msg("errlen %zu: message of %zu characters", lens[i], strlen(err));
		for (size_t k = lens[i]; k < sizeof(err); k++)
			if (err[k] != '~')
				fail_msg("errlen %zu: byte %zu written", lens[i], k);
	}
}

/* ---- no port limit (issue 31), with generated configs ---- */

static char *gen(unsigned nserial, unsigned nparallel, bool logger_timer, const char *tail)
{
	size_t cap = 128 + 64 * ((size_t)nserial + nparallel) + strlen(tail), n = 0;
	char *t = malloc(cap);

	assert_non_null(t);
	if (logger_timer)
		n += (size_t)snprintf(t + n, cap - n, "[logger]\n[timer]\n");
	for (unsigned i = 0; i < nserial; i++)
		n += (size_t)snprintf(t + n, cap - n, "[serial s%u]\ndevice = /dev/ttyS%u\n", i, i);
	for (unsigned i = 0; i < nparallel; i++)
		n += (size_t)snprintf(t + n, cap - n, "[parallel p%u]\ndevice = parport%u\n", i, i);
	snprintf(t + n, cap - n, "%s", tail);
	return t;
}

static void test_port_limits(void **state)
{
	static const struct {
		const char *name;
		unsigned nserial, nparallel;
		bool logger_timer;
		const char *tail;
		int want_rc, line;      /* line 0: no message */
		const char *frag;
	} cases[] = {
		{ "33 serial ports (32 was the limit)", 33, 0, false, "", 0, 0, NULL },
		{ "33 parallel ports", 0, 33, false, "", 0, 0, NULL },
		{ "256 serial and 32 parallel ports", 256, 32, true, "", 0, 0, NULL },
		{ "2000 serial and 300 parallel ports", 2000, 300, true, "", 0, 0, NULL },
		/* the tables grow: every check still sees every section */
		{ "a duplicate [logger] after 2300 sections", 2000, 300, true, "[logger]\n", -1, 4603,
		  "duplicate section (first at line 1)" },
		{ "a duplicate port after 2300 sections", 2000, 300, true, "[serial s0]\n", -1, 4603,
		  "duplicate section (first at line 3)" },
		{ "a name clash after 2300 sections", 2000, 300, true, "[serial p299]\n", -1, 4603,
		  "already used by [parallel p299]" },
		{ "a key of the last of 2000 ports", 2000, 0, false, "baud = x\n", -1, 4001,
		  "[serial s1999] baud" },
	};
	char err[CONF_ERR_MAX], prefix[64];
	unsigned left_out = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = gen(cases[i].nserial, cases[i].nparallel, cases[i].logger_timer,
				 cases[i].tail);
		int rc;

		if (!HAVE_IEEE1284 && tu_needs_ieee1284(text)) {
			free(text);
			left_out++;
			continue;
		}
		rc = parse(&conf_a, text, err);
		free(text);
		if (rc != cases[i].want_rc)
			fail_msg("%s: returned %d, expected %d (err \"%s\")", cases[i].name, rc,
				 cases[i].want_rc, err);
		if (rc == 0) {
			EQ_NUM(cases[i].name, conf_a.nserial, cases[i].nserial);
			EQ_NUM(cases[i].name, conf_a.nparallel, cases[i].nparallel);
			for (unsigned k = 0; k < conf_a.nserial; k++) {
				char want[16];

				snprintf(want, sizeof(want), "s%u", k);
				EQ_STR(cases[i].name, conf_a.serial[k].name, want);
				EQ_NUM(cases[i].name, conf_a.serial[k].tty.baud, 115200);  /* defaults */
				EQ_NUM(cases[i].name, conf_a.serial[k].line, 2 * (int)k + 1
				       + (cases[i].logger_timer ? 2 : 0));
			}
			for (unsigned k = 0; k < conf_a.nparallel; k++)
				EQ_NUM(cases[i].name, conf_a.parallel[k].mask, 0xff);
			continue;
		}
		snprintf(prefix, sizeof(prefix), PATH ":%d: ", cases[i].line);
		if (strncmp(err, prefix, strlen(prefix)) != 0 || strstr(err, cases[i].frag) == NULL)
			fail_msg("%s: \"%s\", expected \"%s...%s...\"", cases[i].name, err, prefix,
				 cases[i].frag);
	}
	if (left_out > 0)
		printf("# built without libieee1284: %u cases with parallel ports left out\n",
		       left_out);
}

/*
 * The rings' records (issue 31): what a port can make in ring_seconds, a power of
 * two rounded up, CONF_RING_MIN at least; ring_records overrides.
 */
static void test_ring_formula(void **state)
{
	static const struct {
		const char *name, *keys;
		unsigned records;
	} cases[] = {
		/* 960 B/s, packets of 1 byte and 3.5 characters of gap: 213/s, 2133 in 10 s */
		{ "9600 8N1", "baud = 9600\n", 4096 },
		{ "115200 8N1: 2560/s", "baud = 115200\n", 32768 },
		{ "9600, 1 s: the least", "baud = 9600\n", 256 },
		{ "300 baud", "baud = 300\n", 256 },
		{ "4000000 baud: 88889/s", "baud = 4000000\n", 1 << 20 },
		/* a delimiter ends packets of one byte: 960/s */
		{ "9600 with a delimiter", "baud = 9600\ndelimiter = \\n\n", 16384 },
		{ "9600, max_packet 1", "baud = 9600\nmax_packet = 1\n", 16384 },
		{ "9600, max_packet 2", "baud = 9600\nmax_packet = 2\n", 8192 },
		/* a long gap: the packets longer than a slot's 80 bytes set it, 1 per 40 */
		{ "9600, gap 100 ms", "baud = 9600\ngap_us = 100000\n", 256 },
		{ "115200, gap 100 ms", "baud = 115200\ngap_us = 100000\n", 4096 },
		{ "9600 7E2: 873 B/s", "baud = 9600\nformat = 7E2\n", 2048 },
		{ "ring_records set", "baud = 9600\n", 64 },
	};
	char text[256], err[CONF_ERR_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *logger = i == 2 ? "[logger]\nring_seconds = 1\n"
				     : i == 3 + 8 ? "[logger]\nring_records = 64\n" : "";

		snprintf(text, sizeof(text), "%s[serial a]\ndevice = /dev/ttyS0\n%s", logger,
			 cases[i].keys);
		if (parse(&conf_a, text, err) != 0)
			fail_msg("%s: %s", cases[i].name, err);
		EQ_NUM(cases[i].name, conf_ring_serial(&conf_a.logger, &conf_a.serial[0]),
		       cases[i].records);
	}
	/* a parallel port: one record a timer period, 10000 in 10 s */
	if (parse(&conf_a, GPS, err) != 0)
		fail_msg("%s", err);
	EQ_NUM("period 1 ms", conf_ring_parallel(&conf_a.logger, &conf_a.timer), 16384);
	conf_a.timer.period_us = 100000;
	EQ_NUM("period 100 ms", conf_ring_parallel(&conf_a.logger, &conf_a.timer), 256);
}

/* ---- conf_load on real files ---- */

static char tmpdir[64];

static char *write_file(const char *name, const char *data, size_t n)
{
	char *path = malloc(strlen(tmpdir) + strlen(name) + 2);
	FILE *f;

	assert_non_null(path);
	sprintf(path, "%s/%s", tmpdir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void test_load(void **state)
{
	static const char good[] = GPS "baud = 9600\n";
	static const char bad[] = GPS "baud = fast\n";
	static const char nul[] = GPS "baud = 96\0" "00\n";
	char err[CONF_ERR_MAX], want[CONF_PATH_MAX + 16], missing[128];
	char *p_good, *p_bad, *p_nul;
	int rc;

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_conf.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	p_good = write_file("good.conf", good, sizeof(good) - 1);
	p_bad = write_file("bad.conf", bad, sizeof(bad) - 1);
	p_nul = write_file("nul.conf", nul, sizeof(nul) - 1);

	rc = conf_load(&conf_a, p_good, err, sizeof(err));
	if (rc != 0)
		fail_msg("good file: returned %d: %s", rc, err);
	EQ_STR("good file", conf_a.path, p_good);
	EQ_NUM("good file", conf_a.serial[0].tty.baud, 9600);

	rc = conf_load(&conf_a, p_bad, err, sizeof(err));
	snprintf(want, sizeof(want), "%s:3: ", p_bad);
	if (rc != -1 || strncmp(err, want, strlen(want)) != 0 || strstr(err, "baud") == NULL)
		fail_msg("bad file: returned %d: \"%s\", expected -1 and \"%s... baud\"", rc, err,
			 want);

	rc = conf_load(&conf_a, p_nul, err, sizeof(err));
	snprintf(want, sizeof(want), "%s:3: ", p_nul);
	if (rc != -1 || strncmp(err, want, strlen(want)) != 0 || strstr(err, "NUL") == NULL)
		fail_msg("NUL byte: returned %d: \"%s\", expected -1 and \"%s... NUL\"", rc, err,
			 want);

	snprintf(missing, sizeof(missing), "%s/missing.conf", tmpdir);
	rc = conf_load(&conf_a, missing, err, sizeof(err));
	if (rc != -2 || strstr(err, missing) == NULL)
		fail_msg("missing file: returned %d: \"%s\", expected -2 naming the path", rc, err);

	rc = conf_load(&conf_a, tmpdir, err, sizeof(err));
	if (rc != -2 || strstr(err, tmpdir) == NULL)
		fail_msg("directory: returned %d: \"%s\", expected -2 naming the path", rc, err);

	unlink(p_good);
	unlink(p_bad);
	unlink(p_nul);
	rmdir(tmpdir);
	free(p_good);
	free(p_bad);
	free(p_nul);
}

/* ---- conf_print output parses back to the same config ---- */

static char *print_conf(const struct conf *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	conf_print(c, f);
	assert_int_equal(fclose(f), 0);
	assert_non_null(buf);
	return buf;
}

static void test_print_reparse(void **state)
{
	static const struct { const char *name, *text, *expect[3]; } cases[] = {
		{ "minimal", GPS, { "gap_us = auto", "304 us" } },
		{ "two serial ports and a parallel port",
		  "[logger]\ntimestamp = epoch\npayload = text\nring_records = 4096\n"
		  "flusher_priority = 3\n"
		  "[timer]\nperiod_us = 250\npriority = other\n"
		  "[serial gps]\ndevice = /dev/ttyUSB0\nbaud = 19200\nformat = 8E1\n"
		  "delimiter = \\n\nlines = yes\n"
		  "[serial plc]\ndevice = /dev/ttyS1\nbaud = 9600\nformat = 7O2\nflow = xonxoff\n"
		  "gap_us = 5000\ndelimiter = \\0\nmax_packet = 300\npriority = other\n"
		  "[parallel lpt0]\ndriver = lines\ndevice = /dev/ttyS2\nread = status+data\n"
		  "mask = 0x1ff\npriority = 50\n",
		  { "gap_us = auto", "2006 us", "gap_us = 5000" } },
		{ "every key", every_key, { "mask = 0x1ff", "strobe = control:2", "idle_latency = "
		  "pinned:5" } },
		/* the old name is printed as the new one, once */
		{ "cpu_dma_latency", "[timer]\ncpu_dma_latency = 30\n" GPS, { "idle_latency = "
		  "global:30" } },
		{ "irq_priority of [logger] in a port", "[logger]\nirq_priority = 42\n" GPS,
		  { "[serial gps]", "irq_priority = 42" } },
		/* a pass name as long as a line allows: the comment that says where it
		 * goes must not make the line too long to read back (the fuzzer's find:
		 * "pass = NAME  ; /run/portlogd/NAME") */
		{ "a pass name as long as a line", GPS "pass=" X50 X50 X50 X10 X10 X10 X10 "x\n",
		  { "  # /run/portlogd/xxx" } },
	};
	char err[CONF_ERR_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out, *again;

		if (parse(&conf_a, cases[i].text, err) != 0)
			fail_msg("%s: rejected: %s", cases[i].name, err);
		out = print_conf(&conf_a);
		if (strncmp(out, "# ", 2) != 0 || strstr(out, PATH) == NULL)
			fail_msg("%s: no first comment line naming the file:\n%s", cases[i].name, out);
		for (size_t k = 0; k < 3 && cases[i].expect[k] != NULL; k++)
			if (strstr(out, cases[i].expect[k]) == NULL)
				fail_msg("%s: output does not say \"%s\":\n%s", cases[i].name,
					 cases[i].expect[k], out);
		if (parse(&conf_b, out, err) != 0)
			fail_msg("%s: printed config does not parse: %s\n%s", cases[i].name, err, out);
		expect_conf_equal(cases[i].name, &conf_b, &conf_a, false);
		/* and printing the re-parsed config gives the same text */
		again = print_conf(&conf_b);
		if (strcmp(out, again) != 0)
			fail_msg("%s: printed twice differently:\n%s\n---\n%s", cases[i].name, out,
				 again);
		free(again);
		free(out);
	}

	/* a config file whose path is longer than a line prints a config that parses */
	char path[CONF_PATH_MAX], *out;

	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	if (conf_parse_string(&conf_a, path, GPS, err, sizeof(err)) != 0)
		fail_msg("long path: rejected: %s", err);
	out = print_conf(&conf_a);
	if (parse(&conf_b, out, err) != 0)
		fail_msg("long path: printed config does not parse: %s\n%s", err, out);
	free(out);
}

/* tx_device or pass: the second direction of a port, its derived values and its errors. */
static void test_second_direction(void **state)
{
	char err[CONF_ERR_MAX], dir[64] = "/tmp/portlogd-test-conf-XXXXXX", text[512];
	char dev[96], link[96], *out;
	const struct group *dialout = getgrnam("dialout");
	int fd;

	(void)state;
	if (parse(&conf_a, GPS "pass = plc\n", err) != 0)
		fail_msg("pass: rejected: %s", err);
	EQ_STR("pass", conf_a.serial->pass_path, CONF_PASS_DIR "/plc");
	EQ_NUM("pass", conf_a.serial->pass_mode, 0660);
	EQ_NUM("pass", conf_a.serial->pass_uid, -1);
	if (dialout != NULL)
		EQ_NUM("pass", conf_a.serial->pass_gid, dialout->gr_gid);
	assert_true(conf_serial_has_tx(conf_a.serial));
	if (parse(&conf_a, GPS "pass = /tmp/x/plc\npass_owner = root\npass_group = 20\n"
		  "pass_mode = 600\n", err) != 0)
		fail_msg("pass with owner: rejected: %s", err);
	EQ_STR("pass", conf_a.serial->pass_path, "/tmp/x/plc");
	EQ_NUM("pass", conf_a.serial->pass_uid, 0);
	EQ_NUM("pass", conf_a.serial->pass_gid, 20);
	EQ_NUM("pass", conf_a.serial->pass_mode, 0600);
	out = print_conf(&conf_a);
	if (strstr(out, "pass_mode = 0600\n") == NULL || strstr(out, "# tx_device = (not set)\n") == NULL)
		fail_msg("printed: %s", out);
	if (parse(&conf_b, out, err) != 0)
		fail_msg("printed pass config does not parse: %s\n%s", err, out);
	expect_conf_equal("pass printed", &conf_b, &conf_a, false);
	free(out);
	if (parse(&conf_a, GPS "tx_device = /dev/ttyUSB1\npass_mode = 0600\n", err) != 0)
		fail_msg("tx_device: rejected: %s", err);
	assert_true(conf_serial_has_tx(conf_a.serial));
	EQ_STR("tx_device", conf_a.serial->pass_path, "");
	assert_int_equal(parse(&conf_a, GPS, err), 0);
	assert_false(conf_serial_has_tx(conf_a.serial));

	/* tx_device as a link to the port's device is the same device */
	assert_non_null(mkdtemp(dir));
	snprintf(dev, sizeof(dev), "%s/ttyX", dir);
	snprintf(link, sizeof(link), "%s/by-id", dir);
	fd = open(dev, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(dev, link), 0);
	snprintf(text, sizeof(text), "[serial a]\ndevice = %s\ntx_device = %s\n", dev, link);
	assert_int_equal(parse(&conf_a, text, err), -1);
	if (strstr(err, ":3: [serial a] tx_device: ") == NULL
	    || strstr(err, "is the port's device") == NULL)
		fail_msg("link to the device: %s", err);
	/* pass where a directory cannot be: below a file */
	snprintf(text, sizeof(text), "[serial a]\ndevice = /dev/ttyS0\npass = %s/sub/plc\n", dev);
	assert_int_equal(parse(&conf_a, text, err), -1);
	if (strstr(err, ":3: [serial a] pass: ") == NULL || strstr(err, "is not a directory") == NULL)
		fail_msg("below a file: %s", err);
	/* ... and a directory that is missing can be made (at start) */
	snprintf(text, sizeof(text), "[serial a]\ndevice = /dev/ttyS0\npass = %s/sub/dir/plc\n", dir);
	if (parse(&conf_a, text, err) != 0)
		fail_msg("missing directory: rejected: %s", err);
	/* a link at PATH (the last run's) is replaced, so it is fine */
	snprintf(text, sizeof(text), "[serial a]\ndevice = /dev/ttyS0\npass = %s\n", link);
	if (parse(&conf_a, text, err) != 0)
		fail_msg("a link at PATH: rejected: %s", err);
	unlink(link);
	unlink(dev);
	rmdir(dir);
}

/* Every driver of the registry is a word of `driver =`; one that is compiled out
 * is named by a config error that says so. */
static void test_drivers(void **state)
{
	char text[256], err[CONF_ERR_MAX], missing[CONF_ERR_MAX];
	unsigned n = 0;

	(void)state;
	assert_int_equal(parse(&conf_a, "[parallel lpt0]\n", err), -1);
	snprintf(missing, sizeof(missing), "%s", err);
	for (const struct drv_input_ops *const *d = drv_inputs; *d != NULL; d++, n++) {
		char example[96];

		assert_non_null((*d)->name);
		snprintf(example, sizeof(example), "%s (%s)", (*d)->device_example, (*d)->name);
		if (strstr(missing, example) == NULL)
			fail_msg("\"%s\" does not offer \"%s\"", missing, example);
		snprintf(text, sizeof(text), "[parallel p]\ndevice = x\ndriver = %s\n", (*d)->name);
		if ((*d)->open == NULL) {
			assert_int_equal(parse(&conf_a, text, err), -1);
			if (strncmp(err, PATH ":3: [parallel p] driver: ", 34) != 0
			    || strstr(err, "is not compiled in") == NULL)
				fail_msg("%s: \"%s\"", (*d)->name, err);
			continue;
		}
		if (parse(&conf_a, text, err) != 0)
			fail_msg("%s: rejected: %s", (*d)->name, err);
		assert_ptr_equal(conf_a.parallel[0].driver, *d);
		assert_ptr_equal(drv_input_find((*d)->name), *d);
		EQ_NUM((*d)->name, conf_a.parallel[0].bits,
		       (*d)->value_bits(&conf_a.parallel[0].in));
	}
	assert_true(n >= 3);
	assert_null(drv_input_find("usb"));
}

/* A key --list-keys calls required is one whose absence is an error, and the
 * other way round. */
static void test_required_keys(void **state)
{
	char *buf = NULL, *line, *save = NULL, err[CONF_ERR_MAX], text[64], want[96];
	size_t len = 0, nrequired = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	conf_print_keys(f);
	assert_int_equal(fclose(f), 0);
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char sect[32], key[32], def[64];
		bool port;

		assert_int_equal(sscanf(line, "[%31[^]]]\t%31[^\t]\t%63[^\t]", sect, key, def), 3);
		port = strstr(sect, " NAME") != NULL;
		if (!port) {
			if (strcmp(def, "(required)") == 0)
				fail_msg("%s: a required key of a section that may be left out", line);
			continue;
		}
		*strstr(sect, " NAME") = '\0';
		snprintf(text, sizeof(text), "[%s p]\n", sect);
		snprintf(want, sizeof(want), "[%s p] %s: missing", sect, key);
		if (parse(&conf_a, text, err) == 0 || strstr(err, " missing;") == NULL)
			continue;       /* this section needs another key first */
		if ((strstr(err, want) != NULL) != (strcmp(def, "(required)") == 0))
			fail_msg("%s: %s", line, err);
		nrequired += strstr(err, want) != NULL;
	}
	assert_int_equal(nrequired, 2);         /* the device of each kind of port */
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_good_values),
		cmocka_unit_test(test_bad_configs),
		cmocka_unit_test(test_small_err_buffer),
		cmocka_unit_test(test_port_limits),
		cmocka_unit_test(test_ring_formula),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_print_reparse),
		cmocka_unit_test(test_drivers),
		cmocka_unit_test(test_second_direction),
		cmocka_unit_test(test_required_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
