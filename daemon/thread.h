/* thread.h - starting the daemon's threads with their scheduling policy. */
#ifndef PORTLOGD_THREAD_H
#define PORTLOGD_THREAD_H

#include <pthread.h>

/*
 * Starts fn(arg) as thread `name` (at most 15 characters) with SCHED_FIFO at
 * `priority` (1..99), or SCHED_OTHER for 0. Where SCHED_FIFO is not permitted
 * the thread runs with SCHED_OTHER and *degraded is set, so the caller can say
 * so once. Returns 0 or -errno.
 */
int thread_start(pthread_t *t, const char *name, int priority,
		 void *(*fn)(void *), void *arg, int *degraded);

#endif
