/* SPDX-License-Identifier: GPL-2.0-or-later */
/* learn.h - an adapter's hand-over measured from the traffic it carries (pure, no I/O).
 *
 * A USB adapter whose timer Linux does not show (CH34x, CP210x, PL2303, CDC-ACM)
 * is assumed at open to hold a byte up to DELIVERY_USB_UNKNOWN_MS (delivery.h).
 * Most of them hand over on a receive timeout: a transfer as soon as it is full
 * (`xfer` bytes), the rest once the line has been quiet for their timeout (the
 * hold), each taken by the host's next poll. So a packet longer than a transfer
 * arrives as full transfers, each right at its last byte (one after the other by
 * its bytes' wire time: a streaming pair), then a last part, whose delay beyond its
 * bytes' wire time after the transfer before it is the hold (a sample).
 *
 * The rule (portlogd.conf(5), delivery): the learner never makes the boundary rule
 * less sound than the assumption it starts from. A learned model replaces the
 * assumption only once the traffic has shown it:
 *  - the transfer size by LEARN_PAIRS streaming pairs of that size (no other size
 *    with a quarter as many); and no more than one in eight runs of three reads
 *    streaming on whose middle one differs from both the others in size (a timer's
 *    hand-overs, which stream on in any size: then nothing is learned, and what was
 *    is withdrawn);
 *  - the hold by LEARN_SAMPLES samples (of reads on time: their bounds no wider than
 *    the least any read had and LEARN_STALL_NS; a read in a stall the sensors saw says
 *    nothing of the adapter), three quarters of them or more within
 *    LEARN_SPREAD_NS (and a quarter of their least) of the least, as the reader's
 *    wake-ups date them: the timeout and the host's poll (a later one is taken for
 *    the sender's pause, not the adapter's);
 *  - the model taken is as wide as every sample of that cluster by the reads' sound
 *    bounds (the sensors'): its timeout the least (what a quiet line proves), its
 *    blur reaching the latest.
 * A transfer size whose bytes take longer at the baud than the assumed hold proves the
 * assumption wrong before any timeout is seen (a line that never pauses for the
 * timeout shows none): then the transfers are taken with the assumed hold as their
 * timeout's latest, and no silence proven by a timeout (LEARN_SIZED), until the
 * samples show it.
 * An adapter whose timeout runs out within a character hands every byte over alone, a
 * character after the one before (LEARN_SAMPLES such pairs, no other size): that
 * proves it holds a byte less than a character, and no more can be known of it from
 * the traffic; it is taken as holding one up to a character and a half (xfer 1).
 * Once learned, a sample outside it widens it (said again), and when the samples the
 * cluster leaves out grow above half of the last LEARN_RING (a machine that stalls
 * makes some late), or reads stream on as a timer's, the model is withdrawn: the
 * assumption again, learning anew.
 * The caller applies a change (learn_read's true) before its next read, and says it.
 */
#ifndef PORTLOGD_LEARN_H
#define PORTLOGD_LEARN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LEARN_PAIRS 3           /* streaming pairs of one size: the transfer size */
#define LEARN_SAMPLES 8         /* samples of the hold before it is used */
#define LEARN_RING 32           /* the samples kept, the latest */
#define LEARN_MAX_XFER 512      /* the largest transfer size looked for */
#define LEARN_SPREAD_NS 1000000 /* the host's poll and the reader's own scatter, at most
				 * (a full-speed USB frame), beyond a quarter of the hold */
#define LEARN_MAX_NS 100000000  /* a last part later than this: not the adapter's */
#define LEARN_STALL_NS 4000000  /* a read's bounds wider than the least by this: a stall */

/* Why the model changed (the word for EV delivery's state=). */
enum learn_state {
	LEARN_ASSUMED,          /* nothing learned yet: the assumption */
	LEARN_SIZED,            /* the transfer size shown, and by it the assumption wrong (a
				 * full transfer's first byte waited longer than it allows):
				 * transfers of that size, the timeout as assumed, proving nothing */
	LEARN_LEARNED,          /* learned: the traffic showed it */
	LEARN_WIDENED,          /* learned, and widened by a sample outside it */
	LEARN_WITHDRAWN,        /* the traffic no longer fits it: the assumption again */
};

/* What was learned: a receive timeout with the host's poll after it. */
struct learn_model {
	unsigned xfer;          /* bytes of a full transfer; 1: each byte alone, within
				 * hold_hi_ns (all the traffic can show of it) */
	int64_t hold_lo_ns;     /* the least delay of a last part: the timeout a quiet line proves */
	int64_t hold_hi_ns;     /* the latest: the timeout and the host's poll */
	int64_t hold_ns;        /* the hold as the reader's wake-ups date it: the median of
				 * the cluster (hold_lo_ns and hold_hi_ns also allow for how
				 * late the reader may have woken, by its sensors) */
	unsigned samples;       /* in the cluster it was taken from */
};

struct learn_sample {
	int64_t lo, hi;         /* the delay's bounds, from the two reads' bounds */
	int64_t est;            /* as their wake-ups date it */
};

struct learn {
	int64_t char_ns, assume_ns;
	bool have_last;
	size_t last_n;          /* the last read: its bytes, and when its hand-over came */
	int64_t last_from, last_seen;
	uint16_t pairs[LEARN_MAX_XFER + 1];     /* streaming pairs by size */
	unsigned npairs;        /* all of them */
	bool last_streaming;    /* the last read streamed on from the one before it */
	int64_t width_min;      /* the least a read's bounds spanned (seen less from) */
	bool last_on_time;      /* the last read's bounds no wider than that and 0.5 ms */
	size_t last2_n;         /* the bytes of the read before the last */
	unsigned triples, odd;  /* three reads streaming on; those of three sizes */
	bool timer;             /* they showed a timer's hand-overs: nothing to learn (until
				 * learn_init) */
	unsigned xfer;          /* the transfer size shown, 0: not yet */
	struct learn_sample ring[LEARN_RING];
	unsigned nring, head;
	uint64_t samples;       /* every sample since the last start */
	enum learn_state state;
	struct learn_model model;       /* with LEARN_LEARNED or _WIDENED */
};

/* char_ns: the port's character time (> 0); assume_ns: the hold assumed meanwhile
 * (delivery.h). The assumption, nothing learned. */
void learn_init(struct learn *l, int64_t char_ns, int64_t assume_ns);

/*
 * One read of n bytes whose hand-over reached the kernel no earlier than from (the
 * sensors' bound, else seen) and no later than seen (the wake-up, or for a read no
 * wake-up announced its end). True when the model in use changed: l->state says
 * how, learn_get what.
 */
bool learn_read(struct learn *l, size_t n, int64_t from, int64_t seen);

/* The model in use: true and *m when sized, learned or widened, false for the assumption. */
bool learn_get(const struct learn *l, struct learn_model *m);

/* What the samples kept show now, as they are (the model in use may be wider: it
 * widens by steps and never narrows): --calibrate's figures. Else as learn_get. */
bool learn_shown(const struct learn *l, struct learn_model *m);

/* The word for a state: "assumed", "sized", "learned", "widened", "withdrawn". */
const char *learn_state_name(enum learn_state s);

#endif
