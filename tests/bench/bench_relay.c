/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_relay.c - pass = PATH's relay latency beside socat's, both ways: prints numbers, never a verdict.
 *
 *   build/tests/bench_relay [SAMPLES] [PORTLOGD]
 *
 * The same traffic through the same kind of ptys for each relay: this program
 * holds the master of a pty whose slave is the relay's "device", and opens the
 * pty the relay makes for the application. One side writes a small packet (16
 * bytes), the other waits in poll() until it has all of it: the time between
 * the write and the end of that read is one sample. Device to application and
 * application to device alternate, with a random pause of 1-3 ms between
 * samples (no queueing). Relays: portlogd (pass, reader at its default
 * SCHED_FIFO 97, and with priority = other), socat 1.7 (`socat DEVICE,raw
 * PTY,link=...`, SCHED_OTHER as it runs by default, and under chrt -f 97). The
 * first 10% of each run are left out. Printed: p50, p99, p99.9, max in us.
 * As root (SCHED_FIFO, /dev/ptmx); run it on a quiet machine.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define PKT 16

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static double pct(int64_t *v, size_t n, double p)
{
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);

	return (double)v[i < n ? i : n - 1] / 1000.0;
}

/* Writes a packet on `from`, waits until `to` has given all of it back; ns, or -1. */
static int64_t one(int from, int to, uint8_t seq)
{
	uint8_t out[PKT], in[PKT];
	size_t got = 0;
	int64_t t0;

	memset(out, seq, sizeof(out));
	t0 = tu_mono_ns();
	if (write(from, out, sizeof(out)) != (ssize_t)sizeof(out))
		return -1;
	while (got < sizeof(in)) {
		struct pollfd pfd = { .fd = to, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 1000) <= 0)
			return -1;
		n = read(to, in + got, sizeof(in) - got);
		if (n > 0)
			got += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
	}
	return memcmp(in, out, sizeof(in)) == 0 ? tu_mono_ns() - t0 : -1;
}

static void raw(int fd)
{
	struct termios tio;

	if (tcgetattr(fd, &tio) == 0) {
		cfmakeraw(&tio);
		cfsetispeed(&tio, B115200);
		cfsetospeed(&tio, B115200);
		(void)tcsetattr(fd, TCSANOW, &tio);
	}
}

static void wait_path(const char *path)
{
	for (int i = 0; i < 500 && access(path, F_OK) < 0; i++)
		sleep_us(10000);
}

/* Measures n samples each way through a relay between device (master dev_m)
 * and the application's pty at app_path; prints one line per direction. */
static void measure(const char *name, int dev_m, const char *app_path, size_t n)
{
	int64_t *d2a = calloc(n, sizeof(int64_t)), *a2d = calloc(n, sizeof(int64_t));
	uint64_t rng = 12345;
	size_t k2a = 0, k2d = 0, skip = n / 10;
	int app = open(app_path, O_RDWR | O_NOCTTY | O_NONBLOCK);

	if (app < 0 || d2a == NULL || a2d == NULL) {
		printf("%-28s cannot open %s: %s\n", name, app_path, strerror(errno));
		goto out;
	}
	raw(app);
	sleep_us(100000);
	for (size_t i = 0; i < n; i++) {
		int64_t a = one(dev_m, app, (uint8_t)(2 * i)), b;

		sleep_us(1000 + (long)(tu_rand(&rng) % 2000));
		b = one(app, dev_m, (uint8_t)(2 * i + 1));
		sleep_us(1000 + (long)(tu_rand(&rng) % 2000));
		if (i < skip)
			continue;
		if (a >= 0)
			d2a[k2a++] = a;
		if (b >= 0)
			a2d[k2d++] = b;
	}
	qsort(d2a, k2a, sizeof(int64_t), cmp64);
	qsort(a2d, k2d, sizeof(int64_t), cmp64);
	if (k2a > 0)
		printf("%-28s device->app  n=%-6zu p50 %7.1f  p99 %7.1f  p99.9 %7.1f  max %8.1f us\n",
		       name, k2a, pct(d2a, k2a, 50), pct(d2a, k2a, 99), pct(d2a, k2a, 99.9),
		       pct(d2a, k2a, 100));
	if (k2d > 0)
		printf("%-28s app->device  n=%-6zu p50 %7.1f  p99 %7.1f  p99.9 %7.1f  max %8.1f us\n",
		       name, k2d, pct(a2d, k2d, 50), pct(a2d, k2d, 99), pct(a2d, k2d, 99.9),
		       pct(a2d, k2d, 100));
	if (k2a + k2d < 2 * (n - skip))
		printf("%-28s %zu samples lost or wrong\n", name, 2 * (n - skip) - k2a - k2d);
	fflush(stdout);
out:
	if (app >= 0)
		close(app);
	free(d2a);
	free(a2d);
}

static pid_t spawn(char *const *argv, const char *out)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void reap(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
}

/* The device: a pty whose slave the relay opens by path. */
static int device(char *slave, size_t len)
{
	int m, s;

	if (openpty(&m, &s, NULL, NULL, NULL) < 0)
		return -1;
	snprintf(slave, len, "%s", ttyname(s));
	raw(s);
	close(s);
	(void)fcntl(m, F_SETFL, O_NONBLOCK);
	return m;
}

static void run_portlogd(const char *bin, const char *dir, const char *prio, size_t n)
{
	char slave[64], conf[512], app[512], text[2048], out[512], name[64];
	char *argv[] = { (char *)bin, "-f", "-c", conf, NULL };
	int m = device(slave, sizeof(slave));
	pid_t pid;
	FILE *f;

	snprintf(conf, sizeof(conf), "%s/relay.conf", dir);
	snprintf(app, sizeof(app), "%s/app-%s", dir, prio);
	snprintf(out, sizeof(out), "%s/portlogd.out", dir);
	f = fopen(conf, "w");
	if (m < 0 || f == NULL)
		return;
	snprintf(text, sizeof(text),
		 "[logger]\nlog_file = %s/relay.log\nstat_interval_s = 0\n"
		 "[timer]\nidle_latency = off\n"         /* main holds it for every relay */
		 "[serial dev]\ndevice = %s\nbaud = 115200\npass = %s\npriority = %s\n",
		 dir, slave, app, prio);
	fputs(text, f);
	fclose(f);
	pid = spawn(argv, out);
	wait_path(app);
	snprintf(name, sizeof(name), "portlogd (priority %s)", prio);
	measure(name, m, app, n);
	reap(pid);
	close(m);
}

static void run_socat(const char *dir, bool fifo, size_t n)
{
	char slave[64], a[256], b[600], out[512], app[512];
	char *plain[] = { "socat", a, b, NULL };
	char *rt[] = { "chrt", "-f", "97", "socat", a, b, NULL };
	int m = device(slave, sizeof(slave));
	pid_t pid;

	snprintf(app, sizeof(app), "%s/app-socat%s", dir, fifo ? "-rt" : "");
	snprintf(a, sizeof(a), "%s,raw,echo=0", slave);
	snprintf(b, sizeof(b), "pty,link=%s,raw,echo=0", app);
	snprintf(out, sizeof(out), "%s/socat.out", dir);
	if (m < 0)
		return;
	pid = spawn(fifo ? rt : plain, out);
	wait_path(app);
	measure(fifo ? "socat (chrt -f 97)" : "socat (SCHED_OTHER)", m, app, n);
	reap(pid);
	close(m);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? (size_t)atol(argv[1]) : 2000;
	const char *bin = argc > 2 ? argv[2] : PORTLOGD_BIN;
	char dir[] = "/tmp/portlogd-bench-relay-XXXXXX";

	int32_t zero = 0;
	int dma = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	/*
	 * Every relay under the same idle states: portlogd would hold the CPUs out of
	 * halt for its own run only (idle_latency), socat never does, and a wake-up
	 * from halt costs more than the relay. Held here, for all, as cyclictest does.
	 */
	if (dma < 0 || write(dma, &zero, sizeof(zero)) != (ssize_t)sizeof(zero))
		fprintf(stderr, "bench_relay: /dev/cpu_dma_latency not held (%s): the CPUs may "
			"halt between samples\n", strerror(errno));
	printf("# relay latency, %zu samples each way (the first 10%% left out), %d-byte packets, "
	       "1-3 ms apart, /dev/cpu_dma_latency held at 0 for every relay; %s\n", n, PKT,
	       bin);
	run_portlogd(bin, dir, "97", n);
	run_socat(dir, false, n);
	run_portlogd(bin, dir, "other", n);
	run_socat(dir, true, n);
	if (dma >= 0)
		close(dma);
	return 0;
}
