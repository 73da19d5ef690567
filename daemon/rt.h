/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rt.h - the process-wide real-time set-up: locked memory, CPU idle states, SCHED_FIFO.
 *
 * Each item either works or is missing with the errno that said no. The daemon
 * runs without any of them (rt = best-effort), logs one warning per missing item
 * that says what it lost and how to grant it, and shows it in its status; with
 * rt = required a missing item stops the start-up.
 */
#ifndef PORTLOGD_RT_H
#define PORTLOGD_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "idle.h"

enum rt_item {
	RT_FIFO,        /* SCHED_FIFO at the highest configured priority */
	RT_MLOCK,       /* mlockall(MCL_CURRENT | MCL_FUTURE) */
	RT_DMA,         /* /dev/cpu_dma_latency held while running (idle_latency global) */
	RT_CPU_QOS,     /* the real-time CPUs' pm_qos_resume_latency_us (idle_latency pinned) */
	RT_NITEMS,
};

struct rt {
	int err[RT_NITEMS];     /* 0: in place or not asked for; else the errno that refused it */
	bool wanted[RT_NITEMS];
	int fifo_prio;          /* the highest SCHED_FIFO priority configured */
	uint64_t lock_need;     /* what the config locks (memory.h); 0: not known */
	long long memlock;      /* RLIMIT_MEMLOCK when it refused the lock before mlockall; else -1 */
	struct idle idle;       /* what keeps CPUs out of slow idle states */
};

/* Nothing set up yet; which items the config asks for. */
void rt_init(struct rt *rt, const struct conf *c);

/*
 * Checks that every CPU a thread the config starts (parts_plan: no timer
 * without a [parallel] port) is pinned to is one a thread of this process
 * can be pinned to (online and in its cpuset; not limited to the inherited
 * affinity, which isolcpus= narrows). Briefly pins the calling thread to each
 * CPU to ask the kernel. Returns 0, or -1 with "PATH:LINE: [SECTION] cpu: ..."
 * in err (a config error).
 */
int rt_check_cpus(const struct conf *c, char *err, size_t errlen);

/* Can a thread get SCHED_FIFO at the highest configured priority? (A short-lived
 * probe thread asks the kernel.) Records the answer. */
void rt_probe_fifo(struct rt *rt);

/* mlockall, after everything is allocated and before the threads start (then
 * RLIMIT_MEMLOCK refuses the lock, not a later allocation). Not even tried when
 * `lockable` is false: RLIMIT_MEMLOCK (memlock, bytes) is below `need`, what the config
 * locks (memory.h), and there is no CAP_IPC_LOCK; a lock of what is allocated now
 * would make the threads' stacks fail later (ENOMEM is the item's errno then).
 * Skipped in sanitizer builds, whose shadow memory cannot be locked. */
void rt_lock_memory(struct rt *rt, uint64_t need, bool lockable, long long memlock);

/* Keeps CPUs out of idle states slower than [timer] idle_latency (idle.h): all
 * of them through /dev/cpu_dma_latency, as cyclictest does, or those of the
 * real-time threads; rt_fini puts it back. */
void rt_hold_idle(struct rt *rt, const struct conf *c);
void rt_fini(struct rt *rt);

/* Is anything asked for missing? */
bool rt_degraded(const struct rt *rt);

/*
 * What a missing item means: `kv` gets the fields of its EV rt-missing line
 * ("item=sched_fifo errno=EPERM need=CAP_SYS_NICE rlimit_rtprio=0"), `prose` one
 * sentence for the journal saying what is lost and how to grant it. Returns
 * false when the item is not missing.
 */
bool rt_describe(const struct rt *rt, enum rt_item item, char *kv, size_t kvlen,
		 char *prose, size_t proselen);

/* A short summary for the service status: "rt ok", or "rt degraded: no sched_fifo, no mlockall". */
void rt_summary(const struct rt *rt, char *buf, size_t len);

#endif
