/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_checksys.c - unit tests of --check-system (daemon/check/) on fixture trees. */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "checksys.h"
#include "conf.h"
#include "fixture.h"
#include "testutil.h"
#include "wrap.h"

#define NOBODY 65534
#define GPS "[serial gps]\ndevice = /dev/ttyS0\n"       /* priority 97 */
#define TAP GPS "tx_device = /dev/ttyS1\n"
#define PASS GPS "pass = gps\n"
#define TEXTFILE_DIR "/var/lib/prometheus/node-exporter"
#define METRICS "[logger]\nmetrics_file = " TEXTFILE_DIR "/portlogd.prom\n" GPS
#define SKIPPED "(skipped)"

/* `/proc/self/limits` as the kernel writes it */
#define LIMITS(rtprio, memlock) \
	"Limit                     Soft Limit           Hard Limit           Units     \n" \
	"Max locked memory         " memlock "              " memlock "              bytes\n" \
	"Max realtime priority     " rtprio "                    " rtprio "                    \n" \
	"Max realtime timeout      unlimited            unlimited            us        \n"
#define STATUS(capeff) "Name:\tportlogd\nCapInh:\t0000000000000000\nCapEff:\t" capeff \
	"\nCpus_allowed_list:\t0-3\n"
#define STATUS_UID(uid) "Name:\tportlogd\nUid:\t" uid "\t" uid "\t" uid "\t" uid "\nCapEff:\t" \
	CAP_NONE "\n"
#define LIMITS_NPROC(n) \
	"Limit                     Soft Limit           Hard Limit           Units     \n" \
	"Max processes             " n "                 " n "                 processes \n"
#define MEMINFO(total_kb, avail_kb) { "/proc/meminfo", "MemTotal:       " total_kb " kB\n" \
	"MemFree:         100000 kB\nMemAvailable:   " avail_kb " kB\n" }
#define LOADAVG(tasks) "0.10 0.20 0.30 2/" tasks " 4242\n"
#define CAP_NONE "0000000000000000"
#define CAP_SYS_NICE "0000000000800000"
#define CAP_IPC_LOCK "0000000000004000"

/*
 * The kernel's clock state has no file: adjtimex is wrapped (--wrap=adjtimex)
 * and answers what fake_tx says; each clock row sets it in its prep.
 */
static struct {
	int rc, err, status;
	long maxerror, esterror;
} fake_tx = { TIME_OK, 0, 0, 1500, 40 };

int WRAP(adjtimex)(struct timex *tx);

int WRAP(adjtimex)(struct timex *tx)
{
	if (fake_tx.rc < 0) {
		errno = fake_tx.err;
		return -1;
	}
	tx->status = fake_tx.status;
	tx->maxerror = fake_tx.maxerror;
	tx->esterror = fake_tx.esterror;
	return fake_tx.rc;
}

static void clock_synced(void)
{
	fake_tx.rc = TIME_OK;
	fake_tx.status = STA_PLL;
	fake_tx.maxerror = 1500;
	fake_tx.esterror = 40;
}

/* chrony without rtcsync: STA_UNSYNC stays set, maxerror says synchronised */
static void clock_synced_unsync_flag(void)
{
	clock_synced();
	fake_tx.rc = TIME_ERROR;
	fake_tx.status = STA_PLL | STA_UNSYNC;
}

static void clock_synced_leap(void)
{
	clock_synced();
	fake_tx.status = STA_PLL | STA_INS;
}

static void clock_unsynced(void)
{
	fake_tx.rc = TIME_ERROR;
	fake_tx.status = STA_UNSYNC;
	fake_tx.maxerror = 16000000;
	fake_tx.esterror = 16000000;
}

static void clock_refused(void)
{
	fake_tx.rc = -1;
	fake_tx.err = EPERM;
}

static char root[256];                  /* short: ROOT/rel fits PATH_MAX */
static struct conf conf;            /* about 20 KiB: not on the stack */
static struct checksys cs;

/* ---- fixture trees (tests/lib/fixture.c) below root ---- */

static void fx_write(const char *rel, const char *text)
{
	fx_put(root, rel, text);
}

static void fx_stat(long pid, long tid, const char *comm, unsigned long flags, int prio,
		    int policy)
{
	fx_task(root, pid, tid, comm, flags, prio, policy);
}

/* A fresh tree, config text parsed into conf (NULL: no config). */
static void fx_begin(const char *conf_text)
{
	char err[CONF_ERR_MAX];

	fx_mkroot(root, sizeof(root), "checksys");
	cs = (struct checksys){ .root = root, .conf = &conf, .have_conf = conf_text != NULL };
	conf_defaults(&conf);
	if (conf_text != NULL && conf_parse_string(&conf, "portlogd.conf", conf_text, err,
						   sizeof(err)) != 0)
		fail_msg("fixture config: %s", err);
	snprintf(conf.path, sizeof(conf.path), "/etc/portlogd/portlogd.conf");
}

static void fx_end(void)
{
	fx_fail_readdir(0, 0);
	fx_rmroot(root);
}

/* ---- the table: one row per path of each check ---- */

typedef void (*check_fn)(const struct checksys *, struct checksys_result *);

static void serial_device(const struct checksys *c, struct checksys_result *r)
{
	checksys_serial_device(c, &c->conf->serial[0], r);
}

static void serial_low_latency(const struct checksys *c, struct checksys_result *r)
{
	if (!checksys_serial_low_latency(c, &c->conf->serial[0], r))
		snprintf(r->text, sizeof(r->text), SKIPPED);
}

static void serial_ftdi(const struct checksys *c, struct checksys_result *r)
{
	if (!checksys_serial_ftdi(c, &c->conf->serial[0], r))
		snprintf(r->text, sizeof(r->text), SKIPPED);
}

static void serial_delivery(const struct checksys *c, struct checksys_result *r)
{
	if (!checksys_serial_delivery(c, &c->conf->serial[0], r))
		snprintf(r->text, sizeof(r->text), SKIPPED);
}

/* One of the tap's second port's rows, by name (its device check: port:gps:tx). */
static void tap_row(const struct checksys *c, struct checksys_result *r, const char *name)
{
	struct checksys_result all[CHECKSYS_TX_MAX];
	unsigned n = checksys_serial_tx(c, &c->conf->serial[0], all);

	assert_true(n <= CHECKSYS_TX_MAX);
	snprintf(r->text, sizeof(r->text), SKIPPED);
	for (unsigned i = 0; i < n; i++)
		if (strcmp(all[i].name, name) == 0)
			*r = all[i];
}

static void serial_tx(const struct checksys *c, struct checksys_result *r)
{
	tap_row(c, r, "port:gps:tx");
}

static void serial_tx_low_latency(const struct checksys *c, struct checksys_result *r)
{
	tap_row(c, r, "port:gps:tx:low-latency");
}

static void serial_tx_irq(const struct checksys *c, struct checksys_result *r)
{
	tap_row(c, r, "port:gps:tx:irq");
}

static void serial_pass(const struct checksys *c, struct checksys_result *r)
{
	if (!checksys_serial_pass(c, &c->conf->serial[0], r))
		snprintf(r->text, sizeof(r->text), SKIPPED);
}

static void metrics_file(const struct checksys *c, struct checksys_result *r)
{
	if (!checksys_metrics_file(c, r))
		snprintf(r->text, sizeof(r->text), SKIPPED);
}

static void parallel_device(const struct checksys *c, struct checksys_result *r)
{
	checksys_parallel_device(c, &c->conf->parallel[0], r);
}

static void serial_irq(const struct checksys *c, struct checksys_result *r)
{
	if (!checksys_serial_irq(c, &c->conf->serial[0], r))
		snprintf(r->text, sizeof(r->text), SKIPPED);
}

static void parallel_irq(const struct checksys *c, struct checksys_result *r)
{
	(void)checksys_parallel_irq(c, &c->conf->parallel[0], r);
}

/* The interrupt threads of line 4 (a shared line: two handlers), and one of
 * line 41 that must not count for line 4. */
static void irq4_at_50(void)
{
	fx_stat(57, 0, "irq/4-ttyS0", 0x208040, 50, 1);
	fx_stat(58, 0, "irq/4-ehci_hcd", 0x208040, 50, 1);
	fx_stat(90, 0, "irq/41-eth0", 0x208040, 10, 1);
}

static void irq4_at_99(void)
{
	fx_stat(57, 0, "irq/4-ttyS0", 0x208040, 99, 1);
	fx_stat(90, 0, "irq/41-eth0", 0x208040, 10, 1);
}

static void irq4_mixed(void)
{
	fx_stat(57, 0, "irq/4-ttyS0", 0x208040, 99, 1);
	fx_stat(58, 0, "irq/4-ehci_hcd", 0x208040, 50, 1);
}

static void irq7_at_50(void)
{
	fx_stat(70, 0, "irq/7-parport0", 0x208040, 50, 1);
}

static void tasks_multipathd(void)
{
	fx_stat(1456, 0, "multipathd", 0x400140, 99, 2);
}

static void tasks_harmless(void)
{
	fx_stat(2, 0, "migration/0", 0x04208040, 99, 1);        /* PF_KTHREAD */
	fx_stat(42, 0, "jackd", 0x400000, 50, 1);               /* below 97 */
	fx_stat(77, 0, "portlogd", 0x400040, 99, 1);            /* ourselves */
	fx_stat(80, 0, "bash", 0x400000, 0, 0);
}

static void tasks_thread(void)
{
	fx_stat(900, 900, "chronyd", 0x400000, 0, 0);
	fx_stat(900, 901, "odd) (name", 0x400040, 98, 1);      /* a comm with ") (" */
}

static void tasks_deadline(void)
{
	fx_stat(300, 0, "dlworker", 0x400000, 0, 6);
	fx_write("/proc/301/stat", "301 (cut short)");        /* a stat line that ends early */
	fx_write("/proc/302/stat", "302 (few) S 1 2 3\n");
}

/* /proc cannot be listed: EOVERFLOW at once, or after three entries */
static void proc_eoverflow(void)
{
	fx_fail_readdir(EOVERFLOW, 0);
}

static void tasks_then_eoverflow(void)
{
	tasks_harmless();
	fx_fail_readdir(EOVERFLOW, 3);
}

/* The tty worker's rows: /proc/uptime says 1000 s; a busy task has used 99% of a CPU
 * since it started at boot, an idle one 0.01%. */
static unsigned long busy_ticks(void)
{
	return 990ul * (unsigned long)sysconf(_SC_CLK_TCK);
}

static void fx_rt(long pid, const char *comm, unsigned long flags, int prio, int policy,
		  bool busy, const char *cpus)
{
	fx_task_run(root, pid, 0, comm, flags, prio, policy, busy ? busy_ticks() : 1, 0, cpus);
}

/* what runs on every machine: per-CPU kernel threads, idle irq threads (this VM's ACPI:Ged,
 * one on each CPU), an idle multipathd, a busy SCHED_OTHER task */
static void tty_harmless(void)
{
	fx_write("/proc/uptime", "1000.00 1900.00\n");
	fx_rt(18, "migration/0", 0x04208040, 99, 1, true, "0");
	fx_rt(21, "migration/1", 0x04208040, 99, 1, true, "1");
	fx_rt(50, "irq/24-ACPI:Ged", 0x208040, 50, 1, false, "0");
	fx_rt(51, "irq/25-ACPI:Ged", 0x208040, 50, 1, false, "1");
	fx_rt(1456, "multipathd", 0x400140, 99, 2, false, "0-1");
	fx_rt(2000, "make", 0x400000, 0, 0, true, "0-1");
}

/* and busy ones that are ours: portlogd's threads, the port's interrupt thread (irq 4) */
static void tty_ours(void)
{
	tty_harmless();
	fx_task_run(root, 77, 78, "plog-gps", 0x400040, 97, 1, busy_ticks(), 0, "0");
	fx_write("/proc/77/comm", "portlogd");
	fx_rt(57, "irq/4-ttyS0", 0x208040, 98, 1, true, "1");
}

static void tty_one_busy(void)
{
	tty_harmless();
	fx_rt(4242, "spin", 0x400000, 50, 1, true, "1");
}

/* a busy task on each CPU: one pinned, one SCHED_RR anywhere, a SCHED_DEADLINE thread */
static void tty_all_busy(void)
{
	tty_one_busy();
	fx_rt(4243, "spin", 0x400000, 10, 2, true, "0-1");
}

static void tty_deadline(void)
{
	tty_harmless();
	fx_task_run(root, 600, 601, "dl", 0x400040, 0, 6, busy_ticks(), 0, "0");
	fx_rt(602, "spin", 0x400000, 1, 1, true, "1");
}

/* only an augmenting path shows it: a task that may use both CPUs, one only CPU 0 */
static void tty_crossed(void)
{
	tty_harmless();
	fx_rt(700, "wide", 0x400000, 50, 1, true, "0-1");
	fx_rt(701, "narrow", 0x400000, 50, 1, true, "0");
}

/* three busy tasks, all on CPU 0: CPU 1 stays the tty worker's */
static void tty_piled(void)
{
	tty_harmless();
	fx_rt(800, "a", 0x400000, 50, 1, true, "0");
	fx_rt(801, "b", 0x400000, 50, 1, true, "0");
	fx_rt(802, "c", 0x400000, 50, 1, true, "0");
}

/* no /proc/uptime, no status: a task's share and CPUs are not known, so it may be busy
 * anywhere */
static void tty_unknown(void)
{
	fx_task(root, 900, 0, "rt", 0x400000, 50, 1);
	fx_task(root, 901, 0, "rt2", 0x400000, 50, 1);
}

/* a busy task on each of CPUs 1-3, the mask 1-3: CPU 0 is free */
static void tty_free_cpu0(void)
{
	fx_write("/proc/uptime", "1000.00 1900.00\n");
	for (long c = 1; c <= 3; c++) {
		char cpu[8];

		snprintf(cpu, sizeof(cpu), "%ld", c);
		fx_rt(1000 + c, "load", 0x400000, 50, 1, true, cpu);
	}
}

/* more than six to list, on the 40 CPUs of the mask (two groups of 32), the 41st free */
static void tty_many(void)
{
	fx_write("/proc/uptime", "1000.00 1900.00\n");
	for (long c = 0; c < 40; c++) {
		char cpu[8];

		snprintf(cpu, sizeof(cpu), "%ld", c);
		fx_rt(1100 + c, "load", 0x400000, 50, 1, true, cpu);
	}
}

struct fx_file {
	const char *path, *text;
};

struct row {
	const char *what;
	check_fn check;
	const char *conf;               /* config text; NULL: GPS; "" : no config */
	struct fx_file file[16];
	void (*prep)(void);
	enum checksys_level level;
	const char *name;
	const char *has;                /* fragments the text must contain */
	const char *has2;
	const char *lacks;              /* and one it must not */
};

#define KVER "Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org) (gcc-12) "
#define CPU "/sys/devices/system/cpu"
#define IDLE0 CPU "/cpu0/cpuidle/state"
#define CLK CPU "/../clocksource/clocksource0"
#define C6_ON { IDLE0 "0/latency", "0\n" }, { IDLE0 "0/name", "POLL\n" }, \
	{ IDLE0 "1/latency", "133\n" }, { IDLE0 "1/name", "C6\n" }, { IDLE0 "1/disable", "0\n" }
#define RT_REQ "[logger]\nrt = required\n" GPS
#define G0 "[timer]\nidle_latency = global:0\n"  /* the default before: every CPU polling */
#define TTYS0_IRQ "/sys/class/tty/ttyS0/irq"
#define UART4 { "/dev/ttyS0", "" }, { TTYS0_IRQ, "4\n" }
#define PROC1 { "/proc/1/comm", "systemd\n" }      /* a live system's /proc is never empty */
#define RT_ON { "/sys/kernel/realtime", "1\n" }
#define CAPS_NICE { "/proc/self/status", STATUS(CAP_SYS_NICE) }
#define WQ(mask) { "/sys/devices/virtual/workqueue/cpumask", mask }
#define CPUS01 { CPU "/online", "0-1\n" }
#define PARPORT7 { "/proc/sys/dev/parport/parport0/irq", "7\n" }
#define IDLE1 CPU "/cpu1/cpuidle/state"
#define C6_ON1 { CPU "/online", "0-1\n" }, { IDLE1 "0/latency", "0\n" }, { IDLE1 "0/name", "POLL\n" }, \
	{ IDLE1 "1/latency", "133\n" }, { IDLE1 "1/name", "C6\n" }, { IDLE1 "1/disable", "0\n" }
#define QOS1 { CPU "/cpu1/power/pm_qos_resume_latency_us", "0\n" }
#define PIN1_PORT "[serial gps]\ndevice = /dev/pts/3\ncpu = 1\n"
#define PIN1 "[timer]\nidle_latency = pinned:0\n" PIN1_PORT
#define PINNED2 GPS "cpu = 2\n"
#define FTDI_LINK { "/dev/serial/by-id/usb-FTDI_FT232R-if00-port0", "-> ../../ttyUSB0" }, \
	{ "/dev/ttyUSB0", "" }
/* a 16550A at receive trigger T, as Linux shows it */
#define A16550(t) { "/dev/ttyS0", "" }, { "/sys/class/tty/ttyS0/type", "4\n" }, \
	{ "/sys/class/tty/ttyS0/xmit_fifo_size", "16\n" }, { "/sys/class/tty/ttyS0/rx_trig_bytes", t }

static const struct row rows[] = {
	/* config */
	{ "config present", checksys_config, NULL, {{0}}, NULL, CHECKSYS_OK, "config",
	  "portlogd.conf: 1 serial, 0 parallel ports; rt = best-effort", NULL, NULL },
	{ "no config", checksys_config, "", {{0}}, NULL, CHECKSYS_WARN, "config",
	  "not found: port checks skipped", "; fix: ", NULL },
	/* kernel-rt */
	{ "realtime = 1", checksys_kernel_rt, NULL, { { "/sys/kernel/realtime", "1\n" } }, NULL,
	  CHECKSYS_OK, "kernel-rt", "PREEMPT_RT kernel (/sys/kernel/realtime = 1)", NULL, NULL },
	{ "PREEMPT_RT in /proc/version", checksys_kernel_rt, NULL,
	  { { "/proc/version", KVER "#1 SMP PREEMPT_RT Debian 6.1.119-1 (2024-11-22)\n" } }, NULL,
	  CHECKSYS_OK, "kernel-rt", "PREEMPT_RT kernel (/proc/version)", NULL, NULL },
	{ "PREEMPT_DYNAMIC", checksys_kernel_rt, NULL,
	  { { "/proc/version", KVER "#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1\n" },
	    { "/sys/kernel/realtime", "0\n" } }, NULL, CHECKSYS_WARN, "kernel-rt",
	  "PREEMPT_DYNAMIC kernel, not PREEMPT_RT", "; fix: install and boot a PREEMPT_RT kernel "
	  "(Debian: apt install linux-image-rt-$(dpkg --print-architecture)), meanwhile boot "
	  "with preempt=full", NULL },
	{ "PREEMPT_DYNAMIC, preempt=full", checksys_kernel_rt, NULL,
	  { { "/proc/version", KVER "#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1\n" },
	    { "/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 preempt=full quiet\n" } },
	  NULL, CHECKSYS_WARN, "kernel-rt", "PREEMPT_DYNAMIC kernel", "; fix: ", "meanwhile" },
	{ "PREEMPT", checksys_kernel_rt, NULL, { { "/proc/version", KVER "#1 SMP PREEMPT\n" } },
	  NULL, CHECKSYS_WARN, "kernel-rt", "PREEMPT kernel, not PREEMPT_RT", "; fix: ",
	  "meanwhile" },
	{ "old PREEMPT RT", checksys_kernel_rt, NULL,
	  { { "/proc/version", KVER "#1 SMP PREEMPT RT Tue Jan 1\n" } }, NULL, CHECKSYS_OK,
	  "kernel-rt", "PREEMPT_RT kernel", NULL, NULL },
	{ "no preemption", checksys_kernel_rt, NULL, { { "/proc/version", KVER "#1 SMP\n" } },
	  NULL, CHECKSYS_WARN, "kernel-rt", "no forced preemption kernel", "; fix: ", NULL },
	{ "no /proc/version", checksys_kernel_rt, NULL, {{0}}, NULL, CHECKSYS_WARN, "kernel-rt",
	  "cannot read /proc/version (ENOENT)", "; fix: ", NULL },
	/* rt-throttle */
	{ "throttling off", checksys_rt_throttle, NULL,
	  { { "/proc/sys/kernel/sched_rt_runtime_us", "-1\n" } }, NULL, CHECKSYS_OK,
	  "rt-throttle", "sched_rt_runtime_us = -1", NULL, NULL },
	{ "throttling on", checksys_rt_throttle, NULL,
	  { { "/proc/sys/kernel/sched_rt_runtime_us", "950000\n" },
	    { "/proc/sys/kernel/sched_rt_period_us", "1000000\n" } }, NULL, CHECKSYS_WARN,
	  "rt-throttle", "sched_rt_runtime_us = 950000 of sched_rt_period_us = 1000000",
	  "; fix: echo -1 > /proc/sys/kernel/sched_rt_runtime_us (sysctl "
	  "kernel.sched_rt_runtime_us=-1", NULL },
	{ "runtime = period", checksys_rt_throttle, NULL,
	  { { "/proc/sys/kernel/sched_rt_runtime_us", "1000000\n" },
	    { "/proc/sys/kernel/sched_rt_period_us", "1000000\n" } }, NULL, CHECKSYS_OK,
	  "rt-throttle", "the whole sched_rt_period_us: real-time threads are never throttled",
	  NULL, NULL },
	{ "no sched_rt_runtime_us", checksys_rt_throttle, NULL, {{0}}, NULL, CHECKSYS_WARN,
	  "rt-throttle", "cannot read", "; fix: ", NULL },
	/* cpufreq */
	{ "no cpufreq", checksys_cpufreq, NULL, { { CPU "/online", "0-1\n" } }, NULL,
	  CHECKSYS_OK, "cpufreq", "no CPU frequency scaling", NULL, NULL },
	{ "performance", checksys_cpufreq, NULL,
	  { { CPU "/online", "0-1\n" }, { CPU "/cpu0/cpufreq/scaling_governor", "performance\n" },
	    { CPU "/cpu1/cpufreq/scaling_governor", "performance\n" } }, NULL, CHECKSYS_OK,
	  "cpufreq", "governor performance on CPUs 0-1", NULL, NULL },
	{ "powersave on cpu1", checksys_cpufreq, NULL,
	  { { CPU "/online", "0-1\n" }, { CPU "/cpu0/cpufreq/scaling_governor", "performance\n" },
	    { CPU "/cpu1/cpufreq/scaling_governor", "powersave\n" } }, NULL, CHECKSYS_WARN,
	  "cpufreq", "CPUs 1 are not at governor performance (cpu1: powersave)",
	  "; fix: cpupower frequency-set -g performance", NULL },
	{ "offline CPU not counted", checksys_cpufreq, NULL,
	  { { CPU "/online", "0\n" }, { CPU "/cpu0/cpufreq/scaling_governor", "performance\n" },
	    { CPU "/cpu1/cpufreq/scaling_governor", "powersave\n" } }, NULL, CHECKSYS_OK,
	  "cpufreq", "governor performance on CPUs 0", NULL, NULL },
	/* cpuidle */
	{ "no cpuidle", checksys_cpuidle, NULL, { { CPU "/online", "0\n" } }, NULL, CHECKSYS_OK,
	  "cpuidle", "no cpuidle states", NULL, NULL },
	{ "shallow states only", checksys_cpuidle, "[timer]\ncpu_dma_latency = off\n" GPS,
	  { { IDLE0 "0/latency", "0\n" }, { IDLE0 "1/latency", "2\n" }, { IDLE0 "1/disable", "0\n" } },
	  NULL, CHECKSYS_OK, "cpuidle", "no enabled idle state takes more than 10 us", NULL,
	  NULL },
	{ "C6, cpu_dma_latency off", checksys_cpuidle, "[timer]\ncpu_dma_latency = off\n" GPS,
	  { C6_ON }, NULL, CHECKSYS_WARN, "cpuidle",
	  "CPUs 0 may enter idle states slower than 10 us (cpu0: C6, 133 us to wake) and "
	  "[timer] idle_latency = off", "; fix: set [timer] idle_latency = auto, or disable "
	  "them: cpupower idle-set -D 10", NULL },
	{ "C6 disabled", checksys_cpuidle, "[timer]\ncpu_dma_latency = off\n" GPS,
	  { C6_ON, { IDLE0 "1/disable", "1\n" } }, NULL, CHECKSYS_OK, "cpuidle",
	  "no enabled idle state", NULL, NULL },
	{ "C6 held off by cpu_dma_latency = 0", checksys_cpuidle, G0 GPS,
	  { C6_ON, { "/dev/cpu_dma_latency", "" } }, NULL, CHECKSYS_OK, "cpuidle", "(cpu0: C6, 133 us) are kept off while portlogd holds "
	  "/dev/cpu_dma_latency at 0 us", NULL, NULL },
	{ "C6, cpu_dma_latency = 0 cannot be held", checksys_cpuidle, NULL, { C6_ON }, NULL,
	  CHECKSYS_WARN, "cpuidle", "(cpu0: C6, 133 us to wake) and portlogd cannot hold them",
	  "; fix: let portlogd hold /dev/cpu_dma_latency", NULL },
	{ "C6 under cpu_dma_latency = 200", checksys_cpuidle, "[timer]\ncpu_dma_latency = 200\n"
	  GPS, { C6_ON, { "/dev/cpu_dma_latency", "" } }, NULL, CHECKSYS_WARN, "cpuidle", "(cpu0: C6, 133 us to wake)",
	  "; fix: lower [timer] idle_latency to global:10", NULL },
	/* cpu-dma-latency (not writable: test_unprivileged) */
	{ "a config with no port", checksys_config, "[logger]\n", {{0}}, NULL, CHECKSYS_WARN,
	  "config", "no port: the service runs and logs nothing (it opens no device)",
	  "; fix: add a [serial NAME] section", NULL },
	{ "cpu_dma_latency writable", checksys_cpu_dma_latency, G0 GPS,
	  { { "/dev/cpu_dma_latency", "" } }, NULL, CHECKSYS_OK, "cpu-dma-latency",
	  "portlogd can hold /dev/cpu_dma_latency at 0 us", NULL, NULL },
	/* the default: C1's exit latency (the first state that halts), or nothing held */
	{ "auto: the halt's exit latency", checksys_cpu_dma_latency, NULL,
	  { { "/dev/cpu_dma_latency", "" }, { IDLE0 "0/latency", "0\n" }, { IDLE0 "0/name", "POLL\n" },
	    { IDLE0 "1/latency", "2\n" }, { IDLE0 "1/name", "C1\n" } }, NULL, CHECKSYS_OK,
	  "cpu-dma-latency", "portlogd can hold /dev/cpu_dma_latency at 2 us", NULL, NULL },
	{ "auto without cpuidle", checksys_cpu_dma_latency, NULL,
	  { { "/dev/cpu_dma_latency", "" } }, NULL, CHECKSYS_OK, "cpu-dma-latency",
	  "idle_latency = off", NULL, NULL },
	{ "auto with no port", checksys_cpu_dma_latency, "[logger]\n",
	  { { "/dev/cpu_dma_latency", "" }, { IDLE0 "0/latency", "0\n" }, { IDLE0 "0/name", "POLL\n" },
	    { IDLE0 "1/latency", "2\n" }, { IDLE0 "1/name", "C1\n" } }, NULL, CHECKSYS_OK,
	  "cpu-dma-latency", "idle_latency = off", NULL, NULL },
	{ "cpu_dma_latency off", checksys_cpu_dma_latency, "[timer]\ncpu_dma_latency = off\n" GPS,
	  {{0}}, NULL, CHECKSYS_OK, "cpu-dma-latency", "idle_latency = off: no CPU is held", NULL,
	  NULL },
	/* idle_latency pinned: only the real-time threads' CPUs are held (cpu 1 here) */
	{ "C6, pinned: cpu1 held, cpu0 free", checksys_cpuidle, PIN1,
	  { C6_ON, C6_ON1, QOS1 }, NULL, CHECKSYS_OK, "cpuidle", "(cpu1: C6, 133 us) are kept off "
	  "while portlogd holds the real-time CPUs' pm_qos_resume_latency_us at 0 us",
	  "CPUs 0, without real-time threads, may sleep (idle_latency pinned)", NULL },
	{ "C6, pinned:200", checksys_cpuidle, "[timer]\nidle_latency = pinned:200\n" PIN1_PORT,
	  { C6_ON, C6_ON1, QOS1 }, NULL, CHECKSYS_WARN, "cpuidle", "CPUs 1 may enter idle states "
	  "slower than 10 us (cpu1: C6", "; fix: lower [timer] idle_latency to pinned:10", NULL },
	{ "auto with an unpinned thread is global", checksys_cpuidle,
	  "[timer]\nidle_latency = auto\n[logger]\nflusher_priority = 5\n" PIN1_PORT, { C6_ON, C6_ON1, QOS1 }, NULL,
	  CHECKSYS_WARN, "cpuidle", "CPUs 0-1 may enter", "portlogd cannot hold them", NULL },
	{ "pinned, a UART's interrupt on cpu0 keeps it awake", checksys_cpuidle,
	  "[timer]\nidle_latency = pinned:0\n[serial gps]\ndevice = /dev/ttyS0\ncpu = 1\n",
	  { C6_ON, C6_ON1, QOS1, { "/dev/ttyS0", "" }, { "/sys/class/tty/ttyS0/irq", "4\n" },
	    { "/proc/irq/4/effective_affinity_list", "0\n" } }, NULL, CHECKSYS_WARN, "cpuidle",
	  "CPUs 0 may enter idle states", "; fix: let portlogd set the CPUs' "
	  "pm_qos_resume_latency_us", NULL },
	{ "pinned, CPU files writable", checksys_cpu_dma_latency, PIN1, { QOS1 }, NULL,
	  CHECKSYS_OK, "cpu-dma-latency", "idle_latency = pinned:0: portlogd can set "
	  "pm_qos_resume_latency_us of CPUs 1", "/dev/cpu_dma_latency is not held", NULL },
	{ "pinned, a CPU file missing: global instead", checksys_cpu_dma_latency, PIN1,
	  { { "/dev/cpu_dma_latency", "" } }, NULL, CHECKSYS_WARN, "cpu-dma-latency",
	  "cannot write cpu1/power/pm_qos_resume_latency_us (ENOENT), so portlogd holds "
	  "/dev/cpu_dma_latency for every CPU instead", "; fix: the udev rule of 60-portlogd.rules",
	  NULL },
	{ "pinned, neither", checksys_cpu_dma_latency, PIN1, {{0}}, NULL, CHECKSYS_WARN,
	  "cpu-dma-latency", "instead (CPUs 1 would do); /dev/cpu_dma_latency: ENOENT", "; fix: ",
	  NULL },
	{ "cpu_dma_latency missing", checksys_cpu_dma_latency, G0 GPS, {{0}}, NULL, CHECKSYS_WARN,
	  "cpu-dma-latency", "/dev/cpu_dma_latency: ENOENT", "; fix: ", NULL },
	{ "cpu_dma_latency missing, rt = required", checksys_cpu_dma_latency, G0 RT_REQ, {{0}}, NULL,
	  CHECKSYS_FAIL, "cpu-dma-latency", "/dev/cpu_dma_latency: ENOENT", "; fix: ", NULL },
	/* clock-sensor: the RTC's seconds, where the machine is virtual */
	{ "clock sensor: bare metal", checksys_clock_sensor, NULL,
	  { { "/proc/cpuinfo", "flags\t\t: fpu vme de pse\n" } }, NULL, CHECKSYS_OK, "clock-sensor",
	  "not a virtual machine", NULL, NULL },
	{ "clock sensor: virtual, no RTC", checksys_clock_sensor, NULL,
	  { { "/proc/cpuinfo", "flags\t\t: fpu vme hypervisor lahf_lm\n" } }, NULL, CHECKSYS_WARN,
	  "clock-sensor", "/dev/rtc0: ENOENT", "/proc/cpuinfo:  hypervisor", NULL },
	{ "clock sensor: virtual by the firmware, RTC", checksys_clock_sensor, NULL,
	  { { "/sys/class/dmi/id/sys_vendor", "QEMU\n" }, { "/dev/rtc0", "" } }, NULL, CHECKSYS_OK,
	  "clock-sensor", "reads /dev/rtc0's update interrupt", "sys_vendor: QEMU", NULL },
	{ "clock sensor: off", checksys_clock_sensor, "[logger]\nclock_sensor = off\n" GPS,
	  { { "/proc/cpuinfo", "flags\t\t: hypervisor\n" }, { "/dev/rtc0", "" } }, NULL, CHECKSYS_OK,
	  "clock-sensor", "clock_sensor = off", NULL, NULL },
	/* smt */
	{ "SMT off", checksys_smt, NULL, { { CPU "/smt/active", "0\n" },
	  { CPU "/smt/control", "notsupported\n" } }, NULL, CHECKSYS_OK, "smt",
	  "SMT not active (control = notsupported)", NULL, NULL },
	{ "SMT on", checksys_smt, NULL, { { CPU "/smt/active", "1\n" }, { CPU "/smt/control", "on\n" } },
	  NULL, CHECKSYS_WARN, "smt", "SMT active (control = on)", "; fix: boot with nosmt",
	  NULL },
	{ "no smt/active", checksys_smt, NULL, {{0}}, NULL, CHECKSYS_WARN, "smt", "cannot read",
	  "; fix: ", NULL },
	/* isolation */
	{ "nothing pinned", checksys_isolation, NULL, { { "/proc/cmdline", "isolcpus=2\n" } },
	  NULL, CHECKSYS_WARN, "isolation", "no real-time thread is pinned",
	  "; fix: set cpu = N", NULL },
	{ "pinned and isolated", checksys_isolation, PINNED2,
	  { { "/proc/cmdline", "root=/dev/sda1 isolcpus=nohz,domain,managed_irq,2-3 "
	      "nohz_full=2-3 rcu_nocbs=all irqaffinity=0-1\n" } }, NULL, CHECKSYS_OK, "isolation",
	  "pinned to CPUs 2, which are in isolcpus, nohz_full and rcu_nocbs", NULL, NULL },
	{ "pinned, partly isolated", checksys_isolation, PINNED2,
	  { { "/proc/cmdline", "isolcpus=2 nohz_full=3 xisolcpus=1\n" } }, NULL, CHECKSYS_WARN,
	  "isolation", "nohz_full lacks 2, rcu_nocbs lacks 2",
	  "; fix: boot with nohz_full=2-3 rcu_nocbs=2 (GRUB_CMDLINE_LINUX", "isolcpus lacks" },
	{ "pinned to the boot CPU", checksys_isolation, GPS "cpu = 0\n",
	  { { "/proc/cmdline", "isolcpus=0 nohz_full=0 rcu_nocbs=0\n" } }, NULL, CHECKSYS_WARN,
	  "isolation", "CPU 0 is the boot CPU", "; fix: pin them to other CPUs", NULL },
	{ "SCHED_OTHER thread pinned only", checksys_isolation,
	  GPS "priority = other\ncpu = 1\n", { { "/proc/cmdline", "quiet\n" } }, NULL,
	  CHECKSYS_WARN, "isolation", "no real-time thread is pinned", NULL, NULL },
	{ "pinned to a CPU not online", checksys_isolation, GPS "cpu = 5\n",
	  { { "/sys/devices/system/cpu/online", "0-3\n" }, { "/proc/cmdline", "isolcpus=5\n" } },
	  NULL, CHECKSYS_FAIL, "isolation", "[serial gps] cpu = 5: that CPU is not online "
	  "(online: 0-3), the daemon would exit 78", "; fix: use one of 0-3, or any", NULL },
	/* the timer runs only with a [parallel] port: only then does its cpu count */
	{ "timer on a CPU not online, no parallel port", checksys_isolation,
	  "[timer]\ncpu = 5\n" GPS, { { "/sys/devices/system/cpu/online", "0-3\n" } }, NULL,
	  CHECKSYS_WARN, "isolation", "no real-time thread is pinned", NULL, NULL },
	{ "timer on a CPU not online, a parallel port", checksys_isolation,
	  "[timer]\ncpu = 5\n[parallel lpt0]\ndevice = parport0\n",
	  { { "/sys/devices/system/cpu/online", "0-3\n" } }, NULL, CHECKSYS_FAIL, "isolation",
	  "[timer] cpu = 5: that CPU is not online (online: 0-3)", NULL, NULL },
	/* a service's own affinity leaves isolated CPUs out: not a reason to fail */
	{ "pinned to an isolated CPU", checksys_isolation, GPS "cpu = 3\n",
	  { { "/proc/self/status", "Name:\tportlogd\nCpus_allowed_list:\t0-2\n" },
	    { "/sys/devices/system/cpu/online", "0-3\n" },
	    { "/proc/cmdline", "isolcpus=3 nohz_full=3 rcu_nocbs=3\n" } },
	  NULL, CHECKSYS_OK, "isolation", "pinned to CPUs 3, which are in isolcpus", NULL, NULL },
	/* irqbalance */
	{ "no irqbalance", checksys_irqbalance, NULL, { { "/proc/1/comm", "systemd\n" } }, NULL,
	  CHECKSYS_OK, "irqbalance", "irqbalance is not running", NULL, NULL },
	{ "irqbalance runs", checksys_irqbalance, PINNED2,
	  { { "/proc/1/comm", "systemd\n" }, { "/proc/812/comm", "irqbalance\n" } }, NULL,
	  CHECKSYS_WARN, "irqbalance", "irqbalance runs (pid 812)",
	  "; fix: IRQBALANCE_BANNED_CPULIST=2 in /etc/default/irqbalance", NULL },
	{ "/proc cannot be listed", checksys_irqbalance, NULL, { PROC1 }, proc_eoverflow,
	  CHECKSYS_WARN, "irqbalance", "/proc (EOVERFLOW): whether irqbalance runs is unknown",
	  "; fix: this is a 32-bit portlogd built without 64-bit file offsets", NULL },
	/* rt-tasks */
	{ "kernel threads, low and own RT tasks", checksys_rt_tasks, NULL, {{0}}, tasks_harmless,
	  CHECKSYS_OK, "rt-tasks", "no other user-space SCHED_FIFO/RR task at priority 97 or "
	  "above", NULL, NULL },
	{ "seed 002's multipathd", checksys_rt_tasks, NULL, {{0}}, tasks_multipathd,
	  CHECKSYS_WARN, "rt-tasks", "1 user-space task at or above priority 97, our lowest: "
	  "1456 multipathd SCHED_RR 99", "; fix: stop them, or lower them (chrt -o -p 0 PID",
	  NULL },
	{ "an RT thread of another process", checksys_rt_tasks, NULL, {{0}}, tasks_thread,
	  CHECKSYS_WARN, "rt-tasks", "901 odd) (name SCHED_FIFO 98", "; fix: ", "chronyd" },
	{ "lowest priority 40 catches jackd", checksys_rt_tasks,
	  GPS "priority = 40\n", {{0}}, tasks_harmless, CHECKSYS_WARN, "rt-tasks",
	  "42 jackd SCHED_FIFO 50", "; fix: ", "migration" },
	{ "SCHED_DEADLINE", checksys_rt_tasks, NULL, {{0}}, tasks_deadline, CHECKSYS_WARN,
	  "rt-tasks", "300 dlworker SCHED_DEADLINE 0", "; fix: ", NULL },
	{ "/proc listed only in part", checksys_rt_tasks, NULL, {{0}}, tasks_then_eoverflow,
	  CHECKSYS_WARN, "rt-tasks", "/proc (EOVERFLOW): which real-time tasks run before "
	  "portlogd's threads is unknown", "; fix: this is a 32-bit portlogd built", NULL },
	/* tty-worker */
	{ "no cpumask", checksys_tty_worker, NULL, { PROC1 }, NULL, CHECKSYS_WARN, "tty-worker",
	  "cannot read /sys/devices/virtual/workqueue/cpumask (ENOENT)", "; fix: check that no "
	  "busy real-time task runs on every CPU", NULL },
	{ "cpumask unreadable text", checksys_tty_worker, NULL, { WQ("zz\n"), PROC1 }, NULL,
	  CHECKSYS_WARN, "tty-worker", "(not a CPU mask)", "; fix: ", NULL },
	{ "nothing real-time", checksys_tty_worker, NULL, { WQ("3\n"), CPUS01, PROC1 }, NULL,
	  CHECKSYS_OK, "tty-worker", "cpumask 3: the kernel's unbound workers (the tty worker) "
	  "may run on CPUs 0-1; no busy real-time task runs there but portlogd's", NULL,
	  "not counted" },
	{ "per-CPU threads, idle ones, SCHED_OTHER", checksys_tty_worker, NULL,
	  { WQ("3\n"), CPUS01 }, tty_harmless, CHECKSYS_OK, "tty-worker", "no busy real-time "
	  "task runs there but portlogd's", "(3 idle real-time tasks, under 1.0% of a CPU since "
	  "they started, not counted)", "migration" },
	{ "ours: portlogd's threads, the port's irq thread", checksys_tty_worker, NULL,
	  { WQ("3\n"), CPUS01, UART4 }, tty_ours, CHECKSYS_OK, "tty-worker", "no busy real-time "
	  "task runs there but portlogd's", NULL, "irq/4" },
	{ "another irq thread, busy, is not ours", checksys_tty_worker,
	  "[serial gps]\ndevice = /dev/pts/3\n", { WQ("3\n"), CPUS01, UART4 }, tty_ours,
	  CHECKSYS_OK, "tty-worker", "cannot hold all of them at once: 57 irq/4-ttyS0 "
	  "SCHED_FIFO 98 on CPUs 1 (99% of a CPU)", NULL, "plog" },
	{ "one busy task, one CPU left", checksys_tty_worker, NULL, { WQ("3\n"), CPUS01 },
	  tty_one_busy, CHECKSYS_OK, "tty-worker", "the busy real-time tasks there cannot hold "
	  "all of them at once: 4242 spin SCHED_FIFO 50 on CPUs 1 (99% of a CPU)", NULL, NULL },
	{ "one busy task, the mask its CPU only", checksys_tty_worker, NULL,
	  { WQ("00000000,00000002\n"), CPUS01 }, tty_one_busy, CHECKSYS_WARN, "tty-worker",
	  "cpumask 00000000,00000002: the kernel's unbound workers (the tty worker) may run on "
	  "CPUs 1, and busy real-time tasks can hold all of them at once: 4242 spin SCHED_FIFO "
	  "50 on CPUs 1 (99% of a CPU)", "; fix: give the mask the CPUs no busy real-time task "
	  "may use (0): echo 1 > /sys/devices/virtual/workqueue/cpumask, or move a task off one "
	  "of CPUs 1", NULL },
	{ "a busy task on each CPU", checksys_tty_worker, NULL, { WQ("3\n"), CPUS01 },
	  tty_all_busy, CHECKSYS_WARN, "tty-worker", "4243 spin SCHED_RR 10 on CPUs 0-1 (99% of "
	  "a CPU)", "; fix: keep a CPU free of busy real-time tasks (taskset -a -p -c CPUS PID, "
	  "or their unit's CPUAffinity=) and give the mask only such CPUs: echo MASK > "
	  "/sys/devices/virtual/workqueue/cpumask (the mask moves all unbound kernel work; "
	  "portlogd-rt(7), THE TTY WORKER)", NULL },
	{ "SCHED_DEADLINE counts", checksys_tty_worker, NULL, { WQ("3\n"), CPUS01 },
	  tty_deadline, CHECKSYS_WARN, "tty-worker", "601 dl SCHED_DEADLINE 0 on CPUs 0", NULL,
	  NULL },
	{ "held only by moving one", checksys_tty_worker, NULL, { WQ("3\n"), CPUS01 },
	  tty_crossed, CHECKSYS_WARN, "tty-worker", "can hold all of them at once", NULL, NULL },
	{ "three on one CPU", checksys_tty_worker, NULL, { WQ("3\n"), CPUS01 }, tty_piled,
	  CHECKSYS_OK, "tty-worker", "cannot hold all of them at once: ", "800 a SCHED_FIFO 50 "
	  "on CPUs 0 (99% of a CPU)", NULL },
	{ "share and CPUs not known", checksys_tty_worker, NULL, { WQ("3\n"), CPUS01 },
	  tty_unknown, CHECKSYS_WARN, "tty-worker", "on CPUs 0-1 (share not known)", NULL, NULL },
	{ "a CPU outside the mask is free", checksys_tty_worker, NULL,
	  { WQ("e\n"), { CPU "/online", "0-3\n" } }, tty_free_cpu0, CHECKSYS_WARN, "tty-worker",
	  "may run on CPUs 1-3, and busy", "; fix: give the mask the CPUs no busy real-time "
	  "task may use (0): echo 1 > ", NULL },
	{ "none of the mask online", checksys_tty_worker, NULL, { WQ("c\n"), CPUS01, PROC1 },
	  NULL, CHECKSYS_OK, "tty-worker", "cpumask c: the kernel's unbound workers (the tty "
	  "worker) may run on CPUs 0-1", NULL, NULL },
	{ "40 CPUs, a busy task on each", checksys_tty_worker, NULL,
	  { WQ("ff,ffffffff\n"), { CPU "/online", "0-40\n" } }, tty_many, CHECKSYS_WARN,
	  "tty-worker", "may run on CPUs 0-39, and busy real-time tasks can hold all of them at "
	  "once: 11", "(99% of a CPU), ...; the tty worker", "echo MASK" },
	{ "... and the 41st CPU's mask", checksys_tty_worker, NULL,
	  { WQ("ff,ffffffff\n"), { CPU "/online", "0-40\n" } }, tty_many, CHECKSYS_WARN,
	  "tty-worker", "; fix: give the mask the CPUs no busy real-time task may use (40): "
	  "echo 100,00000000 > /sys/devices/virtual/workqueue/cpumask", NULL, NULL },
	{ "tty-worker: /proc cannot be listed", checksys_tty_worker, NULL, { WQ("3\n"), PROC1 },
	  proc_eoverflow, CHECKSYS_WARN, "tty-worker", "/proc (EOVERFLOW): which real-time tasks "
	  "can starve the tty worker is unknown", "; fix: this is a 32-bit portlogd", NULL },
	/* stall-sensors: what they cost; no WARN */
	{ "no serial port", checksys_sensors, "[parallel lpt]\ndriver = sim\ndevice = /tmp/x\n",
	  {{0}}, NULL, CHECKSYS_OK, "stall-sensors", "no stall sensors (no [serial] port)", NULL,
	  NULL },
	{ "sensors without a config", checksys_sensors, "", {{0}}, NULL, CHECKSYS_OK,
	  "stall-sensors", "no stall sensors (no [serial] port)", NULL, NULL },
	{ "a reader not pinned", checksys_sensors, NULL, { { CPU "/online", "0-3\n" } }, NULL,
	  CHECKSYS_OK, "stall-sensors", "sensor_period_us = 1000: a thread on each CPU it may "
	  "use (online: 0-3; a reader is not pinned), SCHED_FIFO 97, the readers' lowest: 5000 "
	  "wake-ups a second", "and 1000 runs of the tty worker for the probes; a stall under "
	  "1250 us", NULL },
	{ "pinned readers, 500 us", checksys_sensors, "[logger]\nsensor_period_us = 500\n"
	  PINNED2 "[serial b]\ndevice = /dev/ttyS1\ncpu = 3\npriority = 40\n"
	  "[serial c]\ndevice = /dev/ttyS2\ncpu = 3\n", { { CPU "/online", "0-3\n" } }, NULL,
	  CHECKSYS_OK, "stall-sensors", "a thread on CPUs 2-3 (the readers'), SCHED_FIFO 40, the "
	  "readers' lowest: 6000 wake-ups a second", "2000 runs of the tty worker for the "
	  "probes; a stall under 625 us", "online" },
	{ "SCHED_OTHER readers", checksys_sensors, GPS "priority = other\n",
	  { { CPU "/online", "0\n" } }, NULL, CHECKSYS_OK, "stall-sensors", "online: 0; a reader "
	  "is not pinned), SCHED_OTHER, as a reader: 2000 wake-ups", NULL, NULL },
	/* rlimit-rtprio */
	{ "CAP_SYS_NICE", checksys_rlimit_rtprio, RT_REQ,
	  { { "/proc/self/status", STATUS(CAP_SYS_NICE) }, { "/proc/self/limits", LIMITS("0", "65536") } },
	  NULL, CHECKSYS_OK, "rlimit-rtprio", "CAP_SYS_NICE: SCHED_FIFO at 97 allowed", NULL,
	  NULL },
	{ "RLIMIT_RTPRIO 99", checksys_rlimit_rtprio, RT_REQ,
	  { { "/proc/self/status", STATUS(CAP_NONE) }, { "/proc/self/limits", LIMITS("99", "65536") } },
	  NULL, CHECKSYS_OK, "rlimit-rtprio", "RLIMIT_RTPRIO = 99: SCHED_FIFO at 97 allowed",
	  NULL, NULL },
	{ "RLIMIT_RTPRIO 0, best-effort", checksys_rlimit_rtprio, NULL,
	  { { "/proc/self/status", STATUS(CAP_IPC_LOCK) }, { "/proc/self/limits", LIMITS("0", "65536") } },
	  NULL, CHECKSYS_WARN, "rlimit-rtprio", "no CAP_SYS_NICE and RLIMIT_RTPRIO = 0, below 97",
	  "; fix: AmbientCapabilities=CAP_SYS_NICE or LimitRTPRIO=97", NULL },
	{ "RLIMIT_RTPRIO 50 < timer 99, required", checksys_rlimit_rtprio,
	  "[logger]\nrt = required\n[parallel lpt]\ndevice = parport0\n",
	  { { "/proc/self/status", STATUS(CAP_NONE) }, { "/proc/self/limits", LIMITS("50", "65536") } },
	  NULL, CHECKSYS_FAIL, "rlimit-rtprio", "RLIMIT_RTPRIO = 50, below 99",
	  "rt = required stops the start; fix: ", NULL },
	{ "all SCHED_OTHER", checksys_rlimit_rtprio, GPS "priority = other\n",
	  { { "/proc/self/status", STATUS(CAP_NONE) }, { "/proc/self/limits", LIMITS("0", "65536") } },
	  NULL, CHECKSYS_OK, "rlimit-rtprio", "every thread is SCHED_OTHER", NULL, NULL },
	{ "no /proc/self", checksys_rlimit_rtprio, NULL, {{0}}, NULL, CHECKSYS_WARN,
	  "rlimit-rtprio", "cannot read", "; fix: ", NULL },
	/* rlimit-memlock: against what the config locks (memory.h; gps at 115200: a ring of
	 * 32768 records, 4 MiB, and the rest, about 12 MiB) */
	{ "CAP_IPC_LOCK", checksys_rlimit_memlock, RT_REQ,
	  { { "/proc/self/status", STATUS(CAP_IPC_LOCK) }, { "/proc/self/limits", LIMITS("0", "65536") } },
	  NULL, CHECKSYS_OK, "rlimit-memlock", "CAP_IPC_LOCK: mlockall of the ", " MiB the config "
	  "locks allowed", NULL },
	{ "RLIMIT_MEMLOCK unlimited", checksys_rlimit_memlock, RT_REQ,
	  { { "/proc/self/status", STATUS(CAP_NONE) }, { "/proc/self/limits", LIMITS("0", "unlimited") } },
	  NULL, CHECKSYS_OK, "rlimit-memlock", "RLIMIT_MEMLOCK = unlimited", NULL, NULL },
	{ "RLIMIT_MEMLOCK 1 GiB: above what it locks", checksys_rlimit_memlock, RT_REQ,
	  { { "/proc/self/status", STATUS(CAP_NONE) }, { "/proc/self/limits", LIMITS("0", "1073741824") } },
	  NULL, CHECKSYS_OK, "rlimit-memlock", "RLIMIT_MEMLOCK = 1073741824: mlockall of the ", NULL,
	  NULL },
	{ "RLIMIT_MEMLOCK 8 MiB, best-effort", checksys_rlimit_memlock, NULL,
	  { { "/proc/self/status", STATUS(CAP_SYS_NICE) }, { "/proc/self/limits", LIMITS("0", "8388608") } },
	  NULL, CHECKSYS_WARN, "rlimit-memlock", "no CAP_IPC_LOCK and RLIMIT_MEMLOCK = 8388608 "
	  "bytes, below the 1", "; fix: AmbientCapabilities=CAP_IPC_LOCK or LimitMEMLOCK=infinity", NULL },
	{ "RLIMIT_MEMLOCK 8 MiB, required", checksys_rlimit_memlock, RT_REQ,
	  { { "/proc/self/status", STATUS(CAP_NONE) }, { "/proc/self/limits", LIMITS("0", "8388608") } },
	  NULL, CHECKSYS_FAIL, "rlimit-memlock", "rt = required stops the start", "; fix: ",
	  NULL },
	{ "no limits", checksys_rlimit_memlock, NULL,
	  { { "/proc/self/status", STATUS(CAP_NONE) } }, NULL, CHECKSYS_WARN, "rlimit-memlock",
	  "cannot read", "; fix: ", NULL },
	/* memory: what the config locks against the machine's */
	{ "6 GiB available", checksys_memory, NULL, { MEMINFO("8388608", "6291456") }, NULL,
	  CHECKSYS_OK, "memory", "the config locks about 1", " MiB (2 rings 4.0 MiB, 3 threads' "
	  "stacks 780 KiB, buffers ", "WARN" },
	{ "2 GiB rings, 1 GiB available", checksys_memory, "[logger]\nring_records = 16777216\n" GPS,
	  { MEMINFO("8388608", "1048576") }, NULL, CHECKSYS_FAIL, "memory", "more than the 1.0 GiB "
	  "this machine has available (MemAvailable in /proc/meminfo); fix: lower [logger] "
	  "ring_seconds (now 10) or set ring_records", "the daemon will not start: ", NULL },
	{ "2 GiB rings of 3 GiB", checksys_memory, "[logger]\nring_records = 16777216\n" GPS,
	  { MEMINFO("3145728", "3145728") }, NULL, CHECKSYS_WARN, "memory", "of the 3.0 GiB this "
	  "machine has (3.0 GiB available): more than half", "; fix: lower [logger] ring_seconds",
	  NULL },
	{ "no meminfo", checksys_memory, NULL, {{0}}, NULL, CHECKSYS_WARN, "memory",
	  "cannot read MemAvailable and MemTotal", "; fix: ", NULL },
	/* threads: gps starts 3 (its reader, the flusher, a sensor on the one CPU known) */
	{ "RLIMIT_NPROC 1000", checksys_threads, NULL,
	  { { "/proc/self/status", STATUS_UID("1000") }, { "/proc/self/limits", LIMITS_NPROC("1000") },
	    { "/proc/sys/kernel/threads-max", "60000\n" }, { "/proc/loadavg", LOADAVG("300") } },
	  NULL, CHECKSYS_OK, "threads", "the config starts 3 threads: RLIMIT_NPROC 1000, "
	  "kernel.threads-max 60000 (300 now)", NULL, NULL },
	{ "root, a cgroup with room", checksys_threads, NULL,
	  { { "/proc/self/status", STATUS_UID("0") }, { "/proc/self/limits", LIMITS_NPROC("3") },
	    { "/proc/self/cgroup", "0::/system.slice/portlogd.service\n" },
	    { "/sys/fs/cgroup/system.slice/portlogd.service/pids.max", "100\n" },
	    { "/sys/fs/cgroup/system.slice/portlogd.service/pids.current", "1\n" } },
	  NULL, CHECKSYS_OK, "threads", "root: no RLIMIT_NPROC, the cgroup's pids.max 100 (1 now)",
	  NULL, NULL },
	{ "RLIMIT_NPROC 3", checksys_threads, NULL,
	  { { "/proc/self/status", STATUS_UID("1000") }, { "/proc/self/limits", LIMITS_NPROC("3") } },
	  NULL, CHECKSYS_FAIL, "threads", "the config starts 3 threads, more than RLIMIT_NPROC (3) "
	  "lets this user run; fix: raise it (LimitNPROC=", "the daemon will not start: ", NULL },
	{ "TasksMax 3, 2 taken", checksys_threads, NULL,
	  { { "/proc/self/status", STATUS_UID("0") },
	    { "/proc/self/cgroup", "0::/system.slice/portlogd.service\n" },
	    { "/sys/fs/cgroup/system.slice/portlogd.service/pids.max", "3\n" },
	    { "/sys/fs/cgroup/system.slice/portlogd.service/pids.current", "2\n" } },
	  NULL, CHECKSYS_FAIL, "threads", "the service's cgroup has room for 1 more (pids.max 3, "
	  "pids.current 2); fix: raise TasksMax=", NULL, NULL },
	{ "kernel.threads-max all but taken", checksys_threads, NULL,
	  { { "/proc/self/status", STATUS_UID("0") }, { "/proc/sys/kernel/threads-max", "300\n" },
	    { "/proc/loadavg", LOADAVG("299") } },
	  NULL, CHECKSYS_FAIL, "threads", "the kernel has room for 1 more (kernel.threads-max 300, "
	  "299 tasks now)", NULL, NULL },
	{ "nothing readable", checksys_threads, NULL, {{0}}, NULL, CHECKSYS_WARN, "threads",
	  "cannot read", "; fix: ", NULL },
	/* clocksource */
	{ "tsc", checksys_clocksource, NULL, { { CLK "/current_clocksource", "tsc\n" } }, NULL,
	  CHECKSYS_OK, "clocksource", "tsc: read in user space", NULL, NULL },
	{ "kvm-clock", checksys_clocksource, NULL, { { CLK "/current_clocksource", "kvm-clock\n" } },
	  NULL, CHECKSYS_OK, "clocksource", "kvm-clock: a virtual machine's paravirtual clock",
	  NULL, NULL },
	{ "hpet", checksys_clocksource, NULL, { { CLK "/current_clocksource", "hpet\n" },
	  { CLK "/available_clocksource", "tsc hpet acpi_pm \n" } }, NULL, CHECKSYS_WARN,
	  "clocksource", "hpet (available: tsc hpet acpi_pm): every timestamp is a system call",
	  "; fix: if the TSC is stable", NULL },
	{ "no clocksource", checksys_clocksource, NULL, {{0}}, NULL, CHECKSYS_WARN, "clocksource",
	  "cannot read", "; fix: ", NULL },
	/* apparmor: the module's switch, this process's label, the kernel's profile list */
#define AA_ON { "/sys/module/apparmor/parameters/enabled", "Y\n" }
#define AA_LIST "/sys/kernel/security/apparmor/profiles"
#define AA_SELF "/proc/self/attr/apparmor/current"
	{ "apparmor off in the kernel", checksys_apparmor, NULL,
	  { { "/sys/module/apparmor/parameters/enabled", "N\n" },
	    { AA_SELF, "/usr/sbin/portlogd (enforce)\n" } }, NULL, CHECKSYS_OK, "apparmor",
	  "not loaded: AppArmor is off in this kernel", NULL, "enforce" },
	{ "apparmor not in the kernel", checksys_apparmor, NULL, {{0}}, NULL, CHECKSYS_OK,
	  "apparmor", "not loaded: AppArmor is off", NULL, NULL },
	{ "apparmor: confined, enforce", checksys_apparmor, NULL,
	  { AA_ON, { AA_SELF, "/usr/sbin/portlogd (enforce)\n" } }, NULL, CHECKSYS_OK,
	  "apparmor", "enforce: this process runs confined by the profile /usr/sbin/portlogd "
	  "(enforce)", NULL, "fix" },
	{ "apparmor: confined, enforce, a kernel before 5.8 (attr/current only)",
	  checksys_apparmor, NULL,
	  { AA_ON, { "/proc/self/attr/current", "/usr/sbin/portlogd (enforce)\n" } }, NULL,
	  CHECKSYS_OK, "apparmor", "enforce: ", NULL, NULL },
	{ "apparmor: confined, complain", checksys_apparmor, NULL,
	  { AA_ON, { AA_SELF, "/usr/sbin/portlogd (complain)\n" } }, NULL, CHECKSYS_WARN,
	  "apparmor", "complain: this process runs as /usr/sbin/portlogd (complain), which logs",
	  "; fix: aa-enforce /etc/apparmor.d/usr.sbin.portlogd", NULL },
	{ "apparmor: unconfined, the profile loaded after the start", checksys_apparmor, NULL,
	  { AA_ON, { AA_SELF, "unconfined\n" },
	    { AA_LIST, "/usr/sbin/gpsd (enforce)\n/usr/sbin/portlogd (enforce)\nman_groff (enforce)\n" } },
	  NULL, CHECKSYS_WARN, "apparmor", "unconfined: the profile /usr/sbin/portlogd is loaded "
	  "(enforce) but this process is not in it", "; fix: systemctl restart portlogd", NULL },
	{ "apparmor: unconfined, the profile installed, not loaded", checksys_apparmor, NULL,
	  { AA_ON, { AA_SELF, "unconfined\n" }, { AA_LIST, "/usr/sbin/gpsd (enforce)\n" },
	    { "/etc/apparmor.d/usr.sbin.portlogd", "/usr/sbin/portlogd {\n}\n" } },
	  NULL, CHECKSYS_WARN, "apparmor", "not loaded: /etc/apparmor.d/usr.sbin.portlogd is "
	  "installed but not in the kernel", "; fix: apparmor_parser -r", NULL },
	{ "apparmor: unconfined, no profile installed (a build from source)", checksys_apparmor,
	  NULL, { AA_ON, { AA_SELF, "unconfined\n" }, { AA_LIST, "/usr/sbin/gpsd (enforce)\n" } },
	  NULL, CHECKSYS_OK, "apparmor", "unconfined: no profile /etc/apparmor.d/usr.sbin.portlogd",
	  NULL, NULL },
	{ "apparmor: unconfined, no profile list (securityfs not mounted)", checksys_apparmor, NULL,
	  { AA_ON, { AA_SELF, "unconfined\n" } }, NULL, CHECKSYS_OK, "apparmor",
	  "unconfined: whether the profile is loaded only root may read", "ENOENT", NULL },
	/* clock: the daemons below ROOT/proc, the kernel's state through the wrapped adjtimex */
	{ "clock synced, chronyd", checksys_clock, NULL,
	  { { "/proc/812/comm", "chronyd\n" }, { "/proc/1/comm", "systemd\n" } }, clock_synced,
	  CHECKSYS_OK, "clock", "synchronised (chronyd runs): maximum error 1500 us, estimated "
	  "error 40 us", NULL, "leap" },
	{ "clock synced, STA_UNSYNC set (chrony without rtcsync)", checksys_clock, NULL,
	  { { "/proc/812/comm", "chronyd\n" } }, clock_synced_unsync_flag, CHECKSYS_OK, "clock",
	  "synchronised (chronyd runs): maximum error 1500 us", NULL, NULL },
	{ "clock synced, ptp4l and phc2sys, leap second", checksys_clock, NULL,
	  { { "/proc/700/comm", "ptp4l\n" }, { "/proc/701/comm", "phc2sys\n" } },
	  clock_synced_leap, CHECKSYS_OK, "clock", "synchronised (ptp4l, phc2sys runs)",
	  "a leap second is announced", NULL },
	{ "clock synced, no daemon here", checksys_clock, NULL, {{0}}, clock_synced, CHECKSYS_OK,
	  "clock", "synchronised (no synchronisation daemon found here", NULL, NULL },
	{ "clock unsynced, systemd-timesyncd (comm cut at 15)", checksys_clock, NULL,
	  { { "/proc/530/comm", "systemd-timesyn\n" } }, clock_unsynced, CHECKSYS_WARN, "clock",
	  "systemd-timesyncd runs, but the clock is not synchronised (maximum error 16000000 us)",
	  "; fix: check its sources and the network (chronyc sources", NULL },
	{ "clock unsynced, no daemon", checksys_clock, NULL, { { "/proc/1/comm", "init\n" } },
	  clock_unsynced, CHECKSYS_WARN, "clock", "no time synchronisation daemon runs",
	  "; fix: apt install chrony (or systemctl enable --now systemd-timesyncd)", NULL },
	{ "clock state refused (a seccomp filter)", checksys_clock, NULL,
	  { { "/proc/900/comm", "ntpd\n" } }, clock_refused, CHECKSYS_WARN, "clock",
	  "ntpd; cannot read the clock's synchronisation state (adjtimex: EPERM)",
	  "; fix: allow adjtimex and clock_adjtime", NULL },
	/* port:NAME (not readable and writable: test_unprivileged) */
	{ "serial device present", serial_device, NULL, { { "/dev/ttyS0", "" } }, NULL,
	  CHECKSYS_OK, "port:gps", "/dev/ttyS0: readable and writable by uid", NULL, "->" },
	{ "serial device missing", serial_device, NULL, {{0}}, NULL, CHECKSYS_FAIL, "port:gps",
	  "/dev/ttyS0: no such device", "; fix: plug it in, or correct [serial gps] device",
	  NULL },
	{ "by-id link, relative", serial_device,
	  "[serial gps]\ndevice = /dev/serial/by-id/usb-FTDI_FT232R-if00-port0\n", { FTDI_LINK },
	  NULL, CHECKSYS_OK, "port:gps", "usb-FTDI_FT232R-if00-port0 -> /dev/ttyUSB0: readable "
	  "and writable", NULL, NULL },
	{ "absolute link stays in the root", serial_device, "[serial gps]\ndevice = /dev/gps\n",
	  { { "/dev/gps", "-> /dev/ttyUSB3" }, { "/dev/ttyUSB3", "" } }, NULL, CHECKSYS_OK,
	  "port:gps", "/dev/gps -> /dev/ttyUSB3: readable and writable", NULL, NULL },
	{ "dangling link", serial_device, "[serial gps]\ndevice = /dev/gps\n",
	  { { "/dev/gps", "-> ttyUSB3" } }, NULL, CHECKSYS_FAIL, "port:gps",
	  "/dev/gps -> /dev/ttyUSB3: no such device", "; fix: ", NULL },
	{ "link loop", serial_device, "[serial gps]\ndevice = /dev/gps\n",
	  { { "/dev/gps", "-> /dev/gps" } }, NULL, CHECKSYS_FAIL, "port:gps", "ELOOP", "; fix: ",
	  NULL },
	/* port:NAME:tx..., the tap's second port (tx_device): the same checks */
	{ "tap port present", serial_tx, TAP, { { "/dev/ttyS0", "" }, { "/dev/ttyS1", "" } }, NULL,
	  CHECKSYS_OK, "port:gps:tx", "/dev/ttyS1: readable and writable by uid", NULL, NULL },
	{ "tap port missing", serial_tx, TAP, { { "/dev/ttyS0", "" } }, NULL, CHECKSYS_FAIL,
	  "port:gps:tx", "/dev/ttyS1: no such device", "correct [serial gps] tx_device", NULL },
	{ "tap port's low latency", serial_tx_low_latency, TAP,
	  { { "/dev/ttyS1", "" }, { "/sys/class/tty/ttyS1/flags", "0x10002040\n" } }, NULL,
	  CHECKSYS_OK, "port:gps:tx:low-latency", "/dev/ttyS1: ASYNC_LOW_LATENCY set", NULL, NULL },
	{ "tap port's irq not threaded", serial_tx_irq, TAP,
	  { UART4, { "/dev/ttyS1", "" }, { "/sys/class/tty/ttyS1/irq", "3\n" }, PROC1 }, NULL,
	  CHECKSYS_OK, "port:gps:tx:irq", "irq 3 is not threaded", NULL, NULL },
	{ "tap port's irq, RT, irq_priority off", serial_tx_irq, TAP "irq_priority = off\n",
	  { UART4, { "/dev/ttyS1", "" }, { "/sys/class/tty/ttyS1/irq", "3\n" }, RT_ON, CAPS_NICE },
	  NULL, CHECKSYS_WARN, "port:gps:tx:irq", "irq 3: its thread starts when the port is "
	  "opened, at SCHED_FIFO 50 unless set", "irq_priority = auto", NULL },
	{ "no tap port", serial_tx, NULL, { { "/dev/ttyS0", "" } }, NULL, CHECKSYS_OK, "",
	  SKIPPED, NULL, NULL },
	/* port:NAME:pass */
	{ "pass: can be made", serial_pass, PASS,
	  { { "/dev/ptmx", "" }, { "/run/portlogd/.keep", "" } }, NULL, CHECKSYS_OK,
	  "port:gps:pass", "/run/portlogd/gps: the link to a new pty can be made "
	  "(/run/portlogd writable)", NULL, NULL },
	{ "pass: directories to make", serial_pass, PASS, { { "/dev/ptmx", "" }, { "/run/.keep", "" } },
	  NULL, CHECKSYS_OK, "port:gps:pass", "(/run writable)", NULL, NULL },
	{ "pass: no /dev/ptmx", serial_pass, PASS, { { "/run/portlogd/.keep", "" } }, NULL,
	  CHECKSYS_FAIL, "port:gps:pass", "/dev/ptmx: ENOENT", "DeviceAllow=/dev/ptmx", NULL },
	{ "pass: a file at its path", serial_pass, PASS,
	  { { "/dev/ptmx", "" }, { "/run/portlogd/gps", "x" } }, NULL, CHECKSYS_FAIL,
	  "port:gps:pass", "/run/portlogd/gps exists and is not a symbolic link", "; fix: remove it",
	  NULL },
	{ "no pass", serial_pass, NULL, {{0}}, NULL, CHECKSYS_OK, "", SKIPPED, NULL, NULL },
	/* metrics-file (not writable by the service user: test_unprivileged) */
	{ "metrics: directory writable", metrics_file, METRICS, { { TEXTFILE_DIR "/.keep", "" } },
	  NULL, CHECKSYS_OK, "metrics-file", TEXTFILE_DIR "/portlogd.prom: " TEXTFILE_DIR
	  " writable by uid", "--collector.textfile.directory is " TEXTFILE_DIR, NULL },
	{ "metrics: no directory", metrics_file, METRICS, {{0}}, NULL, CHECKSYS_FAIL,
	  "metrics-file", "no directory " TEXTFILE_DIR " (ENOENT)",
	  "; fix: install prometheus-node-exporter", NULL },
	{ "metrics: a file for a directory", metrics_file, METRICS, { { TEXTFILE_DIR, "x" } }, NULL,
	  CHECKSYS_FAIL, "metrics-file", "no directory " TEXTFILE_DIR " (ENOTDIR)", NULL, NULL },
	{ "no metrics file", metrics_file, NULL, {{0}}, NULL, CHECKSYS_OK, "", SKIPPED, NULL, NULL },
	/* port:NAME:low-latency */
	{ "ASYNC_LOW_LATENCY set", serial_low_latency, NULL,
	  { { "/dev/ttyS0", "" }, { "/sys/class/tty/ttyS0/flags", "0x10002040\n" } }, NULL,
	  CHECKSYS_OK, "port:gps:low-latency", "/dev/ttyS0: ASYNC_LOW_LATENCY set", NULL, NULL },
	{ "ASYNC_LOW_LATENCY not set", serial_low_latency, NULL,
	  { { "/dev/ttyS0", "" }, { "/sys/class/tty/ttyS0/flags", "0x10000040\n" } }, NULL,
	  CHECKSYS_OK, "port:gps:low-latency", "ASYNC_LOW_LATENCY not set yet (flags 0x10000040)",
	  "portlogd sets it when it opens the port", NULL },
	{ "a pty", serial_low_latency, "[serial gps]\ndevice = /dev/pts/3\n",
	  { { "/dev/pts/3", "" }, { "/sys/class/tty/ttyS0/flags", "0x10000040\n" } }, NULL,
	  CHECKSYS_OK, "port:gps:low-latency", "n/a: /dev/pts/3 is not a UART", NULL, NULL },
	{ "USB serial", serial_low_latency, "[serial gps]\ndevice = /dev/ttyUSB0\n",
	  { { "/dev/ttyUSB0", "" }, { "/sys/bus/usb-serial/devices/ttyUSB0/latency_timer", "16\n" } },
	  NULL, CHECKSYS_OK, "port:gps:low-latency", "not a UART (USB serial, see ftdi-latency)",
	  NULL, NULL },
	{ "low-latency: device missing", serial_low_latency, NULL, {{0}}, NULL, CHECKSYS_OK, "",
	  SKIPPED, NULL, NULL },
	/* port:NAME:ftdi-latency */
	{ "FTDI latency 1", serial_ftdi,
	  "[serial gps]\ndevice = /dev/serial/by-id/usb-FTDI_FT232R-if00-port0\n",
	  { FTDI_LINK, { "/sys/bus/usb-serial/devices/ttyUSB0/latency_timer", "1\n" } }, NULL,
	  CHECKSYS_OK, "port:gps:ftdi-latency", "ttyUSB0: FTDI latency_timer = 1 ms", NULL, NULL },
	{ "FTDI latency 16, writable", serial_ftdi,
	  "[serial gps]\ndevice = /dev/serial/by-id/usb-FTDI_FT232R-if00-port0\n",
	  { FTDI_LINK, { "/sys/bus/usb-serial/devices/ttyUSB0/latency_timer", "16\n" } }, NULL,
	  CHECKSYS_OK, "port:gps:ftdi-latency", "ttyUSB0: FTDI latency_timer = 16 ms; portlogd "
	  "sets it to 1 ms when it opens the port", NULL, NULL },
	{ "not FTDI", serial_ftdi, "[serial gps]\ndevice = /dev/ttyUSB0\n",
	  { { "/dev/ttyUSB0", "" } }, NULL, CHECKSYS_OK, "", SKIPPED, NULL, NULL },
	/* port:NAME:delivery */
	{ "16550A at trigger 8, writable", serial_delivery, GPS "baud = 9600\n", { A16550("8\n") },
	  NULL, CHECKSYS_OK, "port:gps:delivery", "16550A: receive trigger 8 now; portlogd sets 1 "
	  "when it opens the port (EV open rx_trigger=), and puts 8 back", NULL, NULL },
	{ "16550A at trigger 1", serial_delivery, NULL, { A16550("1\n") }, NULL, CHECKSYS_OK,
	  "port:gps:delivery", "16550A at receive trigger 1: each byte reaches the reader as it "
	  "comes", NULL, NULL },
	{ "16550A at trigger 8, rx_trigger = keep", serial_delivery,
	  GPS "baud = 9600\nrx_trigger = keep\n", { A16550("8\n") }, NULL, CHECKSYS_WARN,
	  "port:gps:delivery", "16550A: receive trigger 8, kept (rx_trigger = keep): the FIFO holds "
	  "bytes up to 33333 us unseen; boundaries are judged in wire time (gap 3125 us), a boundary "
	  "within 36979 us of the packet before is inferred and marked", "; fix: rx_trigger = auto",
	  NULL },
	{ "a FIFO whose level Linux does not show", serial_delivery, GPS "baud = 9600\n",
	  { { "/dev/ttyS0", "" }, { "/sys/class/tty/ttyS0/type", "14\n" },
	    { "/sys/class/tty/ttyS0/xmit_fifo_size", "16\n" } }, NULL, CHECKSYS_WARN,
	  "port:gps:delivery", "NS16550A: a 16-byte FIFO whose receive trigger level Linux does not "
	  "show: taken as the whole FIFO", "; fix: delivery = fifo:N", NULL },
	{ "an FTDI adapter", serial_delivery,
	  "[serial gps]\ndevice = /dev/serial/by-id/usb-FTDI_FT232R-if00-port0\n",
	  { FTDI_LINK, { "/sys/bus/usb-serial/devices/ttyUSB0/latency_timer", "1\n" },
	    { "/sys/class/tty/ttyUSB0/device/driver", "-> ../../../bus/usb-serial/drivers/ftdi_sio" } },
	  NULL, CHECKSYS_OK, "port:gps:delivery", "ftdi_sio: USB adapter holding a byte up to 2000 "
	  "us (its latency timer and a USB frame): boundaries judged in wire time, gap 4000 us",
	  NULL, NULL },
	{ "a CDC-ACM device", serial_delivery, "[serial gps]\ndevice = /dev/ttyACM0\n",
	  { { "/dev/ttyACM0", "" }, { "/sys/class/tty/ttyACM0/device/driver",
				     "-> ../../../../bus/usb/drivers/cdc_acm" } }, NULL,
	  CHECKSYS_WARN, "port:gps:delivery", "cdc_acm: USB adapter whose hold Linux does not show: "
	  "taken as 16000 us until its traffic shows it (EV delivery), so the gap is 32000 us",
	  "; fix: portlogd --calibrate /dev/ttyACM0 --baud 115200 through a loopback plug", NULL },
	{ "a pty", serial_delivery, "[serial gps]\ndevice = /dev/pts/3\n", { { "/dev/pts/3", "" } },
	  NULL, CHECKSYS_OK, "port:gps:delivery", "pty: each byte reaches the reader as it comes",
	  NULL, NULL },
	{ "delivery in the config", serial_delivery, GPS "delivery = fifo:8\n", { A16550("8\n") },
	  NULL, CHECKSYS_OK, "port:gps:delivery", "delivery = fifo:8 in the config (16550A): "
	  "boundaries judged in wire time", NULL, NULL },
	{ "nothing shown", serial_delivery, NULL, { { "/dev/ttyS0", "" } }, NULL, CHECKSYS_WARN,
	  "port:gps:delivery", "/dev/ttyS0: Linux shows neither a UART's FIFO nor a USB adapter",
	  "; fix: delivery = fifo:N or usb:MS", NULL },
	{ "delivery: device missing", serial_delivery, NULL, {{0}}, NULL, CHECKSYS_OK, "",
	  SKIPPED, NULL, NULL },
	/* port:NAME:irq */
	{ "irq: a pty", serial_irq, "[serial gps]\ndevice = /dev/pts/3\n", { { "/dev/pts/3", "" } },
	  NULL, CHECKSYS_OK, "port:gps:irq", "n/a: a pseudo-terminal has no interrupt", NULL, NULL },
	{ "irq: a USB adapter", serial_irq, "[serial gps]\ndevice = /dev/ttyUSB0\n",
	  { { "/dev/ttyUSB0", "" } }, NULL, CHECKSYS_OK, "port:gps:irq", "n/a: a USB adapter has "
	  "no interrupt of its own", NULL, NULL },
	{ "irq 0", serial_irq, NULL, { { "/dev/ttyS0", "" }, { TTYS0_IRQ, "0\n" } }, NULL,
	  CHECKSYS_OK, "port:gps:irq", "n/a: no interrupt line", NULL, NULL },
	{ "irq: device missing", serial_irq, NULL, {{0}}, NULL, CHECKSYS_OK, "", SKIPPED, NULL,
	  NULL },
	{ "irq not threaded", serial_irq, NULL, { UART4, PROC1 }, NULL, CHECKSYS_OK,
	  "port:gps:irq", "irq 4 is not threaded (no PREEMPT_RT, no threadirqs)", NULL, NULL },
	{ "/proc cannot be listed", serial_irq, NULL, { UART4, PROC1, RT_ON, CAPS_NICE },
	  proc_eoverflow, CHECKSYS_WARN, "port:gps:irq", "irq 4: its threads cannot be looked "
	  "for: /proc cannot be listed (EOVERFLOW)", "; fix: this is a 32-bit portlogd built "
	  "without 64-bit file offsets", NULL },
	{ "RT, thread not yet there, auto", serial_irq, NULL, { UART4, RT_ON, CAPS_NICE }, NULL,
	  CHECKSYS_OK, "port:gps:irq", "irq 4: its thread starts when the port is opened", "portlogd "
	  "sets it to SCHED_FIFO 98, above the reader's 97", NULL },
	{ "threadirqs, thread not yet there, no CAP_SYS_NICE", serial_irq, NULL,
	  { UART4, { "/proc/cmdline", "root=/dev/sda1 threadirqs quiet\n" },
	    { "/proc/self/status", STATUS(CAP_NONE) } }, NULL, CHECKSYS_WARN, "port:gps:irq",
	  "portlogd cannot set it (no CAP_SYS_NICE)", "; fix: AmbientCapabilities=CAP_SYS_NICE",
	  NULL },
	{ "RT, thread not yet there, irq_priority off", serial_irq, GPS "irq_priority = off\n",
	  { UART4, RT_ON, CAPS_NICE }, NULL, CHECKSYS_WARN, "port:gps:irq", "at SCHED_FIFO 50 "
	  "unless set, and the reader runs at 97", "; fix: [serial gps] irq_priority = auto", NULL },
	{ "RT, threads hidden by hidepid", serial_irq, NULL,
	  { UART4, RT_ON, { "/proc/self/mountinfo", "22 27 0:21 / /proc rw,nosuid - proc proc "
	    "rw,hidepid=invisible\n" } }, NULL, CHECKSYS_WARN, "port:gps:irq", "its threads "
	  "cannot be seen", "; fix: ProtectProc=default", NULL },
	{ "threads at 50, auto raises them", serial_irq, NULL, { UART4, RT_ON, CAPS_NICE },
	  irq4_at_50, CHECKSYS_OK, "port:gps:irq", "irq 4: irq/4-ttyS0 (pid 57) SCHED_FIFO 50, "
	  "irq/4-ehci_hcd (pid 58) SCHED_FIFO 50, not above the reader's 97; portlogd sets "
	  "SCHED_FIFO 98 at open", NULL, "eth0" },
	{ "threads at 50, off", serial_irq, GPS "irq_priority = off\n", { UART4, RT_ON, CAPS_NICE },
	  irq4_at_50, CHECKSYS_WARN, "port:gps:irq", "not above the reader's 97: a busy reader",
	  "; fix: [serial gps] irq_priority = auto (or 98), or chrt -f -p 98 57", NULL },
	{ "threads at 50, [logger] off", serial_irq, "[logger]\nirq_priority = off\n" GPS,
	  { UART4, RT_ON, CAPS_NICE }, irq4_at_50, CHECKSYS_WARN, "port:gps:irq", "not above the "
	  "reader's 97", NULL, NULL },
	{ "threads at 50, no CAP_SYS_NICE", serial_irq, NULL,
	  { UART4, RT_ON, { "/proc/self/status", STATUS(CAP_NONE) } }, irq4_at_50, CHECKSYS_WARN,
	  "port:gps:irq", "portlogd cannot raise it to 98 (no CAP_SYS_NICE)", "; fix: "
	  "AmbientCapabilities=CAP_SYS_NICE", NULL },
	{ "thread at 99", serial_irq, GPS "irq_priority = off\n", { UART4, RT_ON }, irq4_at_99,
	  CHECKSYS_OK, "port:gps:irq", "irq/4-ttyS0 (pid 57) SCHED_FIFO 99, above the reader's 97",
	  NULL, NULL },
	{ "a shared line: the lowest thread counts", serial_irq, GPS "irq_priority = off\n",
	  { UART4, RT_ON }, irq4_mixed, CHECKSYS_WARN, "port:gps:irq", "irq/4-ehci_hcd (pid 58) "
	  "SCHED_FIFO 50, not above", "chrt -f -p 98 58", NULL },
	{ "reader SCHED_OTHER", serial_irq, GPS "priority = other\n", { UART4, RT_ON }, irq4_at_50,
	  CHECKSYS_OK, "port:gps:irq", "the reader is SCHED_OTHER, every IRQ thread comes first",
	  NULL, NULL },
	{ "pinned reader, its interrupt elsewhere", serial_irq, GPS "cpu = 1\n",
	  { UART4, { "/proc/irq/4/smp_affinity_list", "0-1\n" },
	    { "/proc/irq/4/effective_affinity_list", "0\n" } }, NULL, CHECKSYS_WARN,
	  "port:gps:irq", "is not threaded", "irq 4 goes to CPUs 0, the reader runs on CPU 1: a "
	  "byte's wake-up may cross CPUs", NULL },
	{ "... and the fix", serial_irq, GPS "cpu = 1\n",
	  { UART4, { "/proc/irq/4/effective_affinity_list", "0\n" } }, NULL, CHECKSYS_WARN,
	  "port:gps:irq", "; fix: echo 1 > /proc/irq/4/smp_affinity_list", NULL, NULL },
	{ "pinned reader, its interrupt there", serial_irq, GPS "cpu = 1\n",
	  { UART4, { "/proc/irq/4/smp_affinity_list", "1\n" } }, NULL, CHECKSYS_OK,
	  "port:gps:irq", "; irq 4 goes to CPU 1, the reader's", NULL, NULL },
	{ "both wrong: two fixes", serial_irq, GPS "cpu = 1\nirq_priority = off\n",
	  { UART4, RT_ON, { "/proc/irq/4/effective_affinity_list", "0\n" } }, irq4_at_50,
	  CHECKSYS_WARN, "port:gps:irq", "; fix: [serial gps] irq_priority = auto (or 98), or "
	  "chrt -f -p 98 57; and echo 1 > /proc/irq/4/smp_affinity_list", NULL, NULL },
	{ "parport without an interrupt", parallel_irq, "[parallel lpt]\ndevice = parport0\n",
	  { { "/proc/sys/dev/parport/parport0/irq", "-1\n" } }, NULL, CHECKSYS_OK, "port:lpt:irq",
	  "n/a: no interrupt line", NULL, NULL },
	{ "parport irq 7 at 50", parallel_irq, "[parallel lpt]\ndevice = parport0\n",
	  { PARPORT7, RT_ON }, irq7_at_50, CHECKSYS_OK, "port:lpt:irq", "irq/7-parport0 (pid 70) "
	  "SCHED_FIFO 50, below the sampler's 98: it cannot delay a sample", NULL, NULL },
	{ "parport irq 7 set to 99", parallel_irq,
	  "[parallel lpt]\ndevice = parport0\nirq_priority = 99\n", { PARPORT7, RT_ON }, irq7_at_50,
	  CHECKSYS_WARN, "port:lpt:irq", "at or above the sampler's 98", "; fix: irq_priority = "
	  "off and chrt -f -p 50 70, or irq_priority = 97", NULL },
	{ "sim port", parallel_irq, "[parallel lpt]\ndriver = sim\ndevice = /tmp/x.sim\n",
	  {{0}}, NULL, CHECKSYS_OK, "port:lpt:irq", "n/a: a simulated port has no interrupt", NULL,
	  NULL },
	/* port:NAME of [parallel] */
	{ "parport0 present", parallel_device, "[parallel lpt]\ndevice = parport0\n",
	  { { "/dev/parport0", "" } }, NULL, CHECKSYS_OK, "port:lpt", "/dev/parport0: readable "
	  "and writable", NULL, NULL },
	/* the driver opens /dev/parport0 by its name parport0: not /dev//dev/parport0 */
	{ "/dev/parport0 present", parallel_device, "[parallel lpt]\ndevice = /dev/parport0\n",
	  { { "/dev/parport0", "" } }, NULL, CHECKSYS_OK, "port:lpt", "/dev/parport0: readable "
	  "and writable", NULL, NULL },
	{ "parport0 missing", parallel_device, "[parallel lpt]\ndevice = parport0\n", {{0}}, NULL,
	  CHECKSYS_FAIL, "port:lpt", "/dev/parport0: no such device", "; fix: modprobe "
	  "parport_pc ppdev", NULL },
	{ "lines tty present", parallel_device,
	  "[parallel lpt]\ndriver = lines\ndevice = /dev/ttyS1\n", { { "/dev/ttyS1", "" } }, NULL,
	  CHECKSYS_OK, "port:lpt", "/dev/ttyS1: readable and writable", NULL, NULL },
	{ "lines tty missing", parallel_device,
	  "[parallel lpt]\ndriver = lines\ndevice = /dev/ttyS1\n", {{0}}, NULL, CHECKSYS_FAIL,
	  "port:lpt", "/dev/ttyS1: no such device", "; fix: plug it in, or correct [parallel "
	  "lpt] device", NULL },
	{ "sim file present", parallel_device,
	  "[parallel lpt]\ndriver = sim\ndevice = /run/portlogd/lpt.sim\n",
	  { { "/run/portlogd/lpt.sim", "\xff\x00" } }, NULL, CHECKSYS_OK, "port:lpt",
	  "/run/portlogd/lpt.sim: readable and writable", NULL, NULL },
	{ "sim file to be created", parallel_device,
	  "[parallel lpt]\ndriver = sim\ndevice = /run/portlogd/lpt.sim\n",
	  { { "/run/portlogd/other", "" } }, NULL, CHECKSYS_OK, "port:lpt",
	  "/run/portlogd/lpt.sim: will be created (directory /run/portlogd writable)", NULL,
	  NULL },
	{ "sim directory missing", parallel_device,
	  "[parallel lpt]\ndriver = sim\ndevice = /run/portlogd/lpt.sim\n", {{0}}, NULL,
	  CHECKSYS_FAIL, "port:lpt", "cannot create it, directory /run/portlogd: ENOENT",
	  "; fix: create the directory", NULL },
};

static const char *const level_name[] = { "OK", "WARN", "FAIL" };

/* NULL when r is as expected, else what is wrong (in a static buffer). */
static const char *mismatch(const struct checksys_result *r, enum checksys_level level,
			    const char *name, const char *has, const char *has2, const char *lacks)
{
	static char why[CHECKSYS_TEXT_MAX + 256];

	if (r->level != level)
		snprintf(why, sizeof(why), "level %s, expected %s", level_name[r->level],
			 level_name[level]);
	else if (name[0] != '\0' && strcmp(r->name, name) != 0)
		snprintf(why, sizeof(why), "name '%s', expected '%s'", r->name, name);
	else if (strstr(r->text, has) == NULL || (has2 != NULL && strstr(r->text, has2) == NULL))
		snprintf(why, sizeof(why), "text lacks '%s'%s%s", has, has2 ? " or " : "",
			 has2 ? has2 : "");
	else if (lacks != NULL && strstr(r->text, lacks) != NULL)
		snprintf(why, sizeof(why), "text has '%s'", lacks);
	/* the report's contract: every WARN and FAIL says how to mend it */
	else if (level != CHECKSYS_OK && strstr(r->text, "; fix: ") == NULL)
		snprintf(why, sizeof(why), "a %s without '; fix: '", level_name[level]);
	else
		return NULL;
	return why;
}

static void expect(const char *what, const struct checksys_result *r, enum checksys_level level,
		   const char *name, const char *has, const char *has2, const char *lacks)
{
	const char *why = mismatch(r, level, name, has, has2, lacks);

	if (why != NULL)
		fail_msg("%s: %s: %s %s %s", what, why, level_name[r->level], r->name, r->text);
}

/* Every row, each on a fresh tree; all mismatches are printed before the test fails. */
static void test_rows(void **state)
{
	unsigned bad = 0, left_out = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *w = &rows[i];
		struct checksys_result r = { .level = CHECKSYS_OK };
		const char *why;

#ifndef PORTLOGD_IEEE1284
		/* the config would be refused: 'ieee1284' is not compiled in */
		if (w->conf != NULL && tu_needs_ieee1284(w->conf)) {
			left_out++;
			continue;
		}
#endif
		fx_begin(w->conf == NULL ? GPS : w->conf[0] == '\0' ? NULL : w->conf);
		for (int f = 0; f < 16 && w->file[f].path != NULL; f++)
			fx_write(w->file[f].path, w->file[f].text);
		if (w->prep != NULL)
			w->prep();
		w->check(&cs, &r);
		why = mismatch(&r, w->level, w->name, w->has, w->has2, w->lacks);
		if (why != NULL) {
			print_error("%s: %s:\n    %s %s %s\n", w->what, why, level_name[r.level],
				    r.name, r.text);
			bad++;
		}
		fx_end();
	}
	if (left_out > 0)
		printf("# built without libieee1284: %u rows of the ieee1284 driver left out\n",
		       left_out);
	if (bad > 0)
		fail_msg("%u of %zu rows differ", bad, sizeof(rows) / sizeof(rows[0]));
}

/* Every check name has an OK row and a WARN or FAIL row (the FTDI WARN, which
 * needs another user, is in test_unprivileged). low-latency has no WARN: the
 * daemon sets the flag itself, as any user who may open the port may; nor
 * stall-sensors: it says what they cost. */
static void test_rows_cover_every_check(void **state)
{
	static const char *const names[] = {
		"config", "kernel-rt", "rt-throttle", "cpufreq", "cpuidle", "cpu-dma-latency",
		"smt", "isolation", "irqbalance", "rt-tasks", "tty-worker", "clock-sensor",
		"rlimit-rtprio",
		"rlimit-memlock", "memory", "threads",
		"clocksource", "clock", "apparmor", "port:gps", "port:gps:tx", "port:gps:tx:irq", "port:gps:pass",
		"port:gps:delivery", "metrics-file",
		"port:lpt", "port:gps:irq", "port:lpt:irq",
	};
	(void)state;
	for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
		bool ok = false, bad = false;

		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
			if (strcmp(rows[i].name, names[n]) == 0) {
				ok |= rows[i].level == CHECKSYS_OK;
				bad |= rows[i].level != CHECKSYS_OK;
			}
		if (!ok || !bad)
			fail_msg("%s: no %s row", names[n], ok ? "WARN/FAIL" : "OK");
	}
}

/* ---- access as another user: root may read and write anything ---- */

/* Runs check as uid/gid 65534 when we are root (in a child), else as we are. */
static void run_unprivileged(check_fn check, struct checksys_result *r)
{
	int fd[2], status;
	pid_t pid;

	if (geteuid() != 0) {
		check(&cs, r);
		return;
	}
	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fd[0]);
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0
		    || setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(2);
		check(&cs, r);
		_exit(write(fd[1], r, sizeof(*r)) == (ssize_t)sizeof(*r) ? 0 : 3);
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], r, sizeof(*r)), (ssize_t)sizeof(*r));
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void chmod_at(const char *rel, mode_t mode)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s%s", root, rel);
	assert_int_equal(chmod(path, mode), 0);
}

static void fx_remove(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s%s", root, rel);
	assert_int_equal(unlink(path), 0);
}

static void test_unprivileged(void **state)
{
	struct checksys_result r;

	(void)state;
	fx_begin(GPS);
	fx_write("/dev/ttyS0", "");
	chmod_at("/dev/ttyS0", 0600);   /* root's, or ours with no access at all below */
	if (geteuid() != 0)
		chmod_at("/dev/ttyS0", 0);
	run_unprivileged(serial_device, &r);
	expect("device not read/write", &r, CHECKSYS_FAIL, "port:gps",
	       "cannot read and write it", "; fix: add the service user to the device's group",
	       NULL);
	fx_end();

	/* best-effort warns, rt = required fails */
	for (int required = 0; required <= 1; required++) {
		fx_begin(required ? G0 RT_REQ : G0 GPS);
		fx_write("/dev/cpu_dma_latency", "");
		chmod_at("/dev/cpu_dma_latency", geteuid() == 0 ? 0600 : 0400);
		run_unprivileged(checksys_cpu_dma_latency, &r);
		expect("cpu_dma_latency not writable", &r,
		       required ? CHECKSYS_FAIL : CHECKSYS_WARN, "cpu-dma-latency",
		       "cannot write it", "; fix: run as root, or a udev rule",
		       required ? NULL : "rt = required");
		if (required)
			expect("cpu_dma_latency, rt = required", &r, CHECKSYS_FAIL,
			       "cpu-dma-latency", "rt = required stops the start", NULL, NULL);
		fx_end();
	}

	fx_begin("[serial gps]\ndevice = /dev/ttyUSB0\n");
	fx_write("/dev/ttyUSB0", "");
	fx_write("/sys/bus/usb-serial/devices/ttyUSB0/latency_timer", "16\n");
	chmod_at("/sys/bus/usb-serial/devices/ttyUSB0/latency_timer", 0444);
	run_unprivileged(serial_ftdi, &r);
	expect("FTDI latency 16, not writable", &r, CHECKSYS_WARN, "port:gps:ftdi-latency",
	       "ttyUSB0: FTDI latency_timer = 16 ms and uid ", "; fix: the udev rule "
	       "ACTION==\"add\", SUBSYSTEM==\"usb-serial\", DRIVERS==\"ftdi_sio\", "
	       "ATTR{latency_timer}=\"1\"", NULL);
	fx_end();

	fx_begin(GPS "baud = 9600\n");
	fx_write("/dev/ttyS0", "");
	fx_write("/sys/class/tty/ttyS0/type", "4\n");
	fx_write("/sys/class/tty/ttyS0/xmit_fifo_size", "16\n");
	fx_write("/sys/class/tty/ttyS0/rx_trig_bytes", "8\n");
	chmod_at("/sys/class/tty/ttyS0/rx_trig_bytes", 0644);
	run_unprivileged(serial_delivery, &r);
	expect("rx_trig_bytes not writable", &r, CHECKSYS_WARN, "port:gps:delivery",
	       "16550A: receive trigger 8, and this user cannot write rx_trig_bytes",
	       "; fix: the package's udev rule", NULL);
	fx_end();

	fx_begin("[parallel lpt]\ndriver = sim\ndevice = /run/portlogd/lpt.sim\n");
	fx_write("/run/portlogd/other", "");
	chmod_at("/run/portlogd", 0555);
	run_unprivileged(parallel_device, &r);
	expect("sim directory read-only", &r, CHECKSYS_FAIL, "port:lpt",
	       "cannot create it, directory /run/portlogd: EACCES", NULL, NULL);
	chmod_at("/run/portlogd", 0755);
	fx_end();

	/* Debian's textfile directory is root's, 0755 */
	fx_begin(METRICS);
	fx_write(TEXTFILE_DIR "/.keep", "");
	chmod_at(TEXTFILE_DIR, 0555);
	run_unprivileged(metrics_file, &r);
	expect("metrics directory not writable", &r, CHECKSYS_FAIL, "metrics-file",
	       "cannot make files in " TEXTFILE_DIR " (EACCES)", "; fix: let the service user "
	       "write there (Debian, kept across upgrades: dpkg-statoverride --update --add root "
	       "portlogd 775 " TEXTFILE_DIR ")", NULL);
	chmod_at(TEXTFILE_DIR, 0755);
	fx_end();
}

/* ---- the whole report ---- */

static void fx_all_ok(void)
{
	fx_write("/sys/kernel/realtime", "1\n");
	fx_write("/proc/sys/kernel/sched_rt_runtime_us", "-1\n");
	fx_write(CPU "/online", "0-3\n");
	fx_write(CPU "/smt/active", "0\n");
	fx_write("/dev/cpu_dma_latency", "");
	fx_write("/proc/cmdline", "isolcpus=2-3 nohz_full=2-3 rcu_nocbs=2-3\n");
	fx_write("/proc/self/status", STATUS(CAP_SYS_NICE));
	fx_write("/proc/self/limits", LIMITS("0", "unlimited"));
	fx_write("/proc/meminfo", "MemTotal:  8388608 kB\nMemAvailable:  6291456 kB\n");
	fx_write("/proc/sys/kernel/threads-max", "60000\n");
	fx_write("/proc/loadavg", LOADAVG("300"));
	fx_write(CLK "/current_clocksource", "tsc\n");
	fx_write("/sys/devices/virtual/workqueue/cpumask", "f\n");
	fx_write("/proc/812/comm", "chronyd\n");
	clock_synced();
	fx_write("/dev/ttyS0", "");
	fx_write("/sys/class/tty/ttyS0/flags", "0x2000\n");
	fx_write("/sys/class/tty/ttyS0/type", "4\n");
	fx_write("/sys/class/tty/ttyS0/rx_trig_bytes", "1\n");
	fx_write("/dev/ttyUSB0", "");
	fx_write("/sys/bus/usb-serial/devices/ttyUSB0/latency_timer", "1\n");
	fx_write("/dev/parport0", "");
	fx_write(CPU "/cpu2/power/pm_qos_resume_latency_us", "0\n");
	fx_write(CPU "/cpu3/power/pm_qos_resume_latency_us", "0\n");
}

/* Built without libieee1284 (-DPORTLOGD_IEEE1284=OFF), lpt is the sim driver's, on a file
 * where parport0 is: its two rows are OK alike. */
#ifdef PORTLOGD_IEEE1284
#define LPT_ALL "[parallel lpt]\ndevice = parport0\ncpu = 3\n"
#else
#define LPT_ALL "[parallel lpt]\ndriver = sim\ndevice = /dev/parport0\ncpu = 3\n"
#endif
#define ALL_PORTS "[timer]\ncpu = 3\n" GPS "cpu = 2\n[serial a-long-port-name]\n" \
	"device = /dev/ttyUSB0\ncpu = 2\n" LPT_ALL

static int run_report(char **text)
{
	size_t len;
	FILE *f = open_memstream(text, &len);
	int rc;

	assert_non_null(f);
	rc = checksys_run(&cs, f);
	assert_int_equal(fclose(f), 0);
	return rc;
}

/* Counts lines starting with `word ` and checks the fixed columns. */
static unsigned count_lines(const char *text, const char *word, size_t *text_col)
{
	unsigned n = 0;

	for (const char *l = text; *l != '\0'; l = strchr(l, '\n') + 1) {
		const char *name = l + 5, *sp = strchr(name, ' '), *t = sp;

		if (strchr(l, '\n') == NULL)
			fail_msg("unterminated line: %s", l);
		if (strncmp(l, word, strlen(word)) != 0 || l[strlen(word)] != ' ')
			continue;
		n++;
		while (*t == ' ')
			t++;
		if (*text_col == 0)
			*text_col = (size_t)(t - l);
		else if ((size_t)(t - l) != *text_col)
			fail_msg("text at column %zu, not %zu: %.*s", (size_t)(t - l), *text_col,
				 (int)(strchr(l, '\n') - l), l);
	}
	return n;
}

static void test_report(void **state)
{
	size_t col = 0;
	char *text = NULL, *last;
	int rc;

	(void)state;
	fx_begin(ALL_PORTS);
	fx_all_ok();
	rc = run_report(&text);
	/* 20 system checks; gps: device, low-latency, delivery, irq (no FTDI); ttyUSB0: 5;
	 * lpt: 2 */
	if (rc != 0 || count_lines(text, "OK", &col) != 31 || strstr(text, "WARN ") != NULL)
		fail_msg("expected 31 OK lines and exit status 0, got %d:\n%s", rc, text);
	last = strrchr(text, '\n');
	while (last > text && last[-1] != '\n')
		last--;
	assert_string_equal(last, "31 OK, 0 WARN, 0 FAIL\n");
	/* the name column fits the longest name, and the text starts after it */
	assert_non_null(strstr(text, "\nOK   port:a-long-port-name:ftdi-latency ttyUSB0: "));
	assert_int_equal(col, strlen("OK   port:a-long-port-name:ftdi-latency "));
	free(text);
	fx_end();

	/* one FAIL (a device unplugged) and one WARN make it 1 */
	fx_begin(ALL_PORTS);
	fx_all_ok();
	fx_write(CPU "/smt/active", "1\n");
	fx_remove("/dev/ttyUSB0");
	rc = run_report(&text);
	col = 0;
	assert_int_equal(rc, 1);
	assert_int_equal(count_lines(text, "FAIL", &col), 1);
	assert_int_equal(count_lines(text, "WARN", &col), 1);
	assert_non_null(strstr(text, "FAIL port:a-long-port-name "));
	/* the missing device has no low-latency, FTDI, delivery or irq line */
	assert_null(strstr(text, "port:a-long-port-name:"));
	assert_non_null(strstr(text, "\n25 OK, 1 WARN, 1 FAIL\n"));
	free(text);
	fx_end();
}

/* Without a config: the system checks only, and a line that says so. */
static void test_report_without_config(void **state)
{
	size_t col = 0;
	char *text = NULL;
	int rc;

	(void)state;
	fx_begin(NULL);
	fx_all_ok();
	rc = run_report(&text);
	assert_int_equal(rc, 0);
	assert_int_equal(count_lines(text, "WARN", &col), 2);  /* config, nothing pinned */
	assert_non_null(strstr(text, "WARN config "));
	assert_null(strstr(text, "port:"));
	assert_non_null(strstr(text, "\n18 OK, 2 WARN, 0 FAIL\n"));
	free(text);
	fx_end();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_rows_cover_every_check),
		cmocka_unit_test(test_unprivileged),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_report_without_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
