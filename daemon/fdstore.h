/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fdstore.h - the ports kept open across a restart in systemd's file descriptor store.
 *
 * A port nobody holds open is shut down by the kernel, and what its device sends
 * until the next process has opened it again is lost. So each open port's
 * keeper (drv.h: the descriptor of our own that holds its flock, the one the
 * port's reader never reads) is given to the service manager (sd_notify
 * FDSTORE=1, FDNAME=NAME/ROLE); the next process gets it back at start
 * (LISTEN_FDS, LISTEN_FDNAMES: sd_listen_fds_with_names), and meanwhile the
 * kernel keeps receiving into the tty's buffers until they throttle (portlogd(8),
 * RESTARTS). A `pass` pty's master and our slave descriptor are stored too, so the
 * application's PATH stays connected. systemd keeps the store while the service restarts (restart,
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
 * unit sets it for Debian 12's systemd 252), and no more than $FDSTORE descriptors
 * (systemd closes what comes beyond: such a port is not said kept). Descriptors
 * handed over at start are taken whatever $FDSTORE says, and what no port wants is
 * forgotten there (FDSTOREREMOVE=1) whenever there is a NOTIFY_SOCKET.
 *
 * A port takes back the descriptor of its device (st_rdev), whatever name it was
 * stored under: a port renamed, or two ports that swapped devices, find theirs; a
 * name only tells EV open what became of the one kept under it (hung up, another
 * device). The order, in main: fdstore_init; fdstore_want for each reader (its
 * device), then fdstore_slot, and fdstore_take for pass's pty (by name), while the
 * parts are made; once the threads that do not need the ports run, fdstore_release
 * closes and forgets what no port wants and forgets the old names of what ports
 * take under new ones, before any port opens (a keeper left open holds its device's
 * flock); each port's first open then takes its own (fdstore_take) and stores it
 * under its name; after a start-up that succeeded, fdstore_finish frees the state
 * of what went. A start-up that fails before fdstore_release leaves the store as it
 * was; after it, the ports opened stay kept.
 *
 * LISTEN_* are not trusted: a LISTEN_FDNAMES that does not name every descriptor,
 * or a LISTEN_FDS beyond the open descriptors, gives the descriptors without names
 * (a keeper is still found by its device; the rest is closed); a name that is not a
 * valid FDNAME or does not fit is never sent back; a state page of another layout
 * is replaced, and a kept page's slots are checked before they are read.
 *
 * fdstore_put and fdstore_drop also run in a reader that lost or reopened its port
 * (no real-time path then, as serial_open): they only read what init set, and count
 * what the store holds atomically.
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
	char name[FDSTORE_KEY_MAX];     /* as handed over; "" when !named */
	bool named;                     /* the name, whole and a valid FDNAME, is known */
	int want;                       /* the reader whose device it is (fdstore_want), or -1 */
	bool taken;                     /* a reader (or pass) has it */
	bool released;                  /* no port wanted it: closed by fdstore_release */
};

/* A reader that takes its port's keeper back (rx, tx), by its device. */
struct fdstore_want {
	char key[FDSTORE_KEY_MAX];      /* "NAME/ROLE": what it stores under */
	int got;                        /* the descriptor of its device, or -1 */
	enum drv_kept gone;             /* none of its device: what became of the one kept
					 * under its name (hung up, another device), or NONE */
};

struct fdstore {
	bool notify;                    /* NOTIFY_SOCKET: FDSTOREREMOVE=1 can be said */
	bool enabled;                   /* descriptors are stored: NOTIFY_SOCKET, $FDSTORE > 0 */
	unsigned max;                   /* $FDSTORE */
	_Atomic unsigned nstored;       /* what the store holds by our count (at most max) */
	_Atomic unsigned refused;       /* descriptors not stored because it was full */
	struct fdstore_got *got;        /* ngot of them: everything handed over */
	unsigned ngot;
	unsigned lost;                  /* handed over, no memory to note them (closed) */
	unsigned nslots;                /* the config's readers (two a port: rx, tx) */
	struct fdstore_want *want;      /* nslots of them */
	unsigned nwant;
	char warning[160];              /* what LISTEN_* had wrong (main says it), or "" */
	struct fdstore_page *page;      /* mapped; NULL when no memfd could be made */
	size_t page_len;
	int page_fd;
	bool page_kept;                 /* the page came from the previous process */
	bool page_stored;               /* a new page was stored */
	bool *claimed;                  /* per slot: a reader of this run holds it */
};

/*
 * Takes what the service manager handed over, and maps the state page with
 * `slots` slots (a reader's each): the previous process's, or a new one, stored
 * (the previous one's slots copied when it had another number). 0, or -errno with
 * what failed in err (the daemon carries on: it only cannot tell how long a kept
 * port was unread). What was wrong with LISTEN_* is in fs->warning.
 */
int fdstore_init(struct fdstore *fs, unsigned slots, char *err, size_t errlen);
/* Closes what was handed over and is not taken (the service manager keeps its own). */
void fdstore_fini(struct fdstore *fs);

/* A reader (FDSTORE_RX, FDSTORE_TX) of port opens device: the descriptor kept of that
 * device (st_rdev) is planned for it, whatever its name. Before fdstore_slot. */
void fdstore_want(struct fdstore *fs, const char *port, enum fdstore_role role, const char *device);

/*
 * The descriptor kept for the port's role, now the caller's; -1: none. rx, tx: the
 * one of its device (fdstore_want), *renamed when it was kept under another name
 * (the caller stores it under its own), and *gone what became of one kept under its
 * name that was not its device (after fdstore_release); pty, pts: by name.
 */
int fdstore_take(struct fdstore *fs, const char *port, enum fdstore_role role,
		 enum drv_kept *gone, bool *renamed);

/* The reader's slot in the state page (what the previous process left there for its
 * descriptor, under whichever name), or NULL without a page. */
struct fdstore_slot *fdstore_slot(struct fdstore *fs, const char *port, enum fdstore_role role);
/* The slot now carries the port's name (its descriptor stored under it). */
void fdstore_slot_name(struct fdstore_slot *s, const char *port, enum fdstore_role role);

/*
 * Gives the service manager a duplicate of fd to keep under the port's role
 * (FDSTORE=1): true when sent, false when there is no store or it is full. Forgets
 * what it keeps under that name (FDSTOREREMOVE=1): fdstore_drop. Both do nothing
 * when fs is NULL.
 */
bool fdstore_put(struct fdstore *fs, const char *port, enum fdstore_role role, int fd);
void fdstore_drop(struct fdstore *fs, const char *port, enum fdstore_role role);

/*
 * Before the ports open: each descriptor no reader wants (the config no longer has the
 * port or its device, it hung up, or its name could not be read) is forgotten there
 * and handed to `unwanted` (its name or "", the descriptor, the FIFO level its state
 * says to put back, 0: none), which closes it; its state is freed. What a port takes
 * under a new name is forgotten under the old one.
 */
void fdstore_release(struct fdstore *fs,
		     void (*unwanted)(void *ctx, const char *name, int fd, unsigned trigger_found),
		     void *ctx);

/* After a start-up that succeeded: the state no reader claimed is freed. */
void fdstore_finish(struct fdstore *fs);

/* "NAME/ROLE" as stored; FDNAME may not hold ':', which a port's name may: '+' instead. */
void fdstore_key(char *out, size_t len, const char *port, enum fdstore_role role);

#endif
