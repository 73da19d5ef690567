/* SPDX-License-Identifier: GPL-2.0-or-later */
/* log.h - the daemon's own diagnostics (not the data log): stderr or the journal.
 *
 * Only main and the flusher call these (and whatever main calls: the sampler's
 * reopen, notify, metrics); real-time threads never do. While the daemon runs
 * (log_start .. log_stop) a message is copied into a bounded, preallocated
 * queue and sent by a thread of its own, "plog-journal", which may block in
 * sd_journal_send (journald not keeping up, hung in its rotation) or in a write
 * to stderr (a pipe nobody reads) without holding back the log file's writer.
 * A full queue drops the message and counts it; the journal thread says how
 * many when it gets through again. Before log_start and after log_stop (start-up
 * errors, config errors, the exit) a message is sent at once, by its caller.
 */
#ifndef PORTLOGD_LOG_H
#define PORTLOGD_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

#define LOG_QUEUE_LEN 256       /* messages waiting for the journal thread */
#define LOG_MSG_MAX 1024        /* a message is cut here (as before the queue) */
#define LOG_DRAIN_MS 2000       /* at stop, how long the journal may take to take the rest */

enum log_sink { LOG_SINK_STDERR, LOG_SINK_JOURNAL };

void log_init(enum log_sink sink);
void log_msg(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * A message about one source (a port's name, or "portlogd"): in the journal
 * it carries the field PORTLOGD_SOURCE=, so `journalctl PORTLOGD_SOURCE=gps`
 * shows one port's events.
 */
void log_source(int priority, const char *source, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)

/*
 * Starts the journal thread (SCHED_OTHER, "plog-journal"); from here messages
 * are queued. log_file is named in the message that says how many were dropped
 * (it has every EV and DROP line). Returns 0 or -errno (then messages stay
 * synchronous).
 */
int log_start(const char *log_file);

/* What the journal has not had. */
struct log_unsent {
	uint64_t queued;        /* waiting in the queue, or being sent */
	uint64_t dropped;       /* dropped while the queue was full, not yet said */
};

/*
 * Waits until the journal thread has sent everything queued so far, at most
 * timeout_ms; true when it has, else what is left in *left. Returns at once
 * (true) when the thread does not run.
 */
bool log_drain(int timeout_ms, struct log_unsent *left);

/*
 * Ends the journal thread after it has sent what is queued, waiting at most
 * LOG_DRAIN_MS (less when log_drain already found it stuck); from here messages
 * are sent synchronously again, unless the thread is stuck in a send: then it
 * is left behind (detached) and later messages are dropped, since a send would
 * hang too. Returns what was not sent. Nothing to do when it does not run.
 */
struct log_unsent log_stop(void);

/* The queue's figures, for tests: waiting, being sent (0 or 1), dropped in all. */
struct log_figures {
	unsigned queued, sending;
	uint64_t dropped_total;
	bool running;           /* the thread runs (started, not yet ended) */
};
void log_figures(struct log_figures *fig);

/*
 * The journal's share of info-priority events: a token bucket per source, so
 * that a stalling machine's hundred EV late-delivery lines a second do not
 * flood the journal (the log file has every one). LOG_LIMIT_BURST at once, then
 * one every LOG_LIMIT_EVERY_S seconds. Pure: the flusher owns one per source.
 */
#define LOG_LIMIT_BURST 10
#define LOG_LIMIT_EVERY_S 6     /* 10 a minute, once the burst is spent */

struct log_limit {
	int64_t t_full;         /* when the bucket is (or was) full again; 0: full */
	uint64_t suppressed;    /* events held back since the journal last heard one */
};

/* May the event at now_ns go to the journal? False: counted in suppressed. */
bool log_limit_take(struct log_limit *l, int64_t now_ns);
/*
 * Events held back and a token to say so: returns their count and takes the
 * token (the summary is one message), or 0. With `force` (at stop) the count
 * is returned whether or not a token is there.
 */
uint64_t log_limit_summary(struct log_limit *l, int64_t now_ns, bool force);

#endif
