/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sim.h - traffic simulator: plays packets into pseudo-terminals, as a serial device would.
 *
 * Each simulated port is a pty whose slave side the daemon opens (through a
 * symlink, like /dev/serial/by-id/...); the simulator writes to the master side.
 * A packet is written as one or more fragments with short pauses inside it and a
 * longer pause after it, and every write is recorded with its times, so a test
 * can compare the daemon's log with what was sent.
 *
 * Wire mode (sim_cfg.dev set, and a baud): the fragments and pauses are planned
 * on a wire instead. Each byte arrives one character time (8N1: 10 bits) after
 * the one before, or after a planned pause, on an absolute CLOCK_MONOTONIC
 * schedule that does not wait for the writes (but a packet handed over whole and
 * written late delays the next one's start by as much: the simulator's own stall
 * must not shorten a planned silence); a device model decides when the
 * bytes it holds are handed over (written to the pty), as the chip between a
 * real wire and the kernel would:
 *  - direct: each byte at its arrival (a UART at receive trigger 1, or a pty);
 *  - fifo:T, a 16550A: all the FIFO holds when it reaches T bytes (at that
 *    byte's arrival), or 4 character times after the last arrival while it
 *    holds fewer (the RX timeout, as QEMU's hw/char/serial.c and the data sheet
 *    have it);
 *  - usb:L, an FTDI adapter: on 1 ms USB frame boundaries only, all it holds,
 *    when its latency timer (L ms, restarted by every transfer, and by the
 *    status-only transfer it sends when the timer expires with nothing to send)
 *    expires with data waiting, or at the next frame once 62 bytes (one USB
 *    packet) wait;
 *  - adapter:H/S, an adapter on a receive timeout (as CP210x's data sheet has it;
 *    learn.h): a transfer as soon as S bytes wait, at the end of the last, or all it
 *    holds once the line has been quiet for H ms (decimals allowed) after its last
 *    byte.
 * The truth a test compares the log with is then the wire: each packet's first
 * byte's start, its planned pauses; and each hand-over is recorded with its due
 * time and when it was written.
 *
 * The hand-overs go into a pty, or into a socket or fifo whose far end is a device
 * of its own (sim_port_attach: a virtual machine's UART or USB adapter, which takes
 * the bytes at once: direct, a byte at its wire time, paces the emulated chip as a
 * wire would). Such a far end reads when it can (QEMU from its main loop): before
 * each hand-over the simulator asks what it has left unread, and a hand-over still
 * unread counts as late by as long (its packet's lateness, as for a late write). A
 * hand-over due while the far end has left more than lose_unread unread and taken
 * none for lose_ms is lost, as on a wire into a UART that nobody empties: not
 * written, counted in its packet (sim_packet.lost).
 */
#ifndef PORTLOGD_SIM_H
#define PORTLOGD_SIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* SIM_MODBUS: valid Modbus RTU frames, a request then its response, in turn:
 * read holding registers (function 3) and write multiple registers (16), units
 * 1-3, random addresses and values, CRC-16 right (sim_modbus_crc). */
enum sim_kind { SIM_BINARY, SIM_NMEA, SIM_MODBUS };

/* What hands the wire's bytes to the pty (wire mode); SIM_DEV_NONE: no wire, the
 * fragments are written as planned. */
enum sim_dev_kind { SIM_DEV_NONE, SIM_DEV_DIRECT, SIM_DEV_FIFO, SIM_DEV_USB, SIM_DEV_ADAPTER };

struct sim_dev {
	enum sim_dev_kind kind;
	unsigned trigger;           /* SIM_DEV_FIFO: 1, 4, 8 or 14 */
	unsigned latency_ms;        /* SIM_DEV_USB: the latency timer, 1..255 */
	unsigned hold_us;           /* SIM_DEV_ADAPTER: its receive timeout, 1 us..255 ms */
	unsigned xfer;              /* SIM_DEV_ADAPTER: its transfers' size, 2..512 */
};

#define SIM_FIFO_SIZE 16        /* a 16550A's receive FIFO */
#define SIM_USB_PACKET 62       /* an FTDI full-speed packet's data bytes */
#define SIM_MAX_LENS 8

struct sim_cfg {
	enum sim_kind kind;
	unsigned packets;           /* 0 = until stopped */
	unsigned min_len, max_len;  /* binary packet sizes, uniform */
	unsigned lens[SIM_MAX_LENS], nlens;  /* nlens > 0: binary packet sizes in turn instead */
	unsigned max_frags;         /* a packet is cut into 1..max_frags writes (<= SIM_MAX_FRAGS) */
	unsigned intra_gap_max_us;  /* pause between fragments of one packet: 0..max */
	unsigned inter_gap_min_us, inter_gap_max_us;    /* pause after a packet */
	unsigned gap_us;            /* the daemon's gap threshold, to judge timing */
	unsigned hold_us;           /* wire mode: how long the daemon allows a device to hold a
				       byte (it ends a packet only gap_us + hold_us after its last
				       byte), to judge the hand-overs' timing; 0: none */
	unsigned baud;              /* 0, or pace writes no faster than this line (8N1: 10 bits a byte) */
	struct sim_dev dev;         /* wire mode (needs baud): the device between wire and pty */
	unsigned spin_us;           /* wire mode: sleep until this long before a hand-over is
				       due, then spin (0: sleep all the way) */
	/*
	 * Wire mode into a socket or fifo: a hand-over due while the far end leaves more
	 * than lose_unread writes (a fifo: bytes) unread and has taken none for lose_ms
	 * is lost. QEMU stops reading its chardev while the guest's UART is full (the
	 * port closed, an adapter unplugged) and would hand over later what a real wire
	 * had lost; lose_ms spares the pauses of QEMU's own loop (milliseconds under
	 * TCG), which a real UART does not have. lose_unread 0: nothing is ever lost.
	 */
	unsigned lose_unread, lose_ms;
	uint64_t seed;
};

/* "direct", "fifo:T" (T = 1, 4, 8, 14), "usb:MS" (1..255) or "adapter:MS/SIZE" (MS
 * with up to 3 decimals, to 255; SIZE 2..512) into *d; 0 or -EINVAL. */
int sim_dev_parse(const char *s, struct sim_dev *d);
/* The same spelling back, into buf ("none" for SIM_DEV_NONE). */
const char *sim_dev_name(const struct sim_dev *d, char *buf, size_t len);
/* What [serial] delivery = says of the device, as a user who knows it would write:
 * its name, but an adapter's hold (usb:MS) is its latency timer and a USB frame, and
 * one on a receive timeout usb:MS/SIZE (the simulator's own lateness for the poll). */
const char *sim_dev_declare(const struct sim_dev *d, char *buf, size_t len);
/* "A,B,...": up to SIM_MAX_LENS packet sizes (1..65536) into lens, their count into
 * *n; 0 or -EINVAL. */
int sim_lens_parse(const char *s, unsigned *lens, unsigned *n);

#define SIM_MAX_FRAGS 8

/*
 * A packet. In wire mode the times are the wire's: a fragment is the bytes
 * after one planned pause, frag_real its first byte's start, frag_pause the
 * pause, t_first_* the first byte's start (the truth for its timestamp),
 * t_last_mono the last byte's end, max_intra_gap_ns the longest planned pause;
 * late_* and dlv_* say how its hand-overs went.
 */
struct sim_packet {
	uint32_t off, len;          /* in sim_port.data */
	unsigned nfrag;
	uint32_t frag_off[SIM_MAX_FRAGS];   /* where each write started, from off */
	int64_t frag_real[SIM_MAX_FRAGS];   /* CLOCK_REALTIME just before each write */
	int64_t frag_pause[SIM_MAX_FRAGS];  /* longest silence before each write's bytes could
					       end: its return - the previous write's start
					       (0 for the first) */
	int64_t t_first_real;       /* CLOCK_REALTIME just before the first byte was written */
	int64_t t_first_mono;       /* CLOCK_MONOTONIC just before the first write */
	int64_t t_last_mono;        /* CLOCK_MONOTONIC after the last write returned */
	int64_t max_intra_gap_ns;   /* longest silence its bytes could contain (an upper bound) */
	/* wire mode: of the hand-overs that hold its bytes, the earliest start of a
	 * write minus its due time, and the latest return (or, into a socket or fifo,
	 * time seen unread by the far end) minus its due time */
	int64_t late_min_ns, late_max_ns;
	uint32_t dlv_first, ndlv;   /* those hand-overs, in sim_port.dlv */
	uint32_t lost;              /* of its bytes, those in lost hand-overs (not written) */
};

/* A hand-over of the device model (wire mode): len bytes at off in sim_port.data. */
struct sim_delivery {
	uint32_t off, len;
	int64_t due;                /* CLOCK_MONOTONIC when the device hands them over */
	int64_t t_write, t_ret;     /* CLOCK_MONOTONIC before the write, after it returned */
	bool overrun;               /* a FIFO: written so late that a real one would have
				       overflowed (more than SIM_FIFO_SIZE bytes by then) */
	bool lost;                  /* not written (lose_unread): t_write = t_ret = due */
	int64_t t_unread;           /* into a socket or fifo: when the far end was last seen
				       not to have read it (0: never); its lateness counts
				       to then */
	uint32_t pkt;               /* the packet of its first byte */
};

/* The device model's state (sim.c's). */
struct sim_wire {
	int64_t char_ns;
	int64_t frame0;             /* USB: the frame grid's origin */
	int64_t last_send;          /* USB: the latency timer's last restart */
	int64_t full_at;            /* USB: the frame that sends a full packet; INT64_MAX */
	int64_t first_arr, last_arr;        /* arrivals of the first and last byte held */
	size_t held;                /* bytes in the device */
	size_t delivered;           /* bytes handed over (from the start of data) */
	size_t pkt_at;              /* the packet that holds byte `delivered` */
	int64_t *arr;               /* arrivals of the packet on the wire, from data offset */
	size_t arr_off, arr_n, arr_cap;     /* arr_off, arr_n of them */
};

struct sim_port {
	char name[32];
	char link[256];             /* symlink to the slave, for the daemon's config */
	char slave[64];
	int master;
	struct sim_cfg cfg;
	uint64_t rng;

	uint8_t *data;              /* every byte sent, in order */
	size_t data_len, data_cap;
	struct sim_packet *pkt;
	size_t npkt, pkt_cap;
	atomic_size_t done;         /* packets completely written (wire mode: handed over) so far */
	atomic_bool stop;
	int error;                  /* errno of a failed write, 0 if none */

	struct sim_delivery *dlv;   /* wire mode: every hand-over, in order */
	size_t ndlv, dlv_cap;
	size_t overruns;            /* hand-overs marked overrun */
	struct sim_wire wire;

	/* attached to a socket or fifo: what says how much its far end has not read */
	unsigned long outq_req;     /* SIOCOUTQ (a socket), FIONREAD (a fifo); 0: a pty */
	int outq_unit;              /* what it says of one unread 1-byte write (a socket
				       counts memory, not bytes; a fifo 1) */
	int outq_last;              /* what it said last, and when it last went down */
	int64_t outq_taken;
};

/* Creates the pty and the symlink `link` to its slave. Returns 0 or -errno. */
int sim_port_open(struct sim_port *p, const char *name, const char *link);
/* Uses an fd that is already connected to a device (a socket or a fifo whose other
 * end is a virtual machine's UART or adapter) instead of a pty; takes it over (made
 * non-blocking, closed by sim_port_close). Returns 0 or -errno. */
int sim_port_attach(struct sim_port *p, const char *name, int fd);
void sim_port_close(struct sim_port *p);
/* For an attached socket or fifo: waits until the peer has read every byte written,
 * so that closing it loses nothing (QEMU drops what it has not read when its peer
 * hangs up). Returns 0, or -ETIMEDOUT after timeout_ms. */
int sim_port_drain(struct sim_port *p, int timeout_ms);

/* Waits until some process has the slave open (the master stops reporting
 * POLLHUP). Returns 0, or -ETIMEDOUT after timeout_ms. */
int sim_port_wait_open(struct sim_port *p, int timeout_ms);

/* Plays cfg->packets packets (or until p->stop); records them. In wire mode it
 * returns when the device has handed over every byte. Returns 0 or -errno. */
int sim_port_run(struct sim_port *p, const struct sim_cfg *cfg);

/*
 * The two wires of one link, as a tap's two ports hear them: a request on req,
 * then its response on resp starting 1 to 10 gaps (cfg->gap_us, at random)
 * after the request's last write returned, then the next request after the
 * inter-packet pause. SIM_MODBUS: Modbus RTU requests and their responses;
 * otherwise packets of the cfg's kind. Each port records what it sent. Returns
 * 0 or -errno (-EINVAL in wire mode, which plays one port's wire).
 */
int sim_exchange_run(struct sim_port *req, struct sim_port *resp, const struct sim_cfg *cfg);

/* Runs sim_port_run on n ports in parallel threads; returns the first error. */
int sim_run_all(struct sim_port *ports, unsigned n, const struct sim_cfg *cfg,
		int rt_priority);
/* The same with a cfg of its own for each port (seeds as given). */
int sim_run_each(struct sim_port *ports, unsigned n, const struct sim_cfg *cfgs,
		 int rt_priority);

/* sim_run_all in a background thread, for tests that act while traffic flows. */
struct sim_bg {
	struct sim_port *ports;
	unsigned n;
	struct sim_cfg cfg;
	int rt_priority;
	pthread_t thread;
	int rc;
};
int sim_bg_start(struct sim_bg *b, struct sim_port *ports, unsigned n, const struct sim_cfg *cfg,
		 int rt_priority);
/* Waits for the traffic to end; returns sim_run_all's result. */
int sim_bg_join(struct sim_bg *b);

/* Modbus RTU's CRC-16 (polynomial 0xA001 reflected, start 0xFFFF); sent low byte first. */
uint16_t sim_modbus_crc(const uint8_t *p, size_t n);

/*
 * Is packet i "clean": its pauses inside were well below the gap threshold
 * (cfg.gap_us) and the pauses around it well above, as actually measured (not
 * as planned)? In wire mode: was it handed over as the device model says, near
 * enough for the reader not to see other silences than the wire's? Its planned
 * pauses at most half the gap, and with the spread of its hand-overs' lateness
 * (late_max_ns - late_min_ns: how much a silence between two of them can have
 * grown) at most half of gap + hold (the daemon waits that long before it ends
 * a packet); the wire's silence before and after it, less what the lateness of
 * the packets on either side can have taken from it, at least 1.5 gaps; and
 * every byte handed over, none lost.
 */
bool sim_packet_clean(const struct sim_port *p, size_t i);

/* Wire mode: the pct percentile (0..100) of the written hand-overs' lateness, the
 * return of their write (or with at_write, its start) minus their due time, in ns
 * (0 when there were none). */
int64_t sim_late_pct(const struct sim_port *p, double pct, bool at_write);

#endif
