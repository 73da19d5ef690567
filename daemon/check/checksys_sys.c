/* SPDX-License-Identifier: GPL-2.0-or-later */
/* checksys_sys.c - portlogd --check-system: the system-wide checks, each read from files below a root. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksys_internal.h"
#include "clocksensor.h"
#include "clockq.h"
#include "idle.h"
#include "irq.h"
#include "memory.h"
#include "parts.h"
#include "rec.h"

#define PF_KTHREAD 0x00200000u          /* include/linux/sched.h */
#define PF_NO_SETAFFINITY 0x04000000u   /* ... a per-CPU kernel thread (kthread_bind) */
#define WQ_CPUMASK "/sys/devices/virtual/workqueue/cpumask"
#define IDLE_STATE "/sys/devices/system/cpu/cpu%ld/cpuidle/state%d/%s"
#define MAX_LISTED 6                    /* tasks named in one line; the rest are counted */

/* ---- CPU lists: "0-3,8", isolcpus flags ("domain,managed_irq,2-3") skipped ---- */

static bool cpus_empty(const struct cpus *s)
{
	for (size_t i = 0; i < NCPUS / 64; i++)
		if (s->bit[i])
			return false;
	return true;
}

static void cpus_parse(struct cpus *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *tok = p, *comma = memchr(p, ',', (size_t)(end - p));
		const char *tend = comma ? comma : end;
		char *e;
		long a, b;

		p = comma ? comma + 1 : end;
		if ((size_t)(tend - tok) == 3 && strncmp(tok, "all", 3) == 0) {
			memset(s->bit, 0xff, sizeof(s->bit));
			continue;
		}
		if (!isdigit((unsigned char)*tok))
			continue;       /* a flag such as nohz or domain */
		a = strtol(tok, &e, 10);
		b = a;
		if (e < tend && *e == '-')
			b = strtol(e + 1, &e, 10);
		for (long c = a; c <= b && c < NCPUS; c++)
			cpus_add(s, c);
	}
}

/* The online CPUs; CPU 0 (and false) when the file cannot be read. */
static bool cpus_online(const struct checksys *cs, struct cpus *s)
{
	char buf[512];
	int n = read_at(cs, buf, sizeof(buf), "/sys/devices/system/cpu/online");

	memset(s, 0, sizeof(*s));
	if (n > 0)
		cpus_parse(s, buf, (size_t)n);
	else
		cpus_add(s, 0);
	return n > 0;
}

/* ---- the configured threads ---- */

static void widen(int prio, int *lo, int *hi)
{
	if (prio == CONF_PRIO_OTHER)
		return;
	*lo = prio < *lo ? prio : *lo;
	*hi = prio > *hi ? prio : *hi;
}

/* The lowest and highest SCHED_FIFO priority of the threads the config starts;
 * 0 and 0 when every thread is SCHED_OTHER. Without a config: any RT task
 * counts (1) and the timer's default is the highest. */
static void prio_range(const struct checksys *cs, int *lo, int *hi)
{
	unsigned n;
	struct part_plan *t = parts_plan(cs->conf, &n);    /* NULL: out of memory, none */
	int l = INT_MAX, h = 0;

	if (!cs->have_conf) {
		*lo = 1;
		*hi = cs->conf->timer.priority;
		free(t);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		widen(t[i].priority, &l, &h);
	free(t);
	*lo = h > 0 ? l : 0;
	*hi = h;
}

/* The CPUs real-time threads are pinned to. */
static void pinned_cpus(const struct conf *c, struct cpus *s)
{
	unsigned n;
	struct part_plan *t = parts_plan(c, &n);

	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; i < n; i++)
		if (t[i].priority > 0 && t[i].cpu >= 0)
			cpus_add(s, t[i].cpu);
	free(t);
}

/* The first pinned thread (any policy) whose CPU is not in `allowed`, as
 * "[timer] cpu = 3"; false when there is none. */
static bool pinned_outside(const struct conf *c, const struct cpus *allowed, char *out,
			   size_t len)
{
	unsigned n;
	struct part_plan *t = parts_plan(c, &n);
	bool found = false;

	for (unsigned i = 0; i < n && !found; i++)
		if (t[i].cpu >= 0 && !cpus_has(allowed, t[i].cpu)) {
			size_t k;

			parts_cpu_key(&t[i], out, len);
			k = strlen(out);
			snprintf(out + k, len - k, " = %d", t[i].cpu);
			found = true;
		}
	free(t);
	return found;
}

/* ---- system-wide checks ---- */

void checksys_config(const struct checksys *cs, struct checksys_result *r)
{
	const struct conf *c = cs->conf;

	if (cs->have_conf && c->nserial + c->nparallel == 0)
		set(r, CHECKSYS_WARN, "config", "%s: no port: the service runs and logs nothing "
		    "(it opens no device); fix: add a [serial NAME] section with its device and "
		    "baud (portlogd.conf(5); ls -l /dev/serial/by-id/ names the adapters), check it "
		    "with portlogd --check-config, then systemctl restart portlogd", c->path);
	else if (cs->have_conf)
		set(r, CHECKSYS_OK, "config", "%s: %u serial, %u parallel ports; rt = %s", c->path,
		    c->nserial, c->nparallel, c->logger.rt_required ? "required" : "best-effort");
	else
		set(r, CHECKSYS_WARN, "config", "%s: not found: port checks skipped, priorities "
		    "and CPUs are the defaults; fix: write the config (see config/portlogd.conf) "
		    "or pass -c FILE", c->path);
}

/* The preemption model named in /proc/version ("#1 SMP PREEMPT_DYNAMIC ..."). */
static const char *preempt_model(const char *version)
{
	const char *p = strchr(version, '#');

	for (p = p ? p : version; *p != '\0'; ) {
		size_t n;

		while (*p == ' ')
			p++;
		n = strcspn(p, " ");
		if (n == 10 && strncmp(p, "PREEMPT_RT", n) == 0)
			return "PREEMPT_RT";
		if (n == 15 && strncmp(p, "PREEMPT_DYNAMIC", n) == 0)
			return "PREEMPT_DYNAMIC";
		if (n == 7 && strncmp(p, "PREEMPT", n) == 0)
			return strncmp(p + n, " RT", 3) == 0 ? "PREEMPT_RT" : "PREEMPT";
		p += n;
	}
	return "no forced preemption";
}

void checksys_kernel_rt(const struct checksys *cs, struct checksys_result *r)
{
	char buf[1024], cmdline[4096];
	const char *model;
	int n;

	if (read_at(cs, buf, sizeof(buf), "/sys/kernel/realtime") > 0 && strcmp(buf, "1") == 0) {
		set(r, CHECKSYS_OK, "kernel-rt", "PREEMPT_RT kernel (/sys/kernel/realtime = 1)");
		return;
	}
	n = read_at(cs, buf, sizeof(buf), "/proc/version");
	if (n < 0) {
		set(r, CHECKSYS_WARN, "kernel-rt", "cannot read /proc/version (%s); fix: check "
		    "uname -v for PREEMPT_RT", strerrorname_np(-n));
		return;
	}
	model = preempt_model(buf);
	if (strcmp(model, "PREEMPT_RT") == 0) {
		set(r, CHECKSYS_OK, "kernel-rt", "PREEMPT_RT kernel (/proc/version)");
		return;
	}
	if (read_at(cs, cmdline, sizeof(cmdline), "/proc/cmdline") < 0)
		cmdline[0] = '\0';
	set(r, CHECKSYS_WARN, "kernel-rt", "%s kernel, not PREEMPT_RT: a wake-up can wait for "
	    "a long non-preemptible kernel section, hundreds of us under load; fix: install and "
	    "boot a PREEMPT_RT kernel (Debian: apt install linux-image-rt-$(dpkg "
	    "--print-architecture))%s", model,
	    strcmp(model, "PREEMPT_DYNAMIC") == 0 && strstr(cmdline, "preempt=full") == NULL
	    ? ", meanwhile boot with preempt=full" : "");
}

void checksys_rt_throttle(const struct checksys *cs, struct checksys_result *r)
{
	char runtime[64], period[64];
	int n = read_at(cs, runtime, sizeof(runtime), "/proc/sys/kernel/sched_rt_runtime_us");

	if (n < 0) {
		set(r, CHECKSYS_WARN, "rt-throttle", "cannot read /proc/sys/kernel/"
		    "sched_rt_runtime_us (%s); fix: check sysctl kernel.sched_rt_runtime_us",
		    strerrorname_np(-n));
		return;
	}
	if (strcmp(runtime, "-1") == 0) {
		set(r, CHECKSYS_OK, "rt-throttle", "sched_rt_runtime_us = -1: real-time threads "
		    "are never throttled");
		return;
	}
	if (read_at(cs, period, sizeof(period), "/proc/sys/kernel/sched_rt_period_us") < 0)
		snprintf(period, sizeof(period), "?");
	else if (strtol(runtime, NULL, 10) >= strtol(period, NULL, 10)) {
		set(r, CHECKSYS_OK, "rt-throttle", "sched_rt_runtime_us = %s, the whole "
		    "sched_rt_period_us: real-time threads are never throttled", runtime);
		return;
	}
	set(r, CHECKSYS_WARN, "rt-throttle", "sched_rt_runtime_us = %s of sched_rt_period_us = "
	    "%s: real-time threads that use that much of a period are stopped for the rest of "
	    "it; fix: echo -1 > /proc/sys/kernel/sched_rt_runtime_us (sysctl "
	    "kernel.sched_rt_runtime_us=-1; keep it in /etc/sysctl.d/)", runtime, period);
}

void checksys_cpufreq(const struct checksys *cs, struct checksys_result *r)
{
	struct cpus online, slow = { 0 };
	char gov[64], first[64] = "", list[256];
	long firstcpu = -1;
	int seen = 0;

	cpus_online(cs, &online);
	for (long c = 0; c < NCPUS; c++) {
		if (!cpus_has(&online, c)
		    || read_at(cs, gov, sizeof(gov), "/sys/devices/system/cpu/cpu%ld/cpufreq/"
			       "scaling_governor", c) < 0)
			continue;
		seen++;
		if (strcmp(gov, "performance") != 0) {
			cpus_add(&slow, c);
			if (firstcpu < 0) {
				firstcpu = c;
				snprintf(first, sizeof(first), "%s", gov);
			}
		}
	}
	if (seen == 0) {
		set(r, CHECKSYS_OK, "cpufreq", "no CPU frequency scaling (no cpufreq driver)");
		return;
	}
	if (cpus_empty(&slow)) {
		cpus_format(&online, list, sizeof(list));
		set(r, CHECKSYS_OK, "cpufreq", "governor performance on CPUs %s", list);
		return;
	}
	cpus_format(&slow, list, sizeof(list));
	set(r, CHECKSYS_WARN, "cpufreq", "CPUs %s are not at governor performance (cpu%ld: %s): "
	    "an idle CPU clocks down and a wake-up runs slow until it ramps up; fix: cpupower "
	    "frequency-set -g performance (package linux-cpupower), or echo performance > "
	    "/sys/devices/system/cpu/cpuN/cpufreq/scaling_governor", list, firstcpu, first);
}

struct idle_state {
	char name[64];
	long latency;
	long cpu;
};

/* What portlogd will keep CPU c at (idle.h): the latency in us; -1 when
 * nothing will (idle_latency = off, or a file it cannot write: cpu-dma-latency
 * says which); -2 when c is left free to sleep by design (idle_latency pinned,
 * and no real-time thread or UART interrupt of ours on it). */
static int held_on(const struct checksys *cs, enum conf_idle scope, const cpu_set_t *pinned,
		   long c)
{
	char path[PATH_MAX];

	if (scope == CONF_IDLE_OFF)
		return -1;
	if (scope == CONF_IDLE_PINNED) {
		if (c >= CPU_SETSIZE || !CPU_ISSET((size_t)c, pinned))
			return -2;
		path_at(cs, path, sizeof(path), IDLE_QOS_FILE, (int)c);
		if (access(path, W_OK) == 0)
			return idle_us(cs->conf, cs->root);
		/* refused, portlogd holds the global device instead */
	}
	path_at(cs, path, sizeof(path), "/dev/cpu_dma_latency");
	return access(path, W_OK) == 0 ? idle_us(cs->conf, cs->root) : -1;
}

void checksys_cpuidle(const struct checksys *cs, struct checksys_result *r)
{
	struct idle_state costly = { .latency = -1 }, held = { .latency = -1 };
	struct cpus online, bad = { 0 }, free_cpus = { 0 };
	char buf[64], list[256], fix[128], how[96];
	cpu_set_t pinned;
	enum conf_idle scope = idle_cpus(cs->conf, cs->root, &pinned);
	const char *word = conf_idle_name(scope);
	bool cannot = false;
	int seen = 0;

	cpus_online(cs, &online);
	for (long c = 0; c < NCPUS; c++) {
		int us = held_on(cs, scope, &pinned, c);

		if (!cpus_has(&online, c))
			continue;
		if (us == -2)
			cpus_add(&free_cpus, c);
		for (int s = 0; us != -2; s++) {
			struct idle_state st = { .cpu = c };
			if (read_at(cs, buf, sizeof(buf), IDLE_STATE, c, s, "latency") < 0)
				break;
			seen++;
			st.latency = strtol(buf, NULL, 10);
			if (read_at(cs, st.name, sizeof(st.name), IDLE_STATE, c, s, "name") < 0)
				snprintf(st.name, sizeof(st.name), "state%d", s);
			if (st.latency <= CHECKSYS_DEEP_IDLE_US
			    || (read_at(cs, buf, sizeof(buf), IDLE_STATE, c, s, "disable") > 0
				&& strcmp(buf, "0") != 0))
				continue;
			/* PM QoS keeps CPUs out of states slower than the held value */
			if (us >= 0 && st.latency > us) {
				if (st.latency > held.latency)
					held = st;
				continue;
			}
			cannot |= us < 0;
			cpus_add(&bad, c);
			if (st.latency > costly.latency)
				costly = st;
		}
	}
	if (scope == CONF_IDLE_OFF)
		snprintf(fix, sizeof(fix), "set [timer] idle_latency = auto");
	else if (cannot)
		snprintf(fix, sizeof(fix), "let portlogd %s (see cpu-dma-latency)",
			 scope == CONF_IDLE_PINNED ? "set the CPUs' pm_qos_resume_latency_us"
			 : "hold /dev/cpu_dma_latency");
	else
		snprintf(fix, sizeof(fix), "lower [timer] idle_latency to %s:%d",
			 scope == CONF_IDLE_PINNED ? "pinned" : "global", CHECKSYS_DEEP_IDLE_US);
	if (scope == CONF_IDLE_PINNED)
		snprintf(how, sizeof(how), "holds the real-time CPUs' pm_qos_resume_latency_us "
			 "at %d us", idle_us(cs->conf, cs->root));
	else
		snprintf(how, sizeof(how), "holds /dev/cpu_dma_latency at %d us",
			 idle_us(cs->conf, cs->root));
	if (seen == 0 && cpus_empty(&free_cpus)) {
		set(r, CHECKSYS_OK, "cpuidle", "no cpuidle states (no cpuidle driver)");
	} else if (!cpus_empty(&bad)) {
		cpus_format(&bad, list, sizeof(list));
		set(r, CHECKSYS_WARN, "cpuidle", "CPUs %s may enter idle states slower than %d us "
		    "(cpu%ld: %s, %ld us to wake)%s; fix: %s, or disable them: cpupower idle-set "
		    "-D %d, or boot with intel_idle.max_cstate=1 processor.max_cstate=1", list,
		    CHECKSYS_DEEP_IDLE_US, costly.cpu, costly.name, costly.latency,
		    scope == CONF_IDLE_OFF ? " and [timer] idle_latency = off"
		    : cannot ? " and portlogd cannot hold them" : "", fix, CHECKSYS_DEEP_IDLE_US);
	} else {
		char text[CHECKSYS_TEXT_MAX];
		size_t n;

		if (held.latency >= 0)
			n = (size_t)snprintf(text, sizeof(text), "deep idle states (cpu%ld: %s, "
					     "%ld us) are kept off while portlogd %s (see "
					     "cpu-dma-latency)", held.cpu, held.name, held.latency,
					     how);
		else
			n = (size_t)snprintf(text, sizeof(text), "no enabled idle state takes "
					     "more than %d us to wake", CHECKSYS_DEEP_IDLE_US);
		if (!cpus_empty(&free_cpus) && n < sizeof(text)) {
			cpus_format(&free_cpus, list, sizeof(list));
			snprintf(text + n, sizeof(text) - n, "; CPUs %s, without real-time "
				 "threads, may sleep (idle_latency %s)", list, word);
		}
		set(r, CHECKSYS_OK, "cpuidle", "%s", text);
	}
}

/* The first of cpus whose pm_qos_resume_latency_us this user cannot write, or -1. */
static int qos_refused(const struct checksys *cs, const cpu_set_t *cpus, int *err)
{
	char path[PATH_MAX];

	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET((size_t)c, cpus))
			continue;
		path_at(cs, path, sizeof(path), IDLE_QOS_FILE, c);
		if (access(path, W_OK) < 0) {
			*err = errno;
			return c;
		}
	}
	return -1;
}

void checksys_cpu_dma_latency(const struct checksys *cs, struct checksys_result *r)
{
	const int us = idle_us(cs->conf, cs->root);
	enum checksys_level bad = cs->conf->logger.rt_required ? CHECKSYS_FAIL : CHECKSYS_WARN;
	char path[PATH_MAX], owner[128], list[256], instead[512] = "";
	cpu_set_t pinned;
	enum conf_idle scope = idle_cpus(cs->conf, cs->root, &pinned);
	struct stat st;
	int err = 0, cpu;

	if (scope == CONF_IDLE_OFF) {
		set(r, CHECKSYS_OK, "cpu-dma-latency", "[timer] idle_latency = off: no CPU is held "
		    "out of idle states (see cpuidle for what that costs)");
		return;
	}
	if (scope == CONF_IDLE_PINNED) {
		struct cpus shown = { 0 };

		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET((size_t)c, &pinned))
				cpus_add(&shown, c);
		cpus_format(&shown, list, sizeof(list));
		cpu = qos_refused(cs, &pinned, &err);
		if (cpu < 0) {
			set(r, CHECKSYS_OK, "cpu-dma-latency", "idle_latency = pinned:%d: portlogd can "
			    "set pm_qos_resume_latency_us of CPUs %s (its real-time threads' and its "
			    "UARTs' interrupts') while it runs; /dev/cpu_dma_latency is not held, the "
			    "other CPUs may sleep", us, list);
			return;
		}
		snprintf(instead, sizeof(instead), "idle_latency = pinned:%d, but uid %u cannot write "
			 "cpu%d/power/pm_qos_resume_latency_us (%s), so portlogd holds "
			 "/dev/cpu_dma_latency for every CPU instead (CPUs %s would do); ", us,
			 (unsigned)getuid(), cpu, strerrorname_np(err), list);
	}
	path_at(cs, path, sizeof(path), "/dev/cpu_dma_latency");
	if (stat(path, &st) < 0) {
		set(r, bad, "cpu-dma-latency", "%s/dev/cpu_dma_latency: %s; fix: a kernel with PM "
		    "QoS (CONFIG_PM), or set [timer] idle_latency = off", instead,
		    strerrorname_np(errno));
		return;
	}
	if (access(path, W_OK) < 0) {
		describe_owner(&st, owner, sizeof(owner));
		set(r, bad, "cpu-dma-latency", "%s/dev/cpu_dma_latency (%s): uid %u cannot write it, "
		    "so CPUs may sleep in deep idle states%s; fix: run as root, or a udev rule "
		    "KERNEL==\"cpu_dma_latency\", GROUP=\"portlogd\", MODE=\"0660\", or set [timer] "
		    "idle_latency = off", instead, owner, (unsigned)getuid(),
		    bad == CHECKSYS_FAIL ? ", and rt = required stops the start" : "");
		return;
	}
	if (instead[0] != '\0') {
		set(r, bad, "cpu-dma-latency", "%severy CPU is kept awake%s; fix: the udev rule of "
		    "60-portlogd.rules (SUBSYSTEM==\"cpu\": group portlogd may write "
		    "power/pm_qos_resume_latency_us) and ReadWritePaths=/sys/devices/system/cpu in "
		    "the unit, or run as root, or set [timer] idle_latency = global:%d", instead,
		    bad == CHECKSYS_FAIL ? ", and rt = required stops the start" : "", us);
		return;
	}
	set(r, CHECKSYS_OK, "cpu-dma-latency", "portlogd can hold /dev/cpu_dma_latency at %d us "
	    "while it runs", us);
}

void checksys_smt(const struct checksys *cs, struct checksys_result *r)
{
	char active[16], control[32];
	int n = read_at(cs, active, sizeof(active), "/sys/devices/system/cpu/smt/active");

	if (read_at(cs, control, sizeof(control), "/sys/devices/system/cpu/smt/control") < 0)
		snprintf(control, sizeof(control), "?");
	if (n < 0)
		set(r, CHECKSYS_WARN, "smt", "cannot read /sys/devices/system/cpu/smt/active (%s); "
		    "fix: if lscpu shows 2 threads per core, boot with nosmt", strerrorname_np(-n));
	else if (strcmp(active, "0") == 0)
		set(r, CHECKSYS_OK, "smt", "SMT not active (control = %s)", control);
	else
		set(r, CHECKSYS_WARN, "smt", "SMT active (control = %s): a real-time thread shares "
		    "its core with whatever runs on the sibling thread; fix: boot with nosmt, or "
		    "echo off > /sys/devices/system/cpu/smt/control, or disable Hyper-Threading in "
		    "the firmware", control);
}

/* The CPU list of a kernel parameter ("isolcpus=") in /proc/cmdline. */
static void cmdline_cpus(const char *cmdline, const char *param, struct cpus *s)
{
	size_t pl = strlen(param);

	memset(s, 0, sizeof(*s));
	for (const char *p = cmdline; (p = strstr(p, param)) != NULL; p += pl)
		if (p == cmdline || p[-1] == ' ')
			cpus_parse(s, p + pl, strcspn(p + pl, " "));
}

void checksys_isolation(const struct checksys *cs, struct checksys_result *r)
{
	static const char *const param[] = { "isolcpus=", "nohz_full=", "rcu_nocbs=" };
	char cmdline[4096], what[CONF_NAME_MAX + 32], list[256], missing[512] = "";
	char fix[768] = "";
	struct cpus pinned, online, set_of[3];
	size_t ml = 0, fl = 0;

	pinned_cpus(cs->conf, &pinned);
	/* online, not this process's Cpus_allowed_list: a service inherits init's
	 * mask, which isolcpus= narrows, yet its threads may be pinned to any CPU of
	 * its cpuset (the daemon asks the kernel at start) */
	if (cpus_online(cs, &online) && pinned_outside(cs->conf, &online, what, sizeof(what))) {
		cpus_format(&online, list, sizeof(list));
		set(r, CHECKSYS_FAIL, "isolation", "%s: that CPU is not online (online: %s), the "
		    "daemon would exit 78; fix: use one of %s, or any", what, list, list);
		return;
	}
	if (read_at(cs, cmdline, sizeof(cmdline), "/proc/cmdline") < 0)
		cmdline[0] = '\0';
	for (int i = 0; i < 3; i++)
		cmdline_cpus(cmdline, param[i], &set_of[i]);
	if (cpus_empty(&pinned)) {
		set(r, CHECKSYS_WARN, "isolation", "no real-time thread is pinned to a CPU: they "
		    "share CPUs with everything else; fix: set cpu = N in [timer], [serial] and "
		    "[parallel], and boot with isolcpus=N nohz_full=N rcu_nocbs=N irqaffinity=<the "
		    "other CPUs>");
		return;
	}
	cpus_format(&pinned, list, sizeof(list));
	for (int i = 0; i < 3; i++) {
		struct cpus miss = { 0 }, both = set_of[i];
		char ml_list[256];

		for (long c = 0; c < NCPUS; c++)
			if (cpus_has(&pinned, c) && !cpus_has(&set_of[i], c)) {
				cpus_add(&miss, c);
				cpus_add(&both, c);
			}
		if (cpus_empty(&miss))
			continue;
		cpus_format(&miss, ml_list, sizeof(ml_list));
		ml += (size_t)snprintf(missing + ml, sizeof(missing) - ml, "%s%.*s lacks %s",
				       ml ? ", " : "", (int)strlen(param[i]) - 1, param[i], ml_list);
		cpus_format(&both, ml_list, sizeof(ml_list));
		fl += (size_t)snprintf(fix + fl, sizeof(fix) - fl, "%s%s%s", fl ? " " : "",
				       param[i], ml_list);
		if (ml >= sizeof(missing) || fl >= sizeof(fix))
			break;
	}
	if (cpus_has(&pinned, 0))      /* tick_nohz_init() drops the boot CPU from nohz_full */
		set(r, CHECKSYS_WARN, "isolation", "real-time threads pinned to CPUs %s: CPU 0 is "
		    "the boot CPU, which keeps the timer tick and housekeeping and cannot be "
		    "nohz_full; fix: pin them to other CPUs and isolate those", list);
	else if (fl == 0)
		set(r, CHECKSYS_OK, "isolation", "real-time threads pinned to CPUs %s, which are in "
		    "isolcpus, nohz_full and rcu_nocbs", list);
	else
		set(r, CHECKSYS_WARN, "isolation", "real-time threads pinned to CPUs %s; %s; fix: "
		    "boot with %s (GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub)", list,
		    missing, fix);
}

struct pid_scan {
	const struct checksys *cs;
	bool (*fn)(const struct checksys *, long, void *);
	void *arg;
};

static int pid_entry(const char *name, void *arg)
{
	struct pid_scan *s = arg;
	char *end;
	long pid = strtol(name, &end, 10);

	return isdigit((unsigned char)name[0]) && *end == '\0' && s->fn(s->cs, pid, s->arg);
}

/* Calls fn for each process directory ROOT/proc/PID; stops when fn returns true. Returns
 * 0, or -errno when ROOT/proc could not be listed (to the end). */
static int each_pid(const struct checksys *cs, bool (*fn)(const struct checksys *, long, void *),
		    void *arg)
{
	struct pid_scan s = { cs, fn, arg };
	int rc = rootfs_list(cs->root, pid_entry, &s, "/proc");

	return rc < 0 ? rc : 0;
}

/* A check that could not list ROOT/proc (err: -errno): what it could not tell, and why. */
static void unlisted(const struct checksys *cs, struct checksys_result *r, const char *name,
		     const char *unknown, int err)
{
	char path[PATH_MAX];

	path_at(cs, path, sizeof(path), "/proc");
	set(r, CHECKSYS_WARN, name, "cannot list %s (%s): %s; fix: %s", path,
	    strerrorname_np(-err), unknown, unlisted_fix(-err));
}

static bool find_irqbalance(const struct checksys *cs, long pid, void *arg)
{
	char comm[64];

	if (read_at(cs, comm, sizeof(comm), "/proc/%ld/comm", pid) < 0
	    || strcmp(comm, "irqbalance") != 0)
		return false;
	*(long *)arg = pid;
	return true;
}

void checksys_irqbalance(const struct checksys *cs, struct checksys_result *r)
{
	struct cpus pinned;
	char list[256];
	long pid = -1;
	int rc;

	rc = each_pid(cs, find_irqbalance, &pid);
	if (rc < 0 && pid < 0) {
		unlisted(cs, r, "irqbalance", "whether irqbalance runs is unknown", rc);
		return;
	}
	if (pid < 0) {
		set(r, CHECKSYS_OK, "irqbalance", "irqbalance is not running");
		return;
	}
	pinned_cpus(cs->conf, &pinned);
	if (cpus_empty(&pinned))
		snprintf(list, sizeof(list), "<the real-time CPUs>");
	else
		cpus_format(&pinned, list, sizeof(list));
	set(r, CHECKSYS_WARN, "irqbalance", "irqbalance runs (pid %ld): it moves device "
	    "interrupts onto the CPUs the real-time threads use; fix: "
	    "IRQBALANCE_BANNED_CPULIST=%s in /etc/default/irqbalance, or systemctl disable "
	    "--now irqbalance", pid, list);
}

/* ---- the tasks of ROOT/proc ---- */

/* One task's stat line, the fields the checks read. */
struct task {
	long pid;               /* its process */
	long tid;               /* its directory in ROOT/proc/PID/task; 0: read from PID/stat */
	long id;                /* the stat line's own (the thread's id) */
	char comm[64];
	unsigned long flags;
	unsigned long long ticks;       /* utime + stime, in clock ticks */
	unsigned long long start;       /* starttime: clock ticks after boot */
	long prio, policy;              /* rt_priority, policy */
};

/* false when the line is cut short */
static bool parse_stat(const char *stat, struct task *t)
{
	const char *open = strchr(stat, '('), *close = strrchr(stat, ')'), *p;
	int field = 3;

	if (open == NULL || close == NULL)
		return false;
	t->id = strtol(stat, NULL, 10);
	snprintf(t->comm, sizeof(t->comm), "%.*s", (int)(close - open - 1), open + 1);
	t->ticks = 0;
	/* fields after "(comm)": 3 state ... 9 flags ... 14 utime 15 stime ... 22 starttime
	 * ... 40 rt_priority 41 policy */
	for (p = close[1] != '\0' ? close + 2 : close + 1; *p != '\0' && field <= 41; field++) {
		if (field == 9)
			t->flags = strtoul(p, NULL, 10);
		else if (field == 14 || field == 15)
			t->ticks += strtoull(p, NULL, 10);
		else if (field == 22)
			t->start = strtoull(p, NULL, 10);
		else if (field == 40)
			t->prio = strtol(p, NULL, 10);
		else if (field == 41)
			t->policy = strtol(p, NULL, 10);
		p += strcspn(p, " ");
		p += *p == ' ';
	}
	return field > 41;
}

/* The name of a real-time policy; NULL for the others. */
static const char *rt_policy(long policy)
{
	static const char *const name[] = { [1] = "SCHED_FIFO", [2] = "SCHED_RR",
					    [6] = "SCHED_DEADLINE" };

	return policy >= 1 && policy <= 6 ? name[policy] : NULL;
}

struct task_walk {
	const struct checksys *cs;
	void (*fn)(const struct checksys *cs, const struct task *t, void *arg);
	void *arg;
	long pid;
	int err;                /* -errno of a /proc/PID/task that could not be listed, or 0 */
};

static void walk_stat(struct task_walk *w, long tid, const char *stat)
{
	struct task t = { .pid = w->pid, .tid = tid };

	if (parse_stat(stat, &t))
		w->fn(w->cs, &t, w->arg);
}

static int task_entry(const char *name, void *arg)
{
	struct task_walk *w = arg;
	char stat[1024];

	if (isdigit((unsigned char)name[0])
	    && read_at(w->cs, stat, sizeof(stat), "/proc/%ld/task/%s/stat", w->pid, name) > 0)
		walk_stat(w, strtol(name, NULL, 10), stat);
	return 0;
}

static bool walk_process(const struct checksys *cs, long pid, void *arg)
{
	struct task_walk *w = arg;
	char comm[64], stat[1024];
	int rc;

	/* portlogd itself: this check, or a running daemon at its own priorities */
	if (read_at(cs, comm, sizeof(comm), "/proc/%ld/comm", pid) >= 0
	    && strcmp(comm, "portlogd") == 0)
		return false;
	w->pid = pid;
	rc = rootfs_list(cs->root, task_entry, w, "/proc/%ld/task", pid);
	if (rc == -ENOENT || rc == -ENOTDIR || rc == -EACCES) {
		/* a process that ended meanwhile, or a fixture without task/ */
		if (read_at(cs, stat, sizeof(stat), "/proc/%ld/stat", pid) > 0)
			walk_stat(w, 0, stat);
	} else if (rc < 0 && w->err == 0) {
		w->err = rc;
	}
	return false;
}

/* Calls fn for every task of every process but portlogd's. Returns 0, or -errno when
 * ROOT/proc or a ROOT/proc/PID/task could not be listed (to the end). */
static int each_task(const struct checksys *cs,
		     void (*fn)(const struct checksys *, const struct task *, void *), void *arg)
{
	struct task_walk w = { .cs = cs, .fn = fn, .arg = arg };
	int rc = each_pid(cs, walk_process, &w);

	return rc < 0 ? rc : w.err;
}

struct rt_scan {
	int lo;                 /* report FIFO/RR tasks at or above this priority */
	unsigned found;
	size_t len;
	char list[640];
};

/* A real-time task of user space at or above lo? */
static void rt_task(const struct checksys *cs, const struct task *t, void *arg)
{
	struct rt_scan *sc = arg;
	const char *policy = rt_policy(t->policy);

	(void)cs;
	if ((t->flags & PF_KTHREAD) || policy == NULL || (t->policy != 6 && t->prio < sc->lo))
		return;
	if (sc->found++ < MAX_LISTED && sc->len < sizeof(sc->list))
		sc->len += (size_t)snprintf(sc->list + sc->len, sizeof(sc->list) - sc->len,
					    "%s%ld %s %s %ld", sc->len ? ", " : "", t->id, t->comm,
					    policy, t->prio);
}

void checksys_rt_tasks(const struct checksys *cs, struct checksys_result *r)
{
	struct rt_scan sc = { 0 };
	int hi, rc;

	prio_range(cs, &sc.lo, &hi);
	if (sc.lo == 0)
		sc.lo = 1;      /* every thread SCHED_OTHER: any real-time task comes first */
	rc = each_task(cs, rt_task, &sc);
	if (rc < 0) {
		unlisted(cs, r, "rt-tasks", "which real-time tasks run before portlogd's threads "
			 "is unknown", rc);
		return;
	}
	if (sc.found == 0) {
		set(r, CHECKSYS_OK, "rt-tasks", "no other user-space SCHED_FIFO/RR task at "
		    "priority %d or above, no SCHED_DEADLINE task (kernel threads not counted)",
		    sc.lo);
		return;
	}
	set(r, CHECKSYS_WARN, "rt-tasks", "%u user-space task%s at or above priority %d, our "
	    "lowest: %s%s; they run before portlogd's threads (or take turns with them); fix: "
	    "stop them, or lower them (chrt -o -p 0 PID; their unit's CPUSchedulingPolicy=), "
	    "or raise portlogd's priorities above theirs", sc.found, sc.found == 1 ? "" : "s",
	    sc.lo, sc.list, sc.found > MAX_LISTED ? ", ..." : "");
}

/* ---- the tty worker ---- */

/* A hex CPU mask as sysfs writes it ("f", "00000000,0000000f"); false when it is none. */
static bool cpus_parse_mask(struct cpus *s, const char *text)
{
	long bit = 0;
	bool any = false;

	memset(s, 0, sizeof(*s));
	for (size_t i = strlen(text); i-- > 0; ) {
		int c = (unsigned char)text[i], v;

		if (c == ',')
			continue;
		if (!isxdigit(c))
			return false;
		v = isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
		for (int b = 0; b < 4; b++, bit++)
			if (v >> b & 1)
				cpus_add(s, bit);
		any = true;
	}
	return any;
}

/* The mask as sysfs takes it: hex, groups of 32 CPUs separated by commas ("1,00000000"). */
static void cpus_hex(const struct cpus *s, char *out, size_t len)
{
	long top = 0;
	size_t n = 0;

	for (long c = 0; c < NCPUS; c++)
		top = cpus_has(s, c) ? c : top;
	out[0] = '\0';
	for (long g = top / 32; g >= 0 && n < len; g--) {
		unsigned v = 0;

		for (int b = 0; b < 32; b++)
			v |= (unsigned)cpus_has(s, g * 32 + b) << b;
		n += (size_t)snprintf(out + n, len - n, g == top / 32 ? "%x" : ",%08x", v);
	}
}

static unsigned cpus_count(const struct cpus *s)
{
	unsigned n = 0;

	for (long c = 0; c < NCPUS; c++)
		n += cpus_has(s, c);
	return n;
}

/* A busy real-time task, and the online CPUs it may run on. */
struct busy {
	long id;
	char comm[64];
	long policy, prio;
	int permille;           /* of a CPU since it started; -1: not known */
	struct cpus cpus;
};

struct tty_scan {
	struct cpus online;
	int *irq;                       /* the ports' interrupt lines: their threads are ours */
	unsigned nirq;
	unsigned long long now;         /* clock ticks since boot; 0: not known */
	struct busy *busy;
	unsigned nbusy, cap;
	unsigned idle;                  /* real-time tasks under CHECKSYS_BUSY_PERMILLE */
	bool nomem;
};

/*
 * What can starve the tty worker, a SCHED_OTHER kworker: a real-time task that is busy
 * on its CPU. Not a per-CPU kernel thread (migration/N and the like: moments of
 * housekeeping), not the interrupt threads of our ports (they hand it our bytes), not
 * one that used less than CHECKSYS_BUSY_PERMILLE of a CPU since it started (an idle
 * irq thread, multipathd: they run for moments).
 */
static void tty_task(const struct checksys *cs, const struct task *t, void *arg)
{
	struct tty_scan *sc = arg;
	struct busy b = { .id = t->id, .policy = t->policy, .prio = t->prio, .permille = -1 };
	char status[4096], pre[32];
	const char *list;
	int n;

	if (rt_policy(t->policy) == NULL
	    || (t->flags & (PF_KTHREAD | PF_NO_SETAFFINITY)) == (PF_KTHREAD | PF_NO_SETAFFINITY))
		return;
	for (unsigned i = 0; i < sc->nirq; i++) {
		snprintf(pre, sizeof(pre), "irq/%d-", sc->irq[i]);
		if (strncmp(t->comm, pre, strlen(pre)) == 0)
			return;
	}
	if (sc->now > t->start) {
		b.permille = (int)(t->ticks * 1000 / (sc->now - t->start));
		if (b.permille < CHECKSYS_BUSY_PERMILLE) {
			sc->idle++;
			return;
		}
	}
	snprintf(b.comm, sizeof(b.comm), "%s", t->comm);
	if (t->tid != 0)
		n = read_at(cs, status, sizeof(status), "/proc/%ld/task/%ld/status", t->pid, t->tid);
	else
		n = read_at(cs, status, sizeof(status), "/proc/%ld/status", t->pid);
	list = n > 0 ? field_of(status, "Cpus_allowed_list") : NULL;
	if (list != NULL)
		cpus_parse(&b.cpus, list, strcspn(list, "\n"));
	else
		b.cpus = sc->online;    /* not known: anywhere */
	for (size_t i = 0; i < NCPUS / 64; i++)
		b.cpus.bit[i] &= sc->online.bit[i];
	if (sc->nbusy == sc->cap) {
		unsigned cap = sc->cap ? 2 * sc->cap : 16;
		struct busy *more = realloc(sc->busy, cap * sizeof(*more));

		if (more == NULL) {
			sc->nomem = true;
			return;
		}
		sc->busy = more;
		sc->cap = cap;
	}
	sc->busy[sc->nbusy++] = b;
}

/* Can busy task k hold one of the CPUs of wq, moving the ones that hold them to another
 * (Kuhn's augmenting paths)? holder[c]: the task that holds CPU c, or -1. */
static bool hold_one(const struct tty_scan *sc, const struct cpus *wq, int *holder, unsigned k,
		     struct cpus *tried)
{
	for (long c = 0; c < NCPUS; c++) {
		if (!cpus_has(&sc->busy[k].cpus, c) || !cpus_has(wq, c) || cpus_has(tried, c))
			continue;
		cpus_add(tried, c);
		if (holder[c] < 0 || hold_one(sc, wq, holder, (unsigned)holder[c], tried)) {
			holder[c] = (int)k;
			return true;
		}
	}
	return false;
}

/* Can the busy tasks hold every CPU of wq at once (each one CPU at a time)? */
static bool hold_all(const struct tty_scan *sc, const struct cpus *wq)
{
	int holder[NCPUS];
	unsigned held = 0, want = cpus_count(wq);

	if (sc->nbusy < want)
		return false;
	for (long c = 0; c < NCPUS; c++)
		holder[c] = -1;
	for (unsigned k = 0; k < sc->nbusy && held < want; k++) {
		struct cpus tried = { 0 };

		held += hold_one(sc, wq, holder, k, &tried);
	}
	return held == want;
}

/* The interrupt lines of the config's ports (their devices below the root). */
static void ports_irqs(const struct checksys *cs, struct tty_scan *sc)
{
	const struct conf *c = cs->conf;
	const char *why;
	int irq;

	/* two a serial port (a tap's second port), one a parallel port */
	sc->irq = calloc(2 * (size_t)c->nserial + c->nparallel + 1, sizeof(*sc->irq));
	for (unsigned i = 0; cs->have_conf && sc->irq != NULL && i < c->nserial; i++) {
		if ((irq = irq_of_device(cs->root, c->serial[i].device, &why)) > 0)
			sc->irq[sc->nirq++] = irq;
		if (c->serial[i].tx_device[0] != '\0'
		    && (irq = irq_of_device(cs->root, c->serial[i].tx_device, &why)) > 0)
			sc->irq[sc->nirq++] = irq;
	}
	for (unsigned i = 0; cs->have_conf && sc->irq != NULL && i < c->nparallel; i++)
		if ((irq = irq_of_parallel(cs->root, &c->parallel[i], &why)) > 0)
			sc->irq[sc->nirq++] = irq;
	sc->nomem |= sc->irq == NULL;
}

/* "4242 spin SCHED_FIFO 50 on CPUs 1 (99% of a CPU)" for each busy task that may run on
 * wq (MAX_LISTED of them); count: how many may. */
static void busy_list(const struct tty_scan *sc, const struct cpus *wq, char *out, size_t len,
		      unsigned *count)
{
	size_t n = 0;

	*count = 0;
	out[0] = '\0';
	for (unsigned k = 0; k < sc->nbusy; k++) {
		const struct busy *b = &sc->busy[k];
		struct cpus there = b->cpus;
		char cpus[256], share[32];

		for (size_t i = 0; i < NCPUS / 64; i++)
			there.bit[i] &= wq->bit[i];
		if (cpus_empty(&there) || (*count)++ >= MAX_LISTED || n >= len)
			continue;
		cpus_format(&there, cpus, sizeof(cpus));
		if (b->permille >= 0)
			snprintf(share, sizeof(share), "%d%% of a CPU", b->permille / 10);
		else
			snprintf(share, sizeof(share), "share not known");
		n += (size_t)snprintf(out + n, len - n, "%s%ld %s %s %ld on CPUs %s (%s)",
				      n ? ", " : "", b->id, b->comm, rt_policy(b->policy), b->prio,
				      cpus, share);
	}
	if (*count > MAX_LISTED && n < len)
		snprintf(out + n, len - n, ", ...");
}

void checksys_tty_worker(const struct checksys *cs, struct checksys_result *r)
{
	struct tty_scan sc = { .nirq = 0 };
	struct cpus wq, free_cpus;
	char mask[256], up[32], cpus[256], list[768], idle[128] = "", fix[640], hex[160];
	char free_list[256];
	unsigned listed;
	int n = read_at(cs, mask, sizeof(mask), WQ_CPUMASK), rc;

	if (n < 0 || !cpus_parse_mask(&wq, mask)) {
		set(r, CHECKSYS_WARN, "tty-worker", "cannot read %s (%s): on which CPUs the kernel's "
		    "unbound workers (the tty worker) run is unknown; fix: check that no busy "
		    "real-time task runs on every CPU (ps -eLo pid,cls,rtprio,pcpu,psr,comm)",
		    WQ_CPUMASK, n < 0 ? strerrorname_np(-n) : "not a CPU mask");
		return;
	}
	cpus_online(cs, &sc.online);
	/* in clock ticks, as stat's times: USER_HZ, which sysconf says (no machine state) */
	if (read_at(cs, up, sizeof(up), "/proc/uptime") > 0)
		sc.now = (unsigned long long)(strtod(up, NULL) * (double)sysconf(_SC_CLK_TCK));
	ports_irqs(cs, &sc);
	rc = each_task(cs, tty_task, &sc);
	if (rc < 0 || sc.nomem) {
		free(sc.busy);
		free(sc.irq);
		unlisted(cs, r, "tty-worker", "which real-time tasks can starve the tty worker is "
			 "unknown", rc < 0 ? rc : -ENOMEM);
		return;
	}
	for (size_t i = 0; i < NCPUS / 64; i++)
		wq.bit[i] &= sc.online.bit[i];
	if (cpus_empty(&wq))
		wq = sc.online;         /* none of it online: the kernel runs them anywhere */
	cpus_format(&wq, cpus, sizeof(cpus));
	busy_list(&sc, &wq, list, sizeof(list), &listed);
	if (sc.idle > 0)
		snprintf(idle, sizeof(idle), " (%u idle real-time task%s, under %d.%d%% of a CPU "
			 "since they started, not counted)", sc.idle, sc.idle == 1 ? "" : "s",
			 CHECKSYS_BUSY_PERMILLE / 10, CHECKSYS_BUSY_PERMILLE % 10);
	if (listed == 0) {
		set(r, CHECKSYS_OK, "tty-worker", "cpumask %s: the kernel's unbound workers (the tty "
		    "worker) may run on CPUs %s; no busy real-time task runs there but portlogd's%s",
		    mask, cpus, idle);
	} else if (!hold_all(&sc, &wq)) {
		set(r, CHECKSYS_OK, "tty-worker", "cpumask %s: the kernel's unbound workers (the tty "
		    "worker) may run on CPUs %s; the busy real-time tasks there cannot hold all of "
		    "them at once: %s%s", mask, cpus, list, idle);
	} else {
		/* a mask to suggest: the online CPUs no busy task may run on */
		free_cpus = sc.online;
		for (unsigned k = 0; k < sc.nbusy; k++)
			for (size_t i = 0; i < NCPUS / 64; i++)
				free_cpus.bit[i] &= ~sc.busy[k].cpus.bit[i];
		if (cpus_empty(&free_cpus)) {
			snprintf(fix, sizeof(fix), "keep a CPU free of busy real-time tasks (taskset "
				 "-a -p -c CPUS PID, or their unit's CPUAffinity=) and give the mask "
				 "only such CPUs: echo MASK > %s", WQ_CPUMASK);
		} else {
			cpus_hex(&free_cpus, hex, sizeof(hex));
			cpus_format(&free_cpus, free_list, sizeof(free_list));
			snprintf(fix, sizeof(fix), "give the mask the CPUs no busy real-time task may "
				 "use (%s): echo %s > %s, or move a task off one of CPUs %s "
				 "(taskset -a -p -c CPUS PID, or its unit's CPUAffinity=)", free_list,
				 hex, WQ_CPUMASK, cpus);
		}
		set(r, CHECKSYS_WARN, "tty-worker", "cpumask %s: the kernel's unbound workers (the "
		    "tty worker) may run on CPUs %s, and busy real-time tasks can hold all of them "
		    "at once: %s%s; the tty worker (SCHED_OTHER: no priority of portlogd's reaches "
		    "it) then waits, and every port's bytes with it (EV late-delivery stage=tty); "
		    "fix: %s (the mask moves all unbound kernel work; portlogd-rt(7), THE TTY "
		    "WORKER)", mask, cpus, list, idle, fix);
	}
	free(sc.busy);
	free(sc.irq);
}

/* ---- the stall sensors ---- */

/* The clock sensor (clocksensor.h): wanted here, and can the daemon read the RTC? */
void checksys_clock_sensor(const struct checksys *cs, struct checksys_result *r)
{
	const struct conf *c = cs->conf;
	char why[160] = "clock_sensor = on", path[PATH_MAX], owner[128];
	struct stat st;

	if (!cs->have_conf || c->nserial == 0 || c->logger.clock_sensor == CONF_CLOCK_OFF) {
		set(r, CHECKSYS_OK, "clock-sensor", "off (%s): a pause of the whole machine is not "
		    "seen", c->nserial == 0 ? "no [serial] port" : "[logger] clock_sensor = off");
		return;
	}
	if (c->logger.clock_sensor == CONF_CLOCK_AUTO && !clock_sensor_virtual(cs->root, why,
									  sizeof(why))) {
		set(r, CHECKSYS_OK, "clock-sensor", "not a virtual machine (no hypervisor flag, "
		    "firmware vendor or /sys/hypervisor): no pause to see, the sensor stays off");
		return;
	}
	path_at(cs, path, sizeof(path), CLOCK_SENSOR_RTC);
	if (stat(path, &st) < 0) {
		set(r, CHECKSYS_WARN, "clock-sensor", "the machine is virtual (%s) but %s: %s, so a "
		    "pause of the whole machine goes unmarked; fix: an RTC for the guest (QEMU's "
		    "CMOS RTC, the kernel's rtc_cmos), or do not pause it (portlogd-rt(7))", why,
		    CLOCK_SENSOR_RTC, strerrorname_np(errno));
		return;
	}
	if (access(path, R_OK) < 0) {
		describe_owner(&st, owner, sizeof(owner));
		set(r, CHECKSYS_WARN, "clock-sensor", "the machine is virtual (%s) but %s (%s): uid "
		    "%u cannot read it, so a pause of the whole machine goes unmarked; fix: the udev "
		    "rule of 60-portlogd.rules (SUBSYSTEM==\"rtc\", GROUP=\"portlogd\", "
		    "MODE=\"0640\"), or run as root", why, CLOCK_SENSOR_RTC, owner,
		    (unsigned)getuid());
		return;
	}
	set(r, CHECKSYS_OK, "clock-sensor", "the machine is virtual (%s): portlogd reads %s's "
	    "update interrupt to mark a pause of the whole machine; serial lines reach the log "
	    "up to a second later (hwclock or chronyd's rtcfile holding it at start keeps it off)",
	    why, CLOCK_SENSOR_RTC);
}

void checksys_sensors(const struct checksys *cs, struct checksys_result *r)
{
	const struct conf *c = cs->conf;
	unsigned n, ncpu = 0;
	struct part_plan *t = parts_plan(c, &n);
	struct cpus on = { 0 }, online;
	long period = (long)c->logger.sensor_period_us;
	long per_s = 1000000 / period;
	int prio = parts_sensor_priority(c);
	char list[256], how[64], where[320];
	bool any = false;

	if (!cs->have_conf || c->nserial == 0) {
		set(r, CHECKSYS_OK, "stall-sensors", "no stall sensors (no [serial] port)");
		free(t);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		if (t[i].kind == PART_SENSOR) {
			any |= t[i].cpu == CONF_CPU_ANY;
			cpus_add(&on, t[i].cpu);
		}
	free(t);
	if (any) {
		cpus_online(cs, &online);
		on = online;
	}
	ncpu = cpus_count(&on);
	cpus_format(&on, list, sizeof(list));
	snprintf(where, sizeof(where), "%s%s%s", any ? "each CPU it may use (online: " : "CPUs ",
		 list, any ? "; a reader is not pinned)" : " (the readers')");
	if (prio == CONF_PRIO_OTHER)
		snprintf(how, sizeof(how), "SCHED_OTHER, as a reader");
	else
		snprintf(how, sizeof(how), "SCHED_FIFO %d, the readers' lowest", prio);
	set(r, CHECKSYS_OK, "stall-sensors", "sensor_period_us = %ld: a thread on %s, %s: %ld "
	    "wake-ups a second (each sensor's, and the probe's return, a period) and %ld runs "
	    "of the tty worker for the probes; a stall under %ld us of a CPU or of the tty path "
	    "can pass between two looks, and the boundary rule allows for it (portlogd-log(5), "
	    "PACKET BOUNDARIES)", period, where, how, (long)(ncpu + 1) * per_s, per_s,
	    period + period / 4);
}

/* The soft limit of a "Max ..." line of ROOT/proc/self/limits: a number, -1 for
 * unlimited, -2 when unknown. */
static long long soft_limit(const struct checksys *cs, const char *key)
{
	char limits[4096];
	const char *v;

	if (read_at(cs, limits, sizeof(limits), "/proc/self/limits") < 0
	    || (v = field_of(limits, key)) == NULL)
		return -2;
	if (strncmp(v, "unlimited", 9) == 0)
		return -1;
	return isdigit((unsigned char)*v) ? strtoll(v, NULL, 10) : -2;
}

/* A privilege the daemon asks for: a capability, or a soft limit high enough. */
struct privilege {
	const char *check, *cap, *rlimit, *key; /* key: its line in /proc/self/limits */
	int cap_bit;
	char ulimit;                            /* the ulimit option that shows it */
	long long need;                         /* the limit that suffices; -1: unlimited */
	const char *allows;                     /* "SCHED_FIFO at 97" */
	const char *shortfall;                  /* after "RLIMIT_X = N" when too low */
	const char *lost;                       /* what best-effort runs without */
	const char *unit_fix, *limits_fix;      /* "LimitRTPRIO=97", "rtprio 97" */
};

static void check_privilege(const struct checksys *cs, const struct privilege *p,
			    struct checksys_result *r)
{
	enum checksys_level bad = cs->conf->logger.rt_required ? CHECKSYS_FAIL : CHECKSYS_WARN;
	long long lim = soft_limit(cs, p->key);
	int cap = has_cap(cs, p->cap_bit);
	char shown[32];

	if (lim == -1)
		snprintf(shown, sizeof(shown), "unlimited");
	else
		snprintf(shown, sizeof(shown), "%lld", lim);
	if (cap == 1)
		set(r, CHECKSYS_OK, p->check, "%s: %s allowed", p->cap, p->allows);
	else if (lim == -1 || (p->need >= 0 && lim >= p->need))
		set(r, CHECKSYS_OK, p->check, "%s = %s: %s allowed", p->rlimit, shown, p->allows);
	else if (lim == -2 || cap < 0)
		set(r, CHECKSYS_WARN, p->check, "cannot read %s or CapEff from /proc/self; fix: "
		    "check ulimit -%c and the unit's %.*s=", p->rlimit, p->ulimit,
		    (int)strcspn(p->unit_fix, "="), p->unit_fix);
	else
		set(r, bad, p->check, "no %s and %s = %s%s: %s; fix: AmbientCapabilities=%s or %s "
		    "in the unit, or 'USER - %s' in /etc/security/limits.d/portlogd.conf", p->cap,
		    p->rlimit, shown, p->shortfall,
		    bad == CHECKSYS_FAIL ? "rt = required stops the start" : p->lost, p->cap,
		    p->unit_fix, p->limits_fix);
}

void checksys_rlimit_rtprio(const struct checksys *cs, struct checksys_result *r)
{
	char allows[32], shortfall[64], unit_fix[32], limits_fix[32];
	int lo, hi;

	prio_range(cs, &lo, &hi);
	if (hi == 0) {
		set(r, CHECKSYS_OK, "rlimit-rtprio", "every thread is SCHED_OTHER (priority = "
		    "other): no privilege needed");
		return;
	}
	snprintf(allows, sizeof(allows), "SCHED_FIFO at %d", hi);
	snprintf(shortfall, sizeof(shortfall), ", below %d, the highest configured priority", hi);
	snprintf(unit_fix, sizeof(unit_fix), "LimitRTPRIO=%d", hi);
	snprintf(limits_fix, sizeof(limits_fix), "rtprio %d", hi);
	check_privilege(cs, &(struct privilege){
		.check = "rlimit-rtprio", .cap = "CAP_SYS_NICE", .rlimit = "RLIMIT_RTPRIO",
		.key = "Max realtime priority", .cap_bit = CAP_SYS_NICE_BIT, .ulimit = 'r',
		.need = hi, .allows = allows, .shortfall = shortfall,
		.lost = "every thread would run SCHED_OTHER", .unit_fix = unit_fix,
		.limits_fix = limits_fix }, r);
}

/* What the config locks: its sensors on each online CPU when a reader is not pinned. */
static void plan_memory(const struct checksys *cs, struct memory *m)
{
	struct cpus online;

	memory_plan(cs->conf, cpus_online(cs, &online) ? cpus_count(&online) : 1, m);
}

void checksys_rlimit_memlock(const struct checksys *cs, struct checksys_result *r)
{
	struct memory m;
	char shortfall[96], allows[64], total[24];

	plan_memory(cs, &m);
	memory_size(m.total, total, sizeof(total));
	snprintf(allows, sizeof(allows), "mlockall of the %s the config locks", total);
	snprintf(shortfall, sizeof(shortfall), " bytes, below the %s the config locks (--check-"
		 "config)", total);
	check_privilege(cs, &(struct privilege){
		.check = "rlimit-memlock", .cap = "CAP_IPC_LOCK", .rlimit = "RLIMIT_MEMLOCK",
		.key = "Max locked memory", .cap_bit = CAP_IPC_LOCK_BIT, .ulimit = 'l',
		.need = (long long)m.total, .allows = allows, .shortfall = shortfall,
		.lost = "memory stays unlocked and a page fault can stall a real-time thread",
		.unit_fix = "LimitMEMLOCK=infinity", .limits_fix = "memlock unlimited" }, r);
}

void checksys_memory(const struct checksys *cs, struct checksys_result *r)
{
	struct memory_limits l;
	struct memory m;
	char total[24], rings[24], stacks[24], bufs[24], have[24], all[24], err[512];

	plan_memory(cs, &m);
	memory_limits_read(cs->root, &l);
	snprintf(err, sizeof(err), "the config locks about %s (%u rings %s, %u threads' stacks "
		 "%s, buffers %s, the program and its libraries)",
		 memory_size(m.total, total, sizeof(total)), m.nrings,
		 memory_size(m.rings, rings, sizeof(rings)), m.threads,
		 memory_size(m.stacks, stacks, sizeof(stacks)),
		 memory_size(m.buffers, bufs, sizeof(bufs)));
	if (l.available < 0 || l.total < 0) {
		set(r, CHECKSYS_WARN, "memory", "%s; cannot read MemAvailable and MemTotal in "
		    "/proc/meminfo; fix: check free(1) for room", err);
		return;
	}
	memory_size((uint64_t)l.available, have, sizeof(have));
	memory_size((uint64_t)l.total, all, sizeof(all));
	if (memory_check_ram(cs->conf, &m, &l, err, sizeof(err)) < 0)
		set(r, CHECKSYS_FAIL, "memory", "the daemon will not start: %s", err);
	else if (m.total > (uint64_t)l.total / 2)
		set(r, CHECKSYS_WARN, "memory", "%s of the %s this machine has (%s available): more "
		    "than half, what else runs here may be killed when memory runs short; fix: "
		    "lower [logger] ring_seconds (now %u) or set ring_records (portlogd.conf(5), "
		    "MEMORY)", err, all, have, cs->conf->logger.ring_seconds);
	else
		set(r, CHECKSYS_OK, "memory", "%s of the %s available (MemAvailable; %s in all)", err,
		    have, all);
}

void checksys_threads(const struct checksys *cs, struct checksys_result *r)
{
	struct memory_limits l;
	struct memory m;
	char err[512], nproc[48] = "", pids[96] = "", kernel[96] = "";

	plan_memory(cs, &m);
	memory_limits_read(cs->root, &l);
	if (memory_check_threads(&m, &l, err, sizeof(err)) < 0) {
		set(r, CHECKSYS_FAIL, "threads", "the daemon will not start: %s", err);
		return;
	}
	if (l.root)
		snprintf(nproc, sizeof(nproc), "root: no RLIMIT_NPROC");
	else if (l.nproc == -1)
		snprintf(nproc, sizeof(nproc), "RLIMIT_NPROC unlimited");
	else if (l.nproc >= 0)
		snprintf(nproc, sizeof(nproc), "RLIMIT_NPROC %lld", l.nproc);
	if (l.pids_max == -1)
		snprintf(pids, sizeof(pids), ", the cgroup's pids.max unlimited");
	else if (l.pids_max >= 0 && l.pids_now >= 0)
		snprintf(pids, sizeof(pids), ", the cgroup's pids.max %lld (%lld now)", l.pids_max,
			 l.pids_now);
	if (l.threads_max >= 0 && l.threads_now >= 0)
		snprintf(kernel, sizeof(kernel), ", kernel.threads-max %lld (%lld now)",
			 l.threads_max, l.threads_now);
	if (nproc[0] == '\0' && kernel[0] == '\0') {
		set(r, CHECKSYS_WARN, "threads", "the config starts %u threads; cannot read "
		    "/proc/self/limits and /proc/sys/kernel/threads-max; fix: check ulimit -u and "
		    "the unit's TasksMax=", m.threads);
		return;
	}
	set(r, CHECKSYS_OK, "threads", "the config starts %u threads: %s%s%s", m.threads,
	    nproc[0] != '\0' ? nproc : "RLIMIT_NPROC not known", pids, kernel);
}

void checksys_clocksource(const struct checksys *cs, struct checksys_result *r)
{
	/* read from user space through the vDSO, no system call per timestamp */
	static const char *const fast[] = { "tsc", "arch_sys_counter", "riscv_clocksource",
					    "hyperv_clocksource_tsc_page", "timebase", NULL };
	const char *dir = "/sys/devices/system/clocksource/clocksource0";
	char cur[64], avail[256];
	int n = read_at(cs, cur, sizeof(cur), "%s/current_clocksource", dir);

	if (n < 0) {
		set(r, CHECKSYS_WARN, "clocksource", "cannot read %s/current_clocksource (%s); "
		    "fix: check it by hand, tsc is best on x86", dir, strerrorname_np(-n));
		return;
	}
	for (int i = 0; fast[i] != NULL; i++)
		if (strcmp(cur, fast[i]) == 0) {
			set(r, CHECKSYS_OK, "clocksource", "%s: read in user space, no system call "
			    "per timestamp", cur);
			return;
		}
	if (strcmp(cur, "kvm-clock") == 0) {
		/* pvclock: vDSO-readable when the host marks it stable, which it normally does */
		set(r, CHECKSYS_OK, "clocksource", "kvm-clock: a virtual machine's paravirtual "
		    "clock, normally read in user space from the TSC like tsc; the stable choice "
		    "in a VM");
		return;
	}
	if (read_at(cs, avail, sizeof(avail), "%s/available_clocksource", dir) < 0)
		avail[0] = '\0';
	set(r, CHECKSYS_WARN, "clocksource", "%s (available: %s): every timestamp is a system "
	    "call and a slow device read; fix: if the TSC is stable (no 'TSC unstable' in "
	    "dmesg), boot with clocksource=tsc tsc=reliable, or echo tsc > "
	    "%s/current_clocksource", cur, avail, dir);
}

/*
 * Which time synchronisation daemons run (their comm names below ROOT/proc; a
 * comm is cut at 15 characters, so systemd-timesyncd is "systemd-timesyn"),
 * and whether the kernel says the clock is synchronised (clockq.h: adjtimex,
 * maxerror below 16 s, as timedatectl judges it).
 */
static const char *const time_daemons[][2] = {
	{ "chronyd", "chronyd" }, { "systemd-timesyn", "systemd-timesyncd" }, { "ntpd", "ntpd" },
	{ "ptp4l", "ptp4l" }, { "phc2sys", "phc2sys" },
};
#define NTIME_DAEMONS (sizeof(time_daemons) / sizeof(time_daemons[0]))

static bool find_time_daemon(const struct checksys *cs, long pid, void *arg)
{
	bool *found = arg;
	char comm[64];

	if (read_at(cs, comm, sizeof(comm), "/proc/%ld/comm", pid) < 0)
		return false;
	for (size_t i = 0; i < NTIME_DAEMONS; i++)
		found[i] |= strcmp(comm, time_daemons[i][0]) == 0;
	return false;
}

void checksys_clock(const struct checksys *cs, struct checksys_result *r)
{
	bool found[NTIME_DAEMONS] = { false };
	struct clockq_state st;
	char names[128] = "";
	size_t n = 0;

	each_pid(cs, find_time_daemon, found);
	for (size_t i = 0; i < NTIME_DAEMONS; i++)
		if (found[i])
			n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", n ? ", " : "",
					      time_daemons[i][1]);
	clockq_read(&st);
	if (st.err != 0) {
		set(r, CHECKSYS_WARN, "clock", "%s; cannot read the clock's synchronisation state "
		    "(adjtimex: %s): EV clock lines will say synced=unknown; fix: allow adjtimex "
		    "and clock_adjtime (systemd: SystemCallFilter=adjtimex clock_adjtime, no "
		    "ProtectClock=)", n ? names : "no synchronisation daemon found",
		    strerrorname_np(st.err));
		return;
	}
	if (st.synced) {
		set(r, CHECKSYS_OK, "clock", "synchronised%s%s%s: maximum error %lld us, estimated "
		    "error %lld us%s", n ? " (" : "", names, n ? " runs)" : " (no synchronisation "
		    "daemon found here: the host's, in a container?)", (long long)st.maxerror_us,
		    (long long)st.esterror_us, st.leap ? ", a leap second is announced" : "");
		return;
	}
	if (n > 0) {
		set(r, CHECKSYS_WARN, "clock", "%s runs, but the clock is not synchronised (maximum "
		    "error %lld us): log times may be off by any amount; fix: check its sources and "
		    "the network (chronyc sources and chronyc tracking; timedatectl timesync-status; "
		    "ntpq -p; pmc -u -b 0 'GET TIME_STATUS_NP' for ptp4l)", names,
		    (long long)st.maxerror_us);
		return;
	}
	set(r, CHECKSYS_WARN, "clock", "no time synchronisation daemon runs (chronyd, "
	    "systemd-timesyncd, ntpd, ptp4l/phc2sys) and the clock is not synchronised (maximum "
	    "error %lld us): log times may be off by any amount; fix: apt install chrony (or "
	    "systemctl enable --now systemd-timesyncd); for microseconds, a PPS or PTP "
	    "reference (gpsd with chrony, linuxptp)", (long long)st.maxerror_us);
}

bool checksys_metrics_file(const struct checksys *cs, struct checksys_result *r)
{
	const char *file = cs->conf->logger.metrics_file;
	char dir[PATH_MAX], full[PATH_MAX], *slash;
	struct stat st;
	int rc;

	if (!cs->have_conf || file[0] == '\0')
		return false;
	snprintf(dir, sizeof(dir), "%s", file);
	slash = strrchr(dir, '/');      /* an absolute path (conf_keys.c: t_abspath) */
	*(slash == dir ? slash + 1 : slash) = '\0';
	path_at(cs, full, sizeof(full), "%s", dir);
	rc = stat(full, &st);
	if (rc < 0 || !S_ISDIR(st.st_mode))
		set(r, CHECKSYS_FAIL, "metrics-file", "%s: no directory %s (%s); fix: install "
		    "prometheus-node-exporter (Debian's makes /var/lib/prometheus/node-exporter), "
		    "or make the directory that its --collector.textfile.directory names", file,
		    dir, strerrorname_np(rc < 0 ? errno : ENOTDIR));
	else if (access(full, W_OK | X_OK) < 0 || !files_can_be_made(full))
		set(r, CHECKSYS_FAIL, "metrics-file", "%s: uid %u cannot make files in %s (%s); "
		    "fix: let the service user write there (Debian, kept across upgrades: "
		    "dpkg-statoverride --update --add root portlogd 775 %s), or choose a directory "
		    "it may write and point node_exporter's --collector.textfile.directory there; "
		    "the unit's ReadWritePaths= must name it too", file, (unsigned)getuid(), dir,
		    errno != 0 ? strerrorname_np(errno) : "a read-only or kernel file system", dir);
	else
		set(r, CHECKSYS_OK, "metrics-file", "%s: %s writable by uid %u; node_exporter "
		    "serves it when its --collector.textfile.directory is %s", file, dir,
		    (unsigned)getuid(), dir);
	return true;
}
