/* SPDX-License-Identifier: GPL-2.0-or-later */
/* main.c - command line, start-up in dependency order, signals, orderly stop. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "calibrate.h"
#include "checksys.h"
#include "clock.h"
#include "clocksensor.h"
#include "conf.h"
#include "export.h"
#include "fdstore.h"
#include "replay.h"
#include "flush.h"
#include "fmt.h"
#include "irq.h"
#include "log.h"
#include "memory.h"
#include "metrics.h"
#include "notify.h"
#include "parts.h"
#include "pass.h"
#include "rt.h"
#include "sampler.h"
#include "serial.h"
#include "source.h"
#include "stat.h"
#include "sensor.h"
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
	struct sensors sensors;
	struct clock_sensor clock;          /* the RTC's seconds, where wanted (fd -1: none) */
	int clock_err;                      /* wanted, but its errno; 0: none */
	struct flusher flusher;
	struct parts parts;                 /* every part, registered once before the threads */
	struct metrics metrics;             /* [logger] metrics_file, written by the flusher */
	struct notify notify;
	struct rt rt;
	struct fdstore store;               /* the ports kept open across restarts */
	struct memory mem;                  /* what the config locks */
	struct memory_limits lim;           /* and what this process may have */
	int stop_fd;
	int sig_fd;
	/* the threads that started, for the stop */
	unsigned samplers_up, serial_up;
	bool timer_up;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: portlogd [-c FILE] [-f]\n"
		"       portlogd [-c FILE] --check-config\n"
		"       portlogd [-c FILE] --check-system [--root DIR]\n"
		"       portlogd --export pcapng|vcd [-o OUT] [--source NAME]... [--since TIME]\n"
		"                [--until TIME] LOG...   (portlogd --export pcapng --help)\n"
		"       portlogd --replay [--source NAME (--to PATH | --pty LINK)]... [--speed X]\n"
		"                [--since TIME] [--until TIME] [--dir rx|tx] LOG...\n"
		"                                        (portlogd --replay --help)\n"
		"       portlogd --calibrate PORT [--to PORT2] [--baud N] [--format 8N1]\n"
		"Records every byte on serial ports and every change on input pins, with its\ntime, to a text log.\n\n"
		"  -c, --config FILE   config file (default " DEFAULT_CONFIG ")\n"
		"  -f, --foreground    stay in the foreground, diagnostics to stderr\n"
		"      --check-config  validate the config, print the effective settings, exit\n"
		"      --check-system  report whether this machine and user are ready for real\n"
		"                      time: one OK/WARN/FAIL line per check, with the fix\n"
		"      --root DIR      --check-system reads DIR/proc, DIR/sys, DIR/dev (default /)\n"
		"      --export FORMAT write log files as pcapng (Wireshark) or vcd (GTKWave,\n"
		"                      PulseView); its options: portlogd --export pcapng --help\n"
		"      --replay        play a log's packets again into a pty or a port, at their\n"
		"                      times; its options: portlogd --replay --help\n"
		"      --calibrate     measure how a port's device hands bytes over, through a\n"
		"                      loopback; prints its delivery = line (--calibrate --help)\n"
		"  -V, --version       print the version and exit\n"
		"  -h, --help          print this help and exit\n\n"
		"Exit status: 0 clean stop, 78 config error, 1 other start-up error;\n"
		"--check-system: 0 no FAIL, 1 a FAIL, 78 config error.\n"
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
	char text[SOURCE_EV_MAX];
	struct fmt_kv kv;

	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_str(&kv, "version", PORTLOGD_VERSION);
	fmt_kv_i64(&kv, "pid", getpid());
	fmt_kv_str(&kv, "config", d->conf.path);
	fmt_kv_u64(&kv, "serial", d->conf.nserial);
	fmt_kv_u64(&kv, "parallel", d->conf.nparallel);
	(void)source_event(&d->self, EV_START, 0, text);
	if (d->clock_err != 0) {        /* clock_setup: wanted, not to be had */
		snprintf(text, sizeof(text), "op=clock-sensor device=%s", CLOCK_SENSOR_RTC);
		(void)source_event(&d->self, EV_ERROR, d->clock_err, text);
	}
}

static void event_stop(struct daemon *d, int sig)
{
	char text[64], name[16];
	struct fmt_kv kv;

	snprintf(name, sizeof(name), "SIG%s", sig ? sigabbrev_np(sig) : "NONE");
	fmt_kv_init(&kv, text, sizeof(text));
	fmt_kv_str(&kv, "reason", sig ? name : "start-up-failure");
	(void)source_event(&d->self, EV_STOP, 0, text);
}

/* One warning per missing real-time item: prose to the journal, fields to the log. */
static void report_rt(struct daemon *d, enum rt_item item)
{
	char kv[SOURCE_EV_MAX], prose[640];

	if (!rt_describe(&d->rt, item, kv, sizeof(kv), prose, sizeof(prose)))
		return;
	log_warn("%s", prose);
	(void)source_event(&d->self, EV_RT_MISSING, d->rt.err[item], kv);
}

/*
 * Everything is allocated: lock it, hold the CPUs out of deep idle states (as
 * cyclictest does), and find out whether SCHED_FIFO is allowed, before any
 * thread starts. Returns false when rt = required and something is missing.
 */
static bool setup_rt(struct daemon *d)
{
	char summary[128];

	rt_probe_fifo(&d->rt);
	rt_lock_memory(&d->rt, d->mem.total, memory_lockable(&d->mem, &d->lim), d->lim.memlock);
	rt_hold_idle(&d->rt, &d->conf);
	for (int i = 0; i < RT_NITEMS; i++)
		report_rt(d, (enum rt_item)i);
	if (d->conf.logger.rt_required && rt_degraded(&d->rt)) {
		rt_summary(&d->rt, summary, sizeof(summary));
		log_err("%s:%d: [logger] rt = required, and %s; grant what the warnings above "
			"name, or set rt = best-effort", d->conf.path, d->conf.logger.line, summary);
		return false;
	}
	return true;
}

/*
 * Each port's interrupt and the priority its threads get (irq.h); ports on one
 * line agree on the highest. Applied where each port opens.
 */
static void setup_irqs(struct daemon *d)
{
	/* two a serial port (a tap's second port), one a parallel port */
	struct irq_port **all = calloc(2 * (size_t)d->conf.nserial + d->conf.nparallel + 1,
				       sizeof(*all));
	unsigned n = 0;
	const char *why;
	int irq;

	if (all == NULL) {
		log_warn("out of memory for the ports' interrupt lines: their threads keep the "
			 "priorities they have");
		return;
	}
	for (unsigned i = 0; i < d->conf.nserial; i++) {
		const struct conf_serial *s = &d->conf.serial[i];

		irq = irq_of_device("", s->device, &why);
		irq_port_init(&d->serial[i].irq, irq, why, irq_wanted_serial(s));
		all[n++] = &d->serial[i].irq;
		/* a tap's second port is a UART of its own (pass's pty has none: its
		 * irq_port stays zeroed, wanting nothing) */
		if (s->tx_device[0] != '\0') {
			irq = irq_of_device("", s->tx_device, &why);
			irq_port_init(&d->serial[i].tx->irq, irq, why, irq_wanted_serial(s));
			all[n++] = &d->serial[i].tx->irq;
		}
	}
	for (unsigned i = 0; i < d->conf.nparallel; i++) {
		irq = irq_of_parallel("", &d->conf.parallel[i], &why);
		irq_port_init(&d->samplers[i].irq, irq, why,
			      irq_wanted_parallel(&d->conf.parallel[i]));
		all[n++] = &d->samplers[i].irq;
	}
	irq_share(all, n);
	free(all);
}

/* At stop: each IRQ thread we set goes back to the priority it had, if it still
 * has ours (a UART's thread ended with the port; a shared line's lives on). */
static void restore_irqs(struct daemon *d)
{
	for (unsigned i = 0; i < d->conf.nserial + d->conf.nparallel; i++) {
		bool ser = i < d->conf.nserial;
		struct serial_port *sp = ser ? &d->serial[i] : NULL;
		struct irq_port *ip = ser ? &sp->irq : &d->samplers[i - d->conf.nserial].irq;
		const char *name = ser ? d->conf.serial[i].name
				   : d->conf.parallel[i - d->conf.nserial].name;
		int n = irq_port_restore(ip, "");

		if (n > 0)
			log_info("[%s %s] irq %d: %d thread(s) back at the priority they had",
				 ser ? "serial" : "parallel", name, ip->irq, n);
		if (sp != NULL && sp->tx != NULL && (n = irq_port_restore(&sp->tx->irq, "")) > 0)
			log_info("[serial %s] tx_device's irq %d: %d thread(s) back at the priority "
				 "they had", name, sp->tx->irq.irq, n);
	}
}

/*
 * Runs until a stop signal and returns it. Signals arrive through the signalfd;
 * the notify timer (only under systemd) paces STATUS= and WATCHDOG=1; the
 * flusher says when a SIGHUP's reopen is done, which ends RELOADING=1.
 */
/*
 * READY=1 means recording: wait (bounded) until every parallel port has taken
 * its first value. The timer's first tick comes a period after its thread first
 * runs, which a busy machine can delay by milliseconds; a pin change before
 * that would be no change at all, just the first value. A sampler that never
 * samples is the watchdog's to find.
 */
static void wait_first_samples(const struct daemon *d)
{
	struct timespec ms = { 0, NS_PER_MS };

	for (unsigned i = 0; i < d->conf.nparallel; i++)
		for (int k = 0; k < 2000 && atomic_load(&d->samplers[i].samples) == 0; k++)
			nanosleep(&ms, NULL);
}

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

		/* with parallel ports, wake twice a second to reopen any that was lost */
		int rc = poll(pfd, 3, d->conf.nparallel > 0 ? SAMPLER_RETRY_MS : -1);

		for (unsigned i = 0; i < d->conf.nparallel; i++)
			(void)sampler_reopen(&d->samplers[i]);
		if (rc < 0) {
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

/*
 * The clock sensor (clocksensor.h): where a serial port is and the machine is virtual
 * (clock_sensor = auto), or everywhere (on). Not there, or not to be had: said in the
 * journal and the log (EV error), and the daemon runs without (a pause goes unseen).
 */
static void clock_setup(struct daemon *d)
{
	enum conf_clock want = d->conf.logger.clock_sensor;
	char why[160] = "clock_sensor = on";
	int rc;

	if (d->conf.nserial == 0 || want == CONF_CLOCK_OFF
	    || (want == CONF_CLOCK_AUTO && !clock_sensor_virtual("/", why, sizeof(why))))
		return;
	rc = clock_sensor_open(&d->clock, CLOCK_SENSOR_RTC);
	if (rc == 0) {
		log_info("the clock sensor reads %s's update interrupt (%s): a pause of this "
			 "machine is marked in the log; serial lines wait a second for it",
			 CLOCK_SENSOR_RTC, why);
		return;
	}
	log_warn("the clock sensor is wanted (%s) but %s cannot be read for its seconds: %s; a "
		 "pause of the whole machine will not be marked in the log (portlogd-rt(7), VIRTUAL "
		 "MACHINES)", why, CLOCK_SENSOR_RTC,
		 rc == -EBUSY ? "another program has it open (hwclock, chronyd's rtcfile)"
		 : strerror(-rc));
	d->clock_err = -rc;     /* the log's EV error, after EV start (event_start) */
}

/*
 * Allocates and touches every part before any thread runs, and registers each
 * once: the flusher drains the registered rings, the watchdog watches their
 * threads, STATUS= and the STAT lines read their counters. 0, or the exit
 * status once logged (EXIT_CONFIG: a pass pty the config asks for cannot be made).
 */
static int setup_parts(struct daemon *d)
{
	const struct conf *c = &d->conf;
	char err[512];
	bool ok;
	int rc;

	parts_init(&d->parts);
	d->serial = calloc(c->nserial, sizeof(*d->serial));
	d->samplers = calloc(c->nparallel + 1, sizeof(*d->samplers));
	d->sampler_ptrs = calloc(c->nparallel + 1, sizeof(*d->sampler_ptrs));
	if (source_init(&d->self, "portlogd", PARTS_MAIN_RING) < 0
	    || (c->nserial > 0 && d->serial == NULL) || d->samplers == NULL
	    || d->sampler_ptrs == NULL) {
		log_err("out of memory");
		return 1;
	}
	/* main's figure is the watchdog's verdict (notify_init comes later: a pointer here) */
	ok = parts_add(&d->parts, &(struct part){ .kind = PART_MAIN, .src = &d->self,
						   .obj = &d->notify, .count = notify_count },
		       NULL);
	timer_init(&d->timer, &c->timer, d->sampler_ptrs, c->nparallel);
	if (parts_timer_runs(c))
		ok = ok && timer_parts(&d->timer, &d->parts);
	rc = sensors_init(&d->sensors, c);
	if (rc < 0) {
		log_err("cannot set up the stall sensors (a pty and a thread per CPU): %s",
			strerror(-rc));
		return 1;
	}
	ok = ok && sensors_parts(&d->sensors, &d->parts);
	clock_setup(d);
	if (d->clock.fd >= 0)
		ok = ok && clock_sensor_parts(&d->clock, &d->parts);
	for (unsigned i = 0; i < c->nparallel; i++) {
		const struct conf_parallel *pc = &c->parallel[i];

		err[0] = '\0';     /* not every failure writes a message */
		rc = sampler_init(&d->samplers[i], pc, conf_ring_parallel(&c->logger, &c->timer), err,
				  sizeof(err));
		if (rc < 0) {
			log_err("%s:%d: [parallel %s] device %s: %s", c->path, pc->line, pc->name,
				pc->in.device, err[0] ? err : strerror(-rc));
			return 1;
		}
		d->sampler_ptrs[i] = &d->samplers[i];
		ok = ok && sampler_parts(&d->samplers[i], &d->parts);
	}
	for (unsigned i = 0; i < c->nserial; i++) {
		uint32_t records = conf_ring_serial(&c->logger, &c->serial[i]);

		rc = serial_init(&d->serial[i], &c->serial[i], records, d->stop_fd, &d->store);
		if (rc < 0) {
			log_err("[serial %s]: cannot allocate its rings of %u records: %s",
				c->serial[i].name, records, strerror(-rc));
			return 1;
		}
		rc = serial_pass_open(&d->serial[i], err, sizeof(err));
		if (rc < 0) {
			log_err("%s:%d: [serial %s] %s", c->path, c->serial[i].pass_line,
				c->serial[i].name, err);
			return EXIT_CONFIG;
		}
		serial_sensed(&d->serial[i], &d->sensors);
		ok = ok && serial_parts(&d->serial[i], &d->parts);
	}
	rc = flush_init(&d->flusher, c, &d->parts, err, sizeof(err));
	if (rc < 0) {
		log_err("%s", err);
		return 1;
	}
	if (!ok || !flush_parts(&d->flusher, &d->parts)) {
		log_err("out of memory for the registry of parts");
		return 1;
	}
	d->flusher.echo = true;     /* to stderr with -f, else to the journal */
	if (d->clock.fd >= 0)
		d->flusher.rtc.c = &d->clock;
	d->flusher.hook = stat_hook;
	d->flusher.hook_ctx = &d->parts;
	if (c->logger.metrics_file[0] != '\0') {
		if (metrics_init(&d->metrics, c->logger.metrics_file, &d->parts) < 0) {
			log_err("out of memory");
			return 1;
		}
		d->flusher.metrics = &d->metrics;
	}
	return 0;
}

/* A descriptor kept across a restart that no port wants any more (the config lost the
 * port, or its device), or that could not be told apart: closed, the FIFO's level its
 * state says put back. */
static void unwanted(void *ctx, const char *name, int fd, unsigned trigger_found)
{
	(void)ctx;
	drv_serial_forget(fd, trigger_found);
	log_info("descriptor %s kept across the restart: no port of this config takes it; "
		 "closed", name[0] != '\0' ? name : "(no name)");
}

/*
 * After the flusher: the samplers, the timer that drives them, and the serial
 * readers. False when a thread could not start; the caller then stops what
 * did, so that what is in the rings (EV start, EV rt-missing) is written, then
 * EV stop.
 */
static bool start_producers(struct daemon *d, int *degraded)
{
	const struct conf *c = &d->conf;
	int rc;

	for (; d->samplers_up < c->nparallel; d->samplers_up++) {
		rc = sampler_start(&d->samplers[d->samplers_up], degraded);
		if (rc < 0) {
			log_err("[parallel %s]: cannot start its thread: %s",
				c->parallel[d->samplers_up].name, strerror(-rc));
			return false;
		}
	}
	if (parts_timer_runs(c)) {
		rc = timer_start(&d->timer, degraded);
		d->timer_up = rc == 0;
		if (rc < 0) {
			log_err("cannot start the timer thread: %s", strerror(-rc));
			return false;
		}
	}
	rc = sensors_start(&d->sensors, degraded);
	if (rc < 0) {
		log_err("cannot start the stall sensors' threads: %s", strerror(-rc));
		return false;
	}
	rc = clock_sensor_start(&d->clock, CLOCK_SENSOR_PRIORITY, degraded);
	if (rc < 0) {
		log_err("cannot start the clock sensor's thread: %s", strerror(-rc));
		return false;
	}
	/* what no port wants lets go of its device before any port opens (up to here a
	 * failed start-up leaves the store as it was; from here the ports stay kept) */
	fdstore_release(&d->store, unwanted, d);
	for (unsigned i = 0; i < c->nserial; i++) {
		(void)serial_open(&d->serial[i]);  /* a missing port is retried by its reader */
		if (d->serial[i].tx != NULL)
			(void)serial_open(d->serial[i].tx);     /* tx_device, or pass's pty */
	}
	for (; d->serial_up < c->nserial; d->serial_up++) {
		rc = serial_start(&d->serial[d->serial_up], degraded);
		if (rc < 0) {
			log_err("[serial %s]: cannot start its thread: %s",
				c->serial[d->serial_up].name, strerror(-rc));
			return false;
		}
	}
	return true;
}

/* In reverse: readers end their packets, then the flusher drains all; then free. */
static void stop(struct daemon *d, int stop_sig)
{
	notify_stopping(&d->notify);
	(void)eventfd_write(d->stop_fd, 1);     /* an eventfd write cannot fail here */
	for (unsigned i = 0; i < d->serial_up; i++)
		serial_join(&d->serial[i]);
	sensors_stop(&d->sensors);      /* the readers ask them until they end */
	/* the readers' last lines judged: an RTC update after them (a second at most) */
	clock_sensor_settle(&d->clock, mono_ns());
	clock_sensor_stop(&d->clock);
	if (d->timer_up)
		timer_stop(&d->timer);
	for (unsigned i = 0; i < d->samplers_up; i++)
		sampler_stop(&d->samplers[i]);
	restore_irqs(d);
	event_stop(d, stop_sig);
	flush_stop(&d->flusher);
	flush_fini(&d->flusher);
	metrics_fini(&d->metrics);      /* zeroed when there is none */
	for (unsigned i = 0; i < d->conf.nserial; i++)
		serial_fini(&d->serial[i]);
	for (unsigned i = 0; i < d->conf.nparallel; i++)
		sampler_fini(&d->samplers[i]);
	sensors_fini(&d->sensors);
	clock_sensor_close(&d->clock);
	free(d->serial);
	free(d->samplers);
	free(d->sampler_ptrs);
	notify_fini(&d->notify);
	parts_fini(&d->parts);
	rt_fini(&d->rt);
	source_fini(&d->self);
	fdstore_fini(&d->store);
}

/* The CPUs this process may run on: a sensor on each when a reader is not pinned. */
static unsigned affinity_cpus(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 ? (unsigned)CPU_COUNT(&set) : 1;
}

/* Before anything is allocated (and before it detaches): a config beyond what this
 * machine and user can hold (memory, threads) stops the start-up (exit 1), err saying
 * which limit and what to do. */
static bool check_limits(struct daemon *d, char *err, size_t len)
{
	char why[640];

	memory_plan(&d->conf, affinity_cpus(), &d->mem);
	memory_limits_read("/", &d->lim);
	if (memory_check_ram(&d->conf, &d->mem, &d->lim, why, sizeof(why)) < 0
	    || memory_check_threads(&d->mem, &d->lim, why, sizeof(why)) < 0) {
		snprintf(err, len, "%.200s: %s", d->conf.path, why);
		return false;
	}
	return true;
}

/* --check-config's last lines: what the config locks (portlogd.conf(5), MEMORY). */
static void print_memory(const struct conf *c)
{
	struct memory m;
	char total[24], rings[24], stacks[24], bufs[24], base[24];

	memory_plan(c, affinity_cpus(), &m);
	printf("\n# memory: the daemon locks about %s: %u rings %s, %u threads' stacks %s, "
	       "buffers %s,\n# the program and its libraries %s (portlogd.conf(5), MEMORY)\n",
	       memory_size(m.total, total, sizeof(total)), m.nrings,
	       memory_size(m.rings, rings, sizeof(rings)), m.threads,
	       memory_size(m.stacks, stacks, sizeof(stacks)),
	       memory_size(m.buffers, bufs, sizeof(bufs)), memory_size(m.base, base, sizeof(base)));
}

static int run(struct daemon *d)
{
	int degraded = 0, rc, stop_sig = 0;
	bool started;

	rt_init(&d->rt, &d->conf);
	d->clock.fd = -1;
	d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->stop_fd < 0 || setup_signals(d) < 0) {
		log_err("cannot set up signals: %s", strerror(errno));
		return 1;
	}
	/* before anything opens: the ports the last process kept open */
	{
		char err[256];

		/* a slot for each reader: RX and TX of each serial port */
		if (fdstore_init(&d->store, 2 * d->conf.nserial, err, sizeof(err)) < 0)
			log_warn("%s", err);
		if (d->store.warning[0] != '\0')
			log_warn("the descriptors handed over at start: %s", d->store.warning);
		if (d->store.lost > 0)
			log_warn("%u descriptors handed over at start, no memory to take them: "
				 "closed", d->store.lost);
	}
	rc = setup_parts(d);
	if (rc != 0)
		return rc;
	notify_init(&d->notify, &d->parts);
	d->notify.rt = &d->rt;     /* STATUS= says whether real time is fully in place */
	event_start(d);
	if (d->conf.nserial + d->conf.nparallel == 0)
		log_warn("%s has no port: running, logging nothing, opening no device; add a "
			 "[serial NAME] section with its device and baud (portlogd.conf(5)), check it "
			 "with portlogd --check-config, then systemctl restart portlogd",
			 d->conf.path);
	setup_irqs(d);
	if (!setup_rt(d))
		return 1;
	/* from here until main() ends it, diagnostics go through the journal thread's
	 * queue: no thread waits for journald or stderr (log.h) */
	rc = log_start(d->conf.logger.log_file);
	if (rc < 0)
		log_warn("cannot start the journal thread: %s; messages are sent as they come",
			 strerror(-rc));
	rc = flush_start(&d->flusher, &degraded);
	if (rc < 0) {
		log_err("cannot start the flusher thread: %s", strerror(-rc));
		return 1;
	}
	started = start_producers(d, &degraded);
	if (started)
		fdstore_finish(&d->store);      /* a failed start-up leaves the states too */
	if (degraded && d->rt.err[RT_FIFO] == 0) {
		/* the probe was allowed, a thread was not: a limit changed meanwhile */
		d->rt.err[RT_FIFO] = EPERM;
		report_rt(d, RT_FIFO);
	}
	if (started) {
		wait_first_samples(d);
		rc = notify_ready(&d->notify);
		if (rc < 0)
			log_warn("cannot arm the status and watchdog timer: %s; no STATUS "
				 "updates or WATCHDOG=1 pings", strerror(-rc));
		stop_sig = serve(d);
	}
	stop(d, stop_sig);
	return started ? 0 : 1;
}

/* The directories of the pass = PATH links: a config error when one cannot be made. */
static int prepare_pass(const struct conf *c, char *err, size_t len)
{
	for (unsigned i = 0; i < c->nserial; i++) {
		const struct conf_serial *s = &c->serial[i];
		char dir[CONF_PATH_MAX + sizeof(CONF_PASS_DIR)];
		int rc;

		if (s->pass[0] == '\0')
			continue;
		rc = pass_prepare(s, dir, sizeof(dir));
		if (rc < 0) {
			snprintf(err, len, "%.200s:%d: [serial %s] pass: cannot make the directory "
				 "%.100s: %s; fix: make it, or choose a path in a directory the "
				 "service user may write", c->path, s->pass_line, s->name, dir,
				 strerror(-rc));
			return -1;
		}
	}
	return 0;
}

/* --check-system; without a config (the default one does not exist) the system
 * checks run with the defaults and the port checks are skipped. */
static int check_system_run(struct conf *c, const char *root, const char *config, bool have_conf)
{
	struct checksys cs = { .root = root ? root : "/", .conf = c, .have_conf = have_conf };
	struct stat st;

	if (root != NULL && (stat(root, &st) < 0 || !S_ISDIR(st.st_mode))) {
		fprintf(stderr, "portlogd: --root %s: not a directory; give the directory that "
			"holds proc/, sys/ and dev/\n", root);
		return 1;
	}
	if (!have_conf) {
		conf_defaults(c);
		snprintf(c->path, sizeof(c->path), "%s", config);
	}
	return checksys_run(&cs, stdout);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "check-system", no_argument, NULL, 'S' },
		{ "root", required_argument, NULL, 'R' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		/* not in --help: the key table, for tests/lint/man_keys.sh */
		{ "list-keys", no_argument, NULL, 'K' },
		/* not in --help: the metrics file's names, for tests/lint/metrics_names.sh */
		{ "list-metrics", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	static struct daemon d;         /* large; not on the stack */
	const char *config = DEFAULT_CONFIG, *root = NULL;
	char path[PATH_MAX], err[CONF_ERR_MAX];
	bool foreground = false, check = false, check_system = false, config_given = false;
	int opt, rc;

	/* --export and --replay are commands of their own (export.c, replay.c): no
	 * config, no daemon */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--export") == 0 || strncmp(argv[i], "--export=", 9) == 0)
			return export_main(argc, argv);
		if (strcmp(argv[i], "--replay") == 0)
			return replay_main(argc, argv);
		if (strcmp(argv[i], "--calibrate") == 0 || strncmp(argv[i], "--calibrate=", 12) == 0)
			return calibrate_main(argc, argv);
	}
	while ((opt = getopt_long(argc, argv, "c:fVh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': config = optarg; config_given = true; break;
		case 'f': foreground = true; break;
		case 'C': check = true; break;
		case 'S': check_system = true; break;
		case 'R': root = optarg; break;
		case 'V': printf("portlogd %s\n", PORTLOGD_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		case 'K': conf_print_keys(stdout); return 0;
		case 'M': metrics_print_names(stdout); return 0;
		default: usage(stderr); return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "portlogd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 1;
	}
	if (root != NULL && !check_system) {
		fprintf(stderr, "portlogd: --root DIR only goes with --check-system\n");
		return 1;
	}
	if (check_system && !config_given && access(config, F_OK) < 0 && errno == ENOENT)
		return check_system_run(&d.conf, root, config, false);
	/* absolute, so messages stay clear and a daemon's chdir("/") does not matter */
	if (realpath(config, path) != NULL)
		config = path;
	rc = conf_load(&d.conf, config, err, sizeof(err));
	/* a cpu = this machine does not offer is a config error too (check-system
	 * reports it as one of its checks instead); so is a pass directory that
	 * cannot be made (made here, before the daemon detaches, not for a check) */
	if (rc == 0 && !check_system && rt_check_cpus(&d.conf, err, sizeof(err)) < 0)
		rc = -1;
	if (rc == 0 && !check_system && !check && prepare_pass(&d.conf, err, sizeof(err)) < 0)
		rc = -1;
	if (rc < 0) {
		fprintf(stderr, "portlogd: %s\n", err);
		return rc == -1 ? EXIT_CONFIG : 1;
	}
	if (check) {
		conf_print(&d.conf, stdout);
		print_memory(&d.conf);
		if (d.conf.nserial + d.conf.nparallel == 0)
			fprintf(stderr, "portlogd: %s: no port: the service would run and log "
				"nothing; add a [serial NAME] section (portlogd.conf(5))\n", config);
		return 0;
	}
	if (check_system)
		return check_system_run(&d.conf, root, config, true);
	{
		char why[1024];

		if (!check_limits(&d, why, sizeof(why))) {
			fprintf(stderr, "portlogd: %s\n", why);
			return 1;
		}
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
	rc = run(&d);
	/* the rest of the queue (bounded: the flusher said in the log what the journal
	 * did not take within LOG_DRAIN_MS) */
	(void)log_stop();
	return rc;
}
