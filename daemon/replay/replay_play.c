/* SPDX-License-Identifier: GPL-2.0-or-later */
/* replay_play.c - the replay's outputs and its player: packets on absolute deadlines. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "clock.h"
#include "reasm.h"
#include "rec.h"
#include "replay.h"

#define LEAD_NS (2 * NS_PER_MS)         /* from the player's start to the first deadline */
#define BACK_BUF 4096
#define DRAIN_IDLE_NS (2 * NS_PER_S)    /* at the end: give up on a reader this long idle */
#define LOOK_MS 20                      /* while idle or blocked: look back and for stop this often */

/* The port's settings for drv_tty_raw, drv_serial_open and pass_open. */
static void out_cfg(struct replay_out *o)
{
	struct conf_serial *c = &o->cfg;
	struct group *gr;

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", o->source);
	snprintf(c->device, sizeof(c->device), "%s", o->path);
	snprintf(c->pass_path, sizeof(c->pass_path), "%s", o->path);
	c->tty.baud = o->baud;
	c->tty.data_bits = o->format[0] ? (unsigned)(o->format[0] - '0') : 8;
	c->tty.parity = o->format[0] ? o->format[1] : 'N';
	c->tty.stop_bits = o->format[0] ? (unsigned)(o->format[2] - '0') : 1;
	c->tty.flow = DRV_FLOW_NONE;
	/* as pass's defaults: the user's, group dialout, 0660, so that a serial
	 * application that runs as its own user in dialout (gpsd) may open it */
	c->pass_uid = -1;
	c->pass_gid = (gr = getgrnam("dialout")) != NULL ? (int)gr->gr_gid : -1;
	snprintf(c->pass_group, sizeof(c->pass_group), "%s", gr != NULL ? "dialout" : "");
	c->pass_mode = 0660;
}

static int64_t char_ns(const struct replay_out *o)
{
	return reasm_char_ns(o->baud, drv_frame_bits(&o->cfg.tty));
}

static int open_one(struct replay_out *o)
{
	char err[512];
	const char *note = NULL;
	int rc, fd;

	out_cfg(o);
	o->fd = -1;
	o->pass.master = o->pass.slave = -1;
	o->port.ops = NULL;
	o->late_ns = o->baud ? char_ns(o) : REPLAY_LATE_DEFAULT_NS;
	o->split_ns = char_ns(o) * REPLAY_SPLIT_CHARS_X2 / 2;
	if (o->make_pty) {
		if (strlen(o->path) >= sizeof(o->cfg.device)) {
			fprintf(stderr, "portlogd: --pty %s: the path is too long\n", o->path);
			return -1;
		}
		rc = pass_open(&o->pass, &o->cfg, -1, -1, err, sizeof(err));
		if (rc == -EPERM && o->cfg.pass_gid != -1) {
			/* not root and not in dialout: the pty stays in the user's group */
			o->cfg.pass_gid = -1;
			rc = pass_open(&o->pass, &o->cfg, -1, -1, err, sizeof(err));
		}
		if (rc < 0) {
			fprintf(stderr, "portlogd: --pty %s: %s\n", o->path, err);
			return -1;
		}
		o->kind = REPLAY_OUT_PTY;
		o->fd = o->pass.master;
		o->pace = o->baud != 0;
		return 0;
	}
	if (strcmp(o->path, "-") == 0) {
		struct stat st;

		/* standard output as it is: blocking or not is its owner's (a non-blocking
		 * pipe is waited for with poll, REPLAY_STUCK_S at most without progress) */
		o->kind = REPLAY_OUT_FILE;
		o->fd = dup(1);
		if (o->fd < 0) {
			fprintf(stderr, "portlogd: --to -: %s\n", strerror(errno));
			return -1;
		}
		o->regular = fstat(o->fd, &st) == 0 && S_ISREG(st.st_mode);
		return 0;
	}
	/* no O_CREAT: a typo in a device's name must not make a file in /dev */
	fd = open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		fprintf(stderr, "portlogd: --to %s: cannot open: %s%s\n", o->path, strerror(errno),
			errno == ENXIO ? " (a FIFO that no one reads)" : "");
		return -1;
	}
	if (!isatty(fd) || o->baud == 0) {
		struct stat st;

		/* a file is the replay's bytes alone, as - would be */
		o->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
		if (o->regular && ftruncate(fd, 0) < 0) {
			fprintf(stderr, "portlogd: --to %s: %s\n", o->path, strerror(errno));
			close(fd);
			return -1;
		}
		if (isatty(fd))
			fprintf(stderr, "portlogd: --to %s: the log has no EV open for %s (its baud and "
				"format): the port is written as it is set\n", o->path, o->source);
		/* a file or a pipe: written whole, waited for (a pipe's reader sets the pace) */
		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
			fprintf(stderr, "portlogd: --to %s: %s\n", o->path, strerror(errno));
			close(fd);
			return -1;
		}
		o->kind = REPLAY_OUT_FILE;
		o->fd = fd;
		return 0;
	}
	close(fd);
	rc = drv_serial_open(o->path, &o->cfg.tty, -1, 0, &o->port, &note);
	if (rc < 0) {
		fprintf(stderr, "portlogd: --to %s: cannot open it at %u %s: %s%s\n", o->path, o->baud,
			o->format, strerror(-rc),
			rc == -EBUSY ? " (another program has it: a logger, a terminal)" : "");
		return -1;
	}
	o->kind = REPLAY_OUT_TTY;
	o->fd = o->port.fd;
	o->pace = note != NULL;         /* a pty: nothing else spaces the bytes */
	return 0;
}

static void close_one(struct replay_out *o)
{
	if (o->kind == REPLAY_OUT_PTY)
		pass_close(&o->pass);
	else if (o->kind == REPLAY_OUT_TTY)
		drv_serial_close(&o->port);
	else if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
}

int replay_open(struct replay *r)
{
	for (unsigned i = 0; i < r->nout; i++)
		if (open_one(&r->out[i]) < 0) {
			while (i-- > 0)
				close_one(&r->out[i]);
			return -1;
		}
	return 0;
}

/* Has a process other than us the slave open? Without a slave descriptor of
 * ours, the master reports POLLHUP until one opens it. */
static bool app_has_it(int master)
{
	struct pollfd p = { .fd = master, .events = POLLOUT };

	return poll(&p, 1, 0) == 1 && !(p.revents & POLLHUP);
}

bool replay_wait_apps(struct replay *r)
{
	for (unsigned i = 0; i < r->nout; i++) {
		struct replay_out *o = &r->out[i];
		bool said = false;

		if (o->kind != REPLAY_OUT_PTY)
			continue;
		/* pass_open keeps a slave of ours; let go of it until the application comes */
		close(o->pass.slave);
		o->pass.slave = -1;
		while (!app_has_it(o->fd)) {
			if (!said)
				fprintf(stderr, "portlogd: --pty %s: waiting for an application to open "
					"it\n", o->path);
			said = true;
			if (atomic_load(&r->stop))
				return false;
			nanosleep(&(struct timespec){ 0, 10 * NS_PER_MS }, NULL);
		}
		/* ours again, never read: the master never hangs up, and what is written
		 * while the application reopens LINK waits in the pty */
		o->pass.slave = open(o->pass.pts, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	}
	return true;
}

/* ---- the player: no allocation, no stdio ---- */

static int64_t deadline(const struct replay *r, const struct replay_out *o)
{
	const struct replay_pkt *p = &r->pkt[o->idx[o->next]];
	int64_t d;

	if (r->speed == 0)
		return r->start_ns;     /* everything is due: the outputs set the pace */
	d = r->start_ns + p->at_ns;
	return o->pace ? d + (int64_t)o->sent * p->char_ns : d;
}

/* Bytes of the packet in progress that one write takes now. */
static uint32_t chunk(const struct replay *r, const struct replay_out *o, const struct replay_pkt *p)
{
	uint32_t left = p->len - o->sent, n;

	if (!o->pace || p->char_ns == 0 || r->speed == 0)
		return left;
	n = (uint32_t)((REPLAY_PACE_NS + p->char_ns - 1) / p->char_ns);
	return n < left ? n : left;
}

static void publish_late(struct replay *r, size_t i)
{
	size_t n = atomic_load_explicit(&r->nlate, memory_order_relaxed);

	r->late[n] = i;
	/* release: the entry, and the packet's figures, before the count that shows it */
	atomic_store_explicit(&r->nlate, n + 1, memory_order_release);
}

/* One write of output o's packet in progress; its deadline was `due`. */
static void step(struct replay *r, struct replay_out *o, int64_t due)
{
	size_t i = o->idx[o->next];
	struct replay_pkt *p = &r->pkt[i];
	uint32_t n = chunk(r, o, p);
	int queued = 0;
	ssize_t w;
	int64_t late, now;

	if (o->kind == REPLAY_OUT_TTY && !o->pace && o->sent == 0 && ioctl(o->fd, TIOCOUTQ, &queued) < 0)
		queued = 0;
	w = write(o->fd, r->data + p->off + o->sent, n);
	if (w < 0) {
		if (errno == EAGAIN)
			o->blocked = true;
		else if (errno != EINTR)
			o->err = errno;         /* a full disk: ENOSPC, at once */
		return;
	}
	/* a real port: the bytes still in its queue go first, at the baud */
	now = mono_ns();
	o->progress_ns = now;
	late = now - due + (int64_t)queued * p->char_ns;
	if (r->speed == 0)
		late = 0;
	if (o->sent == 0) {
		p->late_ns = late;
		p->pause_ns = 0;
	} else if (now - o->last_write_ns > p->pause_ns) {
		p->pause_ns = now - o->last_write_ns;
	}
	o->last_write_ns = now;
	o->sent += (uint32_t)w;
	/* a pipe or a device took what it had room for: wait for POLLOUT. A regular
	 * file's short write is a full disk (or a size limit): written again at once,
	 * the write says why (ENOSPC, EFBIG) and the output stops */
	if ((uint32_t)w < n && !o->regular)
		o->blocked = true;
	if (o->sent < p->len)
		return;
	p->played = true;
	r->played++;
	if (r->speed != 0 && (p->late_ns > o->late_ns || (o->pace && p->pause_ns > o->split_ns)))
		publish_late(r, i);
	o->next++;
	o->sent = 0;
}

/* What the other side sent back: read and counted (a pty that nobody reads fills). */
static void drain_back(struct replay_out *o)
{
	uint8_t buf[BACK_BUF];
	ssize_t n;

	while ((n = read(o->fd, buf, sizeof(buf))) > 0)
		o->back += (uint64_t)n;
}

/* The output whose next write is due first (ties: the older packet); NULL when all are done. */
static struct replay_out *next_out(struct replay *r, int64_t *due)
{
	struct replay_out *best = NULL;
	int64_t best_t = 0;

	for (unsigned i = 0; i < r->nout; i++) {
		struct replay_out *o = &r->out[i];
		int64_t d, t;

		if (o->next == o->n || o->err != 0 || o->blocked)
			continue;
		d = deadline(r, o);
		t = r->pkt[o->idx[o->next]].t;
		if (best == NULL || d < *due || (d == *due && t < best_t)) {
			best = o;
			*due = d;
			best_t = t;
		}
	}
	return best;
}

static bool busy(const struct replay *r)
{
	for (unsigned i = 0; i < r->nout; i++)
		if (r->out[i].next < r->out[i].n && r->out[i].err == 0)
			return true;
	return false;
}

/* What the other sides sent back (read, counted), and room where a write was
 * refused: poll for at most timeout_ms. A file output (a pipe, a FIFO) is only
 * waited for, and stopped when it took nothing for REPLAY_STUCK_S: its reader
 * may be gone for good (a pty's or a port's reader is the application's pace). */
static void look(struct replay *r, int timeout_ms)
{
	struct pollfd pfd[REPLAY_OUT_MAX];
	int64_t now;
	int n;

	for (unsigned i = 0; i < r->nout; i++) {
		struct replay_out *q = &r->out[i];
		bool file = q->kind == REPLAY_OUT_FILE;

		pfd[i] = (struct pollfd){
			.fd = q->err || (file && !q->blocked) ? -1 : q->fd,
			.events = (short)((file ? 0 : POLLIN) | (q->blocked ? POLLOUT : 0)),
		};
	}
	n = poll(pfd, r->nout, timeout_ms);
	now = mono_ns();
	for (unsigned i = 0; i < r->nout; i++) {
		struct replay_out *q = &r->out[i];

		if (n > 0 && (pfd[i].revents & POLLIN))
			drain_back(q);
		if (n > 0 && (pfd[i].revents & (POLLOUT | POLLERR)))
			q->blocked = false;     /* a POLLERR shows in the next write */
		else if (q->blocked && q->kind == REPLAY_OUT_FILE && q->err == 0
			 && now - q->progress_ns > REPLAY_STUCK_S * NS_PER_S) {
			q->stuck = true;
			q->err = EAGAIN;
		}
	}
}

void *replay_play(void *arg)
{
	struct replay *r = arg;

	/* SCHED_OTHER sleeps take 50 us of slack by default: not on a deadline */
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	r->start_ns = mono_ns() + LEAD_NS;
	for (unsigned i = 0; i < r->nout; i++)
		r->out[i].progress_ns = r->start_ns;
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed) && busy(r)) {
		int64_t due = 0, now = mono_ns();
		struct replay_out *o = next_out(r, &due);
		struct timespec ts;

		if (o != NULL && due <= now) {
			step(r, o, due);
			continue;
		}
		look(r, o == NULL ? LOOK_MS : 0);
		if (o == NULL)
			continue;       /* every output with work to do took no more: waited for room */
		/* clock_nanosleep to an absolute deadline, as the timer thread does; a long
		 * silence is slept in pieces, to read what comes back and to see a stop */
		ts = ns_to_ts(due - now > LOOK_MS * NS_PER_MS ? now + LOOK_MS * NS_PER_MS : due);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	/* release: every packet's figures before the main thread reads them */
	atomic_store_explicit(&r->done, true, memory_order_release);
	return NULL;
}

/* ---- the end ---- */

/* Bytes written to a pty that its reader has not taken yet (our slave sees its input queue). */
static int unread(const struct replay_out *o)
{
	int n = 0;

	if (o->kind != REPLAY_OUT_PTY || o->pass.slave < 0 || ioctl(o->pass.slave, FIONREAD, &n) < 0)
		return 0;
	return n;
}

uint64_t replay_close(struct replay *r)
{
	int64_t last_change = mono_ns(), linger = 100 * NS_PER_MS;
	int left = 0, before = -1;
	uint64_t lost = 0;

	/* the applications take what is still in their ptys (a real port: its UART sends
	 * it); then a pause, so that a reader that frames by silence ends the last packet */
	for (;;) {
		left = 0;
		for (unsigned i = 0; i < r->nout; i++) {
			left += unread(&r->out[i]);
			if (r->out[i].kind == REPLAY_OUT_PTY)
				drain_back(&r->out[i]);
		}
		if (left != before)
			last_change = mono_ns();
		before = left;
		if (left == 0 || mono_ns() - last_change > DRAIN_IDLE_NS || atomic_load(&r->stop))
			break;
		nanosleep(&(struct timespec){ 0, 10 * NS_PER_MS }, NULL);
	}
	for (unsigned i = 0; i < r->nout; i++) {
		struct replay_out *o = &r->out[i];

		if (o->kind == REPLAY_OUT_TTY && !o->pace)
			(void)tcdrain(o->fd);
		if (20 * char_ns(o) > linger)
			linger = 20 * char_ns(o);
	}
	/* at a baud of a few, 20 characters are minutes: a reader that frames by
	 * silence is given 2 s at most */
	if (linger > DRAIN_IDLE_NS)
		linger = DRAIN_IDLE_NS;
	if (!atomic_load(&r->stop)) {
		struct timespec ts = ns_to_ts(linger);

		nanosleep(&ts, NULL);
	}
	for (unsigned i = 0; i < r->nout; i++) {
		lost += (uint64_t)unread(&r->out[i]);
		close_one(&r->out[i]);
	}
	return lost;
}
