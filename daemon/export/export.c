/* SPDX-License-Identifier: GPL-2.0-or-later */
/* export.c - portlogd --export: read log files, parse, filter, hand lines to a backend. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "export.h"

#define READ_CHUNK (1u << 20)           /* bytes asked of each read */
#define LINE_MAX_BYTES (1u << 20)       /* a line longer than this is refused */
#define OUT_CAP (1u << 20)
#define BAD_SHOWN 20                    /* unparsable lines named on stderr, then counted */

static const struct export_ops *const backends[] = { &export_pcapng_ops, &export_vcd_ops };

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: portlogd --export pcapng|vcd [-o OUT] [--source NAME]... [--since TIME]\n"
		"                [--until TIME] LOG...\n"
		"Writes the log files LOG (in the order given; plain or .gz; - is standard input)\n"
		"as a pcapng capture for Wireshark (serial sources: LINKTYPE_RTAC_SERIAL) or\n"
		"as a VCD waveform for GTKWave, PulseView and sigrok-cli (input pins, modem\n"
		"lines, serial activity).\n\n"
		"  -o, --output OUT    write OUT instead of standard output\n"
		"      --source NAME   only this source (repeatable; pcapng keeps portlogd's\n"
		"                      own events whatever it says)\n"
		"      --since TIME    only lines at or after TIME\n"
		"      --until TIME    only lines before TIME\n"
		"  -h, --help          print this help and exit\n\n"
		"TIME as in the log: 2026-11-22T01:34:56.355089687Z (fewer fraction digits,\n"
		"no Z, or a date alone: UTC), or epoch seconds 1763775296.355089687.\n"
		"A line that cannot be parsed is named (FILE:LINE), skipped and counted.\n"
		"Exit status: 0 every line exported; 1 done, but lines were skipped;\n"
		"2 bad command line, a LOG unreadable, or OUT not written.\n"
		"See portlogd(8).\n");
}

void export_warn(struct export *x, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "portlogd: %s:%llu: ", x->file, (unsigned long long)x->lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void out_flush(struct export *x)
{
	size_t done = 0;

	while (done < x->out_len && x->out_err == 0) {
		ssize_t n = write(x->out_fd, x->out + done, x->out_len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			x->out_err = errno;
		else
			done += (size_t)n;
	}
	x->out_len = 0;
}

void export_write(struct export *x, const void *data, size_t len)
{
	if (x->out_len + len > x->out_cap) {
		out_flush(x);
		if (len > x->out_cap) {
			/* larger than the buffer: straight through */
			const char *p = data;

			while (len > 0 && x->out_err == 0) {
				ssize_t n = write(x->out_fd, p, len);

				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0) {
					x->out_err = errno;
					break;
				}
				p += n;
				len -= (size_t)n;
				x->out_bytes += (uint64_t)n;
			}
			return;
		}
	}
	memcpy(x->out + x->out_len, data, len);
	x->out_len += len;
	x->out_bytes += len;
}

static struct export_src *find_src(struct export *x, const char *name, size_t len)
{
	unsigned last = x->last_src;    /* lines of one source come in runs */
	struct export_src *s;

	if (last < x->nsrc && strlen(x->src[last].name) == len && memcmp(x->src[last].name, name, len) == 0)
		return &x->src[last];
	for (unsigned i = 0; i < x->nsrc; i++)
		if (strlen(x->src[i].name) == len && memcmp(x->src[i].name, name, len) == 0) {
			x->last_src = i;
			return &x->src[i];
		}
	if (x->nsrc == x->src_cap) {
		unsigned cap = x->src_cap ? 2 * x->src_cap : 16;
		void *p = realloc(x->src, cap * sizeof(*x->src));

		if (p == NULL)
			return NULL;
		x->src = p;
		x->src_cap = cap;
	}
	s = &x->src[x->nsrc];
	memset(s, 0, sizeof(*s));
	memcpy(s->name, name, len);     /* the parser allows 31 characters at most */
	s->idx = x->nsrc;
	s->lines = -1;
	s->type = len == 8 && memcmp(name, "portlogd", 8) == 0 ? EXPORT_SRC_DAEMON : EXPORT_SRC_UNKNOWN;
	x->last_src = x->nsrc++;
	return s;
}

/* Bits a character takes on the line: start, data, parity, stop ("8N1": 10). */
static unsigned char_bits(const char *format)
{
	if (strlen(format) != 3 || format[0] < '5' || format[0] > '8' || strchr("NEOMS", format[1]) == NULL
	    || (format[2] != '1' && format[2] != '2'))
		return 0;
	return 1 + (unsigned)(format[0] - '0') + (format[1] != 'N') + (unsigned)(format[2] - '0');
}

/* What an EV open says about the port (the latest open wins). */
static void learn_open(struct export *x, struct export_src *s, const struct logline *l)
{
	char v[16];
	uint64_t u;

	if (logline_kv_u64(l, "baud", &u) && u > 0 && u <= 100000000) {
		s->type = EXPORT_SRC_SERIAL;
		s->baud = (unsigned)u;
		s->char_bits = logline_kv_str(l, "format", v, sizeof(v)) ? char_bits(v) : 0;
		memcpy(s->format, s->char_bits != 0 ? v : "", s->char_bits != 0 ? 4 : 1);
		if (s->char_bits == 0) {
			export_warn(x, "%s: EV open has no format= like 8N1; taking 10 bits a "
				    "character", s->name);
			s->char_bits = 10;
		}
	}
	if (logline_kv_str(l, "read", v, sizeof(v))) {
		s->type = EXPORT_SRC_PARALLEL;
		memcpy(s->read, v, sizeof(v));
		if (logline_kv_str(l, "driver", v, sizeof(v)))
			memcpy(s->driver, v, sizeof(v));
		s->mask = logline_kv_u64(l, "mask", &u) ? (unsigned)(u & 0xffff) : 0;
		s->have_open = true;
	} else if (logline_kv(l, "unread") != NULL) {
		s->type = EXPORT_SRC_PARALLEL;  /* a reopen line of an older log */
	}
}

static void track(struct export *x, struct export_src *s, const struct logline *l, bool before)
{
	if (before) {
		if (s->type == EXPORT_SRC_UNKNOWN) {
			if (l->kind == REC_RX || l->kind == REC_TX || l->kind == REC_LINES)
				s->type = EXPORT_SRC_SERIAL;
			else if (l->kind == REC_IN)
				s->type = EXPORT_SRC_PARALLEL;
		}
		if (l->kind == REC_EV && l->name_len == 4 && memcmp(l->name, "open", 4) == 0)
			learn_open(x, s, l);
		return;
	}
	if (l->kind == REC_LINES)
		s->lines = (int)l->value;
}

static bool selected(char *const *only, unsigned nonly, const struct logline *l)
{
	if (nonly == 0 || (l->src_len == 8 && memcmp(l->src, "portlogd", 8) == 0))
		return true;
	for (unsigned i = 0; i < nonly; i++)
		if (strlen(only[i]) == l->src_len && memcmp(only[i], l->src, l->src_len) == 0)
			return true;
	return false;
}

struct reader {
	struct logline_parser parser;
	struct logline line;
	char *buf;
	size_t cap;
	char *const *only;
	unsigned nonly;
};

static void bad_line(struct export *x, const char *why)
{
	if (x->bad < BAD_SHOWN)
		export_warn(x, "%s; line skipped", why);
	else if (x->bad == BAD_SHOWN)
		export_warn(x, "%s; line skipped (further unparsable lines are only counted)", why);
	x->bad++;
}

static void one_line(struct export *x, struct reader *r, const char *s, size_t n)
{
	struct logline *l = &r->line;
	struct export_src *src;
	bool in_window;

	x->lineno++;
	x->lines++;
	if (logline_parse(&r->parser, s, n, l) < 0) {
		bad_line(x, r->parser.why);
		return;
	}
	if (!selected(r->only, r->nonly, l))
		return;
	src = find_src(x, l->src, l->src_len);
	if (src == NULL) {
		bad_line(x, "out of memory for another source");
		return;
	}
	in_window = (!x->have_since || l->t >= x->since) && l->t < x->until;
	track(x, src, l, true);
	x->ops->line(x, src, l, in_window);
	track(x, src, l, false);
}

/* Reads one file (plain or gzip: zlib reads both) line by line. Returns 0, or -1
 * when it could not be opened or read to its end. */
static int read_file(struct export *x, struct reader *r, const char *path)
{
	bool std = strcmp(path, "-") == 0;
	int fd = std ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);
	gzFile gz;
	size_t have = 0;
	bool skipping = false;
	int rc = 0;

	x->file = std ? "(standard input)" : path;
	x->lineno = 0;
	if (fd < 0 || (gz = gzdopen(fd, "rb")) == NULL) {
		fprintf(stderr, "portlogd: %s: cannot open: %s\n", x->file,
			fd < 0 ? strerror(errno) : "out of memory");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	(void)gzbuffer(gz, 256 * 1024);     /* before the first read: cannot fail then */
	for (;;) {
		int got = gzread(gz, r->buf + have, READ_CHUNK);
		char *p = r->buf, *end, *nl;

		if (got < 0) {
			int e;
			const char *msg = gzerror(gz, &e);

			fprintf(stderr, "portlogd: %s: cannot read on after line %llu: %s\n", x->file,
				(unsigned long long)x->lineno, e == Z_ERRNO ? strerror(errno) : msg);
			rc = -1;
			break;
		}
		end = r->buf + have + got;
		if (skipping) {
			/* the rest of a line too long to be one of ours */
			nl = memchr(p, '\n', (size_t)(end - p));
			if (nl == NULL) {
				have = 0;
				if (got == 0)
					break;
				continue;
			}
			p = nl + 1;
			skipping = false;
		}
		while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
			one_line(x, r, p, (size_t)(nl - p));
			p = nl + 1;
		}
		have = (size_t)(end - p);
		if (got == 0) {
			if (have > 0) {
				x->lineno++;
				x->lines++;
				bad_line(x, "the last line has no newline (cut short, or still being written)");
			}
			break;
		}
		if (have > LINE_MAX_BYTES) {
			x->lineno++;
			x->lines++;
			bad_line(x, "a line longer than 1 MiB");
			skipping = true;
			have = 0;
			continue;
		}
		memmove(r->buf, p, have);
	}
	/* Z_BUF_ERROR: the last read ended inside a gzip stream */
	if (gzclose(gz) == Z_BUF_ERROR && rc == 0) {
		fprintf(stderr, "portlogd: %s: the compressed file is cut short after line %llu "
			"(the lines before are exported)\n", x->file, (unsigned long long)x->lineno);
		rc = -1;
	}
	return rc;
}

int export_time_arg(const char *opt, const char *arg, int64_t *t)
{
	if (logline_time_arg(arg, t) == 0)
		return 0;
	fprintf(stderr, "portlogd: --%s %s: not a time; give it as in the log "
		"(2026-11-22T01:34:56.355089687Z, 2026-11-22, or epoch seconds "
		"1763775296.355089687)\n", opt, arg);
	return -1;
}

int export_logs_readable(char *const *logs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (strcmp(logs[i], "-") != 0 && access(logs[i], R_OK) < 0) {
			fprintf(stderr, "portlogd: %s: cannot read: %s\n", logs[i], strerror(errno));
			return -1;
		}
	return 0;
}

int export_read(struct export *x, char *const *only, unsigned nonly, char *const *logs,
		unsigned nlogs)
{
	struct reader *r = malloc(sizeof(*r));        /* the parser holds 64 KiB */
	int rc = 0;

	if (r == NULL || (r->buf = malloc(READ_CHUNK + LINE_MAX_BYTES + 1)) == NULL) {
		fprintf(stderr, "portlogd: out of memory\n");
		free(r);
		return -1;
	}
	r->cap = READ_CHUNK + LINE_MAX_BYTES + 1;
	r->only = only;
	r->nonly = nonly;
	logline_init(&r->parser);
	for (unsigned i = 0; i < nlogs; i++)
		if (read_file(x, r, logs[i]) < 0)
			rc = -1;
	x->file = "(end)";
	free(r->buf);
	free(r);
	return rc;
}

bool export_say_bad(const struct export *x)
{
	if (x->bad == 0)
		return false;
	fprintf(stderr, "portlogd: %llu of %llu lines could not be parsed and were skipped\n",
		(unsigned long long)x->bad, (unsigned long long)x->lines);
	return true;
}

int export_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "export", required_argument, NULL, 'E' },
		{ "output", required_argument, NULL, 'o' },
		{ "source", required_argument, NULL, 's' },
		{ "since", required_argument, NULL, 'S' },
		{ "until", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct export x = { .until = INT64_MAX, .out_fd = 1, .out_name = "standard output" };
	const char *format = NULL, *out = NULL;
	char **only = calloc((size_t)argc, sizeof(char *));
	unsigned nonly = 0;
	int opt, rc = EXPORT_OK;

	if (only == NULL)
		return EXPORT_FAILED;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'E': format = optarg; break;
		case 'o': out = optarg; break;
		case 's': only[nonly++] = optarg; break;
		case 'S':
		case 'U':
			if (export_time_arg(opt == 'S' ? "since" : "until", optarg,
					    opt == 'S' ? &x.since : &x.until) < 0) {
				free(only);
				return EXPORT_FAILED;
			}
			x.have_since |= opt == 'S';
			break;
		case 'h': usage(stdout); free(only); return EXPORT_OK;
		default: usage(stderr); free(only); return EXPORT_FAILED;
		}
	}
	for (size_t i = 0; format != NULL && i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strcmp(format, backends[i]->name) == 0)
			x.ops = backends[i];
	if (x.ops == NULL) {
		fprintf(stderr, "portlogd: --export %s: unknown format; give pcapng or vcd\n",
			format ? format : "");
		free(only);
		return EXPORT_FAILED;
	}
	if (optind == argc) {
		fprintf(stderr, "portlogd: --export: no LOG file given (- reads standard input)\n");
		usage(stderr);
		free(only);
		return EXPORT_FAILED;
	}
	if (x.have_since && x.until <= x.since) {
		fprintf(stderr, "portlogd: --until is not after --since: nothing to export\n");
		free(only);
		return EXPORT_FAILED;
	}
	/* every file is there before anything is written (a typo fails at once) */
	if (export_logs_readable(argv + optind, (unsigned)(argc - optind)) < 0) {
		free(only);
		return EXPORT_FAILED;
	}
	if (out != NULL) {
		x.out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		x.out_name = out;
		if (x.out_fd < 0) {
			fprintf(stderr, "portlogd: %s: cannot create: %s\n", out, strerror(errno));
			free(only);
			return EXPORT_FAILED;
		}
	} else if (x.ops == &export_pcapng_ops && isatty(1)) {
		fprintf(stderr, "portlogd: standard output is a terminal; give -o FILE, or pipe "
			"it (| tshark -r - ...)\n");
		free(only);
		return EXPORT_FAILED;
	}
	x.out = malloc(OUT_CAP);
	x.out_cap = OUT_CAP;
	if (x.out == NULL) {
		fprintf(stderr, "portlogd: out of memory\n");
		rc = EXPORT_FAILED;
		goto done;
	}
	if (x.ops->begin(&x) < 0) {
		rc = EXPORT_FAILED;
		goto done;
	}
	if (export_read(&x, only, nonly, argv + optind, (unsigned)(argc - optind)) < 0)
		rc = EXPORT_FAILED;
	x.ops->end(&x);
	out_flush(&x);
	if (x.out_err == 0 && out != NULL && fsync(x.out_fd) < 0 && errno != EINVAL)
		x.out_err = errno;
	if (x.out_err != 0) {
		fprintf(stderr, "portlogd: %s: cannot write: %s; the export is incomplete\n",
			x.out_name, strerror(x.out_err));
		rc = EXPORT_FAILED;
	}
	if (export_say_bad(&x) && rc == EXPORT_OK)
		rc = EXPORT_SKIPPED;
done:
	x.ops->fini(&x);
	if (out != NULL && x.out_fd >= 0 && close(x.out_fd) < 0 && rc != EXPORT_FAILED) {
		fprintf(stderr, "portlogd: %s: cannot write: %s\n", out, strerror(errno));
		rc = EXPORT_FAILED;
	}
	free(x.src);
	free(x.out);
	free(only);
	return rc;
}
