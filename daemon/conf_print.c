/* SPDX-License-Identifier: GPL-2.0-or-later */
/* conf_print.c - the effective config (--check-config): every section and key, in config-file syntax. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conf_internal.h"
#include "rec.h"

/* A port's rings, as a comment: their records, bytes, and the seconds they hold
 * at the most the port can make (portlogd.conf(5), MEMORY). */
static void print_rings(const struct conf *c, unsigned kind, unsigned i, FILE *out)
{
	uint32_t records;
	double rate;

	if (kind == SECT_SERIAL) {
		records = conf_ring_serial(&c->logger, &c->serial[i]);
		rate = conf_rate_serial(&c->serial[i]);
	} else if (kind == SECT_PARALLEL) {
		records = conf_ring_parallel(&c->logger, &c->timer);
		rate = conf_rate_parallel(&c->timer);
	} else {
		return;
	}
	fprintf(out, "# rings of %u records (%u KiB each): %.1f s at the most it makes, %.0f "
		"records/s\n", records, records * REC_SIZE / 1024, records / rate, rate);
}

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
			print_rings(c, kind, i, out);
		}
	}
}
