/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rt.c - memory locking, CPU idle states, SCHED_FIFO: set up, or say what is missing. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fmt.h"
#include "parts.h"
#include "rt.h"
#include "thread.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RT_SANITIZER 1      /* terabytes of shadow mappings: mlockall would exhaust memory */
#else
#define RT_SANITIZER 0
#endif

static const char *const item_name[RT_NITEMS] = {
	[RT_FIFO] = "sched_fifo", [RT_MLOCK] = "mlockall", [RT_DMA] = "cpu_dma_latency",
	[RT_CPU_QOS] = "pm_qos_resume_latency",
};

void rt_init(struct rt *rt, const struct conf *c)
{
	unsigned n;
	struct part_plan *t = parts_plan(c, &n);
	int prio = 0;
	cpu_set_t cpus;
	enum conf_idle idle = idle_plan(c, &cpus);

	memset(rt, 0, sizeof(*rt));
	rt->idle.dma_fd = -1;
	rt->memlock = -1;
	/*
	 * One malloc arena for every thread. glibc gives each thread that calls malloc
	 * (pthread_getattr_np does, in thread.c) an arena of its own, a 64 MiB
	 * reservation; mlockall counts reservations in VmLck and against RLIMIT_MEMLOCK,
	 * 64 MiB a thread for nothing. The threads allocate only at start-up and when a
	 * port reopens, never on the real-time path, so sharing one arena costs no wait
	 * that matters. Before any thread starts: the probe below is the first.
	 */
	(void)mallopt(M_ARENA_MAX, 1);      /* cannot fail for 1 */
	for (unsigned i = 0; i < n; i++)
		prio = t[i].priority > prio ? t[i].priority : prio;
	free(t);        /* NULL when out of memory: no probe, the threads will say */
	rt->fifo_prio = prio;
	rt->wanted[RT_FIFO] = prio > 0;
	rt->wanted[RT_MLOCK] = !RT_SANITIZER;
	rt->wanted[RT_DMA] = idle == CONF_IDLE_GLOBAL;
	rt->wanted[RT_CPU_QOS] = idle == CONF_IDLE_PINNED;
}

static int check_cpu(const cpu_set_t *allowed, const struct part_plan *t, const struct conf *c,
		     char *err, size_t errlen)
{
	char list[256], key[CONF_NAME_MAX + 32];
	size_t n = 0;

	if (t->cpu < 0 || CPU_ISSET((size_t)t->cpu, allowed))
		return 0;
	for (int i = 0; i < CPU_SETSIZE && n < sizeof(list) - 8; i++)
		if (CPU_ISSET((size_t)i, allowed))
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", n ? "," : "", i);
	parts_cpu_key(t, key, sizeof(key));
	snprintf(err, errlen, "%s:%d: %s: no thread of this process can run on CPU %d "
		 "(offline, absent, or outside its cpuset); use one of %s, or any", c->path, t->line,
		 key, t->cpu, list);
	return -1;
}

/*
 * The CPUs a thread of this process can be pinned to. Not this process's own
 * affinity: a service inherits init's, which the kernel narrows to the
 * non-isolated CPUs at boot (isolcpus=3 gives 0-2), yet pinning a thread to CPU 3
 * works, because the kernel limits affinity by the cpuset, not by the current
 * mask. So ask the kernel: pin this thread to each online CPU in turn (EINVAL:
 * not in our cpuset), then put its mask back. False when that cannot be done.
 */
static bool cpus_pinnable(cpu_set_t *out)
{
	cpu_set_t saved, one;
	long n = sysconf(_SC_NPROCESSORS_CONF);

	if (sched_getaffinity(0, sizeof(saved), &saved) < 0)
		return false;
	CPU_ZERO(out);
	for (long i = 0; i < n && i < CPU_SETSIZE; i++) {
		CPU_ZERO(&one);
		CPU_SET((size_t)i, &one);
		if (sched_setaffinity(0, sizeof(one), &one) == 0)
			CPU_SET((size_t)i, out);
	}
	(void)sched_setaffinity(0, sizeof(saved), &saved);   /* it held before: it holds */
	return true;
}

int rt_check_cpus(const struct conf *c, char *err, size_t errlen)
{
	unsigned n;
	struct part_plan *t;
	cpu_set_t allowed;
	int rc = 0;

	if (!cpus_pinnable(&allowed))
		return 0;       /* cannot know: pthread_create will say EINVAL */
	if ((t = parts_plan(c, &n)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", c->path);
		return -1;
	}
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = check_cpu(&allowed, &t[i], c, err, errlen);
	free(t);
	return rc;
}

static void *probe(void *arg)
{
	return arg;
}

/* A short-lived thread started the way every real one is: refused SCHED_FIFO,
 * thread_start falls back to SCHED_OTHER and says so in `degraded`. */
void rt_probe_fifo(struct rt *rt)
{
	struct thread t;
	int degraded = 0;

	if (!rt->wanted[RT_FIFO])
		return;
	/* other failures (EAGAIN) are no verdict on the privilege; the threads will tell */
	if (thread_start(&t, "plog-probe", rt->fifo_prio, -1, probe, NULL, &degraded) == 0)
		thread_join(&t);
	rt->err[RT_FIFO] = degraded ? EPERM : 0;
}

void rt_lock_memory(struct rt *rt, uint64_t need, bool lockable, long long memlock)
{
	rt->lock_need = need;
	if (!rt->wanted[RT_MLOCK])
		return;
	if (!lockable) {
		rt->err[RT_MLOCK] = ENOMEM;
		rt->memlock = memlock;
		return;
	}
	if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		rt->err[RT_MLOCK] = errno;
}

void rt_hold_idle(struct rt *rt, const struct conf *c)
{
	idle_hold(&rt->idle, c, "");
	rt->err[RT_CPU_QOS] = rt->idle.cpu_err;
	/* refused per CPU, the global device was asked instead */
	rt->wanted[RT_DMA] |= rt->idle.fell_back;
	rt->err[RT_DMA] = rt->idle.dma_err;
}

void rt_fini(struct rt *rt)
{
	idle_release(&rt->idle, "");
}

bool rt_degraded(const struct rt *rt)
{
	for (int i = 0; i < RT_NITEMS; i++)
		if (rt->err[i] != 0)
			return true;
	return false;
}

static long long limit(int resource)
{
	struct rlimit rl;

	if (getrlimit(resource, &rl) < 0)
		return -1;
	return rl.rlim_cur == RLIM_INFINITY ? -1 : (long long)rl.rlim_cur;
}

bool rt_describe(const struct rt *rt, enum rt_item item, char *kv, size_t kvlen,
		 char *prose, size_t proselen)
{
	int e = rt->err[item];
	struct fmt_kv f;

	if (e == 0)
		return false;
	fmt_kv_init(&f, kv, kvlen);
	fmt_kv_str(&f, "item", item_name[item]);
	switch (item) {
	case RT_FIFO:
		fmt_kv_str(&f, "need", "CAP_SYS_NICE");
		fmt_kv_i64(&f, "rlimit_rtprio", limit(RLIMIT_RTPRIO));
		fmt_kv_i64(&f, "priority", rt->fifo_prio);
		snprintf(prose, proselen, "SCHED_FIFO at priority %d is not permitted (%s): every "
			 "thread runs SCHED_OTHER, and any busy process can delay a timestamp by "
			 "milliseconds. Grant CAP_SYS_NICE (systemd: AmbientCapabilities=CAP_SYS_NICE) "
			 "or raise RLIMIT_RTPRIO to %d (LimitRTPRIO=%d, or rtprio in "
			 "/etc/security/limits.conf)", rt->fifo_prio, strerrorname_np(e),
			 rt->fifo_prio, rt->fifo_prio);
		break;
	case RT_MLOCK:
		fmt_kv_str(&f, "need", "CAP_IPC_LOCK");
		fmt_kv_i64(&f, "rlimit_memlock", limit(RLIMIT_MEMLOCK));
		if (rt->lock_need > 0)
			fmt_kv_u64(&f, "locks_kib", rt->lock_need >> 10);
		if (rt->memlock >= 0)
			snprintf(prose, proselen, "not locking memory: the config locks about %llu "
				 "MiB and RLIMIT_MEMLOCK is %lld KiB, so mlockall would make the "
				 "threads' stacks fail; under memory pressure a real-time thread can "
				 "take a page fault, milliseconds with a disk. Grant CAP_IPC_LOCK "
				 "(AmbientCapabilities=CAP_IPC_LOCK) or raise RLIMIT_MEMLOCK "
				 "(LimitMEMLOCK=infinity, or at least %llu MiB)",
				 (unsigned long long)(rt->lock_need >> 20) + 1, rt->memlock >> 10,
				 (unsigned long long)(rt->lock_need >> 20) + 1);
		else
			snprintf(prose, proselen, "cannot lock memory with mlockall (%s): under "
				 "memory pressure a real-time thread can take a page fault, "
				 "milliseconds with a disk. Grant CAP_IPC_LOCK "
				 "(AmbientCapabilities=CAP_IPC_LOCK) or raise RLIMIT_MEMLOCK "
				 "(LimitMEMLOCK=infinity)", strerrorname_np(e));
		break;
	case RT_DMA:
		fmt_kv_str(&f, "need", "write:/dev/cpu_dma_latency");
		snprintf(prose, proselen, "cannot hold /dev/cpu_dma_latency (%s): CPUs may enter "
			 "deep idle states, which adds their exit latency (up to hundreds of us) "
			 "to wake-ups. Run as root, give the service user write access to "
			 "/dev/cpu_dma_latency (a udev rule), or set [timer] idle_latency = off",
			 strerrorname_np(e));
		break;
	case RT_CPU_QOS:
		fmt_kv_str(&f, "need", "write:/sys/devices/system/cpu/cpuN/power/"
			   "pm_qos_resume_latency_us");
		fmt_kv_i64(&f, "cpu", rt->idle.err_cpu);
		fmt_kv_str(&f, "fallback", rt->idle.dma_err == 0 ? "cpu_dma_latency" : "none");
		snprintf(prose, proselen, "cannot set the idle latency of CPU %d (%s), one the "
			 "real-time threads are pinned to: every CPU is held out of deep idle "
			 "states instead (/dev/cpu_dma_latency%s). Give the service user write "
			 "access to /sys/devices/system/cpu/cpu*/power/pm_qos_resume_latency_us "
			 "(the udev rule and ReadWritePaths= of the shipped unit), or set [timer] "
			 "idle_latency = global:0", rt->idle.err_cpu, strerrorname_np(e),
			 rt->idle.dma_err == 0 ? "" : ", which was refused too");
		break;
	default:
		return false;
	}
	return true;
}

void rt_summary(const struct rt *rt, char *buf, size_t len)
{
	const char *sep = ":";
	size_t n;

	if (!rt_degraded(rt)) {
		snprintf(buf, len, "rt ok");
		return;
	}
	n = (size_t)snprintf(buf, len, "rt degraded");
	for (int i = 0; i < RT_NITEMS && n < len; i++)
		if (rt->err[i] != 0) {
			n += (size_t)snprintf(buf + n, len - n, "%s no %s", sep, item_name[i]);
			sep = ",";
		}
}
