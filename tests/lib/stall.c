/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stall.c - the stall injector: a child process that stops CPUs or a process now and then. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stall.h"
#include "testutil.h"

/* mlockall of a sanitizer's terabytes of shadow mappings would exhaust memory (daemon/rt.c) */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LOCK_MEMORY() ((void)0)
#else
#define LOCK_MEMORY() ((void)mlockall(MCL_CURRENT | MCL_FUTURE))
#endif

#define STALL_MAX 8192		/* records kept; more stalls still run, uncounted by kind */
#define MAX_CPUS 256
#define MAX_PROCS 8192

static const char *const kind_name[STALL_KINDS] = { "cpu", "tty", "all", "stop" };

struct stall_shm {
	atomic_uint n;		/* stalls recorded: written by the child, release */
	struct stall_rec rec[STALL_MAX];
};

/* What the controller tells a worker: spin at prio until until_ns (CLOCK_MONOTONIC). */
struct stall_cmd {
	int prio;
	unsigned seq;
	int64_t until_ns;
};

/* What a worker answers: when it held its CPU (0, 0: SCHED_FIFO refused). One pipe write. */
struct stall_span {
	unsigned seq;
	int64_t start_ns, end_ns;
};

struct worker {
	pid_t pid;
	int cmd;		/* the controller's end of its command pipe */
	int cpu;
};

static volatile sig_atomic_t ending;	/* the controller's: SIGTERM came */

static void on_term(int sig)
{
	(void)sig;
	ending = 1;
}

struct ctl {
	struct stall_cfg cfg;
	uint64_t rng;
	struct worker w[MAX_CPUS];
	unsigned nw;
	unsigned seq;		/* the stall's number: what its answers carry */
	int done;		/* the workers' answers: struct stall_span */
	struct stall_shm *shm;
};

void stall_defaults(struct stall_cfg *cfg)
{
	*cfg = (struct stall_cfg){
		.mode = STALL_MIX, .cpu = -1, .pid = 0, .tree = 0,
		.min_ms = 30, .max_ms = 200, .pause_min_ms = 300, .pause_max_ms = 2000,
	};
}

int stall_parse_mode(struct stall_cfg *cfg, const char *text)
{
	char *end;

	if (strcmp(text, "tty") == 0) {
		cfg->mode = STALL_TTY;
	} else if (strcmp(text, "all") == 0) {
		cfg->mode = STALL_ALL;
	} else if (strcmp(text, "mix") == 0) {
		cfg->mode = STALL_MIX;
	} else if (strcmp(text, "cpu") == 0) {
		cfg->mode = STALL_CPU;
		cfg->cpu = -1;
	} else if (strncmp(text, "cpu:", 4) == 0 && isdigit((unsigned char)text[4])) {
		cfg->mode = STALL_CPU;
		cfg->cpu = (int)strtol(text + 4, &end, 10);
		if (*end != '\0' || cfg->cpu >= MAX_CPUS)
			return -EINVAL;
	} else if (strncmp(text, "stop:", 5) == 0 && isdigit((unsigned char)text[5])) {
		cfg->mode = STALL_STOP;
		cfg->pid = (pid_t)strtol(text + 5, &end, 10);
		if (*end != '\0' || cfg->pid <= 0)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	return 0;
}

static unsigned pick(struct ctl *c, unsigned lo, unsigned hi)
{
	return lo + (unsigned)(tu_rand(&c->rng) % ((uint64_t)hi - lo + 1));
}

/* All of len bytes written (out) or read, through EINTR; 0, or -1 at EOF or an error. */
static int xfer(int fd, void *buf, size_t len, bool out)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	return xfer(fd, (void *)buf, len, true);
}

static int read_all(int fd, void *buf, size_t len)
{
	return xfer(fd, buf, len, false);
}

static int set_fifo(int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	return sched_setscheduler(0, SCHED_FIFO, &sp) == 0 ? 0 : -errno;
}

/* A worker: pinned to its CPU, memory locked; says whether SCHED_FIFO 99 is allowed (an int
 * on done), then spins as told until its command pipe ends. */
static void worker_main(int cpu, int cmd, int done)
{
	cpu_set_t set;
	struct stall_cmd c;
	int err;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	err = sched_setaffinity(0, sizeof(set), &set) == 0 ? 0 : -errno;
	LOCK_MEMORY();	/* not fatal: a worker that faults mid-spin only stalls less */
	if (err == 0)
		err = set_fifo(99);
	if (write_all(done, &err, sizeof(err)) < 0 || err != 0)
		_exit(1);
	while (read_all(cmd, &c, sizeof(c)) == 0) {
		struct stall_span sp = { .seq = c.seq };

		if (set_fifo(c.prio) == 0) {
			sp.start_ns = tu_mono_ns();
			while ((sp.end_ns = tu_mono_ns()) < c.until_ns)
				;
		}
		if (write_all(done, &sp, sizeof(sp)) < 0)
			break;
	}
	_exit(0);
}

/* One worker per CPU this process may run on. 0 or -errno (-EPERM: no SCHED_FIFO). */
static int start_workers(struct ctl *c)
{
	cpu_set_t set;
	int done[2], err = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0 || pipe2(done, O_CLOEXEC) != 0)
		return -errno;
	c->done = done[0];
	for (int cpu = 0; cpu < MAX_CPUS && cpu < CPU_SETSIZE; cpu++) {
		int p[2];
		pid_t pid;

		if (!CPU_ISSET(cpu, &set))
			continue;
		if (pipe2(p, O_CLOEXEC) != 0)
			return -errno;
		pid = fork();
		if (pid < 0)
			return -errno;
		if (pid == 0) {
			close(p[1]);
			close(done[0]);
			for (unsigned i = 0; i < c->nw; i++)
				close(c->w[i].cmd);
			worker_main(cpu, p[0], done[1]);
		}
		close(p[0]);
		c->w[c->nw++] = (struct worker){ .pid = pid, .cmd = p[1], .cpu = cpu };
	}
	close(done[1]);
	for (unsigned i = 0; i < c->nw; i++) {
		int e;

		if (read_all(c->done, &e, sizeof(e)) < 0)
			e = -EPIPE;
		if (err == 0)
			err = e;
	}
	return err;
}

/* Killed, not waited for: one that a thread above it starves (tty's priority 50 is below the
 * daemon's readers) dies when it next runs, reaped by whoever inherits it. */
static void stop_workers(struct ctl *c)
{
	for (unsigned i = 0; i < c->nw; i++) {
		close(c->w[i].cmd);
		kill(c->w[i].pid, SIGKILL);
		(void)waitpid(c->w[i].pid, NULL, WNOHANG);
	}
	c->nw = 0;
}

static int worker_of_cpu(const struct ctl *c, int cpu)
{
	for (unsigned i = 0; i < c->nw; i++)
		if (c->w[i].cpu == cpu)
			return (int)i;
	return -1;
}

/* A random process of the tree below root (root included), not this one nor its workers,
 * none stopped already; 0 when there is none. */
static pid_t pick_in_tree(struct ctl *c, pid_t root)
{
	static pid_t pid[MAX_PROCS], ppid[MAX_PROCS];
	static char in[MAX_PROCS];
	unsigned n = 0, nin = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t self = getpid();
	bool grew = true;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL && n < MAX_PROCS) {
		char path[300], buf[512], *rp;
		FILE *f;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "re");
		if (f == NULL)
			continue;
		rp = fgets(buf, sizeof(buf), f) != NULL ? strrchr(buf, ')') : NULL;
		fclose(f);
		/* a zombie cannot stall; one stopped already is someone else's to continue */
		if (rp == NULL || rp[1] == '\0' || strchr("ZTt", rp[2]) != NULL)
			continue;
		pid[n] = (pid_t)atoi(e->d_name);
		ppid[n] = (pid_t)atoi(rp + 4);	/* ") S PPID" */
		in[n] = pid[n] == root;
		n++;
	}
	closedir(d);
	while (grew) {
		grew = false;
		for (unsigned i = 0; i < n; i++)
			for (unsigned j = 0; j < n && !in[i]; j++)
				if (in[j] && ppid[i] == pid[j] && pid[i] != self && ppid[i] != self)
					in[i] = 1, grew = true;
	}
	for (unsigned i = 0; i < n; i++)
		nin += (unsigned)in[i];
	if (nin == 0)
		return 0;
	for (unsigned i = 0, k = pick(c, 1, nin); i < n; i++)
		if (in[i] && --k == 0)
			return pid[i];
	return 0;
}

static void sleep_until(int64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000), (long)(t % 1000000000) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Has process p stopped (state T)? Polled for at most 50 ms. */
static bool seen_stopped(pid_t p)
{
	char path[64], buf[256], *rp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
	for (int i = 0; i < 500; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

		if (fd >= 0)
			close(fd);
		if (n <= 0)
			return false;
		buf[n] = '\0';
		rp = strrchr(buf, ')');
		if (rp != NULL && rp[1] == ' ' && rp[2] == 'T')
			return true;
		nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	}
	return false;
}

/*
 * One stall of kind k, len_ns long. Its record is an interval in which the stall held
 * for sure: from the moment every worker told spins (or the process is seen stopped) to
 * the first worker's end (or the SIGCONT); end_ns = 0 when it could not run.
 */
static struct stall_rec one_stall(struct ctl *c, int k, int64_t len_ns)
{
	struct stall_rec r = { .kind = k, .who = -1 };

	if (k == STALL_STOP) {
		pid_t p = c->cfg.tree ? pick_in_tree(c, c->cfg.pid) : c->cfg.pid;
		int64_t t = tu_mono_ns();

		r.who = (int)p;
		if (p <= 0 || kill(p, SIGSTOP) != 0)
			return r;
		if (seen_stopped(p)) {
			r.start_ns = tu_mono_ns();
			sleep_until(t + len_ns);
			r.end_ns = tu_mono_ns();
		}
		(void)kill(p, SIGCONT);	/* it may have died meanwhile */
		return r;
	}
	unsigned first = 0, last = c->nw, got = 0;	/* the workers told, and their answers */
	struct stall_cmd cmd = { .prio = k == STALL_TTY ? 50 : 99, .seq = ++c->seq };
	int64_t give_up;
	bool held = true;

	if (k == STALL_CPU) {
		int i = c->cfg.cpu >= 0 ? worker_of_cpu(c, c->cfg.cpu) : (int)pick(c, 0, c->nw - 1);

		first = (unsigned)i;
		last = first + 1;
		r.who = c->w[i].cpu;
	}
	cmd.until_ns = tu_mono_ns() + len_ns;
	/* a worker starved by a thread above it (tty) answers late or never: not waited for */
	give_up = cmd.until_ns + len_ns + 1000000000;
	for (unsigned i = first; i < last; i++)
		if (write_all(c->w[i].cmd, &cmd, sizeof(cmd)) < 0)
			last = i;
	r.end_ns = INT64_MAX;
	while (got < last - first) {
		struct pollfd pfd = { .fd = c->done, .events = POLLIN };
		int64_t left = (give_up - tu_mono_ns()) / 1000000;
		struct stall_span sp;
		int pr = left > 0 ? poll(&pfd, 1, (int)left) : 0;

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0 || read_all(c->done, &sp, sizeof(sp)) < 0)
			break;
		if (sp.seq != cmd.seq)
			continue;	/* a late answer to an earlier stall */
		got++;
		held &= sp.start_ns != 0;
		r.start_ns = sp.start_ns > r.start_ns ? sp.start_ns : r.start_ns;
		r.end_ns = sp.end_ns < r.end_ns ? sp.end_ns : r.end_ns;
	}
	if (!held || got == 0 || got < last - first || r.end_ns <= r.start_ns)
		r.end_ns = 0;	/* not every CPU was taken at once: no stall */
	return r;
}

static int draw_kind(struct ctl *c)
{
	if (c->cfg.mode != STALL_MIX)
		return (int)c->cfg.mode;
	return (int)pick(c, 0, c->cfg.pid > 0 ? STALL_STOP : STALL_ALL);
}

/* The child: until SIGTERM (stall_stop, or its parent's death), a pause, then a stall. ready
 * gets 0 or -errno once it runs. A signal, not a pipe's end: the test's own children that
 * fork without exec would hold a pipe open. */
static void controller_main(struct ctl *c, pid_t parent, int ready)
{
	struct sigaction sa = { .sa_handler = on_term };
	sigset_t term, none;
	bool cpus = c->cfg.mode != STALL_STOP;
	int err = 0;

	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &none);
	sigdelset(&none, SIGTERM);
	sigaction(SIGTERM, &sa, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
		_exit(1);

	LOCK_MEMORY();	/* as the workers */
	if (cpus)
		err = start_workers(c);
	if (err == 0 && c->cfg.mode == STALL_CPU && c->cfg.cpu >= 0
	    && worker_of_cpu(c, c->cfg.cpu) < 0)
		err = -EINVAL;
	/* above the workers, so that it tells every CPU's at once and ends a STOP on time (a STOP
	 * alone needs no privilege: then it runs as it may) */
	if (err == 0) {
		int e = set_fifo(99);

		if (cpus)
			err = e;
	}
	if (err == 0 && (c->cfg.mode == STALL_STOP || c->cfg.pid > 0) && kill(c->cfg.pid, 0) != 0)
		err = -errno;
	(void)write_all(ready, &err, sizeof(err));
	close(ready);
	if (err != 0) {
		stop_workers(c);
		_exit(1);
	}
	while (!ending) {
		unsigned pause = pick(c, c->cfg.pause_min_ms, c->cfg.pause_max_ms);
		int64_t len = (int64_t)pick(c, c->cfg.min_ms, c->cfg.max_ms) * 1000000;
		struct timespec ts = { pause / 1000, (long)(pause % 1000) * 1000000 };
		int k = draw_kind(c);
		struct stall_rec r;
		unsigned n;

		/* SIGTERM is let in only here: a stall once begun ends (a stopped process goes on) */
		if (ppoll(NULL, 0, &ts, &none) != 0 || ending)
			break;
		r = one_stall(c, k, len);
		n = atomic_load_explicit(&c->shm->n, memory_order_relaxed);
		if (r.end_ns != 0 && n < STALL_MAX) {
			c->shm->rec[n] = r;
			/* orders the record before the count the parent reads */
			atomic_store_explicit(&c->shm->n, n + 1, memory_order_release);
		}
	}
	stop_workers(c);
	_exit(0);
}

int stall_start(struct stall *s, const struct stall_cfg *cfg)
{
	static struct ctl c;	/* the child's own copy after fork */
	pid_t parent = getpid();
	int ready[2], err;

	*s = (struct stall){ .child = -1, .shm = NULL };
	if (cfg->min_ms == 0 || cfg->min_ms > cfg->max_ms || cfg->pause_min_ms > cfg->pause_max_ms
	    || cfg->pause_max_ms > 3600000 || cfg->max_ms > 10000
	    || (cfg->mode == STALL_STOP && cfg->pid <= 0))
		return -EINVAL;
	s->shm = mmap(NULL, sizeof(*s->shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	if (s->shm == MAP_FAILED) {
		s->shm = NULL;
		return -errno;
	}
	atomic_init(&s->shm->n, 0);
	if (pipe2(ready, O_CLOEXEC) != 0) {
		err = -errno;
		stall_free(s);
		return err;
	}
	fflush(NULL);
	s->child = fork();
	if (s->child == 0) {
		close(ready[0]);
		c = (struct ctl){ .cfg = *cfg, .rng = cfg->seed, .shm = s->shm, .done = -1 };
		controller_main(&c, parent, ready[1]);
	}
	err = s->child < 0 ? -errno : 0;
	close(ready[1]);
	if (err == 0 && read_all(ready[0], &err, sizeof(err)) < 0)
		err = -EPIPE;
	close(ready[0]);
	if (err != 0) {
		int e = err;

		stall_stop(s);
		stall_free(s);
		return e;
	}
	return 0;
}

int stall_stop(struct stall *s)
{
	if (s->child > 0) {
		kill(s->child, SIGTERM);
		while (waitpid(s->child, NULL, 0) < 0 && errno == EINTR)
			;
		s->child = -1;
	}
	return s->shm != NULL ? (int)atomic_load_explicit(&s->shm->n, memory_order_acquire) : 0;
}

const struct stall_rec *stall_rec(const struct stall *s, unsigned i)
{
	return &s->shm->rec[i];
}

void stall_summary(const struct stall *s, char *buf, size_t len)
{
	unsigned n = s->shm != NULL ? atomic_load_explicit(&s->shm->n, memory_order_acquire) : 0;
	unsigned by[STALL_KINDS] = { 0 };
	int64_t lo = INT64_MAX, hi = 0, sum = 0;
	int off;

	for (unsigned i = 0; i < n; i++) {
		const struct stall_rec *r = &s->shm->rec[i];
		int64_t d = r->end_ns - r->start_ns;

		by[r->kind]++;
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		sum += d;
	}
	off = snprintf(buf, len, "%u stalls (", n);
	for (int k = 0; k < STALL_KINDS && off >= 0 && (size_t)off < len; k++)
		off += snprintf(buf + off, len - (size_t)off, "%s%s %u", k ? ", " : "", kind_name[k],
				by[k]);
	if (off >= 0 && (size_t)off < len)
		snprintf(buf + off, len - (size_t)off, "), %lld-%lld ms, %lld ms in all",
			 n ? (long long)(lo / 1000000) : 0LL, (long long)(hi / 1000000),
			 (long long)(sum / 1000000));
}

void stall_free(struct stall *s)
{
	if (s->shm != NULL)
		munmap(s->shm, sizeof(*s->shm));
	s->shm = NULL;
}
