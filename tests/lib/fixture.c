/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fixture.c - fixture trees: files and symbolic links below a temporary root. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "wrap.h"

void fx_mkroot(char *root, size_t len, const char *who)
{
	snprintf(root, len, "%s/portlogd-%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		 who);
	if (mkdtemp(root) == NULL || chmod(root, 0755) < 0)
		fail_msg("mkdtemp %s: %s", root, strerror(errno));
}

static void mkdirs(const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			fail_msg("mkdir %s: %s", p, strerror(errno));
		*s = '/';
	}
}

void fx_put(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	mkdirs(path);
	if (strncmp(text, "-> ", 3) == 0) {
		if (symlink(text + 3, path) < 0)
			fail_msg("symlink %s: %s", path, strerror(errno));
		return;
	}
	f = fopen(path, "w");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		fail_msg("write %s: %s", path, strerror(errno));
}

void fx_task_run(const char *root, long pid, long tid, const char *comm, unsigned long flags,
		 int prio, int policy, unsigned long ticks, unsigned long start, const char *cpus)
{
	char line[1024], rel[64], status[256];
	size_t n = (size_t)snprintf(line, sizeof(line), "%ld (%s) S", tid ? tid : pid, comm);

	for (int f = 4; f <= 52; f++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %lu",
				      f == 9 ? flags : f == 14 ? ticks : f == 22 ? start
				      : f == 40 ? (unsigned long)prio
				      : f == 41 ? (unsigned long)policy : 0ul);
	snprintf(line + n, sizeof(line) - n, "\n");
	snprintf(rel, sizeof(rel), "/proc/%ld/comm", pid);
	fx_put(root, rel, comm);
	if (tid)
		snprintf(rel, sizeof(rel), "/proc/%ld/task/%ld/stat", pid, tid);
	else
		snprintf(rel, sizeof(rel), "/proc/%ld/stat", pid);
	fx_put(root, rel, line);
	if (cpus == NULL)
		return;
	snprintf(status, sizeof(status), "Name:\t%s\nState:\tS (sleeping)\n"
		 "Cpus_allowed_list:\t%s\nMems_allowed_list:\t0\n", comm, cpus);
	strcpy(strrchr(rel, '/') + 1, "status");
	fx_put(root, rel, status);
}

void fx_task(const char *root, long pid, long tid, const char *comm, unsigned long flags,
	     int prio, int policy)
{
	fx_task_run(root, pid, tid, comm, flags, prio, policy, 0, 0, NULL);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void fx_rmroot(const char *root)
{
	(void)nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);     /* best effort: a temp dir */
}

static int readdir_err;
static unsigned readdir_left;

void fx_fail_readdir(int err, unsigned after)
{
	readdir_err = err;
	readdir_left = after;
}

struct dirent *REAL(readdir)(DIR *d);
struct dirent *WRAP(readdir)(DIR *d);

struct dirent *WRAP(readdir)(DIR *d)
{
	if (readdir_err != 0) {
		if (readdir_left == 0) {
			errno = readdir_err;
			return NULL;
		}
		readdir_left--;
	}
	return REAL(readdir)(d);
}
