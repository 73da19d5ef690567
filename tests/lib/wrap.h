/* SPDX-License-Identifier: GPL-2.0-or-later */
/* wrap.h - the names of a -Wl,--wrap= stand-in, as glibc binds the call it stands in for.
 *
 * A test stands in for a libc function f with -Wl,--wrap=f: it defines __wrap_f and calls
 * __real_f for the real one. But glibc's headers bind some calls to another symbol, and a
 * wrap of the plain name then catches nothing (and the test calls the real function):
 *  - 64-bit time_t on a 32-bit ABI (_TIME_BITS=64, CMakeLists.txt; armhf, i386): ioctl is
 *    __ioctl_time64, ppoll __ppoll64, adjtimex ___adjtimex64 (three underscores),
 *    clock_gettime __clock_gettime64 (glibc 2.36's sys/ioctl.h, sys/poll.h, sys/timex.h,
 *    time.h);
 *  - 64-bit file offsets (_FILE_OFFSET_BITS=64, on every ABI): readdir is readdir64.
 * WRAP(f) and REAL(f) are the stand-in's and the real function's names for the symbol a call
 * of f binds to in this build. Link with portlogd_wrap(TARGET f...) (tests/unit/CMakeLists.txt),
 * which passes --wrap for both names of each f: the same table, for the linker.
 */
#ifndef PORTLOGD_WRAP_H
#define PORTLOGD_WRAP_H

#include <features.h>   /* __USE_TIME_BITS64, __USE_FILE_OFFSET64 */

#ifdef __USE_TIME_BITS64
#define WRAP_SYM_ioctl __ioctl_time64
#define WRAP_SYM_ppoll __ppoll64
#define WRAP_SYM_adjtimex ___adjtimex64
#define WRAP_SYM_clock_gettime __clock_gettime64
#else
#define WRAP_SYM_ioctl ioctl
#define WRAP_SYM_ppoll ppoll
#define WRAP_SYM_adjtimex adjtimex
#define WRAP_SYM_clock_gettime clock_gettime
#endif
#ifdef __USE_FILE_OFFSET64
#define WRAP_SYM_readdir readdir64
#else
#define WRAP_SYM_readdir readdir
#endif

#define WRAP_PASTE(a, b) a##b
#define WRAP_NAME(prefix, sym) WRAP_PASTE(prefix, sym)
#define WRAP(f) WRAP_NAME(__wrap_, WRAP_SYM_##f)
#define REAL(f) WRAP_NAME(__real_, WRAP_SYM_##f)

#endif
