/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vm_echo.c - the host's loopback plug for a guest's port: what the port sends comes back at the baud.
 *
 * vm_echo --baud N (--socket PATH | --fifo FROM TO) [--seconds S]
 *
 * Reads what the guest's port transmits (QEMU's socket chardev of a 16550A, or the
 * pipe chardev of its usb-serial: FROM is QEMU's PATH.out, TO its PATH.in) and writes
 * every byte back, one write each, a character time (8N1) after the one before at the
 * earliest: as a wire from TX to RX would bring them, since QEMU's UART and adapter
 * models take what they are handed at once (tests/vm/run.sh, scn_calibrate). Runs at
 * SCHED_FIFO 50 with its memory locked where allowed, sleeping to 200 us before each
 * byte's time and spinning the rest. Ends at SIGTERM or after S seconds (600) and
 * prints how many bytes it echoed and how late its writes were (p50, max).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SPIN_NS 200000
#define MAX_LATE 65536

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void wait_until(int64_t t)
{
	if (t - now() > SPIN_NS) {
		int64_t s = t - SPIN_NS;
		struct timespec ts = { .tv_sec = s / 1000000000, .tv_nsec = s % 1000000000 };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop)
			;
	}
	while (now() < t && !stop)
		;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "baud", required_argument, NULL, 'b' },
		{ "socket", required_argument, NULL, 's' },
		{ "fifo", required_argument, NULL, 'f' },
		{ "seconds", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	static int64_t late[MAX_LATE];
	struct sched_param sp = { .sched_priority = 50 };
	const char *sock = NULL, *from = NULL;
	unsigned baud = 0, seconds = 600;
	int opt, in = -1, out = -1;
	int64_t c, next = 0, end;
	size_t nlate = 0, echoed = 0;
	uint8_t buf[4096], q[1 << 16];
	size_t qh = 0, qn = 0;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'b': baud = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': sock = optarg; break;
		case 'f': from = optarg; break;
		case 't': seconds = (unsigned)strtoul(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (baud == 0 || (sock == NULL) == (from == NULL) || (from != NULL && optind != argc - 1)
	    || (sock != NULL && optind != argc)) {
		fprintf(stderr, "usage: vm_echo --baud N (--socket PATH | --fifo FROM TO) "
			"[--seconds S]\n");
		return 2;
	}
	c = (int64_t)10 * 1000000000 / baud;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0 || mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
		fprintf(stderr, "vm_echo: not at SCHED_FIFO 50 with memory locked: %s\n",
			strerror(errno));
	if (sock != NULL) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
		in = out = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (in < 0 || connect(in, (struct sockaddr *)&a, sizeof(a)) < 0) {
			fprintf(stderr, "vm_echo: %s: %s\n", sock, strerror(errno));
			return 1;
		}
	} else {
		in = open(from, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		out = open(argv[optind], O_RDWR | O_CLOEXEC);   /* RDWR: no wait for a reader */
		if (in < 0 || out < 0) {
			fprintf(stderr, "vm_echo: %s, %s: %s\n", from, argv[optind], strerror(errno));
			return 1;
		}
	}
	end = now() + (int64_t)seconds * 1000000000;
	while (!stop && now() < end) {
		struct pollfd p = { .fd = in, .events = POLLIN };
		int64_t t = now();
		int ms = qn > 0 ? (next - t > 1000000 ? (int)((next - t) / 1000000) - 1 : 0) : 100;
		ssize_t n;

		if (poll(&p, 1, ms) > 0) {
			n = read(in, buf, sizeof(buf));
			if (n == 0 && sock != NULL)
				break;          /* QEMU closed the socket */
			for (ssize_t i = 0; i < n && qn < sizeof(q); i++, qn++)
				q[(qh + qn) % sizeof(q)] = buf[i];
			if (n > 0 && next < now())
				next = now();   /* a byte on a quiet line goes at once */
		}
		/* the bytes whose time has come, each a character after the one before */
		while (qn > 0 && now() + 1000000 >= next && !stop) {
			wait_until(next);
			if (write(out, &q[qh], 1) != 1) {
				if (errno == EAGAIN || errno == EINTR)
					continue;
				fprintf(stderr, "vm_echo: write: %s\n", strerror(errno));
				stop = 1;
				break;
			}
			if (nlate < MAX_LATE)
				late[nlate++] = now() - next;
			qh = (qh + 1) % sizeof(q);
			qn--;
			echoed++;
			next += c;
		}
	}
	qsort(late, nlate, sizeof(late[0]), cmp64);
	printf("vm_echo: %zu bytes echoed at %u baud; writes late p50 %lld us, max %lld us\n",
	       echoed, baud, nlate ? (long long)late[nlate / 2] / 1000 : 0,
	       nlate ? (long long)late[nlate - 1] / 1000 : 0);
	return 0;
}
