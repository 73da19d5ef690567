/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_conf.c - libFuzzer target: conf_parse_string on any text.
 *
 * An accepted config must print (conf_print) to a config that parses and prints
 * the same; a rejected one must give one message "fuzz.conf:LINE: ..." of
 * printable ASCII (bytes from the file are escaped).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "fuzz.h"

#define PATH "fuzz.conf"

static struct conf conf_a, conf_b;     /* about 20 KiB each */

static char *print(const struct conf *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		abort();
	conf_print(c, f);
	if (fclose(f) != 0)
		abort();
	return buf;
}

static void check_message(const char *err)
{
	size_t n = strlen(PATH);
	const char *p = err + n + 1;

	if (strncmp(err, PATH ":", n + 1) != 0 || *p < '1' || *p > '9') {
		fprintf(stderr, "message without file and line: \"%s\"\n", err);
		abort();
	}
	p += strspn(p, "0123456789");
	if (p[0] != ':' || p[1] != ' ' || p[2] == '\0') {
		fprintf(stderr, "message without text after the line: \"%s\"\n", err);
		abort();
	}
	for (p = err; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) {
			fprintf(stderr, "byte 0x%02x in the message: \"%s\"\n",
				(unsigned char)*p, err);
			abort();
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *first, *second;
	char err[CONF_ERR_MAX];

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (conf_parse_string(&conf_a, PATH, text, err, sizeof(err)) != 0) {
		check_message(err);
		free(text);
		return 0;
	}
	/* a config without a port is one (the shipped config: the service runs, logs nothing) */
	if (err[0] != '\0')
		abort();
	first = print(&conf_a);
	if (conf_parse_string(&conf_b, PATH, first, err, sizeof(err)) != 0) {
		fprintf(stderr, "the printed config is rejected: %s\n%s", err, first);
		abort();
	}
	second = print(&conf_b);
	if (strcmp(first, second) != 0) {
		fprintf(stderr, "printed twice, differently:\n%s---\n%s", first, second);
		abort();
	}
	free(second);
	free(first);
	free(text);
	return 0;
}
