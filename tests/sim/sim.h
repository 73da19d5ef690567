/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sim.h - traffic simulator: plays packets into pseudo-terminals, as a serial device would.
 *
 * Each simulated port is a pty whose slave side the daemon opens (through a
 * symlink, like /dev/serial/by-id/...); the simulator writes to the master side.
 * A packet is written as one or more fragments with short pauses inside it and a
 * longer pause after it, and every write is recorded with its times, so a test
 * can compare the daemon's log with what was sent.
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

struct sim_cfg {
	enum sim_kind kind;
	unsigned packets;           /* 0 = until stopped */
	unsigned min_len, max_len;  /* binary packet sizes, uniform */
	unsigned max_frags;         /* a packet is cut into 1..max_frags writes (<= SIM_MAX_FRAGS) */
	unsigned intra_gap_max_us;  /* pause between fragments of one packet: 0..max */
	unsigned inter_gap_min_us, inter_gap_max_us;    /* pause after a packet */
	unsigned gap_us;            /* the daemon's gap threshold, to judge timing */
	unsigned baud;              /* 0, or pace writes no faster than this line (8N1: 10 bits a byte) */
	/*
	 * pace: each byte a write of its own at its wire time, one character time (10 bits
	 * at baud) after the one before, on absolute CLOCK_MONOTONIC deadlines (frags and
	 * intra_gap_max_us unused). A device model that takes what it is handed at once
	 * (QEMU's 16550A, usb-serial) then sees the bytes as a wire delivers them.
	 */
	bool pace;
	/*
	 * pace into a socket or fifo: a byte due while more than hold writes wait unread and
	 * the peer has taken none for hold_ms is lost on the wire (not written, counted in
	 * sim_packet.lost), as a UART that nobody empties overruns: QEMU stops reading its
	 * chardev while the guest's UART FIFO is full (the port closed, an unplugged
	 * adapter), and would otherwise hand over later what a real wire had lost. hold_ms
	 * spares the pauses of QEMU's own loop under TCG (milliseconds), which a real UART
	 * does not have. hold 0: never drop.
	 */
	unsigned hold, hold_ms;
	unsigned lens[8], nlens;    /* packet lengths in turn (binary), instead of min_len..max_len */
	uint64_t seed;
};

#define SIM_MAX_FRAGS 8

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
	uint32_t lost;              /* pace: bytes due but not written (hold); not in len */
	int64_t max_take_ns;        /* pace into a socket or fifo: the longest its bytes were
				       seen waiting unread by the far end (at the writes) */
};

#define SIM_TAKE_RING 64

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
	int64_t *late;              /* pace: each written byte's write start - its deadline, ns
				       (parallel to data) */
	unsigned long outq_req;     /* attached: the ioctl that says what the far end has not
				       read (SIOCOUTQ, FIONREAD) */
	int64_t outq_unit;          /* ... and what it says of one unread 1-byte write (AF_UNIX
				       counts memory, not bytes); 0: unknown, or a pty */
	int outq_last;              /* pace: what it said last, and when it last went down */
	int64_t outq_taken;
	int64_t wstart[SIM_TAKE_RING];      /* pace: the last writes' starts (monotonic) */
	uint64_t nwrites;
	atomic_size_t done;         /* packets completely written so far */
	atomic_bool stop;
	int error;                  /* errno of a failed write, 0 if none */
};

/* Creates the pty and the symlink `link` to its slave. Returns 0 or -errno. */
int sim_port_open(struct sim_port *p, const char *name, const char *link);
/* Uses an fd that is already connected to a device (e.g. a socket or a fifo whose
 * other end is a virtual machine's UART) instead of a pty; takes it over (made
 * non-blocking, closed by sim_port_close). Returns 0 or -errno. */
int sim_port_attach(struct sim_port *p, const char *name, int fd);
void sim_port_close(struct sim_port *p);
/* For an attached socket or fifo: waits until the peer has read every byte written
 * (SIOCOUTQ is 0), so that closing it loses nothing (QEMU drops what it has not
 * read when its peer hangs up). Returns 0, or -ETIMEDOUT after timeout_ms. */
int sim_port_drain(struct sim_port *p, int timeout_ms);

/* Waits until some process has the slave open (the master stops reporting
 * POLLHUP). Returns 0, or -ETIMEDOUT after timeout_ms. */
int sim_port_wait_open(struct sim_port *p, int timeout_ms);

/* Plays cfg->packets packets (or until p->stop); records them. Returns 0 or -errno. */
int sim_port_run(struct sim_port *p, const struct sim_cfg *cfg);

/*
 * The two wires of one link, as a tap's two ports hear them: a request on req,
 * then its response on resp starting 1 to 10 gaps (cfg->gap_us, at random)
 * after the request's last write returned, then the next request after the
 * inter-packet pause. SIM_MODBUS: Modbus RTU requests and their responses;
 * otherwise packets of the cfg's kind. Each port records what it sent. Returns
 * 0 or -errno.
 */
int sim_exchange_run(struct sim_port *req, struct sim_port *resp, const struct sim_cfg *cfg);

/* Runs sim_port_run on n ports in parallel threads; returns the first error. */
int sim_run_all(struct sim_port *ports, unsigned n, const struct sim_cfg *cfg,
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

/* Is packet i "clean": its pauses inside were well below the gap threshold and
 * the pauses around it well above, as actually measured (not as planned), none of
 * its bytes lost on the wire (pace, hold) and none left unread by the far end for
 * half a gap (pace into a socket or fifo)? */
bool sim_packet_clean(const struct sim_port *p, size_t i);

#endif
