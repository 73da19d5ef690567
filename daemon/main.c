/* main.c - command line, start-up in dependency order, signals, orderly stop. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "flush.h"
#include "fmt.h"
#include "log.h"
#include "notify.h"
#include "sampler.h"
#include "serial.h"
#include "source.h"
#include "stat.h"
#include "timer.h"

#define EXIT_CONFIG 78          /* EX_CONFIG of sysexits.h */
#define DEFAULT_CONFIG "/etc/portlogd/portlogd.conf"

struct daemon {
	struct conf conf;
	struct source self;                 /* "portlogd": main's own events */
	struct serial_port *serial;
	struct sampler *samplers;
	struct sampler **sampler_ptrs;
	struct timer timer;
	struct stat_view view;
	struct flusher flusher;
	struct notify notify;
	int dma_fd;
	int stop_fd;
	int sig_fd;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: portlogd [-c FILE] [-f]\n"
		"       portlogd [-c FILE] --check-config\n"
		"Records every byte on serial ports and every change on input pins, with its\ntime, to a text log.\n\n"
		"  -c, --config FILE   config file (default " DEFAULT_CONFIG ")\n"
		"  -f, --foreground    stay in the foreground, diagnostics to stderr\n"
		"      --check-config  validate the config, print the effective settings, exit\n"
		"  -V, --version       print the version and exit\n"
		"  -h, --help          print this help and exit\n\n"
		"Exit status: 0 clean stop, 78 config error, 1 other start-up error.\n"
		"See portlogd(8) and portlogd.conf(5).\n");
}

static bool under_systemd(void)
{
	return getenv("NOTIFY_SOCKET") != NULL || getenv("INVOCATION_ID") != NULL;
}

/* Classic double fork, for a start outside systemd without -f. */
static int daemonize(void)
{
	pid_t pid = fork();
	int fd;

	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);
	if (setsid() < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);
	if (chdir("/") < 0)
		return -errno;
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	(void)dup2(fd, 0);  /* best effort: the daemon never uses its stdio */
	(void)dup2(fd, 1);
	(void)dup2(fd, 2);
	if (fd > 2)
		close(fd);
	return 0;
}

/* SIGUSR1 only interrupts a lines thread's TIOCMIWAIT (no SA_RESTART). */
static void on_usr1(int sig)
{
	(void)sig;
}

static int setup_signals(struct daemon *d)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGUSR1, &sa, NULL);    /* cannot fail for SIGUSR1 */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	/* blocked before any thread starts, so only main sees them, through the signalfd */
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return -EINVAL;
	d->sig_fd = signalfd(-1, &set, SFD_CLOEXEC);
	return d->sig_fd < 0 ? -errno : 0;
}

static void event_start(struct daemon *d)
{
	char text[SOURCE_EV_MAX], num[32];
	size_t tl = 0;

	fmt_kv(text, sizeof(text), &tl, "version", PORTLOGD_VERSION);
	snprintf(num, sizeof(num), "%ld", (long)getpid());
	fmt_kv(text, sizeof(text), &tl, "pid", num);
	fmt_kv(text, sizeof(text), &tl, "config", d->conf.path);
	snprintf(num, sizeof(num), "%u", d->conf.nserial);
	fmt_kv(text, sizeof(text), &tl, "serial", num);
	snprintf(num, sizeof(num), "%u", d->conf.nparallel);
	fmt_kv(text, sizeof(text), &tl, "parallel", num);
	(void)source_event(&d->self, EV_START, 0, text);
}

/*
 * Like cyclictest, hold the CPUs out of deep idle states while we run: the PM QoS
 * request lasts as long as the file stays open (Documentation/power/pm_qos_interface).
 */
static int hold_dma_latency(int us)
{
	int32_t v = us;
	int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (write(fd, &v, sizeof(v)) != sizeof(v)) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/*
 * Runs until a stop signal and returns it. Signals arrive through the signalfd;
 * the notify timer (only under systemd) paces STATUS= and WATCHDOG=1; the
 * flusher says when a SIGHUP's reopen is done, which ends RELOADING=1.
 */
static int serve(struct daemon *d)
{
	for (;;) {
		struct pollfd pfd[3] = {
			{ .fd = d->sig_fd, .events = POLLIN },
			{ .fd = d->notify.timer_fd, .events = POLLIN },    /* -1: ignored */
			{ .fd = d->flusher.reopened_fd, .events = POLLIN },
		};
		struct signalfd_siginfo si;
		uint64_t v;
		ssize_t n;

		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_err("poll: %s; stopping", strerror(errno));
			return SIGTERM;
		}
		if (pfd[1].revents != 0)
			notify_tick(&d->notify);
		if (pfd[2].revents != 0 && read(d->flusher.reopened_fd, &v, sizeof(v)) > 0)
			notify_reloaded(&d->notify);
		if (pfd[0].revents == 0)
			continue;
		n = read(d->sig_fd, &si, sizeof(si));
		if (n != sizeof(si)) {
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			log_err("signalfd: %s; stopping", strerror(errno));
			return SIGTERM;
		}
		if (si.ssi_signo != SIGHUP)
			return (int)si.ssi_signo;
		notify_reloading(&d->notify);
		flush_reopen(&d->flusher);
	}
}

static int run(struct daemon *d)
{
	struct source *srcs[FLUSH_MAX_SOURCES];
	char err[512];
	int degraded = 0, rc, stop_sig = 0;
	unsigned nsrc = 0, started = 0;

	d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->stop_fd < 0 || setup_signals(d) < 0) {
		log_err("cannot set up signals: %s", strerror(errno));
		return 1;
	}
	/* Everything is allocated and touched here, before any thread runs. */
	d->serial = calloc(d->conf.nserial, sizeof(*d->serial));
	if (source_init(&d->self, "portlogd", 256) < 0 || (d->conf.nserial > 0 && d->serial == NULL)) {
		log_err("out of memory");
		return 1;
	}
	srcs[nsrc++] = &d->self;
	d->samplers = calloc(d->conf.nparallel + 1, sizeof(*d->samplers));
	d->sampler_ptrs = calloc(d->conf.nparallel + 1, sizeof(*d->sampler_ptrs));
	if (d->samplers == NULL || d->sampler_ptrs == NULL) {
		log_err("out of memory");
		return 1;
	}
	for (unsigned i = 0; i < d->conf.nparallel; i++) {
		const struct conf_parallel *pc = &d->conf.parallel[i];

		rc = sampler_init(&d->samplers[i], pc, d->conf.logger.ring_records, err, sizeof(err));
		if (rc < 0) {
			log_err("%s:%d: [parallel %s] device %s: %s", d->conf.path, pc->line, pc->name,
				pc->device, err[0] ? err : strerror(-rc));
			return 1;
		}
		d->sampler_ptrs[i] = &d->samplers[i];
		srcs[nsrc++] = &d->samplers[i].src;
	}
	for (unsigned i = 0; i < d->conf.nserial; i++) {
		rc = serial_init(&d->serial[i], &d->conf.serial[i], d->conf.logger.ring_records,
				 d->stop_fd);
		if (rc < 0) {
			log_err("[serial %s]: cannot allocate its ring of %u records: %s",
				d->conf.serial[i].name, d->conf.logger.ring_records, strerror(-rc));
			return 1;
		}
		srcs[nsrc++] = &d->serial[i].src;
		if (d->conf.serial[i].lines)
			srcs[nsrc++] = &d->serial[i].lines_src;
	}
	rc = flush_init(&d->flusher, &d->conf, srcs, nsrc, err, sizeof(err));
	if (rc < 0) {
		log_err("%s", err);
		return 1;
	}
	d->flusher.echo = true;     /* to stderr with -f, else to the journal */
	d->view = (struct stat_view){
		.timer = d->conf.nparallel > 0 ? &d->timer : NULL, .samplers = d->samplers,
		.nsamplers = d->conf.nparallel, .serial = d->serial, .nserial = d->conf.nserial,
	};
	d->flusher.hook = stat_hook;
	d->flusher.hook_ctx = &d->view;
	notify_init(&d->notify, &d->view, &d->flusher);
	d->dma_fd = -1;
	if (d->conf.timer.cpu_dma_latency >= 0) {
		d->dma_fd = hold_dma_latency(d->conf.timer.cpu_dma_latency);
		if (d->dma_fd < 0)
			log_warn("cannot hold /dev/cpu_dma_latency at %d us: %s; deep CPU idle "
				 "states will add wake-up latency. Run as root, or set [timer] "
				 "cpu_dma_latency = off", d->conf.timer.cpu_dma_latency,
				 strerror(-d->dma_fd));
	}
	timer_init(&d->timer, &d->conf.timer, d->sampler_ptrs, d->conf.nparallel);
	event_start(d);

	/* flusher first, readers last */
	rc = flush_start(&d->flusher, &degraded);
	if (rc < 0) {
		log_err("cannot start the flusher thread: %s", strerror(-rc));
		return 1;
	}
	/* then the samplers, the timer that drives them, and the serial readers */
	for (unsigned i = 0; i < d->conf.nparallel; i++) {
		rc = sampler_start(&d->samplers[i], &degraded);
		if (rc < 0) {
			log_err("[parallel %s]: cannot start its thread: %s", d->conf.parallel[i].name,
				strerror(-rc));
			return 1;   /* exit() ends the started threads */
		}
	}
	if (d->conf.nparallel > 0 && (rc = timer_start(&d->timer, &degraded)) < 0) {
		log_err("cannot start the timer thread: %s", strerror(-rc));
		return 1;
	}
	for (unsigned i = 0; i < d->conf.nserial; i++)
		(void)serial_open(&d->serial[i]);  /* a missing port is retried by its reader */
	for (; started < d->conf.nserial; started++) {
		rc = serial_start(&d->serial[started], &degraded);
		if (rc < 0) {
			log_err("[serial %s]: cannot start its thread: %s",
				d->conf.serial[started].name, strerror(-rc));
			break;
		}
	}
	if (degraded)
		log_warn("real-time scheduling (SCHED_FIFO) is not permitted; threads run "
			 "with SCHED_OTHER. Run as root or grant CAP_SYS_NICE");
	if (started == d->conf.nserial) {
		rc = notify_ready(&d->notify);
		if (rc < 0)
			log_warn("cannot arm the status and watchdog timer: %s; no STATUS "
				 "updates or WATCHDOG=1 pings", strerror(-rc));
		stop_sig = serve(d);
	}

	/* Stop in reverse: readers end their packets, then the flusher drains all. */
	notify_stopping(&d->notify);
	uint64_t one = 1;
	(void)write(d->stop_fd, &one, sizeof(one));     /* an eventfd write cannot fail here */
	for (unsigned i = 0; i < started; i++)
		serial_join(&d->serial[i]);
	if (d->conf.nparallel > 0) {
		timer_stop(&d->timer);
		for (unsigned i = 0; i < d->conf.nparallel; i++)
			sampler_stop(&d->samplers[i]);
	}
	{
		char text[64], sig[16];
		size_t tl = 0;
		snprintf(sig, sizeof(sig), "SIG%s", stop_sig ? sigabbrev_np(stop_sig) : "NONE");
		fmt_kv(text, sizeof(text), &tl, "reason", stop_sig ? sig : "start-up-failure");
		(void)source_event(&d->self, EV_STOP, 0, text);
	}
	flush_stop(&d->flusher);
	flush_fini(&d->flusher);
	for (unsigned i = 0; i < d->conf.nserial; i++)
		serial_fini(&d->serial[i]);
	for (unsigned i = 0; i < d->conf.nparallel; i++)
		sampler_fini(&d->samplers[i]);
	free(d->serial);
	free(d->samplers);
	free(d->sampler_ptrs);
	if (d->dma_fd >= 0)
		close(d->dma_fd);
	notify_fini(&d->notify);
	source_fini(&d->self);
	return started == d->conf.nserial ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct daemon d;         /* large; not on the stack */
	const char *config = DEFAULT_CONFIG;
	char path[PATH_MAX], err[CONF_ERR_MAX];
	bool foreground = false, check = false;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "c:fVh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': config = optarg; break;
		case 'f': foreground = true; break;
		case 'C': check = true; break;
		case 'V': printf("portlogd %s\n", PORTLOGD_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "portlogd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 1;
	}
	/* absolute, so messages stay clear and a daemon's chdir("/") does not matter */
	if (realpath(config, path) != NULL)
		config = path;
	rc = conf_load(&d.conf, config, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "portlogd: %s\n", err);
		return rc == -1 ? EXIT_CONFIG : 1;
	}
	if (check) {
		conf_print(&d.conf, stdout);
		return 0;
	}
	if (foreground || under_systemd()) {
		log_init(foreground ? LOG_SINK_STDERR : LOG_SINK_JOURNAL);
	} else {
		rc = daemonize();
		if (rc < 0) {
			fprintf(stderr, "portlogd: cannot become a daemon: %s\n", strerror(-rc));
			return 1;
		}
		log_init(LOG_SINK_JOURNAL);
	}
	return run(&d);
}
