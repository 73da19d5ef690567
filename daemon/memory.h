/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memory.h - what a config locks, and whether this machine and user can hold it.
 *
 * mlockall(MCL_CURRENT | MCL_FUTURE) locks every mapping the daemon has or makes:
 * its rings, every thread's stack, the buffers of its ports and of the log, and the
 * program with its libraries. memory_plan() adds them up from the sizes the modules
 * allocate (conf_ring_*, THREAD_STACK, flush_buffer_bytes, metrics_bytes, the
 * structs), so --check-config, --check-system and the start-up check say what the
 * daemon will lock; the program and its libraries are a constant measured on
 * Debian 12 amd64 (MEMORY_BASE; tests/bench/RESULTS.md).
 *
 * memory_limits_read() reads what this process may have below a root ("/" live, a
 * fixture tree in the tests): RLIMIT_MEMLOCK and CAP_IPC_LOCK, MemAvailable, and
 * the threads it may start (RLIMIT_NPROC, its cgroup's pids.max, kernel.threads-max).
 * memory_check() says the first limit a config is beyond, and what to do.
 */
#ifndef PORTLOGD_MEMORY_H
#define PORTLOGD_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

/* The program, its libraries (libsystemd pulls in libgcrypt, liblz4, libzstd,
 * liblzma, libcap), main's stack and heap: VmLck less what memory_plan counts, of
 * this build measured at 8 and 32 ports: 6.3-6.5 MiB (RESULTS.md, issue 31). */
#define MEMORY_BASE (7ull << 20)

struct memory {
	uint64_t rings;         /* every ring's slots, main's own too */
	uint64_t stacks;        /* every thread's stack and guard page */
	uint64_t buffers;       /* the ports' packet and relay buffers, the log's, the metrics
				 * file's, the parts' structs */
	uint64_t base;          /* MEMORY_BASE */
	uint64_t total;
	unsigned threads;       /* the threads it starts (not main) */
	unsigned nrings;
};

/* The figures of config c; its stall sensors on `cpus` CPUs when a serial reader is
 * not pinned (the CPUs it may run on). */
void memory_plan(const struct conf *c, unsigned cpus, struct memory *m);

/* What this process may have, read below root; -1: no limit, -2: not known. */
struct memory_limits {
	long long memlock;      /* RLIMIT_MEMLOCK's soft limit, bytes */
	int cap_ipc_lock;       /* CAP_IPC_LOCK effective: 1, 0, or -1 not known */
	long long available;    /* MemAvailable, bytes */
	long long total;        /* MemTotal, bytes */
	long long nproc;        /* RLIMIT_NPROC's soft limit (the user's tasks) */
	bool root;              /* uid 0: RLIMIT_NPROC does not hold it */
	long long pids_max, pids_now;       /* its cgroup's pids.max and pids.current */
	long long threads_max, threads_now; /* kernel.threads-max, the tasks there are */
};
void memory_limits_read(const char *root, struct memory_limits *l);

/* Can mlockall lock it all: CAP_IPC_LOCK, or RLIMIT_MEMLOCK at least m's total? */
bool memory_lockable(const struct memory *m, const struct memory_limits *l);

/*
 * Whether config c (its figures m) fits: 0, or -1 with the limit and what to do in
 * err. memory_check_ram: memory it cannot have (more than MemAvailable; "the config
 * takes about 2.3 GiB ..."); memory_check_threads: threads it cannot start
 * (RLIMIT_NPROC, the cgroup's pids.max, kernel.threads-max). A limit not known is no
 * verdict. RLIMIT_MEMLOCK is not one: without the lock the daemon runs (rt =
 * best-effort); memory_lockable says whether it can lock.
 */
int memory_check_ram(const struct conf *c, const struct memory *m, const struct memory_limits *l,
		     char *err, size_t len);
int memory_check_threads(const struct memory *m, const struct memory_limits *l, char *err,
			 size_t len);

/* "1.5 MiB", "512 KiB", "2.0 GiB": n bytes as people read them. */
const char *memory_size(uint64_t n, char *buf, size_t len);

#endif
