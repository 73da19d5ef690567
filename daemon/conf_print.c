/* SPDX-License-Identifier: GPL-2.0-or-later */
/* conf_print.c - the effective config (--check-config): every section and key, in config-file syntax. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "conf_internal.h"

void conf_print(const struct conf *c, FILE *out)
{
	size_t plen = strlen(c->path);
	bool first = true;

	/* the comment, too, must fit on a line: the end of a long path */
	fprintf(out, "# effective configuration of %s%s\n", plen > 160 ? "..." : "",
		c->path + (plen > 160 ? plen - 160 : 0));
	for (unsigned kind = 0; kind < SECT_KINDS; kind++) {
		const struct sect_type *t = &conf_sect_types[kind];

		for (unsigned i = 0; i < sect_count(c, t); i++) {
			const char *base = sect_at(c, t, i);

			fprintf(out, "%s[%s%s%s]\n", first ? "" : "\n", t->word, t->port ? " " : "",
				t->port ? base + t->name_off : "");
			first = false;
			for (size_t k = 0; k < conf_nkeys; k++) {
				if (conf_keys[k].sect != kind || conf_keys[k].new_name != NULL)
					continue;
				/* an optional path or name that is not set: no value to print */
				if (conf_keys[k].type->text && base[conf_keys[k].off] == '\0') {
					fprintf(out, "# %s = (not set)\n", conf_keys[k].name);
					continue;
				}
				fprintf(out, "%s = ", conf_keys[k].name);
				conf_keys[k].type->print(out, &conf_keys[k], base);
				fputc('\n', out);
			}
		}
	}
}
