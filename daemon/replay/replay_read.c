/* SPDX-License-Identifier: GPL-2.0-or-later */
/* replay_read.c - portlogd --replay's reading: the logs' packets in memory, what cannot be
 * replayed as logged (said), which source goes to which output, the timeline. No play:
 * tests/fuzz/fuzz_replay.c drives it alone. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "export.h"
#include "fmt.h"
#include "reasm.h"
#include "replay.h"

/* What cannot be replayed as logged. */
enum note_kind {
	NOTE_DROP,              /* the daemon lost packets: bytes unknown */
	NOTE_LATE,              /* EV late-delivery: a boundary the reader could not judge */
	NOTE_DAEMON_GAP,        /* the daemon was not running */
	NOTE_PORT_GAP,          /* the port was closed */
	NOTE_CLOCK_STEP,        /* the wall clock was set: taken out of the timeline */
	NOTE_BACKWARD,          /* a packet older than the one before it */
	NOTE_BAUD,              /* the port's baud changed */
};

struct note {
	enum note_kind kind;
	int src;                    /* export_src idx; -1: the daemon (every source) */
	int64_t t, t2;              /* when (the timeline's); a gap's start and end */
	int64_t a, b;               /* DROP: packets, bytes; BAUD: old, new; CLOCK_STEP: us;
				     * BACKWARD: the time logged */
	const char *file, *file2;   /* the line; a gap: where it began */
	uint64_t lineno, lineno2;
};

/* Per source, while reading. */
struct rsrc {
	size_t npkt, nother;        /* packets of the direction in the window; of the other */
	int64_t first_t, last_t;    /* of its packets */
	unsigned baud, last_baud;   /* at its first packet; at its latest */
	uint32_t gap_ns;            /* gap_us of its latest EV open */
	char format[4];
	int64_t closed_t;           /* its reader's EV close; INT64_MIN: open */
	const char *closed_file;
	uint64_t closed_line;
};

struct load {
	struct replay *r;
	struct rsrc *src;
	unsigned nsrc;
	struct note *note;
	size_t nnote, note_cap;
	int64_t step_ns;            /* the clock steps so far */
	int64_t last_line_t;        /* the latest line of any source seen; INT64_MIN none */
	int64_t stop_t;             /* EV stop of the run, INT64_MIN: none since its start */
	const char *stop_file;
	uint64_t stop_lineno;
	const char *last_file;
	uint64_t last_lineno;
	uint64_t skipped;           /* lines whose times cannot be placed */
	bool oom;
};

static struct rsrc *rsrc_of(struct load *ld, unsigned idx)
{
	if (idx >= ld->nsrc) {
		unsigned n = idx + 16;
		struct rsrc *p = realloc(ld->src, n * sizeof(*p));

		if (p == NULL)
			return NULL;
		for (unsigned i = ld->nsrc; i < n; i++)
			p[i] = (struct rsrc){ .first_t = INT64_MIN, .last_t = INT64_MIN,
					      .closed_t = INT64_MIN };
		ld->src = p;
		ld->nsrc = n;
	}
	return &ld->src[idx];
}

static void add_note(struct load *ld, const struct export *x, struct note n)
{
	if (ld->nnote == ld->note_cap) {
		size_t cap = ld->note_cap ? 2 * ld->note_cap : 64;
		void *p = realloc(ld->note, cap * sizeof(*ld->note));

		if (p == NULL) {
			ld->oom = true;
			return;
		}
		ld->note = p;
		ld->note_cap = cap;
	}
	n.file = x->file;
	n.lineno = x->lineno;
	ld->note[ld->nnote++] = n;
}

static bool ev_is(const struct logline *l, const char *name)
{
	return l->kind == REC_EV && l->name_len == strlen(name) && memcmp(l->name, name, l->name_len) == 0;
}

static void add_packet(struct load *ld, struct export *x, struct export_src *s,
		       struct rsrc *rs, const struct logline *l, int64_t t)
{
	struct replay *r = ld->r;
	struct replay_pkt *p;

	if (rs->last_t != INT64_MIN && t < rs->last_t) {
		add_note(ld, x, (struct note){ .kind = NOTE_BACKWARD, .src = (int)s->idx, .t = rs->last_t,
					       .a = t });
		t = rs->last_t;
	}
	if (rs->npkt > 0 && s->baud != rs->last_baud)
		add_note(ld, x, (struct note){ .kind = NOTE_BAUD, .src = (int)s->idx, .t = t,
					       .a = rs->last_baud, .b = s->baud });
	if (r->npkt == r->pkt_cap) {
		size_t cap = r->pkt_cap ? 2 * r->pkt_cap : 4096;
		void *q = realloc(r->pkt, cap * sizeof(*r->pkt));

		if (q == NULL) {
			ld->oom = true;
			return;
		}
		r->pkt = q;
		r->pkt_cap = cap;
	}
	if (r->data_len + l->len > r->data_cap) {
		size_t cap = r->data_cap ? 2 * r->data_cap : 1 << 20;
		void *q;

		while (cap < r->data_len + l->len)
			cap *= 2;
		q = realloc(r->data, cap);
		if (q == NULL) {
			ld->oom = true;
			return;
		}
		r->data = q;
		r->data_cap = cap;
	}
	memcpy(r->data + r->data_len, l->data, l->len);
	p = &r->pkt[r->npkt++];
	*p = (struct replay_pkt){
		.t = t, .off = r->data_len, .file = x->file, .lineno = x->lineno, .len = (uint32_t)l->len,
		.char_ns = reasm_char_ns(s->baud, s->char_bits),
		.gap_ns = rs->gap_ns, .src = s->idx,
	};
	r->data_len += l->len;
	if (rs->npkt++ == 0) {
		rs->first_t = t;
		rs->baud = s->baud;
		memcpy(rs->format, s->format, sizeof(rs->format));
	}
	rs->last_t = t;
	rs->last_baud = s->baud;
}

/* Lines of source portlogd: a run's start and stop, clock steps. */
static void daemon_line(struct load *ld, struct export *x, const struct logline *l, int64_t t)
{
	if (ev_is(l, "start") && ld->last_line_t != INT64_MIN) {
		bool stopped = ld->stop_t != INT64_MIN;

		add_note(ld, x, (struct note){ .kind = NOTE_DAEMON_GAP, .src = -1,
					       .t = stopped ? ld->stop_t : ld->last_line_t, .t2 = t,
					       .a = stopped,
					       .file2 = stopped ? ld->stop_file : ld->last_file,
					       .lineno2 = stopped ? ld->stop_lineno : ld->last_lineno });
		/* the ports' closes at the stop are in this gap: not said again at their opens */
		for (unsigned i = 0; i < ld->nsrc; i++)
			ld->src[i].closed_t = INT64_MIN;
		ld->stop_t = INT64_MIN;
	} else if (ev_is(l, "stop")) {
		ld->stop_t = t;
		ld->stop_file = x->file;
		ld->stop_lineno = x->lineno;
	} else if (ev_is(l, "clock-step")) {
		const struct logline_kv *kv = logline_kv(l, "delta_us");
		char v[24];
		long long us, step;
		char *end;

		if (kv == NULL || kv->val_len >= sizeof(v))
			return;
		memcpy(v, kv->val, kv->val_len);
		v[kv->val_len] = '\0';
		errno = 0;
		us = strtoll(v, &end, 10);
		if (errno != 0 || *end != '\0' || us == 0)
			return;
		/* a step beyond the times an int64 of ns holds (292 years): not a clock's */
		if (__builtin_mul_overflow(us, (long long)NS_PER_US, &step)
		    || __builtin_add_overflow(ld->step_ns, step, &step)) {
			export_warn(x, "EV clock-step delta_us=%lld: beyond the times a log holds; "
				    "not taken out of the timeline", us);
			return;
		}
		add_note(ld, x, (struct note){ .kind = NOTE_CLOCK_STEP, .src = -1, .t = t, .a = us });
		ld->step_ns = step;
	}
}

static int ld_begin(struct export *x)
{
	(void)x;
	return 0;
}

static void ld_line(struct export *x, struct export_src *s, const struct logline *l, bool in_window)
{
	struct load *ld = x->priv;
	struct replay *r = ld->r;
	int64_t t;
	struct rsrc *rs;
	bool mine = l->dir == (enum rec_dir)r->dir;

	if (__builtin_sub_overflow(l->t, ld->step_ns, &t)) {
		/* the clock steps before it take it beyond the times an int64 of ns holds */
		export_warn(x, "its time less the clock steps before it (%lld us) is beyond the "
			    "years 1677-2262: skipped", (long long)(ld->step_ns / NS_PER_US));
		ld->skipped++;
		return;
	}
	if (s->type == EXPORT_SRC_DAEMON) {
		daemon_line(ld, x, l, t);
	} else if ((rs = rsrc_of(ld, s->idx)) == NULL) {
		ld->oom = true;
	} else if (l->kind == REC_RX || l->kind == REC_TX) {
		if (!in_window)
			;
		else if ((l->kind == REC_TX) == (r->dir == REC_DIR_TX))
			add_packet(ld, x, s, rs, l, t);
		else
			rs->nother++;
	} else if (l->kind == REC_DROP && mine && in_window) {
		add_note(ld, x, (struct note){ .kind = NOTE_DROP, .src = (int)s->idx, .t = t,
					       .a = (int64_t)l->records, .b = (int64_t)l->bytes });
	} else if (ev_is(l, "late-delivery") && mine && in_window) {
		add_note(ld, x, (struct note){ .kind = NOTE_LATE, .src = (int)s->idx, .t = t });
	} else if (ev_is(l, "close") && mine) {
		rs->closed_t = t;
		rs->closed_file = x->file;
		rs->closed_line = x->lineno;
	} else if (ev_is(l, "open") && mine) {
		uint64_t us;

		rs->gap_ns = logline_kv_u64(l, "gap_us", &us) && us < 4000000 ? (uint32_t)(us * 1000) : 0;
		if (rs->closed_t != INT64_MIN)
			add_note(ld, x, (struct note){ .kind = NOTE_PORT_GAP, .src = (int)s->idx,
						       .t = rs->closed_t, .t2 = t, .file2 = rs->closed_file,
						       .lineno2 = rs->closed_line });
		rs->closed_t = INT64_MIN;
	}
	ld->last_line_t = t;
	ld->last_file = x->file;
	ld->last_lineno = x->lineno;
}

static void ld_end(struct export *x)
{
	(void)x;
}

static void ld_fini(struct export *x)
{
	(void)x;
}

static const struct export_ops load_ops = {
	.name = "replay",
	.begin = ld_begin,      /* nothing: the packets go to memory */
	.line = ld_line,        /* packets of the direction, and the notes */
	.end = ld_end,
	.fini = ld_fini,        /* the caller frees what ld_line kept */
};

/* ---- after reading: which source goes where ---- */

const char *replay_dir_word(const struct replay *r)
{
	return r->dir == REC_DIR_TX ? "TX" : "RX";
}

static int assign_one(struct replay *r, struct load *ld, struct replay_out *o,
		      const struct export_src *s)
{
	const struct rsrc *rs = s->idx < ld->nsrc ? &ld->src[s->idx] : NULL;
	size_t k = 0;

	if (rs == NULL || rs->npkt == 0) {
		fprintf(stderr, "portlogd: --source %s: no %s lines in the window", s->name, replay_dir_word(r));
		if (rs != NULL && rs->nother > 0)
			fprintf(stderr, " (it has %zu %s lines: --dir %s?)", rs->nother,
				r->dir == REC_DIR_TX ? "RX" : "TX", r->dir == REC_DIR_TX ? "rx" : "tx");
		fputc('\n', stderr);
		return -1;
	}
	o->source = s->name;
	o->src = s->idx;
	o->baud = rs->baud;
	memcpy(o->format, rs->format, sizeof(o->format));
	o->idx = malloc(rs->npkt * sizeof(*o->idx));
	if (o->idx == NULL)
		return -1;
	for (size_t i = 0; i < r->npkt; i++)
		if (r->pkt[i].src == s->idx)
			o->idx[k++] = i;
	o->n = k;
	return 0;
}

static int assign(struct replay *r, struct load *ld, const struct export *x,
		  char *const *names, unsigned nnames)
{
	if (nnames > 0) {
		for (unsigned i = 0; i < nnames; i++) {
			const struct export_src *s = NULL;

			for (unsigned j = 0; j < x->nsrc; j++)
				if (strcmp(x->src[j].name, names[i]) == 0)
					s = &x->src[j];
			if (s == NULL) {
				fprintf(stderr, "portlogd: --source %s: not in the log\n", names[i]);
				return -1;
			}
			if (assign_one(r, ld, &r->out[i], s) < 0)
				return -1;
		}
		return 0;
	}
	{
		const struct export_src *only = NULL;
		unsigned n = 0;

		for (unsigned j = 0; j < x->nsrc; j++)
			if (x->src[j].idx < ld->nsrc && ld->src[x->src[j].idx].npkt > 0) {
				only = &x->src[j];
				n++;
			}
		if (n == 1)
			return assign_one(r, ld, &r->out[0], only);
		if (n == 0) {
			fprintf(stderr, "portlogd: the log has no %s lines in the window%s\n", replay_dir_word(r),
				r->dir == REC_DIR_MAIN ? " (--dir tx for TX lines)" : "");
			return -1;
		}
		fprintf(stderr, "portlogd: the log has %s lines of", replay_dir_word(r));
		for (unsigned j = 0; j < x->nsrc; j++)
			if (x->src[j].idx < ld->nsrc && ld->src[x->src[j].idx].npkt > 0)
				fprintf(stderr, " %s", x->src[j].name);
		fprintf(stderr, ": choose with --source NAME, each with its --to or --pty\n");
		return -1;
	}
}

/* ---- what is said ---- */

const char *replay_when(struct fmt *f, int64_t t, char *buf)
{
	buf[fmt_time(f, buf, t)] = '\0';
	return buf;
}

static bool out_of(const struct replay *r, int src)
{
	for (unsigned i = 0; i < r->nout; i++)
		if ((int)r->out[i].src == src)
			return true;
	return false;
}

/* Prints the notes that concern what is replayed; counts them. */
static void say_notes(const struct replay *r, const struct load *ld, const struct export *x,
		      struct replay_tally *ty)
{
	int64_t first = INT64_MAX, last = INT64_MIN;
	struct fmt f;
	char a[FMT_TIME_MAX], b[FMT_TIME_MAX];

	fmt_init(&f, CONF_TS_ISO, CONF_PAYLOAD_BOTH);
	for (unsigned i = 0; i < r->nout; i++) {
		const struct rsrc *rs = &ld->src[r->out[i].src];

		first = rs->first_t < first ? rs->first_t : first;
		last = rs->last_t > last ? rs->last_t : last;
	}
	for (size_t i = 0; i < ld->nnote; i++) {
		const struct note *n = &ld->note[i];
		const struct rsrc *rs = n->src >= 0 ? &ld->src[n->src] : NULL;
		const char *name = n->src >= 0 ? x->src[n->src].name : "portlogd";
		int64_t lo = rs ? rs->first_t : first, hi = rs ? rs->last_t : last;

		if (n->src >= 0 && !out_of(r, n->src))
			continue;
		/* a stretch counts only between the first and the last packet replayed */
		if ((n->kind == NOTE_DAEMON_GAP || n->kind == NOTE_PORT_GAP || n->kind == NOTE_CLOCK_STEP)
		    && (n->t >= hi || (n->kind == NOTE_CLOCK_STEP ? n->t : n->t2) <= lo))
			continue;
		fprintf(stderr, "portlogd: %s:%llu: ", n->file, (unsigned long long)n->lineno);
		switch (n->kind) {
		case NOTE_DROP:
			fprintf(stderr, "%s DROP at %s: the daemon lost %lld packets (%lld bytes) "
				"there; their bytes are unknown and not replayed\n", name,
				replay_when(&f, n->t, a), (long long)n->a, (long long)n->b);
			ty->drops++;
			ty->drop_pkts += (uint64_t)n->a;
			ty->drop_bytes += (uint64_t)n->b;
			break;
		case NOTE_LATE:
			fprintf(stderr, "%s EV late-delivery at %s: the log doubts the boundary (and "
				"so the first byte's time) of the packet there; replayed as logged\n",
				name, replay_when(&f, n->t, a));
			ty->late_deliveries++;
			break;
		case NOTE_DAEMON_GAP:
			fprintf(stderr, "portlogd EV start at %s: the daemon did not log from %s "
				"(%s at %s:%llu); what the ports sent then is unknown and not "
				"replayed (the timeline keeps the interval)\n", replay_when(&f, n->t2, b),
				replay_when(&f, n->t, a), n->a ? "its EV stop" : "its last line, no EV stop",
				n->file2, (unsigned long long)n->lineno2);
			ty->gaps++;
			break;
		case NOTE_PORT_GAP:
			fprintf(stderr, "%s EV open at %s: the port was closed from %s (%s:%llu); "
				"what it sent then is unknown and not replayed\n", name,
				replay_when(&f, n->t2, b), replay_when(&f, n->t, a), n->file2,
				(unsigned long long)n->lineno2);
			ty->gaps++;
			break;
		case NOTE_CLOCK_STEP:
			fprintf(stderr, "portlogd EV clock-step delta_us=%+lld: the log's times jump "
				"here; the replay takes the jump out of its timeline (an interval "
				"across it is as good as the step's measure)\n", (long long)n->a);
			ty->steps++;
			break;
		case NOTE_BACKWARD:
			fprintf(stderr, "%s %s at %s is older than the packet before it (%s): LOG "
				"files not oldest first, or the clock was set; played right after "
				"that packet\n", name, replay_dir_word(r), replay_when(&f, n->a, a), replay_when(&f, n->t, b));
			ty->backward++;
			break;
		case NOTE_BAUD:
			fprintf(stderr, "%s %s at %s: an EV open before it changed the baud from "
				"%lld to %lld; the pacing of a pty follows, a port stays at the first\n",
				name, replay_dir_word(r), replay_when(&f, n->t, a), (long long)n->a, (long long)n->b);
			ty->bauds++;
			break;
		}
	}
}

/* ---- the timeline ---- */

/* Marks the packets an EV late-delivery is dated at (the notes are in log order,
 * the packets of a source in time order). */
static void mark_doubted(struct replay *r, const struct load *ld, struct replay_out *o)
{
	for (size_t i = 0; i < ld->nnote; i++) {
		const struct note *n = &ld->note[i];
		size_t lo = 0, hi = o->n;

		if (n->kind != NOTE_LATE || n->src != (int)o->src)
			continue;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (r->pkt[o->idx[mid]].t < n->t)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < o->n && r->pkt[o->idx[lo]].t == n->t; lo++)
			r->pkt[o->idx[lo]].doubted = true;
	}
}

/*
 * Each packet's place on the replay's timeline: its time after the first
 * packet's, divided by --speed. A boundary the log does not doubt was a
 * silence of at least the logging port's gap_us (README, "Packet
 * boundaries"), but the first-byte times are estimates (the reader's
 * wake-up): where they leave less silence after the packet before, at the
 * logged baud, the packet is held back until there is that gap (or 3.5
 * characters without one in the log), so that a reader frames the packets
 * as the logger did; each such packet is said. Returns how many.
 */
static int timeline(struct replay *r, const struct load *ld, uint64_t *nheld)
{
	int64_t base = INT64_MAX;
	uint64_t held = 0;
	struct fmt f;
	char a[FMT_TIME_MAX];

	fmt_init(&f, CONF_TS_ISO, CONF_PAYLOAD_BOTH);
	for (unsigned i = 0; i < r->nout; i++)
		if (r->pkt[r->out[i].idx[0]].t < base)
			base = r->pkt[r->out[i].idx[0]].t;
	for (unsigned i = 0; i < r->nout; i++) {
		struct replay_out *o = &r->out[i];
		int64_t end = INT64_MIN;        /* the packet before: its last byte's end */

		mark_doubted(r, ld, o);
		for (size_t k = 0; k < o->n; k++) {
			struct replay_pkt *p = &r->pkt[o->idx[k]];
			int64_t gap = p->gap_ns ? p->gap_ns : (int64_t)p->char_ns * REPLAY_SPLIT_CHARS_X2 / 2;

			/* in double: two times of a log may be further apart than an int64 holds */
			double at = r->speed > 0 ? ((double)p->t - (double)base) / r->speed : 0;

			if (!(at <= REPLAY_SPAN_MAX_NS)) {
				fprintf(stderr, "portlogd: %s:%llu: %s %s at %s: at --speed %g it would "
					"be played %.3g years after the first packet, beyond %d years; "
					"fix: replay a window (--since, --until), or give a larger "
					"--speed (0: as fast as the output takes it)\n", p->file,
					(unsigned long long)p->lineno, o->source, replay_dir_word(r),
					replay_when(&f, p->t, a), r->speed, at / (365.25 * 86400 * 1e9),
					REPLAY_SPAN_MAX_Y);
				return -1;
			}
			p->at_ns = (int64_t)at;
			if (r->speed > 0 && p->char_ns > 0 && !p->doubted && end != INT64_MIN
			    && p->at_ns < end + gap) {
				fprintf(stderr, "portlogd: %s:%llu: %s %s at %s: its time leaves %lld us "
					"of silence after the packet before it (at the logged baud), less "
					"than the gap of %lld us that ended that packet: held back %lld us\n",
					p->file, (unsigned long long)p->lineno, o->source, replay_dir_word(r),
					replay_when(&f, p->t, a), (long long)((p->at_ns - end) / NS_PER_US),
					(long long)(gap / NS_PER_US),
					(long long)((end + gap - p->at_ns) / NS_PER_US));
				p->at_ns = end + gap;
				held++;
			}
			end = p->at_ns + (int64_t)p->len * p->char_ns;
		}
	}
	*nheld = held;
	return 0;
}


/* ---- the whole reading ---- */

int replay_read(struct replay *r, const struct replay_input *in, struct replay_tally *ty)
{
	struct load ld = { .r = r, .last_line_t = INT64_MIN, .stop_t = INT64_MIN };
	struct export x = { .ops = &load_ops, .since = in->since, .until = in->until,
			    .have_since = in->have_since, .out_fd = -1, .priv = &ld };
	int rc = REPLAY_OK;

	if (export_read(&x, in->names, in->nnames, in->logs, in->nlogs) < 0)
		rc = REPLAY_FAILED;
	r->srcs = x.src;        /* the outputs' source names are there */
	if (ld.oom) {
		fprintf(stderr, "portlogd: out of memory for the packets: replay a shorter stretch "
			"(--since, --until)\n");
		rc = REPLAY_FAILED;
		goto done;
	}
	if (export_say_bad(&x) && rc == REPLAY_OK)
		rc = REPLAY_INCOMPLETE;
	if (assign(r, &ld, &x, in->names, in->nnames) < 0) {
		rc = REPLAY_FAILED;
		goto done;
	}
	say_notes(r, &ld, &x, ty);
	if ((ty->drops > 0 || ty->gaps > 0) && rc == REPLAY_OK)
		rc = REPLAY_INCOMPLETE;
	if (timeline(r, &ld, &ty->held) < 0) {
		rc = REPLAY_FAILED;
		goto done;
	}
	if (ld.skipped > 0 && rc == REPLAY_OK)
		rc = REPLAY_INCOMPLETE;
	r->late = malloc((r->npkt ? r->npkt : 1) * sizeof(*r->late));
	if (r->late == NULL) {
		fprintf(stderr, "portlogd: out of memory\n");
		rc = REPLAY_FAILED;
	}
done:
	free(ld.src);
	free(ld.note);
	return rc;
}

void replay_free(struct replay *r)
{
	for (unsigned i = 0; r->out != NULL && i < r->nout; i++) {
		free(r->out[i].idx);
		r->out[i].idx = NULL;
	}
	free(r->late);
	free(r->pkt);
	free(r->data);
	free(r->srcs);
	r->late = NULL;
	r->pkt = NULL;
	r->data = NULL;
	r->srcs = NULL;
}
