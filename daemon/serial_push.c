/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_push.c - what a reader pushes into its ring as the reassembler hands it over:
 * packets, the UART's errors counted meanwhile, the doubts about a boundary (EV
 * late-delivery), the application's pty settings (pass). */
#include <linux/serial.h>
#include <string.h>
#include <sys/ioctl.h>

#include "clock.h"
#include "fmt.h"
#include "serial_internal.h"

const char *const serial_err_name[SERIAL_NERR] = {
	"frame", "parity", "overrun", "brk", "buf_overrun",
};

/* The UART's error counters now; false if the port has none (a pty: ENOTTY). */
bool serial_read_icount(int fd, uint32_t now[SERIAL_NERR])
{
	struct serial_icounter_struct ic;

	if (ioctl(fd, TIOCGICOUNT, &ic) < 0)
		return false;
	now[SERIAL_ERR_FRAME] = (uint32_t)ic.frame;
	now[SERIAL_ERR_PARITY] = (uint32_t)ic.parity;
	now[SERIAL_ERR_OVERRUN] = (uint32_t)ic.overrun;
	now[SERIAL_ERR_BRK] = (uint32_t)ic.brk;
	now[SERIAL_ERR_BUF_OVERRUN] = (uint32_t)ic.buf_overrun;
	return true;
}

/*
 * After each packet: did the UART count errors meanwhile? A byte with a
 * framing or parity error, or a break, reaches us as a byte (raw mode reads it
 * as 0x00), so looking once per packet sees each error next to the bytes it
 * damaged; an overrun lost bytes right there. One port access per packet, and
 * only on ports that have the counters. A change becomes EV uart-errors with
 * the counts since the last look, dated at the packet.
 */
static void check_errors(struct serial_port *p, int64_t t_mono, int64_t t_real)
{
	struct rec ev = { .kind = REC_EV, .t_mono = t_mono, .t_real = t_real,
			  .a = EV_UART_ERRORS };
	uint32_t now[SERIAL_NERR], d[SERIAL_NERR];
	bool changed = false;
	char text[128];
	struct fmt_kv kv;

	if (!p->has_icount || !serial_read_icount(p->drv.fd, now))
		return;
	for (int i = 0; i < SERIAL_NERR; i++) {
		d[i] = now[i] - p->icount_last[i];     /* the kernel's counters wrap at 2^32 */
		changed |= d[i] != 0;
		atomic_fetch_add_explicit(&p->errors[i], d[i], memory_order_relaxed);
		p->icount_last[i] = now[i];
	}
	if (!changed)
		return;
	/* rare (a line with errors); fmt_kv neither allocates nor uses stdio */
	fmt_kv_init(&kv, text, sizeof(text));
	for (int i = 0; i < SERIAL_NERR; i++)
		fmt_kv_u64(&kv, serial_err_name[i], d[i]);
	(void)source_push(&p->src, &ev, text, (uint32_t)kv.len);
}

/*
 * pass: the application changed its pty's settings; the device keeps the
 * config's, and the log says so once (pass.c says when). Dated at the packet
 * the application sent after the change (NULL: idle, now), so that the ring
 * stays in time order: a packet may be in progress after this one.
 */
void serial_check_app_settings(struct serial_port *p, const struct reasm_packet *pkt)
{
	char text[160];
	struct rec ev = { .kind = REC_EV, .a = EV_APP_SETTINGS };

	if (p->pty == NULL || p->kind != REC_TX
	    || !pass_settings_changed(p->pty, text, sizeof(text)))
		return;
	ev.t_mono = pkt != NULL ? pkt->t_mono : mono_ns();
	ev.t_real = pkt != NULL ? pkt->t_real : real_ns();
	(void)source_push(&p->src, &ev, text, (uint32_t)strlen(text));
}

/*
 * A packet: its record also says when its reads were over (b: now, it is handed over
 * after the last) and, if a deadline's empty read ended it, when that read began (c):
 * the flusher's clock sensor judges the line by them (clocksensor.h).
 */
void serial_on_packet(void *ctx, const struct reasm_packet *pkt)
{
	struct serial_port *p = ctx;
	struct rec head = { .kind = p->kind, .t_real = pkt->t_real, .t_mono = pkt->t_mono,
			    .a = pkt->end, .b = mono_ns(),
			    .c = pkt->end == REASM_GAP ? p->empty_read : 0 };

	(void)source_push(&p->src, &head, pkt->data, (uint32_t)pkt->len);  /* drops are counted */
	check_errors(p, pkt->t_mono, pkt->t_real);
	serial_check_app_settings(p, pkt);
}

/*
 * The fields of an EV late-delivery line: the doubt, and its number among the port's
 * marks (each mark's line its own: two reads of one packet may be doubted alike, and a
 * line twice is what a forwarder's duplicate looks like: portlogd-fleet; the flusher
 * numbers them again as it writes them, flush.c renumber). Also the flusher's, for its
 * case=clock marks (clocksensor.h).
 */
void serial_late_fields(struct fmt_kv *kv, const struct reasm_doubt *d, uint64_t mark)
{
	static const char *const why[] = {
		[REASM_LATE_WAKE] = "late-wake", [REASM_DEADLINE_READ] = "deadline-read",
		[REASM_SLOW_READ] = "slow-read", [REASM_HELD] = "held",
		[REASM_RESTART] = "restart", [REASM_STALL] = "stall", [REASM_HIDDEN] = "hidden",
		[REASM_CLOCK] = "clock",
	};
	static const char *const stage[] = {
		[REASM_STAGE_READER] = "reader", [REASM_STAGE_DEVICE] = "device",
		[REASM_STAGE_CPU] = "cpu", [REASM_STAGE_TTY] = "tty", [REASM_STAGE_WIRE] = "wire",
		[REASM_STAGE_MACHINE] = "machine",
	};
	_Static_assert(sizeof(why) / sizeof(why[0]) == REASM_DOUBT_CASES,
		       "a doubt case without its word");
	_Static_assert(sizeof(stage) / sizeof(stage[0]) == REASM_STAGES, "a stage without its word");

	fmt_kv_i64(kv, "wait_us", d->wait_ns / 1000);
	fmt_kv_u64(kv, "bytes", d->bytes);
	fmt_kv_str(kv, "case", why[d->why]);
	fmt_kv_str(kv, "stage", stage[d->stage]);
	fmt_kv_str(kv, "joined", d->joined ? "yes" : "no");
	fmt_kv_u64(kv, "mark", mark);
}

/*
 * A read the reader could not judge (reasm.h, "the boundary rule"): its bytes
 * were found after the packet's deadline, or the read took so long that a gap
 * may hide among them. Say so in an EV line, dated at the start of the packet
 * the bytes join (the one in progress, or the one they begin), so that the
 * source's lines stay in time order: a boundary before or inside that packet
 * may be wrong. reasm calls this after it ended the packet before, if it did,
 * and before it adds the bytes. Rare; fmt_kv neither allocates nor uses stdio.
 */
void serial_report_late(void *ctx, const struct reasm_doubt *d)
{
	struct serial_port *p = ctx;
	struct rec ev = { .kind = REC_EV, .t_mono = d->t_mono, .t_real = d->t_real,
			  .a = EV_LATE };
	char text[96];
	struct fmt_kv kv;

	fmt_kv_init(&kv, text, sizeof(text));
	/* counted as pushed (a dropped one is in drops= too): the marks' total, STAT late= */
	serial_late_fields(&kv, d, atomic_fetch_add_explicit(&p->late, 1, memory_order_relaxed) + 1);
	/* the last process left no word of its last empty read (no state page): the
	 * wait counts from this open only, the least it can have been */
	if (d->why == REASM_RESTART && p->unread_from < 0)
		fmt_kv_str(&kv, "wait_from", "open");
	(void)source_push(&p->src, &ev, text, (uint32_t)kv.len);
}
