/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thread.c - thread creation with real-time attributes, a fallback, and fault accounting. */
#include <alloca.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "thread.h"

/*
 * Touch the stack a thread will use, so that its first deep call does not
 * fault a page in on the real-time path. With mlockall(MCL_FUTURE) the stack
 * is populated when it is mapped already; without it (no CAP_IPC_LOCK) this
 * still helps until memory pressure takes the pages back. The stack really
 * there is asked for, not assumed: a sanitizer runtime starts the thread with
 * less of it free.
 */
static void prefault_stack(void)
{
	pthread_attr_t attr;
	void *base;
	size_t size, free_below, n;
	volatile unsigned char *p;

	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	if (pthread_attr_getstack(&attr, &base, &size) != 0)
		size = 0;
	pthread_attr_destroy(&attr);
	free_below = (size_t)((uintptr_t)&attr - (uintptr_t)base);
	if (size == 0 || free_below > size || free_below < THREAD_PREFAULT_MARGIN)
		return;
	n = free_below - THREAD_PREFAULT_MARGIN;
	if (n > THREAD_PREFAULT)
		n = THREAD_PREFAULT;
	p = alloca(n);
	for (size_t i = 0; i < n; i += 512)
		p[i] = 0;
}

static void *trampoline(void *arg)
{
	struct thread *t = arg;
	struct rusage ru;
	void *ret;

	/* A SCHED_FIFO thread's sleeps take no slack anyway (hrtimer_nanosleep); this
	 * matters when the thread had to fall back to SCHED_OTHER: 50 us by default. */
	if (t->priority > 0)
		(void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);   /* cannot fail for 1 */
	prefault_stack();
	if (getrusage(RUSAGE_THREAD, &ru) == 0) {
		t->minflt0 = (uint64_t)ru.ru_minflt;
		t->majflt0 = (uint64_t)ru.ru_majflt;
	}
	/* release: the baseline above is visible to whoever sees the tid */
	atomic_store_explicit(&t->tid, gettid(), memory_order_release);
	ret = t->fn(t->arg);
	if (getrusage(RUSAGE_THREAD, &ru) == 0) {
		t->minflt_end = (uint64_t)ru.ru_minflt;
		t->majflt_end = (uint64_t)ru.ru_majflt;
		/* release: the end counts are visible to whoever sees `ended` */
		atomic_store_explicit(&t->ended, true, memory_order_release);
	}
	return ret;
}

static int create(struct thread *t, int priority)
{
	pthread_attr_t attr;
	struct sched_param sp = { .sched_priority = priority };
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	if (priority > 0) {
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		pthread_attr_setschedparam(&attr, &sp);
	}
	if (t->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((size_t)t->cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	rc = pthread_create(&t->id, &attr, trampoline, t);
	pthread_attr_destroy(&attr);
	return -rc;
}

int thread_start(struct thread *t, const char *name, int priority, int cpu,
		 void *(*fn)(void *), void *arg, int *degraded)
{
	int rc;

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->priority = priority;
	t->cpu = cpu;
	t->fn = fn;
	t->arg = arg;
	atomic_init(&t->tid, 0);
	atomic_init(&t->ended, false);
	rc = create(t, priority);
	t->fifo = rc == 0 && priority > 0;
	if (rc == -EPERM && priority > 0) {
		*degraded = 1;
		rc = create(t, 0);
	}
	if (rc == 0) {
		t->started = true;
		(void)pthread_setname_np(t->id, t->name);   /* cosmetic: names show in ps and top */
	}
	return rc;
}

void thread_join(struct thread *t)
{
	if (t->started)
		pthread_join(t->id, NULL);
	t->started = false;
}

bool thread_parse_stat(const char *line, uint64_t *minflt, uint64_t *majflt)
{
	/* the name in parentheses may hold anything, so start after the last ')' */
	const char *p = strrchr(line, ')');
	unsigned long long f[10];

	/* state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt */
	if (p == NULL || sscanf(p + 1, " %*c %llu %llu %llu %llu %llu %llu %llu %llu %llu",
				&f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8]) != 9)
		return false;
	*minflt = f[6];
	*majflt = f[8];
	return true;
}

bool thread_faults(const struct thread *t, uint64_t *minflt, uint64_t *majflt)
{
	pid_t tid = atomic_load_explicit(&t->tid, memory_order_acquire);
	char path[64], line[1024];
	ssize_t n;
	int fd;

	if (tid == 0)
		return false;
	if (atomic_load_explicit(&t->ended, memory_order_acquire)) {
		*minflt = t->minflt_end - t->minflt0;
		*majflt = t->majflt_end - t->majflt0;
		return true;
	}
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return false;
	line[n] = '\0';
	if (!thread_parse_stat(line, minflt, majflt))
		return false;
	*minflt -= t->minflt0;
	*majflt -= t->majflt0;
	return true;
}
