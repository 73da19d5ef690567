/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reasm_model.h - a wire, a device and a reader around the reassembler: the rule's bench.
 *
 * The caller puts bytes on a wire (each with the time its last bit ended); the
 * device of the machine hands them to the kernel (none: each at its end; a 16550A
 * FIFO: a trigger's worth with its last byte, fewer 4 characters after the last
 * byte when no other came, its interrupt handler's latency later with what came
 * meanwhile; an FTDI-like adapter: on its latency timer, at USB
 * frames of 1 ms, or at once when 62 bytes wait; an adapter on a receive timeout: a
 * transfer of `xfer` bytes as soon as that many wait, the rest `hold` after the last
 * byte it received, each taken by the host up to `poll` later), and a reader reads them into a
 * reassembler (daemon/reasm.c) given the device's model as the daemon gives it
 * (delivery_model). The reader's choices come from the caller's hooks: when it
 * wakes for a hand-over (its latency, a stall in which it runs not at all), when
 * its looks at the packet's deadline run, how long a read takes, how loose the
 * sensors' bound is. It does one thing at a time: it looks at each deadline (an
 * empty read before the next hand-over, else a read no wake-up announced), and
 * after each read reads again until the kernel is empty (a read that finds what
 * was handed over meanwhile is one no wake-up announced). The sensors' bound it
 * passes (reasm_read.from_mono) is sound: never after the read's first hand-over.
 *
 * Then it checks the rule's guarantee: a wrong boundary (a line starting where
 * the wire had less than a gap of silence, or none where it had a gap; a line cut
 * by the delimiter or max_len is not wrong) only at a read that raised a doubt, or
 * (a gap asked for that the device hides: want_ns) a missing one in a line that has
 * a doubt; and the first-byte date of a line found on time within the device's stamp error.
 */
#ifndef PORTLOGD_REASM_MODEL_H
#define PORTLOGD_REASM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reasm.h"

#define RM_REAL_OFFSET 1795300867000000000LL  /* CLOCK_REALTIME - CLOCK_MONOTONIC fed */
#define RM_FRAME_NS ((int64_t)1000000)        /* an adapter's USB frame */
#define RM_USB_FULL 62                        /* an adapter sends at once when this many wait */

enum rm_dev {
	RM_DIRECT,               /* no device: each byte reaches the kernel at its end */
	RM_FIFO,                 /* a 16550A FIFO at a trigger level, RX timeout 4 characters */
	RM_USB,                  /* an adapter on its latency timer */
	RM_ADAPTER,              /* an adapter on a receive timeout, in transfers of xfer bytes */
};

/* The machine: the line's settings, the device, the reader's sensors. */
struct rm_machine {
	const char *name;        /* in the messages */
	int64_t char_ns, gap_ns;
	enum rm_dev dev;
	unsigned trigger;        /* RM_FIFO: 2..14 */
	int64_t irq_ns;          /* RM_FIFO: its interrupt's latency (within its blur, half a character) */
	int64_t latency_ns;      /* RM_USB: its latency timer */
	int64_t hold_ns;         /* RM_ADAPTER: its receive timeout after the last byte */
	unsigned xfer;           /* RM_ADAPTER: its transfers' size, 2.. */
	int64_t poll_ns;         /* RM_ADAPTER: the host takes a transfer up to this much later */
	int64_t want_ns;         /* the gap asked for, when the device resolves only gap_ns
				  * (reasm_set_gap): the wire's truth; 0: gap_ns */
	size_t max_len;
	int delim;               /* -1: none */
	bool sensors;            /* the reads carry the sensors' bound, else none (on time) */
	int64_t on_time_ns;      /* a read woken this late at most is on time: its date is held */
	bool report;             /* print the first 5 wrong boundaries and dates off */
	/* the whole machine stopped (a virtual machine paused: its clock stops with it,
	 * so the reader and its sensors see nothing of it) at stops[2k] on the wire's
	 * clock for stops[2k + 1]; what the wire brought meanwhile its emulated device
	 * takes once it runs again, a byte each backlog_ns (QEMU's socket drained as
	 * the guest reads), until it has caught up with the wire */
	/* a wrong boundary excused by a doubt anywhere in its line, as the log's mark
	 * covers it (portlogd-log(5)), not only at its read */
	bool by_line;
	const int64_t *stops;
	size_t nstops;
	int64_t backlog_ns;
	int64_t loose_ns;        /* how early a read's sensors' bound may be (its plan's slack
				  * and the reader's latency, at most): a backlog that came faster
				  * than the baud by no more shows nothing */
	/* the CPU that takes the device's interrupt stopped while the reader's ran (a
	 * vCPU its host descheduled, an SMI's end seen first by the reader's CPU): a
	 * hand-over due in irq_stops[2k] .. + irq_stops[2k + 1] happens at the stop's
	 * end. The sensors see the stop: a read's bound reaches back to when its
	 * hand-over was due, an empty read in the stop is told when it began (the
	 * held_mono of reasm_expire) */
	const int64_t *irq_stops;
	size_t nirq_stops;
	/* the sensors' period: an empty read's proof reaches back only to another CPU's
	 * latest look (sensors_held), up to this long before it (a share fixed by its time) */
	int64_t look_ns;
};

/* The reasm_dev the daemon gives for the machine's device (drivers/delivery.c). */
struct reasm_dev rm_dev_model(const struct rm_machine *mc);

/* What the reader does with one read, once its wake-up is known. */
struct rm_plan {
	int64_t dur;             /* the read's length: its end less its wake-up */
	int64_t drain;           /* the empty read after it begins this long after its end */
	int64_t slack;           /* the sensors' bound this long before the first hand-over */
	enum reasm_stage stage;  /* the stage that set it */
	bool to_end;             /* it returns what was handed over while it ran, too */
	/* the bound given is unsound, just after the first hand-over the baud allows
	 * (more bytes than one hand-over holds): the wire check must catch it */
	bool disproven;
};

/* The reader: when it runs, and how it reads. ctx is rm_play's. */
struct rm_reader {
	/* woken for a hand-over at t (its first byte): the wake-up, >= t */
	int64_t (*wake)(void *ctx, int64_t t);
	/* a look (the read at the packet's deadline) planned for at: when it runs, >= at */
	int64_t (*look)(void *ctx, int64_t at);
	/* the read's plan, after wake and its looks */
	void (*plan)(void *ctx, struct rm_plan *p);
	/* optional: do these instead of reasm_read and reasm_expire (to check around them) */
	void (*read)(void *ctx, struct reasm *r, const uint8_t *data, size_t n,
		     const struct reasm_read *rd);
	void (*expire)(void *ctx, struct reasm *r, int64_t now, int64_t held);
	/* optional: told of every packet and doubt after the bench saw it */
	void (*packet)(void *ctx, const struct reasm_packet *pkt);
	void (*doubt)(void *ctx, const struct reasm_doubt *d);
};

/* One run: the wire the caller fills, then what the reader made of it. */
struct rm_run {
	struct rm_machine mc;
	struct reasm_dev dev;    /* rm_dev_model(&mc) */
	size_t cap, n;           /* bytes the wire holds at most, and holds */
	int64_t *wire;           /* each byte's end on the wire */
	int64_t *seen_wire;      /* ... on the machine's clock, as its device got it (rm_play) */
	bool *backlog;           /* ... in a stop, or in the backlog after one (rm_play) */
	uint8_t *data;           /* the bytes */
	/* by rm_play, each indexed by the wire's bytes: */
	bool *starts;            /* a silence of the gap or more before it (the first too) */
	bool *read_start;        /* the first byte of a read */
	bool *doubted;           /* the first byte of a read that raised a doubt */
	bool *on_time;           /* the first byte of a read woken within on_time_ns */
	bool *line;              /* the first byte of a line */
	bool *cut;               /* the first byte of a line after a delimiter's or max_len's */
	bool *line_doubted;      /* the first byte of a line that holds a doubted read */
	bool *unmarked;          /* a wrong boundary no doubt excuses (rm_result.wrong's) */
	int64_t *line_t;         /* a line's date, at its first byte */
	size_t read_first;       /* the first byte of the read being fed */
	size_t emitted;          /* bytes in lines */
	size_t lines;
};

/* The result of rm_play. */
struct rm_result {
	unsigned wrong;          /* wrong boundaries not at a doubted read */
	unsigned dates;          /* lines found on time dated outside the stamp error */
	size_t reads, doubts;
};

/* A run of the machine with room for cap bytes; NULL when out of memory. */
struct rm_run *rm_new(const struct rm_machine *mc, size_t cap);

/* A byte on the wire whose last bit ended at end (no earlier than the last's);
 * false when the wire is full. */
bool rm_byte(struct rm_run *m, int64_t end, uint8_t byte);

/* The device hands the wire's bytes over, the reader reads them and flushes at the
 * end; then the checks. false when out of memory. */
bool rm_play(struct rm_run *m, const struct rm_reader *rdr, void *ctx, struct rm_result *res);

/* NULL is allowed. */
void rm_free(struct rm_run *m);

#endif
