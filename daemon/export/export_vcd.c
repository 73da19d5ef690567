/* SPDX-License-Identifier: GPL-2.0-or-later */
/* export_vcd.c - the VCD backend of --export: pins, modem lines and serial activity as wires.
 *
 * IEEE 1364 Value Change Dump, $timescale 1 ns, time 0 at --since or at the
 * first line exported (its date in $date and $comment). One scope "portlogd";
 * one 1-bit wire per pin, named SOURCE.PIN:
 *
 *	IN, read = status    BUSY nACK PE SEL nERR (bits 7..3, as libieee1284
 *	                     reports them: every bit the pin's level, BUSY
 *	                     included), S2 S1 S0 (bits 2..0, not status pins)
 *	IN, read = data      D0..D7
 *	IN, status+data      the status names (bits 0-7) and D0..D7 (bits 8-15)
 *	IN, driver = lines   CTS DSR DCD RI
 *	LINES                CTS DSR DCD RI
 *	RX, TX               SOURCE.RX / SOURCE.TX: 1 while the packet is on the
 *	                     line, from its first byte for LEN characters at the
 *	                     baud and format of the port's EV open
 *
 * The pins are those of the mask in the port's EV open (all bits of the value
 * for a log without one: b0..b15). Changes are collected, sorted by time (lines
 * of different sources are merged only roughly in the log), and written after
 * the header, which must name every wire first. Initial values are written at
 * #0, not in $dumpvars, which sigrok ignores; x is a pin not read yet. The file
 * ends 1 ms after its last line (or at --until), so that sigrok, which shows a
 * change at the last timestamp only if a later one follows, shows them all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "fmt.h"

#define END_PAD_NS 1000000      /* the file's end after its last line */

struct change {
	int64_t t;
	uint32_t seq;           /* keeps changes of one time in log order */
	uint16_t wire;
	char val;               /* '0', '1', 'x' */
};

struct wire {
	char ref[48];           /* SOURCE.PIN */
	char init, cur;         /* the value at time 0, and now */
	uint32_t fall;          /* RX/TX: index of the pending falling change + 1, 0 if none */
	int64_t busy_until;
};

struct vsrc {
	int bit[16];            /* wire of each bit of IN or LINES, -1 none yet */
	int rx, tx;             /* activity wires, -1 none yet */
	bool warned_names, warned_baud;
};

struct vcd {
	struct change *ch;
	size_t nch, chcap;
	struct wire *w;
	unsigned nw, wcap;
	struct vsrc **vs;       /* per source index */
	unsigned vscap;
	int64_t t0, t_last;
	bool have_t0;
};

static const char *const status_names[8] = { "S0", "S1", "S2", "nERR", "SEL", "PE", "nACK", "BUSY" };
static const char *const modem_names[4] = { "CTS", "DSR", "DCD", "RI" };

static struct vsrc *vsrc_of(struct vcd *v, const struct export_src *s)
{
	if (s->idx >= v->vscap) {
		unsigned cap = s->idx + 16;
		struct vsrc **p = realloc(v->vs, cap * sizeof(*p));

		if (p == NULL)
			return NULL;
		memset(p + v->vscap, 0, (cap - v->vscap) * sizeof(*p));
		v->vs = p;
		v->vscap = cap;
	}
	if (v->vs[s->idx] == NULL) {
		struct vsrc *n = malloc(sizeof(*n));

		if (n == NULL)
			return NULL;
		for (int i = 0; i < 16; i++)
			n->bit[i] = -1;
		n->rx = n->tx = -1;
		n->warned_names = n->warned_baud = false;
		v->vs[s->idx] = n;
	}
	return v->vs[s->idx];
}

static int new_wire(struct vcd *v, const char *src, const char *pin)
{
	struct wire *w;

	if (v->nw == 65535)
		return -1;
	if (v->nw == v->wcap) {
		unsigned cap = v->wcap ? 2 * v->wcap : 64;
		struct wire *p = realloc(v->w, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		v->w = p;
		v->wcap = cap;
	}
	w = &v->w[v->nw];
	snprintf(w->ref, sizeof(w->ref), "%s.%s", src, pin);
	w->init = w->cur = 'x';
	w->fall = 0;
	w->busy_until = INT64_MIN;
	return (int)v->nw++;
}

/* Appends a change; returns its index + 1, or 0 when out of memory. */
static uint32_t change(struct export *x, struct vcd *v, int64_t t, int wire, char val)
{
	if (v->nch == v->chcap) {
		size_t cap = v->chcap ? 2 * v->chcap : 4096;
		struct change *p = realloc(v->ch, cap * sizeof(*p));

		if (p == NULL || cap > UINT32_MAX - 1) {
			export_warn(x, "out of memory for more changes; the rest are left out");
			return 0;
		}
		v->ch = p;
		v->chcap = cap;
	}
	v->ch[v->nch] = (struct change){ .t = t, .seq = (uint32_t)v->nch, .wire = (uint16_t)wire,
					 .val = val };
	return (uint32_t)++v->nch;
}

/* A wire takes val at t: a change within the window, the value at time 0 before it. */
static void set(struct export *x, struct vcd *v, int wire, int64_t t, char val, bool in_window)
{
	struct wire *w = &v->w[wire];

	if (!in_window) {
		w->init = w->cur = val;
		return;
	}
	if (w->cur != val)
		(void)change(x, v, t, wire, val);
	w->cur = val;
}

static const char *pin_name(const struct export_src *s, unsigned bit, char *buf, size_t len)
{
	if (strcmp(s->driver, "lines") == 0 && bit < 4)
		return modem_names[bit];
	if (strcmp(s->read, "status") == 0 && bit < 8)
		return status_names[bit];
	if (strcmp(s->read, "data") == 0 && bit < 8) {
		snprintf(buf, len, "D%u", bit);
		return buf;
	}
	if (strcmp(s->read, "status+data") == 0 && bit < 16) {
		if (bit < 8)
			return status_names[bit];
		snprintf(buf, len, "D%u", bit - 8);
		return buf;
	}
	snprintf(buf, len, "b%u", bit);
	return buf;
}

static void pins(struct export *x, struct vcd *v, struct export_src *s, struct vsrc *vs,
		 const struct logline *l, bool in_window)
{
	unsigned width = l->kind == REC_LINES ? 4 : 4 * l->digits;
	unsigned bits = s->have_open && l->kind == REC_IN ? s->mask : (1u << width) - 1;

	if (l->kind == REC_IN && !s->have_open && !vs->warned_names) {
		export_warn(x, "%s: no EV open with read= and mask= before its first IN line (a log "
			    "of an older portlogd, or the file with the start is not given): its "
			    "wires are named b0..b%u", s->name, width - 1);
		vs->warned_names = true;
	}
	for (unsigned b = 0; b < 16; b++) {
		char name[8];

		if (!(bits >> b & 1))
			continue;
		if (vs->bit[b] < 0) {
			vs->bit[b] = new_wire(v, s->name, l->kind == REC_LINES
						 ? modem_names[b] : pin_name(s, b, name, sizeof(name)));
			if (vs->bit[b] < 0) {
				export_warn(x, "out of memory for another wire");
				return;
			}
		}
		set(x, v, vs->bit[b], l->t, (l->value >> b & 1) ? '1' : '0', in_window);
	}
}

/* RX/TX: the activity wire is 1 from the packet's first byte for its time on the line. */
static void activity(struct export *x, struct vcd *v, struct export_src *s, struct vsrc *vs,
		     const struct logline *l, bool in_window)
{
	int *wp = l->kind == REC_RX ? &vs->rx : &vs->tx;
	struct wire *w;
	int64_t end;

	if (*wp < 0 && (*wp = new_wire(v, s->name, fmt_kind(l->kind))) < 0) {
		export_warn(x, "out of memory for another wire");
		return;
	}
	w = &v->w[*wp];
	if (w->cur == 'x' && s->baud != 0 && w->fall == 0)
		w->init = w->cur = '0';         /* idle since the port's open: it logs every packet */
	if (s->baud == 0) {
		if (!vs->warned_baud)
			export_warn(x, "%s: no EV open with baud= before its first packet (give the "
				    "log file with the port's open too): its %s wire is x until one",
				    s->name, fmt_kind(l->kind));
		vs->warned_baud = true;
		set(x, v, *wp, l->t, 'x', in_window);
		return;
	}
	end = l->t + (int64_t)((uint64_t)l->len * s->char_bits * 1000000000ULL / s->baud);
	if (end <= l->t)
		end = l->t + 1;
	if (!in_window) {
		/* before --since: only a packet still on the line at that time shows */
		w->init = w->cur = '0';
		if (end > x->since) {
			w->init = '1';
			w->fall = change(x, v, end, *wp, '0');
			w->busy_until = end;
		}
		return;
	}
	if (w->fall != 0 && l->t <= w->busy_until) {
		/* the previous packet was still on the line: one busy stretch */
		if (end > w->busy_until) {
			v->ch[w->fall - 1].t = end;
			w->busy_until = end;
		}
		return;
	}
	(void)change(x, v, l->t, *wp, '1');
	w->fall = change(x, v, end, *wp, '0');
	w->busy_until = end;
	w->cur = '0';           /* what the wire is after its last change, the fall */
}

static int vcd_begin(struct export *x)
{
	x->priv = calloc(1, sizeof(struct vcd));
	if (x->priv == NULL) {
		fprintf(stderr, "portlogd: out of memory\n");
		return -1;
	}
	return 0;
}

static void vcd_line(struct export *x, struct export_src *s, const struct logline *l,
		     bool in_window)
{
	struct vcd *v = x->priv;
	struct vsrc *vs;

	if (l->t >= x->until || s->type == EXPORT_SRC_DAEMON)
		return;
	if (in_window) {
		if (!v->have_t0 || l->t < v->t0)
			v->t0 = l->t;
		if (!v->have_t0 || l->t > v->t_last)
			v->t_last = l->t;
		v->have_t0 = true;
	}
	if (l->kind != REC_IN && l->kind != REC_LINES && l->kind != REC_RX
	    && l->kind != REC_TX)
		return;
	vs = vsrc_of(v, s);
	if (vs == NULL) {
		export_warn(x, "out of memory");
		return;
	}
	if (l->kind == REC_RX || l->kind == REC_TX)
		activity(x, v, s, vs, l, in_window);
	else
		pins(x, v, s, vs, l, in_window);
	if (in_window)
		x->exported++;
}

static int by_time(const void *a, const void *b)
{
	const struct change *p = a, *q = b;

	if (p->t != q->t)
		return p->t < q->t ? -1 : 1;
	return p->seq < q->seq ? -1 : p->seq > q->seq;
}

/* The short identifier of wire i: base 94 in '!'..'~'. */
static size_t ident(char *out, unsigned i)
{
	size_t n = 0;

	do {
		out[n++] = (char)('!' + i % 94);
		i /= 94;
	} while (i > 0);
	return n;
}

static void put_time(struct export *x, int64_t rel)
{
	char buf[24];
	size_t n = 1;

	buf[0] = '#';
	n += fmt_u64(buf + 1, (uint64_t)rel);
	buf[n++] = '\n';
	export_write(x, buf, n);
}

static void put_value(struct export *x, unsigned wire, char val)
{
	char buf[8];
	size_t n = 1;

	buf[0] = val;
	n += ident(buf + 1, wire);
	buf[n++] = '\n';
	export_write(x, buf, n);
}

static void vcd_end(struct export *x)
{
	struct vcd *v = x->priv;
	char head[512], date[FMT_TIME_MAX + 1], id[8];
	int64_t t0, end, last;
	struct fmt f;
	size_t i = 0;

	t0 = x->have_since ? x->since : v->have_t0 ? v->t0 : 0;
	fmt_init(&f, CONF_TS_ISO, CONF_PAYLOAD_BOTH);
	date[fmt_time(&f, date, t0)] = '\0';
	if (v->nch > 0)         /* qsort wants a pointer, even for nothing */
		qsort(v->ch, v->nch, sizeof(*v->ch), by_time);
	/* changes at time 0 are its initial values */
	for (; i < v->nch && v->ch[i].t <= t0; i++)
		v->w[v->ch[i].wire].init = v->ch[i].val;
	last = v->nch > 0 ? v->ch[v->nch - 1].t : t0;
	if (v->have_t0 && v->t_last > last)
		last = v->t_last;
	end = x->until != INT64_MAX ? x->until : last + END_PAD_NS;
	if (end <= last)
		end = last + 1;
	snprintf(head, sizeof(head),
		 "$date %s $end\n$version portlogd %s (portlogd --export vcd) $end\n"
		 "$comment time 0 is %s, %lld ns since the epoch $end\n"
		 "$timescale 1 ns $end\n$scope module portlogd $end\n",
		 date, PORTLOGD_VERSION, date, (long long)t0);
	export_write(x, head, strlen(head));
	for (unsigned k = 0; k < v->nw; k++) {
		int n = snprintf(head, sizeof(head), "$var wire 1 %.*s %s $end\n",
				 (int)ident(id, k), id, v->w[k].ref);

		export_write(x, head, (size_t)n);
	}
	{
		static const char defs_end[] = "$upscope $end\n$enddefinitions $end\n#0\n";

		export_write(x, defs_end, sizeof(defs_end) - 1);
	}
	for (unsigned k = 0; k < v->nw; k++)
		put_value(x, k, v->w[k].init);
	for (int64_t cur = 0; i < v->nch; i++) {
		int64_t rel = v->ch[i].t - t0;

		if (rel != cur) {
			put_time(x, rel);
			cur = rel;
		}
		put_value(x, v->ch[i].wire, v->ch[i].val);
	}
	put_time(x, end - t0);
}

static void vcd_fini(struct export *x)
{
	struct vcd *v = x->priv;

	if (v == NULL)
		return;
	for (unsigned i = 0; i < v->vscap; i++)
		free(v->vs[i]);
	free(v->vs);
	free(v->w);
	free(v->ch);
	free(v);
	x->priv = NULL;
}

const struct export_ops export_vcd_ops = {
	.name = "vcd",
	.begin = vcd_begin,     /* nothing yet: the header must name every wire */
	.line = vcd_line,       /* wires and changes, into memory */
	.end = vcd_end,         /* header, #0, the changes by time, the end time */
	.fini = vcd_fini,
};
