/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pass.c - pass = PATH: the application's pty, and the relay between it and the device. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "fmt.h"
#include "pass.h"

const char *const relay_why_name[RELAY_NWHY] = {
	[RELAY_FULL] = "full", [RELAY_CLOSED] = "closed", [RELAY_STOP] = "stop",
};

/* ---- the relay ---- */

int relay_init(struct relay *r, const char *to, int fd, bool handed)
{
	memset(r, 0, sizeof(*r));
	r->to = to;
	r->fd = fd;
	r->wake = -1;
	atomic_init(&r->lost, 0);
	atomic_init(&r->next_fd, RELAY_NO_NEWS);
	for (int i = 0; i < RELAY_NWHY; i++)
		r->said_mono[i] = INT64_MIN / 2;
	r->buf = malloc(RELAY_BUF);
	if (r->buf == NULL)
		return -ENOMEM;
	memset(r->buf, 0, RELAY_BUF);   /* touched now: no page fault in a real-time thread */
	if (handed) {
		r->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (r->wake < 0) {
			free(r->buf);
			r->buf = NULL;
			return -errno;
		}
	}
	return 0;
}

void relay_fini(struct relay *r)
{
	int fd = atomic_exchange(&r->next_fd, RELAY_NO_NEWS);

	if (fd >= 0)
		close(fd);
	if (r->own_fd && r->fd >= 0)
		close(r->fd);
	if (r->wake >= 0)
		close(r->wake);
	free(r->buf);
	r->buf = NULL;
	r->fd = r->wake = -1;
}

void relay_give(struct relay *r, int fd)
{
	int old = atomic_exchange(&r->next_fd, fd);

	if (old >= 0)
		close(old);     /* never taken: the device was lost or reopened meanwhile */
	(void)eventfd_write(r->wake, 1);        /* an eventfd add cannot fail */
}

/* Only the producer (the relay's owner) writes it: load + store is enough. */
static void lose(struct relay *r, enum relay_why why, size_t n)
{
	if (n == 0)
		return;
	r->unsaid[why] += n;
	atomic_store_explicit(&r->lost, atomic_load_explicit(&r->lost, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* Writes what waits, as far as the target takes it now. */
static void flush_waiting(struct relay *r)
{
	while (r->len > 0 && r->fd >= 0) {
		size_t n = RELAY_BUF - r->head < r->len ? RELAY_BUF - r->head : r->len;
		ssize_t w = write(r->fd, r->buf + r->head, n);

		if (w <= 0) {
			if (w < 0 && errno != EAGAIN && errno != EINTR) {
				/* the device went away (EIO after a hang-up): what waits is lost;
				 * the RX reader reopens it and hands the new descriptor over */
				lose(r, RELAY_CLOSED, r->len);
				r->len = 0;
			}
			return;
		}
		r->head = (r->head + (size_t)w) % RELAY_BUF;
		r->len -= (size_t)w;
	}
	if (r->len == 0)
		r->head = 0;
}

void relay_poll(struct relay *r, bool room)
{
	if (r->wake >= 0) {
		int fd = atomic_exchange(&r->next_fd, RELAY_NO_NEWS);
		uint64_t v;

		if (fd != RELAY_NO_NEWS) {
			(void)eventfd_read(r->wake, &v);        /* clears the wake-up */
			/* what waited was for the device as it was before: lost */
			lose(r, RELAY_CLOSED, r->len);
			r->len = r->head = 0;
			if (r->own_fd && r->fd >= 0)
				close(r->fd);
			r->fd = fd;
			r->own_fd = fd >= 0;
		}
	}
	if (room)
		flush_waiting(r);
}

void relay_send(struct relay *r, const uint8_t *data, size_t n)
{
	size_t tail, first;

	if (r->buf == NULL || n == 0)
		return;
	if (r->fd < 0) {
		lose(r, RELAY_CLOSED, n);
		return;
	}
	if (r->len == 0) {
		/* the usual case: straight through */
		ssize_t w = write(r->fd, data, n);

		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			lose(r, RELAY_CLOSED, n);
			return;
		}
		if (w > 0) {
			data += w;
			n -= (size_t)w;
		}
	}
	if (n > RELAY_BUF - r->len) {
		lose(r, RELAY_FULL, n - (RELAY_BUF - r->len));
		n = RELAY_BUF - r->len;
	}
	tail = (r->head + r->len) % RELAY_BUF;
	first = RELAY_BUF - tail < n ? RELAY_BUF - tail : n;
	memcpy(r->buf + tail, data, first);
	memcpy(r->buf, data + first, n - first);
	r->len += n;
}

int relay_wants_room(const struct relay *r)
{
	return r->len > 0 ? r->fd : -1;
}

bool relay_say(struct relay *r, int64_t now_mono, bool all, char *text, size_t len)
{
	for (int i = 0; i < RELAY_NWHY; i++) {
		struct fmt_kv kv;

		if (r->unsaid[i] == 0 || (!all && now_mono - r->said_mono[i] < RELAY_SAY_NS))
			continue;
		fmt_kv_init(&kv, text, len);
		fmt_kv_str(&kv, "to", r->to);
		fmt_kv_u64(&kv, "bytes", r->unsaid[i]);
		fmt_kv_str(&kv, "reason", relay_why_name[i]);
		r->unsaid[i] = 0;
		r->said_mono[i] = now_mono;
		return true;
	}
	return false;
}

void relay_stop(struct relay *r)
{
	flush_waiting(r);
	lose(r, RELAY_STOP, r->len);
	r->len = r->head = 0;
}

/* ---- the pty ---- */

/* mkdir -p of the directory above path, each new directory 0755. */
int pass_prepare(const struct conf_serial *cfg, char *dir, size_t len)
{
	char *slash;

	snprintf(dir, len, "%s", cfg->pass_path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		bool last = *p == '\0';

		if (*p != '/' && !last)
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (last)
			return 0;
		*p = '/';
	}
}

/* The link at PATH, replacing an old link: made aside, then renamed over it. */
static int make_link(const char *target, const char *path)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s.portlogd-%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	(void)unlink(tmp);
	if (symlink(target, tmp) < 0)
		return -errno;
	if (rename(tmp, path) < 0) {
		int e = errno;

		(void)unlink(tmp);
		return -e;
	}
	return 0;
}

/* The pty's settings as the application has them now (through fd, master or slave). */
static bool look(int fd, unsigned *baud, unsigned *stop, enum drv_flow *flow)
{
	struct termios tio;

	if (tcgetattr(fd, &tio) < 0)
		return false;
	*baud = drv_tty_baud(cfgetospeed(&tio));
	*stop = tio.c_cflag & CSTOPB ? 2 : 1;
	*flow = tio.c_cflag & CRTSCTS ? DRV_FLOW_RTSCTS
		: tio.c_iflag & IXON ? DRV_FLOW_XONXOFF : DRV_FLOW_NONE;
	return true;
}

/*
 * The pty kept across a restart: a master and our slave descriptor of the same
 * pty that has not hung up. Taken over (ps's) or closed.
 */
static enum drv_kept take_back(struct pass *ps, int master, int slave)
{
	struct pollfd pfd = { .fd = master, .events = POLLIN };
	enum drv_kept k = DRV_KEPT_YES;
	struct stat a, b;
	int fl;

	if (master < 0 || slave < 0 || ptsname_r(master, ps->pts, sizeof(ps->pts)) != 0
	    || fstat(slave, &a) < 0 || stat(ps->pts, &b) < 0 || a.st_rdev != b.st_rdev)
		k = DRV_KEPT_OTHER;
	else if (poll(&pfd, 1, 0) < 0 || (pfd.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0)
		k = DRV_KEPT_HUNG_UP;
	else if ((fl = fcntl(master, F_GETFL)) < 0 || fcntl(master, F_SETFL, fl | O_NONBLOCK) < 0)
		k = DRV_KEPT_OTHER;
	if (k == DRV_KEPT_YES) {
		ps->master = master;
		ps->slave = slave;
		return k;
	}
	ps->pts[0] = '\0';
	if (master >= 0)
		close(master);
	if (slave >= 0)
		close(slave);
	return k;
}

int pass_open(struct pass *ps, const struct conf_serial *cfg, int master, int slave, char *err,
	      size_t errlen)
{
	struct stat st;
	int rc;
	const char *what;

	memset(ps, 0, sizeof(*ps));
	ps->cfg = cfg;
	ps->master = ps->slave = -1;
	ps->kept = master >= 0 || slave >= 0 ? take_back(ps, master, slave) : DRV_KEPT_NONE;
	if (ps->kept != DRV_KEPT_YES) {
		ps->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
		what = "cannot make a pty (/dev/ptmx)";
		if (ps->master < 0 || grantpt(ps->master) < 0 || unlockpt(ps->master) < 0
		    || ptsname_r(ps->master, ps->pts, sizeof(ps->pts)) != 0)
			goto fail_errno;
		what = "cannot open the pty's slave";
		ps->slave = open(ps->pts, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
		if (ps->slave < 0)
			goto fail_errno;
		rc = drv_tty_raw(ps->slave, &cfg->tty, false);
		if (rc < 0) {
			errno = -rc;
			what = "cannot make the pty raw";
			goto fail_errno;
		}
	}
	/* a pty taken back has the settings the application gave it, said already */
	(void)look(ps->slave, &ps->seen_baud, &ps->seen_stop, &ps->seen_flow);
	if (fchown(ps->slave, (uid_t)cfg->pass_uid, (gid_t)cfg->pass_gid) < 0) {
		snprintf(err, errlen, "pass_owner, pass_group: cannot give %s to user %s, group %s "
			 "(uid %d, gid %d): %s; fix: set pass_group to a group the service user is "
			 "in (pass_owner needs root)", ps->pts,
			 cfg->pass_owner[0] ? cfg->pass_owner : "(unchanged)", cfg->pass_group,
			 cfg->pass_uid, cfg->pass_gid, strerror(errno));
		pass_close(ps);
		return -EPERM;
	}
	what = "cannot set the pty's mode (pass_mode)";
	if (fchmod(ps->slave, (mode_t)cfg->pass_mode) < 0)
		goto fail_errno;
	if (lstat(cfg->pass_path, &st) == 0 && !S_ISLNK(st.st_mode)) {
		snprintf(err, errlen, "pass: %s exists and is not a symbolic link; remove it or "
			 "choose another path", cfg->pass_path);
		pass_close(ps);
		return -EEXIST;
	}
	rc = make_link(ps->pts, cfg->pass_path);
	if (rc < 0) {
		snprintf(err, errlen, "pass: cannot make the link %s -> %s: %s; fix: let the service "
			 "user write to its directory", cfg->pass_path, ps->pts, strerror(-rc));
		ps->pts[0] = '\0';      /* not ours to remove */
		pass_close(ps);
		return rc;
	}
	return 0;
fail_errno:
	rc = -errno;
	snprintf(err, errlen, "pass: %s: %s", what, strerror(errno));
	ps->pts[0] = '\0';
	pass_close(ps);
	return rc;
}

void pass_close(struct pass *ps)
{
	char target[sizeof(ps->pts)];
	ssize_t n;

	/* stored: the next process takes the pty back, and the application keeps PATH */
	if (ps->cfg != NULL && ps->pts[0] != '\0' && !ps->stored) {
		/* only our own link: a second daemon's, or the admin's file, stays */
		n = readlink(ps->cfg->pass_path, target, sizeof(target) - 1);
		if (n > 0 && (size_t)n < sizeof(target)) {
			target[n] = '\0';
			if (strcmp(target, ps->pts) == 0)
				(void)unlink(ps->cfg->pass_path);
		}
	}
	if (ps->slave >= 0)
		close(ps->slave);
	if (ps->master >= 0)
		close(ps->master);
	ps->slave = ps->master = -1;
	ps->cfg = NULL;
}

/* The master's close hook: the pty outlives every reopen of its reader. */
static void keep(void *state, int fd)
{
	(void)state;
	(void)fd;
}

static const struct drv_serial_ops pass_ops = {
	.name = "pass",
	.open = NULL,           /* made once by pass_open, before the threads */
	.close = keep,          /* closed by pass_close, at the end */
};

void pass_attach(struct pass *ps, struct drv_serial *port)
{
	port->ops = &pass_ops;
	port->state = ps;
	port->fd = ps->master;
	snprintf(port->path, sizeof(port->path), "%s", ps->pts);
	port->low_latency = 0;          /* n/a: a pty */
	port->latency_timer = -ENODEV;
	port->latency_err = 0;
	port->lock_fd = -1;
	port->kept = ps->kept;
	port->stored = false;           /* the pty is stored by the port (pass.h, stored) */
	port->dlv = (struct delivery){ .kind = DELIVERY_DIRECT, .what = "pty", .latency_ms = -1 };
}

static const char *flow_name(enum drv_flow f)
{
	static const char *const names[] = {
		[DRV_FLOW_NONE] = "none", [DRV_FLOW_RTSCTS] = "rtscts",
		[DRV_FLOW_XONXOFF] = "xonxoff", [DRV_FLOW_DTRDSR] = "dtrdsr",
	};

	return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f] : "?";
}

bool pass_settings_changed(struct pass *ps, char *text, size_t len)
{
	const struct conf_serial *c = ps->cfg;
	unsigned baud, stop;
	enum drv_flow flow;
	char format[4] = { 0 };
	struct fmt_kv kv;

	/* a master's termios ioctls act on its slave (tty_pair_get_tty): what the
	 * application set, without a descriptor of the application's */
	if (!look(ps->master, &baud, &stop, &flow))
		return false;
	if (baud == ps->seen_baud && stop == ps->seen_stop && flow == ps->seen_flow)
		return false;
	ps->seen_baud = baud;
	ps->seen_stop = stop;
	ps->seen_flow = flow;
	if (baud == c->tty.baud && stop == c->tty.stop_bits && flow == c->tty.flow)
		return false;   /* what the device has: nothing to say */
	fmt_kv_init(&kv, text, len);
	fmt_kv_u64(&kv, "baud", baud);
	fmt_kv_u64(&kv, "stop_bits", stop);
	fmt_kv_str(&kv, "flow", flow_name(flow));
	format[0] = (char)('0' + c->tty.data_bits % 10);
	format[1] = c->tty.parity;
	format[2] = (char)('0' + c->tty.stop_bits % 10);
	fmt_kv_u64(&kv, "device_baud", c->tty.baud);
	fmt_kv_str(&kv, "device_format", format);
	fmt_kv_str(&kv, "device_flow", flow_name(c->tty.flow));
	return true;
}
