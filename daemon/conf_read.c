/* SPDX-License-Identifier: GPL-2.0-or-later */
/* conf_read.c - the config file's line reader: lines to sections and keys, the first error.
 *
 * The line parser is ours, not inih's. Debian builds libinih without
 * INI_HANDLER_LINENO, hands a section to the handler only with its first key,
 * returns a syntax error as a bare line number, and continues an indented line
 * as the previous value: we counted the lines, registered the headers, re-read
 * the line to quote it, stripped blanks and cut '#' comments ourselves, so what
 * was left to the library was the split at '=' and the ';' comment. The rules
 * it applied are kept (parse_line), so every config reads as it did.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf_internal.h"

#define CONF_FILE_MAX (1024 * 1024)

/* ---- the line parser ---- */

/* A key = value line in the current section. */
static void on_key(struct parse *p, const char *name, const char *value)
{
	struct sect *s = p->cur;
	struct ctx x = { .p = p, .line = p->line, .value = value };
	char list[256] = "";
	const struct key *k = NULL;

	if (s == NULL) {
		fail(p, p->line, "%s: key outside of any section; put it under %s", name,
		     conf_sect_list(list, sizeof(list), false));
		return;
	}
	if (name[0] == '\0') {
		fail(p, p->line, "[%s]: '= %s' has no key; write key = value", s->title, value);
		return;
	}
	for (size_t i = 0; i < conf_nkeys; i++) {
		if (conf_keys[i].sect != s->kind)
			continue;
		if (strcmp(conf_keys[i].name, name) == 0)
			k = &conf_keys[i];
		list_add(list, sizeof(list), ", ", conf_keys[i].name);
	}
	if (k == NULL) {
		fail(p, p->line, "[%s] %s: unknown key; keys of this section are: %s",
		     s->title, name, list);
		return;
	}
	if (s->key_line[k - conf_keys] != 0) {
		fail(p, p->line, "[%s] %s: set twice (first at line %d); keep one",
		     s->title, name, s->key_line[k - conf_keys]);
		return;
	}
	s->key_line[k - conf_keys] = p->line;
	if (value[0] == '\0') {
		fail(p, p->line, "[%s] %s: empty value; give a value or remove the line",
		     s->title, name);
		return;
	}
	x.title = s->title;
	x.k = k;
	(void)k->type->parse(&x, sect_at(p->c, &conf_sect_types[s->kind], s->index));
}

static bool valid_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= CONF_NAME_MAX || strcmp(name, "portlogd") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && strchr("_-.:", name[i]) == NULL)
			return false;
	return true;
}

/* [WORD] or [WORD NAME] after the checks; NULL after fail(). */
static const struct sect_type *header_type(struct parse *p, const char *raw, int fields,
					   const char *word, const char *name)
{
	char rest[2], list[128];

	for (unsigned k = 0; k < SECT_KINDS; k++) {
		const struct sect_type *t = &conf_sect_types[k];

		if (strcmp(t->word, word) != 0 || fields != (t->port ? 2 : 1))
			continue;
		if (!t->port)
			return t;
		if (sscanf(raw, " %*s %*s %1s", rest) == 1) {
			fail(p, p->line, "[%s]: a port name is one word; write [%s NAME]", raw, word);
			return NULL;
		}
		if (!valid_name(name)) {
			fail(p, p->line, "[%s]: '%s' cannot be a port name; use up to %d letters, "
			     "digits, '_', '-', '.' or ':', and not 'portlogd'", raw, name,
			     CONF_NAME_MAX - 1);
			return NULL;
		}
		return t;
	}
	fail(p, p->line, "[%s]: unknown section; expected %s", raw,
	     conf_sect_list(list, sizeof(list), false));
	return NULL;
}

/* A "[...]" line that has a ']': opens its section, with the table's defaults. */
static void open_section(struct parse *p, const char *start)
{
	const char *end = strchr(start, ']');
	char raw[128], word[16] = "", name[128] = "";
	const struct sect_type *t;
	struct sect new_sect, *s = &new_sect;
	unsigned *count;
	void *base;
	size_t n = (size_t)(end - start - 1);

	if (n >= sizeof(raw)) {
		fail(p, p->line, "[%.20s...]: section header of %zu characters; a port name has at "
		     "most %d", start + 1, n, CONF_NAME_MAX - 1);
		return;
	}
	memcpy(raw, start + 1, n);
	raw[n] = '\0';
	/* a CR-only file would be one line: say so rather than ignore the rest */
	for (end++; isspace((unsigned char)*end); end++)
		;
	if (*end != '\0' && *end != ';') {
		fail(p, p->line, "[%s]: '%.40s' after the section header; put keys on lines of "
		     "their own", raw, end);
		return;
	}
	t = header_type(p, raw, sscanf(raw, " %15s %127s", word, name), word, name);
	if (t == NULL)
		return;
	/* built aside, stored once accepted: sects[] only has room for accepted ones */
	memset(s, 0, sizeof(*s));
	s->kind = (enum sect_kind)(t - conf_sect_types);
	s->line = p->line;
	snprintf(s->title, sizeof(s->title), t->port ? "%s %s" : "%s", word, name);
	for (unsigned i = 0; i < p->nsects; i++) {
		const char *other = p->sects[i].title, *sp = strchr(other, ' ');

		if (strcmp(other, s->title) == 0) {
			fail(p, p->line, "[%s]: duplicate section (first at line %d); merge the two",
			     s->title, p->sects[i].line);
			return;
		}
		/* one name space for all ports: the name is the log's SOURCE field */
		if (t->port && sp != NULL && strcmp(sp + 1, name) == 0) {
			fail(p, p->line, "[%s]: the name '%s' is already used by [%s] at line %d; "
			     "port names must be unique", s->title, name, other, p->sects[i].line);
			return;
		}
	}
	if (t->port) {
		count = (unsigned *)((char *)p->c + t->count_off);
		if (*count == CONF_MAX_PORTS) {
			fail(p, p->line, "[%s]: more than %d %s ports; run a second portlogd for the "
			     "rest", s->title, CONF_MAX_PORTS, word);
			return;
		}
		s->index = (*count)++;
	}
	base = sect_at(p->c, t, s->index);
	if (t->port) {
		conf_set_defaults(s->kind, base);
		/* validated shorter than CONF_NAME_MAX (valid_name): the precision says so to
		 * the compiler, which warns of a truncation at -O0 */
		snprintf((char *)base + t->name_off, CONF_NAME_MAX, "%.*s", CONF_NAME_MAX - 1, name);
	}
	*(int *)((char *)base + t->line_off) = p->line;
	p->cur = &p->sects[p->nsects++];
	*p->cur = *s;
}

/*
 * Where the comment after a value starts in text[0..n), or n: a '#' after a
 * space or tab (people write "baud = 9600  # the PLC" and mean it), or, as
 * inih has it, a ';' after any white space.
 */
static size_t comment_start(const char *text, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if ((text[i] == '#' && (text[i - 1] == ' ' || text[i - 1] == '\t'))
		    || (text[i] == ';' && isspace((unsigned char)text[i - 1])))
			return i;
	return n;
}

static char *skip_space(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

static void trim_end(char *s, char *end)
{
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
}

/*
 * One line of the file, without its '\n', as chrony's parser takes a line:
 * blank, a comment (# or ; first, or after a blank), [section] or key = value
 * (inih's '=' or ':'; ';' after a blank starts a comment). A UTF-8 byte order
 * mark on line 1 is skipped. Indentation is only indentation: an indented line
 * never continues the previous value, as inih's multi-line values would.
 */
static void parse_line(struct parse *p, const char *text, size_t n)
{
	char buf[CONF_LINE_MAX + 1], list[128], *start, *end, *value;
	size_t quoted = 0;      /* of text, for a syntax error: up to a CR */

	p->line++;
	if (p->line == 1 && n >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
		text += 3;      /* as some editors write */
		n -= 3;
	}
	while (n > 0 && (*text == ' ' || *text == '\t')) {
		text++;
		n--;
	}
	while (quoted < n && text[quoted] != '\r')
		quoted++;
	/* a comment after a value, and the blanks before it, do not count against
	 * the length of a line (a line that is all comment does): the printed
	 * config says "pass = NAME  # /run/portlogd/NAME" after a NAME as long as
	 * allowed */
	n = comment_start(text, n);
	while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t'))
		n--;
	if (n > CONF_LINE_MAX) {
		fail(p, p->line, "line is longer than %d characters; shorten it", CONF_LINE_MAX);
		return;
	}
	memcpy(buf, text, n);
	buf[n] = '\0';
	start = skip_space(buf);
	if (*start == '\0' || *start == '#' || *start == ';')
		return;
	if (*start == '[' && strchr(start, ']') != NULL) {
		open_section(p, start);
		return;
	}
	if (*start == '[') {
		fail(p, p->line, "syntax error: '%.*s' has no closing ']'; write %s",
		     quoted < 40 ? (int)quoted : 40, text, conf_sect_list(list, sizeof(list), false));
		return;
	}
	trim_end(start, start + strlen(start));
	end = start + strcspn(start, "=:");
	if (*end == '\0') {
		fail(p, p->line, "%s%s%ssyntax error: '%.*s' is not key = value; write key = value, "
		     "a [section], or a comment starting with # or ;", p->cur ? "[" : "",
		     p->cur ? p->cur->title : "", p->cur ? "]: " : "",
		     quoted < 40 ? (int)quoted : 40, text);
		return;
	}
	*end = '\0';
	trim_end(start, end);
	value = skip_space(end + 1);
	on_key(p, start, value);
}

int conf_parse_string(struct conf *c, const char *path, const char *text,
		      char *err, size_t errlen)
{
	struct parse *p = calloc(1, sizeof(*p));
	int rc;

	if (p == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	conf_defaults(c);
	snprintf(c->path, sizeof(c->path), "%s", path);
	*p = (struct parse){ .c = c, .path = path, .err = err, .errlen = errlen };
	if (errlen > 0)
		err[0] = '\0';
	for (const char *pos = text; *pos != '\0' && p->err_line == 0;) {
		const char *nl = strchr(pos, '\n');
		size_t n = nl != NULL ? (size_t)(nl - pos) : strlen(pos);

		parse_line(p, pos, n);
		pos += n + (nl != NULL);
	}
	if (p->err_line == 0)
		conf_validate(p);
	rc = p->err_line == 0 ? 0 : -1;
	free(p);
	return rc;
}

int conf_load(struct conf *c, const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *text;
	ssize_t n;
	size_t got = 0;
	bool regular;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open the config file: %s", path, strerror(errno));
		return -2;
	}
	regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (!regular || st.st_size > CONF_FILE_MAX) {
		if (!regular)
			snprintf(err, errlen, "%s: not a regular file; give the path of the config "
				 "file", path);
		else
			snprintf(err, errlen, "%s: %lld bytes; a config file has at most %d",
				 path, (long long)st.st_size, CONF_FILE_MAX);
		close(fd);
		return -2;
	}
	text = malloc((size_t)st.st_size + 1);
	if (text == NULL) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -2;
	}
	while (got < (size_t)st.st_size && (n = read(fd, text + got, (size_t)st.st_size - got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "%s: cannot read the config file: %s", path, strerror(errno));
			free(text);
			close(fd);
			return -2;
		}
		got += (size_t)n;
	}
	close(fd);
	text[got] = '\0';
	if (strlen(text) != got) {
		int line = 1;
		for (const char *q = text; *q != '\0'; q++)
			line += *q == '\n';
		snprintf(err, errlen, "%s:%d: a NUL byte: this is not a text file; save the config "
			 "as plain text (ASCII or UTF-8, not UTF-16)", path, line);
		free(text);
		return -1;
	}
	rc = conf_parse_string(c, path, text, err, errlen);
	free(text);
	return rc;
}
