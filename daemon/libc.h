/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libc.h - glibc calls made right on every Debian architecture.
 *
 * ppoll: with a 64-bit time_t on a 32-bit ABI (_TIME_BITS=64, CMakeLists.txt: armhf, i386)
 * sys/poll.h binds ppoll to __ppoll64; but with _FORTIFY_SOURCE (Debian's build flags)
 * glibc 2.36's bits/poll2.h puts an inline ppoll in front that calls the 32-bit symbol
 * ppoll with our 64-bit struct timespec, whose nanoseconds the kernel then reads from the
 * upper half of the seconds: on i386 a ppoll of 0.5 s returned at once, and a reader
 * would take every wait for a packet's gap as over. libc_ppoll calls __ppoll64 there
 * (glibc 2.34 and later have it), and ppoll everywhere else.
 */
#ifndef PORTLOGD_LIBC_H
#define PORTLOGD_LIBC_H

#include <poll.h>
#include <signal.h>
#include <time.h>

#if defined(__USE_TIME_BITS64) && __USE_FORTIFY_LEVEL > 0
/* sys/poll.h names it only through its redirect of ppoll */
extern int __ppoll64(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
		     const sigset_t *sigmask);
#define LIBC_PPOLL __ppoll64
#else
#define LIBC_PPOLL ppoll
#endif

static inline int libc_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
			     const sigset_t *sigmask)
{
	return LIBC_PPOLL(fds, n, timeout, sigmask);
}

#endif
