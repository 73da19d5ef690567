/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pass.h - pass = PATH: a pty for an application, relayed both ways to the device.
 *
 * portlogd stands between an application and the device. It makes a
 * pseudo-terminal, gives its slave the owner, group and mode of the config and
 * makes PATH a symbolic link to it. The port's two readers relay: the TX reader
 * reads what the application writes (the pty's master) and writes it to the
 * device; the RX reader reads the device and writes to the master. Each logs
 * what it read, whatever became of the relay.
 *
 * The master never sees a hang-up: portlogd keeps a slave descriptor of its
 * own open (and never reads it), so an application may close and reopen PATH
 * at any time, and what the device sends meanwhile waits in the pty for the
 * next reader (as in a serial port's buffer) instead of the master reporting
 * POLLHUP and EIO until some application opens PATH again. The pty starts raw
 * at the config's baud and stop bits.
 *
 * A relay never blocks a real-time thread: writes are non-blocking; what the
 * other side cannot take now waits in a bounded buffer (RELAY_BUF bytes) that
 * is written when poll says there is room; what does not fit is lost, counted
 * (STAT relay_lost=) and said in an EV relay-lost line, and the log line for
 * those bytes is written all the same.
 */
#ifndef PORTLOGD_PASS_H
#define PORTLOGD_PASS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "drv.h"

#define RELAY_BUF 65536         /* bytes held per direction while the other side takes none */
#define RELAY_SAY_NS 1000000000 /* an EV relay-lost at most this often per reason */

/* Why bytes were not relayed. */
enum relay_why { RELAY_FULL, RELAY_CLOSED, RELAY_STOP, RELAY_NWHY };
extern const char *const relay_why_name[RELAY_NWHY];

/*
 * One direction of the relay, owned by the reader that reads its bytes. The
 * device's descriptor reaches the TX reader from the RX reader, which opens
 * and reopens the device: a dup of it at each open, -1 at each loss, through
 * next_fd and the wake eventfd (as the lines thread gets its descriptor).
 */
struct relay {
	const char *to;             /* "app" or "device", for the EV line */
	int fd;                     /* where the bytes go; -1: nowhere now (counted as lost) */
	bool own_fd;                /* fd is a dup of ours, closed when replaced */
	uint8_t *buf;               /* RELAY_BUF bytes: what waits for room, from head */
	size_t head, len;
	uint64_t unsaid[RELAY_NWHY];        /* lost, not yet in an EV line */
	int64_t said_mono[RELAY_NWHY];      /* when the last EV line of that reason was pushed */
	_Atomic uint64_t lost;      /* bytes not relayed since start (STAT) */
	_Atomic int next_fd;        /* RELAY_NO_NEWS, -1 (the device was lost), or a dup */
	int wake;                   /* eventfd: next_fd was set; -1 when fd never changes */
};

#define RELAY_NO_NEWS (-2)

/* Allocates and touches the buffer. to: "app" or "device"; fd: the fixed target,
 * or -1 with handed = true for one that comes through relay_give. 0 or -errno. */
int relay_init(struct relay *r, const char *to, int fd, bool handed);
void relay_fini(struct relay *r);

/* From the thread that owns the device: its new descriptor (a dup, taken over),
 * or -1 when it was lost. */
void relay_give(struct relay *r, int fd);

/* The owner, at each wake-up: takes a descriptor given meanwhile (what waited
 * for the old one is lost), and writes what waits if poll said there is room. */
void relay_poll(struct relay *r, bool room);

/* The owner: relays n bytes just read (what cannot go now waits or is lost). */
void relay_send(struct relay *r, const uint8_t *data, size_t n);

/* The descriptor to poll for room (POLLOUT), or -1 when nothing waits. */
int relay_wants_room(const struct relay *r);

/* The owner: the text of an EV relay-lost line for one reason whose loss has
 * not been said and was last said RELAY_SAY_NS before now (any time with
 * `all`); false when there is none. Call until false. */
bool relay_say(struct relay *r, int64_t now_mono, bool all, char *text, size_t len);

/* Stopping: one last try to write what waits; the rest is lost (reason stop). */
void relay_stop(struct relay *r);

/* The pty of pass = PATH. */
struct pass {
	const struct conf_serial *cfg;
	int master;                 /* read by the TX reader, written by the RX reader */
	int slave;                  /* ours: the master never hangs up */
	char pts[64];               /* /dev/pts/N */
	enum drv_kept kept;         /* what became of the pty kept across a restart */
	bool stored;                /* master and slave are in the service manager's store:
				     * the pty and PATH outlive this process */
	/* the application's settings as last seen, for EV app-settings */
	unsigned seen_baud, seen_stop;
	enum drv_flow seen_flow;
};

/* Makes the directories above cfg->pass_path (mode 0755, as mkdir -p). Before
 * the daemon starts, so that a directory that cannot be made is a config
 * error. 0, or -errno with the directory that failed in dir. */
int pass_prepare(const struct conf_serial *cfg, char *dir, size_t len);

/*
 * Makes the pty, its owner, group and mode, and the link (replacing an old
 * link). 0, or -errno with what failed, and what to do, in err. master, slave:
 * the pty kept across a restart (fdstore.h), or -1; taken over either way
 * (ps->kept says what became of them). A pair that has not hung up is the pty
 * again, as the application left it (its settings are not touched; owner, group,
 * mode and the link are the config's).
 */
int pass_open(struct pass *ps, const struct conf_serial *cfg, int master, int slave, char *err,
	      size_t errlen);
/* Removes the link if it is still ours, closes the pty; a stored pty's link stays
 * (the next process takes the pty back). Accepts a pass never opened. */
void pass_close(struct pass *ps);

/* The pty as the TX reader's port: fd = the master, path = the slave. */
void pass_attach(struct pass *ps, struct drv_serial *port);

/* The TX reader, after each packet and when idle: one ioctl (the master's view
 * of the slave's termios). True, with the fields of an EV app-settings line in
 * text, when the application changed its pty's baud, stop bits or flow control
 * to something the device does not have (it keeps the config's; data bits and
 * parity cannot be seen: Linux keeps a pty at CS8 without parity). */
bool pass_settings_changed(struct pass *ps, char *text, size_t len);

#endif
