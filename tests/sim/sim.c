/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sim.c - the traffic simulator's engine, shared by portlogd-sim and the end-to-end tests. */
#include <errno.h>
#include <fcntl.h>
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
static int64_t outq_unit(void)
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
	int fl;

	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->master = fd;
	if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		p->master = -1;
		return -errno;
	}
	/* what the far end has not read yet: a socket's SIOCOUTQ (memory, see outq_unit),
	 * a fifo's FIONREAD (bytes, from either end) */
	struct stat st;
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
	free(p->late);
	p->data = NULL;
	p->pkt = NULL;
	p->late = NULL;
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

static int reserve(struct sim_port *p, size_t more)
{
	if (p->data_len + more > p->data_cap) {
		size_t cap = (p->data_len + more) * 2;
		uint8_t *d = realloc(p->data, cap);
		if (d == NULL)
			return -ENOMEM;
		p->data = d;
		if (p->cfg.pace) {
			int64_t *l = realloc(p->late, cap * sizeof(*l));
			if (l == NULL)
				return -ENOMEM;
			p->late = l;
		}
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
	len = cfg->nlens ? cfg->lens[p->npkt % cfg->nlens]
	      : uniform(&p->rng, cfg->min_len, cfg->max_len);
	for (unsigned i = 0; i < len; i++)
		buf[i] = (uint8_t)tu_rand(&p->rng);
	return len;
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
	frags = cfg->max_frags < SIM_MAX_FRAGS ? cfg->max_frags : SIM_MAX_FRAGS;
	frags = uniform(&p->rng, 1, frags < len ? frags : len);
	pk->nfrag = frags;
	for (unsigned f = 0; f < frags; f++) {
		unsigned n = f + 1 == frags ? len - sent
			     : uniform(&p->rng, 1, len - sent - (frags - f - 1));
		int64_t start;

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

/*
 * Before a paced write into a socket or fifo: what the far end has not read yet. How
 * long its oldest unread byte has waited goes to the packet that byte is in
 * (max_take_ns): the device got it that much late, and saw the silence before it longer
 * by as much (QEMU reads its chardev from its main loop, which a loaded host delays).
 * Returns whether the byte due now is lost: more than cfg->hold writes wait unread and
 * none was taken for cfg->hold_ms.
 */
static bool far_end(struct sim_port *p, const struct sim_cfg *cfg, struct sim_packet *pk)
{
	int64_t now = now_ns(CLOCK_MONOTONIC);
	uint64_t unread;
	int q = 0;

	if (p->outq_unit == 0 || ioctl(p->master, p->outq_req, &q) < 0)
		return false;
	unread = ((uint64_t)q + (uint64_t)p->outq_unit - 1) / (uint64_t)p->outq_unit;
	if (unread > 0 && p->nwrites > 0) {
		uint64_t oldest = unread < p->nwrites ? p->nwrites - unread : 0;
		int64_t waited;

		if (p->nwrites - oldest > SIM_TAKE_RING)
			oldest = p->nwrites - SIM_TAKE_RING;   /* a lower bound then */
		waited = now - p->wstart[oldest % SIM_TAKE_RING];
		/* at a packet's first write, what waits is the packet before's */
		if (pk->len == 0 && pk->lost == 0 && p->npkt > 0)
			pk = &p->pkt[p->npkt - 1];
		if (waited > pk->max_take_ns)
			pk->max_take_ns = waited;
	}
	if (q < p->outq_last || unread <= 1 || p->outq_taken == 0)
		p->outq_taken = now;
	p->outq_last = q;
	return cfg->hold > 0 && unread > cfg->hold &&
	       now - p->outq_taken > (int64_t)cfg->hold_ms * 1000000;
}

/*
 * play() for cfg->pace: byte i of the packet is written on its own at *next + i
 * character times, each deadline absolute (a late write does not push the ones after
 * it); its lateness is kept in p->late. A byte due while the peer holds more than
 * cfg->hold unread writes is lost, as on a wire into a UART nobody empties. *next
 * becomes the deadline a byte right after the last would have had. 0 or -errno.
 */
static int play_paced(struct sim_port *p, const struct sim_cfg *cfg, unsigned len, int64_t *next)
{
	struct sim_packet *pk = &p->pkt[p->npkt];
	uint8_t *buf = p->data + p->data_len;
	int64_t t0 = *next, prev_start = 0;
	unsigned sent = 0;

	*pk = (struct sim_packet){ .off = (uint32_t)p->data_len, .nfrag = 1 };
	for (unsigned i = 0; i < len; i++) {
		/* from t0 each time: rounding does not add up over a long packet */
		int64_t due = t0 + (int64_t)i * 10 * 1000000000 / cfg->baud, start, end;
		size_t done;
		int rc;

		sleep_until(due);
		pk->len = sent;             /* far_end tells a packet that has begun */
		if (far_end(p, cfg, pk)) {
			pk->lost++;
			continue;
		}
		start = now_ns(CLOCK_MONOTONIC);
		if (sent == 0) {
			pk->t_first_real = pk->frag_real[0] = now_ns(CLOCK_REALTIME);
			pk->t_first_mono = start;
		}
		/* the byte moves down to where the written ones are (lost ones left gaps) */
		buf[sent] = buf[i];
		if ((rc = write_all(p, buf + sent, 1, &done)) < 0) {
			p->error = -rc;
			break;
		}
		end = now_ns(CLOCK_MONOTONIC);
		p->late[p->data_len + sent] = start - due;
		p->wstart[p->nwrites++ % SIM_TAKE_RING] = start;
		/* as in play(): the silence before this byte, at most its return minus the
		 * previous write's start */
		if (sent > 0 && end - prev_start > pk->max_intra_gap_ns)
			pk->max_intra_gap_ns = end - prev_start;
		prev_start = start;
		pk->t_last_mono = end;
		sent++;
	}
	pk->len = sent;
	p->data_len += sent;
	if (sent > 0 || pk->lost > 0)
		p->npkt++;
	atomic_store(&p->done, p->npkt);
	*next = t0 + (int64_t)len * 10 * 1000000000 / cfg->baud;
	return p->error ? -p->error : 0;
}

int sim_port_run(struct sim_port *p, const struct sim_cfg *cfg)
{
	int64_t next = now_ns(CLOCK_MONOTONIC);

	p->cfg = *cfg;
	p->rng = cfg->seed;
	for (unsigned k = 0; cfg->packets == 0 || k < cfg->packets; k++) {
		/* SIM_MODBUS on one port: even packets are requests, odd ones the
		 * response to the packet before */
		const uint8_t *req;
		int rc;

		if (atomic_load(&p->stop))
			break;
		if ((rc = reserve(p, cfg->max_len + 128)) < 0)
			return rc;
		req = p->npkt % 2 ? p->data + p->pkt[p->npkt - 1].off : NULL;
		rc = cfg->pace && cfg->baud ? play_paced(p, cfg, make_packet(p, cfg, req), &next)
		     : play(p, cfg, make_packet(p, cfg, req), &next);
		if (rc < 0)
			return rc;
		next += (int64_t)uniform(&p->rng, cfg->inter_gap_min_us, cfg->inter_gap_max_us) * 1000;
	}
	return 0;
}

int sim_exchange_run(struct sim_port *req, struct sim_port *resp, const struct sim_cfg *cfg)
{
	int64_t next = now_ns(CLOCK_MONOTONIC), gap = (int64_t)cfg->gap_us * 1000;

	req->cfg = resp->cfg = *cfg;
	req->rng = cfg->seed;
	resp->rng = cfg->seed ^ 0x9e3779b97f4a7c15ULL;
	for (unsigned k = 0; cfg->packets == 0 || k < cfg->packets; k++) {
		int rc;

		if (atomic_load(&req->stop) || atomic_load(&resp->stop))
			break;
		if ((rc = reserve(req, cfg->max_len + 128)) < 0
		    || (rc = reserve(resp, cfg->max_len + 128)) < 0)
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

bool sim_packet_clean(const struct sim_port *p, size_t i)
{
	int64_t gap = (int64_t)p->cfg.gap_us * 1000;
	const struct sim_packet *k = &p->pkt[i];

	if (k->lost > 0 || k->max_take_ns * 2 > gap)
		return false;
	if (k->max_intra_gap_ns * 2 > gap)
		return false;
	if (i > 0 && (k->t_first_mono - p->pkt[i - 1].t_last_mono) * 2 < gap * 3)
		return false;
	if (i + 1 < p->npkt && (p->pkt[i + 1].t_first_mono - k->t_last_mono) * 2 < gap * 3)
		return false;
	return true;
}

struct runner {
	struct sim_port *port;
	const struct sim_cfg *cfg;
	uint64_t seed;
	int prio;
	int rc;
};

static void *run_thread(void *arg)
{
	struct runner *r = arg;
	struct sim_cfg cfg = *r->cfg;

	if (r->prio > 0) {
		struct sched_param sp = { .sched_priority = r->prio };
		(void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);  /* best effort */
	}
	cfg.seed = r->seed;
	r->rc = sim_port_run(r->port, &cfg);
	return NULL;
}

int sim_run_all(struct sim_port *ports, unsigned n, const struct sim_cfg *cfg, int rt_priority)
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
		r[i] = (struct runner){ .port = &ports[i], .cfg = cfg, .prio = rt_priority,
					.seed = cfg->seed + i * 0x1000193ULL };
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
