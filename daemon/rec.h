/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rec.h - the fixed-size binary record that producers push through the rings. */
#ifndef PORTLOGD_REC_H
#define PORTLOGD_REC_H

#include <stdint.h>

#define REC_SIZE 128u   /* one ring slot: two cache lines */

/* Every line KIND; fmt.c's kind table names each (a static assert counts them). */
enum rec_kind {
	REC_RX = 1,     /* serial packet; data beyond the head slot follows in raw slots */
	REC_EV,         /* event; a = enum ev_code, b = errno or argument, data = fields */
	REC_DROP,       /* cumulative drop counters of this source: a = records, b = bytes */
	REC_IN,         /* input pins changed: a = value, b = changed bits, c = tick */
	REC_OVERRUN,    /* a = triggers missed since the last OVERRUN record */
	REC_LINES,      /* serial modem lines changed: a = value, b = changed bits */
	REC_STAT,       /* self-monitoring; data = fields (the flusher writes these itself) */
	REC_TX,         /* serial packet going to the device (a tap's second port, or relayed
			 * from a pass-through application): RX's fields */
	REC_NKINDS,     /* one past the last kind */
};

/* Every EV NAME; fmt.c's event table names each (a static assert counts them). */
enum ev_code {
	EV_START = 1,   /* data: "version=... pid=... config=..." */
	EV_STOP,        /* data: "reason=..." */
	EV_OPEN,        /* data: "device=... driver=... baud=... format=... flow=..." */
	EV_CLOSE,       /* b: errno (0 = stopped), data: "reason=..." */
	EV_ERROR,       /* b: errno, data: "op=... device=..." */
	EV_LATE,        /* a read the reader could not judge: "wait_us= bytes= case= joined=" */
	EV_RT_MISSING,  /* a real-time item is not permitted; b: errno, data: "item=... need=..." */
	EV_UART_ERRORS, /* the UART counted errors; data: "frame=N parity=N ..." since the last */
	EV_IRQ,         /* a port's IRQ threads: "irq=N thread=... pid=N old=N new=N" (irq.h) */
	/* the flusher's own, about the log file and the records it formats */
	EV_REPAIR,      /* an incomplete last line was cut at open: "cut=N reason=..." */
	EV_REOPEN,      /* a new log file: "file=..." (SIGHUP) or "reason=removed" */
	EV_WRITE_RECOVERED, /* writing works again: "errno=... down_ms=... failures=... dropped=..." */
	EV_SYNC_FAILED, /* fdatasync failed: "errno=..." */
	EV_CLOCK_STEP,  /* CLOCK_REALTIME was set: "delta_us=+N" */
	EV_CLOCK,       /* the clock's quality (clockq.h): "synced=yes maxerror_us=N ..." */
	EV_SEQ_GAP,     /* a record missing from a ring without a drop (a bug) */
	EV_BAD_RECORD,  /* a record of a kind no table names (a bug): "kind=N seq=N count=N" */
	/* pass = PATH: the relay between the application's pty and the device */
	EV_RELAY_LOST,  /* bytes not relayed: "to=app|device bytes=N reason=full|closed" */
	EV_APP_SETTINGS, /* the application set its pty (baud ...); the device keeps the config's */
	EV_JOURNAL_LOST, /* at stop, journal messages never sent: "queued=N dropped=N waited_ms=N" */
	EV_DELIVERY,    /* an adapter's hold, learned from its traffic: "state= xfer= hold_us= ..." */
	EV_NCODES,      /* one past the last code */
};

/*
 * Which ring of a port a record comes from. A [serial] port with tx_device or
 * pass has a second ring for what goes to the device; its EV and DROP records
 * say so in c (set by source_push, and by the flusher for the DROP and EV lines
 * it makes for a ring), and their lines end in "dir=tx".
 */
enum rec_dir {
	REC_DIR_MAIN = 0,   /* the port's own ring (RX, and its events) */
	REC_DIR_TX = 1,     /* the ring of what goes to the device (TX) */
};

/*
 * The head slot of every record. Packets longer than REC_HEAD_DATA continue in
 * the following slots, used as raw bytes (REC_SIZE each), so a packet of n bytes
 * takes rec_slots(n) consecutive slots, pushed and popped as one unit.
 */
struct rec {
	int64_t t_real;     /* CLOCK_REALTIME, ns: what the log shows */
	int64_t t_mono;     /* CLOCK_MONOTONIC, ns: what the merge sorts by */
	uint32_t seq;       /* per-source number of the record, dropped ones included */
	uint16_t kind;      /* enum rec_kind */
	uint16_t len;       /* payload bytes in total (RX) or in data[] (others) */
	int64_t a;
	int64_t b;
	int64_t c;          /* IN: the tick; EV, DROP: enum rec_dir */
	uint8_t data[REC_SIZE - 48];
};

#define REC_HEAD_DATA ((uint32_t)sizeof(((struct rec *)0)->data))

union rec_slot {
	struct rec rec;
	uint8_t raw[REC_SIZE];
};

_Static_assert(sizeof(struct rec) == REC_SIZE, "struct rec must fill one slot");
_Static_assert(sizeof(union rec_slot) == REC_SIZE, "slot size");

/* Number of slots a record with len payload bytes occupies. */
static inline uint32_t rec_slots(uint32_t len)
{
	if (len <= REC_HEAD_DATA)
		return 1;
	return 1 + (len - REC_HEAD_DATA + REC_SIZE - 1) / REC_SIZE;
}

#endif
