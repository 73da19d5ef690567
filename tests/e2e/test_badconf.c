/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_badconf.c - the real daemon on a corpus of malformed configs: exit code and message.
 *
 * Each file in tests/data/bad-configs/ says what `portlogd -c FILE --check-config`
 * must do in its first line, or in FILE.expect when its first line is the junk
 * under test:
 *
 *   # expect 78: :5: [serial a] baud: | out of range | expected 50 to 4000000
 *
 * the exit code, then fragments separated by " | " that must all be in the
 * message. A first fragment that starts with ':' must follow the path directly
 * (it pins the line). Every message is one line starting "portlogd: PATH:", and
 * for a config error (78) the path is followed by a line number. A UTF-8 byte
 * order mark before the expectation is skipped, a CR after it too.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"

#define MAX_FRAGS 8
#define MIN_CORPUS 40

struct expect {
	int code;
	int nfrags;
	char frags[MAX_FRAGS][160];
};

/* "# expect CODE: FRAG | FRAG..." into e; returns 0 or -1. */
static int parse_expect(const char *line, struct expect *e)
{
	int pos = 0;
	const char *q;

	if (strncmp(line, "\xef\xbb\xbf", 3) == 0)
		line += 3;
	memset(e, 0, sizeof(*e));
	if (sscanf(line, "# expect %d:%n", &e->code, &pos) != 1 || pos == 0)
		return -1;
	for (q = line + pos; *q != '\0' && *q != '\r' && *q != '\n';) {
		size_t n = strcspn(q, "|\r\n");
		size_t skip = n;

		while (n > 0 && q[n - 1] == ' ')
			n--;
		while (n > 0 && *q == ' ') {
			q++;
			n--;
			skip--;
		}
		if (n == 0 || n >= sizeof(e->frags[0]) || e->nfrags == MAX_FRAGS)
			return -1;
		memcpy(e->frags[e->nfrags], q, n);
		e->frags[e->nfrags++][n] = '\0';
		q += skip;
		if (*q == '|')
			q++;
	}
	return e->nfrags > 0 ? 0 : -1;
}

/* The first line of a file (at most len - 1 bytes). */
static int first_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (f == NULL)
		return -1;
	n = fread(out, 1, len - 1, f);
	fclose(f);
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

/*
 * Runs the daemon on `path` and compares with e. Prints "# NAME: message".
 * Returns 0, or -1 with the reason, naming the file, in why.
 */
static int check(const char *name, const char *path, const struct expect *e, char *why,
		 size_t whylen)
{
	const char *argv[] = { "portlogd", "-c", path, "--check-config", NULL };
	char out[4096], prefix[PATH_MAX + 16];
	const char *after, *nl;
	int rc;

	rc = e2e_run(argv, out, sizeof(out));
	nl = strchr(out, '\n');
	printf("# %s: %.*s\n", name, nl != NULL ? (int)(nl - out) : (int)strlen(out), out);
	if (rc != e->code) {
		snprintf(why, whylen, "%s: exit %d, expected %d", name, rc, e->code);
		return -1;
	}
	if (nl == NULL || nl[1] != '\0') {
		snprintf(why, whylen, "%s: the message is not one line ending in a newline", name);
		return -1;
	}
	snprintf(prefix, sizeof(prefix), "portlogd: %s", path);
	if (strncmp(out, prefix, strlen(prefix)) != 0 || out[strlen(prefix)] != ':') {
		snprintf(why, whylen, "%s: the message does not start with \"%.300s:\"", name, prefix);
		return -1;
	}
	after = out + strlen(prefix);
	if (e->code == 78) {
		size_t digits = strspn(after + 1, "0123456789");

		if (digits == 0 || after[1 + digits] != ':') {
			snprintf(why, whylen, "%s: no line number after the path", name);
			return -1;
		}
	}
	for (int i = 0; i < e->nfrags; i++) {
		const char *f = e->frags[i];
		bool pinned = i == 0 && f[0] == ':';

		if (pinned ? strncmp(after, f, strlen(f)) != 0 : strstr(out, f) == NULL) {
			snprintf(why, whylen, "%s: the message %s \"%s\"", name,
				 pinned ? "does not go on after the path with" : "lacks", f);
			return -1;
		}
	}
	return 0;
}

static int skip_entry(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && !(n > 7 && strcmp(d->d_name + n - 7, ".expect") == 0);
}

/* Checks every file of the corpus; returns how many failed, each printed. */
static int run_corpus(const char *dir, int *nfiles, int *n78, int *n1)
{
	struct dirent **names;
	int n = scandir(dir, &names, skip_entry, alphasort), failed = 0;

	if (n < 0) {
		printf("# %s: %s\n", dir, strerror(errno));
		return 1;
	}
	*nfiles = n;
	*n78 = *n1 = 0;
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX], real[PATH_MAX], side[PATH_MAX + 8], line[1024], why[512];
		const char *name = names[i]->d_name;
		struct expect e;

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		snprintf(side, sizeof(side), "%s.expect", path);
		if (realpath(path, real) == NULL ||
		    (first_line(side, line, sizeof(line)) < 0 &&
		     first_line(path, line, sizeof(line)) < 0) ||
		    parse_expect(line, &e) < 0) {
			printf("# FAIL %s: no \"# expect CODE: FRAGMENT | ...\" line, in the file "
			       "or in %s.expect\n", name, name);
			failed++;
		} else if (check(name, real, &e, why, sizeof(why)) < 0) {
			printf("# FAIL %s\n", why);
			failed++;
		} else {
			*n78 += e.code == 78;
			*n1 += e.code == 1;
		}
		free(names[i]);
	}
	free(names);
	return failed;
}

static void test_corpus(void **state)
{
	int nfiles = 0, n78, n1, failed;

	(void)state;
	failed = run_corpus(BADCONF_DIR, &nfiles, &n78, &n1);
	printf("# %d files: %d exit 78, %d exit 1, %d failed\n", nfiles, n78, n1, failed);
	if (failed > 0)
		fail_msg("%d of %d corpus files failed (see # FAIL above)", failed, nfiles);
	if (nfiles < MIN_CORPUS)
		fail_msg("only %d corpus files in %s, expected at least %d", nfiles, BADCONF_DIR,
			 MIN_CORPUS);
}

/* The runner itself fails on a wrong expectation, naming the file. */
static void test_runner_fails(void **state)
{
	static const struct {
		const char *expect;
		const char *says;
	} wrong[] = {
		{ "# expect 78: :2: [serial a] baud: | out of range", "\"out of range\"" },
		{ "# expect 78: :3: [serial a] baud:", "does not go on after the path" },
		{ "# expect 1: :2: [serial a] baud:", "exit 78, expected 1" },
		{ "# expect 78: 'fast' is not a number | fast baud", "lacks \"fast baud\"" },
	};
	char dir[256], path[300], real[PATH_MAX], why[512];
	struct expect e;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/wrong.conf", dir);
	e2e_write_file(path, "[serial a]\nbaud = fast\ndevice = /dev/ttyS0\n");
	assert_non_null(realpath(path, real));
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		assert_int_equal(parse_expect(wrong[i].expect, &e), 0);
		if (check("wrong.conf", real, &e, why, sizeof(why)) == 0)
			fail_msg("\"%s\" passed", wrong[i].expect);
		if (strncmp(why, "wrong.conf: ", 12) != 0 || strstr(why, wrong[i].says) == NULL)
			fail_msg("\"%s\": the reason \"%s\" does not say \"%s\"", wrong[i].expect,
				 why, wrong[i].says);
	}
	assert_int_equal(parse_expect("# expect 78: :2: [serial a] baud: | 'fast'", &e), 0);
	assert_int_equal(check("wrong.conf", real, &e, why, sizeof(why)), 0);
	assert_int_equal(parse_expect("# expect: nothing", &e), -1);
	assert_int_equal(parse_expect("# expect 78:", &e), -1);
	unlink(path);
	rmdir(dir);
}

/* A copy of the daemon binary at dst that anyone may run: the build tree may be
 * in a directory that nobody cannot search. Returns 0 or -1. */
static int copy_daemon(const char *dst)
{
	const char *src = getenv("PORTLOGD_BIN");
	char buf[65536];
	FILE *in, *out;
	size_t n;
	int rc = 0;

	in = fopen(src != NULL && *src != '\0' ? src : PORTLOGD_BIN, "rb");
	out = fopen(dst, "wb");
	while (in != NULL && out != NULL && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			rc = -1;
	if (in == NULL || ferror(in))
		rc = -1;
	if (in != NULL)
		fclose(in);
	if (out == NULL || fclose(out) != 0 || chmod(dst, 0755) != 0)
		rc = -1;
	return rc;
}

/* Files that cannot be read: exit 1, not 78. */
static void test_unreadable(void **state)
{
	char dir[256], missing[300], locked[300], big[300], bin[300], why[512];
	char *orig_bin = NULL;
	struct expect e;
	FILE *f;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	assert_int_equal(chmod(dir, 0755), 0);   /* so only the file is refused */

	snprintf(missing, sizeof(missing), "%s/missing.conf", dir);
	assert_int_equal(parse_expect("# expect 1: : | cannot open the config file "
				      "| No such file or directory", &e), 0);
	if (check("missing.conf", missing, &e, why, sizeof(why)) < 0)
		fail_msg("%s", why);

	snprintf(locked, sizeof(locked), "%s/locked.conf", dir);
	e2e_write_file(locked, "[serial a]\ndevice = /dev/ttyS0\n");
	assert_int_equal(chmod(locked, 0), 0);
	/* root reads anything: run the daemon as nobody, from a copy it can reach */
	snprintf(bin, sizeof(bin), "%s/portlogd", dir);
	if (getenv("PORTLOGD_BIN") != NULL)
		orig_bin = strdup(getenv("PORTLOGD_BIN"));
	if (geteuid() == 0) {
		assert_int_equal(copy_daemon(bin), 0);
		setenv("PORTLOGD_BIN", bin, 1);
		e2e_set_child(&(struct e2e_child){ 65534, 65534, -1, -1, 0 });
	}
	assert_int_equal(parse_expect("# expect 1: : | cannot open the config file "
				      "| Permission denied", &e), 0);
	if (check("locked.conf", locked, &e, why, sizeof(why)) < 0)
		fail_msg("%s", why);
	unlink(bin);
	if (orig_bin != NULL)
		setenv("PORTLOGD_BIN", orig_bin, 1);
	else
		unsetenv("PORTLOGD_BIN");
	free(orig_bin);

	assert_int_equal(parse_expect("# expect 1: : | not a regular file", &e), 0);
	if (check("a directory", dir, &e, why, sizeof(why)) < 0)
		fail_msg("%s", why);

	/* 1 MiB of comments and a byte more */
	snprintf(big, sizeof(big), "%s/big.conf", dir);
	f = fopen(big, "w");
	assert_non_null(f);
	for (int i = 0; i < 1024 * 1024 / 64; i++)
		fprintf(f, "# %61s\n", "");
	fputc('\n', f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(parse_expect("# expect 1: : 1048577 bytes | at most 1048576", &e), 0);
	if (check("big.conf", big, &e, why, sizeof(why)) < 0)
		fail_msg("%s", why);

	unlink(big);
	unlink(locked);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runner_fails),
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_unreadable),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
