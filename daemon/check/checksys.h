/* SPDX-License-Identifier: GPL-2.0-or-later */
/* checksys.h - portlogd --check-system: is this machine (and user) ready for real time?
 *
 * Every check reads files under a root directory ("/" on a live system, a
 * fixture tree in the tests): ROOT/proc/..., ROOT/sys/..., ROOT/dev/... . No
 * check calls uname(), getrlimit() or the like (but the clock check asks the
 * kernel with adjtimex, which has no file), so a check run as the service
 * user (systemd-run -p User=..., setpriv) sees what the daemon will see, and a
 * test can drive every path with plain files.
 *
 * Levels: FAIL only for what stops the daemon from doing what the config asks
 * (a device it cannot open, a privilege that rt = required demands); WARN for
 * what only costs latency and the daemon cannot mend itself (it sets a port's
 * ASYNC_LOW_LATENCY and an FTDI latency timer it may write at open). Every
 * WARN and FAIL text ends in "; fix: ...".
 */
#ifndef PORTLOGD_CHECKSYS_H
#define PORTLOGD_CHECKSYS_H

#include <stdbool.h>
#include <stdio.h>

#include "conf.h"

#define CHECKSYS_NAME_MAX 64
#define CHECKSYS_TEXT_MAX 1024
#define CHECKSYS_DEEP_IDLE_US 10    /* an idle state with a longer exit latency costs */
#define CHECKSYS_BUSY_PERMILLE 10   /* a real-time task that used this much of a CPU since it
				     * started is busy: it can starve the tty worker */

enum checksys_level { CHECKSYS_OK, CHECKSYS_WARN, CHECKSYS_FAIL };

struct checksys_result {
	enum checksys_level level;
	char name[CHECKSYS_NAME_MAX];
	char text[CHECKSYS_TEXT_MAX];
};

struct checksys {
	const char *root;               /* "/" or a fixture tree; no trailing slash needed */
	const struct conf *conf;        /* the defaults and no ports when there is no config */
	bool have_conf;
};

/* System-wide checks; each fills r (never skips). */
void checksys_config(const struct checksys *cs, struct checksys_result *r);
void checksys_kernel_rt(const struct checksys *cs, struct checksys_result *r);
void checksys_rt_throttle(const struct checksys *cs, struct checksys_result *r);
void checksys_cpufreq(const struct checksys *cs, struct checksys_result *r);
void checksys_cpuidle(const struct checksys *cs, struct checksys_result *r);
void checksys_cpu_dma_latency(const struct checksys *cs, struct checksys_result *r);
void checksys_smt(const struct checksys *cs, struct checksys_result *r);
void checksys_isolation(const struct checksys *cs, struct checksys_result *r);
void checksys_irqbalance(const struct checksys *cs, struct checksys_result *r);
void checksys_rt_tasks(const struct checksys *cs, struct checksys_result *r);
/* tty-worker: the CPUs of the kernel's unbound workers (ROOT/sys/devices/virtual/
 * workqueue/cpumask), and whether busy real-time tasks can hold all of them at once. */
void checksys_tty_worker(const struct checksys *cs, struct checksys_result *r);
/* stall-sensors: their period, CPUs, priority and what they cost (sensor.h). */
void checksys_sensors(const struct checksys *cs, struct checksys_result *r);
void checksys_clock_sensor(const struct checksys *cs, struct checksys_result *r);
void checksys_rlimit_rtprio(const struct checksys *cs, struct checksys_result *r);
/* What the config locks (memory.h) against RLIMIT_MEMLOCK, and against the machine's
 * memory (MemAvailable, MemTotal); the threads it starts against RLIMIT_NPROC, the
 * cgroup's pids.max and kernel.threads-max. */
void checksys_rlimit_memlock(const struct checksys *cs, struct checksys_result *r);
void checksys_memory(const struct checksys *cs, struct checksys_result *r);
void checksys_threads(const struct checksys *cs, struct checksys_result *r);
void checksys_clocksource(const struct checksys *cs, struct checksys_result *r);
/* The synchronisation daemons below ROOT/proc; the kernel's state through
 * clockq_read (adjtimex: the running kernel's, whatever the root; tests wrap it). */
void checksys_clock(const struct checksys *cs, struct checksys_result *r);
/* apparmor: the mode of the profile /usr/sbin/portlogd as this process runs
 * (ROOT/proc/self/attr/apparmor/current or attr/current), else whether it is loaded
 * (ROOT/sys/kernel/security/apparmor/profiles) or installed; OK where AppArmor is off. */
void checksys_apparmor(const struct checksys *cs, struct checksys_result *r);
/* metrics-file: [logger] metrics_file's directory exists and the service user
 * may make and rename files in it; false (no line) without metrics_file. */
bool checksys_metrics_file(const struct checksys *cs, struct checksys_result *r);

/* Per port. The device checks never skip; the others return false when they do
 * not apply (the FTDI check for a device that is not an FTDI adapter). */
void checksys_serial_device(const struct checksys *cs, const struct conf_serial *s,
			    struct checksys_result *r);
bool checksys_serial_low_latency(const struct checksys *cs, const struct conf_serial *s,
				 struct checksys_result *r);
bool checksys_serial_ftdi(const struct checksys *cs, const struct conf_serial *s,
			  struct checksys_result *r);
/* port:NAME:delivery: what stands between the wire and the reader (delivery.h), and
 * whether portlogd can make it direct; false when the device does not exist. */
bool checksys_serial_delivery(const struct checksys *cs, const struct conf_serial *s,
			      struct checksys_result *r);
void checksys_parallel_device(const struct checksys *cs, const struct conf_parallel *p,
			      struct checksys_result *r);
/* port:NAME:irq: its interrupt threads' priority against the reader's (the
 * sampler's), and for a pinned reader where the interrupt is delivered (irq.h).
 * False (no line) when the serial device does not exist. */
bool checksys_serial_irq(const struct checksys *cs, const struct conf_serial *s,
			 struct checksys_result *r);
bool checksys_parallel_irq(const struct checksys *cs, const struct conf_parallel *p,
			   struct checksys_result *r);
/* tx_device: the serial checks for the tap's second port, named port:NAME:tx,
 * port:NAME:tx:low-latency, port:NAME:tx:ftdi-latency, port:NAME:tx:delivery,
 * port:NAME:tx:irq; writes at most CHECKSYS_TX_MAX results and returns how many
 * (0 without tx_device). */
#define CHECKSYS_TX_MAX 5
unsigned checksys_serial_tx(const struct checksys *cs, const struct conf_serial *s,
			    struct checksys_result *r);
/* pass: port:NAME:pass: /dev/ptmx usable, the link's directory writable or
 * makeable, no other file at the path; false without pass. */
bool checksys_serial_pass(const struct checksys *cs, const struct conf_serial *s,
			  struct checksys_result *r);

/* "OK   kernel-rt      text": the level, the name padded to width, the text. */
void checksys_print(FILE *out, const struct checksys_result *r, int width);

/* Runs every check, prints one line each and "N OK, N WARN, N FAIL".
 * Returns the exit status: 0 when no check failed, else 1. */
int checksys_run(const struct checksys *cs, FILE *out);

#endif
