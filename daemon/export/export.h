/* SPDX-License-Identifier: GPL-2.0-or-later */
/* export.h - portlogd --export: log files (plain or .gz) to pcapng or VCD.
 *
 * export.c reads the files in the order given, parses each line (logline),
 * keeps per source what the lines say about the port (EV open: baud, format,
 * driver, read, mask; the modem lines), filters by --source and by time, and
 * hands each line to one backend, chosen by name from a table of ops like the
 * drivers': export_pcapng.c, export_vcd.c. A backend writes through
 * export_write and never sees a line that did not parse.
 */
#ifndef PORTLOGD_EXPORT_H
#define PORTLOGD_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logline.h"

/* Exit codes of portlogd --export. */
enum {
	EXPORT_OK = 0,          /* every line read and exported */
	EXPORT_SKIPPED = 1,     /* done, but some lines could not be parsed: skipped, counted */
	EXPORT_FAILED = 2,      /* bad command line, a file unreadable, or OUT not written */
};

enum export_src_type { EXPORT_SRC_UNKNOWN, EXPORT_SRC_SERIAL, EXPORT_SRC_PARALLEL,
		       EXPORT_SRC_DAEMON };

/* What the log has said so far about one SOURCE. */
struct export_src {
	char name[32];
	enum export_src_type type;
	unsigned idx;               /* 0, 1, ... in order of first appearance */
	/* serial: from EV open baud= format= (0: not seen yet) */
	unsigned baud, char_bits;
	char format[4];             /* as in EV open ("8N1"); "" when not seen or malformed */
	int lines;                  /* the modem lines (LINES bits), -1 before the first */
	/* parallel: from EV open driver= read= mask= ("" and 0: not seen yet) */
	char driver[16], read[16];
	unsigned mask;
	bool have_open;
	void *priv;                 /* the backend's, freed by the backend's fini */
};

struct export;

struct export_ops {
	const char *name;                           /* pcapng, vcd */
	/* called once before the first line; returns 0 or -1 (message printed) */
	int (*begin)(struct export *x);
	/* each line of a selected source, in file order; in_window: within
	 * --since/--until (the others only keep the backend's state current) */
	void (*line)(struct export *x, struct export_src *s, const struct logline *l,
		     bool in_window);
	/* after the last line: write what is left */
	void (*end)(struct export *x);
	/* frees everything, also after a failure */
	void (*fini)(struct export *x);
};

extern const struct export_ops export_pcapng_ops;
extern const struct export_ops export_vcd_ops;

struct export {
	const struct export_ops *ops;
	int64_t since, until;       /* the window: since <= TIME < until */
	bool have_since;
	void *priv;                 /* the backend's */

	/* where the current line comes from, for messages */
	const char *file;
	uint64_t lineno;

	struct export_src *src;     /* the sources seen so far */
	unsigned nsrc, src_cap, last_src;

	/* output */
	int out_fd;
	const char *out_name;
	char *out;
	size_t out_len, out_cap;
	int out_err;                /* errno of the first failed write */
	uint64_t out_bytes;

	uint64_t lines, bad, exported;
};

/* Appends to the output (buffered). */
void export_write(struct export *x, const void *data, size_t len);
/* A warning about the current line or source, on stderr: "portlogd: FILE:LINE: ...". */
void export_warn(struct export *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The reader, shared with --replay (replay.c). Reads the LOG files in the
 * order given (plain or .gz; - is standard input), parses each line, keeps in
 * x->src what the lines say about each source, and hands each line of a
 * selected source (every source when nonly is 0; source portlogd always) to
 * x->ops->line. A line that does not parse is named (the first 20), skipped
 * and counted in x->bad. Returns 0, or -1 when a LOG could not be opened or
 * read to its end, or memory ran out (said on stderr).
 */
int export_read(struct export *x, char *const *only, unsigned nonly, char *const *logs,
		unsigned nlogs);
/* Every LOG readable (- is standard input)? 0, or -1 naming the first that is not. */
int export_logs_readable(char *const *logs, unsigned n);
/* The TIME of --since or --until (opt: "since"); -1 saying what to give when it is not one. */
int export_time_arg(const char *opt, const char *arg, int64_t *t);
/* "N of M lines could not be parsed and were skipped" when x->bad > 0; false when none were. */
bool export_say_bad(const struct export *x);

/* portlogd --export ...: argv[0] is the program, the options follow. Returns an exit code. */
int export_main(int argc, char **argv);

#endif
