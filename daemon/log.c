/* SPDX-License-Identifier: GPL-2.0-or-later */
/* log.c - diagnostics to stderr (foreground) or to the journal (service), through a queue. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* CODE_FILE= and friends would always name this file: leave them out */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "clock.h"
#include "conf.h"
#include "log.h"
#include "thread.h"

static enum log_sink log_sink = LOG_SINK_STDERR;

void log_init(enum log_sink sink)
{
	log_sink = sink;
}

/* Sends one message, blocking as long as the journal (or stderr's reader) takes. */
static void send_one(int priority, const char *source, const char *msg)
{
	if (log_sink == LOG_SINK_JOURNAL)
		(void)sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", priority,
				      "PORTLOGD_SOURCE=%s", source,
				      "SYSLOG_IDENTIFIER=portlogd", NULL);   /* nowhere to report a failure */
	else
		fprintf(stderr, "portlogd: %s\n", msg);
}

/*
 * The queue: a ring of preallocated entries under one mutex, the journal thread
 * its only consumer. A mutex and a condition variable, not a lock-free ring:
 * the producers are main and the flusher (several, and never real-time
 * threads: DESIGN.md), each holds the lock only to copy one message in or out,
 * and the consumer must sleep until there is work. The mutex inherits priority,
 * so that a SCHED_FIFO flusher (flusher_priority) never waits behind a
 * preempted SCHED_OTHER journal thread that holds it.
 */
struct log_entry {
	int priority;
	uint32_t dropped_before;    /* messages dropped (queue full) just before this one */
	char source[CONF_NAME_MAX];
	char msg[LOG_MSG_MAX];
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t more;        /* consumer: a message came, or stop */
	pthread_cond_t idle;        /* log_drain: the queue is empty and nothing is being sent */
	struct log_entry e[LOG_QUEUE_LEN];
	unsigned head, n;           /* next to take (the oldest), and how many wait */
	bool queueing;              /* messages go into the queue (log_start .. log_stop) */
	bool sending;               /* the consumer is sending a message it took */
	uint32_t unsaid;            /* drops the consumer is saying (say_dropped) */
	bool stop;                  /* the consumer ends once the queue is empty */
	bool slow;                  /* log_drain timed out: log_stop does not wait again */
	bool stuck;                 /* log_stop gave up on a send: later messages are dropped */
	bool running;               /* the consumer's thread has not ended */
	uint32_t dropped;           /* dropped since the last message queued */
	uint64_t dropped_total;
	char log_file[CONF_PATH_MAX];
	struct thread thread;
} q;

static pthread_once_t q_once = PTHREAD_ONCE_INIT;

static void q_init(void)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;

	pthread_mutexattr_init(&ma);
	(void)pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);  /* else a plain one */
	pthread_mutex_init(&q.lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_cond_init(&q.more, NULL);
	pthread_condattr_init(&ca);
	(void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);    /* cannot fail for it */
	pthread_cond_init(&q.idle, &ca);
	pthread_condattr_destroy(&ca);
}

static void q_lock(void)
{
	(void)pthread_once(&q_once, q_init);
	pthread_mutex_lock(&q.lock);
}

static void say_dropped(uint64_t n)
{
	char msg[LOG_MSG_MAX];

	snprintf(msg, sizeof(msg), "the journal did not keep up: %llu messages to it were dropped; "
		 "the log file %s has every EV and DROP line", (unsigned long long)n, q.log_file);
	send_one(LOG_WARNING, "portlogd", msg);
}

/* Work to do or being done: waiting messages, drops to say, a send under way. */
static bool busy_locked(void)
{
	return q.running && (q.n > 0 || q.dropped > 0 || q.unsaid > 0 || q.sending);
}

static void *journal_thread(void *arg)
{
	struct log_entry *m = arg;      /* the message being sent: a copy, outside the lock */

	q_lock();
	for (;;) {
		uint32_t dropped;

		while (q.n == 0 && q.dropped == 0 && !q.stop) {
			pthread_cond_broadcast(&q.idle);
			pthread_cond_wait(&q.more, &q.lock);
		}
		if (q.n == 0 && q.dropped == 0)
			break;  /* stop, and all is sent */
		if (q.n > 0) {
			*m = q.e[q.head];
			q.head = (q.head + 1) % LOG_QUEUE_LEN;
			q.n--;
			dropped = m->dropped_before;
		} else {
			/* drops after the last message queued: said once the queue is empty */
			dropped = q.dropped;
			q.dropped = 0;
			m->msg[0] = '\0';
		}
		q.unsaid = dropped;
		q.sending = m->msg[0] != '\0';
		pthread_mutex_unlock(&q.lock);
		if (dropped > 0) {
			say_dropped(dropped);
			q_lock();
			q.unsaid = 0;
			pthread_mutex_unlock(&q.lock);
		}
		if (m->msg[0] != '\0')
			send_one(m->priority, m->source, m->msg);
		q_lock();
		q.sending = false;
		if (q.stuck)
			break;  /* log_stop left without us: the queue is no longer ours */
	}
	q.running = false;
	pthread_cond_broadcast(&q.idle);
	pthread_mutex_unlock(&q.lock);
	return NULL;
}

int log_start(const char *log_file)
{
	static struct log_entry sending;        /* the consumer's copy: not on its stack */
	int degraded = 0, rc;

	q_lock();
	if (q.running) {        /* a thread left stuck by the last log_stop (tests) */
		pthread_mutex_unlock(&q.lock);
		return -EBUSY;
	}
	snprintf(q.log_file, sizeof(q.log_file), "%s", log_file);
	q.head = q.n = 0;
	q.dropped = q.unsaid = 0;
	q.dropped_total = 0;
	q.stop = q.stuck = q.slow = q.sending = false;
	q.running = true;
	q.queueing = true;
	pthread_mutex_unlock(&q.lock);
	rc = thread_start(&q.thread, "plog-journal", 0, -1, journal_thread, &sending, &degraded);
	if (rc < 0) {
		q_lock();
		q.queueing = q.running = false;
		pthread_mutex_unlock(&q.lock);
	}
	return rc;
}

static struct log_unsent unsent_locked(void)
{
	uint64_t dropped = q.dropped + q.unsaid;

	for (unsigned i = 0; i < q.n; i++)
		dropped += q.e[(q.head + i) % LOG_QUEUE_LEN].dropped_before;
	return (struct log_unsent){ .queued = q.n + q.sending, .dropped = dropped };
}

/* Waits on q.idle until there is nothing to send, or deadline (CLOCK_MONOTONIC). */
static bool wait_idle_locked(int64_t deadline)
{
	struct timespec ts = ns_to_ts(deadline);

	while (busy_locked())
		if (pthread_cond_timedwait(&q.idle, &q.lock, &ts) == ETIMEDOUT)
			return !busy_locked();
	return true;
}

bool log_drain(int timeout_ms, struct log_unsent *left)
{
	bool done;

	q_lock();
	done = !q.queueing || wait_idle_locked(mono_ns() + (int64_t)timeout_ms * NS_PER_MS);
	*left = done ? (struct log_unsent){ 0 } : unsent_locked();
	q.slow = !done;
	pthread_mutex_unlock(&q.lock);
	return done;
}

struct log_unsent log_stop(void)
{
	struct log_unsent left = { 0 };
	bool done;

	q_lock();
	if (!q.queueing || q.stuck) {
		pthread_mutex_unlock(&q.lock);
		return left;
	}
	q.stop = true;
	pthread_cond_signal(&q.more);
	done = wait_idle_locked(mono_ns() + (q.slow ? 0 : (int64_t)LOG_DRAIN_MS * NS_PER_MS));
	if (done) {
		while (q.running)
			pthread_cond_wait(&q.idle, &q.lock);
		q.queueing = false;
		pthread_mutex_unlock(&q.lock);
		thread_join(&q.thread);
		return left;
	}
	/* stuck in a send: leave it there (the process exits meanwhile) */
	left = unsent_locked();
	q.stuck = true;
	pthread_mutex_unlock(&q.lock);
	(void)pthread_detach(q.thread.id);   /* cannot fail: it is joinable and not joined */
	q.thread.started = false;
	return left;
}

static void emit(int priority, const char *source, const char *fmt, va_list ap)
{
	char msg[LOG_MSG_MAX];
	struct log_entry *e;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	q_lock();
	if (!q.queueing) {
		pthread_mutex_unlock(&q.lock);
		send_one(priority, source, msg);
		return;
	}
	if (q.n == LOG_QUEUE_LEN || q.stuck) {
		q.dropped++;
		q.dropped_total++;
		pthread_mutex_unlock(&q.lock);
		return;
	}
	e = &q.e[(q.head + q.n) % LOG_QUEUE_LEN];
	e->priority = priority;
	e->dropped_before = q.dropped;
	q.dropped = 0;
	snprintf(e->source, sizeof(e->source), "%s", source);
	memcpy(e->msg, msg, strlen(msg) + 1);
	q.n++;
	pthread_cond_signal(&q.more);
	pthread_mutex_unlock(&q.lock);
}

void log_msg(int priority, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(priority, "portlogd", fmt, ap);
	va_end(ap);
}

void log_source(int priority, const char *source, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(priority, source, fmt, ap);
	va_end(ap);
}

void log_figures(struct log_figures *fig)
{
	q_lock();
	fig->queued = q.n;
	fig->sending = q.sending;
	fig->dropped_total = q.dropped_total;
	fig->running = q.running;
	pthread_mutex_unlock(&q.lock);
}

/* ---- the info rate limit (GCRA, the token bucket as one time: when it is full again) ---- */

#define EVERY_NS ((int64_t)LOG_LIMIT_EVERY_S * NS_PER_S)

static bool take(struct log_limit *l, int64_t now_ns)
{
	int64_t t = (l->t_full > now_ns ? l->t_full : now_ns) + EVERY_NS;

	if (t - now_ns > LOG_LIMIT_BURST * EVERY_NS)
		return false;   /* no token: the bucket is full again only after a burst's worth */
	l->t_full = t;
	return true;
}

bool log_limit_take(struct log_limit *l, int64_t now_ns)
{
	if (take(l, now_ns))
		return true;
	l->suppressed++;
	return false;
}

uint64_t log_limit_summary(struct log_limit *l, int64_t now_ns, bool force)
{
	uint64_t n = l->suppressed;

	if (n == 0 || !(take(l, now_ns) || force))
		return 0;
	l->suppressed = 0;
	return n;
}
