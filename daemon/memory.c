/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memory.c - what a config locks (rings, stacks, buffers), and the machine's limits for it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flush.h"
#include "memory.h"
#include "metrics.h"
#include "parts.h"
#include "pass.h"
#include "rootfs.h"
#include "sampler.h"
#include "sensor.h"
#include "serial.h"
#include "thread.h"

#define CAP_IPC_LOCK_BIT 14
#define GUARD 4096              /* glibc's guard page below each thread's stack */

const char *memory_size(uint64_t n, char *buf, size_t len)
{
	if (n >= 10ull << 30)
		snprintf(buf, len, "%.0f GiB", (double)n / (1 << 30));
	else if (n >= 1ull << 30)
		snprintf(buf, len, "%.1f GiB", (double)n / (1 << 30));
	else if (n >= 10ull << 20)
		snprintf(buf, len, "%.0f MiB", (double)n / (1 << 20));
	else if (n >= 1ull << 20)
		snprintf(buf, len, "%.1f MiB", (double)n / (1 << 20));
	else
		snprintf(buf, len, "%.0f KiB", (double)n / 1024);
	return buf;
}

void memory_plan(const struct conf *c, unsigned cpus, struct memory *m)
{
	unsigned n = 0, count[PART_NKINDS] = { 0 };
	struct part_plan *t = parts_plan(c, &n);

	memset(m, 0, sizeof(*m));
	m->base = MEMORY_BASE;
	m->rings = (uint64_t)PARTS_MAIN_RING * REC_SIZE;
	m->nrings = 1;
	count[PART_MAIN] = 1;
	for (unsigned i = 0; i < n; i++) {
		/* one plan stands for a sensor on each CPU when a reader is not pinned */
		unsigned k = t[i].kind == PART_SENSOR && t[i].cpu == CONF_CPU_ANY ? cpus : 1;

		m->threads += k;
		count[t[i].kind] += k;
		if (t[i].ring > 0) {
			m->rings += (uint64_t)t[i].ring * REC_SIZE;
			m->nrings++;
		}
	}
	free(t);        /* NULL when out of memory: the threads are then not counted */
	m->stacks = (uint64_t)m->threads * (THREAD_STACK + GUARD);
	for (unsigned i = 0; i < c->nserial; i++) {
		const struct conf_serial *s = &c->serial[i];
		/* a reader and its packet buffer; the TX reader's too; pass's relays */
		unsigned readers = conf_serial_has_tx(s) ? 2 : 1;

		m->buffers += readers * (sizeof(struct serial_port) + s->max_packet);
		if (s->pass[0] != '\0')
			m->buffers += 2 * RELAY_BUF + sizeof(struct pass);
	}
	m->buffers += c->nparallel * (uint64_t)sizeof(struct sampler);
	m->buffers += count[PART_SENSOR] * (uint64_t)sizeof(struct sensor_cpu);
	m->buffers += flush_buffer_bytes(c) + FMT_FIELDS_MAX;
	if (c->logger.metrics_file[0] != '\0') {
		count[PART_FLUSHER] = 1;
		m->buffers += metrics_bytes(count);
	}
	/* the registry and the config, twice their length at most */
	m->buffers += 2 * (uint64_t)(m->threads + 2) * sizeof(struct part);
	m->buffers += 2 * (c->nserial * (uint64_t)sizeof(struct conf_serial)
			   + c->nparallel * (uint64_t)sizeof(struct conf_parallel));
	m->total = m->rings + m->stacks + m->buffers + m->base;
}

/* A number of a small kernel file; -2 when it cannot be read, -1 for "max". */
static long long read_num(const char *root, const char *path)
{
	char buf[64];

	if (rootfs_read(root, buf, sizeof(buf), "%s", path) < 0)
		return -2;
	if (strncmp(buf, "max", 3) == 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

/* The soft limit of a "Max ..." line of /proc/self/limits: -1 unlimited, -2 not known. */
static long long soft_limit(const char *limits, const char *key)
{
	const char *v = rootfs_field(limits, key);

	if (v == NULL)
		return -2;
	if (strncmp(v, "unlimited", 9) == 0)
		return -1;
	return *v >= '0' && *v <= '9' ? strtoll(v, NULL, 10) : -2;
}

/* "NAME:   123 kB" of /proc/meminfo, in bytes; -2 when not there. */
static long long meminfo(const char *text, const char *key)
{
	const char *v = text != NULL ? rootfs_field(text, key) : NULL;

	return v != NULL ? strtoll(v, NULL, 10) * 1024 : -2;
}

void memory_limits_read(const char *root, struct memory_limits *l)
{
	char text[4096], path[512];
	const char *v;

	memset(l, 0, sizeof(*l));
	l->memlock = l->nproc = -2;
	l->cap_ipc_lock = -1;
	if (rootfs_read(root, text, sizeof(text), "/proc/self/limits") >= 0) {
		l->memlock = soft_limit(text, "Max locked memory");
		l->nproc = soft_limit(text, "Max processes");
	}
	if (rootfs_read(root, text, sizeof(text), "/proc/self/status") >= 0) {
		if ((v = rootfs_field(text, "CapEff")) != NULL)
			l->cap_ipc_lock = (int)(strtoull(v, NULL, 16) >> CAP_IPC_LOCK_BIT & 1);
		/* real, effective, saved, file system: the real one counts for RLIMIT_NPROC */
		l->root = (v = rootfs_field(text, "Uid")) != NULL && strtol(v, NULL, 10) == 0;
	}
	l->available = l->total = -2;
	if (rootfs_read(root, text, sizeof(text), "/proc/meminfo") >= 0) {
		l->available = meminfo(text, "MemAvailable");
		l->total = meminfo(text, "MemTotal");
	}
	l->threads_max = read_num(root, "/proc/sys/kernel/threads-max");
	l->threads_now = -2;
	/* loadavg's fourth field: running/total tasks */
	if (rootfs_read(root, text, sizeof(text), "/proc/loadavg") >= 0
	    && (v = strchr(text, '/')) != NULL)
		l->threads_now = strtoll(v + 1, NULL, 10);
	l->pids_max = l->pids_now = -2;
	/* cgroup v2: "0::/system.slice/portlogd.service" (TasksMax= sets pids.max) */
	if (rootfs_read(root, text, sizeof(text), "/proc/self/cgroup") >= 0
	    && (v = strstr(text, "0::")) != NULL) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup%.*s/pids.max", (int)strcspn(v + 3, "\n"),
			 v + 3);
		l->pids_max = read_num(root, path);
		snprintf(path, sizeof(path), "/sys/fs/cgroup%.*s/pids.current",
			 (int)strcspn(v + 3, "\n"), v + 3);
		l->pids_now = read_num(root, path);
	}
}

bool memory_lockable(const struct memory *m, const struct memory_limits *l)
{
	return l->cap_ipc_lock == 1 || l->memlock == -1
	       || (l->memlock >= 0 && (uint64_t)l->memlock >= m->total);
}

int memory_check_ram(const struct conf *c, const struct memory *m, const struct memory_limits *l,
		     char *err, size_t len)
{
	char total[24], rings[24], stacks[24], have[24];

	if (l->available < 0 || m->total <= (uint64_t)l->available)
		return 0;
	snprintf(err, len, "the config takes about %s (%u rings %s, %u threads' stacks %s), more "
		 "than the %s this machine has available (MemAvailable in /proc/meminfo); fix: "
		 "lower [logger] ring_seconds (now %u) or set ring_records, or run fewer ports "
		 "(portlogd.conf(5), MEMORY)", memory_size(m->total, total, sizeof(total)),
		 m->nrings, memory_size(m->rings, rings, sizeof(rings)), m->threads,
		 memory_size(m->stacks, stacks, sizeof(stacks)),
		 memory_size((uint64_t)l->available, have, sizeof(have)), c->logger.ring_seconds);
	return -1;
}

int memory_check_threads(const struct memory *m, const struct memory_limits *l, char *err,
			 size_t len)
{
	long long room;

	if (!l->root && l->nproc >= 0 && m->threads + 1 > (unsigned long long)l->nproc) {
		snprintf(err, len, "the config starts %u threads, more than RLIMIT_NPROC (%lld) lets "
			 "this user run; fix: raise it (LimitNPROC= in the unit, nproc in "
			 "/etc/security/limits.d/) or run fewer ports", m->threads, l->nproc);
		return -1;
	}
	room = l->pids_max >= 0 && l->pids_now >= 0 ? l->pids_max - l->pids_now : -1;
	if (room >= 0 && m->threads > (unsigned long long)room) {
		snprintf(err, len, "the config starts %u threads and the service's cgroup has room "
			 "for %lld more (pids.max %lld, pids.current %lld); fix: raise TasksMax= in "
			 "the unit (systemctl edit portlogd) or run fewer ports", m->threads, room,
			 l->pids_max, l->pids_now);
		return -1;
	}
	room = l->threads_max >= 0 && l->threads_now >= 0 ? l->threads_max - l->threads_now : -1;
	if (room >= 0 && m->threads > (unsigned long long)room) {
		snprintf(err, len, "the config starts %u threads and the kernel has room for %lld "
			 "more (kernel.threads-max %lld, %lld tasks now); fix: raise it "
			 "(sysctl kernel.threads-max) or run fewer ports", m->threads, room, l->threads_max,
			 l->threads_now);
		return -1;
	}
	return 0;
}
