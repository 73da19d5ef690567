/* SPDX-License-Identifier: GPL-2.0-or-later */
/* logfile.h - the log file's whole life: open and repair, reopen, replace, write, sync.
 *
 * It holds the whole lines waiting to be written (its owner formats into
 * logfile_end and commits), appends them with O_APPEND, backs off while
 * writing fails (10 ms doubling to 500 ms), paces fdatasync, makes a new file
 * when SIGHUP asks or the file was removed, and cuts what would be a torn
 * line: an incomplete last line left by a crash, or the rest of a line whose
 * start went to the old file.
 *
 * It never formats a line and never logs: everything that happens to the file
 * goes, as a struct logfile_event, to its owner's handler, which says it in the
 * log (an EV line) and the journal. The handler may add lines; the lines it
 * adds for a new file (LOGFILE_REOPENED, LOGFILE_REPLACED) go first in that
 * file, ahead of the lines still waiting. Single-threaded: the owner's thread
 * only (the counters may be read by anyone).
 */
#ifndef PORTLOGD_LOGFILE_H
#define PORTLOGD_LOGFILE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOGFILE_RETRY_MIN_MS 10     /* back-off between write attempts while they fail */
#define LOGFILE_RETRY_MAX_MS 500    /* so writing resumes within about half a second */

enum logfile_what {
	LOGFILE_REPAIRED,       /* at an open: an incomplete last line of `cut` bytes was cut */
	LOGFILE_REPAIR_FAILED,  /* at an open: it could not be cut (err); appending after it */
	LOGFILE_REOPENED,       /* logfile_reopen: writing goes to a new file at the path now */
	LOGFILE_REPLACED,       /* the file was removed: a new one (and its directory) made */
	LOGFILE_REOPEN_FAILED,  /* logfile_reopen could not open the path (err): the old file stays */
	LOGFILE_WRITE_FAILED,   /* a write failed (err), `kept` bytes of lines wait; said when
				 * an outage begins (`first`) or its errno changes */
	LOGFILE_RECOVERED,      /* writing works again after `failures` failed tries over
				 * down_ns; err is the last failure's */
	LOGFILE_SYNC_FAILED,    /* fdatasync failed (err): lines since the last sync may be lost */
};

struct logfile_event {
	enum logfile_what what;
	int err;                /* errno */
	uint64_t cut;           /* REPAIRED: bytes cut; REOPENED, REPLACED: bytes of a line whose
				 * start went to the old file, not carried over (0: none) */
	size_t kept;            /* WRITE_FAILED */
	bool first;             /* WRITE_FAILED: the first failure of an outage */
	int64_t down_ns;        /* RECOVERED */
	uint64_t failures;      /* RECOVERED */
};

struct logfile;
typedef void logfile_handler(void *ctx, struct logfile *lf, const struct logfile_event *ev);

struct logfile {
	const char *path;
	int fd;                 /* O_APPEND */
	bool regular;           /* a regular file (not a FIFO or a device): repair, sync, replace */
	char *buf;              /* whole lines not yet written, buf[0, len) */
	size_t len, cap;
	bool torn;              /* buf starts mid-line: a write ended inside a line */

	int64_t sync_interval_ns, last_sync_mono;
	bool unsynced;

	int write_errno;        /* the last write error, 0 while writing works */
	/* while writing fails: since when, how many tries, the back-off, the next try */
	int64_t fail_since_mono, backoff_ns, retry_at_mono;
	uint64_t fail_tries;

	logfile_handler *handler;
	void *ctx;

	/* written by the owner's thread, read by anyone */
	_Atomic uint64_t bytes_written, write_errors;
};

/*
 * Opens (creating, mode 0640) the log file at path for appending, with a
 * buffer of cap bytes, and cuts an incomplete last line (said to the handler,
 * which is set first). Returns 0, or -errno with a message in err.
 */
int logfile_open(struct logfile *lf, const char *path, size_t cap, int64_t sync_interval_ns,
		 logfile_handler *handler, void *ctx, char *err, size_t errlen);
/* Closes the file and frees the buffer; lines still in it are gone. Safe after a failed open. */
void logfile_close(struct logfile *lf);

/* Where the next line goes, and how much room is left for it. */
static inline char *logfile_end(struct logfile *lf)
{
	return lf->buf + lf->len;
}

static inline size_t logfile_room(const struct logfile *lf)
{
	return lf->cap - lf->len;
}

/* n bytes of whole lines were written at logfile_end. */
static inline void logfile_commit(struct logfile *lf, size_t n)
{
	lf->len += n;
}

/* Whole lines waiting in the buffer. */
size_t logfile_lines(const struct logfile *lf);

/*
 * Writes the waiting lines out. First replaces the file if it was removed.
 * While failing, tries again only after the back-off; returns 0 or -errno
 * (the lines stay).
 */
int logfile_write(struct logfile *lf, int64_t now_mono);
/* The next logfile_write tries at once, back-off or not (the last chance at stop). */
void logfile_retry_now(struct logfile *lf);

/* fdatasync at most every sync interval (force: now), when something was written. */
void logfile_sync(struct logfile *lf, int64_t now_mono, bool force);

/*
 * SIGHUP: syncs the file and opens the path again (a rotation renamed it),
 * repairing what is there. Call with the buffer written out. Returns 0 or
 * -errno (LOGFILE_REOPEN_FAILED said: writing stays with the old file).
 */
int logfile_reopen(struct logfile *lf, int64_t now_mono);

#endif
