/* SPDX-License-Identifier: GPL-2.0-or-later */
/* portlogd-stall - runs a command beside the stall injector (stall.h) and says what stalls ran. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stall.h"
#include "testutil.h"

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

/* --log: each stall that ran, its start and end twice (tests/vm's pauses: stop sent and
 * acknowledged, cont sent and acknowledged), CLOCK_REALTIME seconds. */
static int write_log(const struct stall *s, int n, const char *path)
{
	FILE *f = fopen(path, "w");
	int64_t off = tu_real_ns() - tu_mono_ns();

	if (f == NULL)
		return -1;
	for (int i = 0; i < n; i++) {
		const struct stall_rec *r = stall_rec(s, (unsigned)i);
		long long a = (r->start_ns + off) / 1000, b = (r->end_ns + off) / 1000;

		if (r->end_ns > 0 && r->end_ns != INT64_MAX)
			fprintf(f, "%d %lld.%06lld %lld.%06lld %lld.%06lld %lld.%06lld\n", i + 1,
				a / 1000000, a % 1000000, a / 1000000, a % 1000000,
				b / 1000000, b % 1000000, b / 1000000, b % 1000000);
	}
	return fclose(f) == 0 ? 0 : -1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: portlogd-stall [--mode cpu:N|cpu|tty|all|stop:PID|mix] [--min-ms 30] [--max-ms 200]\n"
		"                      [--pause-ms 300-2000] [--log FILE] -- CMD ARGS...\n"
		"Runs CMD beside a process that, after each random pause, stalls for a random length:\n"
		"  cpu:N  a SCHED_FIFO 99 busy loop pinned to CPU N (cpu: a random CPU each time)\n"
		"  tty    busy loops at SCHED_FIFO 50 on every CPU (the kernel's tty worker starves)\n"
		"  all    busy loops at SCHED_FIFO 99 on every CPU (everything stops)\n"
		"  stop:PID  SIGSTOP, then SIGCONT, of PID\n"
		"  mix    one of cpu, tty, all, or the stop of a random process of CMD's tree, each time\n"
		"--log FILE: each stall that ran, \"N START START END END\" (CLOCK_REALTIME seconds; the\n"
		"form of tests/vm's pauses, vm_wire --pauses)\n"
		"Exits with CMD's status (128+N for signal N), 77 when stalls are not allowed (no\n"
		"SCHED_FIFO), 2 on a usage error; the stalls' summary goes to stderr. PORTLOGD_SEED\n"
		"repeats a run.\n");
}

static int parse_ms(const char *text, unsigned *v)
{
	char *end;
	unsigned long n = strtoul(text, &end, 10);

	if (end == text || *end != '\0' || n > 3600000)
		return -1;
	*v = (unsigned)n;
	return 0;
}

static int parse_range(const char *text, unsigned *lo, unsigned *hi)
{
	char buf[64], *dash;

	if (strlen(text) >= sizeof(buf))
		return -1;
	strcpy(buf, text);
	dash = strchr(buf, '-');
	if (dash == NULL)
		return parse_ms(buf, lo) == 0 ? (*hi = *lo, 0) : -1;
	*dash = '\0';
	return parse_ms(buf, lo) == 0 && parse_ms(dash + 1, hi) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "min-ms", required_argument, NULL, 'a' },
		{ "max-ms", required_argument, NULL, 'b' },
		{ "pause-ms", required_argument, NULL, 'p' },
		{ "log", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct stall_cfg cfg;
	struct stall s;
	struct sigaction sa = { .sa_handler = forward };
	const char *mode = "mix", *log = NULL;
	char line[256];
	int go[2], opt, err, st, n;
	bool mix;
	pid_t pid;

	stall_defaults(&cfg);
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (stall_parse_mode(&cfg, optarg) != 0) {
				fprintf(stderr, "portlogd-stall: bad --mode '%s'\n", optarg);
				return 2;
			}
			mode = optarg;
			break;
		case 'a':
		case 'b':
			if (parse_ms(optarg, opt == 'a' ? &cfg.min_ms : &cfg.max_ms) != 0) {
				fprintf(stderr, "portlogd-stall: bad milliseconds '%s'\n", optarg);
				return 2;
			}
			break;
		case 'p':
			if (parse_range(optarg, &cfg.pause_min_ms, &cfg.pause_max_ms) != 0) {
				fprintf(stderr, "portlogd-stall: bad --pause-ms '%s' (A-B)\n", optarg);
				return 2;
			}
			break;
		case 'l':
			log = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cfg.seed = tu_seed("portlogd-stall");
	mix = cfg.mode == STALL_MIX;
	/* CMD waits for the injector: its tree is what mix stops, and it must not run unstalled */
	if (pipe2(go, O_CLOEXEC) != 0) {
		perror("portlogd-stall: pipe");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("portlogd-stall: fork");
		return 1;
	}
	if (pid == 0) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1 || c != 'g')
			_exit(127);	/* the injector did not start */
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "portlogd-stall: %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	close(go[0]);
	child_pid = pid;
	if (mix) {
		cfg.pid = pid;
		cfg.tree = 1;
	}
	err = stall_start(&s, &cfg);
	if (err != 0) {
		(void)!write(go[1], "x", 1);	/* tells CMD not to run */
		close(go[1]);
		waitpid(pid, NULL, 0);
		fprintf(stderr, "portlogd-stall: cannot stall: %s%s\n", strerror(-err),
			err == -EPERM ? " (SCHED_FIFO needs root or CAP_SYS_NICE): skipped" : "");
		return err == -EPERM ? 77 : 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	(void)!write(go[1], "g", 1);	/* a full pipe cannot be: one byte */
	close(go[1]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	n = stall_stop(&s);
	if (log != NULL && write_log(&s, n, log) != 0)
		fprintf(stderr, "portlogd-stall: %s: %s\n", log, strerror(errno));
	stall_summary(&s, line, sizeof(line));
	fprintf(stderr, "portlogd-stall: %s (mode %s)\n", line, mode);
	stall_free(&s);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
