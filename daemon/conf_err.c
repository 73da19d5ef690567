/* SPDX-License-Identifier: GPL-2.0-or-later */
/* conf_err.c - the config's errors: the first one, as "PATH:LINE: message".
 *
 * Every file of the config reports through here (fail(), conf_internal.h), and this
 * file calls none of them, so the module's calls go one way: conf_read ->
 * conf_check -> conf_keys -> conf_err (tests/lint/include_cycles.sh checks it).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "conf_internal.h"

void conf_vfail(struct parse *p, int line, const char *fmt, va_list ap)
{
	char msg[CONF_ERR_MAX];
	int n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (p == NULL) {
		fprintf(stderr, "portlogd: a default of the key table is wrong: %s\n", msg);
		abort();
	}
	if (p->err_line != 0)
		return;         /* keep the first error */
	if (line < 1)
		line = 1;       /* err_line 0 means no error: an empty file fails at line 1 */
	p->err_line = line;
	n = snprintf(p->err, p->errlen, "%s:%d: ", p->path, line);
	if (n < 0 || (size_t)n >= p->errlen)
		return;
	/* the message quotes the file, which can hold any byte: keep control
	 * characters (a terminal's escapes) and non-ASCII bytes out, as \xHH */
	for (const unsigned char *m = (const unsigned char *)msg; *m != '\0'; m++) {
		bool plain = *m >= 0x20 && *m < 0x7f;

		if ((size_t)n + (plain ? 1 : 4) >= p->errlen)
			break;
		if (plain)
			p->err[n++] = (char)*m;
		else
			n += snprintf(p->err + n, p->errlen - n, "\\x%02x", *m);
	}
	p->err[n] = '\0';
}
