/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thread.h - the daemon's threads: real-time attributes, pinning, and page-fault accounting. */
#ifndef PORTLOGD_THREAD_H
#define PORTLOGD_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define THREAD_STACK (256 * 1024)
#define THREAD_PREFAULT (128 * 1024)    /* of the stack, touched before the thread's work */
#define THREAD_PREFAULT_MARGIN (32 * 1024)  /* left untouched for the frames above it */

struct thread {
	pthread_t id;
	char name[16];
	int priority;               /* 1..99: SCHED_FIFO; 0: SCHED_OTHER */
	int cpu;                    /* the CPU it is pinned to, or -1 */
	bool fifo;                  /* runs SCHED_FIFO (false: asked for it, not permitted) */
	bool started;
	void *(*fn)(void *);
	void *arg;

	/* set by the thread itself once it runs, before its work: its kernel id and
	 * its page-fault counts after the stack was prefaulted (getrusage) */
	_Atomic pid_t tid;
	uint64_t minflt0, majflt0;
	/* and as it ends, for the final STAT lines after the thread is gone */
	_Atomic bool ended;
	uint64_t minflt_end, majflt_end;
};

/*
 * Starts fn(arg) as thread `name` (at most 15 characters) with SCHED_FIFO at
 * `priority` (1..99), or SCHED_OTHER for 0, pinned to `cpu` unless it is -1.
 * Where SCHED_FIFO is not permitted the thread runs with SCHED_OTHER and
 * *degraded is set, so the caller can say so once. Returns 0 or -errno
 * (-EINVAL: no such CPU).
 */
int thread_start(struct thread *t, const char *name, int priority, int cpu,
		 void *(*fn)(void *), void *arg, int *degraded);
void thread_join(struct thread *t);

/*
 * Page faults the thread took since it started its work: read from
 * /proc/self/task/TID/stat while it runs (the counters getrusage(RUSAGE_THREAD)
 * reports, readable from another thread), from its own getrusage once it ended.
 * Returns false when unknown (not started, or /proc not readable).
 */
bool thread_faults(const struct thread *t, uint64_t *minflt, uint64_t *majflt);

/* Parses minflt and majflt out of a /proc/.../stat line; false if malformed. */
bool thread_parse_stat(const char *line, uint64_t *minflt, uint64_t *majflt);

#endif
