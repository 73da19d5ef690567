/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vm_sent.c - reads portlogd-sim's records of what it played into a guest's port. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logline.h"
#include "vm_sent.h"

static void grow(struct vm_sent *s)
{
	s->cap = s->cap ? 2 * s->cap : 4096;
	s->pkt_off = realloc(s->pkt_off, s->cap * sizeof(size_t));
	s->pkt_len = realloc(s->pkt_len, s->cap * sizeof(size_t));
	s->pkt_t = realloc(s->pkt_t, s->cap * sizeof(int64_t));
	s->pkt_end = realloc(s->pkt_end, s->cap * sizeof(int64_t));
	s->pkt_pause = realloc(s->pkt_pause, s->cap * sizeof(int64_t));
	s->pkt_clean = realloc(s->pkt_clean, s->cap * sizeof(bool));
	s->pkt_lost = realloc(s->pkt_lost, s->cap * sizeof(uint32_t));
	s->pkt_note = realloc(s->pkt_note, s->cap * sizeof(char *));
}

int vm_sent_read(struct vm_sent *s, const char *path, const char *port)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (f == NULL)
		return -errno;
	while ((n = getline(&line, &cap, f)) > 0) {
		char name[64], hex[8300];
		const char *lost, *note;
		long double t;
		size_t len;
		long long dur = 0, pause = 0;

		if (line[0] == '#' ||       /* a port's summary (wire mode) */
		    sscanf(line, "%63s %Lf %zu %8299s %lld %lld", name, &t, &len, hex, &dur, &pause) < 4 ||
		    strcmp(name, port) != 0 ||
		    (strlen(hex) != 2 * len && !(len == 0 && strcmp(hex, "-") == 0)))
			continue;
		if (s->n == s->cap)
			grow(s);
		s->data = realloc(s->data, s->len + len + 1);
		for (size_t i = 0; i < len; i++)
			s->data[s->len + i] = (uint8_t)(logline_hexval(hex[2 * i]) << 4 | logline_hexval(hex[2 * i + 1]));
		s->pkt_t[s->n] = (int64_t)(t * 1000000000.0L);
		s->pkt_clean[s->n] = strstr(line, " unclean") == NULL;
		s->pkt_end[s->n] = s->pkt_t[s->n] + dur * 1000;
		s->pkt_pause[s->n] = pause * 1000;
		lost = strstr(line, " lost=");
		s->pkt_lost[s->n] = lost ? (uint32_t)strtoul(lost + 6, NULL, 10) : 0;
		note = strstr(line, "clean");
		s->pkt_note[s->n] = strndup(note ? note + 5 : "", strcspn(note ? note + 5 : "", "\n"));
		s->pkt_off[s->n] = s->len;
		s->pkt_len[s->n++] = len;
		s->len += len;
	}
	free(line);
	fclose(f);
	if (s->nwin < sizeof(s->win_end) / sizeof(s->win_end[0]))
		s->win_end[s->nwin++] = s->n;
	return 0;
}

int vm_sent_port(const struct vm_sent *s, const char *name, unsigned baud, int64_t shift,
		 struct sim_port *p)
{
	*p = (struct sim_port){ .master = -1, .npkt = s->n, .data_len = s->len };
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->cfg.baud = baud;
	p->cfg.dev.kind = SIM_DEV_DIRECT;
	p->wire.char_ns = (int64_t)10 * 1000000000 / baud;
	p->data = malloc(s->len + 1);
	p->pkt = calloc(s->n + 1, sizeof(*p->pkt));
	if (p->data == NULL || p->pkt == NULL)
		return -ENOMEM;
	memcpy(p->data, s->data, s->len);
	for (size_t k = 0; k < s->n; k++)
		p->pkt[k] = (struct sim_packet){
			.off = (uint32_t)s->pkt_off[k], .len = (uint32_t)s->pkt_len[k], .nfrag = 1,
			.frag_real[0] = s->pkt_t[k] + shift, .t_first_real = s->pkt_t[k] + shift,
			.t_first_mono = s->pkt_t[k] + shift, .t_last_mono = s->pkt_end[k] + shift,
		};
	return 0;
}

void vm_sent_free(struct vm_sent *s)
{
	free(s->data);
	free(s->pkt_off);
	free(s->pkt_len);
	free(s->pkt_t);
	free(s->pkt_end);
	free(s->pkt_pause);
	free(s->pkt_clean);
	free(s->pkt_lost);
	for (size_t k = 0; k < s->n; k++)
		free(s->pkt_note[k]);
	free(s->pkt_note);
	*s = (struct vm_sent){ 0 };
}
