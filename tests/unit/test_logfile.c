/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_logfile.c - the log file: repair, write back-off, replace, reopen, sync pacing, and the events it reports. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "failio.h"
#include "logfile.h"

/* ---- fixture: a directory, a log file, and a handler that records events ---- */

#define MAX_EVENTS 16
#define SYNC_NS (100 * NS_PER_MS)

struct fx {
	char dir[64];
	char path[128];
	struct logfile lf;
	bool open;
	char err[256];
	struct logfile_event ev[MAX_EVENTS];
	unsigned nev;
	const char *mark;       /* the handler adds this line for each event, when set */
};

static void handler(void *ctx, struct logfile *lf, const struct logfile_event *ev)
{
	struct fx *fx = ctx;

	assert_ptr_equal(lf, &fx->lf);
	assert_true(fx->nev < MAX_EVENTS);
	fx->ev[fx->nev++] = *ev;
	if (fx->mark != NULL) {
		size_t n = strlen(fx->mark);

		assert_true(logfile_room(lf) > n);
		memcpy(logfile_end(lf), fx->mark, n);
		logfile_commit(lf, n);
	}
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/portlogd-test-logfile-XXXXXX");
	if (mkdtemp(fx->dir) == NULL) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/portlogd.log", fx->dir);
	failio_reset();
	*state = fx;
	return 0;
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char p[400];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (unlink(p) < 0)
			remove_tree(p);     /* best effort: a temporary directory */
	}
	closedir(d);
	(void)rmdir(dir);
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	if (fx->open)
		logfile_close(&fx->lf);
	failio_reset();
	remove_tree(fx->dir);
	free(fx);
	return 0;
}

static void fx_open(struct fx *fx)
{
	int rc = logfile_open(&fx->lf, fx->path, 4096, SYNC_NS, handler, fx, fx->err,
			      sizeof(fx->err));

	if (rc != 0)
		fail_msg("logfile_open: %d %s", rc, fx->err);
	fx->open = true;
}

/* Appends whole lines to the buffer, as the flusher does. */
static void add(struct fx *fx, const char *lines)
{
	size_t n = strlen(lines);

	assert_true(logfile_room(&fx->lf) >= n);
	memcpy(logfile_end(&fx->lf), lines, n);
	logfile_commit(&fx->lf, n);
}

static void write_file(const char *path, const char *data, size_t len)
{
	FILE *fp = fopen(path, "wb");

	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

/* The file's bytes must be exactly `want`. */
static void expect_file(const char *path, const char *want, size_t len)
{
	char *buf = malloc(len + 2);
	FILE *fp = fopen(path, "rb");
	size_t n;

	assert_non_null(buf);
	if (fp == NULL)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	n = fread(buf, 1, len + 1, fp);
	fclose(fp);
	if (n != len || memcmp(buf, want, len) != 0)
		fail_msg("%s: %zu bytes \"%.*s\", expected %zu \"%.*s\"", path, n, (int)n, buf, len,
			 (int)len, want);
	free(buf);
}

static void expect_file_str(const char *path, const char *want)
{
	expect_file(path, want, strlen(want));
}

/* ---- repair at open ---- */

/* kept_len bytes of whole lines, then torn bytes without a newline: the open
 * leaves exactly the whole lines and says how much it cut (nothing: no event). */
static void check_repair(struct fx *fx, const char *kept, size_t kept_len, size_t torn)
{
	char *data = malloc(kept_len + torn + 1);

	assert_non_null(data);
	memcpy(data, kept, kept_len);
	memset(data + kept_len, 'z', torn);
	write_file(fx->path, data, kept_len + torn);
	fx->nev = 0;
	fx_open(fx);
	expect_file(fx->path, kept, kept_len);
	if (torn == 0) {
		assert_int_equal(fx->nev, 0);
	} else {
		assert_int_equal(fx->nev, 1);
		assert_int_equal(fx->ev[0].what, LOGFILE_REPAIRED);
		assert_int_equal(fx->ev[0].cut, torn);
	}
	logfile_close(&fx->lf);
	fx->open = false;
	free(data);
}

static void test_repair_torn_tail(void **state)
{
	struct fx *fx = *state;
	static char many[10000];

	check_repair(fx, "x 1\nx 2\n", 8, 7);
	/* the last newline is more than one 4096-byte read back */
	check_repair(fx, "ok\n", 3, 10000);
	/* no newline at all: the whole file is one torn line */
	check_repair(fx, "", 0, 5000);
	/* nothing to repair */
	check_repair(fx, "x 1\nx 2\n", 8, 0);
	check_repair(fx, "", 0, 0);
	/* many complete lines, then a torn one that fills the first read back exactly */
	for (size_t i = 0; i < sizeof(many); i++)
		many[i] = i % 100 == 99 ? '\n' : (char)('a' + i % 26);
	check_repair(fx, many, sizeof(many), 4096);
}

/*
 * A log past 4 GiB (weeks of a busy port without rotation): opened, its torn tail cut and
 * appended to like any other. A 32-bit build without _FILE_OFFSET_BITS=64 fails here:
 * open() says EOVERFLOW. The test makes the sparse file with the explicit 64-bit calls,
 * which do not depend on the build's off_t.
 */
static void test_repair_past_4gib(void **state)
{
	struct fx *fx = *state;
	const off64_t size = ((off64_t)1 << 32) + 4096;
	struct stat64 st;
	char tail[16];
	int fd;

	fd = open(fx->path, O_WRONLY | O_CREAT | O_LARGEFILE | O_CLOEXEC, 0640);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate64(fd, size - 6), 0);
	assert_int_equal(pwrite64(fd, "xa\nbcd", 6, size - 6), 6);
	close(fd);
	fx_open(fx);
	assert_int_equal(fx->nev, 1);
	assert_int_equal(fx->ev[0].what, LOGFILE_REPAIRED);
	assert_int_equal(fx->ev[0].cut, 3);
	add(fx, "next\n");
	assert_int_equal(logfile_write(&fx->lf, mono_ns()), 0);
	assert_int_equal(stat64(fx->path, &st), 0);
	assert_true(st.st_size == size - 3 + 5);
	fd = open(fx->path, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread64(fd, tail, 7, st.st_size - 7), 7);
	close(fd);
	assert_memory_equal(tail, "a\nnext\n", 7);
}

/* The handler's line goes where the flusher puts it: at the end, then written. */
static void test_repair_line_written(void **state)
{
	struct fx *fx = *state;

	write_file(fx->path, "a\nbc", 4);
	fx->mark = "repaired\n";
	fx_open(fx);
	add(fx, "next\n");
	assert_int_equal(logfile_write(&fx->lf, mono_ns()), 0);
	expect_file_str(fx->path, "a\nrepaired\nnext\n");
	assert_int_equal(logfile_lines(&fx->lf), 0);
}

static void test_open_missing_directory(void **state)
{
	struct fx *fx = *state;
	int rc;

	snprintf(fx->path, sizeof(fx->path), "%s/missing/portlogd.log", fx->dir);
	rc = logfile_open(&fx->lf, fx->path, 4096, SYNC_NS, handler, fx, fx->err,
			  sizeof(fx->err));
	assert_int_equal(rc, -ENOENT);
	if (strstr(fx->err, fx->path) == NULL)
		fail_msg("the message does not name the path: %s", fx->err);
	logfile_close(&fx->lf);     /* safe after a failed open */
	logfile_close(&fx->lf);     /* and twice */
}

/* ---- writing ---- */

/*
 * EIO: the lines stay in the buffer, attempts back off from 10 ms doubling to
 * 500 ms (none is made before its time), the outage is said once while its
 * errno stays, and once writing works the lines go out and the recovery is
 * said with the errno and the number of tries.
 */
static void test_write_error_backoff(void **state)
{
	static const int64_t want_ms[] = { 10, 20, 40, 80, 160, 320, 500, 500 };
	struct fx *fx = *state;
	int64_t now = 1000 * NS_PER_S;

	fx_open(fx);
	add(fx, "l1\nl2\nl3\n");
	failio_fd = fx->lf.fd;
	failio_errno = EIO;
	for (size_t i = 0; i < sizeof(want_ms) / sizeof(want_ms[0]); i++) {
		assert_int_equal(logfile_write(&fx->lf, now), -EIO);
		assert_int_equal(failio_writes, i + 1);
		assert_int_equal(fx->lf.backoff_ns, want_ms[i] * NS_PER_MS);
		/* backing off: no attempt before the time comes, even a moment before */
		assert_int_equal(logfile_write(&fx->lf, now + want_ms[i] * NS_PER_MS - 1), -EIO);
		assert_int_equal(failio_writes, i + 1);
		now += want_ms[i] * NS_PER_MS;      /* the back-off time passes */
	}
	assert_int_equal(fx->lf.len, 9);        /* nothing thrown away */
	assert_int_equal(atomic_load(&fx->lf.write_errors), 8);
	assert_int_equal(fx->nev, 1);           /* said once: the errno did not change */
	assert_int_equal(fx->ev[0].what, LOGFILE_WRITE_FAILED);
	assert_int_equal(fx->ev[0].err, EIO);
	assert_int_equal(fx->ev[0].kept, 9);
	assert_true(fx->ev[0].first);
	failio_errno = 0;
	fx->mark = "recovered\n";
	assert_int_equal(logfile_write(&fx->lf, now), 0);
	assert_int_equal(fx->lf.write_errno, 0);
	assert_int_equal(fx->nev, 2);
	assert_int_equal(fx->ev[1].what, LOGFILE_RECOVERED);
	assert_int_equal(fx->ev[1].err, EIO);
	assert_int_equal(fx->ev[1].failures, 8);
	assert_int_equal(fx->ev[1].down_ns, (10 + 20 + 40 + 80 + 160 + 320 + 500 + 500) * NS_PER_MS);
	expect_file_str(fx->path, "l1\nl2\nl3\n");  /* the handler's line waits for the next */
	assert_int_equal(logfile_write(&fx->lf, now), 0);
	expect_file_str(fx->path, "l1\nl2\nl3\nrecovered\n");
	assert_int_equal(atomic_load(&fx->lf.bytes_written), 19);
}

/* Another errno is news: said again, not as the outage's first. A last try at
 * stop ignores the back-off. */
static void test_write_errno_changes(void **state)
{
	struct fx *fx = *state;
	int64_t now = 1000 * NS_PER_S;

	fx_open(fx);
	add(fx, "l1\n");
	failio_fd = fx->lf.fd;
	failio_errno = EIO;
	assert_int_equal(logfile_write(&fx->lf, now), -EIO);
	failio_errno = ENOSPC;
	assert_int_equal(logfile_write(&fx->lf, now), -EIO);   /* backing off */
	logfile_retry_now(&fx->lf);
	assert_int_equal(logfile_write(&fx->lf, now), -ENOSPC);
	assert_int_equal(fx->nev, 2);
	assert_true(fx->ev[0].first);
	assert_int_equal(fx->ev[1].what, LOGFILE_WRITE_FAILED);
	assert_int_equal(fx->ev[1].err, ENOSPC);
	assert_false(fx->ev[1].first);
	assert_int_equal(fx->lf.backoff_ns, 20 * NS_PER_MS);
}

/* ---- a new file: removed, rotated ---- */

/* The log file removed (rm), then its directory: a new one of each, the
 * handler's line first in it, ahead of the lines that were waiting. */
static void test_removed_replaced(void **state)
{
	struct fx *fx = *state;
	char sub[96];
	struct stat st;

	snprintf(sub, sizeof(sub), "%s/logs", fx->dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(fx->path, sizeof(fx->path), "%s/p.log", sub);
	fx_open(fx);
	add(fx, "r0\n");
	assert_int_equal(logfile_write(&fx->lf, mono_ns()), 0);
	fx->mark = "new file\n";
	/* k = 1: the file removed; k = 2: the file and its directory */
	for (unsigned k = 1; k <= 2; k++) {
		char want[32], line[8];

		assert_int_equal(unlink(fx->path), 0);
		if (k == 2)
			assert_int_equal(rmdir(sub), 0);
		snprintf(line, sizeof(line), "r%u\n", k);
		add(fx, line);
		assert_int_equal(logfile_write(&fx->lf, mono_ns()), 0);
		snprintf(want, sizeof(want), "new file\nr%u\n", k);
		expect_file_str(fx->path, want);
		assert_int_equal(fx->nev, k);
		assert_int_equal(fx->ev[k - 1].what, LOGFILE_REPLACED);
		assert_int_equal(fx->ev[k - 1].cut, 0);
	}
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0750);
	/* a file still there (renamed) is no reason for a new one */
	fx->nev = 0;
	add(fx, "r3\n");
	assert_int_equal(logfile_write(&fx->lf, mono_ns()), 0);
	assert_int_equal(fx->nev, 0);
	expect_file_str(fx->path, "new file\nr2\nr3\n");
}

/*
 * The disk fills in the middle of a line, then the log is removed to make room:
 * the new file must not start with the rest of that line. It is cut, and the
 * event says how many bytes.
 */
static void test_torn_line_not_carried_over(void **state)
{
	struct fx *fx = *state;

	fx_open(fx);
	add(fx, "first line\nsecond\nthird\n");
	failio_fd = fx->lf.fd;
	failio_short = 4;
	assert_int_equal(logfile_write(&fx->lf, mono_ns()), -ENOSPC);
	assert_true(fx->lf.torn);
	assert_int_equal(unlink(fx->path), 0);
	failio_fd = -1;
	failio_errno = 0;
	logfile_retry_now(&fx->lf);
	fx->mark = "reopened\n";
	assert_int_equal(logfile_write(&fx->lf, mono_ns()), 0);
	expect_file_str(fx->path, "reopened\nsecond\nthird\n");
	assert_int_equal(fx->nev, 3);   /* failed, replaced (the mark), recovered (a mark too) */
	assert_int_equal(fx->ev[1].what, LOGFILE_REPLACED);
	assert_int_equal(fx->ev[1].cut, strlen("first line\n") - 4);
	assert_int_equal(fx->ev[2].what, LOGFILE_RECOVERED);
	assert_false(fx->lf.torn);
}

/* SIGHUP after a rename: the old file keeps what was written, the new one starts
 * with the handler's line; an incomplete last line already there is cut. */
static void test_reopen(void **state)
{
	struct fx *fx = *state;
	char old[160];

	snprintf(old, sizeof(old), "%s.1", fx->path);
	fx_open(fx);
	add(fx, "before\n");
	assert_int_equal(logfile_write(&fx->lf, mono_ns()), 0);
	assert_int_equal(rename(fx->path, old), 0);
	write_file(fx->path, "kept\ntorn", 9);    /* someone else's file, with a torn end */
	fx->mark = "ev\n";
	assert_int_equal(logfile_reopen(&fx->lf, mono_ns()), 0);
	assert_int_equal(fx->nev, 2);
	assert_int_equal(fx->ev[0].what, LOGFILE_REPAIRED);
	assert_int_equal(fx->ev[0].cut, 4);
	assert_int_equal(fx->ev[1].what, LOGFILE_REOPENED);
	assert_int_equal(fx->ev[1].cut, 0);
	add(fx, "after\n");
	assert_int_equal(logfile_write(&fx->lf, mono_ns()), 0);
	/* the reopen's line first, then the repair's, then what followed */
	expect_file_str(fx->path, "kept\nev\nev\nafter\n");
	expect_file_str(old, "before\n");
}

/* A reopen that cannot open the path says so and stays with the old file. */
static void test_reopen_failed(void **state)
{
	struct fx *fx = *state;
	char old[160];

	fx_open(fx);
	snprintf(old, sizeof(old), "%s", fx->path);
	/* logfile keeps the path by reference: the config's, which does not change */
	snprintf(fx->path, sizeof(fx->path), "%s/no/such/dir.log", fx->dir);
	assert_int_equal(logfile_reopen(&fx->lf, mono_ns()), -ENOENT);
	assert_int_equal(fx->nev, 1);
	assert_int_equal(fx->ev[0].what, LOGFILE_REOPEN_FAILED);
	assert_int_equal(fx->ev[0].err, ENOENT);
	add(fx, "still here\n");
	assert_int_equal(logfile_write(&fx->lf, mono_ns()), 0);
	expect_file_str(old, "still here\n");
}

/* ---- sync pacing ---- */

/* fdatasync only after something was written, at most every interval (or when
 * forced); a failure is said and counted as a write error. */
static void test_sync_pacing(void **state)
{
	struct fx *fx = *state;
	int64_t t0;

	fx_open(fx);
	t0 = fx->lf.last_sync_mono;
	logfile_sync(&fx->lf, t0 + 10 * SYNC_NS, false);
	assert_int_equal(failio_syncs, 0);             /* nothing written */
	add(fx, "a\n");
	assert_int_equal(logfile_write(&fx->lf, t0), 0);
	logfile_sync(&fx->lf, t0 + SYNC_NS - 1, false);
	assert_int_equal(failio_syncs, 0);             /* too soon */
	logfile_sync(&fx->lf, t0 + SYNC_NS, false);
	assert_int_equal(failio_syncs, 1);
	logfile_sync(&fx->lf, t0 + 3 * SYNC_NS, false);
	assert_int_equal(failio_syncs, 1);             /* nothing new */
	add(fx, "b\n");
	assert_int_equal(logfile_write(&fx->lf, t0), 0);
	logfile_sync(&fx->lf, t0 + SYNC_NS + 1, true);
	assert_int_equal(failio_syncs, 2);             /* forced */
	add(fx, "c\n");
	assert_int_equal(logfile_write(&fx->lf, t0), 0);
	failio_sync_errno = EIO;
	logfile_sync(&fx->lf, t0 + 10 * SYNC_NS, false);
	assert_int_equal(failio_syncs, 3);
	assert_int_equal(fx->nev, 1);
	assert_int_equal(fx->ev[0].what, LOGFILE_SYNC_FAILED);
	assert_int_equal(fx->ev[0].err, EIO);
	assert_int_equal(atomic_load(&fx->lf.write_errors), 1);
	logfile_sync(&fx->lf, t0 + 20 * SYNC_NS, false);
	assert_int_equal(failio_syncs, 3);             /* said once, not retried */
}

/* A FIFO as the log (a pipe to another program): nothing to repair, sync or replace. */
static void test_fifo_log(void **state)
{
	struct fx *fx = *state;
	char buf[32];
	int rd;
	ssize_t n;

	assert_int_equal(mkfifo(fx->path, 0600), 0);
	rd = open(fx->path, O_RDONLY | O_NONBLOCK);
	assert_true(rd >= 0);
	fx_open(fx);
	assert_false(fx->lf.regular);
	add(fx, "x\n");
	assert_int_equal(logfile_write(&fx->lf, mono_ns()), 0);
	logfile_sync(&fx->lf, mono_ns() + 10 * SYNC_NS, true);
	assert_int_equal(failio_syncs, 0);
	n = read(rd, buf, sizeof(buf));
	assert_int_equal(n, 2);
	assert_memory_equal(buf, "x\n", 2);
	close(rd);
	assert_int_equal(fx->nev, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_repair_torn_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_past_4gib, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_line_written, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_missing_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_error_backoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_errno_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_removed_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_line_not_carried_over, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_failed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_pacing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_log, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
