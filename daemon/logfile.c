/* SPDX-License-Identifier: GPL-2.0-or-later */
/* logfile.c - the log file: open with repair, reopen, replace when removed, write, sync. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "logfile.h"

static void say(struct logfile *lf, const struct logfile_event *ev)
{
	if (lf->handler != NULL)
		lf->handler(lf->ctx, lf, ev);
}

/*
 * A crash or power cut can leave a last line without its newline. Appending to
 * it would put a torn line in the middle of the file, so cut it off and say so.
 */
static void repair_tail(struct logfile *lf, int fd)
{
	struct logfile_event ev = { .what = LOGFILE_REPAIRED };
	char buf[4096];
	struct stat st;
	off_t end, pos;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
		return;
	end = st.st_size;
	if (pread(fd, buf, 1, end - 1) != 1 || buf[0] == '\n')
		return;
	for (pos = end; pos > 0;) {
		off_t from = pos > (off_t)sizeof(buf) ? pos - (off_t)sizeof(buf) : 0;
		ssize_t n = pread(fd, buf, (size_t)(pos - from), from);

		if (n <= 0)
			return;         /* unreadable: leave the file as it is */
		for (ssize_t i = n - 1; i >= 0; i--)
			if (buf[i] == '\n') {
				pos = from + i + 1;
				goto found;
			}
		pos = from;
	}
found:
	if (ftruncate(fd, pos) < 0) {
		ev.what = LOGFILE_REPAIR_FAILED;
		ev.err = errno;
	}
	ev.cut = (uint64_t)(end - pos);
	say(lf, &ev);
}

/*
 * Opens the log, or creates it with mode 0640 whatever the umask: with
 * logrotate's nocreate (the shipped rotation) this is how every new file is
 * made, and a forwarder that reads it as group portlogd must find it readable
 * after each rotation, as logrotate's "create 0640" made it before.
 */
static int open_file(struct logfile *lf)
{
	/* O_RDWR, not O_WRONLY: repair_tail() reads the end back with pread */
	const int flags = O_RDWR | O_APPEND | O_CLOEXEC | O_NOCTTY;
	struct stat st;
	int fd = -1;

	/* two tries: the file can be renamed away between the two opens */
	for (int i = 0; i < 2 && fd < 0; i++) {
		fd = open(lf->path, flags | O_CREAT | O_EXCL, 0640);
		if (fd >= 0)
			(void)fchmod(fd, 0640);  /* our own new file: only the umask differs */
		else if (errno == EEXIST)
			fd = open(lf->path, flags);
		if (fd < 0 && errno != ENOENT)
			break;
	}
	if (fd < 0)
		return -errno;
	/* a FIFO or a device as the log: nothing to repair, nothing to sync */
	lf->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (lf->regular)
		repair_tail(lf, fd);
	return fd;
}

static void reverse(char *p, size_t n)
{
	for (size_t i = 0; i < n / 2; i++) {
		char c = p[i];

		p[i] = p[n - 1 - i];
		p[n - 1 - i] = c;
	}
}

/*
 * Writes go to the freshly opened fd from now on. Its first lines are the
 * handler's (why), ahead of any lines still waiting, which go there too. If
 * the old file got only the start of the first waiting line (a write that
 * ended inside it, then failed), its rest would be a torn line here: it is
 * cut off, and the event says how many bytes.
 */
static void use_new(struct logfile *lf, int fd, enum logfile_what what)
{
	struct logfile_event ev = { .what = what };
	size_t pending;

	if (lf->torn) {
		const char *nl = memchr(lf->buf, '\n', lf->len);
		size_t cut = nl != NULL ? (size_t)(nl + 1 - lf->buf) : lf->len;

		memmove(lf->buf, lf->buf + cut, lf->len - cut);
		lf->len -= cut;
		lf->torn = false;
		ev.cut = cut;
	}
	pending = lf->len;
	close(lf->fd);
	lf->fd = fd;
	say(lf, &ev);
	/* rotate what the handler added, buf[pending, len), to the front */
	reverse(lf->buf, pending);
	reverse(lf->buf + pending, lf->len - pending);
	reverse(lf->buf, lf->len);
}

/*
 * The log file was removed from under us (rm, or its directory): lines
 * written to it now would vanish with the last reference. Make a new one,
 * and the directory too if it went (mode 0750, as systemd's LogsDirectory).
 * Returns 0 when the log is in place, or -errno.
 */
static int replace_removed(struct logfile *lf)
{
	char dir[PATH_MAX], *slash;
	struct stat st;
	int fd;

	if (!lf->regular || fstat(lf->fd, &st) < 0 || st.st_nlink > 0)
		return 0;
	fd = open_file(lf);
	if (fd == -ENOENT) {
		snprintf(dir, sizeof(dir), "%s", lf->path);
		slash = strrchr(dir, '/');
		if (slash != NULL && slash != dir) {
			*slash = '\0';
			if (mkdir(dir, 0750) == 0)
				fd = open_file(lf);
		}
	}
	if (fd < 0)
		return fd;
	use_new(lf, fd, LOGFILE_REPLACED);
	return 0;
}

int logfile_open(struct logfile *lf, const char *path, size_t cap, int64_t sync_interval_ns,
		 logfile_handler *handler, void *ctx, char *err, size_t errlen)
{
	int fd;

	memset(lf, 0, sizeof(*lf));
	lf->fd = -1;
	lf->path = path;
	lf->cap = cap;
	lf->sync_interval_ns = sync_interval_ns;
	lf->handler = handler;
	lf->ctx = ctx;
	atomic_init(&lf->bytes_written, 0);
	atomic_init(&lf->write_errors, 0);
	lf->buf = malloc(cap);
	if (lf->buf == NULL) {
		snprintf(err, errlen, "cannot allocate %zu bytes for the log's buffer", cap);
		return -ENOMEM;
	}
	memset(lf->buf, 0, cap);        /* prefault */
	fd = open_file(lf);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open the log file %s: %s; check that its directory "
			 "exists and is writable, or set [logger] log_file", path, strerror(-fd));
		logfile_close(lf);
		return fd;
	}
	lf->fd = fd;
	lf->last_sync_mono = mono_ns();
	return 0;
}

void logfile_close(struct logfile *lf)
{
	if (lf->fd >= 0)
		close(lf->fd);
	free(lf->buf);
	lf->fd = -1;
	lf->buf = NULL;
	lf->len = 0;
}

size_t logfile_lines(const struct logfile *lf)
{
	size_t n = 0;

	for (size_t i = 0; i < lf->len; i++)
		n += lf->buf[i] == '\n';
	return n;
}

/* Writing failed with e: wait longer before the next try; say it when it is news. */
static void write_failed(struct logfile *lf, int e, int64_t now)
{
	struct logfile_event ev = {
		.what = LOGFILE_WRITE_FAILED, .err = e, .kept = lf->len, .first = lf->write_errno == 0,
	};
	bool news = lf->write_errno != e;

	atomic_fetch_add_explicit(&lf->write_errors, 1, memory_order_relaxed);
	if (ev.first) {
		lf->fail_since_mono = now;
		lf->fail_tries = 0;
		lf->backoff_ns = LOGFILE_RETRY_MIN_MS * NS_PER_MS;
	} else if ((lf->backoff_ns *= 2) > LOGFILE_RETRY_MAX_MS * NS_PER_MS) {
		lf->backoff_ns = LOGFILE_RETRY_MAX_MS * NS_PER_MS;
	}
	lf->write_errno = e;
	lf->fail_tries++;
	lf->retry_at_mono = now + lf->backoff_ns;
	if (news)
		say(lf, &ev);
}

int logfile_write(struct logfile *lf, int64_t now_mono)
{
	size_t off = 0;
	int e;

	if (lf->write_errno != 0 && now_mono < lf->retry_at_mono)
		return -lf->write_errno;       /* backing off */
	e = -replace_removed(lf);
	while (e == 0 && off < lf->len) {
		ssize_t n = write(lf->fd, lf->buf + off, lf->len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			break;
		}
		off += (size_t)n;
	}
	if (off > 0) {
		lf->torn = lf->buf[off - 1] != '\n';
		memmove(lf->buf, lf->buf + off, lf->len - off);
		lf->len -= off;
		lf->unsynced = true;
		atomic_fetch_add_explicit(&lf->bytes_written, off, memory_order_relaxed);
	}
	if (e != 0) {
		write_failed(lf, e, now_mono);
		return -e;
	}
	if (lf->write_errno != 0) {
		struct logfile_event ev = {
			.what = LOGFILE_RECOVERED, .err = lf->write_errno,
			.down_ns = now_mono - lf->fail_since_mono, .failures = lf->fail_tries,
		};

		say(lf, &ev);
		lf->write_errno = 0;
	}
	return 0;
}

void logfile_retry_now(struct logfile *lf)
{
	lf->retry_at_mono = 0;
}

void logfile_sync(struct logfile *lf, int64_t now_mono, bool force)
{
	if (!lf->regular || !lf->unsynced || lf->write_errno != 0
	    || (!force && now_mono - lf->last_sync_mono < lf->sync_interval_ns))
		return;
	if (fdatasync(lf->fd) < 0) {
		/* the kernel may have dropped the lines written since the last sync (it
		 * reports that once): the owner says so in the log too */
		struct logfile_event ev = { .what = LOGFILE_SYNC_FAILED, .err = errno };

		atomic_fetch_add_explicit(&lf->write_errors, 1, memory_order_relaxed);
		say(lf, &ev);
	}
	lf->unsynced = false;
	lf->last_sync_mono = now_mono;
}

int logfile_reopen(struct logfile *lf, int64_t now_mono)
{
	int fd;

	logfile_sync(lf, now_mono, true);
	fd = open_file(lf);
	if (fd < 0) {
		struct logfile_event ev = { .what = LOGFILE_REOPEN_FAILED, .err = -fd };

		say(lf, &ev);
		return fd;
	}
	use_new(lf, fd, LOGFILE_REOPENED);
	return 0;
}
