/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_fleet.c - central collection: the real daemon, the shipped rsyslog configs in two real rsyslogds. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "fmt.h"
#include "sim/sim.h"
#include "testutil.h"

/*
 * Each test is one scenario of issue 12: a forwarder rsyslogd (the shipped
 * portlogd-forward.conf) follows the log of the real daemon, which logs
 * simulator traffic on three ptys, and sends it over RELP on 127.0.0.1 to a
 * centre rsyslogd (the shipped portlogd-central.conf). Only the host, the port
 * and the paths are set, each on its one line; a top config adds the work
 * directory and the host name. Afterwards the central copy is compared with
 * the local files, rotated and current: every line there, byte-identical, in
 * the same order per source; lost, duplicated, foreign and reordered lines are
 * counted, and the delay from a line's write to its arrival is printed.
 */

#define NPORTS 3
#define HOST "pc1"

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------------ lines */

/* A line and when the test saw it appear in the local log and at the centre. */
struct line {
	char *text;
	size_t len;
	int64_t t_local, t_central;     /* CLOCK_REALTIME, 0 = not seen */
	long idx;                       /* position in the local files, -1 = none */
	bool matched;
};

/* Open addressing on FNV-1a; the tables hold some 10^5 lines. */
struct lines {
	struct line **slot;
	size_t cap, n;
	pthread_mutex_t mu;
};

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
	return h;
}

static struct line *lines_get(struct lines *t, const char *s, size_t n, bool add)
{
	size_t i;

	if (add && 2 * (t->n + 1) > t->cap) {
		struct lines old = *t;

		t->cap = t->cap ? t->cap * 2 : 1 << 16;
		t->slot = calloc(t->cap, sizeof(*t->slot));
		t->n = 0;
		for (size_t k = 0; k < old.cap; k++)
			if (old.slot[k] != NULL) {
				i = fnv(old.slot[k]->text, old.slot[k]->len) & (t->cap - 1);
				while (t->slot[i] != NULL)
					i = (i + 1) & (t->cap - 1);
				t->slot[i] = old.slot[k];
				t->n++;
			}
		free(old.slot);
	}
	if (t->cap == 0)
		return NULL;
	for (i = fnv(s, n) & (t->cap - 1); t->slot[i] != NULL; i = (i + 1) & (t->cap - 1))
		if (t->slot[i]->len == n && memcmp(t->slot[i]->text, s, n) == 0)
			return t->slot[i];
	if (!add)
		return NULL;
	t->slot[i] = calloc(1, sizeof(struct line));
	t->slot[i]->text = malloc(n + 1);
	memcpy(t->slot[i]->text, s, n);
	t->slot[i]->text[n] = '\0';
	t->slot[i]->len = n;
	t->slot[i]->idx = -1;
	t->n++;
	return t->slot[i];
}

static void lines_free(struct lines *t)
{
	for (size_t k = 0; k < t->cap; k++)
		if (t->slot[k] != NULL) {
			free(t->slot[k]->text);
			free(t->slot[k]);
		}
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------ the watcher */

/* Follows a file by path (across a rename, as imfile does) and stamps each new
 * line with the time it was first seen, every 2 ms. */
struct tail {
	char path[400];
	int fd;
	char *part;                     /* an incomplete last line */
	size_t plen, pcap;
	bool central;
};

static void tail_feed(struct tail *w, struct lines *t, const char *buf, size_t n, int64_t now)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] != '\n') {
			if (w->plen == w->pcap)
				w->part = realloc(w->part, w->pcap = w->pcap * 2 + 4096);
			w->part[w->plen++] = buf[i];
			continue;
		}
		pthread_mutex_lock(&t->mu);
		struct line *l = lines_get(t, w->part, w->plen, true);
		if (w->central && l->t_central == 0)
			l->t_central = now;
		if (!w->central && l->t_local == 0)
			l->t_local = now;
		pthread_mutex_unlock(&t->mu);
		w->plen = 0;
	}
}

static void tail_poll(struct tail *w, struct lines *t)
{
	static char buf[1 << 16];
	struct stat a, b;
	ssize_t n;

	if (w->fd < 0 && (w->fd = open(w->path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	while ((n = read(w->fd, buf, sizeof(buf))) > 0)
		tail_feed(w, t, buf, (size_t)n, now_ns(CLOCK_REALTIME));
	/* renamed away and a new file in its place: the old one is complete */
	if (stat(w->path, &a) == 0 && fstat(w->fd, &b) == 0 && a.st_ino != b.st_ino) {
		close(w->fd);
		w->fd = -1;
		w->plen = 0;
	}
}

struct watch {
	struct tail local, central;
	struct lines *t;
	pthread_t thread;
	atomic_bool stop;
};

static void *watch_main(void *arg)
{
	struct watch *w = arg;

	while (!atomic_load(&w->stop)) {
		tail_poll(&w->local, w->t);
		tail_poll(&w->central, w->t);
		sleep_ms(2);
	}
	tail_poll(&w->local, w->t);
	tail_poll(&w->central, w->t);
	return NULL;
}

/* ---------------------------------------------------------------- rsyslog */

struct rsys {
	char dir[400], conf[480], pidfile[480], err[480];
	pid_t pid;
};

static void rsys_start(struct rsys *r)
{
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		int fd = open(r->err, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0)
			dup2(fd, 2);
		execlp("rsyslogd", "rsyslogd", "-n", "-f", r->conf, "-i", r->pidfile, (char *)NULL);
		_exit(127);
	}
}

static void rsys_stop(struct rsys *r)
{
	int64_t end = now_ns(CLOCK_MONOTONIC) + 30 * (int64_t)1000000000;

	if (r->pid <= 0)
		return;
	kill(r->pid, SIGTERM);
	while (waitpid(r->pid, NULL, WNOHANG) == 0) {
		if (now_ns(CLOCK_MONOTONIC) > end) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, NULL, 0);
			break;
		}
		sleep_ms(5);
	}
	r->pid = 0;
}

/*
 * In text, the one line that contains key (after blanks): its first "..." value
 * becomes value. Fails unless exactly one line has it: the shipped configs keep
 * each site setting on one line of its own.
 */
static char *set_line(char *text, const char *key, const char *value)
{
	char *hit = NULL, *out;
	size_t hits = 0;

	for (char *p = text; p != NULL && *p != '\0';) {
		char *nl = strchr(p, '\n'), *q = p;

		while (*q == ' ' || *q == '\t')
			q++;
		if (strncmp(q, key, strlen(key)) == 0) {
			hit = q;
			hits++;
		}
		p = nl != NULL ? nl + 1 : NULL;
	}
	if (hits != 1)
		fail_msg("%zu lines start with '%s' in a shipped config, expected 1", hits, key);
	char *v = strchr(hit, '"'), *e = v != NULL ? strchr(v + 1, '"') : NULL;

	assert_non_null(e);
	out = malloc(strlen(text) + strlen(value) + 1);
	memcpy(out, text, (size_t)(v + 1 - text));
	strcpy(out + (v + 1 - text), value);
	strcat(out, e);
	free(text);
	return out;
}

/* Every occurrence of from in text becomes to. */
static char *replace_all(char *text, const char *from, const char *to)
{
	size_t n = 0, fl = strlen(from), tl = strlen(to);
	char *out, *o;

	for (char *p = strstr(text, from); p != NULL; p = strstr(p + fl, from))
		n++;
	assert_true(n > 0);
	o = out = malloc(strlen(text) + n * tl + 1);
	for (char *p = text, *q; ; p = q + fl) {
		q = strstr(p, from);
		if (q == NULL) {
			strcpy(o, p);
			break;
		}
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		memcpy(o, to, tl);
		o += tl;
	}
	free(text);
	return out;
}

/* ------------------------------------------------------------- the world */

struct fleet {
	char dir[300], log[400], central[400], resend_dir[400];
	int port;
	struct rsys fwd, ctr;
	struct e2e_daemon d;
	char conf[400];
	struct sim_port p[NPORTS];
	struct sim_bg bg;
	bool traffic;
	struct lines t;
	struct watch w;
	char saved[64][400];            /* copies of rotated files, oldest first */
	unsigned nsaved;
};

static void write_rsyslog(struct fleet *f)
{
	char path[500], top[2000], value[400];
	char *fwd = e2e_read_file(PORTLOGD_SRC "/config/rsyslog/portlogd-forward.conf", NULL);
	char *ctr = e2e_read_file(PORTLOGD_SRC "/config/rsyslog/portlogd-central.conf", NULL);

	assert_non_null(fwd);
	assert_non_null(ctr);
	snprintf(value, sizeof(value), "%d", f->port);
	fwd = set_line(fwd, "target=", "127.0.0.1");
	fwd = set_line(fwd, "port=", value);
	fwd = set_line(fwd, "file=\"/var/log/portlogd/portlogd.log\"", f->log);
	snprintf(path, sizeof(path), "%s/*.log", f->resend_dir);
	fwd = set_line(fwd, "file=\"/var/log/portlogd-resend/", path);
	ctr = set_line(ctr, "port=", value);
	snprintf(path, sizeof(path), "%s/central", f->dir);
	ctr = replace_all(ctr, "/var/log/portlogd-central", path);

	snprintf(path, sizeof(path), "%s/fwd/forward.conf", f->dir);
	e2e_write_file(path, fwd);
	snprintf(top, sizeof(top), "global(workDirectory=\"%s/fwd/work\" localHostname=\"" HOST "\")\n"
		 "include(file=\"%s\")\n", f->dir, path);
	e2e_write_file(f->fwd.conf, top);
	snprintf(path, sizeof(path), "%s/ctr/central.conf", f->dir);
	e2e_write_file(path, ctr);
	snprintf(top, sizeof(top), "global(workDirectory=\"%s/ctr/work\")\ninclude(file=\"%s\")\n",
		 f->dir, path);
	e2e_write_file(f->ctr.conf, top);
	free(fwd);
	free(ctr);
}

static void mkdirs(const char *dir, const char *sub)
{
	char p[500];

	snprintf(p, sizeof(p), "%s/%s", dir, sub);
	assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
}

static void rsys_init(struct rsys *r, const char *dir, const char *name)
{
	snprintf(r->dir, sizeof(r->dir), "%s/%s", dir, name);
	snprintf(r->conf, sizeof(r->conf), "%s/top.conf", r->dir);
	snprintf(r->pidfile, sizeof(r->pidfile), "%s/rsyslogd.pid", r->dir);
	snprintf(r->err, sizeof(r->err), "%s/stderr.txt", r->dir);
}

/* The daemon's config: NPORTS simulated ports, STAT lines every second (the
 * centre's proof of completeness), or the extra text instead of the ports. */
static void write_conf(struct fleet *f, const char *ports)
{
	char text[4096];
	size_t o;

	o = (size_t)snprintf(text, sizeof(text),
			     "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 1\n"
			     "[timer]\npriority = other\ncpu_dma_latency = off\n", f->log);
	if (ports != NULL)
		snprintf(text + o, sizeof(text) - o, "%s", ports);
	else
		for (unsigned i = 0; i < NPORTS; i++)
			o += (size_t)snprintf(text + o, sizeof(text) - o,
					      "[serial p%u]\ndevice = %s/tty%u\npriority = other\n",
					      i, f->dir, i);
	snprintf(f->conf, sizeof(f->conf), "%s/portlogd.conf", f->dir);
	e2e_write_file(f->conf, text);
}

static void start_daemon(struct fleet *f)
{
	assert_int_equal(e2e_start(&f->d, f->dir, f->conf), 0);
	if (e2e_wait_ready(&f->d, 20000) != 0)
		fail_msg("the daemon did not send READY=1 within 20 s");
}

static void stop_daemon(struct fleet *f)
{
	int st = e2e_stop(&f->d, SIGTERM, 20000, NULL);

	assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Centre, forwarder, daemon, and traffic on NPORTS ports (unless ports is set). */
static void fleet_up(struct fleet *f, const char *ports)
{
	e2e_tmpdir(f->dir, sizeof(f->dir));
	mkdirs(f->dir, "log");
	mkdirs(f->dir, "fwd");
	mkdirs(f->dir, "fwd/work");
	mkdirs(f->dir, "ctr");
	mkdirs(f->dir, "ctr/work");
	mkdirs(f->dir, "central");
	mkdirs(f->dir, "resend");
	mkdirs(f->dir, "saved");
	snprintf(f->log, sizeof(f->log), "%s/log/portlogd.log", f->dir);
	snprintf(f->central, sizeof(f->central), "%s/central/" HOST "/portlogd.log", f->dir);
	snprintf(f->resend_dir, sizeof(f->resend_dir), "%s/resend", f->dir);
	f->port = e2e_free_port();
	rsys_init(&f->fwd, f->dir, "fwd");
	rsys_init(&f->ctr, f->dir, "ctr");
	write_rsyslog(f);
	write_conf(f, ports);
	pthread_mutex_init(&f->t.mu, NULL);
	snprintf(f->w.local.path, sizeof(f->w.local.path), "%s", f->log);
	snprintf(f->w.central.path, sizeof(f->w.central.path), "%s", f->central);
	f->w.local.fd = f->w.central.fd = -1;
	f->w.central.central = true;
	f->w.t = &f->t;
	assert_int_equal(pthread_create(&f->w.thread, NULL, watch_main, &f->w), 0);

	rsys_start(&f->ctr);
	rsys_start(&f->fwd);
	if (ports == NULL) {
		struct sim_cfg cfg = {
			.kind = SIM_BINARY, .min_len = 4, .max_len = 200, .max_frags = 3,
			.intra_gap_max_us = 100, .inter_gap_min_us = 2000, .inter_gap_max_us = 8000,
			.gap_us = 1000, .seed = tu_seed("e2e_fleet"),
		};
		for (unsigned i = 0; i < NPORTS; i++) {
			char name[16], link[500];

			snprintf(name, sizeof(name), "p%u", i);
			snprintf(link, sizeof(link), "%s/tty%u", f->dir, i);
			assert_int_equal(sim_port_open(&f->p[i], name, link), 0);
		}
		start_daemon(f);
		assert_int_equal(sim_bg_start(&f->bg, f->p, NPORTS, &cfg, 0), 0);
		f->traffic = true;
	} else {
		start_daemon(f);
	}
}

static void traffic_stop(struct fleet *f)
{
	if (!f->traffic)
		return;
	for (unsigned i = 0; i < NPORTS; i++)
		atomic_store(&f->p[i].stop, true);
	(void)sim_bg_join(&f->bg);
	f->traffic = false;
}

/* The local files in order: saved rotated copies, then the current file. */
static void local_lines(struct fleet *f, struct line ***out, size_t *n)
{
	size_t cap = 0;

	*n = 0;
	*out = NULL;
	for (size_t k = 0; k < f->t.cap; k++)
		if (f->t.slot[k] != NULL)
			f->t.slot[k]->idx = -1;
	for (unsigned k = 0; k <= f->nsaved; k++) {
		char *buf = e2e_read_file(k < f->nsaved ? f->saved[k] : f->log, NULL);

		assert_non_null(buf);
		for (char *p = buf, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
			struct line *l = lines_get(&f->t, p, (size_t)(nl - p), true);

			if (l->idx >= 0)
				fail_msg("the same line twice in the local files: %.200s", l->text);
			if (*n == cap)
				*out = realloc(*out, (cap = cap * 2 + 4096) * sizeof(**out));
			l->idx = (long)*n;
			(*out)[(*n)++] = l;
		}
		free(buf);
	}
}

/* Waits (at most 120 s) until the centre holds the last local line. */
static void wait_caught_up(struct fleet *f, const char *central)
{
	char *buf = e2e_read_file(f->log, NULL), *last;
	size_t n;
	int64_t end = now_ns(CLOCK_MONOTONIC) + 120 * (int64_t)1000000000;

	assert_non_null(buf);
	n = strlen(buf);
	assert_true(n > 1);
	buf[n - 1] = '\0';
	last = strrchr(buf, '\n');
	last = last != NULL ? last + 1 : buf;
	for (;;) {
		char *c = e2e_read_file(central, NULL);
		bool done = c != NULL && strstr(c, last) != NULL;

		free(c);
		if (done)
			break;
		if (now_ns(CLOCK_MONOTONIC) > end)
			fail_msg("the centre did not get the last local line within 120 s: %.200s", last);
		sleep_ms(100);
	}
	free(buf);
}

struct verdict {
	size_t local, central, lost, dup, foreign, reordered;
	size_t first_lost;
};

/*
 * The central file against the local files: each central line is a local line
 * (else foreign), the first time (else a duplicate), and comes after the
 * previous line of its source in the local order (else reordered); what is
 * left is lost.
 */
static struct verdict compare(struct fleet *f, const char *central, bool delays)
{
	struct verdict v = { 0 };
	struct line **loc;
	char *buf = e2e_read_file(central, &v.central), srcs[16][32];
	long last[16];
	unsigned nsrc = 0;
	int64_t *d = NULL;
	size_t nd = 0, nc = 0;

	local_lines(f, &loc, &v.local);
	for (size_t i = 0; i < v.local; i++)
		loc[i]->matched = false;
	assert_non_null(buf);
	for (char *p = buf, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		struct line *l = lines_get(&f->t, p, (size_t)(nl - p), false);
		char src[32] = "";
		unsigned s;

		nc++;
		if (l == NULL || l->idx < 0) {
			if (v.foreign++ < 3)
				printf("# foreign line at the centre: %.200s\n", p);
			continue;
		}
		if (l->matched) {
			v.dup++;
			continue;
		}
		l->matched = true;
		(void)sscanf(l->text, "%*s %31s", src);
		for (s = 0; s < nsrc && strcmp(srcs[s], src) != 0; s++)
			;
		if (s == nsrc && nsrc < 16) {
			snprintf(srcs[nsrc], sizeof(srcs[nsrc]), "%s", src);
			last[nsrc++] = -1;
		}
		if (s < 16) {
			if (last[s] > l->idx && v.reordered++ < 3)
				printf("# out of order at the centre: %.200s\n", l->text);
			last[s] = l->idx;
		}
		if (delays && l->t_local != 0 && l->t_central != 0) {
			if (nd % 4096 == 0)
				d = realloc(d, (nd + 4096) * sizeof(*d));
			d[nd++] = l->t_central - l->t_local;
		}
	}
	v.central = nc;
	v.first_lost = (size_t)-1;
	for (size_t i = 0; i < v.local; i++)
		if (!loc[i]->matched && v.lost++ == 0) {
			v.first_lost = i;
			printf("# first lost line (local line %zu): %.200s\n", i + 1, loc[i]->text);
		}
	printf("# local %zu lines, central %zu: lost %zu, duplicates %zu, foreign %zu, "
	       "out of order %zu\n", v.local, v.central, v.lost, v.dup, v.foreign, v.reordered);
	if (delays && nd > 0)
		printf("# write to arrival at the centre (%zu lines, seen every 2 ms): p50 %.1f ms, "
		       "p99 %.1f ms\n", nd, (double)e2e_pct(d, nd, 50) / 1e6,
		       (double)e2e_pct(d, nd, 99) / 1e6);
	free(d);
	free(loc);
	free(buf);
	return v;
}

/* The central copy also proves itself complete: its STAT lines' accounting. */
static void expect_central_accounted(const char *central)
{
	struct e2e_log log = { 0 };

	assert_int_equal(e2e_read_log(&log, central), 0);
	e2e_expect_accounted(&log);
	e2e_free_log(&log);
}

/* Runs the shipped portlogd-fleet with args; returns its exit code, output in out. */
static int fleet_tool(char *out, size_t len, const char *fmt, ...)
{
	char cmd[2000];
	va_list ap;
	FILE *p;
	size_t n = 0;
	int st;

	va_start(ap, fmt);
	n = (size_t)snprintf(cmd, sizeof(cmd), "sh " PORTLOGD_SRC "/config/rsyslog/portlogd-fleet ");
	vsnprintf(cmd + n, sizeof(cmd) - n, fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	st = pclose(p);
	printf("# $ portlogd-fleet %s\n", cmd + strlen("sh " PORTLOGD_SRC "/config/rsyslog/portlogd-fleet "));
	for (char *q = out, *nl; *q != '\0'; q = nl + 1) {
		nl = strchr(q, '\n');
		printf("#   %.*s\n", nl != NULL ? (int)(nl - q) : (int)strlen(q), q);
		if (nl == NULL)
			break;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void fleet_down(struct fleet *f)
{
	traffic_stop(f);
	if (f->d.pid > 0)
		e2e_kill(&f->d);
	rsys_stop(&f->fwd);
	rsys_stop(&f->ctr);
	if (f->w.thread != 0) {
		atomic_store(&f->w.stop, true);
		pthread_join(f->w.thread, NULL);
		f->w.thread = 0;
	}
	for (unsigned i = 0; i < NPORTS; i++)
		if (f->p[i].master > 0)
			sim_port_close(&f->p[i]);
	lines_free(&f->t);
}

/* Traffic off, daemon stopped (its last STAT lines), the centre caught up, both stopped. */
static void finish(struct fleet *f)
{
	traffic_stop(f);
	stop_daemon(f);
	wait_caught_up(f, f->central);
	sleep_ms(500);          /* a duplicate can still follow the last line */
	rsys_stop(&f->fwd);
	rsys_stop(&f->ctr);
	atomic_store(&f->w.stop, true);
	pthread_join(f->w.thread, NULL);
	f->w.thread = 0;
}

static int teardown(void **state)
{
	struct fleet *f = *state;

	if (f != NULL) {
		fleet_down(f);
		free(f);
	}
	return 0;
}

static int setup(void **state)
{
	*state = calloc(1, sizeof(struct fleet));
	return *state != NULL ? 0 : -1;
}

static void expect_complete(struct fleet *f, bool dups_allowed, const char *what)
{
	struct verdict v = compare(f, f->central, true);

	assert_int_equal(v.foreign, 0);
	assert_int_equal(v.reordered, 0);
	assert_int_equal(v.lost, 0);
	if (!dups_allowed)
		assert_int_equal(v.dup, 0);
	if (v.dup == 0)
		expect_central_accounted(f->central);
	printf("# %s: 0 lost, %zu duplicates\n", what, v.dup);
}

/* 1. The shipped logrotate file, logrotate -f with its own state, 50 times under traffic. */
static void rotations(void **state)
{
	struct fleet *f = *state;
	char *rot = e2e_read_file(PORTLOGD_SRC "/config/portlogd.logrotate", NULL);
	char conf[500], pid[32];
	unsigned n = tu_env_uint("PORTLOGD_FLEET_ROTATIONS", 50);

	assert_non_null(rot);
	fleet_up(f, NULL);
	snprintf(conf, sizeof(conf), "%s/log/*.log", f->dir);
	rot = replace_all(rot, "/var/log/portlogd/*.log", conf);
	snprintf(pid, sizeof(pid), "kill -HUP %d", (int)f->d.pid);
	rot = replace_all(rot, "systemctl reload portlogd.service", pid);
	snprintf(conf, sizeof(conf), "%s/logrotate.conf", f->dir);
	e2e_write_file(conf, rot);
	free(rot);
	sleep_ms(1000);
	for (unsigned k = 0; k < n; k++) {
		char cmd[1200], one[500];
		int64_t end = now_ns(CLOCK_MONOTONIC) + 10 * (int64_t)1000000000;
		struct stat st;

		snprintf(cmd, sizeof(cmd), "logrotate -f -s %s/logrotate.state %s", f->dir, conf);
		assert_int_equal(system(cmd), 0);
		/* nocreate: the daemon makes the new file at its reopen; from then on
		 * it writes nothing more to .1, which the next rotation compresses */
		snprintf(one, sizeof(one), "%s.1", f->log);
		while (stat(f->log, &st) != 0) {
			if (now_ns(CLOCK_MONOTONIC) > end)
				fail_msg("rotation %u: no new log file within 10 s", k + 1);
			sleep_ms(5);
		}
		assert_int_equal(st.st_mode & 0777, 0640);
		assert_true(f->nsaved < 64);
		snprintf(one, sizeof(one), "%s/saved/%03u", f->dir, k);
		memcpy(f->saved[f->nsaved], one, sizeof(f->saved[0]));
		snprintf(one, sizeof(one), "%s.1", f->log);
		snprintf(cmd, sizeof(cmd), "cp %s %s", one, f->saved[f->nsaved++]);
		assert_int_equal(system(cmd), 0);
		sleep_ms(150);
	}
	finish(f);
	expect_complete(f, false, "50 rotations");
}

/* 2. The centre stopped for 10 s and started again. */
static void centre_down(void **state)
{
	struct fleet *f = *state;

	fleet_up(f, NULL);
	sleep_ms(2000);
	rsys_stop(&f->ctr);
	sleep_ms(10000);
	rsys_start(&f->ctr);
	sleep_ms(2000);
	finish(f);
	expect_complete(f, true, "centre down 10 s");
}

/*
 * 3. The forwarder restarted while the centre is down. omrelp has counted the
 * lines in flight when the connection broke as delivered (rsyslog issues 2610,
 * 3820), so they can be lost: the test asserts that portlogd-fleet check finds
 * exactly what is missing, that resend + repair make the copy complete, and
 * prints the loss.
 */
static void forwarder_restart(void **state)
{
	struct fleet *f = *state;
	struct verdict v;
	char out[8192], repaired[500], resend[500], *p;
	int rc;

	fleet_up(f, NULL);
	/* resend writes where the test's forwarder looks, not to /var/log */
	setenv("PORTLOGD_RESEND_DIR", f->resend_dir, 1);
	sleep_ms(2000);
	rsys_stop(&f->ctr);
	sleep_ms(2000);
	rsys_stop(&f->fwd);
	sleep_ms(500);
	rsys_start(&f->fwd);
	sleep_ms(3000);
	rsys_start(&f->ctr);
	sleep_ms(2000);
	traffic_stop(f);
	stop_daemon(f);
	wait_caught_up(f, f->central);
	sleep_ms(500);
	atomic_store(&f->w.stop, true);
	pthread_join(f->w.thread, NULL);
	f->w.thread = 0;

	v = compare(f, f->central, true);
	printf("# forwarder restarted while the centre was down: %zu lost, %zu duplicates\n",
	       v.lost, v.dup);
	assert_int_equal(v.foreign, 0);
	assert_int_equal(v.reordered, 0);
	rc = fleet_tool(out, sizeof(out), "check %s", f->central);
	if (v.lost == 0) {
		assert_int_equal(rc, 0);
	} else {
		char want[64];

		assert_int_equal(rc, 1);
		snprintf(want, sizeof(want), "missing=%zu ", v.lost);
		assert_non_null(strstr(out, want));
		/* on the PC: each gap's lines out of its own files, through the forwarder */
		for (p = strstr(out, "portlogd-fleet resend "); p != NULL;
		     p = strstr(p + 1, "portlogd-fleet resend ")) {
			char t1[64], t2[64], o2[1024];

			assert_int_equal(sscanf(p, "portlogd-fleet resend %63s %63s", t1, t2), 2);
			assert_int_equal(fleet_tool(o2, sizeof(o2), "resend %s %s %s", t1, t2, f->log), 0);
		}
		snprintf(resend, sizeof(resend), "%s/central/" HOST "/resend.log", f->dir);
		/* the resent lines arrive in resend.log; repair merges them in */
		snprintf(repaired, sizeof(repaired), "%s/repaired.log", f->dir);
		for (int i = 0; ; i++) {
			char cmd[1500];
			struct verdict r;

			sleep_ms(500);
			snprintf(cmd, sizeof(cmd), "sh " PORTLOGD_SRC "/config/rsyslog/portlogd-fleet "
				 "repair %s %s > %s 2>/dev/null", f->central, resend, repaired);
			if (system(cmd) != 0 && i < 60)
				continue;
			r = compare(f, repaired, false);
			if (r.lost == 0 || i >= 60) {
				assert_int_equal(r.lost, 0);
				assert_int_equal(r.dup, 0);
				assert_int_equal(r.foreign, 0);
				assert_int_equal(r.reordered, 0);
				break;
			}
		}
		assert_int_equal(fleet_tool(out, sizeof(out), "check %s", repaired), 0);
		expect_central_accounted(repaired);
		printf("# after resend and repair: 0 lost, 0 duplicates, byte-identical\n");
	}
	rsys_stop(&f->fwd);
	rsys_stop(&f->ctr);
}

/* 4. portlogd stopped and started again: imfile goes on in the same file. */
static void daemon_restart(void **state)
{
	struct fleet *f = *state;

	fleet_up(f, NULL);
	sleep_ms(2000);
	stop_daemon(f);
	sleep_ms(1000);
	start_daemon(f);
	sleep_ms(2000);
	finish(f);
	expect_complete(f, false, "portlogd restarted");
}

/*
 * 5. The longest line portlogd can write: max_packet = 65535, payload = both,
 * a 31-character port name, every byte escaped as \xHH; and a packet with every
 * byte value. Both arrive byte-identical.
 */
static void longest_line(void **state)
{
	struct fleet *f = *state;
	char ports[1200], slave[100], link[500], *buf;
	static uint8_t pkt[65535];
	size_t longest = 0;
	int m;

	/* a 31-character name, the longest allowed */
	m = e2e_open_pty(slave, sizeof(slave));
	assert_true(m >= 0);
	snprintf(link, sizeof(link), "%s", slave);
	snprintf(ports, sizeof(ports), "[serial abcdefghijklmnopqrstuvwxyz01234]\ndevice = %s\n"
		 "max_packet = 65535\ngap_us = 300000\npriority = other\n", link);
	fleet_up(f, ports);
	for (int k = 0; k < 2; k++) {
		/* first: no byte printable (4 characters each); then every value */
		for (size_t i = 0; i < sizeof(pkt); i++)
			pkt[i] = k == 0 ? (uint8_t)(0x80 + i % 0x80) : (uint8_t)i;
		for (size_t o = 0; o < sizeof(pkt);) {
			ssize_t w = write(m, pkt + o, sizeof(pkt) - o);

			if (w < 0 && errno == EAGAIN) {
				sleep_ms(1);
				continue;
			}
			assert_true(w > 0);
			o += (size_t)w;
		}
		sleep_ms(1000);
	}
	finish(f);
	close(m);
	buf = e2e_read_file(f->log, NULL);
	assert_non_null(buf);
	for (char *p = buf, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1)
		if ((size_t)(nl - p) > longest)
			longest = (size_t)(nl - p);
	free(buf);
	/* 30 (ISO time) + 1 + 31 (name) + 4 (" RX ") + 5 (65535) + 1 + 131070 (hex)
	 * + 1 + 262142 (quoted text, \xHH each) = 393285, the newline not counted */
	printf("# longest line %zu bytes (fmt_rx_max(65535) = %zu); maxMessageSize 512k\n",
	       longest, fmt_rx_max(65535));
	assert_int_equal(longest, 393285);
	assert_true(longest < fmt_rx_max(65535));
	assert_true(longest + 300 < 512 * 1024);
	expect_complete(f, false, "longest line");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(rotations, setup, teardown),
		cmocka_unit_test_setup_teardown(centre_down, setup, teardown),
		cmocka_unit_test_setup_teardown(forwarder_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(daemon_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(longest_line, setup, teardown),
	};

	if (system("command -v rsyslogd >/dev/null && command -v logrotate >/dev/null && "
		   "test -e /usr/lib/x86_64-linux-gnu/rsyslog/omrelp.so -o "
		   "-n \"$(find /usr/lib -name omrelp.so 2>/dev/null | head -1)\"") != 0) {
		printf("SKIP: rsyslog, rsyslog-relp or logrotate missing (tests/deps.sh installs them)\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
