/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e.h - harness for end-to-end tests: run the real daemon binary, read its log. */
#ifndef PORTLOGD_E2E_H
#define PORTLOGD_E2E_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sim/sim.h"

/*
 * systemd's file descriptor store as the tests keep it (daemon/fdstore.h): what
 * the daemon sends with FDSTORE=1 is kept under its FDNAME=, FDSTOREREMOVE=1
 * forgets a name, and e2e_start_store hands it all over (LISTEN_FDS,
 * LISTEN_FDNAMES), as systemd does at a restart. It outlives the daemons.
 */
#define E2E_STORE_MAX 64
struct e2e_store {
	int fd[E2E_STORE_MAX];
	char name[E2E_STORE_MAX][64];
	size_t n;
	size_t max;                 /* FileDescriptorStoreMax: more is refused (closed); 0:
				     * E2E_STORE_MAX */
	unsigned puts, removes;     /* FDSTORE=1 and FDSTOREREMOVE=1 messages received */
	char log[2048];             /* "+NAME " and "-NAME " for each, in order */
};
/* Closes what it holds and empties it. */
void e2e_store_clear(struct e2e_store *s);
/* What systemd does with a stored descriptor that hangs up: closes it. Returns how many. */
unsigned e2e_store_prune(struct e2e_store *s);
/* The index of the first descriptor stored as name, or -1. */
int e2e_store_find(const struct e2e_store *s, const char *name);

struct e2e_daemon {
	pid_t pid;
	int notify_fd;              /* our AF_UNIX datagram socket, the daemon's NOTIFY_SOCKET */
	char notify_path[300];
	char err_path[300];         /* the daemon's stderr */
	char ready_msg[1024];       /* the notification that said READY=1 */
	struct e2e_store *store;    /* NULL: descriptors sent are closed */
};

/* A fresh directory under $TMPDIR or /tmp; aborts the test on failure. */
void e2e_tmpdir(char *out, size_t len);
/* main's end: cmocka's failures; when there are none, removes every directory
 * e2e_tmpdir made (a failed run keeps them for a look, and says so) */
int e2e_finish(int failures);
void e2e_write_file(const char *path, const char *text);

/* How the next e2e_start or e2e_run runs the daemon: as another user, with
 * resource limits (-1: leave as is). Cleared by that call. */
struct e2e_child {
	int uid, gid;
	long long rtprio, memlock;  /* RLIMIT_RTPRIO, RLIMIT_MEMLOCK (bytes) */
	long long nproc;            /* RLIMIT_NPROC (threads too), for another uid; 0: leave */
};
void e2e_set_child(const struct e2e_child *c);

/* Starts `portlogd -f -c conf` with a NOTIFY_SOCKET we listen on. */
int e2e_start(struct e2e_daemon *d, const char *dir, const char *conf);
/* The same with more environment: "KEY=VALUE" sets, "KEY=" unsets (NULL-terminated).
 * With WATCHDOG_USEC set, WATCHDOG_PID is set to the daemon's pid, as systemd does. */
int e2e_start_env(struct e2e_daemon *d, const char *dir, const char *conf,
		  const char *const *env);
/* The same, with or without -f (without, under NOTIFY_SOCKET it logs to the journal). */
int e2e_start_opts(struct e2e_daemon *d, const char *dir, const char *conf,
		   const char *const *env, bool foreground);
/* The same under a service manager with a file descriptor store (FDSTORE=64 in the
 * environment, unless env says otherwise): what st holds is handed over, and the
 * daemon's FDSTORE messages update it (through e2e_notify_recv). */
int e2e_start_store(struct e2e_daemon *d, const char *dir, const char *conf,
		    const char *const *env, struct e2e_store *st);
/* Waits for READY=1, then stops listening (closes the socket: see e2e.c);
 * returns 0, or -1 when the daemon exited or timeout_ms passed. Tests that
 * follow the notifications further use e2e_notify_recv instead. */
int e2e_wait_ready(struct e2e_daemon *d, int timeout_ms);
/*
 * Receives the daemon's next sd_notify datagram into buf (NUL-terminated).
 * Returns its length, 0 when timeout_ms passed, or -1 when the daemon has
 * exited and sent nothing more (it is not reaped: e2e_stop still gets its status).
 */
int e2e_notify_recv(struct e2e_daemon *d, char *buf, size_t len, int timeout_ms);
/* Whether an sd_notify message holds the assignment "KEY=VALUE" (e.g. "READY=1"),
 * or with value NULL any value of KEY; returns the value or NULL. */
const char *e2e_notify_has(const char *msg, const char *key, const char *value);
/* Sends sig and waits up to timeout_ms for the exit; returns the wait status or -1,
 * and the time from the signal to the exit in *elapsed_ns. */
int e2e_stop(struct e2e_daemon *d, int sig, int timeout_ms, int64_t *elapsed_ns);

/* A TCP port on 127.0.0.1 that nobody uses now (for a tool the test runs). */
int e2e_free_port(void);
/* A whole file, NUL-terminated (malloc'd; its length in *len unless NULL), or NULL. */
char *e2e_read_file(const char *path, size_t *len);

/* A pty pair: returns the master (O_CLOEXEC) and the slave's path, or -errno. */
int e2e_open_pty(char *slave, size_t len);

/*
 * Both directions of one port on simulator ptys, as a tap's two wires: resp
 * plays on DIR/rx (the port's device), req on DIR/tx (its tx_device). The
 * config (DIR/portlogd.conf, log DIR/portlogd.log, flush every 20 ms) has
 * logger_extra in [logger] and serial_extra in [serial NAME]; the daemon is
 * started, ready, and has both ports open.
 */
struct e2e_tap {
	char dir[256], conf[300], log[300];
	struct sim_port req, resp;
};
void e2e_tap_start(struct e2e_daemon *d, struct e2e_tap *t, const char *name,
		   const char *logger_extra, const char *serial_extra);
void e2e_tap_close(struct e2e_tap *t);

/* Runs each shell check ("command -v tshark"); false, after saying which failed
 * and that `test` is skipped, when one does. */
bool e2e_have(const char *test, const char *const *checks, size_t n);

/* Kills a daemon that is still running (after a failed test). */
void e2e_kill(struct e2e_daemon *d);

/* Copies a file (the daemon's stderr, a helper's output) to stderr: what to show before a
 * failure. */
void e2e_show_file(const char *path);
/* rm -rf DIR (a run's scratch directory), saying so on stderr when it fails. */
void e2e_remove_dir(const char *dir);

/* Runs a shell command (sh -c, printf-style); returns its standard output
 * (malloc'd) and its exit status in *status (128 when killed). */
char *e2e_sh(int *status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs the daemon binary with args to completion; returns the exit code, stderr in err. */
int e2e_run(const char *const *argv, char *err, size_t errlen);

struct e2e_line {
	int64_t t;                  /* ns since the epoch */
	char src[32];
	char kind[8];
	uint8_t *data;              /* RX, TX payload (from the HEX field) */
	size_t len;
	char *text;                 /* the whole line */
};

struct e2e_log {
	struct e2e_line *line;
	size_t n, cap;
	bool partial_tail;      /* the file ended inside a line (left out): a live file */
};

/*
 * Appends the lines of a log file (ISO or epoch times, payload hex or both). A
 * last line without its newline is a line the daemon is still writing: it is
 * left out and partial_tail set, not taken for a malformed line.
 */
int e2e_read_log(struct e2e_log *log, const char *path);
void e2e_free_log(struct e2e_log *log);

/* All RX payload bytes of `src`, concatenated in file order; line starts in *starts. */
uint8_t *e2e_concat(const struct e2e_log *log, const char *src, size_t *len,
		    size_t **starts, size_t **line_idx, size_t *nlines);
/* The same for the lines of another KIND ("TX"). */
uint8_t *e2e_concat_kind(const struct e2e_log *log, const char *src, const char *kind,
			 size_t *len, size_t **starts, size_t **line_idx, size_t *nlines);

/* The last i < n (0 if none) whose key(ctx, i) <= x, the keys ascending in i. */
size_t e2e_last_at_most(const void *ctx, size_t n, size_t (*key)(const void *ctx, size_t i),
			size_t x);

/* The RX line (an index into e2e_concat's starts) that holds byte off. */
size_t e2e_line_of(const size_t *starts, size_t nlines, size_t off);

/*
 * How src's RX lines (e2e_concat's starts and line_idx) hold the packet of len
 * bytes at off: exactly one line; a wrong boundary marked where the boundary
 * rule puts the mark (daemon/README.md, "Packet boundaries": an EV late-delivery of src
 * dated at each line that begins inside the packet, and at the line that holds
 * its first or its last byte when that line runs past it); or unmarked. A line
 * that begins after one of max_packet bytes (0: none) began at the length
 * limit, not at a gap: it needs no mark of its own, and the mark of the line
 * that began its packet covers it. The lines involved are *first..*last.
 */
/* Is there an EV late-delivery of src dated t (the mark of a doubtful boundary)? */
bool e2e_late_mark_at(const struct e2e_log *log, const char *src, int64_t t);

enum e2e_fit { E2E_FIT_ONE, E2E_FIT_MARKED, E2E_FIT_UNMARKED };
enum e2e_fit e2e_packet_fit(const struct e2e_log *log, const char *src, const size_t *starts,
			    const size_t *idx, size_t nlines, size_t max_packet, size_t off,
			    size_t len, size_t *first, size_t *last);

/*
 * The log proves by itself that nothing vanished: for every source, its lines
 * (DROP lines aside) plus the counts in its DROP lines, up to each STAT line
 * that names it, equal that line's accounted= (plus lines_accounted=); in the
 * STAT lines after "EV stop", accounted equals records + drops (plus the lines
 * thread's). A port's TX ring (tx_device, pass) is checked on its own: its TX
 * lines and the EV and DROP lines that end in dir=tx against tx_accounted=,
 * tx_records= and tx_drops=. late= (tx_late=) is at least the EV late-delivery
 * lines above it, and at stop at most those plus the drops. Counting restarts at
 * each "EV start". Returns how many STAT lines were checked, or -1 with the first
 * mismatch in why.
 */
int e2e_check_accounting(const struct e2e_log *log, char *why, size_t whylen);
/*
 * The log says the clock's quality: every run (from EV start) has an EV clock
 * line with reason=start before its first STAT round, and every STAT round (a
 * block of portlogd STAT lines) is followed by an EV clock line (reason=stat,
 * or change when the round found one) before the next round; a run that did not
 * stop (no EV stop: killed) may lack the line after its last round. Returns
 * how many rounds had their line, or -1 with the first miss in why.
 */
int e2e_check_clock(const struct e2e_log *log, char *why, size_t whylen);
/* Both as a cmocka assertion: fails the test on a mismatch or when no STAT
 * line could be checked; prints how many were. */
void e2e_expect_accounted(const struct e2e_log *log);
/*
 * A source's DROP lines from line `from` on (one run of the daemon: its STAT late= counts
 * from its start) against what the log proves, with no assumption of one record per sent
 * packet. The test knows lost_bytes of packets are in no RX line, in at least min_recs
 * records (one per packet lost whole), and known_recs events of known_bytes text it
 * knows are missing (an EV close, say). Then, asserted:
 * - the lost EV late-delivery marks are STAT late= (every mark made, pushed or dropped)
 *   less their lines;
 * - the DROP bytes are lost_bytes + known_bytes + those marks' texts (1..SOURCE_EV_MAX
 *   bytes each; none when no mark was lost);
 * - the DROP records are the packets' records + known_recs + those marks, the packets'
 *   records from min_recs to min_recs + late= (more only where a packet was cut in two,
 *   which the daemon marks).
 */
void e2e_expect_drops(const struct e2e_log *log, const char *src, size_t from, size_t lost_bytes,
		      size_t min_recs, size_t known_recs, size_t known_bytes);

/*
 * The same traffic in two logs: a log, and a replay of it logged by a second
 * daemon (kind_a lines of src_a in a, kind_b lines of src_b in b: "RX", or a
 * replayed "TX" logged as "RX"). For each line k of a: how b's lines hold its
 * bytes (fit[k], e2e_packet_fit; line_b[k]: the index into b's starts of the
 * line that holds its first byte); for each two consecutive packets that are
 * one line in both, the error of the interval between their first bytes,
 * |(tb_k - tb_k-1) - (ta_k - ta_k-1)| ns, in err[0..nerr); offset: the median
 * of tb - ta over the packets that are one line. same: b's bytes are a's.
 */
struct e2e_pair {
	const struct e2e_log *a, *b;
	const char *src_a, *src_b;
	uint8_t *ba, *bb;
	size_t la, lb, *sa, *sb, *ia, *ib, na, nb;
	enum e2e_fit *fit;
	size_t *line_b;
	int64_t *err, offset;
	size_t nerr, one;
	bool same;
};
void e2e_pair_logs(struct e2e_pair *p, const struct e2e_log *a, const char *src_a,
		   const char *kind_a, const struct e2e_log *b, const char *src_b, const char *kind_b);
void e2e_pair_free(struct e2e_pair *p);
/*
 * Why packet k of a is not one line of b, when a log knows: 'm' b marks a
 * doubtful boundary there (EV late-delivery); 'a' a marked one at it or at
 * the packet after it (replayed as logged: the silence a doubted); 's' b's
 * reader woke late: b dated the line that holds its first byte gap_ns or
 * more after a's time of that line's first byte plus the offset, and a
 * silence shorter than such a stall can merge unmarked (README, "Packet
 * boundaries"). 0: no log says why.
 */
char e2e_pair_why(const struct e2e_pair *p, size_t k, int64_t gap_ns);

/* Prints "# WHAT: " and the line of text that begins at the first `from`, if any. */
void e2e_print_from(const char *what, const char *text, const char *from);

/*
 * Helper processes. e2e_spawn runs argv in the background (argv[0]
 * "portlogd": the daemon binary under test, else a program on PATH), its
 * stdout and stderr to the file out, and remembers it for e2e_reap_all (a
 * test's teardown, after a failure). e2e_reap: SIGTERM and wait.
 * e2e_wait_exit: its exit code (128 + signal), or -1 after timeout_ms.
 */
pid_t e2e_spawn(const char *const *argv, const char *out);
void e2e_reap(pid_t pid);
int e2e_wait_exit(pid_t pid, int timeout_ms);
void e2e_reap_all(void);
/* Waits until path exists; fails the test after timeout_ms. */
void e2e_wait_path(const char *path, int timeout_ms);
/* Does process pid hold a descriptor of path (its real path)? */
bool e2e_holds(pid_t pid, const char *path);

/* PORTLOGD_E2E_ONLY=NAME runs one test of the group (cmocka_set_test_filter);
 * PORTLOGD_E2E_SKIP=NAME leaves those it matches out (cmocka_set_skip_filter; * and ?). */
void e2e_filter_from_env(void);

/* Percentile (0..100) of n int64 values (sorts them). */
int64_t e2e_pct(int64_t *v, size_t n, double pct);

/*
 * How the log holds what a simulator port in wire mode (sim.h) sent: every
 * packet is one RX line, or a wrong boundary with its mark (e2e_packet_fit),
 * or without (the log's own mark is the only excuse: never the sender's clock);
 * packets the simulator did not hand over cleanly get no verdict. Cleanliness is judged at the gap the daemon says it uses and the hold it
 * allows the device (the port's first EV open, gap_us= and hold_us=), which are
 * set into p->cfg.gap_us and hold_us. The first-byte error of a
 * clean packet whose first byte begins a line: that line's TIME minus the
 * wire start of the byte; short packets are those of short_len bytes or fewer.
 */
struct e2e_wire_tally {
	size_t packets, once, marked, unmarked, unclean;
	size_t bytes_sent, bytes_logged, bytes_same;    /* bytes_same: the log's RX bytes equal
							   the sent ones up to there */
	int64_t gap_ns, hold_ns, stamp_err_ns;      /* the daemon's, from EV open; 0: not there */
	int64_t *err_short, *err_long;      /* first-byte errors, ns */
	size_t nshort, nlong;
	size_t *unmarked_pkt;       /* the packets with an unmarked wrong boundary */
};
void e2e_wire_tally(const struct e2e_log *log, struct sim_port *p, size_t max_packet,
		    unsigned short_len, struct e2e_wire_tally *t);
/* The value of " key=" in src's first EV open (the daemon's us); -1 when there is none. */
long long e2e_open_us(const struct e2e_log *log, const char *src, const char *key);
/* Prints packet k of p (its hand-overs) and the lines of p's source around it, as "# " lines. */
void e2e_wire_explain(const struct e2e_log *log, const struct sim_port *p, size_t k);
void e2e_wire_tally_free(struct e2e_wire_tally *t);

#endif
