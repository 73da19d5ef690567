/* SPDX-License-Identifier: GPL-2.0-or-later */
/* irq.c - the interrupt threads of our ports: found below a root, set with sched_setscheduler, put back. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "fmt.h"
#include "irq.h"
#include "rootfs.h"
#include "source.h"

/* "0-3,8" into a CPU set; false when nothing parses. */
static bool cpulist(const char *text, cpu_set_t *cpus)
{
	const char *p = text;
	bool any = false;

	CPU_ZERO(cpus);
	while (*p != '\0') {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b && c >= 0 && c < CPU_SETSIZE; c++) {
			CPU_SET((size_t)c, cpus);
			any = true;
		}
		p = *end == ',' ? end + 1 : end;
		if (*end != ',')
			break;
	}
	return any;
}

int irq_of_tty(const char *root, const char *devpath, const char **why)
{
	const char *base = strrchr(devpath, '/');
	char buf[32];
	long irq;

	base = base != NULL ? base + 1 : devpath;
	if (strstr(devpath, "/dev/pts/") != NULL) {
		*why = IRQ_WHY_PTY;
		return -1;
	}
	/* the serial core's attribute, what TIOCGSERIAL calls irq */
	if (rootfs_read(root, buf, sizeof(buf), "/sys/class/tty/%s/irq", base) <= 0) {
		/* an unplugged adapter's by-id link does not resolve: usb-FTDI_... */
		*why = strncmp(base, "ttyUSB", 6) == 0 || strncmp(base, "ttyACM", 6) == 0
		       || strncmp(base, "usb-", 4) == 0 ? IRQ_WHY_USB : IRQ_WHY_NONE;
		return -1;
	}
	irq = strtol(buf, NULL, 10);
	if (irq <= 0 || irq > INT_MAX) {
		*why = IRQ_WHY_NONE;
		return -1;
	}
	return (int)irq;
}

int irq_of_device(const char *root, const char *device, const char **why)
{
	char full[PATH_MAX], real[PATH_MAX];

	rootfs_path(root, full, sizeof(full), "%s", device);
	return irq_of_tty(root, realpath(full, real) != NULL ? real : full, why);
}

int irq_of_parport(const char *root, const char *name, const char **why)
{
	char buf[32];
	long irq;

	/* parport_pc takes an interrupt only when told (irq=auto or a number) */
	if (rootfs_read(root, buf, sizeof(buf), "/proc/sys/dev/parport/%s/irq", name) <= 0
	    || (irq = strtol(buf, NULL, 10)) <= 0 || irq > INT_MAX) {
		*why = IRQ_WHY_NONE;
		return -1;
	}
	return (int)irq;
}

int irq_of_parallel(const char *root, const struct conf_parallel *p, const char **why)
{
	if (p->driver == NULL || p->driver->irq == NULL) {
		*why = IRQ_WHY_NONE;
		return -1;
	}
	return p->driver->irq(&p->in, root, why);
}

/* rt_priority (field 40) and policy (41) of a /proc/PID/stat line. */
static bool stat_sched(const char *stat, int *prio, int *policy)
{
	const char *p = strrchr(stat, ')');
	int field = 2;

	if (p == NULL)
		return false;
	for (p++; *p != '\0' && field < 40; p++)
		if (*p == ' ')
			field++;
	return field == 40 && sscanf(p, "%d %d", prio, policy) == 2;
}

/* A thread's comm, policy and priority; false when it is gone. */
static bool read_thread(const char *root, int pid, struct irq_thread *t)
{
	char stat[1024];

	t->pid = pid;
	return rootfs_read(root, t->comm, sizeof(t->comm), "/proc/%d/comm", pid) > 0
	       && rootfs_read(root, stat, sizeof(stat), "/proc/%d/stat", pid) > 0
	       && stat_sched(stat, &t->prio, &t->policy);
}

struct thread_scan {
	const char *root;
	char prefix[24];
	size_t len;
	struct irq_thread *t;
	int n, max;
};

/* One entry of ROOT/proc: an interrupt thread of ours? Stops (1) when t is full. */
static int scan_thread(const char *name, void *arg)
{
	struct thread_scan *s = arg;
	char comm[16], *end;
	long pid = strtol(name, &end, 10);

	if (!isdigit((unsigned char)name[0]) || *end != '\0' || pid > INT_MAX
	    || rootfs_read(s->root, comm, sizeof(comm), "/proc/%ld/comm", pid) <= 0
	    || strncmp(comm, s->prefix, s->len) != 0)
		return 0;
	if (read_thread(s->root, (int)pid, &s->t[s->n]))
		s->n++;
	return s->n == s->max;
}

int irq_threads(const char *root, int irq, struct irq_thread *t, int max)
{
	struct thread_scan s = { .root = root, .t = t, .max = max };
	int rc;

	if (max <= 0)
		return 0;
	s.len = (size_t)snprintf(s.prefix, sizeof(s.prefix), "irq/%d-", irq);
	/* interrupt threads are kernel threads: each its own process in /proc */
	rc = rootfs_list(root, scan_thread, &s, "/proc");
	return rc < 0 ? rc : s.n;
}

bool irq_forced_threads(const char *root)
{
	char buf[4096];

	if (rootfs_read(root, buf, sizeof(buf), "/sys/kernel/realtime") > 0 && strcmp(buf, "1") == 0)
		return true;
	if (rootfs_read(root, buf, sizeof(buf), "/proc/version") > 0
	    && (strstr(buf, " PREEMPT_RT ") != NULL || strstr(buf, " PREEMPT RT ") != NULL))
		return true;
	if (rootfs_read(root, buf, sizeof(buf), "/proc/cmdline") > 0)
		for (const char *p = buf; (p = strstr(p, "threadirqs")) != NULL; p += 10)
			if ((p == buf || p[-1] == ' ') && (p[10] == '\0' || p[10] == ' '))
				return true;
	return false;
}

bool irq_proc_hidden(const char *root)
{
	char buf[16384];

	if (rootfs_read(root, buf, sizeof(buf), "/proc/self/mountinfo") <= 0)
		return false;
	for (char *line = buf; line != NULL && *line != '\0'; ) {
		char *nl = strchr(line, '\n'), *h;

		if (nl != NULL)
			*nl = '\0';
		/* "22 27 0:21 / /proc rw,... - proc proc rw,hidepid=invisible" */
		if (strstr(line, " / /proc ") != NULL && (h = strstr(line, "hidepid=")) != NULL
		    && strncmp(h + 8, "0", 1) != 0 && strncmp(h + 8, "off", 3) != 0)
			return true;
		line = nl != NULL ? nl + 1 : NULL;
	}
	return false;
}

bool irq_affinity(const char *root, int irq, cpu_set_t *cpus)
{
	char buf[512];

	if (rootfs_read(root, buf, sizeof(buf), "/proc/irq/%d/effective_affinity_list", irq) > 0
	    && cpulist(buf, cpus))
		return true;
	return rootfs_read(root, buf, sizeof(buf), "/proc/irq/%d/smp_affinity_list", irq) > 0
	       && cpulist(buf, cpus);
}

void irq_serial_cpus(const char *root, const struct conf *c, cpu_set_t *cpus)
{
	for (unsigned i = 0; i < c->nserial; i++) {
		const char *why;
		cpu_set_t one;
		int irq = irq_of_device(root, c->serial[i].device, &why);

		if (irq > 0 && irq_affinity(root, irq, &one))
			CPU_OR(cpus, cpus, &one);
	}
}

int irq_wanted_serial(const struct conf_serial *s)
{
	if (s->irq_priority > 0)
		return s->irq_priority;
	if (s->irq_priority != CONF_IRQ_AUTO || s->priority <= 0)
		return 0;
	return s->priority < 99 ? s->priority + 1 : 99;
}

int irq_wanted_parallel(const struct conf_parallel *p)
{
	return p->irq_priority > 0 ? p->irq_priority : 0;
}

void irq_port_init(struct irq_port *ip, int irq, const char *why, int want)
{
	memset(ip, 0, sizeof(*ip));
	ip->irq = irq;
	ip->why = why;
	ip->want = want;
}

void irq_share(struct irq_port *const *ports, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < n; j++)
			if (ports[i]->irq > 0 && ports[j]->irq == ports[i]->irq && ports[i]->want > 0
			    && ports[j]->want > ports[i]->want)
				ports[i]->want = ports[j]->want;
}

/* The record of thread t, made (with its priority now as the first) if new. */
static int record_of(struct irq_port *ip, const struct irq_thread *t)
{
	for (int i = 0; i < ip->nchg; i++)
		if (ip->chg[i].pid == t->pid && strcmp(ip->chg[i].comm, t->comm) == 0)
			return i;
	if (ip->nchg == IRQ_THREADS_MAX)
		return -1;
	ip->chg[ip->nchg] = (struct irq_change){ .pid = t->pid, .old_policy = t->policy,
						 .old_prio = t->prio };
	snprintf(ip->chg[ip->nchg].comm, sizeof(ip->chg[0].comm), "%s", t->comm);
	return ip->nchg++;
}

/* Drops the records of threads that are gone (a UART's thread ends at close). */
static void forget_gone(struct irq_port *ip, const struct irq_thread *t, int n)
{
	int k = 0;

	for (int i = 0; i < ip->nchg; i++) {
		bool alive = false;

		for (int j = 0; j < n; j++)
			alive |= t[j].pid == ip->chg[i].pid && strcmp(t[j].comm, ip->chg[i].comm) == 0;
		if (alive)
			ip->chg[k++] = ip->chg[i];
	}
	ip->nchg = k;
}

int irq_port_apply(struct irq_port *ip, const char *root)
{
	struct irq_thread t[IRQ_THREADS_MAX];
	int n, at = 0;

	ip->nrep = 0;
	ip->none = NULL;
	ip->none_err = 0;
	ip->err = 0;
	if (ip->want <= 0)
		return 0;
	if (ip->irq <= 0) {
		ip->none = ip->why != NULL ? ip->why : IRQ_WHY_NONE;
		return 0;
	}
	n = irq_threads(root, ip->irq, t, IRQ_THREADS_MAX);
	if (n < 0) {
		ip->none = "proc-unreadable";   /* not "no thread": we could not look */
		ip->none_err = -n;
		return 0;
	}
	if (n == 0) {
		/* a kernel that threads its interrupts has one: then we cannot see it */
		ip->none = !irq_forced_threads(root) ? "not-threaded"
			   : irq_proc_hidden(root) ? "proc-hidden" : "no-thread";
		return 0;
	}
	forget_gone(ip, t, n);
	for (int i = 0; i < n; i++) {
		struct sched_param sp = { .sched_priority = ip->want };
		int r = record_of(ip, &t[i]);

		if (r < 0)
			break;
		if (t[i].policy != SCHED_FIFO || t[i].prio != ip->want) {
			if (sched_setscheduler(t[i].pid, SCHED_FIFO, &sp) < 0) {
				if (errno == ESRCH)
					continue;       /* ended meanwhile */
				ip->err = errno;
				ip->err_chg = r;
				break;          /* the next would be refused alike */
			}
			ip->chg[r].ours = true;
		}
		ip->rep[ip->nrep++] = r;
		at++;
	}
	return at;
}

static void put_prio(struct fmt_kv *kv, const char *key, int policy, int prio)
{
	char v[16];

	if (policy == SCHED_FIFO)
		snprintf(v, sizeof(v), "%d", prio);
	else if (policy == SCHED_RR)
		snprintf(v, sizeof(v), "rr:%d", prio);
	else
		snprintf(v, sizeof(v), "other");
	fmt_kv_str(kv, key, v);
}

void irq_port_report(struct irq_port *ip, struct source *src)
{
	char text[SOURCE_EV_MAX];
	struct fmt_kv kv;

	for (int i = 0; i < ip->nrep; i++) {
		const struct irq_change *c = &ip->chg[ip->rep[i]];

		fmt_kv_init(&kv, text, sizeof(text));
		fmt_kv_i64(&kv, "irq", ip->irq);
		fmt_kv_str(&kv, "thread", c->comm);
		fmt_kv_i64(&kv, "pid", c->pid);
		put_prio(&kv, "old", c->old_policy, c->old_prio);
		put_prio(&kv, "new", SCHED_FIFO, ip->want);
		(void)source_event(src, EV_IRQ, 0, text);
	}
	ip->nrep = 0;
	if (ip->none != NULL && !ip->said_none) {
		fmt_kv_init(&kv, text, sizeof(text));
		if (ip->irq > 0) {
			fmt_kv_i64(&kv, "irq", ip->irq);
			fmt_kv_str(&kv, "thread", "none");
		} else {
			fmt_kv_str(&kv, "irq", "none");
		}
		fmt_kv_str(&kv, "reason", ip->none);
		(void)source_event(src, EV_IRQ, ip->none_err, text);
		ip->said_none = true;
	}
	if (ip->err != 0 && !ip->said_err) {
		fmt_kv_init(&kv, text, sizeof(text));
		fmt_kv_str(&kv, "item", "irq_priority");
		fmt_kv_str(&kv, "need", "CAP_SYS_NICE");
		fmt_kv_i64(&kv, "irq", ip->irq);
		fmt_kv_str(&kv, "thread", ip->chg[ip->err_chg].comm);
		fmt_kv_i64(&kv, "priority", ip->want);
		(void)source_event(src, EV_RT_MISSING, ip->err, text);
		ip->said_err = true;
	}
}

int irq_port_restore(struct irq_port *ip, const char *root)
{
	int n = 0;

	for (int i = 0; i < ip->nchg; i++) {
		const struct irq_change *c = &ip->chg[i];
		struct sched_param sp = { .sched_priority = c->old_policy == SCHED_FIFO
					  || c->old_policy == SCHED_RR ? c->old_prio : 0 };
		struct irq_thread t;

		/* the same thread (a pid is reused only after it ended), still ours: not
		 * one that rtirq or chrt has set since */
		if (!c->ours || !read_thread(root, c->pid, &t) || strcmp(t.comm, c->comm) != 0
		    || t.policy != SCHED_FIFO || t.prio != ip->want)
			continue;
		if (sched_setscheduler(c->pid, c->old_policy, &sp) == 0)
			n++;
	}
	return n;
}
