/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_store.c - a port kept open across a restart (fdstore.h): its keeper and
 * pass's pty taken from the store, put there, dropped from it; what the next
 * process is told of them. */


#include "clock.h"
#include "serial_internal.h"

/* The store's word on the port just opened (or the pty just made or taken back). */
static void took_back(struct serial_port *p, enum drv_kept kept)
{
	p->held = kept == DRV_KEPT_YES;
	p->opened_mono = mono_ns();
	p->unread_from = p->held && p->slot != NULL && p->slot->empty_mono > 0
			 ? p->slot->empty_mono : -1;
}

int serial_pass_open(struct serial_port *p, char *err, size_t errlen)
{
	struct pass *ps = p->pty;
	int rc, master = -1, slave = -1;

	if (ps == NULL)
		return 0;
	if (p->store != NULL) {
		master = fdstore_take(p->store, p->cfg->name, FDSTORE_PTY);
		slave = fdstore_take(p->store, p->cfg->name, FDSTORE_PTS);
	}
	rc = pass_open(ps, p->cfg, master, slave, err, errlen);
	if (ps->kept != DRV_KEPT_NONE && ps->kept != DRV_KEPT_YES) {
		fdstore_drop(p->store, p->cfg->name, FDSTORE_PTY);
		fdstore_drop(p->store, p->cfg->name, FDSTORE_PTS);
	}
	if (rc < 0)
		return rc;
	p->relay.fd = ps->master;       /* the RX reader writes what it reads there */
	ps->stored = ps->kept == DRV_KEPT_YES
		     || (p->store != NULL && fdstore_put(p->store, p->cfg->name, FDSTORE_PTY, ps->master)
			 && fdstore_put(p->store, p->cfg->name, FDSTORE_PTS, ps->slave));
	/* what the application wrote while no reader ran waits in the pty */
	took_back(p->tx, ps->kept);
	return 0;
}

int serial_store_take(struct serial_port *p, bool pass_tx)
{
	int kept = -1;

	/* at the first open only (in main, before the threads); pass's TX reader
	 * takes its pty in serial_pass_open */
	if (!p->asked_store && p->store != NULL && !pass_tx)
		kept = fdstore_take(p->store, p->cfg->name, p->role);
	p->asked_store = true;
	return kept;
}

void serial_store_taken(struct serial_port *p, int kept, int rc)
{
	if (kept >= 0 && (rc < 0 || p->drv.kept != DRV_KEPT_YES))
		fdstore_drop(p->store, p->cfg->name, p->role);  /* closed: the store's copy too */
}

void serial_store_opened(struct serial_port *p)
{
	took_back(p, p->drv.kept);
	/* a port kept open is still in the store; a new one goes there */
	p->drv.stored = p->drv.kept == DRV_KEPT_YES
			|| fdstore_put(p->store, p->cfg->name, p->role, p->drv.lock_fd);
	if (p->slot != NULL && p->drv.kept == DRV_KEPT_YES)
		p->drv.dlv.trigger_found = p->slot->trigger_found;      /* still to put back */
	else if (p->slot != NULL)
		p->slot->trigger_found = p->drv.dlv.trigger_found;
}

bool serial_store_release(struct serial_port *p, bool stopping)
{
	bool keep = stopping && (p->drv.stored || (p->pty != NULL && p->kind == REC_TX
						   && p->pty->stored));

	if (p->drv.stored && !keep) {
		fdstore_drop(p->store, p->cfg->name, p->role);
		p->drv.stored = false;
		if (p->slot != NULL)
			p->slot->trigger_found = 0;     /* put back by the port's close */
	}
	return keep;
}
