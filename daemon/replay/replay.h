/* SPDX-License-Identifier: GPL-2.0-or-later */
/* replay.h - portlogd --replay: a log's packets played again into a pty or a port, at their times.
 *
 * replay.c reads the logs with export's reader (export_read), as one more
 * backend: it keeps the RX (or TX) packets of the chosen sources in memory,
 * in log order, and notes what the log says cannot be replayed as logged (a
 * DROP, an EV late-delivery, a stretch when the daemon or the port was away, a
 * clock step, time running backwards). After reading it gives each source its
 * output and prints those notes. replay_play.c then opens the outputs and
 * plays every packet in one thread on absolute CLOCK_MONOTONIC deadlines
 * (clock_nanosleep TIMER_ABSTIME, as the timer thread): a
 * packet's first byte at its TIME after the first packet's, divided by
 * --speed; on a pty, byte i a character time after byte i - 1 at the port's
 * logged baud (a real port's UART paces its bytes itself). The player
 * measures how late each packet's first write returned, and the pauses
 * between its writes, and hands every packet that started more than a
 * character time late, or had a pause of 3.5 character times inside (a reader
 * may end the packet there), to the main thread, which says it; at the end
 * replay.c prints the p50/p99/max of the start error.
 *
 * The player allocates nothing and prints nothing: everything it touches is
 * made before it starts, so it may run at a real-time priority (--priority).
 */
#ifndef PORTLOGD_REPLAY_H
#define PORTLOGD_REPLAY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "drv.h"
#include "fmt.h"
#include "pass.h"

/* Exit codes of portlogd --replay (those of --export, and what they mean here). */
enum {
	REPLAY_OK = 0,          /* every packet of the window replayed; nothing unknown in it */
	REPLAY_INCOMPLETE = 1,  /* done, but lines were skipped, the log has a DROP or a gap
				 * in the window, or a signal stopped it */
	REPLAY_FAILED = 2,      /* bad command line, a LOG unreadable, an output not opened or
				 * not written */
};

#define REPLAY_PACE_NS 50000            /* a pty gets one write per byte, or per bytes of 50 us */
#define REPLAY_LATE_DEFAULT_NS 1000000  /* "late" without a baud: 1 ms */
#define REPLAY_SPLIT_CHARS_X2 7         /* a pause of 3.5 characters ends a packet (Modbus RTU,
					 * portlogd's gap_us = auto) */
#define REPLAY_SPAN_MAX_Y 100           /* a timeline (at --speed) longer than this: refused */
#define REPLAY_SPAN_MAX_NS (REPLAY_SPAN_MAX_Y * 365.25 * 86400 * 1e9)
#define REPLAY_OUT_MAX 64               /* outputs (sources) at most */
#define REPLAY_STUCK_S 5                /* --to a pipe (non-blocking) that took nothing this
					 * long: stopped (said); a full disk stops at once */

struct replay_pkt {
	int64_t t;                  /* the log's TIME less the clock steps before it, ns */
	uint64_t off;               /* its bytes in replay.data */
	const char *file;           /* its line, for messages */
	uint64_t lineno;
	uint32_t len;
	int64_t char_ns;            /* a character at the port's baud then (baud 1: 12 s at
				     * most); 0: not known */
	uint32_t gap_ns;            /* the logging port's gap_us then (EV open); 0: not known */
	unsigned src;               /* export_src idx */
	bool doubted;               /* an EV late-delivery at it: the boundary before it too */
	int64_t at_ns;              /* its first byte's time on the replay's timeline: from the
				     * first packet's, divided by --speed, held back where the
				     * times leave less silence before it than the logger saw */
	/* the player's: how long after its deadline its first write returned (a real
	 * port: plus what was still queued before it); the longest time between two
	 * of its writes' returns (a pty's bytes: a character time when on time) */
	int64_t late_ns, pause_ns;
	bool played;
};

enum replay_out_kind {
	REPLAY_OUT_PTY,             /* --pty LINK: a pty of ours, its slave linked at LINK */
	REPLAY_OUT_TTY,             /* --to a tty: a port (its UART paces) or an existing pty */
	REPLAY_OUT_FILE,            /* --to anything else, or - (standard output): written whole */
};

struct replay_out {
	const char *path;           /* --to PATH or --pty LINK, as given */
	bool make_pty;              /* --pty */
	const char *source;         /* the SOURCE it plays */
	unsigned src;               /* its export_src idx */
	size_t *idx, n;             /* its packets (indices into replay.pkt), in time order */
	unsigned baud;              /* the port's, from EV open before its first packet; 0: none */
	char format[4];             /* "8N1" */

	/* opened by replay_open */
	enum replay_out_kind kind;
	int fd;
	bool pace;                  /* the player spaces the bytes (a pty: nothing else does) */
	int64_t late_ns;            /* a first byte this much after its time is late: a character */
	int64_t split_ns;           /* a pause this long inside a packet may split it: 3.5
				     * characters (a pty's; 0: not paced, not looked at) */
	int64_t last_write_ns;      /* the player's: when its last write returned */
	struct conf_serial cfg;     /* what a port or pty is set to */
	struct pass pass;           /* REPLAY_OUT_PTY */
	struct drv_serial port;     /* REPLAY_OUT_TTY */

	/* the player's */
	size_t next;                /* the packet in progress or next (into idx) */
	uint32_t sent;              /* its bytes written so far */
	bool blocked;               /* took no more: waits for POLLOUT */
	bool regular;               /* a regular file: a short write is a full disk, never a wait */
	bool stuck;                 /* stopped: took nothing for REPLAY_STUCK_S (err EAGAIN) */
	int64_t progress_ns;        /* when it last took bytes (or the play began) */
	int err;                    /* errno of a failed write: this output stopped */
	uint64_t back;              /* bytes the application (or the device) sent back */
};

struct replay {
	int dir;                    /* enum rec_dir: which lines are packets (RX: REC_DIR_MAIN) */
	double speed;               /* 0: as fast as the outputs take it */
	struct replay_pkt *pkt;
	size_t npkt, pkt_cap;
	uint8_t *data;
	size_t data_len, data_cap;
	struct replay_out *out;
	unsigned nout;

	/* the player and the main thread */
	size_t *late;               /* packets found late, in the order found (npkt places) */
	_Atomic size_t nlate;       /* entries of late[] the main thread may read */
	_Atomic bool stop;          /* the main thread: stop (a signal); seen within 20 ms */
	_Atomic bool done;          /* the player: finished */
	int64_t start_ns;           /* CLOCK_MONOTONIC of the timeline's first packet */
	void *srcs;                 /* the reader's sources (export_src): the outputs' names */
	uint64_t played;            /* packets written whole */
};

/* What replay_read says cannot be replayed as logged, counted. */
struct replay_tally {
	uint64_t drops, drop_pkts, drop_bytes, gaps, late_deliveries, steps, backward, bauds, held;
};

/* What --replay reads: the LOG files, the sources asked for (--source), the window. */
struct replay_input {
	char *const *names;
	unsigned nnames;
	char *const *logs;
	unsigned nlogs;
	int64_t since, until;       /* until: INT64_MAX without --until */
	bool have_since;
};

/* replay_read.c: reads the LOGs with export's reader, gives each of r->out[0..nout)
 * its source and packets, says on stderr what cannot be replayed as logged (counted
 * in *ty) and places every packet on the replay's timeline (r->speed). An exit code:
 * REPLAY_OK, REPLAY_INCOMPLETE (said), or REPLAY_FAILED (said; nothing to play). */
int replay_read(struct replay *r, const struct replay_input *in, struct replay_tally *ty);
/* Frees what replay_read kept (r->out itself stays the caller's). */
void replay_free(struct replay *r);
/* "RX" or "TX"; a time as the log writes it (ISO), in buf (FMT_TIME_MAX + 1). */
const char *replay_dir_word(const struct replay *r);
const char *replay_when(struct fmt *f, int64_t t, char *buf);

/* Opens every output (for a --pty, its pty and link). 0, or -1 with the reason
 * on stderr (every output opened so far is closed again). */
int replay_open(struct replay *r);
/* --pty: waits until an application has opened each LINK (a pty has no event
 * for it: looks every 10 ms), then keeps a slave descriptor of its own so
 * that the application may close and reopen LINK. false when stop was asked. */
bool replay_wait_apps(struct replay *r);
/* The player (the thread's function): plays every packet, or until stop. */
void *replay_play(void *arg);
/* After the play: waits until the applications have read what was written (at
 * most 2 s without progress), then closes every output; returns the unread bytes. */
uint64_t replay_close(struct replay *r);

/* portlogd --replay ...: argv[0] is the program, the options follow. Returns an exit code. */
int replay_main(int argc, char **argv);

#endif
