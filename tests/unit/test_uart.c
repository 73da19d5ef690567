/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_uart.c - the serial port's real-time settings and error counters.
 *
 * No UART here can be made to count frame or parity errors, and a pty has no
 * counters, so TIOCGICOUNT is wrapped (--wrap=ioctl) and scripted; the rest is
 * real: a pty, the termios driver, the reader thread, its ring. TIOCSSERIAL is
 * wrapped to refuse, to show the refusal is reported; that it really sets
 * ASYNC_LOW_LATENCY is shown on the 16550A in test_drv. The FTDI latency timer
 * is a file under a fixture sysfs tree. read is wrapped too, to stall the
 * reader between its wake-up and its read, as a preempted thread or a stopped
 * vCPU does, while more bytes arrive; and ppoll is wrapped to wake the reader
 * a chosen time after its deadline, as a CPU taken by another task does.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/serial.h>
#include <poll.h>
#include <pty.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "drv.h"
#include "serial.h"
#include "testutil.h"
#include "wrap.h"

/* what the wrapped ioctl answers: scripted counters, or the real call */
static _Atomic bool fake_icount;
static _Atomic int icount_frame, icount_parity, icount_overrun, icount_brk, icount_buf;
static _Atomic bool fake_serial;       /* TIOCGSERIAL answers, TIOCSSERIAL says EPERM */

int REAL(ioctl)(int fd, unsigned long req, ...);
int WRAP(ioctl)(int fd, unsigned long req, ...);

int WRAP(ioctl)(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == TIOCGICOUNT && atomic_load(&fake_icount)) {
		struct serial_icounter_struct *ic = arg;
		memset(ic, 0, sizeof(*ic));
		ic->frame = atomic_load(&icount_frame);
		ic->parity = atomic_load(&icount_parity);
		ic->overrun = atomic_load(&icount_overrun);
		ic->brk = atomic_load(&icount_brk);
		ic->buf_overrun = atomic_load(&icount_buf);
		return 0;
	}
	if (req == TIOCGSERIAL && atomic_load(&fake_serial)) {
		memset(arg, 0, sizeof(struct serial_struct));
		return 0;
	}
	if (req == TIOCSSERIAL && atomic_load(&fake_serial)) {
		errno = EPERM;
		return -1;
	}
	return REAL(ioctl)(fd, req, arg);
}

/*
 * A stalled read: the reader's next read of stall_fd first sleeps STALL_NS (a
 * silence longer than the gap), then writes stall_more into the pty's master and
 * waits until the line discipline holds stall_inq bytes, so that the read
 * returns bytes from both sides of that silence at once.
 */
#define STALL_NS 20000000
#define WAIT_NS 30000000000LL   /* a wait of the test's own: through a starved tty worker */
static _Atomic int stall_fd = -1;
static long stall_ns = STALL_NS;
static int stall_master;
static const char *stall_more;
static int stall_inq;
static _Atomic unsigned reads;

ssize_t __real_read(int fd, void *buf, size_t len);
ssize_t __wrap_read(int fd, void *buf, size_t len);

/* Waits until the line discipline of fd holds want bytes: its tty worker hands them on
 * (a SCHED_OTHER kworker: beside other tests' real-time threads, a second late or
 * more), up to WAIT_NS. */
static void wait_inq(int fd, int want)
{
	struct timespec ms = { 0, 1000000 };
	int64_t end = tu_mono_ns() + WAIT_NS;
	int inq = 0;

	for (;;) {
		if (ioctl(fd, TIOCINQ, &inq) < 0)
			abort();
		if (inq >= want || tu_mono_ns() >= end)
			return;
		nanosleep(&ms, NULL);
	}
}

ssize_t __wrap_read(int fd, void *buf, size_t len)
{
	int want = atomic_load(&stall_fd);

	if (want >= 0 && fd == want && atomic_compare_exchange_strong(&stall_fd, &want, -1)) {
		struct timespec pause = { 0, stall_ns };

		nanosleep(&pause, NULL);
		if (write(stall_master, stall_more, strlen(stall_more)) < 0)
			abort();
		wait_inq(fd, stall_inq);
	}
	atomic_fetch_add(&reads, 1);
	return __real_read(fd, buf, len);
}

/*
 * A late wake-up: the reader's next ppoll with a timeout on port_fd (a packet
 * in progress) first writes late_more into the pty's master, well before the
 * deadline, and waits until the line discipline holds it; then it sleeps until
 * late_us after the deadline the reader asked for (its CPU taken), and only
 * then looks, without waiting. late_more NULL: nothing arrives, the reader
 * finds the deadline passed and reads (the read stall above may bring bytes:
 * late_stall arms it there, so that it is that read, at the deadline, and not one
 * the reader made before it however the test thread is scheduled).
 */
static _Atomic int late_us = -1;
static _Atomic int late_fd = -1;
static _Atomic bool late_stall;
static const char *late_more;

int REAL(ppoll)(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *sig);
int WRAP(ppoll)(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *sig);

int WRAP(ppoll)(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *sig)
{
	int us = atomic_load(&late_us);

	if (us >= 0 && tmo != NULL && n > 0 && fds[0].fd == atomic_load(&late_fd)
	    && atomic_compare_exchange_strong(&late_us, &us, -1)) {
		struct timespec until, zero = { 0, 0 };
		int64_t t;

		clock_gettime(CLOCK_MONOTONIC, &until);
		t = (int64_t)until.tv_sec * 1000000000 + until.tv_nsec
		    + (int64_t)tmo->tv_sec * 1000000000 + tmo->tv_nsec + (int64_t)us * 1000;
		if (late_more != NULL) {
			if (write(stall_master, late_more, strlen(late_more)) < 0)
				abort();
			wait_inq(fds[0].fd, (int)strlen(late_more));
		}
		until.tv_sec = t / 1000000000;
		until.tv_nsec = t % 1000000000;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
			;
		if (atomic_exchange(&late_stall, false))
			atomic_store(&stall_fd, fds[0].fd);
		return REAL(ppoll)(fds, n, &zero, sig);
	}
	return REAL(ppoll)(fds, n, tmo, sig);
}

static struct conf_serial pty_conf(char *device)
{
	struct conf_serial c = {
		.name = "u", .tty = { .baud = 9600, .data_bits = 8, .parity = 'N', .stop_bits = 1 },
		.delimiter = '\n', .max_packet = 64, .priority = 0, .cpu = -1,
	};
	snprintf(c.device, sizeof(c.device), "%s", device);
	return c;
}

/* Waits (bounded) until the port's ring holds n records (one slot each here). */
static void wait_records(struct serial_port *p, unsigned n)
{
	for (int i = 0; i < 5000 && ring_ready_now(&p->src.ring) < n; i++) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	assert_int_equal(ring_ready_now(&p->src.ring), n);
}

/* Pops one record, checks its kind and EV code, returns its payload as text
 * (static; the head slot's data and the raw slots after it). */
static const char *pop(struct serial_port *p, int kind, int ev)
{
	static char text[SOURCE_EV_MAX + 1];
	const struct rec *r;
	uint32_t slots, len, n;

	assert_true(ring_ready(&p->src.ring) > 0);
	r = &ring_rslot(&p->src.ring, 0)->rec;
	assert_int_equal(r->kind, kind);
	if (kind == REC_EV)
		assert_int_equal(r->a, ev);
	len = r->len < SOURCE_EV_MAX ? r->len : SOURCE_EV_MAX;
	n = len < REC_HEAD_DATA ? len : REC_HEAD_DATA;
	memcpy(text, r->data, n);
	slots = rec_slots(r->len);
	for (uint32_t i = 1; i < slots && n < len; i++) {
		uint32_t k = len - n < REC_SIZE ? len - n : REC_SIZE;
		memcpy(text + n, ring_rslot(&p->src.ring, i)->raw, k);
		n += k;
	}
	text[n] = '\0';
	ring_release(&p->src.ring, slots);
	return text;
}

/*
 * pop() of the next record that is not an EV late-delivery, waiting (bounded) for
 * it: a reader that ran late (qemu-user emulating another architecture, a busy
 * machine) says so in such lines, which are right but not what a test of
 * something else checks.
 */
static const char *pop_past_doubts(struct serial_port *p, int kind, int ev)
{
	for (int i = 0; i < 5000; i++) {
		const struct rec *r;

		if (ring_ready_now(&p->src.ring) == 0) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
			continue;
		}
		r = &ring_rslot(&p->src.ring, 0)->rec;
		if (r->kind == REC_EV && r->a == EV_LATE) {
			ring_release(&p->src.ring, rec_slots(r->len));
			continue;
		}
		return pop(p, kind, ev);
	}
	fail_msg("no record in 5 s");
	return NULL;
}

/* After a test of the counters, failed or not, the next sees a pty as it is. */
static int no_fake_counters(void **state)
{
	(void)state;
	atomic_store(&fake_icount, false);
	return 0;
}

/* Counters that change while a packet arrives become one EV uart-errors after it. */
static void error_counters_become_events(void **state)
{
	char device[64];
	struct conf_serial c;
	struct serial_port p;
	int master, slave, stop_fd, degraded = 0;
	uint64_t one = 1;
	const char *t;
	static const struct { int add[SERIAL_NERR]; const char *event; } steps[] = {
		{ { 2, 1, 0, 0, 0 }, "frame=2 parity=1 overrun=0 brk=0 buf_overrun=0" },
		{ { 0, 0, 3, 1, 1 }, "frame=0 parity=0 overrun=3 brk=1 buf_overrun=1" },
		{ { 0, 0, 0, 0, 0 }, NULL },        /* unchanged: a packet and nothing else */
	};

	(void)state;
	assert_int_equal(openpty(&master, &slave, device, NULL, NULL), 0);
	close(slave);
	c = pty_conf(device);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	/* the kernel's counters are not zero at open: only changes count */
	atomic_store(&icount_frame, 7);
	atomic_store(&icount_brk, 1);
	atomic_store(&fake_icount, true);
	conf_resolve_serial(&c);
	assert_int_equal(serial_init(&p, &c, 64, stop_fd, NULL), 0);
	assert_int_equal(serial_open(&p), 0);
	t = pop(&p, REC_EV, EV_OPEN);
	assert_non_null(strstr(t, " low_latency=n/a"));
	assert_true(p.has_icount);
	assert_int_equal(serial_start(&p, &degraded), 0);

	assert_int_equal(write(master, "ok\n", 3), 3);
	assert_string_equal(pop_past_doubts(&p, REC_RX, 0), "ok\n");

	/* the counters move while a packet arrives: the packet, then the event */
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		atomic_fetch_add(&icount_frame, steps[i].add[0]);
		atomic_fetch_add(&icount_parity, steps[i].add[1]);
		atomic_fetch_add(&icount_overrun, steps[i].add[2]);
		atomic_fetch_add(&icount_brk, steps[i].add[3]);
		atomic_fetch_add(&icount_buf, steps[i].add[4]);
		assert_int_equal(write(master, "b\0d\n", 4), 4);
		pop_past_doubts(&p, REC_RX, 0);
		if (steps[i].event != NULL)
			assert_string_equal(pop_past_doubts(&p, REC_EV, EV_UART_ERRORS),
					    steps[i].event);
	}

	assert_int_equal(write(stop_fd, &one, sizeof(one)), sizeof(one));
	serial_join(&p);
	/* the totals since start, for the STAT line */
	assert_int_equal(atomic_load(&p.errors[SERIAL_ERR_FRAME]), 2);
	assert_int_equal(atomic_load(&p.errors[SERIAL_ERR_PARITY]), 1);
	assert_int_equal(atomic_load(&p.errors[SERIAL_ERR_OVERRUN]), 3);
	assert_int_equal(atomic_load(&p.errors[SERIAL_ERR_BRK]), 1);
	assert_int_equal(atomic_load(&p.errors[SERIAL_ERR_BUF_OVERRUN]), 1);
	atomic_store(&fake_icount, false);
	serial_fini(&p);
	close(master);
	close(stop_fd);
}

/* A pty has no counters (ENOTTY): no look per packet, no event. */
static void pty_has_no_counters(void **state)
{
	char device[64];
	struct conf_serial c;
	struct serial_port p;
	int master, slave, stop_fd;

	(void)state;
	assert_int_equal(openpty(&master, &slave, device, NULL, NULL), 0);
	close(slave);
	c = pty_conf(device);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	conf_resolve_serial(&c);
	assert_int_equal(serial_init(&p, &c, 64, stop_fd, NULL), 0);
	assert_int_equal(serial_open(&p), 0);
	assert_false(p.has_icount);
	pop(&p, REC_EV, EV_OPEN);
	assert_int_equal(ring_ready(&p.src.ring), 0);
	serial_fini(&p);
	close(master);
	close(stop_fd);
}

/* A UART that refuses ASYNC_LOW_LATENCY: low_latency=off in EV open, then EV rt-missing. */
static void refused_low_latency_is_reported(void **state)
{
	char device[64];
	struct conf_serial c;
	struct serial_port p;
	int master, slave, stop_fd;
	const struct rec *r;

	(void)state;
	assert_int_equal(openpty(&master, &slave, device, NULL, NULL), 0);
	close(slave);
	c = pty_conf(device);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	atomic_store(&fake_serial, true);
	conf_resolve_serial(&c);
	assert_int_equal(serial_init(&p, &c, 64, stop_fd, NULL), 0);
	assert_int_equal(serial_open(&p), 0);
	atomic_store(&fake_serial, false);
	assert_int_equal(p.drv.low_latency, -EPERM);
	assert_non_null(strstr(pop(&p, REC_EV, EV_OPEN), " low_latency=off"));
	r = &ring_rslot(&p.src.ring, 0)->rec;
	assert_int_equal(r->b, EPERM);
	assert_string_equal(pop(&p, REC_EV, EV_RT_MISSING), "item=low_latency need=TIOCSSERIAL");
	serial_fini(&p);
	close(master);
	close(stop_fd);
}

/* Pops n records into one string: RX payloads as they are, an EV late-delivery as
 * "<late>"; late_at_rx says whether each late EV has the time of the RX after it. */
static void pop_late_and_rx(struct serial_port *p, unsigned n, char *out, size_t len,
			    bool *late_at_rx)
{
	int64_t late_mono = -1;

	*out = '\0';
	*late_at_rx = true;
	for (unsigned i = 0; i < n; i++) {
		const struct rec *r = &ring_rslot(&p->src.ring, 0)->rec;
		int kind = r->kind;
		int64_t t = r->t_mono;
		const char *text = pop(p, kind, kind == REC_EV ? EV_LATE : 0);

		if (kind == REC_EV) {
			printf("# EV late-delivery %s\n", text);
			assert_non_null(strstr(text, "wait_us="));
			late_mono = t;
			strncat(out, "<late>", len - strlen(out) - 1);
			continue;
		}
		if (late_mono >= 0 && late_mono != t)
			*late_at_rx = false;
		late_mono = -1;
		strncat(out, text, len - strlen(out) - 1);
	}
}

/* Waits (up to WAIT_NS) until the reader has made one more read than `before`. */
static void wait_read(unsigned before)
{
	int64_t end = tu_mono_ns() + WAIT_NS;

	while (atomic_load(&reads) == before && tu_mono_ns() < end) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	assert_true(atomic_load(&reads) > before);
}

/* A reader thread on a fresh pty, no delimiter, the given gap; returns the master. */
static int start_reader(struct serial_port *p, struct conf_serial *c, char *device,
			unsigned gap_us, int *stop_fd)
{
	int master, slave, degraded = 0;

	assert_int_equal(openpty(&master, &slave, device, NULL, NULL), 0);
	close(slave);
	*c = pty_conf(device);
	c->delimiter = -1;
	c->gap_us = gap_us;
	*stop_fd = eventfd(0, EFD_CLOEXEC);
	conf_resolve_serial(c);
	assert_int_equal(serial_init(p, c, 64, *stop_fd, NULL), 0);
	assert_int_equal(serial_open(p), 0);
	pop(p, REC_EV, EV_OPEN);
	assert_int_equal(serial_start(p, &degraded), 0);
	stall_master = master;
	return master;
}

static void stop_reader(struct serial_port *p, int master, int stop_fd)
{
	uint64_t one = 1;

	assert_int_equal(write(stop_fd, &one, sizeof(one)), sizeof(one));
	serial_join(p);
	serial_fini(p);
	close(master);
	close(stop_fd);
}

/*
 * The reader is stalled after it woke for some bytes and before it read them,
 * and more bytes arrive after a silence longer than the gap: one read returns
 * both. The daemon cannot split them, but it must say so: an EV late-delivery
 * dated at the packet they join (none in progress; then one in progress).
 */
static void stalled_read_is_reported(void **state)
{
	char device[64], got[128];
	struct conf_serial c;
	struct serial_port p;
	int master, stop_fd;
	unsigned before;
	bool late_at_rx;

	(void)state;
	master = start_reader(&p, &c, device, 5000, &stop_fd);

	/* no packet in progress: "first", 20 ms of silence, "second", read as one */
	stall_more = "second";
	stall_inq = 11;
	atomic_store(&stall_fd, p.drv.fd);
	assert_int_equal(write(master, "first", 5), 5);
	wait_records(&p, 2);
	pop_late_and_rx(&p, 2, got, sizeof(got), &late_at_rx);
	assert_string_equal(got, "<late>firstsecond");
	assert_true(late_at_rx);

	/* a packet in progress: "third" read alone, then "x" woken for and stalled
	 * on, "fourth" after the silence. However the test thread is scheduled,
	 * "x" and "fourth" come in one read, flagged. */
	before = atomic_load(&reads);
	assert_int_equal(write(master, "third", 5), 5);
	wait_read(before);
	stall_more = "fourth";
	stall_inq = 7;
	atomic_store(&stall_fd, p.drv.fd);
	assert_int_equal(write(master, "x", 1), 1);
	got[0] = '\0';
	for (int i = 0; i < 5000 && !strstr(got, "fourth"); i++) {
		struct timespec ms = { 0, 1000000 };
		unsigned n = ring_ready(&p.src.ring);
		char more[128];
		size_t gl;
		bool at;

		if (n == 0) {
			nanosleep(&ms, NULL);
			continue;
		}
		pop_late_and_rx(&p, n, more, sizeof(more), &at);
		gl = strlen(got);
		snprintf(got + gl, sizeof(got) - gl, "%s", more);
		late_at_rx = late_at_rx && at;
	}
	printf("# %s\n", got);
	/* "third" alone or with "x"; the late EV before the packet holding "fourth" */
	assert_true(strcmp(got, "third<late>xfourth") == 0 || strcmp(got, "<late>thirdxfourth") == 0);
	assert_true(late_at_rx);
	stop_reader(&p, master, stop_fd);
}

/* collect()'s text without its "<EV fields>" marks: the RX payloads, each ending in '|'. */
static void rx_only(const char *got, char *out, size_t len)
{
	size_t n = 0;

	for (bool in_ev = false; *got != '\0' && n + 1 < len; got++) {
		if (*got == '<' || *got == '>')
			in_ev = *got == '<';
		else if (!in_ev)
			out[n++] = *got;
	}
	out[n] = '\0';
}

/* Pops records until one RX holds `want` as its end (bounded); returns the texts of
 * what came, RX payloads as they are and EV late-delivery lines as "<FIELDS>". */
static void collect(struct serial_port *p, const char *want, char *out, size_t len,
		    char ev[][SOURCE_EV_MAX + 1], unsigned *nev, int64_t *ev_t, int64_t *rx_t)
{
	unsigned rx = 0;

	*out = '\0';
	*nev = 0;
	for (int i = 0; i < 5000; i++) {
		struct timespec ms = { 0, 1000000 };
		size_t ol = strlen(out), wl = strlen(want);

		if (ol >= wl && strcmp(out + ol - wl, want) == 0)
			return;
		if (ring_ready(&p->src.ring) == 0) {
			nanosleep(&ms, NULL);
			continue;
		}
		{
			const struct rec *r = &ring_rslot(&p->src.ring, 0)->rec;
			int kind = r->kind;
			int64_t t = r->t_mono;
			const char *text = pop(p, kind, kind == REC_EV ? EV_LATE : 0);

			if (kind == REC_EV) {
				if (*nev < 4) {
					snprintf(ev[*nev], SOURCE_EV_MAX + 1, "%s", text);
					ev_t[*nev] = t;
					(*nev)++;
				}
				strncat(out, "<", len - strlen(out) - 1);
				strncat(out, text, len - strlen(out) - 1);
				strncat(out, ">", len - strlen(out) - 1);
				continue;
			}
			if (rx < 4)
				rx_t[rx++] = t;
			strncat(out, text, len - strlen(out) - 1);
			strncat(out, "|", len - strlen(out) - 1);
		}
	}
	fail_msg("no RX ending in '%s' within 5 s; got %s", want, out);
}

/*
 * The boundary rule in the real reader (reasm.h): the reader's CPU is taken
 * until 50, 100, 300 and 800 us after a packet's deadline while its next
 * fragment waits in the kernel (late-wake), or the read at the deadline finds
 * bytes (deadline-read). It cannot tell whether they arrived before or after
 * the deadline: it joins them and says so, every time. Woken more than a gap
 * after the deadline, it begins a new packet and says so. A fragment it saw
 * in time, or a silence it saw, gets no mark.
 */
static void late_wake_is_marked(void **state)
{
	static const int amounts_us[] = { 50, 100, 300, 800, 25000 };
	char device[64], got[256], ev[4][SOURCE_EV_MAX + 1];
	struct conf_serial c;
	struct serial_port p;
	int master, stop_fd;
	int64_t ev_t[4], rx_t[4];
	unsigned nev;

	(void)state;
	/* 20 ms: a wake-up below a gap late is joined */
	master = start_reader(&p, &c, device, 20000, &stop_fd);
	atomic_store(&late_fd, p.drv.fd);

	for (int path = 0; path < 2; path++) {
		for (size_t k = 0; k < sizeof(amounts_us) / sizeof(amounts_us[0]); k++) {
			int x = amounts_us[k];
			char want_ev[96], rx[64];
			long wait_us;
			unsigned m;
			bool joined;

			if (path == 0) {
				/* the next fragment arrives long before the deadline; the
				 * reader wakes x us after it */
				late_more = "efgh";
			} else {
				/* nothing woke the reader; its read at the deadline,
				 * x us late, returns bytes */
				late_more = NULL;
				stall_ns = 0;
				stall_more = "efgh";
				stall_inq = 4;
			}
			/* path 1: "abcd" read, the read at the deadline stalls */
			atomic_store(&late_stall, path == 1);
			atomic_store(&late_us, x);
			assert_int_equal(write(master, "abcd", 4), 4);
			collect(&p, "efgh|", got, sizeof(got), ev, &nev, ev_t, rx_t);
			printf("# %s %d us late: %s\n", path ? "deadline read" : "woken", x, got);
			/* the mark, however small the lateness */
			snprintf(want_ev, sizeof(want_ev), " bytes=4 case=%s stage=reader joined=",
				 path ? "deadline-read" : "late-wake");
			for (m = 0; m < nev && strstr(ev[m], want_ev) == NULL; m++)
				;
			if (m == nev || sscanf(ev[m], "wait_us=%ld", &wait_us) != 1)
				fail_msg("no EV late-delivery wait_us=N%s...: %s", want_ev, got);
			assert_true(wait_us >= x);
			joined = strstr(ev[m], " joined=yes") != NULL;
			/* found within a gap of the deadline: joined; a gap after it: a new
			 * packet (this machine may add a stall of its own to x) */
			if (wait_us * 1000 < p.gap_ns)
				assert_true(joined);
			if (x * 1000 > p.gap_ns)
				assert_false(joined);
			/* and the bytes where the mark says, the mark at their packet */
			rx_only(got, rx, sizeof(rx));
			assert_string_equal(rx, joined ? "abcdefgh|" : "abcd|efgh|");
			assert_int_equal(ev_t[m], rx_t[joined ? 0 : 1]);
			/* any other mark is this machine's own stall of a gap or more */
			for (unsigned i = 0; i < nev; i++)
				if (i != m)
					assert_true(sscanf(ev[i], "wait_us=%ld", &wait_us) == 1
						    && wait_us * 1000 >= p.gap_ns);
			stall_ns = STALL_NS;
		}
	}

	/* judged: a fragment within the gap, and the silence after the packet */
	{
		unsigned before = atomic_load(&reads);

		assert_int_equal(write(master, "ijkl", 4), 4);
		wait_read(before);
		assert_int_equal(write(master, "mnop", 4), 4);
		char rx[64];
		long wait_us;

		collect(&p, "mnop|", got, sizeof(got), ev, &nev, ev_t, rx_t);
		printf("# in time: %s\n", got);
		/* no mark, but for a stall of a gap or more of this machine's own */
		for (unsigned i = 0; i < nev; i++)
			assert_true(sscanf(ev[i], "wait_us=%ld", &wait_us) == 1
				    && wait_us * 1000 >= p.gap_ns);
		/* one packet, or two if this thread was held up a gap between its writes */
		rx_only(got, rx, sizeof(rx));
		assert_true(strcmp(rx, "ijklmnop|") == 0 || strcmp(rx, "ijkl|mnop|") == 0);
	}

	stop_reader(&p, master, stop_fd);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	assert_non_null(fgets(buf, (int)len, f));
	fclose(f);
}

/* The FTDI latency timer under a fixture sysfs: set to 1, left alone, absent, refused. */
static void ftdi_latency_timer(void **state)
{
	char root[] = "/tmp/portlogd-ftdi-XXXXXX", dir[256], file[300], buf[16];
	int err, status;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(root));
	assert_int_equal(chmod(root, 0755), 0);    /* the unprivileged child reads below it */
	snprintf(dir, sizeof(dir), "%s/sys/bus/usb-serial/devices/ttyUSB3", root);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "mkdir -p %s", dir);
		assert_int_equal(system(cmd), 0);
	}
	snprintf(file, sizeof(file), "%s/latency_timer", dir);

	/* 16 ms, the FTDI default: set to 1 */
	write_file(file, "16\n", 0644);
	assert_int_equal(drv_ftdi_latency(root, "/dev/ttyUSB3", &err), 1);
	assert_int_equal(err, 0);
	read_file(file, buf, sizeof(buf));
	assert_int_equal(atoi(buf), 1);

	/* already 1: nothing written */
	write_file(file, "1\n", 0444);
	assert_int_equal(drv_ftdi_latency(root, "/dev/ttyUSB3", &err), 1);
	assert_int_equal(err, 0);

	/* not an FTDI adapter (no timer), or not a USB serial port at all */
	assert_int_equal(drv_ftdi_latency(root, "/dev/ttyUSB4", &err), -ENODEV);
	assert_int_equal(drv_ftdi_latency(root, "/dev/ttyS0", &err), -ENODEV);

	/* a user who may not write it: the value stays, the refusal is returned */
	write_file(file, "16\n", 0444);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int ms;
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(90);
		ms = drv_ftdi_latency(root, "/dev/ttyUSB3", &err);
		_exit(ms == 16 && err == EACCES ? 0 : 91);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 90)
		skip();     /* not root: cannot become another user */
	assert_int_equal(WEXITSTATUS(status), 0);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(error_counters_become_events, no_fake_counters),
		cmocka_unit_test(pty_has_no_counters),
		cmocka_unit_test(refused_low_latency_is_reported),
		cmocka_unit_test(stalled_read_is_reported),
		cmocka_unit_test(late_wake_is_marked),
		cmocka_unit_test(ftdi_latency_timer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
