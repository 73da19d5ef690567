/* SPDX-License-Identifier: GPL-2.0-or-later */
/* conf_check.c - the config's checks across keys, and the values derived from the keys.
 *
 * After the last line is read: a port needs a device; tx_device and pass are one
 * or the other, on a device of their own; a strobe needs a driver that drives a
 * pin; a key and its old name are not both set. And each port's derived fields
 * (conf.h) are set, once, for every user.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conf_internal.h"
#include "drv.h"
#include "reasm.h"

/* ---- validation and derived values ---- */

void conf_resolve_serial(struct conf_serial *s)
{
	s->frame_bits = drv_frame_bits(&s->tty);
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

double conf_rate_serial(const struct conf_serial *s)
{
	double bytes_s = (double)s->tty.baud / (double)s->frame_bits;
	double m = 1;   /* a delimiter ends a packet of one byte and no silence */

	if (s->delimiter < 0) {
		m = 1 + (double)s->gap_ns / (double)(s->char_ns > 0 ? s->char_ns : 1);
		if (m > s->max_packet)
			m = s->max_packet;      /* max_packet's cuts need no silence */
	}
	/* longer packets: 2 slots for 81 bytes is the most per character there */
	return bytes_s / (m < 40 ? m : 40);
}

double conf_rate_parallel(const struct conf_timer *t)
{
	return 1e6 / (double)t->period_us;
}

/* What a ring holds for rate records a second in ring_seconds: a power of two. */
static uint32_t ring_for(const struct conf_logger *lg, double rate)
{
	double want = rate * lg->ring_seconds;
	uint32_t n = CONF_RING_MIN;

	if (lg->ring_records != CONF_RING_AUTO)
		return lg->ring_records;
	while (n < CONF_RING_MAX && (double)n < want)
		n *= 2;
	return n;
}

uint32_t conf_ring_serial(const struct conf_logger *lg, const struct conf_serial *s)
{
	return ring_for(lg, conf_rate_serial(s));
}

uint32_t conf_ring_parallel(const struct conf_logger *lg, const struct conf_timer *t)
{
	return ring_for(lg, conf_rate_parallel(t));
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
		for (size_t k = 0; k < conf_nkeys; k++)
			if (conf_keys[k].sect == kind && strcmp(conf_keys[k].name, name) == 0
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

		for (size_t k = 0; k < conf_nkeys; k++) {
			size_t n = 0;

			if (conf_keys[k].sect != s->kind || conf_keys[k].new_name == NULL || s->key_line[k] == 0)
				continue;
			while (n < conf_nkeys && (conf_keys[n].sect != s->kind
					     || strcmp(conf_keys[n].name, conf_keys[k].new_name) != 0))
				n++;
			if (n == conf_nkeys || s->key_line[n] == 0)
				continue;
			if (s->key_line[k] > s->key_line[n])
				fail(p, s->key_line[k], "[%s] %s: the old name of %s, which line %d "
				     "sets already; keep %s only", s->title, conf_keys[k].name,
				     conf_keys[n].name, s->key_line[n], conf_keys[n].name);
			else
				fail(p, s->key_line[n], "[%s] %s: its old name %s is set at line %d "
				     "already; keep %s only", s->title, conf_keys[n].name, conf_keys[k].name,
				     s->key_line[k], conf_keys[n].name);
		}
	}
}

/* metrics_file: a name node_exporter reads, written with the STAT rounds, not the log. */
static void validate_metrics(struct parse *p, const struct conf_logger *l)
{
	static const char ext[] = ".prom";
	int line = set_line(p, SECT_LOGGER, 0, "metrics_file", false);
	const char *base;
	size_t n;

	if (line == 0)
		return;
	base = strrchr(l->metrics_file, '/') + 1;       /* absolute: there is a '/' */
	n = strlen(base);
	if (n <= sizeof(ext) - 1 || strcmp(base + n - (sizeof(ext) - 1), ext) != 0)
		fail(p, line, "[logger] metrics_file: '%s' does not end in %s, and node_exporter's "
		     "textfile collector reads only NAME%s files; name it like "
		     "/var/lib/prometheus/node-exporter/portlogd.prom", l->metrics_file, ext, ext);
	else if (l->stat_interval_s == 0)
		fail(p, line, "[logger] metrics_file: the file is written with every round of STAT "
		     "lines, which stat_interval_s = 0 turns off; set stat_interval_s (1..86400, "
		     "such as Prometheus's scrape interval)");
	else if (strcmp(l->metrics_file, l->log_file) == 0)
		fail(p, line, "[logger] metrics_file: '%s' is the log file too; give the metrics "
		     "their own file", l->metrics_file);
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

void conf_validate(struct parse *p)
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
			     conf_driver_list(list, sizeof(list), true));
		} else {
			conf_resolve_parallel(pp);
			validate_strobe(p, c, i);
		}
		if (pp->irq_priority == CONF_IRQ_AS_LOGGER)
			pp->irq_priority = c->logger.irq_priority;
	}
	validate_old_names(p);
	validate_metrics(p, &c->logger);
	/* no port: valid (the package's config until one is written); the daemon runs,
	 * opens nothing and says so (main.c, --check-system's ports row) */
}
