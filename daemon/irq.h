/* SPDX-License-Identifier: GPL-2.0-or-later */
/* irq.h - the interrupt threads of our ports: find them, set their priority, put it back.
 *
 * On a PREEMPT_RT kernel (or one booted with threadirqs) a device's interrupt
 * handler runs in a kernel thread "irq/N-NAME", SCHED_FIFO 50 by default, one
 * per handler on line N. A UART's thread reads the chip's FIFO and hands the
 * bytes on towards our reader; it exists only while the port is open (the 8250
 * driver requests its interrupt at open). [serial] irq_priority sets it:
 *
 *   auto  the reader's priority + 1 (99 at most): the thread that feeds a reader
 *         runs before it and before anything the reader outranks, as rtirq puts
 *         a sound card's thread above the audio threads it feeds. Nothing when
 *         the reader is SCHED_OTHER (every IRQ thread is above it already).
 *         For a [parallel] port auto leaves the thread alone: the sampler polls
 *         the registers each tick and needs no interrupt.
 *   N     SCHED_FIFO N.     off   leave it.
 *
 * Every thread of the line is set (a line shared with other handlers is
 * unmasked only once all its threads have run), to the highest priority any
 * of our ports on that line asks. The priority each thread had is put back at
 * stop if it still has ours. Everything is read below a root directory ("" on
 * a live system, a fixture tree in the tests); the one call that changes
 * anything is sched_setscheduler(2), which a test wraps (--wrap).
 */
#ifndef PORTLOGD_IRQ_H
#define PORTLOGD_IRQ_H

#include <sched.h>
#include <stdbool.h>

/* pointers only: the drivers include this header for irq_of_* and IRQ_WHY_*,
 * and see no config (drv.h) */
struct conf;
struct conf_parallel;
struct conf_serial;
struct source;

#define IRQ_THREADS_MAX 8       /* threads of one line that we follow */

/* Why a port has no interrupt of its own: the `reason=` of its EV line. */
#define IRQ_WHY_PTY "pty"       /* a pseudo-terminal: no device */
#define IRQ_WHY_USB "usb"       /* a USB adapter: the host controller's, shared with every USB device */
#define IRQ_WHY_NONE "no-irq"   /* no interrupt configured (irq 0, parport irq -1) */
#define IRQ_WHY_FILE "sim"      /* the simulated port */

struct irq_thread {
	int pid;
	char comm[16];          /* "irq/4-ttyS0" */
	int policy;             /* SCHED_OTHER, SCHED_FIFO, ... */
	int prio;               /* rt_priority */
};

/* The interrupt of a tty (a resolved path such as /dev/ttyS0), from
 * ROOT/sys/class/tty/NAME/irq; -1 with *why when it has none. */
int irq_of_tty(const char *root, const char *devpath, const char **why);
/* The same for a configured device: links (/dev/serial/by-id/...) resolved below root. */
int irq_of_device(const char *root, const char *device, const char **why);
/* The interrupt of parallel port NAME (parport0) from
 * ROOT/proc/sys/dev/parport/NAME/irq; -1 with *why when none. */
int irq_of_parport(const char *root, const char *name, const char **why);
/* The interrupt of a [parallel] port, through its driver's irq slot. */
int irq_of_parallel(const char *root, const struct conf_parallel *p, const char **why);

/* The threads of interrupt irq: every ROOT/proc/PID/comm that starts
 * "irq/IRQ-", with policy and priority from its stat. Returns how many (at
 * most max), or -errno when ROOT/proc cannot be read. */
int irq_threads(const char *root, int irq, struct irq_thread *t, int max);

/* Are interrupts run in threads? PREEMPT_RT (/sys/kernel/realtime = 1, or
 * PREEMPT_RT in /proc/version) or threadirqs on /proc/cmdline. */
bool irq_forced_threads(const char *root);
/* Is /proc mounted with hidepid (systemd's ProtectProc=invisible), which hides
 * kernel threads from a service user? From ROOT/proc/self/mountinfo. */
bool irq_proc_hidden(const char *root);

/* The CPUs interrupt irq is delivered to: effective_affinity_list, else
 * smp_affinity_list, of ROOT/proc/irq/IRQ. False when neither can be read. */
bool irq_affinity(const char *root, int irq, cpu_set_t *cpus);
/* Adds the CPUs the UART interrupts of the config's serial ports go to. */
void irq_serial_cpus(const char *root, const struct conf *c, cpu_set_t *cpus);

/* The priority the auto rule or the config gives a port's threads; 0: leave them. */
int irq_wanted_serial(const struct conf_serial *s);
int irq_wanted_parallel(const struct conf_parallel *p);

/* One thread we found for a port: what it had first, what we set. */
struct irq_change {
	int pid;
	char comm[16];
	int old_policy, old_prio;
	bool ours;              /* we set it to want */
};

/* A port's interrupt at run time: main sets it up before the port's thread
 * starts; apply runs where the port is (re)opened, report where its events are
 * pushed (both in one thread at a time), restore in main at stop. */
struct irq_port {
	int irq;                /* -1: none */
	const char *why;        /* ... and why */
	int want;               /* the priority to set; 0: none (off, auto on a polled port) */
	struct irq_change chg[IRQ_THREADS_MAX];
	int nchg;
	/* the last apply, for report: the records it touched, or what stopped it */
	int rep[IRQ_THREADS_MAX];
	int nrep;
	const char *none;       /* a reason to say once that nothing was set, or NULL */
	int none_err;           /* ... its errno (proc-unreadable), or 0 */
	int err;                /* errno of a refused sched_setscheduler, or 0 */
	int err_chg;            /* ... on that record */
	bool said_none, said_err;
};

void irq_port_init(struct irq_port *ip, int irq, const char *why, int want);
/* Ports on one line get the highest priority any of them wants (those that
 * want one at all). */
void irq_share(struct irq_port *const *ports, unsigned n);
/* Sets the line's threads to want: SCHED_FIFO by sched_setscheduler, each
 * thread's first priority remembered. Reads ROOT/proc (allocates: never in a
 * real-time path). Returns the number of threads at want. */
int irq_port_apply(struct irq_port *ip, const char *root);
/* Pushes what the last apply did into src: "EV irq-priority irq= thread= pid=
 * old= new=" per thread; once per port, what stopped it (EV irq-priority
 * reason=, or EV rt-missing item=irq_priority). No allocation: may run in the
 * port's real-time thread. */
void irq_port_report(struct irq_port *ip, struct source *src);
/* Puts back each thread we set that still has our priority; how many. */
int irq_port_restore(struct irq_port *ip, const char *root);

#endif
