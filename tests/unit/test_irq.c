/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_irq.c - the ports' interrupt threads (daemon/irq.c) and the CPUs held out of idle
 * states (daemon/idle.c), on fixture trees of /proc and /sys; sched_setscheduler wrapped. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf.h"
#include "drv.h"
#include "fixture.h"
#include "idle.h"
#include "irq.h"
#include "rec.h"
#include "rootfs.h"
#include "source.h"

#define KTHREAD 0x00208040ul    /* PF_KTHREAD and friends, as an irq thread's flags */
#define CPUD "/sys/devices/system/cpu"
#define AUTO "[timer]\nidle_latency = auto\n"

static char root[256];

/*
 * sched_setscheduler, wrapped: no interrupt thread here takes a priority. Each
 * call is recorded; one that succeeds rewrites the task's stat in the fixture,
 * as the kernel would show it. refuse: the errno every call fails with (0:
 * none); gone: a pid that has ended (ESRCH).
 */
static struct {
	int n;
	int pid[32], policy[32], prio[32];
	int refuse;
	int gone;
} calls;

int __wrap_sched_setscheduler(pid_t pid, int policy, const struct sched_param *sp);

int __wrap_sched_setscheduler(pid_t pid, int policy, const struct sched_param *sp)
{
	char comm[16];

	assert_true(calls.n < 32);
	calls.pid[calls.n] = pid;
	calls.policy[calls.n] = policy;
	calls.prio[calls.n] = sp->sched_priority;
	calls.n++;
	if (calls.refuse != 0 || pid == calls.gone) {
		errno = pid == calls.gone ? ESRCH : calls.refuse;
		return -1;
	}
	assert_true(rootfs_read(root, comm, sizeof(comm), "/proc/%d/comm", (int)pid) > 0);
	fx_task(root, pid, 0, comm, KTHREAD, sp->sched_priority, policy);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	memset(&calls, 0, sizeof(calls));
	fx_mkroot(root, sizeof(root), "irq");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_fail_readdir(0, 0);          /* a failed proc_unreadable leaves it set */
	fx_rmroot(root);
	return 0;
}

/* ---- where a port's interrupt comes from ---- */

static void tty_interrupts(void **state)
{
	static const struct {
		const char *dev, *why;
		int irq;
	} cases[] = {
		{ "/dev/ttyS0", NULL, 4 },
		{ "/dev/ttyS1", IRQ_WHY_NONE, -1 },     /* irq 0: a port without one */
		{ "/dev/ttyS2", IRQ_WHY_NONE, -1 },     /* no such attribute */
		{ "/dev/pts/3", IRQ_WHY_PTY, -1 },
		{ "/dev/ttyUSB0", IRQ_WHY_USB, -1 },
		{ "/dev/ttyACM1", IRQ_WHY_USB, -1 },
	};
	const char *why;

	(void)state;
	fx_put(root, "/sys/class/tty/ttyS0/irq", "4\n");
	fx_put(root, "/sys/class/tty/ttyS1/irq", "0\n");
	fx_put(root, "/sys/class/tty/pts/irq", "9\n");  /* never looked at for a pty */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why = NULL;
		assert_int_equal(irq_of_tty(root, cases[i].dev, &why), cases[i].irq);
		if (cases[i].why != NULL)
			assert_string_equal(why, cases[i].why);
	}
	/* a configured device is resolved below the root: a by-id link to a UART, to an
	 * adapter, and one whose adapter is unplugged */
	fx_put(root, "/dev/ttyS0", "");
	fx_put(root, "/dev/ttyUSB0", "");
	fx_put(root, "/dev/serial/by-id/pci-uart", "-> ../../ttyS0");
	fx_put(root, "/dev/serial/by-id/usb-FTDI_FT232R-if00-port0", "-> ../../ttyUSB0");
	fx_put(root, "/dev/serial/by-id/usb-Prolific-if00-port0", "-> ../../ttyUSB7");
	assert_int_equal(irq_of_device(root, "/dev/serial/by-id/pci-uart", &why), 4);
	assert_int_equal(irq_of_device(root, "/dev/serial/by-id/usb-FTDI_FT232R-if00-port0", &why),
			 -1);
	assert_string_equal(why, IRQ_WHY_USB);
	assert_int_equal(irq_of_device(root, "/dev/serial/by-id/usb-Prolific-if00-port0", &why),
			 -1);
	assert_string_equal(why, IRQ_WHY_USB);
}

/* A [parallel] port's, through its driver: parport_pc's (if it took one), the
 * UART's for the lines driver, none for the simulator. */
static void parallel_interrupts(void **state)
{
	struct conf_parallel p = { .name = "lpt0", .in = { .device = "parport0",
							   .read = DRV_READ_STATUS }, .mask = 0xff };
	const char *why;

	(void)state;
	fx_put(root, "/proc/sys/dev/parport/parport0/irq", "7\n");
	fx_put(root, "/proc/sys/dev/parport/parport1/irq", "-1\n");
	fx_put(root, "/sys/class/tty/ttyS1/irq", "3\n");
	fx_put(root, "/dev/ttyS1", "");
	assert_int_equal(irq_of_parport(root, "parport0", &why), 7);
	assert_int_equal(irq_of_parport(root, "parport1", &why), -1);
	assert_string_equal(why, IRQ_WHY_NONE);
	assert_int_equal(irq_of_parport(root, "parport2", &why), -1);
	p.driver = drv_input_find("ieee1284");
	if (p.driver->irq != NULL) {
		assert_int_equal(irq_of_parallel(root, &p, &why), 7);
		/* by its basename */
		snprintf(p.in.device, sizeof(p.in.device), "/dev/parport0");
		assert_int_equal(irq_of_parallel(root, &p, &why), 7);
	}
	p.driver = drv_input_find("lines");
	snprintf(p.in.device, sizeof(p.in.device), "/dev/ttyS1");
	assert_int_equal(irq_of_parallel(root, &p, &why), 3);
	p.driver = drv_input_find("sim");
	snprintf(p.in.device, sizeof(p.in.device), "/run/x.sim");
	assert_int_equal(irq_of_parallel(root, &p, &why), -1);
	assert_string_equal(why, IRQ_WHY_FILE);
}

/* Every thread of line 4, and only those: not irq/41-, not a process called so. */
static void threads_of_a_line(void **state)
{
	struct irq_thread t[IRQ_THREADS_MAX];
	char bad[PATH_MAX];
	int n;

	(void)state;
	fx_task(root, 57, 0, "irq/4-ttyS0", KTHREAD, 50, SCHED_FIFO);
	fx_task(root, 58, 0, "irq/4-ehci_hcd", KTHREAD, 51, SCHED_FIFO);
	fx_task(root, 90, 0, "irq/41-eth0", KTHREAD, 50, SCHED_FIFO);
	fx_task(root, 91, 0, "irq/4", KTHREAD, 50, SCHED_FIFO);
	fx_task(root, 300, 0, "bash", 0x400000, 0, SCHED_OTHER);
	fx_put(root, "/proc/self/comm", "portlogd");
	fx_put(root, "/proc/sys/kernel/x", "");
	n = irq_threads(root, 4, t, IRQ_THREADS_MAX);
	assert_int_equal(n, 2);
	if (t[0].pid != 57) {           /* readdir's order */
		struct irq_thread x = t[0];

		t[0] = t[1];
		t[1] = x;
	}
	assert_int_equal(t[0].pid, 57);
	assert_string_equal(t[0].comm, "irq/4-ttyS0");
	assert_int_equal(t[0].policy, SCHED_FIFO);
	assert_int_equal(t[0].prio, 50);
	assert_int_equal(t[1].pid, 58);
	assert_int_equal(t[1].prio, 51);
	assert_int_equal(irq_threads(root, 41, t, IRQ_THREADS_MAX), 1);
	assert_int_equal(irq_threads(root, 5, t, IRQ_THREADS_MAX), 0);
	assert_int_equal(irq_threads(root, 4, t, 1), 1);        /* at most max */
	snprintf(bad, sizeof(bad), "%s/nothing", root);
	assert_int_equal(irq_threads(bad, 4, t, IRQ_THREADS_MAX), -ENOENT);
}

static void kernel_threads_interrupts(void **state)
{
	(void)state;
	assert_false(irq_forced_threads(root));
	fx_put(root, "/proc/cmdline", "root=/dev/sda1 nothreadirqs=1 quiet\n");
	assert_false(irq_forced_threads(root));
	fx_put(root, "/proc/version", "Linux version 6.1.0-28-amd64 #1 SMP PREEMPT_DYNAMIC\n");
	assert_false(irq_forced_threads(root));
	fx_put(root, "/proc/cmdline", "root=/dev/sda1 threadirqs\n");
	assert_true(irq_forced_threads(root));
	fx_put(root, "/proc/cmdline", "quiet\n");
	fx_put(root, "/proc/version", "Linux version 6.1.0-28-rt-amd64 #1 SMP PREEMPT_RT Debian\n");
	assert_true(irq_forced_threads(root));
	fx_put(root, "/proc/version", "Linux\n");
	fx_put(root, "/sys/kernel/realtime", "1\n");
	assert_true(irq_forced_threads(root));

	assert_false(irq_proc_hidden(root));
	fx_put(root, "/proc/self/mountinfo", "22 27 0:21 / /proc rw,nosuid - proc proc rw\n"
	       "23 22 0:22 / /proc/sys/fs/binfmt_misc rw - autofs systemd-1 rw,hidepid=2\n");
	assert_false(irq_proc_hidden(root));
	fx_put(root, "/proc/self/mountinfo", "22 27 0:21 / /proc rw - proc proc rw,hidepid=0\n");
	assert_false(irq_proc_hidden(root));
	fx_put(root, "/proc/self/mountinfo", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
	       "22 1 0:21 / /proc rw,nosuid - proc proc rw,hidepid=invisible\n");
	assert_true(irq_proc_hidden(root));
}

static void affinity(void **state)
{
	cpu_set_t s;
	static struct conf c;    /* zeroed: each parse frees what the last held */
	char err[CONF_ERR_MAX];

	(void)state;
	assert_false(irq_affinity(root, 4, &s));
	fx_put(root, "/proc/irq/4/smp_affinity_list", "0-2,5\n");
	assert_true(irq_affinity(root, 4, &s));
	assert_int_equal(CPU_COUNT(&s), 4);
	assert_true(CPU_ISSET(5, &s) && CPU_ISSET(1, &s) && !CPU_ISSET(3, &s));
	/* where it goes now, rather than where it may go */
	fx_put(root, "/proc/irq/4/effective_affinity_list", "2\n");
	assert_true(irq_affinity(root, 4, &s));
	assert_int_equal(CPU_COUNT(&s), 1);
	assert_true(CPU_ISSET(2, &s));
	/* the CPUs of a config's UARTs: ttyS0 on line 4; a pty has none */
	fx_put(root, "/dev/ttyS0", "");
	fx_put(root, "/sys/class/tty/ttyS0/irq", "4\n");
	assert_int_equal(conf_parse_string(&c, "t.conf", "[serial a]\ndevice = /dev/ttyS0\n"
					   "[serial b]\ndevice = /dev/pts/1\n", err, sizeof(err)), 0);
	CPU_ZERO(&s);
	CPU_SET(7, &s);
	irq_serial_cpus(root, &c, &s);
	assert_int_equal(CPU_COUNT(&s), 2);
	assert_true(CPU_ISSET(2, &s) && CPU_ISSET(7, &s));
}

/* ---- the rule ---- */

static void the_auto_rule(void **state)
{
	static const struct {
		int conf, reader, want;
	} ser[] = {
		{ CONF_IRQ_AUTO, 97, 98 },      /* above the reader it feeds */
		{ CONF_IRQ_AUTO, 1, 2 },
		{ CONF_IRQ_AUTO, 99, 99 },      /* no higher priority: level with it */
		{ CONF_IRQ_AUTO, CONF_PRIO_OTHER, 0 },  /* every IRQ thread is above it already */
		{ CONF_IRQ_OFF, 97, 0 },
		{ 60, 97, 60 },                 /* as asked, even below */
		{ CONF_IRQ_AS_LOGGER, 97, 0 },  /* a struct made by hand */
	}, par[] = {
		{ CONF_IRQ_AUTO, 98, 0 },       /* the sampler polls: it needs no interrupt */
		{ CONF_IRQ_OFF, 98, 0 },
		{ 40, 98, 40 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ser) / sizeof(ser[0]); i++) {
		struct conf_serial s = { .irq_priority = ser[i].conf, .priority = ser[i].reader };

		assert_int_equal(irq_wanted_serial(&s), ser[i].want);
	}
	for (size_t i = 0; i < sizeof(par) / sizeof(par[0]); i++) {
		struct conf_parallel p = { .irq_priority = par[i].conf, .priority = par[i].reader };

		assert_int_equal(irq_wanted_parallel(&p), par[i].want);
	}
}

/* Ports on one line (a multiport card's UARTs) get the highest any of them wants. */
static void a_shared_line(void **state)
{
	struct irq_port a, b, off, other, none;
	struct irq_port *all[] = { &a, &b, &off, &other, &none };

	(void)state;
	irq_port_init(&a, 4, NULL, 61);
	irq_port_init(&b, 4, NULL, 98);
	irq_port_init(&off, 4, NULL, 0);
	irq_port_init(&other, 5, NULL, 70);
	irq_port_init(&none, -1, IRQ_WHY_PTY, 80);
	irq_share(all, 5);
	assert_int_equal(a.want, 98);
	assert_int_equal(b.want, 98);
	assert_int_equal(off.want, 0);          /* off stays off: it sets nothing */
	assert_int_equal(other.want, 70);
	assert_int_equal(none.want, 80);
}

/* ---- apply, report, restore ---- */

/* Pops the next record of src: its code, errno and fields. */
static void pop_event(struct source *src, int *code, int *err, char *text, size_t len)
{
	struct rec r;

	assert_true(ring_ready_now(&src->ring) > 0);
	r = ring_rslot(&src->ring, 0)->rec;
	assert_int_equal(r.kind, REC_EV);
	*code = (int)r.a;
	*err = (int)r.b;
	snprintf(text, len, "%.*s", (int)(r.len < REC_HEAD_DATA ? r.len : REC_HEAD_DATA),
		 (const char *)r.data);
	ring_release(&src->ring, rec_slots(r.len));
}

static void expect_event(struct source *src, int code, int err, const char *text)
{
	char got[REC_HEAD_DATA + 1];
	int c, e;

	pop_event(src, &c, &e, got, sizeof(got));
	if (c != code || e != err || strcmp(got, text) != 0)
		fail_msg("event %d errno %d '%s', expected %d errno %d '%s'", c, e, got, code, err,
			 text);
}

static void expect_quiet(struct source *src)
{
	assert_int_equal(ring_ready_now(&src->ring), 0);
}

/* A fixture task's policy and priority, as irq.c reads them. */
static bool read_prio(int pid, struct irq_thread *t)
{
	struct irq_thread all[IRQ_THREADS_MAX];
	int n = irq_threads(root, 4, all, IRQ_THREADS_MAX);

	for (int i = 0; i < n; i++)
		if (all[i].pid == pid) {
			*t = all[i];
			return true;
		}
	return false;
}

static void set_and_put_back(void **state)
{
	struct source src;
	struct irq_port ip;
	struct irq_thread t;

	(void)state;
	assert_int_equal(source_init(&src, "gps", 64), 0);
	fx_task(root, 57, 0, "irq/4-ttyS0", KTHREAD, 50, SCHED_FIFO);
	fx_task(root, 58, 0, "irq/4-ehci_hcd", KTHREAD, 0, SCHED_OTHER);
	irq_port_init(&ip, 4, NULL, 98);
	assert_int_equal(irq_port_apply(&ip, root), 2);
	assert_int_equal(calls.n, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(calls.policy[i], SCHED_FIFO);
		assert_int_equal(calls.prio[i], 98);
	}
	irq_port_report(&ip, &src);
	/* readdir's order: either thread first */
	{
		char a[REC_HEAD_DATA + 1], b[REC_HEAD_DATA + 1];
		int c, e;

		pop_event(&src, &c, &e, a, sizeof(a));
		pop_event(&src, &c, &e, b, sizeof(b));
		assert_int_equal(c, EV_IRQ);
		if (strstr(a, "ttyS0") == NULL) {
			char x[sizeof(a)];

			memcpy(x, a, sizeof(a));
			memcpy(a, b, sizeof(a));
			memcpy(b, x, sizeof(a));
		}
		assert_string_equal(a, "irq=4 thread=irq/4-ttyS0 pid=57 old=50 new=98");
		assert_string_equal(b, "irq=4 thread=irq/4-ehci_hcd pid=58 old=other new=98");
	}
	expect_quiet(&src);

	/* the port reopened: the threads are at 98 already, no call, and the first
	 * priority is still what the EV line and the restore know */
	calls.n = 0;
	assert_int_equal(irq_port_apply(&ip, root), 2);
	assert_int_equal(calls.n, 0);
	irq_port_report(&ip, &src);
	for (int i = 0; i < 2; i++) {
		char x[REC_HEAD_DATA + 1];
		int c, e;

		pop_event(&src, &c, &e, x, sizeof(x));
		assert_non_null(strstr(x, "new=98"));
		assert_null(strstr(x, "old=98"));
	}

	/* someone (rtirq, chrt) has set 58 since: that one is theirs now */
	fx_task(root, 58, 0, "irq/4-ehci_hcd", KTHREAD, 70, SCHED_FIFO);
	calls.n = 0;
	assert_int_equal(irq_port_restore(&ip, root), 1);
	assert_int_equal(calls.n, 1);
	assert_int_equal(calls.pid[0], 57);
	assert_int_equal(calls.policy[0], SCHED_FIFO);
	assert_int_equal(calls.prio[0], 50);
	assert_true(read_prio(58, &t));         /* left as they set it */
	assert_int_equal(t.prio, 70);
	source_fini(&src);
}

/* A UART's thread ends when the port closes and comes back as a new one. */
static void a_new_thread_at_reopen(void **state)
{
	struct source src;
	struct irq_port ip;
	char path[PATH_MAX];

	(void)state;
	assert_int_equal(source_init(&src, "gps", 64), 0);
	fx_task(root, 57, 0, "irq/4-ttyS0", KTHREAD, 50, SCHED_FIFO);
	irq_port_init(&ip, 4, NULL, 98);
	assert_int_equal(irq_port_apply(&ip, root), 1);
	irq_port_report(&ip, &src);
	expect_event(&src, EV_IRQ, 0, "irq=4 thread=irq/4-ttyS0 pid=57 old=50 new=98");
	snprintf(path, sizeof(path), "%s/proc/57", root);
	fx_rmroot(path);
	fx_task(root, 61, 0, "irq/4-ttyS0", KTHREAD, 50, SCHED_FIFO);
	assert_int_equal(irq_port_apply(&ip, root), 1);
	irq_port_report(&ip, &src);
	expect_event(&src, EV_IRQ, 0, "irq=4 thread=irq/4-ttyS0 pid=61 old=50 new=98");
	assert_int_equal(ip.nchg, 1);           /* the ended thread is forgotten */
	/* it ends again before the stop: nothing to put back, no call */
	snprintf(path, sizeof(path), "%s/proc/61", root);
	fx_rmroot(path);
	calls.n = 0;
	assert_int_equal(irq_port_restore(&ip, root), 0);
	assert_int_equal(calls.n, 0);
	/* a pid reused by another thread is not ours either */
	fx_task(root, 61, 0, "kworker/1:2", KTHREAD, 98, SCHED_FIFO);
	assert_int_equal(irq_port_restore(&ip, root), 0);
	assert_int_equal(calls.n, 0);
	expect_quiet(&src);
	source_fini(&src);
}

/* The port opened n times: apply and report each time; the last apply's count. */
static int opens(struct irq_port *ip, const char *at, struct source *src, int n)
{
	int r = -1;

	for (int i = 0; i < n; i++) {
		r = irq_port_apply(ip, at);
		irq_port_report(ip, src);
	}
	return r;
}

/* What keeps it from setting anything is said once per port, whatever the reopens. */
static void said_once(void **state)
{
	static const struct {
		const char *what;
		int irq;
		const char *why;
		const char *files[2][2];
		const char *text;
	} cases[] = {
		{ "a pty", -1, IRQ_WHY_PTY, { { NULL } }, "irq=none reason=pty" },
		{ "a USB adapter", -1, IRQ_WHY_USB, { { NULL } }, "irq=none reason=usb" },
		{ "not threaded", 4, NULL, { { "/proc/version", "Linux #1 SMP PREEMPT_DYNAMIC\n" } },
		  "irq=4 thread=none reason=not-threaded" },
		{ "threaded, no thread", 4, NULL, { { "/sys/kernel/realtime", "1\n" } },
		  "irq=4 thread=none reason=no-thread" },
		{ "threaded, hidden by hidepid", 4, NULL, { { "/sys/kernel/realtime", "1\n" },
		  { "/proc/self/mountinfo", "22 1 0:21 / /proc rw - proc proc rw,hidepid=2\n" } },
		  "irq=4 thread=none reason=proc-hidden" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct source src;
		struct irq_port ip;
		char sub[PATH_MAX];

		snprintf(sub, sizeof(sub), "%s/%zu", root, i);
		assert_int_equal(mkdir(sub, 0755), 0);
		fx_put(sub, "/proc/1/comm", "systemd");
		for (int f = 0; f < 2 && cases[i].files[f][0] != NULL; f++)
			fx_put(sub, cases[i].files[f][0], cases[i].files[f][1]);
		assert_int_equal(source_init(&src, "gps", 64), 0);
		irq_port_init(&ip, cases[i].irq, cases[i].why, 98);
		assert_int_equal(opens(&ip, sub, &src, 3), 0);
		printf("# %s: ", cases[i].what);
		expect_event(&src, EV_IRQ, 0, cases[i].text);
		printf("%s\n", cases[i].text);
		expect_quiet(&src);
		assert_int_equal(calls.n, 0);
		source_fini(&src);
	}
}

/*
 * /proc that cannot be listed to its end (readdir's NULL with errno set) is said, not taken
 * for "no thread": irq_threads returns the error, and the port's EV line names it.
 */
static void proc_unreadable(void **state)
{
	struct irq_thread t[IRQ_THREADS_MAX];
	struct source src;
	struct irq_port ip;

	(void)state;
	fx_put(root, "/sys/kernel/realtime", "1\n");
	fx_task(root, 1, 0, "systemd", 0, 0, SCHED_OTHER);
	fx_task(root, 57, 0, "irq/4-ttyS0", KTHREAD, 50, SCHED_FIFO);
	assert_int_equal(irq_threads(root, 4, t, IRQ_THREADS_MAX), 1);
	/* at the first entry, and after two (".", "..", or a pid: readdir's order) */
	for (unsigned after = 0; after <= 2; after += 2) {
		fx_fail_readdir(EOVERFLOW, after);
		assert_int_equal(irq_threads(root, 4, t, IRQ_THREADS_MAX), -EOVERFLOW);
		fx_fail_readdir(0, 0);
	}
	assert_int_equal(source_init(&src, "gps", 64), 0);
	irq_port_init(&ip, 4, NULL, 98);
	fx_fail_readdir(EOVERFLOW, 0);
	assert_int_equal(opens(&ip, root, &src, 2), 0);
	fx_fail_readdir(0, 0);
	expect_event(&src, EV_IRQ, EOVERFLOW, "irq=4 thread=none reason=proc-unreadable");
	expect_quiet(&src);
	assert_int_equal(calls.n, 0);
	source_fini(&src);
}

/* irq_priority = off (want 0): nothing looked at, nothing said. */
static void off_says_nothing(void **state)
{
	struct source src;
	struct irq_port ip;

	(void)state;
	assert_int_equal(source_init(&src, "gps", 64), 0);
	fx_task(root, 57, 0, "irq/4-ttyS0", KTHREAD, 50, SCHED_FIFO);
	irq_port_init(&ip, 4, NULL, 0);
	assert_int_equal(opens(&ip, root, &src, 2), 0);
	irq_port_init(&ip, -1, IRQ_WHY_PTY, 0);
	assert_int_equal(opens(&ip, root, &src, 2), 0);
	expect_quiet(&src);
	assert_int_equal(calls.n, 0);
	source_fini(&src);
}

/* Without CAP_SYS_NICE: one EV rt-missing, errno EPERM, however often it is tried. */
static void no_privilege(void **state)
{
	struct source src;
	struct irq_port ip;

	(void)state;
	assert_int_equal(source_init(&src, "gps", 64), 0);
	fx_task(root, 57, 0, "irq/4-ttyS0", KTHREAD, 50, SCHED_FIFO);
	irq_port_init(&ip, 4, NULL, 98);
	calls.refuse = EPERM;
	assert_int_equal(opens(&ip, root, &src, 3), 0);
	expect_event(&src, EV_RT_MISSING, EPERM, "item=irq_priority need=CAP_SYS_NICE irq=4 "
		     "thread=irq/4-ttyS0 priority=98");
	expect_quiet(&src);
	assert_int_equal(calls.n, 3);
	/* nothing was set: nothing to put back */
	calls.refuse = 0;
	calls.n = 0;
	assert_int_equal(irq_port_restore(&ip, root), 0);
	assert_int_equal(calls.n, 0);
	source_fini(&src);
}

/* A thread that ends between the scan and the call is no error. */
static void a_thread_ends_meanwhile(void **state)
{
	struct source src;
	struct irq_port ip;

	(void)state;
	assert_int_equal(source_init(&src, "gps", 64), 0);
	fx_task(root, 57, 0, "irq/4-ttyS0", KTHREAD, 50, SCHED_FIFO);
	irq_port_init(&ip, 4, NULL, 98);
	calls.gone = 57;
	assert_int_equal(opens(&ip, root, &src, 1), 0);
	expect_quiet(&src);
	assert_int_equal(ip.err, 0);
	source_fini(&src);
}

/* This machine: its UART's line from sysfs, and threads exactly when the kernel threads
 * interrupts (this VM's PREEMPT_DYNAMIC without threadirqs: none). */
static void this_machine(void **state)
{
	struct irq_thread t[IRQ_THREADS_MAX];
	char buf[32];
	const char *why;
	int irq, n;

	(void)state;
	if (rootfs_read("", buf, sizeof(buf), "/sys/class/tty/ttyS0/irq") <= 0 || atoi(buf) <= 0) {
		printf("# no UART with an interrupt at ttyS0: skipped\n");
		skip();
	}
	irq = irq_of_tty("", "/dev/ttyS0", &why);
	assert_int_equal(irq, atoi(buf));
	n = irq_threads("/", irq, t, IRQ_THREADS_MAX);
	printf("# ttyS0: irq %d, %d thread(s), interrupts %sthreaded\n", irq, n,
	       irq_forced_threads("") ? "" : "not ");
	assert_true(n >= 0);
	if (!irq_forced_threads(""))
		assert_int_equal(n, 0);
}

/* ---- CPUs held out of idle states (idle.c) ---- */

static void idle_plans(void **state)
{
	static const struct {
		const char *what, *text;
		enum conf_idle scope;
		const char *cpus;       /* the CPUs PINNED holds, as digits */
	} cases[] = {
		{ "default (auto), the reader pinned", "[serial a]\ndevice = /dev/x\ncpu = 1\n",
		  CONF_IDLE_PINNED, "1" },
		{ "default (auto), nothing pinned", "[serial a]\ndevice = /dev/x\n", CONF_IDLE_GLOBAL,
		  "" },
		{ "auto, nothing pinned", AUTO "[serial a]\ndevice = /dev/x\n", CONF_IDLE_GLOBAL, "" },
		{ "auto, the reader pinned", AUTO "[serial a]\ndevice = /dev/x\ncpu = 1\n",
		  CONF_IDLE_PINNED, "1" },
		{ "an unpinned real-time flusher", AUTO "[logger]\nflusher_priority = 5\n"
		  "[serial a]\ndevice = /dev/x\ncpu = 1\n", CONF_IDLE_GLOBAL, "" },
		{ "a pinned flusher, SCHED_OTHER threads do not count", AUTO "[logger]\n"
		  "flusher_priority = 5\nflusher_cpu = 2\n[serial a]\ndevice = /dev/x\ncpu = 1\n"
		  "[serial b]\ndevice = /dev/y\npriority = other\n", CONF_IDLE_PINNED, "12" },
		{ "the timer runs with a [parallel] port", AUTO "[serial a]\ndevice = /dev/x\ncpu = 1\n"
		  "[parallel p]\ndriver = sim\ndevice = /tmp/p\ncpu = 1\n", CONF_IDLE_GLOBAL, "" },
		{ "... pinned too", "[timer]\nidle_latency = auto\ncpu = 3\n[serial a]\ndevice = /dev/x\ncpu = 1\n"
		  "[parallel p]\ndriver = sim\ndevice = /tmp/p\ncpu = 1\n", CONF_IDLE_PINNED, "13" },
		{ "a timer without a [parallel] port is no thread", "[timer]\ncpu = any\nidle_latency = auto\n"
		  "[serial a]\ndevice = /dev/x\ncpu = 0\n", CONF_IDLE_PINNED, "0" },
		{ "every thread SCHED_OTHER: nothing to keep awake", AUTO "[serial a]\n"
		  "device = /dev/x\npriority = other\n", CONF_IDLE_OFF, "" },
		{ "no port: nothing to keep awake", AUTO, CONF_IDLE_OFF, "" },
		{ "no port, global asked", "[timer]\nidle_latency = global:0\n", CONF_IDLE_GLOBAL,
		  "" },
		{ "pinned asked, one thread free", "[timer]\nidle_latency = pinned:0\n"
		  "[serial a]\ndevice = /dev/x\ncpu = 1\n[serial b]\ndevice = /dev/y\n",
		  CONF_IDLE_PINNED, "1" },
		{ "global asked", "[timer]\nidle_latency = global:5\n[serial a]\ndevice = /dev/x\n"
		  "cpu = 1\n", CONF_IDLE_GLOBAL, "" },
		{ "off", "[timer]\nidle_latency = off\n[serial a]\ndevice = /dev/x\ncpu = 1\n",
		  CONF_IDLE_OFF, "" },
	};
	char err[CONF_ERR_MAX];
	static struct conf c;    /* zeroed: each parse frees what the last held */

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cpu_set_t cpus;
		char got[16] = "";
		size_t n = 0;

		if (conf_parse_string(&c, "t.conf", cases[i].text, err, sizeof(err)) != 0)
			fail_msg("%s: %s", cases[i].what, err);
		if (idle_plan(&c, &cpus) != cases[i].scope)
			fail_msg("%s: scope %d, expected %d", cases[i].what, idle_plan(&c, &cpus),
				 cases[i].scope);
		for (int k = 0; k < 10; k++)
			if (CPU_ISSET(k, &cpus) && cases[i].scope == CONF_IDLE_PINNED)
				got[n++] = (char)('0' + k);
		if (strcmp(got, cases[i].cpus) != 0)
			fail_msg("%s: CPUs %s, expected %s", cases[i].what, got, cases[i].cpus);
	}
}

static void expect_file(const char *rel, const char *want)
{
	char got[64];

	assert_true(rootfs_read(root, got, sizeof(got), "%s", rel) >= 0);
	if (strcmp(got, want) != 0)
		fail_msg("%s is '%s', expected '%s'", rel, got, want);
}

/* cpu0's idle states as haltpoll shows them: POLL 0 us, then a halt of 1 us. */
static void put_states(void)
{
	fx_put(root, CPUD "/cpu0/cpuidle/state0/name", "POLL\n");
	fx_put(root, CPUD "/cpu0/cpuidle/state0/latency", "0\n");
	fx_put(root, CPUD "/cpu0/cpuidle/state1/name", "haltpoll idle\n");
	fx_put(root, CPUD "/cpu0/cpuidle/state1/latency", "1\n");
}

/* Per CPU: "n/a" for 0 us (sysfs's "0" means no limit), the value found put back; auto
 * holds the first halting state's exit latency (1 us here). */
static void idle_pinned(void **state)
{
	static struct conf c;    /* zeroed: each parse frees what the last held */
	struct idle s;
	char err[CONF_ERR_MAX];

	(void)state;
	put_states();
	fx_put(root, CPUD "/cpu0/power/pm_qos_resume_latency_us", "0\n");
	fx_put(root, CPUD "/cpu1/power/pm_qos_resume_latency_us", "0\n");
	fx_put(root, CPUD "/cpu2/power/pm_qos_resume_latency_us", "25\n");
	fx_put(root, "/dev/cpu_dma_latency", "");
	/* gps on CPU 1, its UART's interrupt goes to CPU 2: both held, CPU 0 free */
	fx_put(root, "/dev/ttyS0", "");
	fx_put(root, "/sys/class/tty/ttyS0/irq", "4\n");
	fx_put(root, "/proc/irq/4/effective_affinity_list", "2\n");
	assert_int_equal(conf_parse_string(&c, "t.conf", AUTO "[serial gps]\ndevice = /dev/ttyS0\n"
					   "cpu = 1\n", err, sizeof(err)), 0);
	idle_hold(&s, &c, root);
	assert_int_equal(s.scope, CONF_IDLE_PINNED);
	assert_int_equal(s.ncpu, 2);
	assert_int_equal(s.us, 1);
	assert_int_equal(s.dma_fd, -1);         /* the global limit would hold every CPU */
	assert_int_equal(s.cpu_err, 0);
	expect_file(CPUD "/cpu0/power/pm_qos_resume_latency_us", "0");
	expect_file(CPUD "/cpu1/power/pm_qos_resume_latency_us", "1");
	expect_file(CPUD "/cpu2/power/pm_qos_resume_latency_us", "1");
	idle_release(&s, root);
	expect_file(CPUD "/cpu1/power/pm_qos_resume_latency_us", "0");

	assert_int_equal(conf_parse_string(&c, "t.conf", "[timer]\nidle_latency = pinned:0\n"
					   "[serial gps]\ndevice = /dev/ttyS0\ncpu = 1\n", err,
					   sizeof(err)), 0);
	idle_hold(&s, &c, root);
	expect_file(CPUD "/cpu1/power/pm_qos_resume_latency_us", "n/a");
	expect_file(CPUD "/cpu2/power/pm_qos_resume_latency_us", "n/a");
	idle_release(&s, root);
	expect_file(CPUD "/cpu1/power/pm_qos_resume_latency_us", "0");
	expect_file(CPUD "/cpu2/power/pm_qos_resume_latency_us", "25");
	expect_file("/dev/cpu_dma_latency", "");

	assert_int_equal(conf_parse_string(&c, "t.conf", "[timer]\nidle_latency = pinned:30\n"
					   "[serial gps]\ndevice = /dev/pts/0\ncpu = 0\n", err,
					   sizeof(err)), 0);
	idle_hold(&s, &c, root);
	expect_file(CPUD "/cpu0/power/pm_qos_resume_latency_us", "30");
	expect_file(CPUD "/cpu1/power/pm_qos_resume_latency_us", "0");
	idle_release(&s, root);
	expect_file(CPUD "/cpu0/power/pm_qos_resume_latency_us", "0");
}

/* A CPU file refused: the ones set go back and the global device is held instead. */
static void idle_falls_back(void **state)
{
	static struct conf c;    /* zeroed: each parse frees what the last held */
	struct idle s;
	char err[CONF_ERR_MAX], path[PATH_MAX];
	int32_t v = -1;
	int fd;

	(void)state;
	put_states();
	fx_put(root, CPUD "/cpu1/power/pm_qos_resume_latency_us", "0\n");
	/* a directory where CPU 2's file should be: open(2) says EISDIR, even to root */
	fx_put(root, CPUD "/cpu2/power/pm_qos_resume_latency_us/x", "");
	fx_put(root, "/dev/cpu_dma_latency", "");
	assert_int_equal(conf_parse_string(&c, "t.conf", AUTO "[logger]\nflusher_priority = 3\n"
					   "flusher_cpu = 2\n[serial gps]\ndevice = /dev/pts/0\n"
					   "cpu = 1\n", err, sizeof(err)), 0);
	idle_hold(&s, &c, root);
	assert_int_equal(s.scope, CONF_IDLE_GLOBAL);
	assert_true(s.fell_back);
	assert_int_equal(s.err_cpu, 2);
	assert_int_equal(s.cpu_err, EISDIR);
	assert_int_equal(s.ncpu, 0);
	expect_file(CPUD "/cpu1/power/pm_qos_resume_latency_us", "0");
	assert_true(s.dma_fd >= 0);
	snprintf(path, sizeof(path), "%s/dev/cpu_dma_latency", root);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, &v, sizeof(v)), (ssize_t)sizeof(v));
	assert_int_equal(v, 1);                 /* auto: the halt's exit latency, a binary int32 */
	close(fd);
	idle_release(&s, root);
	assert_int_equal(s.dma_fd, -1);

	/* global, and the device missing: said, not fatal */
	fx_rmroot(path);
	assert_int_equal(conf_parse_string(&c, "t.conf", "[serial gps]\ndevice = /dev/pts/0\n",
					   err, sizeof(err)), 0);
	idle_hold(&s, &c, root);
	assert_int_equal(s.scope, CONF_IDLE_GLOBAL);
	assert_int_equal(s.dma_err, ENOENT);
	assert_false(s.fell_back);
	idle_release(&s, root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(tty_interrupts, setup, teardown),
		cmocka_unit_test_setup_teardown(parallel_interrupts, setup, teardown),
		cmocka_unit_test_setup_teardown(threads_of_a_line, setup, teardown),
		cmocka_unit_test_setup_teardown(kernel_threads_interrupts, setup, teardown),
		cmocka_unit_test_setup_teardown(affinity, setup, teardown),
		cmocka_unit_test(the_auto_rule),
		cmocka_unit_test(a_shared_line),
		cmocka_unit_test_setup_teardown(set_and_put_back, setup, teardown),
		cmocka_unit_test_setup_teardown(a_new_thread_at_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(said_once, setup, teardown),
		cmocka_unit_test_setup_teardown(proc_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(off_says_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(no_privilege, setup, teardown),
		cmocka_unit_test_setup_teardown(a_thread_ends_meanwhile, setup, teardown),
		cmocka_unit_test(this_machine),
		cmocka_unit_test(idle_plans),
		cmocka_unit_test_setup_teardown(idle_pinned, setup, teardown),
		cmocka_unit_test_setup_teardown(idle_falls_back, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
