/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vm_check - the host's verdict on what tests/vm/run.sh collected in the guest.
 *
 * vm_check --dir OUT --sent FILE [--sent FILE]... [options]
 *
 * OUT is the guest's /var/tmp/vmtest (show.txt, threads.txt, user.txt, security.txt,
 * status_reg.txt, watchdog.txt, journal.txt, log/portlogd.log*, pkg-install.txt and
 * pkg.txt: the package's install, upgrade, remove and purge; uname.txt, irq.txt: the
 * ports' interrupt lines and threads, checksys.txt: --check-system); each --sent file is
 * what portlogd-sim --output printed (NAME SECONDS LEN HEX DURATION_US MAXPAUSE_US
 * clean|unclean a line), in the order played.
 * --kernel VERSION --model rt|std: the kernel the host booted, PREEMPT_RT or not, and
 * what that means for --check-system and the interrupt threads; --irq-want N: the
 * priority irq_priority asks for the serial port's interrupt thread. --no-watchdog: a
 * run without the watchdog (one daemon from start to stop); --no-package: without the
 * package's upgrade, removal and purge; --short: both; --lpt-pulses N:
 * the bytes the host's end of the parallel port got while the daemon ran, one per
 * strobe pulse (QEMU sends its data register on each pulse of nStrobe); --max-packet N:
 * the port's max_packet (default 4096: a line after one of N bytes needs no mark).
 * Every check prints "ok NAME: figures" or "FAIL NAME: why"; exit 1 when any failed.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "logline.h"
#include "vm_sent.h"

static int failures;

static void result(bool ok, const char *check, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s: ", ok ? "ok" : "FAIL", check);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
}

/* The whole file as a string (NULL if unreadable). */
static char *slurp(const char *dir, const char *name)
{
	char path[1024];
	FILE *f;
	char *buf = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	FILE *m = open_memstream(&buf, &len);
	int c;
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(m);
	fclose(f);
	return buf;
}

/* "KEY=value" at the start of a line of text: the value up to the end of the line. */
static bool prop(const char *text, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
			const char *v = p + kl + 1, *e = strchr(v, '\n');
			size_t n = e ? (size_t)(e - v) : strlen(v);
			snprintf(out, len, "%.*s", (int)n, v);
			return true;
		}
	}
	*out = '\0';
	return false;
}

struct prio {
	char name[32];
	int prio;
};

/* KEY's value in text as a number (-1 if absent or not a number). */
static long long num(const char *text, const char *key)
{
	char v[64], *end;

	if (!prop(text, key, v, sizeof(v)) || *v == '\0')
		return -1;
	long long n = strtoll(v, &end, 10);
	return *end == '\0' ? n : -1;
}

/* KEY's value in text equals want. */
static bool is(const char *text, const char *key, const char *want)
{
	char v[256];

	return prop(text, key, v, sizeof(v)) && strcmp(v, want) == 0;
}

/* The value of key in an EV or STAT line of the log, unescaped; false when absent. */
static bool line_kv(const char *text, const char *key, char *out, size_t cap)
{
	static struct logline_parser parser;
	struct logline l;

	logline_init(&parser);
	*out = '\0';
	return logline_parse(&parser, text, strlen(text), &l) == 0 && logline_kv_str(&l, key, out, cap);
}

/* Does log line i say "EV name" of src? */
static bool is_ev(const struct e2e_log *log, size_t i, const char *src, const char *name)
{
	char pat[64];

	snprintf(pat, sizeof(pat), " %s EV %s ", src, name);
	return strstr(log->line[i].text, pat) != NULL;
}

/* The --check-system row NAME ("kernel-rt", "port:line1:irq"): its level word (OK,
 * WARN, FAIL) into level and its text into text; false when there is no such row. */
static bool checksys_row(const char *report, const char *name, char *level, size_t ll, char *text,
			 size_t tl)
{
	size_t nl = strlen(name);

	for (const char *p = report; p != NULL && *p != '\0'; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		const char *n = p + strcspn(p, " \n");
		n += strspn(n, " ");
		if (strncmp(n, name, nl) != 0 || n[nl] != ' ')
			continue;
		const char *t = n + nl + strspn(n + nl, " "), *e = strchrnul(t, '\n');
		snprintf(level, ll, "%.*s", (int)strcspn(p, " \n"), p);
		snprintf(text, tl, "%.*s", (int)(e - t), t);
		return true;
	}
	*level = *text = '\0';
	return false;
}

struct irq_thr {
	int pid, policy, prio;
	char comm[32];
};

/* A scheduling policy's name, as chrt prints it. */
static const char *policy_name(int policy)
{
	switch (policy) {
	case SCHED_OTHER: return "SCHED_OTHER";
	case SCHED_FIFO: return "SCHED_FIFO";
	case SCHED_RR: return "SCHED_RR";
	case SCHED_BATCH: return "SCHED_BATCH";
	case SCHED_IDLE: return "SCHED_IDLE";
	default: return "SCHED_?";
	}
}

/* irq.txt: "KEY=N" lines and "thread PID COMM POLICY RT_PRIORITY" lines (/proc/PID/stat). */
static size_t read_irq_threads(const char *irq, struct irq_thr *t, size_t max)
{
	size_t n = 0;

	for (const char *p = irq; p != NULL && *p != '\0' && n < max; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (sscanf(p, "thread %d %31s %d %d", &t[n].pid, t[n].comm, &t[n].policy, &t[n].prio) == 4)
			n++;
	return n;
}

/* Is comm a thread of interrupt irq ("irq/3-ttyS1" for 3)? */
static bool thread_of(const char *comm, long long irq)
{
	char pre[32];

	snprintf(pre, sizeof(pre), "irq/%lld-", irq);
	return irq > 0 && strncmp(comm, pre, strlen(pre)) == 0;
}

/*
 * The kernel the guest ran and what portlogd saw of it: --check-system's kernel-rt
 * row (OK on PREEMPT_RT, WARN on another); the serial port's interrupt thread (on
 * PREEMPT_RT: irq/N-ttyS1 at SCHED_FIFO want as read back from /proc, and each
 * daemon's "EV irq-priority irq=N thread= pid= old=50 new=want" naming it; on another
 * kernel no interrupt thread at all and each daemon's one "irq=N thread=none
 * reason=not-threaded"); its port:NAME:irq row; the parallel port's interrupt thread
 * left alone by auto (no EV line; on PREEMPT_RT still at SCHED_FIFO 50).
 */
static void check_kernel(const char *dir, const struct e2e_log *log, const char *kver, bool rt,
			 const char *port, const char *lpt, int want)
{
	char *un = slurp(dir, "uname.txt"), *cs = slurp(dir, "checksys.txt"), *irq = slurp(dir, "irq.txt");
	char lv[16], text[1024], row[64], first[128] = "";
	struct irq_thr t[64];
	size_t nt = irq ? read_irq_threads(irq, t, 64) : 0;
	long long tty_irq = irq ? num(irq, "tty_irq") : -1, par_irq = irq ? num(irq, "parport_irq") : -1;

	if (un != NULL)
		sscanf(un, "%127s", first);
	result(strcmp(first, kver) == 0 && (strstr(un, "PREEMPT_RT") != NULL) == rt, "kernel",
	       "the guest ran %s (uname -r) %s PREEMPT_RT in uname -v (want %s, %s)", first,
	       un && strstr(un, "PREEMPT_RT") ? "with" : "without", kver, rt ? "with" : "without");

	checksys_row(cs ? cs : "", "kernel-rt", lv, sizeof(lv), text, sizeof(text));
	result(strcmp(lv, rt ? "OK" : "WARN") == 0, "check-system-kernel-rt", "%s %s (want %s)",
	       *lv ? lv : "no kernel-rt row in checksys.txt", text, rt ? "OK" : "WARN");

	/* the serial port's interrupt: its threads as /proc showed them while the daemon ran */
	const struct irq_thr *mine = NULL;
	size_t nmine = 0;
	bool all_want = true;
	for (size_t i = 0; i < nt; i++)
		if (thread_of(t[i].comm, tty_irq)) {
			mine = mine ? mine : &t[i];
			nmine++;
			all_want = all_want && t[i].policy == SCHED_FIFO && t[i].prio == want;
		}
	if (rt && mine == NULL)
		result(false, "irq-thread", "ttyS1's irq %lld: no irq/%lld-* thread in /proc (irq.txt: %zu "
		       "interrupt thread(s) in all; want one at SCHED_FIFO %d, as irq_priority asks)",
		       tty_irq, tty_irq, nt, want);
	else if (rt)
		result(tty_irq > 0 && all_want, "irq-thread",
		       "ttyS1's irq %lld: %zu thread(s) of it in /proc, %s (pid %d) %s %d "
		       "(want each SCHED_FIFO %d, as irq_priority asks)", tty_irq,
		       nmine, mine->comm, mine->pid, policy_name(mine->policy), mine->prio, want);
	else
		result(tty_irq > 0 && nt == 0, "irq-thread", "ttyS1's irq %lld; %zu interrupt thread(s) "
		       "in /proc (want none: the kernel does not thread interrupts)", tty_irq, nt);

	/* what each daemon said of it: one EV irq-priority line of the port per EV start */
	size_t starts = 0, evs = 0, good = 0, named = 0;
	const char *bad = NULL;
	for (size_t i = 0; i < log->n; i++) {
		if (strstr(log->line[i].text, " portlogd EV start ") != NULL)
			starts++;
		if (!is_ev(log, i, port, "irq-priority"))
			continue;
		char irqv[16], thr[32], pid[16], old[16], nw[16], why[32];
		evs++;
		line_kv(log->line[i].text, "irq", irqv, sizeof(irqv));
		line_kv(log->line[i].text, "thread", thr, sizeof(thr));
		line_kv(log->line[i].text, "pid", pid, sizeof(pid));
		line_kv(log->line[i].text, "old", old, sizeof(old));
		line_kv(log->line[i].text, "new", nw, sizeof(nw));
		line_kv(log->line[i].text, "reason", why, sizeof(why));
		bool ok = atoll(irqv) == tty_irq &&
			  (rt ? thread_of(thr, tty_irq) && strcmp(old, "50") == 0 && atoi(nw) == want
			      : strcmp(thr, "none") == 0 && strcmp(why, "not-threaded") == 0);
		good += ok;
		if (!ok && bad == NULL)
			bad = log->line[i].text;
		if (ok && rt && mine != NULL && atoi(pid) == mine->pid && strcmp(thr, mine->comm) == 0)
			named++;
	}
	if (rt)
		result(evs == starts && good == evs && named == 1, "irq-priority-ev",
		       "%zu EV irq-priority line(s) of %s for %zu EV start(s), %zu with irq=%lld "
		       "thread=irq/%lld-* old=50 new=%d, %zu naming the thread /proc showed (want one "
		       "per start, all so, one naming it)%s%s", evs, port, starts, good, tty_irq, tty_irq,
		       want, named, bad ? "; not so: " : "", bad ? bad : "");
	else
		result(evs == starts && good == evs && starts > 0, "irq-priority-ev",
		       "%zu EV irq-priority line(s) of %s for %zu EV start(s), %zu \"irq=%lld thread=none "
		       "reason=not-threaded\" (want one per start: said once per daemon)%s%s", evs, port,
		       starts, good, tty_irq, bad ? "; not so: " : "", bad ? bad : "");

	snprintf(row, sizeof(row), "port:%s:irq", port);
	checksys_row(cs ? cs : "", row, lv, sizeof(lv), text, sizeof(text));
	{
		char want_text[64];
		if (rt && mine != NULL)
			snprintf(want_text, sizeof(want_text), "%s (pid %d) SCHED_FIFO %d", mine->comm,
				 mine->pid, want);
		else
			snprintf(want_text, sizeof(want_text), "%s", rt ? "(no thread)" : "is not threaded");
		result(strcmp(lv, "OK") == 0 && strstr(text, want_text) != NULL, "check-system-irq",
		       "%s %s %s (want OK naming \"%s\")", *lv ? lv : "no row", row, text, want_text);
	}

	/* the parallel port's interrupt: auto leaves it alone */
	size_t lpt_evs = 0, par_n = 0, par_50 = 0;
	for (size_t i = 0; i < log->n; i++)
		lpt_evs += is_ev(log, i, lpt, "irq-priority");
	for (size_t i = 0; i < nt; i++)
		if (thread_of(t[i].comm, par_irq)) {
			par_n++;
			par_50 += t[i].policy == SCHED_FIFO && t[i].prio == 50;
		}
	snprintf(row, sizeof(row), "port:%s:irq", lpt);
	checksys_row(cs ? cs : "", row, lv, sizeof(lv), text, sizeof(text));
	result(lpt_evs == 0 && par_50 == par_n && (!rt || par_irq <= 0 || par_n > 0) &&
	       strcmp(lv, "OK") == 0, "irq-parallel",
	       "%s (irq %lld): %zu EV irq-priority line(s), %zu of %zu thread(s) at SCHED_FIFO 50; "
	       "%s %s (want no EV line, every thread at 50%s: auto leaves a parallel port's "
	       "thread alone; the row OK)", lpt, par_irq, lpt_evs, par_50, par_n, *lv ? lv : "no row",
	       text, rt && par_irq > 0 ? " and at least one, the kernel threading its interrupt" : "");
	free(un);
	free(cs);
	free(irq);
}

/*
 * The ADC strobe through the guest's real parallel port: every sample pulses nStrobe
 * (strobe = control:0, strobe_level = low), and QEMU's parallel port sends its data
 * register to the chardev on each such pulse, so the host's file grew by exactly the
 * samples the sampler took (samples - unread: a tick with the port lost pulses nothing),
 * as each daemon's last STAT line (written at its stop) counts them.
 */
static void check_strobe(const struct e2e_log *log, const char *lpt, long long pulses)
{
	size_t starts = 0, stops = 0;
	unsigned long long sum = 0, samples = 0, unread = 0;
	const char *open = NULL;
	char v[32], stat[64];

	snprintf(stat, sizeof(stat), " portlogd STAT %s ", lpt);
	for (size_t i = 0; i < log->n; i++) {
		const char *text = log->line[i].text;
		if (strstr(text, " portlogd EV start ") != NULL) {
			sum += samples - unread;
			samples = unread = 0;
			starts++;
		}
		stops += strstr(text, " portlogd EV stop ") != NULL;
		if (open == NULL && is_ev(log, i, lpt, "open"))
			open = text;
		if (strstr(text, stat) != NULL) {
			samples = line_kv(text, "samples", v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
			unread = line_kv(text, "unread", v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
		}
	}
	sum += samples - unread;
	result(open != NULL && strstr(open, " strobe=control:0 ") != NULL &&
	       strstr(open, " strobe_level=low") != NULL, "strobe-open", "%s (want %s with "
	       "strobe=control:0 strobe_level=low, as the test's config says)",
	       open ? open : "no EV open line", lpt);
	result(starts > 0 && stops == starts && pulses >= 0 && (unsigned long long)pulses == sum, "strobe",
	       "the host's end of the parallel port got %lld byte(s) while the daemon ran; its "
	       "STAT lines at stop count %llu samples (samples - unread) over %zu start(s) and %zu "
	       "stop(s) (want equal: one pulse per sample, every daemon stopped cleanly)", pulses,
	       sum, starts, stops);
}

/*
 * The package's life under systemd, from the guest's KEY=VALUE records (guest.sh):
 * dpkg -i enables and starts the service (with the shipped config); an upgrade
 * restarts it (a new main PID and start time); remove stops it and keeps the logs and
 * the user; purge takes the logs, /etc/portlogd and the enablement the user made.
 */
static void check_package(const char *dir, const char *user, const char *groups)
{
	char *in = slurp(dir, "pkg-install.txt"), *p = slurp(dir, "pkg.txt");
	char v[256], w[256], t[64];

	if (in == NULL || p == NULL) {
		result(false, "package", "no %s/pkg-install.txt or pkg.txt", dir);
		free(in);
		free(p);
		return;
	}
	prop(in, "install_s", t, sizeof(t));
	prop(in, "install_version", v, sizeof(v));
	result(num(in, "install_rc") == 0 && is(in, "install_status", "ii") && *v != '\0',
	       "pkg-install", "dpkg -i: exit %lld, %s %s in %s s", num(in, "install_rc"),
	       is(in, "install_status", "ii") ? "installed" : "NOT installed", v, t);
	prop(in, "install_enabled", v, sizeof(v));
	prop(in, "install_active", w, sizeof(w));
	result(strcmp(v, "enabled") == 0 && strcmp(w, "active") == 0 && num(in, "install_mainpid") > 0,
	       "pkg-install-service", "after the install: %s, %s, MainPID %lld (want enabled, active)",
	       v, w, num(in, "install_mainpid"));
	result(num(in, "install_shipped_config") == 1, "pkg-install-config",
	       "%lld EV start line(s) naming config=/etc/portlogd/portlogd.conf in the log it made "
	       "(want 1: the postinst started it with the shipped config)",
	       num(in, "install_shipped_config"));
	/* the shipped config has no port: the service runs, opens no device, says so */
	prop(in, "install_statustext", v, sizeof(v));
	result(num(in, "install_noport_start") == 1 && num(in, "install_opens") == 0
	       && num(in, "install_uart_lines") == 0 && num(in, "install_tty_fds") == 0
	       && strstr(v, "no port configured") != NULL && num(in, "install_checksys_noport") == 1,
	       "pkg-install-no-port", "with the shipped config: EV start serial=0 parallel=0 %lld "
	       "time(s), EV open %lld, UARTs with DTR or RTS raised %lld, tty descriptors of the "
	       "daemon %lld, StatusText \"%s\", --check-system's config row says it has no port "
	       "%lld (want 1, 0, 0, 0, \"no port configured...\", 1)",
	       num(in, "install_noport_start"), num(in, "install_opens"),
	       num(in, "install_uart_lines"), num(in, "install_tty_fds"), v,
	       num(in, "install_checksys_noport"));
	prop(in, "install_groups", v, sizeof(v));
	prop(in, "install_logdir_mode", w, sizeof(w));
	{
		char want_dir[128], pad[300], g[64];
		bool ok = true;
		snprintf(want_dir, sizeof(want_dir), "750 %s %s", user, user);
		snprintf(pad, sizeof(pad), " %s ", v);
		char gs[256];
		snprintf(gs, sizeof(gs), "%s", groups);
		for (char *save = NULL, *gr = strtok_r(gs, ",", &save); gr != NULL; gr = strtok_r(NULL, ",", &save)) {
			snprintf(g, sizeof(g), " %s ", gr);
			ok = ok && strstr(pad, g) != NULL;
		}
		result(ok && strcmp(w, want_dir) == 0, "pkg-install-user",
		       "user %s in groups: %s; /var/log/portlogd: %s (want %s, %s)", user, v, w, groups,
		       want_dir);
	}

	char want_dma[128], want_rtc[128], rtc[128];
	snprintf(want_dma, sizeof(want_dma), "660 %s", user);
	snprintf(want_rtc, sizeof(want_rtc), "640 %s", user);
	prop(in, "install_dma", v, sizeof(v));
	prop(in, "install_rtc", rtc, sizeof(rtc));
	result(strcmp(v, want_dma) == 0 && strcmp(rtc, want_rtc) == 0, "pkg-install-udev",
	       "/dev/cpu_dma_latency after the install: %s, /dev/rtc0: %s (want %s, %s: "
	       "60-portlogd.rules applied to them)", v, rtc, want_dma, want_rtc);

	/* the user's "systemctl enable --now", then the upgrade */
	prop(p, "upgrade_s", t, sizeof(t));
	prop(p, "before_version", v, sizeof(v));
	prop(p, "upgrade_version", w, sizeof(w));
	result(num(p, "user_enable_rc") == 0 && is(p, "before_active", "active") &&
	       num(p, "upgrade_rc") == 0 && is(p, "upgrade_status", "ii") && strcmp(v, w) != 0 && *w != '\0',
	       "pkg-upgrade", "systemctl enable --now: exit %lld; dpkg -i %s over %s: exit %lld in %s s",
	       num(p, "user_enable_rc"), w, v, num(p, "upgrade_rc"), t);
	long long pid0 = num(p, "before_mainpid"), pid1 = num(p, "upgrade_mainpid");
	long long t0 = num(p, "before_start"), t1 = num(p, "upgrade_start");
	result(is(p, "upgrade_active", "active") && is(p, "upgrade_enabled", "enabled") && pid0 > 0 &&
	       pid1 > 0 && pid1 != pid0 && t1 > t0, "pkg-upgrade-restart",
	       "MainPID %lld -> %lld, started at %lld -> %lld us (monotonic), %s and %s after (want a "
	       "new PID and a later start, active, enabled)", pid0, pid1, t0, t1,
	       is(p, "upgrade_active", "active") ? "active" : "NOT active",
	       is(p, "upgrade_enabled", "enabled") ? "enabled" : "NOT enabled");

	/* remove: stopped; logs and user kept (data; Debian never removes a system user) */
	prop(p, "remove_s", t, sizeof(t));
	prop(p, "remove_active", v, sizeof(v));
	prop(p, "remove_status", w, sizeof(w));
	result(num(p, "remove_rc") == 0 && strcmp(v, "inactive") == 0 && strcmp(w, "rc") == 0 &&
	       num(p, "remove_logs") > 0 && is(p, "remove_user", "present"), "pkg-remove",
	       "dpkg -r: exit %lld in %s s; service %s, package %s, %lld file(s) kept in /var/log/portlogd, "
	       "user %s (want inactive, rc, > 0, present)", num(p, "remove_rc"), t, v, w,
	       num(p, "remove_logs"), is(p, "remove_user", "present") ? "present" : "absent");

	/* purge: the logs, /etc/portlogd and the enablement gone */
	prop(p, "purge_s", t, sizeof(t));
	result(num(p, "purge_rc") == 0 && is(p, "purge_logdir", "absent") && is(p, "purge_link", "absent") &&
	       is(p, "purge_etc", "absent") && is(p, "purge_status", ""), "pkg-purge",
	       "dpkg -P: exit %lld in %s s; /var/log/portlogd %s, the enablement link %s, /etc/portlogd "
	       "%s, package %s (want all absent)", num(p, "purge_rc"), t,
	       is(p, "purge_logdir", "absent") ? "absent" : "PRESENT",
	       is(p, "purge_link", "absent") ? "absent" : "PRESENT",
	       is(p, "purge_etc", "absent") ? "absent" : "PRESENT",
	       is(p, "purge_status", "") ? "unknown to dpkg" : "STILL KNOWN");
	free(in);
	free(p);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' }, { "sent", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' }, { "lpt", required_argument, NULL, 'l' },
		{ "prio", required_argument, NULL, 'P' }, { "user", required_argument, NULL, 'u' },
		{ "groups", required_argument, NULL, 'g' },
		{ "max-exposure", required_argument, NULL, 'x' },
		{ "watchdog-margin", required_argument, NULL, 'w' },
		{ "kernel", required_argument, NULL, 'k' }, { "model", required_argument, NULL, 'm' },
		{ "irq-want", required_argument, NULL, 'i' }, { "short", no_argument, NULL, 'S' },
		{ "no-watchdog", no_argument, NULL, 'W' }, { "no-package", no_argument, NULL, 'K' },
		{ "lpt-pulses", required_argument, NULL, 'L' },
		{ "max-packet", required_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *sentf[8], *port = "line1", *lpt = "lpt0", *user = "portlogd";
	const char *groups = "dialout,lp", *kver = NULL;
	bool rt = false, no_watchdog = false, no_package = false;
	int irq_want = 71;
	long long pulses = -1;
	size_t max_packet = 4096;
	struct prio prio[16];
	unsigned nsent = 0, nprio = 0;
	double max_exposure = 2.0, margin = 12;
	int opt;
	char path[1300], v[512];

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 's': if (nsent < 8) sentf[nsent++] = optarg; break;
		case 'p': port = optarg; break;
		case 'l': lpt = optarg; break;
		case 'P':
			if (nprio < 16 && strchr(optarg, '=') != NULL) {
				snprintf(prio[nprio].name, sizeof(prio[nprio].name), "%.*s",
					 (int)(strchr(optarg, '=') - optarg), optarg);
				prio[nprio++].prio = atoi(strchr(optarg, '=') + 1);
			}
			break;
		case 'u': user = optarg; break;
		case 'g': groups = optarg; break;
		case 'x': max_exposure = atof(optarg); break;
		case 'w': margin = atof(optarg); break;
		case 'k': kver = optarg; break;
		case 'm': rt = strcmp(optarg, "rt") == 0; break;
		case 'i': irq_want = atoi(optarg); break;
		case 'S': no_watchdog = no_package = true; break;
		case 'W': no_watchdog = true; break;
		case 'K': no_package = true; break;
		case 'L': pulses = atoll(optarg); break;
		case 'M': max_packet = strtoull(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (dir == NULL || nsent == 0) {
		fprintf(stderr, "usage: vm_check --dir OUT --sent FILE... [options]\n");
		return 2;
	}

	if (!no_package)
		check_package(dir, user, groups);

	/* --- the service while it ran */
	char *show = slurp(dir, "show.txt");
	if (show == NULL) {
		result(false, "collected", "no %s/show.txt", dir);
		return 1;
	}
	prop(show, "ActiveState", v, sizeof(v));
	result(strcmp(v, "active") == 0, "service-active", "ActiveState=%s", v);
	prop(show, "NRestarts", v, sizeof(v));
	result(strcmp(v, "0") == 0, "no-restart-before-watchdog", "NRestarts=%s", v);
	prop(show, "StatusText", v, sizeof(v));
	{
		unsigned up = 0, ports = 0;
		unsigned long long records = 0;
		bool ok = sscanf(v, "%u/%u ports up, %llu records", &up, &ports, &records) == 3 &&
			  up == ports && ports == 2 && records > 0;
		result(ok, "status-text", "StatusText=%s (want 2/2 ports up and records > 0)", v);
	}

	/* --- who it runs as */
	char *who = slurp(dir, "user.txt");
	{
		char u[64] = "", g[64] = "", sup[256] = "";
		bool ok = who != NULL && sscanf(who, "%63s %63s %255s", u, g, sup) >= 2 &&
			  strcmp(u, user) == 0;
		char want[256];
		snprintf(want, sizeof(want), "%s", groups);
		for (char *save = NULL, *gr = strtok_r(want, ",", &save); ok && gr != NULL;
		     gr = strtok_r(NULL, ",", &save)) {
			char pad[300], gr2[64];
			snprintf(pad, sizeof(pad), ",%s,", sup);
			snprintf(gr2, sizeof(gr2), ",%s,", gr);
			ok = strstr(pad, gr2) != NULL;
		}
		result(ok, "user", "runs as %s, group %s, supplementary %s (want %s in %s)", u, g, sup,
		       user, groups);
	}

	/* --- thread policies and priorities */
	char *thr = slurp(dir, "threads.txt");
	for (unsigned i = 0; i < nprio; i++) {
		bool found = false, ok = false;
		char got[128] = "not running";
		for (char *l = thr; l != NULL && *l != '\0'; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			char name[32], pol[32];
			int tid, pr;
			if (sscanf(l, "%d %31s %31s %d", &tid, name, pol, &pr) == 4 &&
			    strcmp(name, prio[i].name) == 0) {
				found = true;
				snprintf(got, sizeof(got), "%s %d", pol, pr);
				ok = strcmp(pol, "SCHED_FIFO") == 0 && pr == prio[i].prio;
			}
		}
		result(found && ok, "sched", "%s: %s (want SCHED_FIFO %d)", prio[i].name, got, prio[i].prio);
	}

	/* --- security, online */
	char *sec = slurp(dir, "security.txt");
	{
		const char *p = sec ? strstr(sec, "Overall exposure level for portlogd.service:") : NULL;
		double x = p ? atof(strchr(p, ':') + 1) : 99;
		if (p != NULL)
			*strchrnul(p, '\n') = '\0';
		result(p != NULL && x <= max_exposure, "security",
		       "systemd-analyze security (online, in the guest): %s (want <= %.1f)",
		       p ? p + strlen("Overall exposure level for portlogd.service:") : "no score", max_exposure);
	}

	/* --- the log: rotated file(s) first (highest number first), then the current one */
	struct e2e_log log = { 0 };
	size_t nfiles = 0, rotated_rx = 0, current_rx = 0;
	char logdir[1100];
	snprintf(logdir, sizeof(logdir), "%s/log", dir);
	for (int k = 9; k >= 0; k--) {
		if (k > 0)
			snprintf(path, sizeof(path), "%s/portlogd.log.%d", logdir, k);
		else
			snprintf(path, sizeof(path), "%s/portlogd.log", logdir);
		size_t before = log.n;
		if (e2e_read_log(&log, path) < 0)
			continue;
		nfiles++;
		for (size_t i = before; i < log.n; i++)
			if (strcmp(log.line[i].kind, "RX") == 0 && strcmp(log.line[i].src, port) == 0)
				*(k > 0 ? &rotated_rx : &current_rx) += 1;
		if (k == 0 && before < log.n)
			result(strstr(log.line[before].text, " portlogd EV reopen ") != NULL, "rotation-reopen",
			       "the current file starts with: %s", log.line[before].text);
	}
	result(nfiles >= 2 && rotated_rx > 0 && current_rx > 0, "rotation",
	       "%zu log files; %s RX lines in the rotated one(s), %zu in the current one "
	       "(want a rotation in the middle of the traffic)", nfiles, port, rotated_rx, current_rx);

	/* the serial port opened through libserialport, not the pty path */
	{
		const char *open = NULL;
		for (size_t i = 0; i < log.n && open == NULL; i++)
			if (strcmp(log.line[i].src, port) == 0 && strstr(log.line[i].text, " EV open ") != NULL)
				open = log.line[i].text;
		result(open != NULL && strstr(open, " driver=libserialport ") != NULL &&
		       strstr(open, " device=/dev/ttyS1 ") != NULL && strstr(open, " baud=115200 ") != NULL,
		       "serial-open", "%s", open ? open : "no EV open line");
	}

	/* every packet exactly once, byte-exact, one RX line each */
	struct vm_sent s = { 0 };
	for (unsigned i = 0; i < nsent; i++)
		if (vm_sent_read(&s, sentf[i], port) < 0)
			result(false, "packets", "cannot read %s", sentf[i]);
	size_t got_len, *starts, *idx, nlines;
	uint8_t *got = e2e_concat(&log, port, &got_len, &starts, &idx, &nlines);
	size_t first_diff = 0;
	while (first_diff < got_len && first_diff < s.len && got[first_diff] == s.data[first_diff])
		first_diff++;
	bool exact = got_len == s.len && first_diff == s.len;
	result(exact && s.n > 0, "bytes",
	       "%zu packets, %zu bytes sent; %zu bytes in %zu RX lines of %s%s", s.n, s.len, got_len,
	       nlines, port, exact ? ", identical" : ", DIFFERENT");
	if (!exact)
		printf("  first difference at byte %zu (sent %zu, logged %zu)\n", first_diff, s.len, got_len);
	/*
	 * Exactly one RX line per packet, for every packet the host sent clean. As in
	 * e2e_serial, a wrong boundary is accepted only where the log itself marks it where
	 * the rule puts the mark (e2e_packet_fit: an EV late-delivery of the port dated at
	 * each line that begins inside the packet, and at the line that holds its first or
	 * last byte when that line runs past it). Nothing the host knows and a user does not
	 * (its clock, an OVERRUN of the timer), nor a mark of the packet after, excuses one.
	 */
	size_t nlate = 0, one = 0, ncheck = 0, bad = 0, by_event = 0, unclean = 0;
	for (size_t i = 0; i < log.n; i++)
		nlate += strcmp(log.line[i].src, port) == 0 && strstr(log.line[i].text, " EV late-delivery ") != NULL;
	for (size_t k = 0; k < s.n && s.pkt_off[k] + s.pkt_len[k] <= first_diff && nlines > 0; k++, ncheck++) {
		size_t j, e;
		enum e2e_fit fit = e2e_packet_fit(&log, port, starts, idx, nlines, max_packet, s.pkt_off[k],
						  s.pkt_len[k], &j, &e);

		if (fit == E2E_FIT_ONE) {
			one++;
		} else if (!s.pkt_clean[k]) {
			unclean++;
		} else if (fit == E2E_FIT_MARKED) {
			by_event++;
		} else {
			if (bad < 5)
				printf("  packet %zu (%zu bytes at stream offset %zu, sent %+.1f ms after the "
				       "previous) is RX lines %zu..%zu (log lines %zu..%zu): no EV "
				       "late-delivery where the rule puts its mark\n", k, s.pkt_len[k],
				       s.pkt_off[k], k ? (double)(s.pkt_t[k] - s.pkt_t[k - 1]) / 1e6 : 0.0, j, e,
				       idx[j] + 1, idx[e] + 1);
			bad++;
		}
	}
	if (nlines > 0)
		result(bad == 0 && ncheck == s.n, "packet-boundaries",
		       "%zu of %zu packets are exactly one RX line (%zu RX lines); of the others, %zu "
		       "were not sent clean (the host paused over half a gap inside or under 1.5 "
		       "around), %zu marked where the rule puts the mark (%zu EV late-delivery "
		       "lines), %zu not", one, s.n, nlines, unclean, by_event, nlate, bad);

	/* the parallel port's first IN line against the register the guest read itself */
	{
		char *raw = slurp(dir, "status_reg.txt");
		const char *in = NULL;
		for (size_t i = 0; i < log.n && in == NULL; i++)
			if (strcmp(log.line[i].src, lpt) == 0 && strcmp(log.line[i].kind, "IN") == 0)
				in = log.line[i].text;
		unsigned r = raw ? (unsigned)strtoul(raw, NULL, 16) : 0x100, val = 0x100;
		if (in != NULL)
			val = (unsigned)strtoul(strstr(in, " IN ") + 4, NULL, 16);
		/* libieee1284 reports BUSY as the pin is: the PC register XOR 0x80 */
		result(raw != NULL && in != NULL && val == ((r ^ 0x80) & 0xff), "parallel-in",
		       "first %s IN line: %s; inb(0x379) in the guest read 0x%02x, so want 0x%02x",
		       lpt, in ? in : "none", r, (r ^ 0x80) & 0xff);
	}

	/* the log accounts for every record */
	{
		char why[1024];
		int n = e2e_check_accounting(&log, why, sizeof(why));
		if (n > 0)
			result(true, "accounting", "every record is a line or counted in a DROP line, "
			       "at %d STAT lines", n);
		else
			result(false, "accounting", "%s", n == 0 ? "no STAT line with accounted=" : why);
		/* the clock's accuracy, under the shipped unit's system call filter */
		n = e2e_check_clock(&log, why, sizeof(why));
		if (n >= 0) {
			/* the shipped unit lets the daemon read the clock's state */
			for (size_t i = 0; i < log.n; i++)
				if (strstr(log.line[i].text, " portlogd EV clock synced=unknown ") != NULL) {
					snprintf(why, sizeof(why), "the unit refuses adjtimex: %.200s",
						 log.line[i].text);
					n = -1;
					break;
				}
		}
		result(n >= 0, "clock", "%s", n >= 0 ? "EV clock at every start and after every STAT "
		       "round, adjtimex allowed by the unit" : why);
	}

	/* --- the kernel, the ports' interrupt threads, the strobe */
	if (kver != NULL)
		check_kernel(dir, &log, kver, rt, port, lpt, irq_want);
	if (pulses >= 0)
		check_strobe(&log, lpt, pulses);

	/* --- watchdog (a short run has none: one daemon, from start to stop) */
	size_t starts_n = 0;
	for (size_t i = 0; i < log.n; i++)
		if (strstr(log.line[i].text, " portlogd EV start ") != NULL)
			starts_n++;
	if (no_watchdog) {
		result(starts_n == 1, "restarts-in-log", "%zu EV start lines (want 1: no watchdog in this run)",
		       starts_n);
	} else {
		char *wd = slurp(dir, "watchdog.txt");
		char n[32] = "", rs[32] = "", ls[32] = "", ws[32] = "";
		if (wd) {
			prop(wd, "nrestarts", n, sizeof(n));
			prop(wd, "restart_s", rs, sizeof(rs));
			prop(wd, "logged_s", ls, sizeof(ls));
			prop(wd, "watchdog_sec", ws, sizeof(ws));
		}
		double limit = atof(ws) + margin;
		result(wd != NULL && strcmp(n, "1") == 0 && *rs != '\0' && atof(rs) <= limit, "watchdog",
		       "after SIGSTOP: NRestarts=%s, active again after %s s (WatchdogSec=%s, want <= %.0f s)",
		       n, *rs ? rs : "never", ws, limit);
		result(*ls != '\0', "watchdog-logs", "the restarted daemon wrote EV start after %s s",
		       *ls ? ls : "never");
		char *j = slurp(dir, "journal.txt");
		result(j != NULL && strstr(j, "Watchdog timeout") != NULL, "watchdog-journal",
		       "the journal %s systemd's \"Watchdog timeout\"", j && strstr(j, "Watchdog timeout") ?
		       "has" : "lacks");
		result(starts_n == 2, "restarts-in-log", "%zu EV start lines (want 2: boot, watchdog restart)",
		       starts_n);
		free(j);
		free(wd);
	}

	printf("%s: %d check(s) failed\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}
