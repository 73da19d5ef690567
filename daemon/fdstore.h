/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fdstore.h - the ports kept open across a restart in systemd's file descriptor store.
 *
 * A port nobody holds open is shut down by the kernel, and what its device sends
 * until the next process has opened it again is lost. So each open port's
 * keeper (drv.h: the descriptor of our own that holds its flock, the one the
 * port's reader never reads) is given to the service manager (sd_notify
 * FDSTORE=1, FDNAME=NAME/ROLE); the next process gets it back at start
 * (LISTEN_FDS, LISTEN_FDNAMES: sd_listen_fds_with_names), and meanwhile the
 * kernel keeps receiving into the tty's buffers (about 64 KiB a port). A `pass`
 * pty's master and our slave descriptor are stored too, so the application's PATH
 * stays connected. systemd keeps the store while the service restarts (restart,
 * watchdog, a failure restarted by Restart=, an upgrade's restart) and empties it
 * when the service stops for good (portlogd(8), RESTARTS).
 *
 * The state page, a memfd in the same store (FDNAME=portlogd-state), carries what
 * the next process must know of each reader: when it last found its kernel empty
 * (every byte that came before was taken), which the reader writes after each
 * empty read with one store to shared memory (no system call), and the FIFO
 * trigger level found before portlogd changed it (put back when the port is
 * closed for good). It survives a crash (kill -9, the watchdog's SIGKILL) as the
 * descriptors do.
 *
 * Storing happens only where the service manager keeps the store: NOTIFY_SOCKET
 * set and $FDSTORE above 0 (systemd 254 sets it from FileDescriptorStoreMax=; the
 * unit sets it for Debian 12's systemd 252). Descriptors handed over at start are
 * taken whatever $FDSTORE says.
 *
 * fdstore_init, fdstore_take, fdstore_slot and fdstore_finish run in main before
 * and at start-up; fdstore_put and fdstore_drop also run in a reader that lost or
 * reopened its port (no real-time path then, as serial_open): they only read
 * what init set.
 */
#ifndef PORTLOGD_FDSTORE_H
#define PORTLOGD_FDSTORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf.h"

enum fdstore_role {
	FDSTORE_RX,     /* a port's keeper (its device) */
	FDSTORE_TX,     /* the keeper of a tap's second port (tx_device) */
	FDSTORE_PTY,    /* pass: the pty's master */
	FDSTORE_PTS,    /* pass: our descriptor of its slave (the master never hangs up) */
	FDSTORE_NROLES,
};

#define FDSTORE_KEY_MAX (CONF_NAME_MAX + 8)         /* "NAME/ROLE" */
#define FDSTORE_STATE_NAME "portlogd-state"

/* One reader's state in the page; key "" is a free slot. */
struct fdstore_slot {
	char key[FDSTORE_KEY_MAX];
	_Atomic int64_t empty_mono;     /* CLOCK_MONOTONIC of its last read that found the
					 * kernel empty; 0: none yet */
	uint32_t trigger_found;         /* FIFO level to put back at the port's last close */
	uint32_t unused;
};

/* The page: as many slots as the config has readers (two a port: rx, tx); one of
 * another config's run is copied into a page of this one's size. */
struct fdstore_page {
	char magic[8];                  /* FDSTORE_MAGIC: this layout */
	uint32_t size;                  /* sizeof(struct fdstore_page): the header */
	uint32_t nslots;
	struct fdstore_slot slot[];     /* nslots of them */
};

struct fdstore_got {
	int fd;
	char name[FDSTORE_KEY_MAX];     /* as handed over (cut if longer) */
	bool taken;
	bool unwanted;                  /* no port took it: closed by fdstore_finish */
};

struct fdstore {
	bool enabled;                   /* descriptors are stored: NOTIFY_SOCKET, $FDSTORE > 0 */
	unsigned max;                   /* $FDSTORE */
	struct fdstore_got *got;        /* ngot of them: everything handed over */
	unsigned ngot;
	unsigned lost;                  /* handed over, no memory to note them (closed) */
	struct fdstore_page *page;      /* mapped; NULL when no memfd could be made */
	size_t page_len;
	int page_fd;
	bool page_kept;                 /* the page came from the previous process */
	bool *claimed;                  /* per slot: a reader of this run holds it */
};

/*
 * Takes what the service manager handed over, and maps the state page with
 * `slots` slots (a reader's each): the previous process's, or a new one, stored
 * (the previous one's slots copied when it had another number). 0, or -errno with
 * what failed in err (the daemon carries on: it only cannot tell how long a kept
 * port was unread).
 */
int fdstore_init(struct fdstore *fs, unsigned slots, char *err, size_t errlen);
void fdstore_fini(struct fdstore *fs);

/* The descriptor handed over for the port's role, now the caller's; -1: none. */
int fdstore_take(struct fdstore *fs, const char *port, enum fdstore_role role);

/* The reader's slot in the state page (what the previous process left in it,
 * when the key matches), or NULL without a page. */
struct fdstore_slot *fdstore_slot(struct fdstore *fs, const char *port, enum fdstore_role role);

/*
 * Gives the service manager a duplicate of fd to keep under the port's role
 * (FDSTORE=1): true when sent. Forgets what it keeps under that name
 * (FDSTOREREMOVE=1): fdstore_drop. Both do nothing when !enabled (or fs is NULL).
 */
bool fdstore_put(const struct fdstore *fs, const char *port, enum fdstore_role role, int fd);
void fdstore_drop(const struct fdstore *fs, const char *port, enum fdstore_role role);

/*
 * After every port was opened: each descriptor no port took (the config no
 * longer has the port, or the store held something else) is told to `unwanted`
 * (its handed-over name, the descriptor, and its slot's state or NULL), which
 * closes it; the service manager forgets it, and its slot is freed. Slots no
 * reader claimed are freed too.
 */
void fdstore_finish(struct fdstore *fs,
		    void (*unwanted)(void *ctx, const char *name, int fd,
				     const struct fdstore_slot *slot),
		    void *ctx);

/* "NAME/ROLE" as stored; FDNAME may not hold ':', which a port's name may: '+' instead. */
void fdstore_key(char *out, size_t len, const char *port, enum fdstore_role role);

#endif
