/* SPDX-License-Identifier: GPL-2.0-or-later */
/* idle.c - PM QoS for the daemon's run: /dev/cpu_dma_latency, or per-CPU resume latencies. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "idle.h"
#include "irq.h"
#include "parts.h"
#include "rootfs.h"

enum conf_idle idle_plan(const struct conf *c, cpu_set_t *cpus)
{
	struct part_plan *t;
	unsigned n;
	bool all = true, any = false;

	CPU_ZERO(cpus);
	if (c->timer.idle_scope == CONF_IDLE_OFF || c->timer.idle_scope == CONF_IDLE_GLOBAL)
		return c->timer.idle_scope;
	if ((t = parts_plan(c, &n)) == NULL)
		return CONF_IDLE_GLOBAL;        /* out of memory: every CPU, which needs no list */
	for (unsigned i = 0; i < n; i++) {
		if (t[i].priority <= 0)
			continue;       /* SCHED_OTHER: no real-time wake-up to keep fast */
		any = true;
		if (t[i].cpu < 0)
			all = false;    /* it may run, and be woken, on any CPU */
		else
			CPU_SET((size_t)t[i].cpu, cpus);
	}
	free(t);
	if (c->timer.idle_scope == CONF_IDLE_PINNED)
		return CONF_IDLE_PINNED;        /* as asked, even with threads left free */
	if (!any)
		return CONF_IDLE_OFF;           /* auto: no real-time wake-up (no port) */
	return all ? CONF_IDLE_PINNED : CONF_IDLE_GLOBAL;
}

int idle_c1_us(const char *root)
{
	char name[64], lat[32];

	/* cpu0's states in order; the first that is not POLL halts the CPU (C1, haltpoll) */
	for (int st = 0; st < 16; st++) {
		if (rootfs_read(root, name, sizeof(name), IDLE_STATE_FILE, 0, st, "name") < 0
		    || rootfs_read(root, lat, sizeof(lat), IDLE_STATE_FILE, 0, st, "latency") < 0)
			return -1;
		if (strcmp(name, "POLL") != 0)
			return atoi(lat);
	}
	return -1;
}

int idle_us(const struct conf *c, const char *root)
{
	int us;

	if (c->timer.idle_scope != CONF_IDLE_AUTO)
		return c->timer.idle_us;
	us = idle_c1_us(root);
	return us < 0 ? 0 : us;
}

enum conf_idle idle_cpus(const struct conf *c, const char *root, cpu_set_t *cpus)
{
	enum conf_idle scope = idle_plan(c, cpus);

	/* auto with no idle state to keep the CPUs from (no cpuidle driver): nothing held */
	if (c->timer.idle_scope == CONF_IDLE_AUTO && scope != CONF_IDLE_OFF && idle_c1_us(root) < 0)
		return CONF_IDLE_OFF;

	/* a UART's byte wakes its reader from the CPU its interrupt goes to */
	if (scope == CONF_IDLE_PINNED)
		irq_serial_cpus(root, c, cpus);
	return scope;
}

static void hold_global(struct idle *s, const char *root)
{
	char path[PATH_MAX];
	int32_t v = s->us;
	int fd;

	s->scope = CONF_IDLE_GLOBAL;
	/* the request lasts as long as the file stays open (Documentation/power/pm_qos_interface) */
	rootfs_path(root, path, sizeof(path), "/dev/cpu_dma_latency");
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		s->dma_err = errno;
		return;
	}
	if (write(fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
		s->dma_err = errno != 0 ? errno : EIO;
		close(fd);
		return;
	}
	s->dma_fd = fd;
}

static void put_back(struct idle *s, const char *root)
{
	/* "0" is no limit and "n/a" a limit of 0: both are written back as read */
	while (s->ncpu > 0) {
		const struct idle_cpu *c = &s->cpu[--s->ncpu];

		(void)rootfs_write(root, c->old, IDLE_QOS_FILE, c->cpu);   /* it took ours */
	}
}

void idle_hold(struct idle *s, const struct conf *c, const char *root)
{
	cpu_set_t cpus;
	char value[16];

	memset(s, 0, sizeof(*s));
	s->dma_fd = -1;
	s->err_cpu = -1;
	s->us = idle_us(c, root);
	s->scope = idle_cpus(c, root, &cpus);
	if (s->scope == CONF_IDLE_OFF)
		return;
	if (s->scope == CONF_IDLE_GLOBAL) {
		hold_global(s, root);
		return;
	}
	/* sysfs: "n/a" is 0 us, "0" no limit (pm_qos_resume_latency_us_store) */
	if (s->us == 0)
		snprintf(value, sizeof(value), "n/a");
	else
		snprintf(value, sizeof(value), "%d", s->us);
	for (int cpu = 0; cpu < CPU_SETSIZE && s->ncpu < IDLE_MAX_CPUS; cpu++) {
		struct idle_cpu *ic = &s->cpu[s->ncpu];
		int rc;

		if (!CPU_ISSET((size_t)cpu, &cpus))
			continue;
		ic->cpu = cpu;
		rc = rootfs_read(root, ic->old, sizeof(ic->old), IDLE_QOS_FILE, cpu);
		if (rc >= 0)
			rc = rootfs_write(root, value, IDLE_QOS_FILE, cpu);
		if (rc < 0) {
			/* all or nothing: the global limit keeps the threads' CPUs awake too */
			s->cpu_err = -rc;
			s->err_cpu = cpu;
			put_back(s, root);
			s->fell_back = true;
			hold_global(s, root);
			return;
		}
		s->ncpu++;
	}
}

void idle_release(struct idle *s, const char *root)
{
	put_back(s, root);
	if (s->dma_fd >= 0)
		close(s->dma_fd);
	s->dma_fd = -1;
}
