/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_replay_edge.c - portlogd --replay where it meets a full disk, a stuck pipe and a hostile log (issue 32).
 *
 * full_disk: the replay writes --to a file on a tmpfs of 64 KiB (mounted in a
 * private mount namespace of this test: root, else skipped); once the
 * filesystem has no block left, the replay must end with exit status 2 and
 * say what, where and what to do, within a second (printed, asserted).
 * stuck_pipe: --to - into a non-blocking pipe that nobody reads: the replay
 * waits for room with poll() and gives up after REPLAY_STUCK_S seconds without
 * progress, with exit status 2 and the reason (the wait is printed, asserted
 * to be that bound and not much more).
 * hostile_logs: huge times (the ends of int64), times going backwards, bauds
 * 0 and 1, a clock step beyond int64 nanoseconds, a tiny --speed, and 100,000
 * random lines: never a crash (the ASan/UBSan build aborts on an overflow), a
 * hang, or a wrong figure (a baud of 1: a character of 10 s, not truncated).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "testutil.h"

#define REPLAY_STUCK_S 5        /* replay_play.c's REPLAY_STUCK_NS */
#define HANG_MS 20000           /* a replay still running after this hangs */

static pid_t child = -1;

static int teardown(void **state)
{
	(void)state;
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = -1;
	}
	return 0;
}

static const char *bin(void)
{
	const char *b = getenv("PORTLOGD_BIN");

	return b != NULL && *b != '\0' ? b : PORTLOGD_BIN;
}

/* Starts argv (the daemon binary) with its stdout on fd out (-1: this one's), stderr into file err. */
static pid_t start_v(int out, const char *err, const char *const *argv)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0 || dup2(fd, 2) < 0 || (out >= 0 && dup2(out, 1) < 0))
			_exit(126);
		unsetenv("NOTIFY_SOCKET");
		execv(bin(), (char *const *)argv);
		_exit(127);
	}
	child = pid;
	return pid;
}

/* portlogd --replay A0... (NULL-terminated) into argv (32 places). */
#define REPLAY_ARGV(argv, a0) do { \
	va_list ap; \
	size_t n = 2; \
	argv[0] = "portlogd"; \
	argv[1] = "--replay"; \
	va_start(ap, a0); \
	for (const char *a = a0; a != NULL && n < 31; a = va_arg(ap, const char *)) \
		argv[n++] = a; \
	va_end(ap); \
	argv[n] = NULL; \
} while (0)

/* Starts portlogd --replay ARGS... (NULL-terminated); its stdout on fd out, stderr into file err. */
static pid_t start(int out, const char *err, const char *a0, ...)
{
	const char *argv[32];

	REPLAY_ARGV(argv, a0);
	return start_v(out, err, argv);
}

/* Its exit status (128 + signal) once it has exited; -1 when not yet. */
static int exited(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, WNOHANG) != pid)
		return -1;
	child = -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Waits for the replay to end, HANG_MS at most, calling look(ctx, now) every
 * millisecond meanwhile: its exit status (-1: still running then), *t_exit when it
 * ended.
 */
static int watch(int64_t t0, void (*look)(void *ctx, int64_t now), void *ctx, int64_t *t_exit)
{
	for (;;) {
		int64_t now = tu_mono_ns();
		int rc;

		look(ctx, now);
		if ((rc = exited(child)) >= 0) {
			*t_exit = now;
			return rc;
		}
		if (now - t0 > (int64_t)HANG_MS * 1000000)
			return -1;
		tu_sleep_ms(1);
	}
}

/* full_disk's look: when the tmpfs first had no space left */
struct disk_look {
	const char *mnt;
	int64_t t_full;
};

static void look_disk(void *ctx, int64_t now)
{
	struct disk_look *d = ctx;
	struct statvfs sv;

	if (d->t_full == 0 && statvfs(d->mnt, &sv) == 0 && sv.f_bavail == 0)
		d->t_full = now;
}

/* stuck_pipe's look: the last time the pipe's fill changed (the replay's progress) */
struct pipe_look {
	int fd, fill;
	int64_t t_last;
};

static void look_pipe(void *ctx, int64_t now)
{
	struct pipe_look *pl = ctx;
	int n = 0;

	if (ioctl(pl->fd, FIONREAD, &n) == 0 && n != pl->fill) {
		pl->fill = n;
		pl->t_last = now;
	}
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = calloc(1, 1 << 20);
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void expect_said(const char *err, const char *needle)
{
	if (strstr(err, needle) == NULL) {
		fprintf(stderr, "%s", err);
		fail_msg("not said: '%s' (its stderr above)", needle);
	}
}

/* A log of n packets of len bytes (hex), every step_ms, of source x (no EV open: no baud). */
static void packets_log(const char *path, unsigned n, unsigned len, unsigned step_ms)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	for (unsigned i = 0; i < n; i++) {
		uint64_t ms = (uint64_t)i * step_ms;

		fprintf(f, "2240000%03" PRIu64 ".%03" PRIu64 "000000 x RX %u ", ms / 1000, ms % 1000, len);
		for (unsigned k = 0; k < len; k++)
			fprintf(f, "%02x", (unsigned)(0x41 + (i + k) % 26));
		fputc('\n', f);
	}
	fclose(f);
}

/*
 * 200 packets of 1000 bytes every 10 ms into a file on a 64 KiB tmpfs: the
 * 66th write is short (the filesystem is full), the next fails with ENOSPC.
 * The replay must stop there: exit 2, the reason named, within a second of
 * the moment this test saw no free block left.
 */
static void full_disk(void **state)
{
	char dir[256], mnt[300], log[300], out[320], errf[300];
	int64_t t_full = 0, t_exit = 0, t0;
	int rc = -1;
	char *err;

	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr, "full_disk: needs root (a tmpfs in a mount namespace): skipped\n");
		skip();
	}
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(mnt, sizeof(mnt), "%s/small", dir);
	snprintf(log, sizeof(log), "%s/in.log", dir);
	snprintf(out, sizeof(out), "%s/out", mnt);
	snprintf(errf, sizeof(errf), "%s/stderr", dir);
	assert_int_equal(mkdir(mnt, 0755), 0);
	/* this process's own mount namespace: the tmpfs is seen by it and its children only */
	assert_int_equal(unshare(CLONE_NEWNS), 0);
	assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	assert_int_equal(mount("tmpfs", mnt, "tmpfs", 0, "size=64k,mode=0755"), 0);
	e2e_write_file(out, "");
	packets_log(log, 200, 1000, 10);

	t0 = tu_mono_ns();
	start(-1, errf, "--to", out, log, NULL);
	{
		struct disk_look d = { .mnt = mnt };

		rc = watch(t0, look_disk, &d, &t_exit);
		t_full = d.t_full;
	}
	err = slurp(errf);
	fprintf(stderr, "full_disk: stderr:\n%s", err);
	if (rc < 0)
		fail_msg("the replay still runs %d s after it started (the disk filled %s)", HANG_MS / 1000,
			 t_full ? "then" : "never");
	assert_true(t_full != 0);
	fprintf(stderr, "full_disk: exit status %d, %.1f ms after the disk filled (%.1f ms after the "
		"start)\n", rc, (double)(t_exit - t_full) / 1e6, (double)(t_exit - t0) / 1e6);
	assert_int_equal(rc, 2);
	expect_said(err, "No space left on device");
	expect_said(err, out);
	expect_said(err, "free space");
	assert_true(t_exit - t_full < 1000000000);
	free(err);
	umount(mnt);
	e2e_remove_dir(dir);
}

/*
 * --to - into a pipe whose writing end is non-blocking and whose reader never
 * reads: 300 packets of 1000 bytes at --speed 0 fill it at once. The replay
 * must wait for room (poll, not a spin), give up after REPLAY_STUCK_S s
 * without progress, exit 2, and say why.
 */
static void stuck_pipe(void **state)
{
	char dir[256], log[300], errf[300];
	int p[2], rc = -1, fill = 0;
	int64_t t_last = 0, t_exit = 0, t0;
	struct rusage ru;
	char *err;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(log, sizeof(log), "%s/in.log", dir);
	snprintf(errf, sizeof(errf), "%s/stderr", dir);
	packets_log(log, 300, 1000, 10);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);

	t0 = t_last = tu_mono_ns();
	start(p[1], errf, "--to", "-", "--speed", "0", log, NULL);
	close(p[1]);
	{
		struct pipe_look pl = { .fd = p[0], .fill = fill, .t_last = t_last };

		rc = watch(t0, look_pipe, &pl, &t_exit);
		fill = pl.fill;
		t_last = pl.t_last;     /* the last progress the replay made */
	}
	err = slurp(errf);
	fprintf(stderr, "stuck_pipe: stderr:\n%s", err);
	if (rc < 0)
		fail_msg("the replay still runs %d s after it started (the pipe holds %d bytes)",
			 HANG_MS / 1000, fill);
	fprintf(stderr, "stuck_pipe: exit status %d, %.1f ms after its last write (%d bytes in the "
		"pipe)\n", rc, (double)(t_exit - t_last) / 1e6, fill);
	assert_int_equal(rc, 2);
	expect_said(err, "--to -");
	expect_said(err, "took nothing for 5 s");
	/* it waited the bound, and not much more */
	assert_true(t_exit - t_last >= (int64_t)REPLAY_STUCK_S * 1000000000 - 100000000);
	assert_true(t_exit - t_last < (int64_t)(REPLAY_STUCK_S + 1) * 1000000000);
	/* the wait was poll()'s: the child's CPU time is far below the wall time it waited */
	assert_int_equal(getrusage(RUSAGE_CHILDREN, &ru), 0);
	fprintf(stderr, "stuck_pipe: the replay's CPU time %ld.%03ld s\n",
		(long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec),
		(long)((ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000) % 1000);
	assert_true(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec < REPLAY_STUCK_S / 2);
	close(p[0]);
	free(err);
	e2e_remove_dir(dir);
}

/* Runs a replay to /dev/null to its end (HANG_MS at most); its exit status, stderr in *err. */
static int run(const char *dir, char **err, const char *a0, ...)
{
	const char *argv[32];
	char errf[300];
	int64_t t0 = tu_mono_ns();
	pid_t pid;
	int rc;

	snprintf(errf, sizeof(errf), "%s/stderr", dir);
	REPLAY_ARGV(argv, a0);
	pid = start_v(-1, errf, argv);
	while ((rc = exited(pid)) < 0 && tu_mono_ns() - t0 < (int64_t)HANG_MS * 1000000)
		tu_sleep_ms(5);
	*err = slurp(errf);
	if (rc < 0) {
		fprintf(stderr, "%s", *err);
		fail_msg("the replay hangs: still running after %d s", HANG_MS / 1000);
	}
	if (rc >= 128) {
		fprintf(stderr, "%s", *err);
		fail_msg("the replay died of signal %d", rc - 128);
	}
	return rc;
}

static void hostile_logs(void **state)
{
	char dir[256], log[300], *err;
	uint64_t seed = tu_seed("hostile_logs"), rs;
	FILE *f;
	int rc;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(log, sizeof(log), "%s/h.log", dir);

	/* the ends of time, backwards, and a clock step beyond 292 years */
	e2e_write_file(log,
		"-9223372036.854775808 x RX 1 41\n"
		"9223372036.854775807 x RX 1 42\n"
		"0.000000000 x RX 1 43\n"
		"9223372036.854775807 portlogd EV clock-step delta_us=9223372036854775807\n"
		"9223372036.854775807 x RX 1 44\n"
		"-9223372036.854775808 portlogd EV clock-step delta_us=-9223372036854775808\n"
		"-9223372036.854775808 x RX 1 45\n");
	rc = run(dir, &err, "--to", "/dev/null", "--speed", "0", log, NULL);
	fprintf(stderr, "hostile_logs: the ends of time at --speed 0: exit %d\n%s", rc, err);
	assert_int_equal(rc, 0);        /* every packet played, no overflow trapped */
	free(err);
	/* at --speed 1: a timeline of 584 years is refused, not waited for */
	rc = run(dir, &err, "--to", "/dev/null", log, NULL);
	fprintf(stderr, "hostile_logs: the ends of time at --speed 1: exit %d\n%s", rc, err);
	assert_int_equal(rc, 2);
	expect_said(err, "larger --speed");
	free(err);

	/* a tiny --speed: a second of log would be 1e300 s */
	e2e_write_file(log, "2240000000.000000000 x RX 1 41\n2240000001.000000000 x RX 1 42\n");
	rc = run(dir, &err, "--to", "/dev/null", "--speed", "1e-300", log, NULL);
	fprintf(stderr, "hostile_logs: --speed 1e-300: exit %d\n%s", rc, err);
	assert_int_equal(rc, 2);
	expect_said(err, "larger --speed");
	free(err);

	/* baud 0 (no baud), then 1: a character of 10 s (8N1), its 3.5 of silence 35 s */
	e2e_write_file(log,
		"2240000000.000000000 x EV open device=/dev/ttyS0 driver=termios baud=0 format=8N1\n"
		"2240000000.100000000 x RX 1 41\n"
		"2240000000.200000000 x EV open device=/dev/ttyS0 driver=termios baud=1 format=8N1\n"
		"2240000000.300000000 x RX 1 42\n"
		"2240000001.000000000 x RX 1 43\n");
	rc = run(dir, &err, "--to", "/dev/null", "--speed", "0", log, NULL);
	fprintf(stderr, "hostile_logs: bauds 0 and 1 at --speed 0: exit %d\n%s", rc, err);
	assert_int_equal(rc, 0);
	free(err);
	{
		/* at --speed 1 the packet after the first at baud 1 is held back 35 s: said
		 * before the play begins, then a signal stops it */
		char errf[300];
		int64_t t0 = tu_mono_ns();
		bool said = false;

		snprintf(errf, sizeof(errf), "%s/stderr", dir);
		start(-1, errf, "--to", "/dev/null", log, NULL);
		while (!said && tu_mono_ns() - t0 < (int64_t)HANG_MS * 1000000) {
			err = slurp(errf);
			said = strstr(err, "held back") != NULL;
			if (!said)
				free(err);
			tu_sleep_ms(10);
		}
		assert_true(said);
		kill(child, SIGINT);
		while ((rc = exited(child)) < 0)
			tu_sleep_ms(10);
		fprintf(stderr, "hostile_logs: baud 1 at --speed 1, stopped: exit %d\n%s", rc, err);
		expect_said(err, "less than the gap of 35000000 us");
		free(err);
	}

	/* 100,000 random lines: pieces of real ones, in any order */
	f = fopen(log, "w");
	assert_non_null(f);
	rs = seed;
	for (int i = 0; i < 100000; i++) {
		static const char *const src[] = { "x", "y", "portlogd" };
		static const char *const rest[] = {
			"RX 3 414243", "TX 2 4142", "RX 1 00", "DROP rx 5 100",
			"EV open device=/dev/ttyS0 driver=termios baud=", "EV close",
			"EV late-delivery", "EV start version=0 pid=1", "EV stop",
			"EV clock-step delta_us=", "RX 65535 zz", "garbage",
		};
		uint64_t v = tu_rand(&rs);
		int64_t t = (int64_t)tu_rand(&rs);
		unsigned r = (unsigned)(v % 12);
		char line[256];

		if (v & (1ULL << 40))
			t %= 4000000000LL * 1000000000LL / 1000;       /* mostly nearby times */
		if (r == 4)
			snprintf(line, sizeof(line), "%s%u format=8N1 gap_us=%u", rest[r],
				 (unsigned)(tu_rand(&rs) % 4), (unsigned)(tu_rand(&rs) % 5000000));
		else if (r == 9)
			snprintf(line, sizeof(line), "%s%lld", rest[r], (long long)tu_rand(&rs));
		else
			snprintf(line, sizeof(line), "%s", rest[r]);
		fprintf(f, "%s%lld.%09lld %s %s\n", t < 0 && t / 1000000000 == 0 ? "-" : "",
			(long long)(t / 1000000000), (long long)llabs(t % 1000000000),
			src[(v >> 8) % 3], line);
	}
	fclose(f);
	rc = run(dir, &err, "--source", "x", "--to", "/dev/null", "--speed", "0", log, NULL);
	fprintf(stderr, "hostile_logs: 100000 random lines (seed %" PRIu64 ") at --speed 0: exit %d, "
		"%zu bytes said\n", seed, rc, strlen(err));
	free(err);
	e2e_remove_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(full_disk, teardown),
		cmocka_unit_test_teardown(stuck_pipe, teardown),
		cmocka_unit_test_teardown(hostile_logs, teardown),
	};

	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
