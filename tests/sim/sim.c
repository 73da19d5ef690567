/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sim.c - the traffic simulator's engine, shared by portlogd-sim and the end-to-end tests. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/sockios.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"
#include "testutil.h"

static int64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static unsigned uniform(uint64_t *rng, unsigned lo, unsigned hi)
{
	if (hi <= lo)
		return lo;
	return lo + (unsigned)(tu_rand(rng) % (hi - lo + 1));
}

int sim_dev_parse(const char *s, struct sim_dev *d)
{
	char *end;
	unsigned long v;

	*d = (struct sim_dev){ .kind = SIM_DEV_NONE };
	if (strcmp(s, "direct") == 0) {
		d->kind = SIM_DEV_DIRECT;
		return 0;
	}
	if (strncmp(s, "fifo:", 5) == 0) {
		v = strtoul(s + 5, &end, 10);
		if (end == s + 5 || *end != '\0' || (v != 1 && v != 4 && v != 8 && v != 14))
			return -EINVAL;
		*d = (struct sim_dev){ .kind = SIM_DEV_FIFO, .trigger = (unsigned)v };
		return 0;
	}
	if (strncmp(s, "usb:", 4) == 0) {
		v = strtoul(s + 4, &end, 10);
		if (end == s + 4 || *end != '\0' || v < 1 || v > 255)
			return -EINVAL;
		*d = (struct sim_dev){ .kind = SIM_DEV_USB, .latency_ms = (unsigned)v };
		return 0;
	}
	if (strncmp(s, "adapter:", 8) == 0) {
		double ms = strtod(s + 8, &end);
		unsigned long x;

		if (end == s + 8 || *end != '/' || !(ms >= 0.001 && ms <= 255))
			return -EINVAL;
		x = strtoul(end + 1, &end, 10);
		if (*end != '\0' || x < 2 || x > 512)
			return -EINVAL;
		*d = (struct sim_dev){ .kind = SIM_DEV_ADAPTER, .hold_us = (unsigned)(ms * 1000 + 0.5),
				       .xfer = (unsigned)x };
		return 0;
	}
	return -EINVAL;
}

const char *sim_dev_name(const struct sim_dev *d, char *buf, size_t len)
{
	switch (d->kind) {
	case SIM_DEV_DIRECT: snprintf(buf, len, "direct"); break;
	case SIM_DEV_FIFO: snprintf(buf, len, "fifo:%u", d->trigger); break;
	case SIM_DEV_USB: snprintf(buf, len, "usb:%u", d->latency_ms); break;
	case SIM_DEV_ADAPTER:
		snprintf(buf, len, "adapter:%u.%03u/%u", d->hold_us / 1000, d->hold_us % 1000, d->xfer);
		break;
	default: snprintf(buf, len, "none"); break;
	}
	return buf;
}

const char *sim_dev_declare(const struct sim_dev *d, char *buf, size_t len)
{
	/* an adapter holds a byte up to its latency timer and one 1 ms frame: the hold
	 * portlogd takes for an FTDI adapter it finds (drivers/delivery.c) */
	if (d->kind == SIM_DEV_USB) {
		snprintf(buf, len, "usb:%u", d->latency_ms + 1);
		return buf;
	}
	if (d->kind == SIM_DEV_ADAPTER) {
		snprintf(buf, len, "usb:%u.%03u/%u/0.2", d->hold_us / 1000, d->hold_us % 1000, d->xfer);
		return buf;
	}
	return sim_dev_name(d, buf, len);
}

int sim_lens_parse(const char *s, unsigned *lens, unsigned *n)
{
	char *end;

	*n = 0;
	do {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v == 0 || v > 65536 || *n == SIM_MAX_LENS)
			return -EINVAL;
		lens[(*n)++] = (unsigned)v;
		s = end + 1;
	} while (*end == ',');
	return *end == '\0' ? 0 : -EINVAL;
}

int sim_port_open(struct sim_port *p, const char *name, const char *link)
{
	struct termios tio;
	int slave;

	memset(p, 0, sizeof(*p));
	p->master = -1;
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->link, sizeof(p->link), "%s", link);
	if (openpty(&p->master, &slave, p->slave, NULL, NULL) < 0)
		return -errno;
	/* raw on our side too, and then let go of the slave: the daemon opens it */
	if (tcgetattr(slave, &tio) == 0) {
		cfmakeraw(&tio);
		(void)tcsetattr(slave, TCSANOW, &tio);  /* the daemon sets it again anyway */
	}
	close(slave);
	(void)fcntl(p->master, F_SETFD, FD_CLOEXEC);
	(void)fcntl(p->master, F_SETFL, fcntl(p->master, F_GETFL) | O_NONBLOCK);
	unlink(link);
	if (symlink(p->slave, link) < 0) {
		int e = errno;
		close(p->master);
		p->master = -1;
		return -e;
	}
	atomic_init(&p->done, 0);
	atomic_init(&p->stop, false);
	return 0;
}

/* What SIOCOUTQ says of one unread 1-byte write on an AF_UNIX stream socket: the
 * kernel counts the memory it holds, not bytes (unix_outq_len), so a socketpair of the
 * same kind is asked once. 0 when it cannot be found out. */
static int outq_unit(void)
{
	int sv[2], q = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	if (write(sv[0], "x", 1) != 1 || ioctl(sv[0], SIOCOUTQ, &q) < 0)
		q = 0;
	close(sv[0]);
	close(sv[1]);
	return q;
}

int sim_port_attach(struct sim_port *p, const char *name, int fd)
{
	struct stat st;
	int fl;

	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->master = fd;
	if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		p->master = -1;
		return -errno;
	}
	/* what the far end has not read yet: a fifo's FIONREAD (bytes, from either end),
	 * a socket's SIOCOUTQ (memory, see outq_unit) */
	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
		p->outq_req = FIONREAD;
		p->outq_unit = 1;
	} else {
		p->outq_req = SIOCOUTQ;
		p->outq_unit = outq_unit();
	}
	atomic_init(&p->done, 0);
	atomic_init(&p->stop, false);
	return 0;
}

void sim_port_close(struct sim_port *p)
{
	if (p->master >= 0)
		close(p->master);
	p->master = -1;
	if (p->link[0] != '\0')
		unlink(p->link);
	free(p->data);
	free(p->pkt);
	free(p->dlv);
	free(p->wire.arr);
	p->data = NULL;
	p->pkt = NULL;
	p->dlv = NULL;
	p->wire.arr = NULL;
}

int sim_port_drain(struct sim_port *p, int timeout_ms)
{
	int64_t end = now_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000;
	int queued = 0;

	while (ioctl(p->master, p->outq_req ? p->outq_req : SIOCOUTQ, &queued) == 0 && queued > 0) {
		struct timespec ms = { 0, 1000000 };

		if (now_ns(CLOCK_MONOTONIC) > end)
			return -ETIMEDOUT;
		nanosleep(&ms, NULL);
	}
	return 0;
}

int sim_port_wait_open(struct sim_port *p, int timeout_ms)
{
	int64_t end = now_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000;

	for (;;) {
		struct pollfd pfd = { .fd = p->master, .events = POLLOUT };
		int64_t left = end - now_ns(CLOCK_MONOTONIC);

		if (poll(&pfd, 1, 0) == 1 && !(pfd.revents & POLLHUP))
			return 0;
		if (left <= 0)
			return -ETIMEDOUT;
		/* POLLHUP is level-triggered and there is no event for "slave opened":
		 * look again every millisecond (this is a test tool, not the daemon) */
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
}

/* The longest packet cfg can make (binary sizes; NMEA and Modbus fit in 128 more). */
static unsigned longest(const struct sim_cfg *cfg)
{
	unsigned m = cfg->max_len;

	for (unsigned i = 0; i < cfg->nlens && i < SIM_MAX_LENS; i++)
		if (cfg->lens[i] > m)
			m = cfg->lens[i];
	return m;
}

/* Room for a packet of up to `more` bytes: its data, its record, and in wire mode
 * its bytes' arrivals and its hand-overs (at most one a byte, and two more for
 * what the device still held from before and holds after). */
static int reserve(struct sim_port *p, size_t more)
{
	if (p->data_len + more > p->data_cap) {
		size_t cap = (p->data_len + more) * 2;
		uint8_t *d = realloc(p->data, cap);
		if (d == NULL)
			return -ENOMEM;
		p->data = d;
		p->data_cap = cap;
	}
	if (p->npkt == p->pkt_cap) {
		size_t cap = p->pkt_cap ? p->pkt_cap * 2 : 1024;
		struct sim_packet *k = realloc(p->pkt, cap * sizeof(*k));
		if (k == NULL)
			return -ENOMEM;
		p->pkt = k;
		p->pkt_cap = cap;
	}
	if (p->cfg.dev.kind == SIM_DEV_NONE)
		return 0;
	if (p->ndlv + more + 2 > p->dlv_cap) {
		size_t cap = (p->ndlv + more + 2) * 2;
		struct sim_delivery *d = realloc(p->dlv, cap * sizeof(*d));
		if (d == NULL)
			return -ENOMEM;
		p->dlv = d;
		p->dlv_cap = cap;
	}
	if (more > p->wire.arr_cap) {
		int64_t *a = realloc(p->wire.arr, more * sizeof(*a));
		if (a == NULL)
			return -ENOMEM;
		p->wire.arr = a;
		p->wire.arr_cap = more;
	}
	return 0;
}

static unsigned make_nmea(struct sim_port *p, uint8_t *out)
{
	static const char *const talkers[] = { "GPGGA", "GPRMC", "GPGSA", "GPVTG" };
	unsigned n = p->npkt;
	char body[96];
	uint8_t cs = 0;
	int len;

	len = snprintf(body, sizeof(body), "%s,%02u%02u%02u.%02u,4807.%03u,N,01131.%03u,E,1,08,0.9,545.4,M",
		       talkers[n % 4], n / 360000 % 24, n / 6000 % 60, n / 100 % 60, n % 100,
		       (unsigned)(tu_rand(&p->rng) % 1000), (unsigned)(tu_rand(&p->rng) % 1000));
	for (int i = 0; i < len; i++)
		cs ^= (uint8_t)body[i];
	return (unsigned)sprintf((char *)out, "$%s*%02X\r\n", body, cs);
}

uint16_t sim_modbus_crc(const uint8_t *p, size_t n)
{
	uint16_t crc = 0xffff;

	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int b = 0; b < 8; b++)
			crc = crc & 1 ? (uint16_t)(crc >> 1 ^ 0xa001) : (uint16_t)(crc >> 1);
	}
	return crc;
}

/* A request (req NULL), or the response to req. */
static unsigned make_modbus(struct sim_port *p, uint8_t *out, const uint8_t *req)
{
	unsigned n = 0, count;
	uint16_t crc;

	if (req == NULL) {
		unsigned addr = (unsigned)(tu_rand(&p->rng) % 1000);

		count = 1 + (unsigned)(tu_rand(&p->rng) % 8);
		out[n++] = (uint8_t)(1 + tu_rand(&p->rng) % 3);
		out[n++] = tu_rand(&p->rng) % 2 ? 3 : 16;
		out[n++] = (uint8_t)(addr >> 8);
		out[n++] = (uint8_t)addr;
		out[n++] = 0;
		out[n++] = (uint8_t)count;
		if (out[1] == 16) {
			out[n++] = (uint8_t)(2 * count);
			for (unsigned i = 0; i < 2 * count; i++)
				out[n++] = (uint8_t)tu_rand(&p->rng);
		}
	} else {
		out[n++] = req[0];
		out[n++] = req[1];
		count = req[5];
		if (req[1] == 3) {
			out[n++] = (uint8_t)(2 * count);
			for (unsigned i = 0; i < 2 * count; i++)
				out[n++] = (uint8_t)tu_rand(&p->rng);
		} else {
			memcpy(out + n, req + 2, 4);        /* address and count, echoed */
			n += 4;
		}
	}
	crc = sim_modbus_crc(out, n);
	out[n++] = (uint8_t)crc;
	out[n++] = (uint8_t)(crc >> 8);
	return n;
}

/* The master is non-blocking so that a daemon that went away cannot hang us.
 * *done says how much went out, also when it fails halfway. */
static int write_all(struct sim_port *p, const uint8_t *buf, size_t len, size_t *done)
{
	*done = 0;
	while (len > 0) {
		ssize_t n = write(p->master, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pfd = { .fd = p->master, .events = POLLOUT };

				if (atomic_load(&p->stop))
					return -ECANCELED;
				(void)poll(&pfd, 1, 100);
				/* the reader closed the device: nobody will make room */
				if (pfd.revents & POLLHUP)
					return -EPIPE;
				continue;
			}
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
		*done += (size_t)n;
	}
	return 0;
}

static void sleep_until(int64_t t_mono)
{
	struct timespec ts = { .tv_sec = t_mono / 1000000000, .tv_nsec = t_mono % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* ---- a socket's or fifo's far end (sim_port_attach), which reads when it can ---- */

/* Hand-over d was late until t (its write returned, or the far end had not read it
 * yet): the packets it holds bytes of say so. */
static void late_until(struct sim_port *p, const struct sim_delivery *d, int64_t t)
{
	for (size_t k = d->pkt; k < p->npkt && p->pkt[k].off < d->off + d->len; k++)
		if (t - d->due > p->pkt[k].late_max_ns)
			p->pkt[k].late_max_ns = t - d->due;
}

/* How far back far_unread looks for unread hand-overs (a lower bound beyond). */
#define SIM_UNREAD_WALK 1024

/*
 * Attached to a socket or fifo, at now: the hand-overs (wire mode) its far end has not
 * read yet were late until now at least (their packets' late_max_ns says so: the
 * emulated chip got them that much late, and saw the silence before them longer by as
 * much). Returns how many writes (a fifo: bytes) wait unread; 0 for a pty.
 */
static size_t far_unread(struct sim_port *p, int64_t now)
{
	int q = 0;
	size_t unread, left;

	if (p->outq_unit <= 0 || ioctl(p->master, p->outq_req, &q) < 0)
		return 0;
	unread = ((size_t)q + (size_t)p->outq_unit - 1) / (size_t)p->outq_unit;
	if (q < p->outq_last || unread <= 1 || p->outq_taken == 0)
		p->outq_taken = now;
	p->outq_last = q;
	left = unread;
	for (size_t i = p->ndlv; i-- > 0 && left > 0 && p->ndlv - i <= SIM_UNREAD_WALK;) {
		struct sim_delivery *d = &p->dlv[i];

		if (d->lost)
			continue;
		late_until(p, d, now);
		d->t_unread = now;
		left -= p->outq_unit == 1 ? (d->len < left ? d->len : left) : 1;
	}
	return unread;
}

/* How often far_watch asks while something waits unread. */
#define SIM_FAR_POLL_NS 100000

/*
 * Until t, while the far end leaves bytes unread, asked again every SIM_FAR_POLL_NS:
 * in wire mode, so that a packet's last hand-overs, after which nothing is written for
 * a while, are seen taken late as well (far_unread); otherwise the last packet written
 * has not ended for the far end, and its t_last_mono moves on, so that the silence
 * after it is judged as the far end saw it (QEMU's 16550A at trigger 1 takes a byte
 * only once the guest has emptied its FIFO: a burst trickles in at the guest's pace).
 */
static void far_watch(struct sim_port *p, int64_t t)
{
	int64_t now;

	while (p->outq_req != 0 && (now = now_ns(CLOCK_MONOTONIC)) + SIM_FAR_POLL_NS < t
	       && far_unread(p, now) > 0) {
		struct sim_packet *last = p->npkt > 0 ? &p->pkt[p->npkt - 1] : NULL;

		if (p->cfg.dev.kind == SIM_DEV_NONE && last != NULL && now > last->t_last_mono)
			last->t_last_mono = now;
		sleep_until(now + SIM_FAR_POLL_NS);
	}
}

/* The next packet of p's kind, at the end of its data (room reserved); its length.
 * req: for SIM_MODBUS, the request to answer, or NULL for a request. */
static unsigned make_packet(struct sim_port *p, const struct sim_cfg *cfg, const uint8_t *req)
{
	uint8_t *buf = p->data + p->data_len;
	unsigned len;

	if (cfg->kind == SIM_NMEA)
		return make_nmea(p, buf);
	if (cfg->kind == SIM_MODBUS)
		return make_modbus(p, buf, req);
	len = cfg->nlens > 0 ? cfg->lens[p->npkt % cfg->nlens]
	      : uniform(&p->rng, cfg->min_len, cfg->max_len);
	for (unsigned i = 0; i < len; i++)
		buf[i] = (uint8_t)tu_rand(&p->rng);
	return len;
}

/* How many fragments a packet of len bytes is cut into: 1..max_frags, at random. */
static unsigned frag_count(struct sim_port *p, const struct sim_cfg *cfg, unsigned len)
{
	unsigned frags = cfg->max_frags < SIM_MAX_FRAGS ? cfg->max_frags : SIM_MAX_FRAGS;

	return uniform(&p->rng, 1, frags < len ? frags : len);
}

/* The length of fragment f of frags, when sent of the packet's len bytes came before. */
static unsigned frag_len(struct sim_port *p, unsigned len, unsigned sent, unsigned f,
			 unsigned frags)
{
	return f + 1 == frags ? len - sent : uniform(&p->rng, 1, len - sent - (frags - f - 1));
}

/*
 * Writes the len bytes at the end of p's data as one packet, in fragments,
 * starting at *next (CLOCK_MONOTONIC), and records it; *next becomes the time
 * of its last write's return (and the line's end at cfg->baud). 0 or -errno.
 */
static int play(struct sim_port *p, const struct sim_cfg *cfg, unsigned len, int64_t *next)
{
	struct sim_packet *pk;
	unsigned frags, sent = 0;
	size_t done;
	int64_t prev_end = 0, prev_start = 0, pause, line_end;
	uint8_t *buf = p->data + p->data_len;
	int rc;

	pk = &p->pkt[p->npkt];
	*pk = (struct sim_packet){ .off = (uint32_t)p->data_len, .len = len };
	frags = frag_count(p, cfg, len);
	pk->nfrag = frags;
	for (unsigned f = 0; f < frags; f++) {
		unsigned n = frag_len(p, len, sent, f, frags);
		int64_t start;

		if (f == 0)
			far_watch(p, *next);
		sleep_until(*next);
		start = now_ns(CLOCK_MONOTONIC);
		pk->frag_off[f] = sent;
		pk->frag_real[f] = now_ns(CLOCK_REALTIME);
		if (f == 0) {
			pk->t_first_real = now_ns(CLOCK_REALTIME);
			pk->t_first_mono = start;
		}
		if ((rc = write_all(p, buf + sent, n, &done)) < 0) {
			p->error = -rc;
			if (sent + done > 0) {
				/* what went out is on the line: recorded as a short packet
				 * (not counted in `done`: it was not completely written) */
				pk->len = (uint32_t)(sent + done);
				pk->nfrag = f + 1;
				pk->t_last_mono = now_ns(CLOCK_MONOTONIC);
				p->data_len += pk->len;
				p->npkt++;
			}
			return rc;
		}
		prev_end = now_ns(CLOCK_MONOTONIC);
		/*
		 * The bytes of a write enter the pty somewhere between its start
		 * and its return, and this thread can be preempted on either side
		 * of that. So the silence a reader may see before this write's
		 * last byte is at most its return minus the previous write's
		 * start (for the first write: its own duration, which covers a
		 * wait for room inside write_all).
		 */
		pause = prev_end - (f == 0 ? start : prev_start);
		pk->frag_pause[f] = f == 0 ? 0 : pause;
		if (pause > pk->max_intra_gap_ns)
			pk->max_intra_gap_ns = pause;
		prev_start = start;
		sent += n;
		*next = prev_end + (int64_t)uniform(&p->rng, 0, cfg->intra_gap_max_us) * 1000;
	}
	/* a real line takes 10 bit times a byte: the next packet cannot start before
	 * this one would have gone out (fragments are not paced: a device that
	 * delivers at once, as QEMU's UART does, would see gaps inside packets) */
	line_end = cfg->baud ? pk->t_first_mono + (int64_t)len * 10 * 1000000000 / cfg->baud : 0;
	pk->t_last_mono = prev_end;
	p->data_len += len;
	p->npkt++;
	atomic_store(&p->done, p->npkt);
	*next = prev_end > line_end ? prev_end : line_end;
	return 0;
}

/* ---- wire mode: the wire's schedule and the device between it and the pty ---- */

/*
 * Waits until due: a sleep, and the last spin_us spun (a wake-up from a sleep can
 * be tens of microseconds late here; a character at 921600 baud is 11), but
 * only when the hand-over before was at least 4 spins earlier. A SCHED_FIFO
 * thread that spins holds back the pty's kernel worker (SCHED_OTHER) on its CPU,
 * and the reader would see the bytes late, which the records here cannot show;
 * spinning at most a quarter of the time leaves it room. The first hand-over
 * after a silence, the one a packet's first byte is dated by, is always spun.
 */
static void wait_due(int64_t due, int64_t prev_due, unsigned spin_us)
{
	int64_t spin = (int64_t)spin_us * 1000, wake = due - spin;

	if (due - prev_due < 4 * spin)
		wake = due;
	if (now_ns(CLOCK_MONOTONIC) < wake)
		sleep_until(wake);
	while (now_ns(CLOCK_MONOTONIC) < due)
		tu_relax();
}

/*
 * The device hands over its n oldest bytes (the next n not yet handed over) at
 * due: written to the pty (or socket, or fifo) then, and recorded, with the
 * lateness given to every packet they belong to; or lost, when the far end of a
 * socket or fifo has stopped reading (far_unread). A FIFO written so late that the
 * bytes arriving meanwhile would not have fitted beside them is marked: a real one
 * would have lost a byte (the simulator loses none). 0 or -errno.
 */
static int deliver(struct sim_port *p, int64_t due, size_t n)
{
	struct sim_wire *w = &p->wire;
	struct sim_delivery *d = &p->dlv[p->ndlv];
	size_t done, end = w->delivered + n;
	size_t unread;
	int rc = 0;

	far_watch(p, due - (int64_t)p->cfg.spin_us * 1000);
	wait_due(due, p->ndlv > 0 ? p->dlv[p->ndlv - 1].due : INT64_MIN / 2, p->cfg.spin_us);
	*d = (struct sim_delivery){ .off = (uint32_t)w->delivered, .len = (uint32_t)n, .due = due,
				    .pkt = (uint32_t)w->pkt_at };
	d->t_write = now_ns(CLOCK_MONOTONIC);
	/* lost: more than lose_unread wait unread and the far end took none for lose_ms */
	unread = far_unread(p, d->t_write);
	if (p->cfg.lose_unread > 0 && unread > p->cfg.lose_unread
	    && d->t_write - p->outq_taken > (int64_t)p->cfg.lose_ms * 1000000) {
		d->lost = true;
		d->t_write = due;       /* nothing written: no lateness */
	} else {
		rc = write_all(p, p->data + w->delivered, n, &done);
	}
	d->t_ret = d->lost ? due : now_ns(CLOCK_MONOTONIC);
	if (rc < 0) {
		p->error = -rc;
		return rc;
	}
	p->ndlv++;
	for (size_t k = w->pkt_at; k < p->npkt && p->pkt[k].off < end; k++) {
		struct sim_packet *pk = &p->pkt[k];

		if (pk->ndlv++ == 0) {
			pk->dlv_first = (uint32_t)(p->ndlv - 1);
			pk->late_min_ns = pk->late_max_ns = d->t_write - due;
		}
		if (d->t_write - due < pk->late_min_ns)
			pk->late_min_ns = d->t_write - due;
		if (d->lost)        /* the part of the hand-over that is this packet's */
			pk->lost += (uint32_t)((end < pk->off + pk->len ? end : pk->off + pk->len)
					       - (d->off > pk->off ? d->off : pk->off));
	}
	if (p->cfg.dev.kind == SIM_DEV_FIFO) {
		size_t more = 0;

		/* the packet on the wire: held bytes of the one before are all in this */
		for (size_t i = end > w->arr_off ? end : w->arr_off;
		     i < w->arr_off + w->arr_n && w->arr[i - w->arr_off] <= d->t_ret; i++)
			more++;
		if (n + more > SIM_FIFO_SIZE) {
			d->overrun = true;
			p->overruns++;
		}
	}
	late_until(p, d, d->t_ret);
	w->delivered = end;
	while (w->pkt_at < p->npkt && p->pkt[w->pkt_at].off + p->pkt[w->pkt_at].len <= end)
		w->pkt_at++;
	atomic_store(&p->done, w->pkt_at);
	return 0;
}

/* When the device hands over what it holds (w->held > 0) if no byte comes first. */
static int64_t dev_due(const struct sim_port *p)
{
	const struct sim_wire *w = &p->wire;

	if (p->cfg.dev.kind == SIM_DEV_USB) {
		/* the latency timer expires every period from its last restart (a
		 * transfer, with data or status only); the first expiry at or after
		 * the first byte held takes it */
		int64_t period = (int64_t)p->cfg.dev.latency_ms * 1000000;
		int64_t k = (w->first_arr - w->last_send + period - 1) / period;
		int64_t due = w->last_send + (k < 1 ? 1 : k) * period;

		return w->full_at < due ? w->full_at : due;
	}
	if (p->cfg.dev.kind == SIM_DEV_ADAPTER)
		return w->last_arr + (int64_t)p->cfg.dev.hold_us * 1000;  /* its receive timeout */
	return w->last_arr + 4 * w->char_ns;        /* the FIFO's RX timeout */
}

/* Hands over what the device would before a byte that arrives at t (INT64_MAX:
 * no byte comes; everything). A hand-over at t itself waits: it takes that byte. */
static int dev_before(struct sim_port *p, int64_t t)
{
	struct sim_wire *w = &p->wire;

	while (w->held > 0) {
		int64_t due = dev_due(p);
		int rc;

		if (due >= t)
			return 0;
		if ((rc = deliver(p, due, w->held)) < 0)
			return rc;
		w->held = 0;
		w->last_send = due;
		w->full_at = INT64_MAX;
	}
	return 0;
}

/* A byte arrives at t (its stop bit ends): into the device, and out at once if
 * that is what the device does with it. */
static int dev_arrive(struct sim_port *p, int64_t t)
{
	struct sim_wire *w = &p->wire;
	const struct sim_dev *dev = &p->cfg.dev;
	int rc;

	if (w->held++ == 0)
		w->first_arr = t;
	w->last_arr = t;
	if (dev->kind == SIM_DEV_USB) {
		/* a full packet goes at the next frame, but never two in one frame */
		if (w->held >= SIM_USB_PACKET && w->full_at == INT64_MAX) {
			int64_t ms = 1000000, f = w->frame0 + (t - w->frame0 + ms - 1) / ms * ms;

			w->full_at = f > w->last_send + ms ? f : w->last_send + ms;
		}
		return 0;
	}
	if ((dev->kind == SIM_DEV_FIFO && w->held < dev->trigger)
	    || (dev->kind == SIM_DEV_ADAPTER && w->held < dev->xfer))
		return 0;
	if ((rc = deliver(p, t, w->held)) < 0)
		return rc;
	w->held = 0;
	return 0;
}

/* Starts the wire at t0 (and a USB adapter's frames and timer with it). */
static int wire_init(struct sim_port *p, int64_t t0)
{
	const struct sim_cfg *cfg = &p->cfg;

	if (cfg->baud == 0 || (cfg->dev.kind == SIM_DEV_FIFO
			       && (cfg->dev.trigger == 0 || cfg->dev.trigger > SIM_FIFO_SIZE))
	    || (cfg->dev.kind == SIM_DEV_USB && cfg->dev.latency_ms == 0)
	    || (cfg->dev.kind == SIM_DEV_ADAPTER && (cfg->dev.hold_us == 0 || cfg->dev.xfer < 2)))
		return -EINVAL;
	p->wire.char_ns = (int64_t)10 * 1000000000 / cfg->baud;     /* 8N1 */
	p->wire.frame0 = p->wire.last_send = t0;
	p->wire.full_at = INT64_MAX;
	return 0;
}

/*
 * Puts the len bytes at the end of p's data on the wire as one packet, in
 * fragments with planned pauses, its first byte starting at *next, and records
 * it; the device hands over what it would before each byte arrives and as it
 * arrives. *next becomes the end of its last byte. 0 or -errno.
 */
static int play_wire(struct sim_port *p, const struct sim_cfg *cfg, unsigned len, int64_t *next)
{
	struct sim_wire *w = &p->wire;
	struct sim_packet *pk = &p->pkt[p->npkt];
	int64_t t = *next, real_off = now_ns(CLOCK_REALTIME) - now_ns(CLOCK_MONOTONIC);
	unsigned sent = 0;
	int rc;

	*pk = (struct sim_packet){ .off = (uint32_t)p->data_len, .len = len, .t_first_mono = t,
				   .t_first_real = t + real_off };
	pk->nfrag = frag_count(p, cfg, len);
	for (unsigned f = 0; f < pk->nfrag; f++) {
		unsigned n = frag_len(p, len, sent, f, pk->nfrag);
		int64_t pause = f == 0 ? 0 : (int64_t)uniform(&p->rng, 0, cfg->intra_gap_max_us) * 1000;

		t += pause;
		pk->frag_off[f] = sent;
		pk->frag_real[f] = t + real_off;
		pk->frag_pause[f] = pause;
		if (pause > pk->max_intra_gap_ns)
			pk->max_intra_gap_ns = pause;
		for (unsigned i = 0; i < n; i++) {
			t += w->char_ns;
			w->arr[sent + i] = t;
		}
		sent += n;
	}
	pk->t_last_mono = t;
	w->arr_off = p->data_len;
	w->arr_n = len;
	p->data_len += len;
	p->npkt++;
	for (unsigned i = 0; i < len; i++)
		if ((rc = dev_before(p, w->arr[i])) < 0 || (rc = dev_arrive(p, w->arr[i])) < 0)
			return rc;
	/* handed over whole but written late (this thread stalled: the host stopped its
	 * CPU), the wire waits for it, as play() does: the next silence starts its planned
	 * length after the latest write, never shorter for the simulator's own stall (a far
	 * end that has not read is the device's lateness: the wire does not wait for it) */
	if (w->held == 0 && pk->ndlv > 0) {
		int64_t own = 0;

		for (size_t d = pk->dlv_first; d < p->ndlv; d++)
			if (p->dlv[d].t_ret - p->dlv[d].due > own)
				own = p->dlv[d].t_ret - p->dlv[d].due;
		t += own;
	}
	*next = t;
	return 0;
}

int sim_port_run(struct sim_port *p, const struct sim_cfg *cfg)
{
	int64_t next = now_ns(CLOCK_MONOTONIC);
	bool wire = cfg->dev.kind != SIM_DEV_NONE;
	int rc;

	p->cfg = *cfg;
	if (p->cfg.nlens > SIM_MAX_LENS)
		p->cfg.nlens = SIM_MAX_LENS;
	p->rng = cfg->seed;
	/* the wire starts a millisecond from now, so that its first byte is not late */
	if (wire && (rc = wire_init(p, next += 1000000)) < 0)
		return rc;
	for (unsigned k = 0; cfg->packets == 0 || k < cfg->packets; k++) {
		/* SIM_MODBUS on one port: even packets are requests, odd ones the
		 * response to the packet before */
		const uint8_t *req;

		if (atomic_load(&p->stop))
			break;
		if ((rc = reserve(p, longest(&p->cfg) + 128)) < 0)
			return rc;
		req = p->npkt % 2 ? p->data + p->pkt[p->npkt - 1].off : NULL;
		rc = wire ? play_wire(p, &p->cfg, make_packet(p, &p->cfg, req), &next)
		     : play(p, &p->cfg, make_packet(p, &p->cfg, req), &next);
		if (rc < 0)
			return rc;
		next += (int64_t)uniform(&p->rng, cfg->inter_gap_min_us, cfg->inter_gap_max_us) * 1000;
	}
	/* what the device still holds goes out when it would with nothing after it, and
	 * the far end's reading of the last bytes is watched (up to a second) */
	if (wire && (rc = dev_before(p, INT64_MAX)) < 0)
		return rc;
	far_watch(p, now_ns(CLOCK_MONOTONIC) + 1000000000);
	return 0;
}

int sim_exchange_run(struct sim_port *req, struct sim_port *resp, const struct sim_cfg *cfg)
{
	int64_t next = now_ns(CLOCK_MONOTONIC), gap = (int64_t)cfg->gap_us * 1000;

	if (cfg->dev.kind != SIM_DEV_NONE)
		return -EINVAL;
	req->cfg = resp->cfg = *cfg;
	req->rng = cfg->seed;
	resp->rng = cfg->seed ^ 0x9e3779b97f4a7c15ULL;
	for (unsigned k = 0; cfg->packets == 0 || k < cfg->packets; k++) {
		int rc;

		if (atomic_load(&req->stop) || atomic_load(&resp->stop))
			break;
		if ((rc = reserve(req, longest(cfg) + 128)) < 0
		    || (rc = reserve(resp, longest(cfg) + 128)) < 0)
			return rc;
		if ((rc = play(req, cfg, make_packet(req, cfg, NULL), &next)) < 0)
			return rc;
		/* the response starts 1 to 10 gaps after the request's last byte */
		next += gap + (int64_t)(tu_rand(&req->rng) % (uint64_t)(9 * gap + 1));
		if ((rc = play(resp, cfg, make_packet(resp, cfg,
						      req->data + req->pkt[req->npkt - 1].off), &next)) < 0)
			return rc;
		next += (int64_t)uniform(&req->rng, cfg->inter_gap_min_us, cfg->inter_gap_max_us) * 1000;
	}
	return 0;
}

/*
 * sim_packet_clean in wire mode. A silence the reader sees between two
 * hand-overs is the one the model planned, grown by the later one's lateness
 * and shrunk by the earlier one's: the spread of lateness among a packet's
 * hand-overs is what a silence inside it can have gained (the daemon ends a
 * packet only after gap + hold: a silence the device's holding could explain is
 * not taken for a boundary unmarked), and the previous packet's latest lateness
 * less this one's earliest is what the silence before it can have lost.
 */
static bool wire_clean(const struct sim_port *p, size_t i, int64_t gap)
{
	const struct sim_packet *k = &p->pkt[i], *prev = i > 0 ? k - 1 : NULL;
	const struct sim_packet *next = i + 1 < p->npkt ? k + 1 : NULL;
	int64_t hold = (int64_t)p->cfg.hold_us * 1000;

	if (k->ndlv == 0 || k->off + k->len > p->wire.delivered || k->lost > 0)
		return false;
	if (k->max_intra_gap_ns * 2 > gap
	    || (k->max_intra_gap_ns + k->late_max_ns - k->late_min_ns) * 2 > gap + hold)
		return false;
	if (prev != NULL && (k->t_first_mono - prev->t_last_mono - (prev->late_max_ns - k->late_min_ns))
			    * 2 < gap * 3)
		return false;
	if (next != NULL && next->ndlv > 0
	    && (next->t_first_mono - k->t_last_mono - (k->late_max_ns - next->late_min_ns)) * 2 < gap * 3)
		return false;
	return true;
}

bool sim_packet_clean(const struct sim_port *p, size_t i)
{
	int64_t gap = (int64_t)p->cfg.gap_us * 1000;
	const struct sim_packet *k = &p->pkt[i];

	if (p->cfg.dev.kind != SIM_DEV_NONE)
		return wire_clean(p, i, gap);
	if (k->max_intra_gap_ns * 2 > gap)
		return false;
	if (i > 0 && (k->t_first_mono - p->pkt[i - 1].t_last_mono) * 2 < gap * 3)
		return false;
	if (i + 1 < p->npkt && (p->pkt[i + 1].t_first_mono - k->t_last_mono) * 2 < gap * 3)
		return false;
	return true;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int64_t sim_late_pct(const struct sim_port *p, double pct, bool at_write)
{
	int64_t *v, r;
	size_t i, n = 0;

	if (p->ndlv == 0 || (v = malloc(p->ndlv * sizeof(*v))) == NULL)
		return 0;
	for (i = 0; i < p->ndlv; i++)
		if (!p->dlv[i].lost)
			v[n++] = (at_write ? p->dlv[i].t_write : p->dlv[i].t_ret) - p->dlv[i].due;
	if (n == 0) {
		free(v);
		return 0;
	}
	qsort(v, n, sizeof(*v), cmp64);
	i = (size_t)(pct / 100.0 * (double)(n - 1) + 0.5);
	r = v[i < n ? i : n - 1];
	free(v);
	return r;
}

struct runner {
	struct sim_port *port;
	struct sim_cfg cfg;
	int prio;
	int rc;
};

static void *run_thread(void *arg)
{
	struct runner *r = arg;

	if (r->prio > 0) {
		struct sched_param sp = { .sched_priority = r->prio };
		(void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);  /* best effort */
	}
	r->rc = sim_port_run(r->port, &r->cfg);
	return NULL;
}

int sim_run_each(struct sim_port *ports, unsigned n, const struct sim_cfg *cfgs, int rt_priority)
{
	pthread_t *t = calloc(n, sizeof(*t));
	struct runner *r = calloc(n, sizeof(*r));
	int rc = 0;

	if (t == NULL || r == NULL) {
		free(t);
		free(r);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++) {
		r[i] = (struct runner){ .port = &ports[i], .cfg = cfgs[i], .prio = rt_priority };
		if (pthread_create(&t[i], NULL, run_thread, &r[i]) != 0) {
			r[i].rc = -EAGAIN;
			t[i] = 0;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		if (t[i] != 0)
			pthread_join(t[i], NULL);
		if (rc == 0)
			rc = r[i].rc;
	}
	free(t);
	free(r);
	return rc;
}

int sim_run_all(struct sim_port *ports, unsigned n, const struct sim_cfg *cfg, int rt_priority)
{
	struct sim_cfg *c = calloc(n, sizeof(*c));
	int rc;

	if (c == NULL)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		c[i] = *cfg;
		c[i].seed = cfg->seed + i * 0x1000193ULL;
	}
	rc = sim_run_each(ports, n, c, rt_priority);
	free(c);
	return rc;
}

static void *bg_thread(void *arg)
{
	struct sim_bg *b = arg;

	b->rc = sim_run_all(b->ports, b->n, &b->cfg, b->rt_priority);
	return NULL;
}

int sim_bg_start(struct sim_bg *b, struct sim_port *ports, unsigned n, const struct sim_cfg *cfg,
		 int rt_priority)
{
	*b = (struct sim_bg){ .ports = ports, .n = n, .cfg = *cfg, .rt_priority = rt_priority };
	return -pthread_create(&b->thread, NULL, bg_thread, b);
}

int sim_bg_join(struct sim_bg *b)
{
	pthread_join(b->thread, NULL);
	return b->rc;
}
