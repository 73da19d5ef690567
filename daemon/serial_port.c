/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_port.c - a port's readers and threads: made, started, joined and freed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "serial_internal.h"
#include "thread.h"

/* One reader, of either direction, and (with lines = on) its lines thread's ring. */
static int reader_init(struct serial_port *p, const struct conf_serial *cfg, enum rec_kind kind,
		       uint32_t ring_records, int stop_fd, struct fdstore *store)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->cfg = cfg;
	p->kind = kind;
	p->stop_fd = stop_fd;
	p->store = store;
	p->role = kind == REC_RX ? FDSTORE_RX : FDSTORE_TX;
	/* its device's keeper, whatever name it was kept under (pass's pty goes by name) */
	if (store != NULL && !(kind == REC_TX && cfg->pass[0] != '\0'))
		fdstore_want(store, cfg->name, p->role, cfg->device);
	p->slot = store != NULL ? fdstore_slot(store, cfg->name, p->role) : NULL;
	p->unread_from = -1;
	atomic_init(&p->held_bytes, 0);
	p->drv.fd = -1;
	p->drv.lock_fd = -1;
	p->gap_ns = cfg->gap_ns;
	atomic_init(&p->wakeups, 0);
	atomic_init(&p->reopens, 0);
	atomic_init(&p->late, 0);
	atomic_init(&p->up, false);
	health_beat_init(&p->beat);
	health_beat_init(&p->lines_beat);
	p->pkt = malloc(cfg->max_packet);
	if (p->pkt == NULL)
		return -ENOMEM;
	memset(p->pkt, 0, cfg->max_packet);
	atomic_init(&p->lines_fd, -1);
	atomic_init(&p->lines_stop, false);
	p->lines_wake = -1;
	rc = source_init(&p->src, cfg->name, ring_records);
	p->src.late = &p->late;     /* the flusher's case=clock marks count there too */
	if (rc == 0 && cfg->lines) {
		rc = source_init(&p->lines_src, cfg->name, ring_records);
		p->lines_src.value_bits = 4;
		p->lines_src.follows = &p->src;
		p->lines_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (rc == 0 && p->lines_wake < 0)
			rc = -errno;
	}
	if (rc < 0) {
		free(p->pkt);
		p->pkt = NULL;
	}
	return rc;
}

static void reader_fini(struct serial_port *p)
{
	int fd = atomic_exchange(&p->lines_fd, -1);

	if (fd >= 0)
		close(fd);
	if (p->lines_wake >= 0)
		close(p->lines_wake);
	drv_serial_close(&p->drv);
	if (p->relaying)
		relay_fini(&p->relay);
	source_fini(&p->src);
	if (p->cfg->lines)
		source_fini(&p->lines_src);
	free(p->pkt);
	p->pkt = NULL;
}

/*
 * The second direction: a TX reader with the port's config but its own device
 * (the tap's second port; with pass, the pty, attached at open), its ring
 * paired with the port's. With pass, both relay: the port's reader to the pty's
 * master (set when the pty is made), the TX reader to the device (handed over
 * by the port's reader at each open).
 */
static int tx_init(struct serial_port *p, uint32_t ring_records, int stop_fd,
		   struct fdstore *store)
{
	const struct conf_serial *c = p->cfg;
	struct serial_port *t = malloc(sizeof(*t));
	struct conf_serial tc = *c;
	int rc;

	if (t == NULL)
		return -ENOMEM;
	tc.lines = false;
	/* conf_check.c keeps pass_path within CONF_PATH_MAX */
	snprintf(tc.device, sizeof(tc.device), "%.*s", (int)sizeof(tc.device) - 1,
		 c->tx_device[0] != '\0' ? c->tx_device : c->pass_path);
	rc = reader_init(t, &tc, REC_TX, ring_records, stop_fd, store);
	t->tx_cfg = tc;         /* its own copy, now that reader_init has cleared t */
	t->cfg = &t->tx_cfg;
	p->tx = t;
	if (rc < 0)
		return rc;
	t->src.dir = REC_DIR_TX;
	t->src.pair = &p->src;
	p->src.pair = &t->src;
	t->peer = p;
	p->peer = t;
	if (c->pass[0] == '\0')
		return 0;
	p->pty = calloc(1, sizeof(*p->pty));
	if (p->pty == NULL)
		return -ENOMEM;
	p->pty->master = p->pty->slave = -1;
	t->pty = p->pty;
	rc = relay_init(&p->relay, "app", -1, false);
	p->relaying = rc == 0;
	if (rc == 0) {
		rc = relay_init(&t->relay, "device", -1, true);
		t->relaying = rc == 0;
	}
	return rc;
}

int serial_init(struct serial_port *p, const struct conf_serial *cfg, uint32_t ring_records,
		int stop_fd, struct fdstore *store)
{
	int rc = reader_init(p, cfg, REC_RX, ring_records, stop_fd, store);

	if (rc == 0 && conf_serial_has_tx(cfg))
		rc = tx_init(p, ring_records, stop_fd, store);
	return rc;
}

void serial_sensed(struct serial_port *p, const struct sensors *s)
{
	p->sensors = s;
	if (p->tx != NULL)
		p->tx->sensors = s;
}

void serial_fini(struct serial_port *p)
{
	if (p->tx != NULL) {
		if (p->tx->pkt != NULL)
			reader_fini(p->tx);
		free(p->tx);
		p->tx = NULL;
	}
	if (p->pkt != NULL)
		reader_fini(p);
	if (p->pty != NULL && p->pty->cfg != NULL)
		pass_close(p->pty);
	free(p->pty);
	p->pty = NULL;
}

int serial_start(struct serial_port *p, int *degraded)
{
	char name[16];

	int rc;

	snprintf(name, sizeof(name), "plog-%.10s", p->cfg->name);
	rc = thread_start(&p->thread, name, p->cfg->priority, p->cfg->cpu, serial_thread, p,
			  degraded);
	if (rc == 0 && p->cfg->lines) {
		snprintf(name, sizeof(name), "plogl-%.9s", p->cfg->name);
		rc = thread_start(&p->lines_thread, name, p->cfg->priority, p->cfg->cpu,
				  serial_lines_thread, p, degraded);
	}
	if (rc == 0 && p->tx != NULL) {
		snprintf(name, sizeof(name), "plogt-%.9s", p->cfg->name);
		rc = thread_start(&p->tx->thread, name, p->cfg->priority, p->cfg->cpu,
				  serial_thread, p->tx, degraded);
	}
	return rc;
}

void serial_join(struct serial_port *p)
{
	thread_join(&p->thread);
	if (p->tx != NULL)
		thread_join(&p->tx->thread);
	serial_lines_join(p);
}
