/* SPDX-License-Identifier: GPL-2.0-or-later */
/* export_pcapng.c - the pcapng backend of --export: serial sources as LINKTYPE_RTAC_SERIAL.
 *
 * Written by hand: libpcap 1.10 writes pcap only (no pcapng, so no interface
 * per port, no comments, no nanoseconds with a name), and Wireshark's
 * libwiretap, which writes pcapng, would pull Wireshark's libraries into the
 * daemon package for four simple block types. The blocks (pcapng, IETF
 * draft-ietf-opsawg-pcapng): a Section Header; an Interface Description per
 * SOURCE (if_name, if_tsresol = 9: nanoseconds), written before its first
 * packet; an Enhanced Packet per record, in the file order of the log.
 *
 * Each packet starts with the 12-byte RTAC serial header (Wireshark's
 * packet-rtacser.c): seconds and microseconds since the epoch (big-endian
 * u32 each), an event type, the control lines, a 2-byte footer (0). Then the
 * bytes, for RX and TX. The mapping:
 *
 *	RX            DATA_RX_START (2) + payload, epb_flags inbound
 *	TX            DATA_TX_START (1) + payload, epb_flags outbound
 *	DROP          CAPTURE_DATA_LOST (5), the counts in a comment; dir=tx (the TX
 *	              ring's) outbound
 *	LINES         STATUS_CHANGE (0) with the new lines
 *	EV uart-errors  FRAMING_ERROR (7), PARITY_ERROR (8), SERIAL_BREAK_EVENT (9),
 *	              SERIAL_OVERFLOW_EVENT (10): one per kind counted, the line as comment
 *	other EV      STATUS_CHANGE (0), the line from KIND on as its comment (open,
 *	              close, late-delivery, error; portlogd's on an interface "portlogd")
 *
 * Every header carries the port's modem input lines as last logged (LINES), 0
 * before the first. IN, OVERRUN and STAT lines, and parallel ports, are not
 * serial traffic and are left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

#define LINKTYPE_RTAC_SERIAL 250
#define BT_SHB 0x0A0D0D0Au
#define BT_IDB 0x00000001u
#define BT_EPB 0x00000006u

enum {
	RTAC_STATUS_CHANGE = 0x00, RTAC_TX_START = 0x01, RTAC_RX_START = 0x02,
	RTAC_DATA_LOST = 0x05, RTAC_FRAMING = 0x07, RTAC_PARITY = 0x08, RTAC_BREAK = 0x09,
	RTAC_OVERFLOW = 0x0A,
};

struct pcapng {
	int *ifid;              /* per source index: its interface, -1 before its IDB */
	unsigned cap;
	unsigned nif;
	bool warned_negative;
	char comment[1024];
};

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);       /* host order: the section's byte-order magic says which */
}

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* An option: code, length, value padded to 4 bytes. Returns its size. */
static size_t option(uint8_t *p, uint16_t code, const void *val, size_t len)
{
	put16(p, code);
	put16(p + 2, (uint16_t)len);
	memcpy(p + 4, val, len);
	memset(p + 4 + len, 0, pad4(len) - len);
	return 4 + pad4(len);
}

static void block(struct export *x, uint32_t type, const uint8_t *body, size_t len)
{
	uint8_t head[8], tail[4];
	uint32_t total = (uint32_t)(12 + len);

	put32(head, type);
	put32(head + 4, total);
	put32(tail, total);
	export_write(x, head, 8);
	export_write(x, body, len);
	export_write(x, tail, 4);
}

static int pcapng_begin(struct export *x)
{
	static const char appl[] = "portlogd " PORTLOGD_VERSION " (portlogd --export pcapng)";
	struct pcapng *p = calloc(1, sizeof(*p));
	uint8_t b[128];
	size_t n = 0;
	uint64_t unknown = UINT64_MAX;

	if (p == NULL) {
		fprintf(stderr, "portlogd: out of memory\n");
		return -1;
	}
	x->priv = p;
	put32(b, 0x1A2B3C4Du);
	put16(b + 4, 1);
	put16(b + 6, 0);
	memcpy(b + 8, &unknown, 8);      /* section length: not given */
	n = 16 + option(b + 16, 4, appl, sizeof(appl) - 1);     /* shb_userappl */
	n += option(b + n, 0, "", 0);
	block(x, BT_SHB, b, n);
	return 0;
}

static int interface(struct export *x, struct pcapng *p, const struct export_src *s)
{
	uint8_t b[96];
	size_t n = 8;
	uint8_t tsresol = 9;

	if (s->idx >= p->cap) {
		unsigned cap = s->idx + 16;
		int *v = realloc(p->ifid, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		for (unsigned i = p->cap; i < cap; i++)
			v[i] = -1;
		p->ifid = v;
		p->cap = cap;
	}
	if (p->ifid[s->idx] >= 0)
		return p->ifid[s->idx];
	put16(b, LINKTYPE_RTAC_SERIAL);
	put16(b + 2, 0);
	put32(b + 4, 0);                                         /* snaplen: no limit */
	n += option(b + n, 2, s->name, strlen(s->name));        /* if_name */
	n += option(b + n, 9, &tsresol, 1);                     /* if_tsresol: 10^-9 s */
	n += option(b + n, 0, "", 0);
	block(x, BT_IDB, b, n);
	p->ifid[s->idx] = (int)p->nif;
	return (int)p->nif++;
}

/* Maps the log's LINES bits (CTS 1, DSR 2, DCD 4, RI 8) to the RTAC header's
 * (CTS 0x01, DCD 0x02, DSR 0x04, RING 0x20); RTS and DTR are outputs, not logged. */
static uint8_t rtac_lines(int lines)
{
	unsigned v = lines < 0 ? 0 : (unsigned)lines;

	return (uint8_t)((v & 1 ? 0x01 : 0) | (v & 4 ? 0x02 : 0) | (v & 2 ? 0x04 : 0)
			 | (v & 8 ? 0x20 : 0));
}

/* One Enhanced Packet Block: the RTAC header, the payload, a comment if any. */
static void packet(struct export *x, struct pcapng *p, const struct export_src *s, int64_t t,
		   uint8_t event, int lines, const uint8_t *data, size_t len, const char *comment,
		   uint32_t flags)
{
	uint8_t head[20 + 12], opts[16 + sizeof(p->comment) + 8], tail[4], zero[4] = { 0 };
	size_t clen = comment != NULL ? strlen(comment) : 0, olen = 0, caplen = 12 + len;
	uint64_t ts = (uint64_t)t;
	uint32_t sec = (uint32_t)(ts / 1000000000), usec = (uint32_t)(ts % 1000000000 / 1000);
	int ifid = interface(x, p, s);

	if (ifid < 0) {
		export_warn(x, "out of memory for another interface; record left out");
		return;
	}
	if (clen > 0)
		olen += option(opts, 1, comment, clen);                 /* opt_comment */
	if (flags != 0)
		olen += option(opts + olen, 2, &flags, 4);              /* epb_flags */
	if (olen > 0)
		olen += option(opts + olen, 0, "", 0);
	put32(head, BT_EPB);
	put32(head + 4, (uint32_t)(28 + pad4(caplen) + olen + 4));
	put32(head + 8, (uint32_t)ifid);
	put32(head + 12, (uint32_t)(ts >> 32));
	put32(head + 16, (uint32_t)ts);
	put32(head + 20, (uint32_t)caplen);
	put32(head + 24, (uint32_t)caplen);
	/* the RTAC serial header: big-endian, whatever the host */
	head[28] = (uint8_t)(sec >> 24);
	head[29] = (uint8_t)(sec >> 16);
	head[30] = (uint8_t)(sec >> 8);
	head[31] = (uint8_t)sec;
	export_write(x, head, sizeof(head));
	{
		uint8_t rest[8] = { (uint8_t)(usec >> 24), (uint8_t)(usec >> 16), (uint8_t)(usec >> 8),
				    (uint8_t)usec, event, rtac_lines(lines), 0, 0 };

		export_write(x, rest, 8);
	}
	if (len > 0)
		export_write(x, data, len);
	export_write(x, zero, pad4(caplen) - caplen);
	export_write(x, opts, olen);
	put32(tail, (uint32_t)(28 + pad4(caplen) + olen + 4));
	export_write(x, tail, 4);
	x->exported++;
}

/* The line from KIND on, as a comment ("EV open device=..."), cut to fit. */
static const char *line_comment(struct pcapng *p, const struct logline *l)
{
	const char *kind = logline_kind_name(l->kind);
	size_t n = (size_t)snprintf(p->comment, sizeof(p->comment), "%s %.*s", kind,
				    (int)l->name_len, l->name);

	for (unsigned i = 0; i < l->nkv && n + 1 < sizeof(p->comment); i++)
		n += (size_t)snprintf(p->comment + n, sizeof(p->comment) - n, " %.*s=%.*s",
				      (int)l->kv[i].key_len, l->kv[i].key, (int)l->kv[i].val_len,
				      l->kv[i].val);
	return p->comment;
}

static void uart_errors(struct export *x, struct pcapng *p, const struct export_src *s,
			const struct logline *l)
{
	static const struct { const char *key; uint8_t event; } kinds[] = {
		{ "frame", RTAC_FRAMING }, { "parity", RTAC_PARITY }, { "brk", RTAC_BREAK },
		{ "overrun", RTAC_OVERFLOW }, { "buf_overrun", RTAC_OVERFLOW },
	};
	const char *comment = line_comment(p, l);
	bool overflow = false, any = false;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		uint64_t n;

		if (!logline_kv_u64(l, kinds[i].key, &n) || n == 0)
			continue;
		if (kinds[i].event == RTAC_OVERFLOW && overflow)
			continue;       /* one overflow record for both counters */
		overflow |= kinds[i].event == RTAC_OVERFLOW;
		packet(x, p, s, l->t, kinds[i].event, s->lines, NULL, 0, any ? NULL : comment, 0);
		any = true;
	}
	if (!any)
		packet(x, p, s, l->t, RTAC_STATUS_CHANGE, s->lines, NULL, 0, comment, 0);
}

static void pcapng_line(struct export *x, struct export_src *s, const struct logline *l,
			bool in_window)
{
	struct pcapng *p = x->priv;

	if (!in_window || s->type == EXPORT_SRC_PARALLEL)
		return;
	if (l->t < 0) {
		if (!p->warned_negative)
			export_warn(x, "a time before 1970 cannot be written in pcapng; such lines "
				    "are left out");
		p->warned_negative = true;
		return;
	}
	switch (l->kind) {
	case REC_RX:
		packet(x, p, s, l->t, RTAC_RX_START, s->lines, l->data, l->len, NULL, 1);
		break;
	case REC_TX:
		packet(x, p, s, l->t, RTAC_TX_START, s->lines, l->data, l->len, NULL, 2);
		break;
	case REC_DROP:
		/* a drop of the TX ring (dir=tx) lost packets going to the device */
		snprintf(p->comment, sizeof(p->comment), "DROP %llu %llu%s: %llu records (packets) "
			 "with %llu bytes lost%s", (unsigned long long)l->records,
			 (unsigned long long)l->bytes, l->dir == REC_DIR_TX ? " dir=tx" : "",
			 (unsigned long long)l->records, (unsigned long long)l->bytes,
			 l->dir == REC_DIR_TX ? " (TX: going to the device)" : "");
		packet(x, p, s, l->t, RTAC_DATA_LOST, s->lines, NULL, 0, p->comment,
		       l->dir == REC_DIR_TX ? 2 : 0);
		break;
	case REC_LINES:
		packet(x, p, s, l->t, RTAC_STATUS_CHANGE, (int)l->value, NULL, 0, NULL, 0);
		break;
	case REC_EV:
		if (l->name_len == 11 && memcmp(l->name, "uart-errors", 11) == 0)
			uart_errors(x, p, s, l);
		else
			packet(x, p, s, l->t, RTAC_STATUS_CHANGE, s->lines, NULL, 0,
			       line_comment(p, l), 0);
		break;
	default:        /* IN, OVERRUN, STAT: not serial traffic */
		break;
	}
}

static void pcapng_end(struct export *x)
{
	(void)x;
}

static void pcapng_fini(struct export *x)
{
	struct pcapng *p = x->priv;

	if (p != NULL)
		free(p->ifid);
	free(p);
	x->priv = NULL;
}

const struct export_ops export_pcapng_ops = {
	.name = "pcapng",
	.begin = pcapng_begin,  /* the Section Header Block */
	.line = pcapng_line,    /* an IDB at a source's first record, then its packets */
	.end = pcapng_end,      /* nothing is held back */
	.fini = pcapng_fini,
};
