/* SPDX-License-Identifier: GPL-2.0-or-later */
/* flush.c - the flusher thread: drain the rings, merge by time, hand lines to the log file. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "clock.h"
#include "flush.h"
#include "libc.h"
#include "log.h"
#include "relaxed.h"
#include "serial.h"
#include "thread.h"

#define OUT_MIN (1024 * 1024)
#define CHECK_SLICE_MS 10       /* how often the thread looks for half-full rings */
#define BEAT_SLOTS 256          /* a drain tells the watchdog it progresses this often */
_Static_assert(FMT_FIELDS_MAX >= SOURCE_EV_MAX, "event texts must fit a line's fields");

bool flush_line(struct flusher *f, enum rec_kind kind, int64_t a, const char *fields)
{
	struct rec r = { .kind = kind, .t_real = real_ns(), .a = a };
	size_t len = strlen(fields);

	if (logfile_room(&f->log) < fmt_line_max(len))
		return false;   /* the buffer is full of unwritten lines */
	logfile_commit(&f->log, fmt_record(&f->fmt, logfile_end(&f->log), "portlogd", &r, fields,
					   len, 0));
	atomic_fetch_add_explicit(&f->lines, 1, memory_order_relaxed);
	return true;
}

/* An event the flusher itself reports; false when there was no room (see flush_line). */
static bool say(struct flusher *f, enum ev_code code, const struct fmt_kv *kv)
{
	return flush_line(f, REC_EV, code, kv->text);
}

static uint64_t total_dropped(const struct flusher *f)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < f->nsrc; i++)
		n += atomic_load_explicit(&f->src[i]->dropped, memory_order_relaxed);
	return n;
}

/* What happened to the log file: an EV line in the log, and a message in the journal. */
static void on_log_event(void *ctx, struct logfile *lf, const struct logfile_event *ev)
{
	struct flusher *f = ctx;
	char text[FMT_FIELDS_MAX];
	struct fmt_kv kv;
	uint64_t dropped;

	fmt_kv_init(&kv, text, sizeof(text));
	switch (ev->what) {
	case LOGFILE_REPAIRED:
		fmt_kv_u64(&kv, "cut", ev->cut);
		fmt_kv_str(&kv, "reason", "incomplete-last-line");
		(void)say(f, EV_REPAIR, &kv);
		log_warn("%s: cut %llu bytes of an incomplete last line left by a crash", lf->path,
			 (unsigned long long)ev->cut);
		break;
	case LOGFILE_REPAIR_FAILED:
		log_warn("%s: cannot cut the incomplete last line: %s, ignoring", lf->path,
			 strerror(ev->err));
		break;
	case LOGFILE_REOPENED:
	case LOGFILE_REPLACED:
		if (ev->what == LOGFILE_REOPENED)
			fmt_kv_str(&kv, "file", lf->path);
		else
			fmt_kv_str(&kv, "reason", "removed");
		if (ev->cut > 0) {
			log_warn("%s: the rest of a line whose start went to the old file is cut off "
				 "(%llu bytes)", lf->path, (unsigned long long)ev->cut);
			fmt_kv_u64(&kv, "cut", ev->cut);
		}
		if (!say(f, EV_REOPEN, &kv))     /* a buffer full of unwritten lines */
			log_warn("%s: EV reopen %s (not in the log: its buffer is full)", lf->path,
				 text);
		break;
	case LOGFILE_REOPEN_FAILED:
		log_err("cannot reopen %s: %s; still writing to the old file", lf->path,
			strerror(ev->err));
		break;
	case LOGFILE_WRITE_FAILED:
		if (ev->first)
			f->fail_dropped0 = total_dropped(f);
		log_err("cannot write %s: %s; keeping %zu bytes of lines and retrying (records "
			"that do not fit meanwhile are counted in DROP lines)", lf->path,
			strerror(ev->err), ev->kept);
		break;
	case LOGFILE_RECOVERED:
		/* what the outage cost, in the log and the journal */
		dropped = total_dropped(f) - f->fail_dropped0;
		fmt_kv_errno(&kv, "errno", ev->err);
		fmt_kv_i64(&kv, "down_ms", ev->down_ns / NS_PER_MS);
		fmt_kv_u64(&kv, "failures", ev->failures);
		fmt_kv_u64(&kv, "dropped", dropped);
		(void)say(f, EV_WRITE_RECOVERED, &kv);
		log_info("writing %s works again after %lld ms; %llu records were dropped meanwhile "
			 "(see the DROP lines)", lf->path, (long long)(ev->down_ns / NS_PER_MS),
			 (unsigned long long)dropped);
		break;
	case LOGFILE_SYNC_FAILED:
		fmt_kv_errno(&kv, "errno", ev->err);
		(void)say(f, EV_SYNC_FAILED, &kv);
		log_err("fdatasync %s: %s; lines written since the last sync may be missing "
			"on disk", lf->path, strerror(ev->err));
		break;
	}
}

/* The longest packet the config's ports make, at least a line's fields. */
static size_t longest_packet(const struct conf *c)
{
	size_t max_packet = REC_HEAD_DATA;

	for (unsigned i = 0; i < c->nserial; i++)
		if (c->serial[i].max_packet > max_packet)
			max_packet = c->serial[i].max_packet;
	return max_packet < FMT_FIELDS_MAX ? FMT_FIELDS_MAX : max_packet;
}

size_t flush_buffer_bytes(const struct conf *c)
{
	/* room for the lines of four of the longest packets */
	size_t cap = 4 * fmt_rx_max(longest_packet(c));

	return cap < OUT_MIN ? OUT_MIN : cap;
}

int flush_init(struct flusher *f, const struct conf *c, const struct parts *ps, char *err,
	       size_t errlen)
{
	int rc;

	memset(f, 0, sizeof(*f));
	f->conf = c;
	f->log.fd = -1;
	f->cmd_fd = -1;
	f->reopened_fd = -1;
	f->clock_fd = -1;
	f->src = calloc(ps->n + 1, sizeof(*f->src));
	f->heap = calloc(ps->n + 1, sizeof(*f->heap));
	f->queued = calloc(ps->n + 1, sizeof(*f->queued));
	f->waits = calloc(ps->n + 1, sizeof(*f->waits));
	for (unsigned i = 0; f->src != NULL && i < ps->n; i++)
		if (ps->part[i].src != NULL)
			f->src[f->nsrc++] = ps->part[i].src;
	f->pkt_cap = longest_packet(c);
	f->pkt = malloc(f->pkt_cap);
	f->cmd_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->reopened_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* without it, clock steps go unreported (said once when arming fails) */
	f->clock_fd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK);
	if (f->pkt == NULL || f->src == NULL || f->heap == NULL || f->queued == NULL
	    || f->waits == NULL || f->cmd_fd < 0 || f->reopened_fd < 0) {
		snprintf(err, errlen, "cannot set up the flusher: %s", strerror(errno));
		flush_fini(f);
		return -ENOMEM;
	}
	fmt_init(&f->fmt, c->logger.timestamp, c->logger.payload);
	atomic_init(&f->reopen_req, false);
	atomic_init(&f->stop_req, false);
	atomic_init(&f->lines, 0);
	clockq_init(&f->clock);
	health_beat_init(&f->beat);
	rc = logfile_open(&f->log, c->logger.log_file, flush_buffer_bytes(c),
			  (int64_t)c->logger.sync_interval_ms * NS_PER_MS, on_log_event, f, err,
			  errlen);
	if (rc < 0)
		flush_fini(f);
	return rc;
}

void flush_fini(struct flusher *f)
{
	logfile_close(&f->log);
	if (f->cmd_fd >= 0)
		close(f->cmd_fd);
	if (f->reopened_fd >= 0)
		close(f->reopened_fd);
	if (f->clock_fd >= 0)
		close(f->clock_fd);
	free(f->pkt);
	free(f->src);
	free(f->heap);
	free(f->queued);
	free(f->waits);
	f->cmd_fd = f->reopened_fd = f->clock_fd = -1;
	f->pkt = NULL;
	f->src = NULL;
	f->heap = NULL;
	f->queued = NULL;
	f->waits = NULL;
	f->nsrc = 0;
}

static void flush_count(const void *obj, struct part_counts *c)
{
	const struct flusher *f = obj;

	c->lines = LD(f->lines);
	c->clock = LD(f->clock.sync);       /* for STATUS= (clockq.h) */
	c->clock_maxerror_us = LD(f->clock.maxerror_us);
}

static void flush_stat(const void *obj, struct fmt_kv *kv)
{
	const struct flusher *f = obj;

	fmt_kv_u64(kv, "lines", LD(f->lines));
	fmt_kv_u64(kv, "bytes", LD(f->log.bytes_written));
	fmt_kv_u64(kv, "write_errors", LD(f->log.write_errors));
	parts_put_faults(kv, "", &f->thread);
}

bool flush_parts(struct flusher *f, struct parts *ps)
{
	return parts_add(ps, &(struct part){ .kind = PART_FLUSHER, .obj = f, .count = flush_count,
					     .stat = flush_stat }, &f->beat);
}

int flush_write(struct flusher *f)
{
	return logfile_write(&f->log, mono_ns());
}

/* Copies a record's payload out of its slots when it spans more than one. */
static const uint8_t *payload(struct flusher *f, struct ring *ring, const struct rec *r,
			      size_t *len)
{
	size_t n = r->len, first = n < REC_HEAD_DATA ? n : REC_HEAD_DATA;

	if (n > f->pkt_cap)
		n = f->pkt_cap;     /* cannot happen: producers are bounded by the config */
	*len = n;
	if (n <= REC_HEAD_DATA)
		return r->data;
	memcpy(f->pkt, r->data, first);
	for (size_t off = first, i = 1; off < n; off += REC_SIZE, i++) {
		size_t k = n - off < REC_SIZE ? n - off : REC_SIZE;
		memcpy(f->pkt + off, ring_rslot(ring, (uint32_t)i)->raw, k);
	}
	return f->pkt;
}

/*
 * Info events of s the journal was not sent (its share, log.h's log_limit), said
 * once a token is there again, or at stop (force) whatever the share.
 */
static void say_held_back(struct flusher *f, struct source *s, int64_t now, bool force)
{
	uint64_t n;

	if (!f->echo || (n = log_limit_summary(&s->journal, now, force)) == 0)
		return;
	log_source(LOG_INFO, s->name, "%s: %llu info events (EV late-delivery) were not sent to the "
		   "journal: it hears %d at once, then %d a minute, of each source; the log file "
		   "has every one", s->name, (unsigned long long)n, LOG_LIMIT_BURST,
		   60 / LOG_LIMIT_EVERY_S);
}

/*
 * To stderr or to the journal, there with PORTLOGD_SOURCE=the source's name.
 * Info events (a stalling machine's EV late-delivery, a hundred a second) only
 * within the source's share; the rest are counted and said in one message.
 */
static void echo(struct flusher *f, struct source *s, int priority, const char *line,
		 size_t len)
{
	const char *p = memchr(line, ' ', len);     /* skip the time */
	int64_t now;

	if (!f->echo || p == NULL)
		return;
	if (priority >= LOG_INFO) {
		now = mono_ns();
		say_held_back(f, s, now, false);
		if (!log_limit_take(&s->journal, now))
			return;
	}
	log_source(priority, s->name, "%.*s", (int)(len - (size_t)(p + 1 - line) - 1), p + 1);
}

/* An event that means data may be missing is a warning (a close at stop is not). */
static int ev_priority(const struct rec *r, const uint8_t *data, size_t len)
{
	static const char stop[] = "reason=stop";

	if (r->a == EV_CLOSE && len >= sizeof(stop) - 1 && memcmp(data, stop, sizeof(stop) - 1) == 0)
		return LOG_NOTICE;
	return fmt_ev_priority((unsigned)r->a);
}

/* Makes the line of r at the end of the buffer (room checked by the caller). */
static size_t put(struct flusher *f, struct source *s, const struct rec *r, const void *data,
		  size_t len)
{
	size_t n = fmt_record(&f->fmt, logfile_end(&f->log), s->name, r, data, len, s->value_bits);

	logfile_commit(&f->log, n);
	if (n > 0)
		atomic_fetch_add_explicit(&f->lines, 1, memory_order_relaxed);
	return n;
}

static void drop_line(struct flusher *f, struct source *s, int64_t t_real,
		      uint64_t total, uint64_t total_bytes)
{
	struct rec r = {
		.kind = REC_DROP, .t_real = t_real, .a = (int64_t)(total - s->drop_reported),
		.b = (int64_t)(total_bytes - s->drop_bytes_reported), .c = s->dir,
	};
	const char *line = logfile_end(&f->log);
	size_t len;

	if (r.a == 0 || logfile_room(&f->log) < fmt_line_max(48))
		return;     /* reported at the next chance: the counters are cumulative */
	len = put(f, s, &r, NULL, 0);
	s->accounted += (uint64_t)r.a;
	s->drop_reported = total;
	s->drop_bytes_reported = total_bytes;
	s->next_seq += (uint32_t)r.a;
	echo(f, s, LOG_WARNING, line, len);
}

/*
 * A record of a kind the table does not name: a bug in a producer, never
 * silent. Its place in the log gets an EV bad-record line, it is counted,
 * and the journal hears of it (the first and then every power of two).
 */
static void bad_record(struct flusher *f, struct source *s, const struct rec *r)
{
	struct rec ev = { .kind = REC_EV, .t_real = r->t_real, .a = EV_BAD_RECORD, .c = s->dir };
	char text[96];
	struct fmt_kv kv;
	uint64_t n = ++f->bad_records;

	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_u64(&kv, "kind", r->kind);
	fmt_kv_u64(&kv, "seq", r->seq);
	fmt_kv_u64(&kv, "count", n);
	(void)put(f, s, &ev, text, kv.len);
	s->accounted++;         /* the line stands for the record */
	if ((n & (n - 1)) == 0)
		log_err("[%s] a record of kind %u, which no line kind names (a bug): written as "
			"EV bad-record; %llu so far", s->name, (unsigned)r->kind,
			(unsigned long long)n);
}

/*
 * A serial port's EV late-delivery line: its mark= numbered as written, one more than
 * the mark before it in the log (the reader numbered it as pushed; the flusher's
 * case=clock marks, a second later, would stand out of order among those). Into buf.
 */
static const uint8_t *renumber(struct source *s, const uint8_t *data, size_t *len, char *buf,
			       size_t cap)
{
	const char *text = (const char *)data, *m = NULL;
	size_t n = *len, at, end;
	int k;

	for (size_t i = 0; i + 5 <= n && m == NULL; i++)
		if (memcmp(text + i, "mark=", 5) == 0 && (i == 0 || text[i - 1] == ' '))
			m = text + i;
	if (m == NULL)
		return data;
	at = (size_t)(m - text) + 5;
	for (end = at; end < n && text[end] >= '0' && text[end] <= '9'; end++)
		;
	k = snprintf(buf, cap, "%.*s%llu%.*s", (int)at, text, (unsigned long long)++s->marks,
		     (int)(n - end), text + end);
	if (k < 0 || (size_t)k >= cap)
		return data;
	*len = (size_t)k;
	return (const uint8_t *)buf;
}

/* Makes the line of one record (room checked by the caller). */
static void emit(struct flusher *f, struct source *s, const struct rec *r)
{
	char renumbered[SOURCE_EV_MAX + 32];
	const char *line = logfile_end(&f->log);
	const uint8_t *data;
	size_t len, n;

	if (r->kind == REC_DROP) {
		drop_line(f, s, r->t_real, (uint64_t)r->a, (uint64_t)r->b);
		return;
	}
	if (r->seq != s->next_seq) {
		/* a bug, not a loss the producer counted: make it visible */
		char text[64];
		struct fmt_kv kv;

		fmt_kv_init(&kv, text, sizeof(text));
		fmt_kv_u64(&kv, "expected", s->next_seq);
		fmt_kv_u64(&kv, "got", r->seq);
		(void)say(f, EV_SEQ_GAP, &kv);
		line = logfile_end(&f->log);
	}
	s->next_seq = r->seq + 1;
	data = payload(f, &s->ring, r, &len);
	if (r->kind == REC_EV && r->a == EV_LATE && s->late != NULL)
		data = renumber(s, data, &len, renumbered, sizeof(renumbered));
	n = put(f, s, r, data, len);
	if (n == 0) {
		bad_record(f, s, r);
		return;
	}
	s->accounted++;
	if (r->kind == REC_EV)
		echo(f, s, ev_priority(r, data, len), line, n);
}

/*
 * The two rings of one port (RX and TX: tx_device, pass) merge in time order
 * of their records: a record waits while the other ring is empty and its
 * producer may still push an older one (its horizon is below). The horizon is
 * read first (acquire): what was pushed before it was published is then in
 * the ring, so an empty ring means nothing older is coming. At stop (`all`)
 * every producer has ended and nothing waits.
 */
static bool held(struct source *s, int64_t t_mono)
{
	struct source *o = s->pair;

	return o != NULL && t_mono > atomic_load_explicit(&o->horizon, memory_order_acquire)
	       && ring_ready(&o->ring) == 0;
}

/*
 * The clock sensor (clocksensor.h): a serial line waits until it has read the RTC's
 * update after the line's reads (at stop, `all`, nothing waits: what it could not
 * vouch for is marked), then goes marked if the machine's clock stood still while
 * it may have been read. The verdict is taken where the line is written (it moves
 * the source's state on).
 */
static struct clock_line clock_line_of(const struct rec *r)
{
	/* a record without its reads' end (not a reader's): its first byte's */
	return (struct clock_line){ .read_by = r->b > r->t_mono ? r->b : r->t_mono,
				    .silence_read = r->c, .len = r->len };
}

static bool clock_holds(struct flusher *f, const struct rec *r, bool all)
{
	struct clock_line l = clock_line_of(r);

	return !all && f->rtc.c != NULL && (r->kind == REC_RX || r->kind == REC_TX)
	       && clock_waits(&f->rtc, &l, mono_ns());
}

/* Before the line of r: EV late-delivery case=clock stage=machine, if the sensor says. */
static void clock_mark(struct flusher *f, struct source *s, const struct rec *r, bool all)
{
	struct clock_line l = clock_line_of(r);
	struct reasm_doubt d = { .why = REASM_CLOCK, .stage = REASM_STAGE_MACHINE, .joined = true,
				 .bytes = r->len };
	struct rec ev = { .kind = REC_EV, .t_real = r->t_real, .t_mono = r->t_mono, .a = EV_LATE,
			  .c = s->dir };
	const char *line = logfile_end(&f->log);
	char text[96];
	struct fmt_kv kv;

	if ((r->kind != REC_RX && r->kind != REC_TX)
	    || clock_judge(&f->rtc, &s->clock, &l, mono_ns(), all, &d.wait_ns)
	       != CLOCK_MARK)
		return;
	/* numbered as written, among the reader's marks (renumber); counted in late= */
	if (s->late != NULL)
		atomic_fetch_add_explicit(s->late, 1, memory_order_relaxed);
	fmt_kv_init(&kv, text, sizeof(text));
	serial_late_fields(&kv, &d, ++s->marks);
	echo(f, s, LOG_INFO, line, put(f, s, &ev, text, kv.len));
}

/*
 * The merge: a binary min-heap of the rings' heads by time (ties by ring order),
 * so that a line costs log2(rings) comparisons of times kept in the heap, not a
 * look at every ring (at 256 rings the scan cost a microsecond a line, 3.7 times
 * the line itself: tests/bench/RESULTS.md). Forty lines, so not a library: none
 * in Debian gives a heap to C without taking the rest of it (glib).
 */
static bool head_before(const struct flush_head *a, const struct flush_head *b)
{
	return a->t_mono < b->t_mono || (a->t_mono == b->t_mono && a->src < b->src);
}

static void heap_down(struct flush_head *h, unsigned n, unsigned i)
{
	for (;;) {
		unsigned l = 2 * i + 1, m = i;
		struct flush_head tmp;

		if (l < n && head_before(&h[l], &h[m]))
			m = l;
		if (l + 1 < n && head_before(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

static void heap_up(struct flush_head *h, unsigned i)
{
	while (i > 0 && head_before(&h[i], &h[(i - 1) / 2])) {
		struct flush_head tmp = h[i];

		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

/* Ring i's head into the heap of n; the new n. */
static unsigned heap_push(struct flusher *f, unsigned n, uint32_t i)
{
	f->heap[n] = (struct flush_head){ ring_rslot(&f->src[i]->ring, 0)->rec.t_mono, i };
	f->queued[i] = true;
	heap_up(f->heap, n);
	return n + 1;
}

/* The top leaves the heap of n; the new n. */
static unsigned heap_pop(struct flusher *f, unsigned n)
{
	f->heap[0] = f->heap[n - 1];
	heap_down(f->heap, n - 1, 0);
	return n - 1;
}

/* The index of ring s among the flusher's (a pair's: rare, so a look will do). */
static uint32_t src_index(const struct flusher *f, const struct source *s)
{
	uint32_t i = 0;

	while (i < f->nsrc && f->src[i] != s)
		i++;
	return i;
}

uint32_t flush_drain(struct flusher *f, bool all)
{
	uint32_t budget = 0, done = 0, beat_at = BEAT_SLOTS;
	unsigned n = 0;

	/* Without `all`, take only what is there now, so fast producers cannot keep
	 * the flusher from writing and syncing: the rings with records now are the
	 * heap; one that fills meanwhile waits for the next drain, but for the pair
	 * of a ring whose head it may precede (below). */
	for (uint32_t i = 0; i < f->nsrc; i++) {
		/* now: the merge below looks again as it goes (ring_ready's copy) */
		uint32_t ready = ring_ready_now(&f->src[i]->ring);

		f->queued[i] = false;
		budget += ready;
		if (ready > 0)
			n = heap_push(f, n, i);
	}
	if (all)
		budget = UINT32_MAX;
	clock_view_look(&f->rtc);
	for (uint32_t i = 0; i <= f->nsrc; i++)      /* [nsrc]: src_index's "none" */
		f->waits[i] = INT64_MAX;
	while (done < budget && n > 0) {
		struct source *best = f->src[f->heap[0].src];
		const struct rec *r = &ring_rslot(&best->ring, 0)->rec;
		uint32_t slots;

		if (!all && best->pair != NULL) {
			uint32_t o = src_index(f, best->pair);

			if (held(best, r->t_mono)) {
				n = heap_pop(f, n);     /* set aside: it waits for the next drain */
				continue;
			}
			/* not held because its pair has records now: those join the merge
			 * first, as they may be older */
			if (o < f->nsrc && !f->queued[o] && ring_ready(&best->pair->ring) > 0) {
				n = heap_push(f, n, o);
				continue;
			}
			if (o < f->nsrc && f->waits[o] <= r->t_mono) {
				n = heap_pop(f, n);     /* younger than its pair's line that waits */
				continue;
			}
		}
		if (!all && f->rtc.c != NULL && best->follows != NULL
		    && f->waits[src_index(f, best->follows)] <= r->t_mono) {
			n = heap_pop(f, n);     /* younger than its port's line that waits */
			continue;
		}
		if (clock_holds(f, r, all)) {
			f->waits[f->heap[0].src] = r->t_mono;
			n = heap_pop(f, n);     /* set aside: the clock sensor has not spoken yet */
			continue;
		}
		/* room for the longest line this record can make, plus a say() */
		if (logfile_room(&f->log) < fmt_rx_max(r->len > REC_HEAD_DATA ? r->len : FMT_FIELDS_MAX)
		    + 2 * FMT_FIELDS_MAX) {
			if (flush_write(f) < 0)
				break;  /* cannot write: leave the rest in the rings */
		}
		slots = rec_slots(r->len);     /* r is the producer's again after the release */
		clock_mark(f, best, r, all);
		emit(f, best, r);
		ring_release(&best->ring, slots);
		done += slots;
		/* a long drain (a lot to write, a slow disk) is progress, not a hang: only a
		 * flusher that stopped (in a write that never returns) stops the beats */
		if (done >= beat_at) {
			health_progress(&f->beat);
			beat_at = done + BEAT_SLOTS;
		}
		if (ring_ready(&best->ring) > 0) {
			f->heap[0].t_mono = ring_rslot(&best->ring, 0)->rec.t_mono;
			heap_down(f->heap, n, 0);
		} else {
			f->queued[f->heap[0].src] = false;
			n = heap_pop(f, n);
		}
	}
	return done;
}

static void signal_fd(int fd)
{
	(void)eventfd_write(fd, 1);     /* an eventfd add cannot fail short of a bug */
}

static void reopen(struct flusher *f)
{
	/* taken now: a SIGHUP from here on (another rotation) asks for one more */
	atomic_store(&f->reopen_req, false);
	(void)flush_drain(f, false);
	if (flush_write(f) < 0) {
		atomic_store(&f->reopen_req, true);     /* try again at the next flush */
		return;
	}
	/* the buffer is empty: written above; a failure is said, the old file stays */
	(void)logfile_reopen(&f->log, mono_ns());
	signal_fd(f->reopened_fd);
}

/*
 * The clock's quality, from adjtimex (clockq.h): an EV clock line at start,
 * after a step, with every STAT round, and when the synchronised state changes
 * (looked for once a second; a STAT round that finds a change says reason=change). The records already in the rings go first, so
 * that the portlogd lines stay in time order. The journal hears of a clock
 * that is, or becomes, unsynchronised or unreadable.
 */
static void say_clock_read(struct flusher *f, enum clockq_reason why,
			   const struct clockq_state *st)
{
	char text[160];
	struct fmt_kv kv;
	int was = f->clock.said;

	(void)flush_drain(f, false);
	fmt_kv_init(&kv, text, sizeof(text));
	clockq_fields(&kv, why, st);
	if (!flush_line(f, REC_EV, EV_CLOCK, text))
		return;     /* the buffer is full: said at the next look */
	clockq_said(&f->clock, st);
	if (f->clock.said == was)
		return;
	if (st->err != 0)
		log_warn("cannot read the clock's synchronisation state (adjtimex: %s): the log "
			 "cannot say how far TIME may be off", strerror(st->err));
	else if (!st->synced)
		log_warn("the system clock is not synchronised (maximum error %lld us): log times "
			 "may be off by any amount; see portlogd --check-system",
			 (long long)st->maxerror_us);
	else if (was != CLOCKQ_NOT_READ)
		log_info("the system clock is synchronised again (maximum error %lld us)",
			 (long long)st->maxerror_us);
}

static void say_clock(struct flusher *f, enum clockq_reason why)
{
	struct clockq_state st;

	if (clockq_due(&f->clock, &why, mono_ns(), &st))
		say_clock_read(f, why, &st);
}

/*
 * A round of STAT lines (the hook's), closed by an EV clock line. The clock is
 * read before the hook, so that the figures the hook sees (clockq's, through the
 * flusher's part: the metrics file) are the line's.
 */
static void stat_round(struct flusher *f, bool final)
{
	enum clockq_reason why = CLOCKQ_STAT;
	struct clockq_state st;

	(void)clockq_due(&f->clock, &why, mono_ns(), &st);     /* a STAT look is always due */
	if (f->hook != NULL)
		f->hook(f->hook_ctx, f, true, final);
	say_clock_read(f, why, &st);
}

/*
 * Arms clock_fd to report a step of CLOCK_REALTIME (clock_settime, date -s, an
 * NTP step; not a slew): a timerfd with TFD_TIMER_CANCEL_ON_SET reads ECANCELED
 * when the clock is set. Its expiry is far away; only the cancellation counts.
 */
static void arm_clock_watch(struct flusher *f)
{
	struct itimerspec far = { .it_value = { .tv_sec = real_ns() / NS_PER_S + 10 * 365 * 86400 } };

	if (f->clock_fd >= 0
	    && timerfd_settime(f->clock_fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &far,
			       NULL) < 0) {
		log_warn("cannot watch CLOCK_REALTIME for steps: %s; a step will not be reported",
			 strerror(errno));
		close(f->clock_fd);
		f->clock_fd = -1;
	}
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC, read so that a preemption cannot skew it. */
static int64_t clock_offset(void)
{
	for (int i = 0;; i++) {
		int64_t m0 = mono_ns(), r = real_ns(), m1 = mono_ns();

		if (m1 - m0 < 100 * NS_PER_US || i == 3)
			return r - (m0 + (m1 - m0) / 2);
	}
}

/*
 * The wall clock was set. Timestamps (CLOCK_REALTIME) jump by delta from here;
 * packet gaps, the merge order and the timer run on CLOCK_MONOTONIC and do not.
 * The records already in the rings go first, so that the line stands where the
 * times jump (records stamped between the step and this look go before it too).
 * A full buffer keeps the step to say at the next look.
 */
static void check_clock_step(struct flusher *f, bool fired)
{
	int64_t off = clock_offset();
	uint64_t v;

	if (fired && read(f->clock_fd, &v, sizeof(v)) < 0 && errno == ECANCELED) {
		f->step_unsaid_ns += off - f->clock_off;
		log_warn("the system clock was set: log times jump by %+.6f s here; packet gaps "
			 "and sampling are not affected", (double)(off - f->clock_off) / NS_PER_S);
		arm_clock_watch(f);
	}
	f->clock_off = off;
	if (f->step_unsaid_ns != 0) {
		char text[64];
		struct fmt_kv kv;

		(void)flush_drain(f, false);
		fmt_kv_init(&kv, text, sizeof(text));
		fmt_kv_delta(&kv, "delta_us", f->step_unsaid_ns / NS_PER_US);
		if (say(f, EV_CLOCK_STEP, &kv)) {
			f->step_unsaid_ns = 0;
			say_clock(f, CLOCKQ_STEP);     /* a step clears the kernel's sync state */
		}
	}
}

/* Each source's info events held back from the journal, once it may hear of them. */
static void say_all_held_back(struct flusher *f, bool force)
{
	int64_t now = mono_ns();

	for (unsigned i = 0; i < f->nsrc; i++)
		say_held_back(f, f->src[i], now, force);
}

/*
 * Stopping: the journal thread gets LOG_DRAIN_MS to take what is queued (log.h);
 * what it did not take is said here, in the one place left (a journal that
 * does not read must not hang the stop).
 */
static void say_journal_lost(struct flusher *f)
{
	struct log_unsent left;
	char text[96];
	struct fmt_kv kv;

	if (log_drain(LOG_DRAIN_MS, &left))
		return;
	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_u64(&kv, "queued", left.queued);
	fmt_kv_u64(&kv, "dropped", left.dropped);
	fmt_kv_i64(&kv, "waited_ms", LOG_DRAIN_MS);
	(void)say(f, EV_JOURNAL_LOST, &kv);     /* the buffer was just written: room */
}

static bool any_half_full(struct flusher *f)
{
	for (unsigned i = 0; i < f->nsrc; i++)
		if (ring_fill(&f->src[i]->ring) >= ring_capacity(&f->src[i]->ring) / 2)
			return true;
	return false;
}

/*
 * Stopping, and the log cannot be written: what is lost, exactly, in the journal
 * (the only place left): the lines in the buffer, and per source the records
 * still in its ring and the drops no DROP line reported.
 */
static void report_unwritten(struct flusher *f)
{
	log_err("stopping with %zu log lines (%zu bytes) that could not be written to %s: %s",
		logfile_lines(&f->log), f->log.len, f->log.path, strerror(f->log.write_errno));
	for (unsigned i = 0; i < f->nsrc; i++) {
		struct source *s = f->src[i];
		uint32_t ready = ring_ready_now(&s->ring);
		uint64_t left = 0, unsaid = atomic_load(&s->dropped) - s->drop_reported;

		for (uint32_t k = 0; k < ready; k += rec_slots(ring_rslot(&s->ring, k)->rec.len))
			left += ring_rslot(&s->ring, k)->rec.kind != REC_DROP;
		if (left > 0 || unsaid > 0)
			log_err("[%s] lost at stop: %llu records not written, %llu dropped records "
				"not reported in a DROP line", s->name, (unsigned long long)left,
				(unsigned long long)unsaid);
	}
}

static void *flush_thread(void *arg)
{
	struct flusher *f = arg;
	int64_t interval = (int64_t)f->conf->logger.flush_interval_ms * NS_PER_MS;
	int64_t slice = CHECK_SLICE_MS * NS_PER_MS;
	int64_t next = mono_ns() + interval;
	int64_t stat_every = (int64_t)f->conf->logger.stat_interval_s * NS_PER_S;
	int64_t next_stat = mono_ns() + stat_every;

	if (slice > interval)
		slice = interval;
	arm_clock_watch(f);
	f->clock_off = clock_offset();
	(void)flush_drain(f, false);        /* EV start first */
	say_clock(f, CLOCKQ_START);
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = f->cmd_fd, .events = POLLIN },
			{ .fd = f->clock_fd, .events = POLLIN },
		};
		int64_t now = mono_ns(), wait = next - now;
		struct timespec ts;
		uint64_t v;

		if (wait > slice)
			wait = slice;
		if (wait < 0)
			wait = 0;
		ts = ns_to_ts(wait);
		health_park(&f->beat);
		if (libc_ppoll(pfd, 2, &ts, NULL) > 0 && pfd[0].revents != 0)
			(void)eventfd_read(f->cmd_fd, &v);      /* just clears the wake-up */
		health_unpark(&f->beat);
		if (health_stall_wanted(&f->beat))
			health_stall(&f->stop_req, -1);
		check_clock_step(f, pfd[1].revents != 0);
		say_clock(f, CLOCKQ_CHANGE);
		if (atomic_load(&f->stop_req))
			break;
		if (atomic_load(&f->reopen_req))
			reopen(f);
		now = mono_ns();
		if (now >= next || any_half_full(f)) {
			bool stat_due = stat_every > 0 && now >= next_stat;

			(void)flush_drain(f, false);
			say_all_held_back(f, false);
			if (stat_due) {
				stat_round(f, false);
				next_stat += stat_every;
			} else if (f->hook != NULL) {
				f->hook(f->hook_ctx, f, false, false);
			}
			(void)flush_write(f);   /* on failure the lines wait in the buffer */
			next = now + interval;
		}
		logfile_sync(&f->log, mono_ns(), false);
	}

	/* Stop: every producer has ended; drain all, account, write, sync. One more
	 * try to write even while backing off: there is no later. */
	logfile_retry_now(&f->log);
	while (flush_drain(f, true) > 0)
		(void)flush_write(f);
	for (unsigned i = 0; i < f->nsrc; i++) {
		struct source *s = f->src[i];
		/* drops that no later record could report (the producer has been joined) */
		drop_line(f, s, s->drop_pending ? s->drop_t_real : real_ns(),
			  atomic_load(&s->dropped), atomic_load(&s->dropped_bytes));
	}
	stat_round(f, true);
	if (atomic_load(&f->reopen_req))
		reopen(f);
	say_all_held_back(f, true);
	if (flush_write(f) == 0)
		say_journal_lost(f);
	if (flush_write(f) < 0)
		report_unwritten(f);
	logfile_sync(&f->log, mono_ns(), true);
	return NULL;
}

int flush_start(struct flusher *f, int *degraded)
{
	return thread_start(&f->thread, "plog-flush", f->conf->logger.flusher_priority,
			    f->conf->logger.flusher_cpu, flush_thread, f, degraded);
}

void flush_reopen(struct flusher *f)
{
	atomic_store(&f->reopen_req, true);
	signal_fd(f->cmd_fd);
}

void flush_stop(struct flusher *f)
{
	atomic_store(&f->stop_req, true);
	signal_fd(f->cmd_fd);
	thread_join(&f->thread);
}
