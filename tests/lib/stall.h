/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stall.h - the stall injector: a child process that stops CPUs or a process now and then. */
#ifndef PORTLOGD_STALL_H
#define PORTLOGD_STALL_H

#include <stdint.h>
#include <sys/types.h>

/* What a stall does (tests/README.md, "Stalls"):
 * CPU  one CPU taken by a SCHED_FIFO 99 busy loop pinned to it (a stopped vCPU);
 * TTY  every CPU taken at SCHED_FIFO 50: the daemon's readers (97) run, the kernel's tty
 *      worker (SCHED_OTHER) does not;
 * ALL  every CPU taken at SCHED_FIFO 99: every thread of the machine stops;
 * STOP SIGSTOP, then SIGCONT, of one process: the given pid, or with tree one of the
 *      processes descending from it (itself included), picked at random per stall;
 * MIX  one of the above at random per stall (STOP only with a pid). */
enum stall_kind { STALL_CPU, STALL_TTY, STALL_ALL, STALL_STOP, STALL_MIX };
#define STALL_KINDS 4	/* the kinds a stall can be: MIX is none of them */

struct stall_cfg {
	enum stall_kind mode;
	int cpu;		/* CPU: which one; -1 = a random one per stall */
	pid_t pid;		/* STOP, MIX: whom to stop; 0 = nobody (MIX without STOP) */
	int tree;		/* STOP: pid's descendants too */
	unsigned min_ms, max_ms;		/* a stall's length (30, 200) */
	unsigned pause_min_ms, pause_max_ms;	/* the pause before each stall (300, 2000) */
	uint64_t seed;		/* tu_seed()'s, printed by the caller */
};

/* One stall that ran: its kind, the CPU or process, and CLOCK_MONOTONIC times between which
 * it held for sure (every CPU told was spinning; the process was seen stopped). */
struct stall_rec {
	int64_t start_ns, end_ns;
	int kind;		/* enum stall_kind, never MIX */
	int who;		/* CPU: the CPU; STOP: the pid; otherwise -1 */
};

struct stall {
	pid_t child;
	struct stall_shm *shm;	/* shared with the child: the records */
};

/* cfg with its defaults: mode MIX, random CPU, nobody to stop, 30-200 ms every 0.3-2 s. */
void stall_defaults(struct stall_cfg *cfg);

/* "cpu:N", "cpu", "tty", "all", "stop:PID", "mix" into cfg's mode, cpu and pid; -EINVAL. */
int stall_parse_mode(struct stall_cfg *cfg, const char *text);

/* Start the injector. 0 once it runs; -EPERM when SCHED_FIFO or the signal is refused
 * (the caller skips: exit 77), never an injector that silently does not stall; -errno. */
int stall_start(struct stall *s, const struct stall_cfg *cfg);

/* Stop it (the stall in progress ends first; a stopped process is continued) and wait for it.
 * Returns how many stalls ran, -errno; the records stay readable until stall_free(). */
int stall_stop(struct stall *s);

/* The i-th stall that ran, 0 <= i < stall_stop()'s count. */
const struct stall_rec *stall_rec(const struct stall *s, unsigned i);

/* One line: "N stalls (cpu A, tty B, all C, stop D), MIN-MAX ms, T ms in all". */
void stall_summary(const struct stall *s, char *buf, size_t len);

void stall_free(struct stall *s);

#endif
