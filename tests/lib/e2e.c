/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e.c - the end-to-end harness: spawn, sd_notify listener, stop, log parser. */
#include <errno.h>
#include <setjmp.h>
#include <stddef.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <limits.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "logline.h"
#include "source.h"
#include "testutil.h"

/* The daemon under test: $PORTLOGD_BIN (an installed binary), or this build's. */
static const char *daemon_bin(void)
{
	const char *bin = getenv("PORTLOGD_BIN");

	return bin != NULL && *bin != '\0' ? bin : PORTLOGD_BIN;
}

static int64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The directories e2e_tmpdir made, for e2e_finish. */
static char **made;
static size_t nmade;

void e2e_tmpdir(char *out, size_t len)
{
	const char *base = getenv("TMPDIR");
	char **grown = realloc(made, (nmade + 1) * sizeof(*made));

	snprintf(out, len, "%s/portlogd-e2e-XXXXXX", base ? base : "/tmp");
	if (mkdtemp(out) == NULL || grown == NULL) {
		perror("mkdtemp");
		abort();
	}
	made = grown;
	made[nmade] = strdup(out);
	nmade += made[nmade] != NULL;
}

int e2e_finish(int failures)
{
	for (size_t i = 0; i < nmade; i++) {
		if (failures == 0 && access(made[i], F_OK) == 0)
			e2e_remove_dir(made[i]);
		free(made[i]);
	}
	if (failures > 0 && nmade > 0)
		printf("# kept for a look: the %zu directories of this run (%s/portlogd-e2e-*), "
		       "the daemon's stderr.txt in each\n", nmade,
		       getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
	free(made);
	made = NULL;
	nmade = 0;
	return failures;
}

void e2e_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		abort();
	}
}

static struct e2e_child child = { -1, -1, -1, -1, 0 };

void e2e_set_child(const struct e2e_child *c)
{
	child = *c;
}

/* In the forked child, before exec: the limits, then the user (the order matters:
 * an unprivileged user may not raise a hard limit). Exits 126 on failure. */
static void apply_child(void)
{
	struct rlimit rl;

	if (child.rtprio >= 0) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)child.rtprio;
		if (setrlimit(RLIMIT_RTPRIO, &rl) < 0)
			_exit(126);
	}
	if (child.memlock >= 0) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)child.memlock;
		if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
			_exit(126);
	}
	if (child.nproc > 0) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)child.nproc;
		if (setrlimit(RLIMIT_NPROC, &rl) < 0)
			_exit(126);
	}
	if (child.gid >= 0 && (setgroups(0, NULL) < 0 || setgid((gid_t)child.gid) < 0))
		_exit(126);
	if (child.uid >= 0 && setuid((uid_t)child.uid) < 0)
		_exit(126);
}

int e2e_start(struct e2e_daemon *d, const char *dir, const char *conf)
{
	return e2e_start_env(d, dir, conf, NULL);
}

static void child_env(const char *const *env)
{
	char pid[24];

	for (; env != NULL && *env != NULL; env++) {
		const char *eq = strchr(*env, '=');
		char key[64];

		if (eq == NULL || (size_t)(eq - *env) >= sizeof(key))
			continue;
		memcpy(key, *env, (size_t)(eq - *env));
		key[eq - *env] = '\0';
		if (eq[1] == '\0') {
			unsetenv(key);
			continue;
		}
		setenv(key, eq + 1, 1);
		if (strcmp(key, "WATCHDOG_USEC") == 0) {
			snprintf(pid, sizeof(pid), "%ld", (long)getpid());  /* exec keeps the pid */
			setenv("WATCHDOG_PID", pid, 1);
		}
	}
}

int e2e_start_env(struct e2e_daemon *d, const char *dir, const char *conf,
		  const char *const *env)
{
	return e2e_start_opts(d, dir, conf, env, true);
}

void e2e_store_clear(struct e2e_store *s)
{
	for (size_t i = 0; i < s->n; i++)
		close(s->fd[i]);
	memset(s, 0, sizeof(*s));
}

static void store_forget(struct e2e_store *s, size_t i)
{
	close(s->fd[i]);
	memmove(&s->fd[i], &s->fd[i + 1], (s->n - i - 1) * sizeof(s->fd[0]));
	memmove(&s->name[i], &s->name[i + 1], (s->n - i - 1) * sizeof(s->name[0]));
	s->n--;
}

unsigned e2e_store_prune(struct e2e_store *s)
{
	unsigned n = 0;

	for (size_t i = 0; i < s->n;) {
		struct pollfd pfd = { .fd = s->fd[i], .events = 0 };

		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR)) != 0) {
			store_forget(s, i);
			n++;
		} else {
			i++;
		}
	}
	return n;
}

int e2e_store_find(const struct e2e_store *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->name[i], name) == 0)
			return (int)i;
	return -1;
}

static void store_note(struct e2e_store *s, char sign, const char *name)
{
	size_t o = strlen(s->log);

	snprintf(s->log + o, sizeof(s->log) - o, "%c%s ", sign, name);
}

/* A message of the daemon with the descriptors it carried: as systemd's store takes it. */
static void store_take(struct e2e_store *s, const char *msg, const int *fds, size_t nfds)
{
	const char *name = e2e_notify_has(msg, "FDNAME", NULL);
	char n[64] = "";

	if (name != NULL)
		snprintf(n, sizeof(n), "%.*s", (int)strcspn(name, "\n"), name);
	if (e2e_notify_has(msg, "FDSTOREREMOVE", "1") != NULL) {
		s->removes++;
		store_note(s, '-', n);
		for (size_t i = 0; i < s->n;) {
			if (strcmp(s->name[i], n) == 0)
				store_forget(s, i);
			else
				i++;
		}
	}
	for (size_t i = 0; i < nfds; i++) {
		/* systemd closes what comes beyond FileDescriptorStoreMax= */
		if (e2e_notify_has(msg, "FDSTORE", "1") == NULL
		    || s->n == (s->max > 0 && s->max < E2E_STORE_MAX ? s->max : E2E_STORE_MAX)) {
			close(fds[i]);
			continue;
		}
		s->fd[s->n] = fds[i];
		snprintf(s->name[s->n++], sizeof(s->name[0]), "%s", n);
	}
	if (e2e_notify_has(msg, "FDSTORE", "1") != NULL) {
		s->puts++;
		store_note(s, '+', n);
	}
}

/* In the forked child: what the store holds at 3, 4, ... with LISTEN_FDS, LISTEN_PID
 * and LISTEN_FDNAMES, as systemd passes them. */
static void hand_over(const struct e2e_store *s)
{
	char names[E2E_STORE_MAX * 65] = "", num[24];
	int tmp[E2E_STORE_MAX];

	if (s->n == 0)
		return;
	/* first out of the way of 3..3+n, then each to its place (without CLOEXEC) */
	for (size_t i = 0; i < s->n; i++)
		if ((tmp[i] = fcntl(s->fd[i], F_DUPFD_CLOEXEC, 3 + (int)s->n + 64)) < 0)
			_exit(125);
	for (size_t i = 0; i < s->n; i++) {
		if (dup2(tmp[i], 3 + (int)i) < 0)
			_exit(125);
		size_t o = strlen(names);
		snprintf(names + o, sizeof(names) - o, "%s%s", i > 0 ? ":" : "", s->name[i]);
	}
	snprintf(num, sizeof(num), "%zu", s->n);
	setenv("LISTEN_FDS", num, 1);
	snprintf(num, sizeof(num), "%ld", (long)getpid());     /* exec keeps the pid */
	setenv("LISTEN_PID", num, 1);
	setenv("LISTEN_FDNAMES", names, 1);
}

static int start(struct e2e_daemon *d, const char *dir, const char *conf,
		 const char *const *env, bool foreground, struct e2e_store *st)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(d, 0, sizeof(*d));
	d->store = st;
	snprintf(d->notify_path, sizeof(d->notify_path), "%s/notify.sock", dir);
	snprintf(d->err_path, sizeof(d->err_path), "%s/stderr.txt", dir);
	if (strlen(d->notify_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, d->notify_path, strlen(d->notify_path) + 1);
	unlink(d->notify_path);
	d->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (d->notify_fd < 0 || bind(d->notify_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	/* a daemon started as another user must be able to send to it */
	(void)chmod(d->notify_path, 0666);
	d->pid = fork();
	if (d->pid < 0)
		return -errno;
	if (d->pid > 0)
		child = (struct e2e_child){ -1, -1, -1, -1, 0 };
	if (d->pid == 0) {
		int fd = open(d->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		/* never outlive the test: an orphan would keep reopening its device
		 * links and could take a later test's pty when the number is reused */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0)
			dup2(fd, 2);
		setenv("NOTIFY_SOCKET", d->notify_path, 1);
		if (st != NULL) {
			setenv("FDSTORE", "64", 1);
			hand_over(st);
		}
		child_env(env);
		apply_child();
		if (foreground)
			execl(daemon_bin(), "portlogd", "-f", "-c", conf, (char *)NULL);
		else
			execl(daemon_bin(), "portlogd", "-c", conf, (char *)NULL);
		_exit(127);
	}
	return 0;
}

int e2e_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

char *e2e_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (f == NULL)
		return NULL;
	do {
		if (cap - n < 65536)
			buf = realloc(buf, cap = cap * 2 + 65536);
		r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
	} while (r > 0);
	fclose(f);
	buf[n] = '\0';
	if (len != NULL)
		*len = n;
	return buf;
}

int e2e_start_opts(struct e2e_daemon *d, const char *dir, const char *conf,
		   const char *const *env, bool foreground)
{
	return start(d, dir, conf, env, foreground, NULL);
}

int e2e_start_store(struct e2e_daemon *d, const char *dir, const char *conf,
		    const char *const *env, struct e2e_store *st)
{
	return start(d, dir, conf, env, true, st);
}

int e2e_open_pty(char *slave, size_t len)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (m < 0)
		return -errno;
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, slave, len) != 0) {
		int e = errno;

		close(m);
		return -e;
	}
	return m;
}

void e2e_kill(struct e2e_daemon *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
	}
}

int e2e_notify_recv(struct e2e_daemon *d, char *buf, size_t len, int timeout_ms)
{
	int64_t end = mono() + (int64_t)timeout_ms * 1000000;

	for (;;) {
		struct pollfd pfd = { .fd = d->notify_fd, .events = POLLIN };
		siginfo_t si = { 0 };
		int64_t left = (end - mono()) / 1000000;

		/* what was sent before an exit is still read first */
		if (poll(&pfd, 1, 0) == 1) {
			union {
				struct cmsghdr h;
				char b[CMSG_SPACE(16 * sizeof(int))];
			} ctl;
			struct iovec iov = { .iov_base = buf, .iov_len = len - 1 };
			struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
					     .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
			ssize_t n = recvmsg(d->notify_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

			if (n >= 0) {
				int fds[16];
				size_t nfds = 0;

				buf[n] = '\0';
				for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL;
				     c = CMSG_NXTHDR(&mh, c)) {
					if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
						continue;
					nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
					memcpy(fds, CMSG_DATA(c), nfds * sizeof(int));
				}
				if (d->store != NULL)
					store_take(d->store, buf, fds, nfds);
				else
					for (size_t i = 0; i < nfds; i++)
						close(fds[i]);
				return (int)n;
			}
		}
		/* WNOWAIT: look without reaping, e2e_stop collects the status */
		if (d->pid <= 0 || (waitid(P_PID, (id_t)d->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0
				    && si.si_pid == d->pid))
			return -1;
		if (left <= 0)
			return 0;
		/* a short poll so that a daemon that died is noticed */
		(void)poll(&pfd, 1, left < 100 ? (int)left : 100);
	}
}

const char *e2e_notify_has(const char *msg, const char *key, const char *value)
{
	size_t kl = strlen(key);

	for (const char *p = msg; p != NULL && *p != '\0';) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl != NULL ? (size_t)(nl - p) : strlen(p);

		if (ll > kl && strncmp(p, key, kl) == 0 && p[kl] == '=' &&
		    (value == NULL || (ll - kl - 1 == strlen(value) &&
				       strncmp(p + kl + 1, value, ll - kl - 1) == 0)))
			return p + kl + 1;
		p = nl != NULL ? nl + 1 : NULL;
	}
	return NULL;
}

int e2e_wait_ready(struct e2e_daemon *d, int timeout_ms)
{
	int64_t end = mono() + (int64_t)timeout_ms * 1000000;

	for (;;) {
		char buf[4096];
		int64_t left = (end - mono()) / 1000000;
		int n = left > 0 ? e2e_notify_recv(d, buf, sizeof(buf), (int)left) : 0;

		if (n < 0) {
			fprintf(stderr, "daemon exited before READY=1\n");
			return -1;
		}
		if (n == 0 && left <= 0)
			return -1;
		if (n > 0 && e2e_notify_has(buf, "READY", "1") != NULL) {
			snprintf(d->ready_msg, sizeof(d->ready_msg), "%.1000s", buf);
			/* Nobody reads the socket from here on: close it, so that the
			 * daemon's later notifications fail at once. Left open, its queue
			 * (net.unix.max_dgram_qlen, 10 here) fills with STATUS= updates and
			 * sd_notify blocks the daemon's main thread, signals and all. */
			close(d->notify_fd);
			unlink(d->notify_path);
			d->notify_fd = -1;
			return 0;
		}
	}
}

int e2e_stop(struct e2e_daemon *d, int sig, int timeout_ms, int64_t *elapsed_ns)
{
	int64_t start = mono(), end = start + (int64_t)timeout_ms * 1000000;
	int status;

	if (d->pid <= 0)
		return -1;
	kill(d->pid, sig);
	for (;;) {
		pid_t r = waitpid(d->pid, &status, WNOHANG);
		if (r == d->pid)
			break;
		if (mono() > end) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &status, 0);
			d->pid = 0;
			return -1;
		}
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);   /* polling waitpid: there is no pidfd in glibc 2.36's API */
	}
	if (elapsed_ns != NULL)
		*elapsed_ns = mono() - start;
	d->pid = 0;
	if (d->notify_fd >= 0)
		close(d->notify_fd);
	d->notify_fd = -1;
	unlink(d->notify_path);
	return status;
}

int e2e_run(const char *const *argv, char *err, size_t errlen)
{
	int pipefd[2], status;
	size_t got = 0;
	pid_t pid;

	if (pipe(pipefd) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 2);
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		unsetenv("NOTIFY_SOCKET");
		apply_child();
		execv(daemon_bin(), (char *const *)argv);
		_exit(127);
	}
	if (pid > 0)
		child = (struct e2e_child){ -1, -1, -1, -1, 0 };
	close(pipefd[1]);
	for (;;) {
		ssize_t n = read(pipefd[0], err + got, errlen - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == errlen - 1)
			break;
	}
	err[got] = '\0';
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void e2e_show_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char buf[4096];
	size_t n;

	if (f == NULL) {
		fprintf(stderr, "(%s: %s)\n", path, strerror(errno));
		return;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(f);
}

void e2e_remove_dir(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

char *e2e_sh(int *status, const char *fmt, ...)
{
	char cmd[4096];
	size_t len = 0, cap = 65536, n;
	char *out = malloc(cap);
	va_list ap;
	FILE *p;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(out);
	while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 == cap) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
	}
	out[len] = '\0';
	st = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return out;
}

bool e2e_have(const char *test, const char *const *checks, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "%s >/dev/null 2>&1", checks[i]);
		if (system(cmd) != 0) {
			printf("# %s needs what '%s' looks for (tests/deps.sh installs it): skipped\n",
			       test, checks[i]);
			return false;
		}
	}
	return true;
}

void e2e_tap_start(struct e2e_daemon *d, struct e2e_tap *t, const char *name,
		   const char *logger_extra, const char *serial_extra)
{
	char rx[300], tx[300], text[2048];

	memset(t, 0, sizeof(*t));
	e2e_tmpdir(t->dir, sizeof(t->dir));
	snprintf(t->conf, sizeof(t->conf), "%s/portlogd.conf", t->dir);
	snprintf(t->log, sizeof(t->log), "%s/portlogd.log", t->dir);
	snprintf(rx, sizeof(rx), "%s/rx", t->dir);
	snprintf(tx, sizeof(tx), "%s/tx", t->dir);
	assert_int_equal(sim_port_open(&t->req, "req", tx), 0);
	assert_int_equal(sim_port_open(&t->resp, "resp", rx), 0);
	snprintf(text, sizeof(text), "[logger]\nlog_file = %s\nflush_interval_ms = 20\n%s"
		 "[serial %s]\ndevice = %s\ntx_device = %s\n%s", t->log, logger_extra, name, rx, tx,
		 serial_extra);
	e2e_write_file(t->conf, text);
	assert_int_equal(e2e_start(d, t->dir, t->conf), 0);
	if (e2e_wait_ready(d, 10000) != 0)
		fail_msg("the daemon did not send READY=1 (stderr: %s)", d->err_path);
	assert_int_equal(sim_port_wait_open(&t->req, 10000), 0);
	assert_int_equal(sim_port_wait_open(&t->resp, 10000), 0);
}

void e2e_tap_close(struct e2e_tap *t)
{
	sim_port_close(&t->req);
	sim_port_close(&t->resp);
}

/* Lines are read with the daemon's own parser (daemon/export/logline.c), which is
 * written apart from its formatter; a line it refuses keeps its text and the
 * first three fields as split here (a torn last line after kill -9, say). */
int e2e_read_log(struct e2e_log *log, const char *path)
{
	static struct logline_parser parser;    /* 64 KiB of payload: not on the stack */
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;

	if (f == NULL)
		return -errno;
	logline_init(&parser);
	while ((n = getline(&buf, &cap, f)) > 0) {
		struct e2e_line *l;
		struct logline ll;

		if (log->n == log->cap) {
			log->cap = log->cap ? log->cap * 2 : 4096;
			log->line = realloc(log->line, log->cap * sizeof(*log->line));
		}
		if (buf[n - 1] != '\n') {
			log->partial_tail = true;
			break;
		}
		l = &log->line[log->n++];
		memset(l, 0, sizeof(*l));
		buf[--n] = '\0';
		l->text = strdup(buf);
		if (logline_parse(&parser, buf, (size_t)n, &ll) == 0) {
			l->t = ll.t;
			snprintf(l->src, sizeof(l->src), "%.*s", (int)ll.src_len, ll.src);
			snprintf(l->kind, sizeof(l->kind), "%s", logline_kind_name(ll.kind));
			if (ll.kind == REC_RX || ll.kind == REC_TX) {
				l->data = malloc(ll.len + 1);
				l->len = ll.len;
				memcpy(l->data, ll.data, ll.len);
			}
			continue;
		}
		fprintf(stderr, "%s:%zu: %s: %.200s\n", path, log->n, parser.why, buf);
		{
			char *save = NULL, *copy = strdup(buf);
			char *t = strtok_r(copy, " ", &save), *src = strtok_r(NULL, " ", &save);
			char *kind = strtok_r(NULL, " ", &save);

			if (t != NULL)
				(void)logline_time(t, strlen(t), &l->t);
			snprintf(l->src, sizeof(l->src), "%s", src ? src : "");
			snprintf(l->kind, sizeof(l->kind), "%s", kind ? kind : "");
			free(copy);
		}
	}
	free(buf);
	fclose(f);
	return 0;
}

void e2e_free_log(struct e2e_log *log)
{
	for (size_t i = 0; i < log->n; i++) {
		free(log->line[i].data);
		free(log->line[i].text);
	}
	free(log->line);
	memset(log, 0, sizeof(*log));
}

uint8_t *e2e_concat_kind(const struct e2e_log *log, const char *src, const char *kind,
			 size_t *len, size_t **starts, size_t **line_idx, size_t *nlines)
{
	size_t total = 0, k = 0;
	uint8_t *out;

	for (size_t i = 0; i < log->n; i++)
		if (strcmp(log->line[i].kind, kind) == 0 && strcmp(log->line[i].src, src) == 0) {
			total += log->line[i].len;
			k++;
		}
	out = malloc(total + 1);
	*starts = malloc((k + 1) * sizeof(size_t));
	*line_idx = malloc((k + 1) * sizeof(size_t));
	*len = 0;
	*nlines = 0;
	for (size_t i = 0; i < log->n; i++)
		if (strcmp(log->line[i].kind, kind) == 0 && strcmp(log->line[i].src, src) == 0) {
			(*starts)[*nlines] = *len;
			(*line_idx)[(*nlines)++] = i;
			memcpy(out + *len, log->line[i].data, log->line[i].len);
			*len += log->line[i].len;
		}
	(*starts)[*nlines] = *len;
	return out;
}

uint8_t *e2e_concat(const struct e2e_log *log, const char *src, size_t *len,
		    size_t **starts, size_t **line_idx, size_t *nlines)
{
	return e2e_concat_kind(log, src, "RX", len, starts, line_idx, nlines);
}

/* libc's bsearch finds an equal key; these searches want the last key <= x */
size_t e2e_last_at_most(const void *ctx, size_t n, size_t (*key)(const void *ctx, size_t i),
			size_t x)
{
	size_t lo = 0, hi = n;

	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (key(ctx, mid) <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static size_t start_key(const void *starts, size_t i)
{
	return ((const size_t *)starts)[i];
}

size_t e2e_line_of(const size_t *starts, size_t nlines, size_t off)
{
	return e2e_last_at_most(starts, nlines, start_key, off);
}

bool e2e_late_mark_at(const struct e2e_log *log, const char *src, int64_t t)
{
	for (size_t i = 0; i < log->n; i++)
		if (log->line[i].t == t && strcmp(log->line[i].src, src) == 0
		    && strstr(log->line[i].text, " EV late-delivery ") != NULL)
			return true;
	return false;
}

/* A mark at line j, or at the line that began the packet j is part of: lines that
 * follow one of max_packet bytes are its continuation, which its mark covers
 * (portlogd-log(5), PACKET BOUNDARIES). */
static bool marked(const struct e2e_log *log, const char *src, const size_t *starts,
		   const size_t *idx, size_t max_packet, size_t j)
{
	while (!e2e_late_mark_at(log, src, log->line[idx[j]].t)) {
		if (j == 0 || max_packet == 0 || starts[j] - starts[j - 1] != max_packet)
			return false;
		j--;
	}
	return true;
}

enum e2e_fit e2e_packet_fit(const struct e2e_log *log, const char *src, const size_t *starts,
			    const size_t *idx, size_t nlines, size_t max_packet, size_t off,
			    size_t len, size_t *first, size_t *last)
{
	size_t c = e2e_line_of(starts, nlines, off), e = e2e_line_of(starts, nlines, off + len - 1);
	bool ok = true;

	*first = c;
	*last = e;
	if (starts[c] == off && starts[c + 1] == off + len)
		return E2E_FIT_ONE;
	if (starts[c] != off)
		ok &= marked(log, src, starts, idx, max_packet, c);
	for (size_t j = c + 1; j <= e; j++)
		if (max_packet == 0 || starts[j] - starts[j - 1] != max_packet)
			ok &= e2e_late_mark_at(log, src, log->line[idx[j]].t);
	if (starts[e + 1] != off + len)
		ok &= marked(log, src, starts, idx, max_packet, e);
	return ok ? E2E_FIT_MARKED : E2E_FIT_UNMARKED;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int64_t e2e_pct(int64_t *v, size_t n, double pct)
{
	size_t i;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp64);
	i = (size_t)(pct / 100.0 * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

long long e2e_open_us(const struct e2e_log *log, const char *src, const char *key)
{
	char k[40];

	snprintf(k, sizeof(k), " %s=", key);
	for (size_t i = 0; i < log->n; i++) {
		const char *v;

		if (strcmp(log->line[i].src, src) == 0 && strstr(log->line[i].text, " EV open ") != NULL)
			return (v = strstr(log->line[i].text, k)) != NULL
			       ? strtoll(v + strlen(k), NULL, 10) : -1;
	}
	return -1;
}

void e2e_wire_tally(const struct e2e_log *log, struct sim_port *p, size_t max_packet,
		    unsigned short_len, struct e2e_wire_tally *t)
{
	size_t len, *starts, *idx, nlines, sent;
	uint8_t *got = e2e_concat(log, p->name, &len, &starts, &idx, &nlines);

	memset(t, 0, sizeof(*t));
	t->err_short = calloc(p->npkt + 1, sizeof(int64_t));
	t->err_long = calloc(p->npkt + 1, sizeof(int64_t));
	t->unmarked_pkt = calloc(p->npkt + 1, sizeof(size_t));
	t->gap_ns = e2e_open_us(log, p->name, "gap_us") * 1000;
	t->hold_ns = e2e_open_us(log, p->name, "hold_us") * 1000;
	t->stamp_err_ns = e2e_open_us(log, p->name, "stamp_err_us") * 1000;
	if (t->gap_ns < 0)
		t->gap_ns = 0;
	if (t->hold_ns < 0)
		t->hold_ns = 0;
	if (t->stamp_err_ns < 0)
		t->stamp_err_ns = 0;
	p->cfg.gap_us = (unsigned)(t->gap_ns / 1000);
	p->cfg.hold_us = (unsigned)(t->hold_ns / 1000);
	sent = p->npkt ? p->pkt[p->npkt - 1].off + p->pkt[p->npkt - 1].len : 0;
	t->bytes_sent = sent;
	t->bytes_logged = len;
	while (t->bytes_same < sent && t->bytes_same < len && got[t->bytes_same] == p->data[t->bytes_same])
		t->bytes_same++;
	for (size_t i = 0; i < p->npkt && nlines > 0; i++) {
		const struct sim_packet *k = &p->pkt[i];
		enum e2e_fit fit;
		size_t c, e;

		if (k->off + k->len > t->bytes_same)
			break;          /* the log went wrong before its end: no verdict */
		t->packets++;
		if (!sim_packet_clean(p, i)) {
			t->unclean++;
			continue;
		}
		fit = e2e_packet_fit(log, p->name, starts, idx, nlines, max_packet, k->off, k->len,
				     &c, &e);
		if (fit == E2E_FIT_ONE)
			t->once++;
		else if (fit == E2E_FIT_MARKED)
			t->marked++;
		else
			t->unmarked_pkt[t->unmarked++] = i;
		if (starts[c] == k->off) {
			int64_t err = log->line[idx[c]].t - k->t_first_real;

			if (k->len <= short_len)
				t->err_short[t->nshort++] = err;
			else
				t->err_long[t->nlong++] = err;
		}
	}
	free(got);
	free(starts);
	free(idx);
}

void e2e_wire_explain(const struct e2e_log *log, const struct sim_port *p, size_t k)
{
	const struct sim_packet *pk = &p->pkt[k];
	int64_t off = pk->t_first_real - pk->t_first_mono;     /* the packet's mono to real */

	printf("# %s packet %zu: %u bytes at offset %u, its first byte's start %.6f, last byte's "
	       "end +%.0f us, silence before %.0f us;%s hand-overs (bytes@us after its start, "
	       "us late):", p->name, k, pk->len, pk->off, (double)pk->t_first_real / 1e9,
	       (double)(pk->t_last_mono - pk->t_first_mono) / 1e3,
	       k > 0 ? (double)(pk->t_first_mono - pk[-1].t_last_mono) / 1e3 : -1.0,
	       sim_packet_clean(p, k) ? "" : " unclean;");
	for (uint32_t d = pk->dlv_first; d < pk->dlv_first + pk->ndlv; d++)
		printf(" %u@%.0f(%.0f)", p->dlv[d].len, (double)(p->dlv[d].due - pk->t_first_mono) / 1e3,
		       (double)(p->dlv[d].t_ret - p->dlv[d].due) / 1e3);
	printf("\n");
	/* the port's lines around it; an RX line with the bytes it holds, from the packet's first */
	{
		size_t len, *starts, *idx, nlines, j = 0;
		uint8_t *got = e2e_concat(log, p->name, &len, &starts, &idx, &nlines);

		for (size_t i = 0; i < log->n; i++) {
			const struct e2e_line *l = &log->line[i];

			while (j < nlines && idx[j] < i)
				j++;
			if (strcmp(l->src, p->name) != 0 || l->t - off < pk->t_first_mono - 20000000
			    || l->t - off > pk->t_last_mono + 20000000)
				continue;
			printf("#   %+.0f us:", (double)(l->t - off - pk->t_first_mono) / 1e3);
			if (j < nlines && idx[j] == i)
				printf(" bytes %+lld..%+lld:", (long long)starts[j] - pk->off,
				       (long long)starts[j + 1] - pk->off - 1);
			printf(" %.90s\n", strchr(l->text, ' ') != NULL ? strchr(l->text, ' ') + 1 : l->text);
		}
		free(got);
		free(starts);
		free(idx);
	}
}

void e2e_wire_tally_free(struct e2e_wire_tally *t)
{
	free(t->err_short);
	free(t->err_long);
	free(t->unmarked_pkt);
	memset(t, 0, sizeof(*t));
}

/* Per source: its lines and drops, of the port's own rings (RX, lines thread)
 * and of its TX ring (TX lines, EV and DROP lines that end in dir=tx). */
struct acct {
	char src[32];
	unsigned long long lines, dropped, tx_lines, tx_dropped;
	unsigned long long late, tx_late;       /* EV late-delivery lines */
	unsigned long long mark, tx_mark;       /* the last one's mark= */
};

static struct acct *acct_find(struct acct *a, size_t *n, size_t max, const char *src)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(a[i].src, src) == 0)
			return &a[i];
	if (*n == max)
		return NULL;
	memset(&a[*n], 0, sizeof(a[*n]));
	snprintf(a[*n].src, sizeof(a[*n].src), "%s", src);
	return &a[(*n)++];
}

/* The value of " key=" in text, or 0 when absent. */
static unsigned long long kv(const char *text, const char *key)
{
	char k[40];
	const char *p;

	snprintf(k, sizeof(k), " %s=", key);
	p = strstr(text, k);
	return p != NULL ? strtoull(p + strlen(k), NULL, 10) : 0;
}

/* A line of a port's TX ring: TX, or an EV or DROP line ending in dir=tx. */
static bool tx_ring_line(const struct e2e_line *l)
{
	size_t n = strlen(l->text);

	if (strcmp(l->kind, "TX") == 0)
		return true;
	while (n > 0 && (l->text[n - 1] == '\n' || l->text[n - 1] == '\r'))
		n--;
	return n >= 7 && memcmp(l->text + n - 7, " dir=tx", 7) == 0;
}

/* One ring's check at a STAT line: accounted, and at stop produced, against the log. */
static int acct_check(const char *name, const char *what, unsigned long long lines,
		      unsigned long long dropped, unsigned long long acc,
		      unsigned long long produced, bool stopped, size_t i, const char *text,
		      char *why, size_t whylen)
{
	if (acc != lines + dropped) {
		snprintf(why, whylen, "%s%s: %llu lines and %llu dropped above log line %zu, but it "
			 "says %saccounted=%llu: %s", name, what, lines, dropped, i + 1,
			 *what ? "tx_" : "", acc, text);
		return -1;
	}
	if (stopped && acc != produced) {
		snprintf(why, whylen, "%s%s: at stop %llu records produced, %llu accounted for: %s",
			 name, what, produced, acc, text);
		return -1;
	}
	return 0;
}

/* STAT late= counts the EV late-delivery records pushed: at least the lines above
 * it, and at stop no more than those and the records dropped. */
static int late_check(const char *name, const char *what, unsigned long long lines,
		      unsigned long long dropped, const char *text, const char *key, bool stopped,
		      char *why, size_t whylen)
{
	char k[16];
	unsigned long long late;

	snprintf(k, sizeof(k), " %s=", key);
	if (strstr(text, k) == NULL)
		return 0;
	late = kv(text, key);
	if (late >= lines && (!stopped || late <= lines + dropped))
		return 0;
	snprintf(why, whylen, "%s%s: %llu EV late-delivery lines and %llu dropped records above, "
		 "but %s=%llu: %s", name, what, lines, dropped, key, late, text);
	return -1;
}

int e2e_check_accounting(const struct e2e_log *log, char *why, size_t whylen)
{
	struct acct a[128];
	size_t na = 0;
	bool stopped = false;
	int checked = 0;

	for (size_t i = 0; i < log->n; i++) {
		const struct e2e_line *l = &log->line[i];
		struct acct *s;

		if (strcmp(l->src, "portlogd") != 0) {
			bool tx = tx_ring_line(l);

			if ((s = acct_find(a, &na, 128, l->src)) == NULL)
				continue;
			if (strcmp(l->kind, "DROP") == 0)
				*(tx ? &s->tx_dropped : &s->dropped) +=
					strtoull(strstr(l->text, " DROP ") + 6, NULL, 10);
			else if (strstr(l->text, " case=clock ") == NULL)
				/* (a case=clock mark is the flusher's, no record of the ring:
				 * counted in late= only) */
				(*(tx ? &s->tx_lines : &s->lines))++;
			if (strcmp(l->kind, "EV") == 0 && strstr(l->text, " EV late-delivery ") != NULL) {
				unsigned long long n = ++*(tx ? &s->tx_late : &s->late);
				unsigned long long m = kv(l->text, "mark"), *last = tx ? &s->tx_mark : &s->mark;

				/* each mark numbered: one more than the last, or more when a
				 * DROP may hold some; never alike */
				if (strstr(l->text, " mark=") != NULL
				    && (m <= *last || (*(tx ? &s->tx_dropped : &s->dropped) == 0 && m != n))) {
					snprintf(why, whylen, "%s: log line %zu says mark=%llu after mark=%llu "
						 "(%llu marks above it): %s", l->src, i + 1, m, *last, n - 1,
						 l->text);
					return -1;
				}
				*last = m;
			}
			continue;
		}
		if (strcmp(l->kind, "EV") == 0 && strstr(l->text, " portlogd EV start ") != NULL) {
			na = 0;
			stopped = false;
		} else if (strcmp(l->kind, "EV") == 0 && strstr(l->text, " portlogd EV stop ") != NULL) {
			stopped = true;
		} else if (strcmp(l->kind, "STAT") == 0 && strstr(l->text, " accounted=") != NULL) {
			char name[32];

			if (sscanf(strstr(l->text, " STAT ") + 6, "%31s", name) != 1)
				continue;
			s = acct_find(a, &na, 128, name);
			if (s == NULL)
				continue;
			/* the port's own rings: the reader's and its lines thread's */
			if (acct_check(name, "", s->lines, s->dropped,
				       kv(l->text, "accounted") + kv(l->text, "lines_accounted"),
				       kv(l->text, "records") + kv(l->text, "drops")
				       + kv(l->text, "lines_records") + kv(l->text, "lines_drops"),
				       stopped, i, l->text, why, whylen) < 0)
				return -1;
			/* its TX ring, on its own: a DROP there is told apart by dir=tx */
			if (strstr(l->text, " tx_accounted=") != NULL
			    && acct_check(name, " (TX)", s->tx_lines, s->tx_dropped,
					  kv(l->text, "tx_accounted"),
					  kv(l->text, "tx_records") + kv(l->text, "tx_drops"), stopped, i,
					  l->text, why, whylen) < 0)
				return -1;
			if (late_check(name, "", s->late, s->dropped, l->text, "late", stopped, why,
				       whylen) < 0
			    || late_check(name, " (TX)", s->tx_late, s->tx_dropped, l->text, "tx_late",
					  stopped, why, whylen) < 0)
				return -1;
			if (strstr(l->text, " tx_accounted=") == NULL && s->tx_lines + s->tx_dropped > 0) {
				snprintf(why, whylen, "%s: %llu TX lines and drops, but no tx_accounted=: "
					 "%s", name, s->tx_lines + s->tx_dropped, l->text);
				return -1;
			}
			checked++;
		}
	}
	return checked;
}

/* The value of "reason=" in an EV clock line, or "" */
static const char *clock_reason(const char *text, char *out, size_t len)
{
	const char *r = strstr(text, " reason=");

	snprintf(out, len, "%.*s", r ? (int)strcspn(r + 8, " ") : 0, r ? r + 8 : "");
	return out;
}

int e2e_check_clock(const struct e2e_log *log, char *why, size_t whylen)
{
	size_t start = 0, stat_at = 0;      /* line numbers (1-based) of what waits; 0: none */
	bool in_run = false, stopped = false, clock_start = false, prev_stat = false;
	int checked = 0;

	for (size_t i = 0; i <= log->n; i++) {
		const struct e2e_line *l = i < log->n ? &log->line[i] : NULL;
		bool mine = l != NULL && strcmp(l->src, "portlogd") == 0;
		bool is_stat = mine && strcmp(l->kind, "STAT") == 0;
		char reason[16];

		if (l == NULL || (mine && strstr(l->text, " portlogd EV start ") != NULL)) {
			/* the run before ends: it said the clock at start; after its
			 * last STAT round too, unless it was killed (no EV stop) */
			if (in_run && !clock_start) {
				snprintf(why, whylen, "no EV clock reason=start after the EV start at "
					 "line %zu", start);
				return -1;
			}
			if (in_run && stat_at != 0 && stopped) {
				snprintf(why, whylen, "no EV clock after the STAT round at line %zu",
					 stat_at);
				return -1;
			}
			in_run = l != NULL;
			start = i + 1;
			stopped = clock_start = prev_stat = false;
			stat_at = 0;
			continue;
		}
		if (mine && strcmp(l->kind, "EV") == 0 && strstr(l->text, " portlogd EV stop ") != NULL)
			stopped = true;
		if (mine && strcmp(l->kind, "EV") == 0
		    && strstr(l->text, " portlogd EV clock synced=") != NULL) {
			clock_reason(l->text, reason, sizeof(reason));
			if (strcmp(reason, "start") == 0)
				clock_start = true;
			if (stat_at != 0 && (strcmp(reason, "stat") == 0 || strcmp(reason, "change") == 0)) {
				stat_at = 0;
				checked++;
			}
		}
		if (is_stat && !prev_stat) {
			/* a new round: the one before must have had its line */
			if (stat_at != 0) {
				snprintf(why, whylen, "no EV clock after the STAT round at line %zu",
					 stat_at);
				return -1;
			}
			if (in_run && !clock_start) {
				snprintf(why, whylen, "a STAT round at line %zu before any EV clock "
					 "reason=start", i + 1);
				return -1;
			}
			stat_at = i + 1;
		}
		prev_stat = is_stat;       /* a round's STAT lines are written together */
	}
	return checked;
}

void e2e_expect_accounted(const struct e2e_log *log)
{
	char why[1024];
	int n = e2e_check_accounting(log, why, sizeof(why));

	if (n < 0)
		fail_msg("accounting: %s", why);
	if (n == 0)
		fail_msg("accounting: no STAT line with accounted= to check against");
	printf("# accounting: every record is a line or in a DROP count, at %d STAT lines\n", n);
	n = e2e_check_clock(log, why, sizeof(why));
	if (n < 0)
		fail_msg("EV clock: %s", why);
	printf("# EV clock: at every start, and after %d STAT rounds\n", n);
}

void e2e_expect_drops(const struct e2e_log *log, const char *src, size_t from, size_t lost_bytes,
		      size_t min_recs, size_t known_recs, size_t known_bytes)
{
	unsigned long long drec = 0, dbytes = 0, late = 0, late_lines = 0, lost_late, pkt_recs, ev_bytes;
	char stat[64];
	bool have_stat = false;

	snprintf(stat, sizeof(stat), " portlogd STAT %s ", src);
	for (size_t i = from; i < log->n; i++) {
		const struct e2e_line *l = &log->line[i];

		if (strcmp(l->src, src) == 0 && strcmp(l->kind, "DROP") == 0) {
			unsigned long long r = 0, b = 0;

			assert_int_equal(sscanf(strstr(l->text, " DROP ") + 6, "%llu %llu", &r, &b), 2);
			drec += r;
			dbytes += b;
		}
		late_lines += strcmp(l->src, src) == 0 && strstr(l->text, " EV late-delivery ") != NULL;
		if (strstr(l->text, stat) != NULL && strstr(l->text, " late=") != NULL) {
			late = kv(l->text, "late");
			have_stat = true;
		}
	}
	if (!have_stat)
		fail_msg("%s: no STAT line with late= to count the lost marks by", src);
	if (late < late_lines || drec < known_recs + (late - late_lines)
	    || dbytes < lost_bytes + known_bytes)
		fail_msg("%s: DROP %llu records, %llu bytes, STAT late=%llu and %llu EV late-delivery "
			 "lines cannot hold %zu lost bytes in %zu records and %zu events (%zu bytes)",
			 src, drec, dbytes, late, late_lines, lost_bytes, min_recs, known_recs,
			 known_bytes);
	lost_late = late - late_lines;
	pkt_recs = drec - known_recs - lost_late;
	ev_bytes = dbytes - lost_bytes - known_bytes;
	printf("# %s: DROP %llu records = %llu of packets (at least %zu) + %zu events + %llu EV "
	       "late-delivery (%llu made, %llu logged); %llu bytes = %zu of packets + %zu + %llu\n",
	       src, drec, pkt_recs, min_recs, known_recs, lost_late, late, late_lines, dbytes,
	       lost_bytes, known_bytes, ev_bytes);
	/* every lost packet counted, and nothing more than the packets and the events */
	assert_true(pkt_recs >= min_recs && pkt_recs <= min_recs + late);
	if (lost_late == 0)
		assert_int_equal(ev_bytes, 0);
	else
		assert_true(ev_bytes >= lost_late && ev_bytes <= lost_late * SOURCE_EV_MAX);
}

void e2e_filter_from_env(void)
{
	const char *only = getenv("PORTLOGD_E2E_ONLY"), *skip = getenv("PORTLOGD_E2E_SKIP");

	if (only != NULL && *only != '\0')
		cmocka_set_test_filter(only);
	if (skip != NULL && *skip != '\0')
		cmocka_set_skip_filter(skip);
}

/* ---- helper processes: socat, a Modbus slave, gpsd, a replay ---- */

static pid_t helpers[8];        /* killed by e2e_reap_all after a failed test */

pid_t e2e_spawn(const char *const *argv, const char *out)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		unsetenv("NOTIFY_SOCKET");
		if (strcmp(argv[0], "portlogd") == 0)
			execv(daemon_bin(), (char *const *)argv);
		else
			execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		if (helpers[i] == 0) {
			helpers[i] = pid;
			break;
		}
	return pid;
}

static void forget(pid_t pid)
{
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		if (helpers[i] == pid)
			helpers[i] = 0;
}

void e2e_reap(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	forget(pid);
}

int e2e_wait_exit(pid_t pid, int timeout_ms)
{
	int64_t end = mono() + (int64_t)timeout_ms * 1000000;
	int status;

	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG);

		if (got == pid) {
			forget(pid);
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		if (got < 0 || mono() > end)
			return -1;
		tu_sleep_ms(10);
	}
}

void e2e_reap_all(void)
{
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		if (helpers[i] > 0) {
			kill(helpers[i], SIGTERM);
			waitpid(helpers[i], NULL, 0);
			helpers[i] = 0;
		}
}

void e2e_wait_path(const char *path, int timeout_ms)
{
	for (int i = 0; i < timeout_ms / 10; i++) {
		if (access(path, F_OK) == 0)
			return;
		tu_sleep_ms(10);
	}
	fail_msg("%s did not appear within %d ms", path, timeout_ms);
}

bool e2e_holds(pid_t pid, const char *path)
{
	char real[256], fd[64], target[256];

	if (realpath(path, real) == NULL)
		return false;
	for (int i = 0; i < 64; i++) {
		ssize_t n;

		snprintf(fd, sizeof(fd), "/proc/%d/fd/%d", (int)pid, i);
		n = readlink(fd, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = '\0';
			if (strcmp(target, real) == 0)
				return true;
		}
	}
	return false;
}

/* ---- a log and its replay ---- */

void e2e_pair_logs(struct e2e_pair *p, const struct e2e_log *a, const char *src_a,
		   const char *kind_a, const struct e2e_log *b, const char *src_b, const char *kind_b)
{
	memset(p, 0, sizeof(*p));
	p->a = a;
	p->b = b;
	p->src_a = src_a;
	p->src_b = src_b;
	p->ba = e2e_concat_kind(a, src_a, kind_a, &p->la, &p->sa, &p->ia, &p->na);
	p->bb = e2e_concat_kind(b, src_b, kind_b, &p->lb, &p->sb, &p->ib, &p->nb);
	p->same = p->la == p->lb && memcmp(p->ba, p->bb, p->la) == 0;
	p->fit = calloc(p->na + 1, sizeof(*p->fit));
	p->line_b = calloc(p->na + 1, sizeof(*p->line_b));
	p->err = calloc(p->na + 1, sizeof(*p->err));
	assert_true(p->fit != NULL && p->line_b != NULL && p->err != NULL);
	for (size_t k = 0, last; k < p->na && p->nb > 0; k++) {
		p->fit[k] = e2e_packet_fit(b, src_b, p->sb, p->ib, p->nb, 0, p->sa[k],
					   p->sa[k + 1] - p->sa[k], &p->line_b[k], &last);
		if (p->fit[k] == E2E_FIT_ONE)
			p->err[p->one++] = b->line[p->ib[p->line_b[k]]].t - a->line[p->ia[k]].t;
	}
	p->offset = p->one > 0 ? e2e_pct(p->err, p->one, 50) : 0;
	for (size_t k = 1; k < p->na; k++)
		if (p->fit[k] == E2E_FIT_ONE && p->fit[k - 1] == E2E_FIT_ONE) {
			int64_t db = b->line[p->ib[p->line_b[k]]].t - b->line[p->ib[p->line_b[k - 1]]].t;
			int64_t da = a->line[p->ia[k]].t - a->line[p->ia[k - 1]].t;

			p->err[p->nerr++] = db > da ? db - da : da - db;
		}
}

char e2e_pair_why(const struct e2e_pair *p, size_t k, int64_t gap_ns)
{
	size_t lb = p->line_b[k], first_a;

	if (p->fit[k] == E2E_FIT_MARKED)
		return 'm';
	if (e2e_late_mark_at(p->a, p->src_a, p->a->line[p->ia[k]].t)
	    || (k + 1 < p->na && e2e_late_mark_at(p->a, p->src_a, p->a->line[p->ia[k + 1]].t)))
		return 'a';
	first_a = e2e_line_of(p->sa, p->na, p->sb[lb]);
	if (p->b->line[p->ib[lb]].t - (p->a->line[p->ia[first_a]].t + p->offset) > gap_ns)
		return 's';
	return 0;
}

void e2e_pair_free(struct e2e_pair *p)
{
	free(p->ba);
	free(p->bb);
	free(p->sa);
	free(p->sb);
	free(p->ia);
	free(p->ib);
	free(p->fit);
	free(p->line_b);
	free(p->err);
	memset(p, 0, sizeof(*p));
}

void e2e_print_from(const char *what, const char *text, const char *from)
{
	const char *p = strstr(text, from);

	if (p != NULL)
		printf("# %s: %.*s\n", what, (int)strcspn(p, "\n"), p);
}
