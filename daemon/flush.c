/* flush.c - the flusher thread: drain, merge by time, format, append, sync. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "clock.h"
#include "flush.h"
#include "log.h"
#include "thread.h"

#define OUT_MIN (1024 * 1024)
#define CHECK_SLICE_MS 10       /* how often the thread looks for half-full rings */
#define RETRY_MIN_MS 10         /* back-off between write attempts while they fail */
#define RETRY_MAX_MS 500        /* so writing resumes within about half a second */
#define EV_TEXT_MAX 640
_Static_assert(EV_TEXT_MAX >= SOURCE_EV_MAX, "event texts must fit the flusher's buffer");

static const char *ev_name(int64_t code)
{
	switch (code) {
	case EV_START: return "start";
	case EV_STOP: return "stop";
	case EV_OPEN: return "open";
	case EV_CLOSE: return "close";
	case EV_ERROR: return "error";
	case EV_LATE: return "late-delivery";
	case EV_RT_MISSING: return "rt-missing";
	case EV_UART_ERRORS: return "uart-errors";
	default: return "unknown";
	}
}

bool flush_line(struct flusher *f, const char *kind, const char *fields)
{
	size_t len = strlen(fields);

	if (f->out_cap - f->out_len < FMT_TIME_MAX + 32 + len)
		return false;   /* the buffer is full of unwritten lines */
	f->out_len += fmt_fields(&f->fmt, f->out + f->out_len, real_ns(), "portlogd", kind,
				 fields, len);
	atomic_fetch_add_explicit(&f->lines, 1, memory_order_relaxed);
	return true;
}

/* An event the flusher itself reports; false when there was no room (see flush_line). */
static bool say(struct flusher *f, const char *text)
{
	return flush_line(f, "EV", text);
}

/*
 * A crash or power cut can leave a last line without its newline. Appending to
 * it would put a torn line in the middle of the file, so cut it off and say so.
 */
static void repair_tail(struct flusher *f, int fd)
{
	char buf[4096], text[128];
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
		log_warn("%s: cannot cut the incomplete last line: %s, ignoring",
			 f->conf->logger.log_file, strerror(errno));
		return;
	}
	snprintf(text, sizeof(text), "repair cut=%lld reason=incomplete-last-line",
		 (long long)(end - pos));
	say(f, text);
	log_warn("%s: cut %lld bytes of an incomplete last line left by a crash",
		 f->conf->logger.log_file, (long long)(end - pos));
}

/*
 * Opens the log, or creates it with mode 0640 whatever the umask: with
 * logrotate's nocreate (the shipped rotation) this is how every new file is
 * made, and a forwarder that reads it as group portlogd must find it readable
 * after each rotation, as logrotate's "create 0640" made it before.
 */
static int open_log(struct flusher *f)
{
	const char *path = f->conf->logger.log_file;
	const int flags = O_RDWR | O_APPEND | O_CLOEXEC | O_NOCTTY;
	struct stat st;
	int fd = -1;

	/* O_RDWR, not O_WRONLY: repair_tail() reads the end back with pread. Two
	 * tries: the file can be renamed away between the two opens. */
	for (int i = 0; i < 2 && fd < 0; i++) {
		fd = open(path, flags | O_CREAT | O_EXCL, 0640);
		if (fd >= 0) {
			if (fchmod(fd, 0640) < 0)
				log_warn("%s: cannot set mode 0640: %s, ignoring", path,
					 strerror(errno));
		} else if (errno == EEXIST) {
			fd = open(path, flags);
		}
		if (fd < 0 && errno != ENOENT)
			break;
	}
	if (fd < 0)
		return -errno;
	/* a FIFO or a device as the log: nothing to repair, nothing to sync */
	f->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (f->regular)
		repair_tail(f, fd);
	return fd;
}

/*
 * Writes go to the freshly opened fd from now on. Its first line says why
 * (text), ahead of any lines still waiting to be written, which go there too.
 * If the old file got only the start of the first waiting line (a write that
 * ended inside it, then failed), its rest would be a torn line here: cut it
 * off, and say how many bytes (cut=) in the first line.
 */
static void use_new_log(struct flusher *f, int fd, const char *text)
{
	size_t pending, n, cut = 0;
	char line[EV_TEXT_MAX + FMT_TIME_MAX + 64], why[EV_TEXT_MAX];

	if (f->out_torn) {
		const char *nl = memchr(f->out, '\n', f->out_len);

		cut = nl != NULL ? (size_t)(nl + 1 - f->out) : f->out_len;
		memmove(f->out, f->out + cut, f->out_len - cut);
		f->out_len -= cut;
		f->out_torn = false;
		log_warn("%s: the rest of a line whose start went to the old file is cut off "
			 "(%zu bytes)", f->conf->logger.log_file, cut);
	}
	snprintf(why, sizeof(why), cut > 0 ? "%s cut=%zu" : "%s", text, cut);
	pending = f->out_len;
	close(f->fd);
	f->fd = fd;
	if (!say(f, why))       /* a buffer full of unwritten lines: the journal has it */
		log_warn("%s: EV %s (not in the log: its buffer is full)",
			 f->conf->logger.log_file, why);
	n = f->out_len - pending;
	if (pending > 0 && n > 0 && n <= sizeof(line)) {
		memcpy(line, f->out + pending, n);
		memmove(f->out + n, f->out, pending);
		memcpy(f->out, line, n);
	}
}

/*
 * The log file was removed from under us (rm, or its directory): lines
 * written to it now would vanish with the last reference. Make a new one,
 * and the directory too if it went (mode 0750, as systemd's LogsDirectory).
 * Returns 0 when the log is in place, or -errno.
 */
static int replace_removed_log(struct flusher *f)
{
	char dir[CONF_PATH_MAX], *slash;
	struct stat st;
	int fd;

	if (!f->regular || fstat(f->fd, &st) < 0 || st.st_nlink > 0)
		return 0;
	fd = open_log(f);
	if (fd == -ENOENT) {
		snprintf(dir, sizeof(dir), "%s", f->conf->logger.log_file);
		slash = strrchr(dir, '/');
		if (slash != NULL && slash != dir) {
			*slash = '\0';
			if (mkdir(dir, 0750) == 0)
				fd = open_log(f);
		}
	}
	if (fd < 0)
		return fd;
	use_new_log(f, fd, "reopen reason=removed");
	return 0;
}

static uint64_t total_dropped(const struct flusher *f)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < f->nsrc; i++)
		n += atomic_load_explicit(&f->src[i]->dropped, memory_order_relaxed);
	return n;
}

/* Writing failed with e: log once per errno, and wait longer before the next try. */
static void write_failed(struct flusher *f, int e, int64_t now)
{
	atomic_fetch_add_explicit(&f->write_errors, 1, memory_order_relaxed);
	if (f->write_errno == 0) {
		f->fail_since_mono = now;
		f->fail_tries = 0;
		f->fail_dropped0 = total_dropped(f);
		f->backoff_ns = RETRY_MIN_MS * NS_PER_MS;
	} else if ((f->backoff_ns *= 2) > RETRY_MAX_MS * NS_PER_MS) {
		f->backoff_ns = RETRY_MAX_MS * NS_PER_MS;
	}
	if (f->write_errno != e)
		log_err("cannot write %s: %s; keeping %zu bytes of lines and retrying (records "
			"that do not fit meanwhile are counted in DROP lines)",
			f->conf->logger.log_file, strerror(e), f->out_len);
	f->write_errno = e;
	f->fail_tries++;
	f->retry_at_mono = now + f->backoff_ns;
}

/* Writing works again after an outage: say what it cost, in the log and the journal. */
static void write_recovered(struct flusher *f, int64_t now)
{
	char text[160];
	uint64_t dropped = total_dropped(f) - f->fail_dropped0;
	const char *en = strerrorname_np(f->write_errno);

	snprintf(text, sizeof(text), "write-recovered errno=%s down_ms=%lld failures=%llu dropped=%llu",
		 en != NULL ? en : "?", (long long)((now - f->fail_since_mono) / NS_PER_MS),
		 (unsigned long long)f->fail_tries, (unsigned long long)dropped);
	say(f, text);
	log_info("writing %s works again after %lld ms; %llu records were dropped meanwhile "
		 "(see the DROP lines)", f->conf->logger.log_file,
		 (long long)((now - f->fail_since_mono) / NS_PER_MS), (unsigned long long)dropped);
	f->write_errno = 0;
}

/* May we try to write now? Not while backing off after a failure. */
static bool write_allowed(const struct flusher *f, int64_t now)
{
	return f->write_errno == 0 || now >= f->retry_at_mono;
}

int flush_init(struct flusher *f, const struct conf *c, struct source **src, unsigned nsrc,
	       char *err, size_t errlen)
{
	size_t max_packet = REC_HEAD_DATA;

	memset(f, 0, sizeof(*f));
	f->conf = c;
	f->fd = -1;
	f->cmd_fd = -1;
	f->reopened_fd = -1;
	f->clock_fd = -1;
	if (nsrc > FLUSH_MAX_SOURCES) {
		snprintf(err, errlen, "too many sources (%u)", nsrc);
		return -EINVAL;
	}
	memcpy(f->src, src, nsrc * sizeof(*src));
	f->nsrc = nsrc;
	for (unsigned i = 0; i < c->nserial; i++)
		if (c->serial[i].max_packet > max_packet)
			max_packet = c->serial[i].max_packet;
	if (max_packet < EV_TEXT_MAX)
		max_packet = EV_TEXT_MAX;
	f->pkt_cap = max_packet;
	f->out_cap = 4 * fmt_rx_max(max_packet);
	if (f->out_cap < OUT_MIN)
		f->out_cap = OUT_MIN;
	f->out = malloc(f->out_cap);
	f->pkt = malloc(f->pkt_cap);
	f->cmd_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->reopened_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* without it, clock steps go unreported (said once when arming fails) */
	f->clock_fd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK);
	if (f->out == NULL || f->pkt == NULL || f->cmd_fd < 0 || f->reopened_fd < 0) {
		snprintf(err, errlen, "cannot set up the flusher: %s", strerror(errno));
		flush_fini(f);
		return -ENOMEM;
	}
	memset(f->out, 0, f->out_cap);      /* prefault */
	fmt_init(&f->fmt, c->logger.timestamp, c->logger.payload);
	atomic_init(&f->reopen_req, false);
	atomic_init(&f->stop_req, false);
	atomic_init(&f->lines, 0);
	atomic_init(&f->bytes_written, 0);
	atomic_init(&f->write_errors, 0);
	health_beat_init(&f->beat);
	f->fd = open_log(f);
	if (f->fd < 0) {
		int e = -f->fd;
		snprintf(err, errlen, "cannot open the log file %s: %s; check that its directory "
			 "exists and is writable, or set [logger] log_file", c->logger.log_file,
			 strerror(e));
		flush_fini(f);
		return -e;
	}
	f->last_sync_mono = mono_ns();
	return 0;
}

void flush_fini(struct flusher *f)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->cmd_fd >= 0)
		close(f->cmd_fd);
	if (f->reopened_fd >= 0)
		close(f->reopened_fd);
	if (f->clock_fd >= 0)
		close(f->clock_fd);
	free(f->out);
	free(f->pkt);
	f->fd = f->cmd_fd = f->reopened_fd = f->clock_fd = -1;
	f->out = NULL;
	f->pkt = NULL;
}

int flush_write(struct flusher *f)
{
	int64_t now = mono_ns();
	size_t off = 0;
	int e;

	if (!write_allowed(f, now))
		return -f->write_errno;
	e = -replace_removed_log(f);
	while (e == 0 && off < f->out_len) {
		ssize_t n = write(f->fd, f->out + off, f->out_len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			break;
		}
		off += (size_t)n;
	}
	if (off > 0) {
		f->out_torn = f->out[off - 1] != '\n';
		memmove(f->out, f->out + off, f->out_len - off);
		f->out_len -= off;
		f->unsynced = true;
		atomic_fetch_add_explicit(&f->bytes_written, off, memory_order_relaxed);
	}
	if (e != 0) {
		write_failed(f, e, now);
		return -e;
	}
	if (f->write_errno != 0)
		write_recovered(f, now);
	return 0;
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

/* To stderr or to the journal, there with PORTLOGD_SOURCE=the source's name. */
static void echo(struct flusher *f, const char *source, int priority, const char *line,
		 size_t len)
{
	const char *p = memchr(line, ' ', len);     /* skip the time */

	if (f->echo && p != NULL)
		log_source(priority, source, "%.*s", (int)(len - (size_t)(p + 1 - line) - 1), p + 1);
}

/* An event that means data may be missing is a warning (a close at stop is
 * not); a late delivery only casts doubt on one boundary. */
static int ev_priority(const struct rec *r, const uint8_t *data, size_t len)
{
	static const char stop[] = "reason=stop";

	switch (r->a) {
	case EV_CLOSE:
		return len >= sizeof(stop) - 1 && memcmp(data, stop, sizeof(stop) - 1) == 0
		       ? LOG_NOTICE : LOG_WARNING;
	case EV_ERROR: return LOG_WARNING;
	case EV_LATE: return LOG_INFO;
	default: return LOG_NOTICE;
	}
}

static void drop_line(struct flusher *f, struct source *s, int64_t t_real,
		      uint64_t total, uint64_t total_bytes)
{
	uint64_t n = total - s->drop_reported, bytes = total_bytes - s->drop_bytes_reported;
	char *line = f->out + f->out_len;
	size_t len;

	if (n == 0 || f->out_cap - f->out_len < FMT_TIME_MAX + CONF_NAME_MAX + 64)
		return;     /* reported at the next chance: the counters are cumulative */
	len = fmt_drop(&f->fmt, line, t_real, s->name, n, bytes);
	f->out_len += len;
	atomic_fetch_add_explicit(&f->lines, 1, memory_order_relaxed);
	s->drop_reported = total;
	s->drop_bytes_reported = total_bytes;
	s->next_seq += (uint32_t)n;
	s->accounted += n;
	echo(f, s->name, LOG_WARNING, line, len);
}

/* Formats one record into the buffer (room checked by the caller). */
static void emit(struct flusher *f, struct source *s, const struct rec *r)
{
	char *line = f->out + f->out_len;
	const uint8_t *data;
	size_t len, n = 0;
	char text[EV_TEXT_MAX + 64];

	if (r->kind == REC_DROP) {
		drop_line(f, s, r->t_real, (uint64_t)r->a, (uint64_t)r->b);
		return;
	}
	if (r->seq != s->next_seq) {
		/* a bug, not a loss the producer counted: make it visible */
		snprintf(text, sizeof(text), "seq-gap expected=%u got=%u", s->next_seq, r->seq);
		say(f, text);
		line = f->out + f->out_len;
	}
	s->next_seq = r->seq + 1;
	data = payload(f, &s->ring, r, &len);
	switch (r->kind) {
	case REC_RX:
		n = fmt_rx(&f->fmt, line, r->t_real, s->name, data, len);
		break;
	case REC_EV: {
		size_t tl = 0;
		const char *name = ev_name(r->a);

		tl = strlen(name);
		memcpy(text, name, tl);
		if (len > EV_TEXT_MAX)
			len = EV_TEXT_MAX;  /* source_event caps at SOURCE_EV_MAX, below this */
		if (len > 0) {
			text[tl++] = ' ';
			memcpy(text + tl, data, len);
			tl += len;
		}
		text[tl] = '\0';
		if (r->b != 0) {
			const char *en = strerrorname_np((int)r->b);
			char num[24];

			if (en == NULL) {
				snprintf(num, sizeof(num), "%lld", (long long)r->b);
				en = num;
			}
			fmt_kv(text, sizeof(text), &tl, "errno", en);
		}
		n = fmt_ev(&f->fmt, line, r->t_real, s->name, text, tl);
		echo(f, s->name, ev_priority(r, data, len), line, n);
		break;
	}
	case REC_IN:
		n = fmt_in(&f->fmt, line, r->t_real, s->name, (unsigned)r->a, (unsigned)r->b,
			   s->value_bits ? s->value_bits / 4 : 2, (uint64_t)r->c);
		break;
	case REC_LINES: {
		char fields[16];
		size_t fl = fmt_hexval(fields, (unsigned)r->a, 1);

		fields[fl++] = ' ';
		fl += fmt_hexval(fields + fl, (unsigned)r->b, 1);
		n = fmt_fields(&f->fmt, line, r->t_real, s->name, "LINES", fields, fl);
		break;
	}
	case REC_OVERRUN: {
		char num[24];
		size_t nl = fmt_u64(num, (uint64_t)r->a);

		n = fmt_fields(&f->fmt, line, r->t_real, s->name, "OVERRUN", num, nl);
		break;
	}
	default:
		return;     /* kinds of later producers; nothing pushes them yet */
	}
	f->out_len += n;
	s->accounted++;
	atomic_fetch_add_explicit(&f->lines, 1, memory_order_relaxed);
}

uint32_t flush_drain(struct flusher *f, bool all)
{
	uint32_t budget = 0, done = 0;

	/* Without `all`, take only what is there now, so fast producers cannot keep
	 * the flusher from writing and syncing. */
	for (unsigned i = 0; i < f->nsrc; i++)
		budget += ring_ready(&f->src[i]->ring);
	if (all)
		budget = UINT32_MAX;
	while (done < budget) {
		struct source *best = NULL;
		const struct rec *r = NULL;
		uint32_t slots;

		for (unsigned i = 0; i < f->nsrc; i++) {
			struct source *s = f->src[i];
			const struct rec *h;

			if (ring_ready(&s->ring) == 0)
				continue;
			h = &ring_rslot(&s->ring, 0)->rec;
			if (best == NULL || h->t_mono < r->t_mono) {
				best = s;
				r = h;
			}
		}
		if (best == NULL)
			break;
		/* room for the longest line this record can make, plus a say() */
		if (f->out_cap - f->out_len < fmt_rx_max(r->len > REC_HEAD_DATA ? r->len : EV_TEXT_MAX)
		    + 2 * EV_TEXT_MAX) {
			if (flush_write(f) < 0)
				break;  /* cannot write: leave the rest in the rings */
		}
		slots = rec_slots(r->len);     /* r is the producer's again after the release */
		emit(f, best, r);
		ring_release(&best->ring, slots);
		done += slots;
	}
	return done;
}

static void maybe_sync(struct flusher *f, int64_t now, bool force)
{
	int64_t interval = (int64_t)f->conf->logger.sync_interval_ms * NS_PER_MS;

	if (!f->regular || !f->unsynced || f->write_errno != 0
	    || (!force && now - f->last_sync_mono < interval))
		return;
	if (fdatasync(f->fd) < 0) {
		/* the kernel may have dropped the lines written since the last sync (it
		 * reports that once): say so in the log too, where the reader looks */
		int e = errno;
		const char *en = strerrorname_np(e);
		char text[64];

		atomic_fetch_add_explicit(&f->write_errors, 1, memory_order_relaxed);
		snprintf(text, sizeof(text), "sync-failed errno=%s", en != NULL ? en : "?");
		(void)say(f, text);
		log_err("fdatasync %s: %s; lines written since the last sync may be missing "
			"on disk", f->conf->logger.log_file, strerror(e));
	}
	f->unsynced = false;
	f->last_sync_mono = now;
}

static void signal_fd(int fd)
{
	uint64_t one = 1;

	(void)write(fd, &one, sizeof(one));     /* an eventfd add cannot fail short of a bug */
}

static void reopen(struct flusher *f)
{
	char text[CONF_PATH_MAX + 32];
	size_t tl = 0;
	int fd;

	/* taken now: a SIGHUP from here on (another rotation) asks for one more */
	atomic_store(&f->reopen_req, false);
	(void)flush_drain(f, false);
	if (flush_write(f) < 0) {
		atomic_store(&f->reopen_req, true);     /* try again at the next flush */
		return;
	}
	maybe_sync(f, mono_ns(), true);
	fd = open_log(f);
	if (fd < 0) {
		log_err("cannot reopen %s: %s; still writing to the old file",
			f->conf->logger.log_file, strerror(-fd));
		signal_fd(f->reopened_fd);
		return;
	}
	memcpy(text, "reopen", 6);
	tl = 6;
	fmt_kv(text, sizeof(text), &tl, "file", f->conf->logger.log_file);
	use_new_log(f, fd, text);     /* the buffer is empty: written above */
	signal_fd(f->reopened_fd);
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
		char text[96];

		(void)flush_drain(f, false);
		snprintf(text, sizeof(text), "clock-step delta_us=%+lld",
			 (long long)(f->step_unsaid_ns / NS_PER_US));
		if (say(f, text))
			f->step_unsaid_ns = 0;
	}
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
	size_t lines = 0;

	for (size_t i = 0; i < f->out_len; i++)
		lines += f->out[i] == '\n';
	log_err("stopping with %zu log lines (%zu bytes) that could not be written to %s: %s",
		lines, f->out_len, f->conf->logger.log_file, strerror(f->write_errno));
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
		if (ppoll(pfd, 2, &ts, NULL) > 0 && pfd[0].revents != 0)
			(void)read(f->cmd_fd, &v, sizeof(v));   /* just clears the wake-up */
		health_unpark(&f->beat);
		if (health_stall_wanted(&f->beat))
			health_stall(&f->stop_req, -1);
		check_clock_step(f, pfd[1].revents != 0);
		if (atomic_load(&f->stop_req))
			break;
		if (atomic_load(&f->reopen_req))
			reopen(f);
		now = mono_ns();
		if (now >= next || any_half_full(f)) {
			bool stat_due = stat_every > 0 && now >= next_stat;

			(void)flush_drain(f, false);
			if (f->hook != NULL)
				f->hook(f->hook_ctx, f, stat_due, false);
			if (stat_due)
				next_stat += stat_every;
			(void)flush_write(f);   /* on failure the lines wait in the buffer */
			next = now + interval;
		}
		maybe_sync(f, mono_ns(), false);
	}

	/* Stop: every producer has ended; drain all, account, write, sync. One more
	 * try to write even while backing off: there is no later. */
	f->retry_at_mono = 0;
	while (flush_drain(f, true) > 0)
		(void)flush_write(f);
	for (unsigned i = 0; i < f->nsrc; i++) {
		struct source *s = f->src[i];
		/* drops that no later record could report (the producer has been joined) */
		drop_line(f, s, s->drop_pending ? s->drop_t_real : real_ns(),
			  atomic_load(&s->dropped), atomic_load(&s->dropped_bytes));
	}
	if (f->hook != NULL)
		f->hook(f->hook_ctx, f, true, true);
	if (atomic_load(&f->reopen_req))
		reopen(f);
	if (flush_write(f) < 0)
		report_unwritten(f);
	maybe_sync(f, mono_ns(), true);
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
