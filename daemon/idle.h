/* SPDX-License-Identifier: GPL-2.0-or-later */
/* idle.h - CPU idle states while the daemon runs: every CPU held awake, or only the real-time ones.
 *
 * A CPU that sleeps in a deep idle state takes that state's exit latency to
 * wake for a timer or an interrupt, which a real-time wake-up pays. PM QoS
 * keeps CPUs out of states slower than a latency, two ways ([timer]
 * idle_latency):
 *
 *  - global:US: /dev/cpu_dma_latency held open at US (as cyclictest does):
 *    every CPU. At 0 they poll, never halt, whether our threads run there or
 *    not: power, heat, and on a virtual machine a host CPU burnt.
 *  - pinned:US: cpuN/power/pm_qos_resume_latency_us of the CPUs the real-time
 *    threads are pinned to (and those our UARTs' interrupts are routed to, where
 *    a byte's wake-up starts); the other CPUs may sleep. A sysfs value outlives
 *    the process, so the value found is put back at stop.
 *  - auto: the CPUs may halt (C1, or haltpoll's state: the first idle state that
 *    is not POLL) but sleep no deeper: pinned:L when every real-time thread is
 *    pinned, else global:L, L that state's exit latency on this machine; off with no
 *    real-time thread (no port) or no cpuidle driver. global:0 or pinned:0 keep
 *    the CPUs polling: a benchmark's setting (tests/bench/RESULTS.md, bench_idle).
 *  - off.
 *
 * The cpuidle governors take the lower of the global and the per-CPU limit
 * (cpuidle_governor_latency_req), so PINNED must not hold the global one.
 * sysfs writes "n/a" for a limit of 0 us (its "0" means no limit at all).
 */
#ifndef PORTLOGD_IDLE_H
#define PORTLOGD_IDLE_H

#include <sched.h>
#include <stdbool.h>

#include "conf.h"

#define IDLE_QOS_FILE "/sys/devices/system/cpu/cpu%d/power/pm_qos_resume_latency_us"
#define IDLE_STATE_FILE "/sys/devices/system/cpu/cpu%d/cpuidle/state%d/%s"
#define IDLE_MAX_CPUS 64        /* CPUs held at once; more are a config nobody runs */

struct idle_cpu {
	int cpu;
	char old[16];           /* the value found, put back at stop */
};

struct idle {
	enum conf_idle scope;   /* what is held: OFF, GLOBAL or PINNED (auto resolved) */
	int us;
	int dma_fd;             /* GLOBAL: /dev/cpu_dma_latency, held open */
	struct idle_cpu cpu[IDLE_MAX_CPUS];     /* PINNED: the CPUs set, in order */
	unsigned ncpu;
	/* what was refused: the global device's errno; a CPU's file, its errno
	 * (then the global device was tried instead: fell_back) */
	int dma_err;
	int cpu_err, err_cpu;
	bool fell_back;
};

/*
 * The scope the config asks for, auto resolved (pure, no file read): PINNED
 * with the CPUs of the real-time (SCHED_FIFO) threads in *cpus when every such
 * thread is pinned and there is one; GLOBAL otherwise (OFF as asked). Only the
 * threads that run count: the timer exactly when there is a [parallel] port.
 */
enum conf_idle idle_plan(const struct conf *c, cpu_set_t *cpus);

/* idle_plan, and for PINNED also the CPUs the config's serial ports' interrupts
 * are routed to (irq_serial_cpus, below root): the CPUs idle_hold holds; auto with
 * no cpuidle driver below root holds none (OFF). */
enum conf_idle idle_cpus(const struct conf *c, const char *root, cpu_set_t *cpus);

/* The exit latency in us of cpu0's first idle state that is not POLL (C1), below
 * root; -1 when there is none (no cpuidle driver). */
int idle_c1_us(const char *root);

/* The latency held: the config's, or for auto idle_c1_us (0 when there is none). */
int idle_us(const struct conf *c, const char *root);

/*
 * Holds what idle_cpus says, below root ("" or "/" live, a fixture in tests).
 * A per-CPU file that cannot be written puts the
 * ones already set back and holds the global device instead, saying so in
 * cpu_err and fell_back. Errors are recorded, never fatal.
 */
void idle_hold(struct idle *s, const struct conf *c, const char *root);
/* Puts every per-CPU value back and closes the device. */
void idle_release(struct idle *s, const char *root);

#endif
