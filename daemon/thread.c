/* thread.c - thread creation with real-time attributes and a fallback. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "thread.h"

#define THREAD_STACK (256 * 1024)

static int create(pthread_t *t, int priority, void *(*fn)(void *), void *arg)
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
	rc = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return -rc;
}

int thread_start(pthread_t *t, const char *name, int priority,
		 void *(*fn)(void *), void *arg, int *degraded)
{
	int rc = create(t, priority, fn, arg);

	if (rc == -EPERM && priority > 0) {
		*degraded = 1;
		rc = create(t, 0, fn, arg);
	}
	if (rc == 0)
		(void)pthread_setname_np(*t, name);   /* cosmetic: names show in ps and top */
	return rc;
}
