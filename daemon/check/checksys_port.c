/* SPDX-License-Identifier: GPL-2.0-or-later */
/* checksys_port.c - portlogd --check-system: the checks of each configured port. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksys_internal.h"
#include "delivery.h"
#include "drv.h"
#include "irq.h"

#define ASYNC_LOW_LATENCY_FLAG 0x2000u  /* 1 << ASYNCB_LOW_LATENCY, linux/tty_flags.h */

/* ---- per port ---- */

/* "/dev/serial/by-id/../../ttyUSB0" -> "/dev/ttyUSB0", in place: drops "." and
 * empty components and each ".." with the one before it (never above "/"). */
static void normalize(char *path)
{
	char *out = path, *p = path;

	while (*p != '\0') {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.')) {
			/* nothing to keep */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (out > path && *--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, p, n);
			out += n;
		}
		p += n;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
}

/* Follows symbolic links of the last component inside the root: an absolute
 * target is taken from the root, a relative one from the link's directory.
 * out gets the resolved path below the root ("/dev/ttyUSB0"). */
static int resolve(const struct checksys *cs, const char *dev, char *out, size_t len)
{
	char cur[PATH_MAX], full[PATH_MAX], target[PATH_MAX];

	snprintf(cur, sizeof(cur), "%s", dev);
	snprintf(out, len, "%s", dev);
	for (int hop = 0; hop < 40; hop++) {
		ssize_t n;
		char *slash;

		path_at(cs, full, sizeof(full), "%s", cur);
		n = readlink(full, target, sizeof(target) - 1);
		if (n < 0) {
			if (cur[0] == '/')
				normalize(cur);
			snprintf(out, len, "%s", cur);
			return errno == EINVAL || errno == ENOENT ? 0 : -errno;
		}
		target[n] = '\0';
		slash = strrchr(cur, '/');
		if (target[0] == '/' || slash == NULL) {
			snprintf(cur, sizeof(cur), "%s", target);
		} else {
			slash[1] = '\0';
			if (strlen(cur) + (size_t)n >= sizeof(cur))
				return -ENAMETOOLONG;
			memcpy(cur + strlen(cur), target, (size_t)n + 1);
		}
	}
	return -ELOOP;
}

/* A device (or file) the daemon opens read-write: exists, and this user may. */
static void device_access(const struct checksys *cs, const char *name, const char *dev,
			  const char *missing_fix, struct checksys_result *r)
{
	char rel[PATH_MAX], full[PATH_MAX], owner[128], shown[PATH_MAX + 8] = "";
	struct stat st;
	int e = -resolve(cs, dev, rel, sizeof(rel));

	path_at(cs, full, sizeof(full), "%s", rel);
	if (strcmp(rel, dev) != 0)
		snprintf(shown, sizeof(shown), " -> %s", rel);
	if (e == 0 && stat(full, &st) < 0)
		e = errno;
	if (e != 0) {
		set(r, CHECKSYS_FAIL, name, "%s%s: %s; fix: %s", dev, shown,
		    e == ENOENT ? "no such device" : strerrorname_np(e), missing_fix);
		return;
	}
	describe_owner(&st, owner, sizeof(owner));
	if (access(full, R_OK | W_OK) < 0) {
		set(r, CHECKSYS_FAIL, name, "%s%s (%s): uid %u cannot read and write it; fix: add "
		    "the service user to the device's group (SupplementaryGroups= in the unit) or "
		    "a udev rule that grants it", dev, shown, owner, (unsigned)getuid());
		return;
	}
	set(r, CHECKSYS_OK, name, "%s%s: readable and writable by uid %u (%s)", dev, shown,
	    (unsigned)getuid(), owner);
}

static void port_name(char *out, size_t len, const char *port, const char *suffix)
{
	snprintf(out, len, "port:%s%s", port, suffix);
}

/* A serial port's device: `device`, or with tx its tap's second port (tx_device),
 * whose checks are named port:NAME:tx... */
static const char *serial_dev(const struct conf_serial *s, bool tx)
{
	return tx ? s->tx_device : s->device;
}

static void serial_device_at(const struct checksys *cs, const struct conf_serial *s, bool tx,
			     struct checksys_result *r)
{
	char name[CHECKSYS_NAME_MAX], fix[CONF_NAME_MAX + 96];

	port_name(name, sizeof(name), s->name, tx ? ":tx" : "");
	snprintf(fix, sizeof(fix), "plug it in, or correct [serial %s] %s (ls -l "
		 "/dev/serial/by-id/)", s->name, tx ? "tx_device" : "device");
	device_access(cs, name, serial_dev(s, tx), fix, r);
}

void checksys_serial_device(const struct checksys *cs, const struct conf_serial *s,
			    struct checksys_result *r)
{
	serial_device_at(cs, s, false, r);
}

/* The resolved device of a port, below the root; false when it does not exist. */
static bool resolved_device(const struct checksys *cs, const char *dev, char *rel, size_t len,
			    struct stat *st)
{
	char full[PATH_MAX];

	if (resolve(cs, dev, rel, len) < 0)
		return false;
	path_at(cs, full, sizeof(full), "%s", rel);
	return stat(full, st) == 0;
}

static bool serial_low_latency_at(const struct checksys *cs, const struct conf_serial *s,
				  bool tx, struct checksys_result *r)
{
	char name[CHECKSYS_NAME_MAX], rel[PATH_MAX], flags[64], dir[PATH_MAX];
	const char *base;
	struct stat st;

	if (!resolved_device(cs, serial_dev(s, tx), rel, sizeof(rel), &st))
		return false;   /* port:NAME says it is missing */
	port_name(name, sizeof(name), s->name, tx ? ":tx:low-latency" : ":low-latency");
	base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	/* sysfs "flags" is what TIOCGSERIAL returns, without opening the port */
	if (strncmp(rel, "/dev/pts/", 9) == 0 || read_at(cs, flags, sizeof(flags),
							 "/sys/class/tty/%s/flags", base) < 0) {
		path_at(cs, dir, sizeof(dir), "/sys/bus/usb-serial/devices/%s", base);
		set(r, CHECKSYS_OK, name, "n/a: %s is not a UART%s", rel,
		    access(dir, F_OK) == 0 ? " (USB serial, see ftdi-latency)" : "");
		return true;
	}
	/* no WARN: any user who may open the port may set this flag, and portlogd does */
	if (strtoul(flags, NULL, 16) & ASYNC_LOW_LATENCY_FLAG)
		set(r, CHECKSYS_OK, name, "%s: ASYNC_LOW_LATENCY set (flags %s)", rel, flags);
	else
		set(r, CHECKSYS_OK, name, "%s: ASYNC_LOW_LATENCY not set yet (flags %s); portlogd "
		    "sets it when it opens the port (EV open low_latency=on)", rel, flags);
	return true;
}

bool checksys_serial_low_latency(const struct checksys *cs, const struct conf_serial *s,
				 struct checksys_result *r)
{
	return serial_low_latency_at(cs, s, false, r);
}

static bool serial_ftdi_at(const struct checksys *cs, const struct conf_serial *s, bool tx,
			   struct checksys_result *r)
{
	char name[CHECKSYS_NAME_MAX], rel[PATH_MAX], path[PATH_MAX], val[32];
	const char *base;
	struct stat st;

	if (!resolved_device(cs, serial_dev(s, tx), rel, sizeof(rel), &st))
		return false;
	base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	if (read_at(cs, val, sizeof(val), "/sys/bus/usb-serial/devices/%s/latency_timer",
		    base) < 0)
		return false;   /* not an FTDI adapter */
	port_name(name, sizeof(name), s->name, tx ? ":tx:ftdi-latency" : ":ftdi-latency");
	path_at(cs, path, sizeof(path), "/sys/bus/usb-serial/devices/%s/latency_timer", base);
	if (strcmp(val, "1") == 0)
		set(r, CHECKSYS_OK, name, "%s: FTDI latency_timer = 1 ms", base);
	else if (access(path, W_OK) == 0)
		set(r, CHECKSYS_OK, name, "%s: FTDI latency_timer = %s ms; portlogd sets it to 1 ms "
		    "when it opens the port", base, val);
	else
		set(r, CHECKSYS_WARN, name, "%s: FTDI latency_timer = %s ms and uid %u cannot write "
		    "it, so portlogd cannot lower it: the adapter holds received bytes that long "
		    "before it sends them over USB; fix: the udev rule ACTION==\"add\", "
		    "SUBSYSTEM==\"usb-serial\", DRIVERS==\"ftdi_sio\", ATTR{latency_timer}=\"1\" "
		    "(or echo 1 > /sys/bus/usb-serial/devices/%s/latency_timer as root, until the "
		    "next plug-in)", base, val, (unsigned)getuid(), base);
	return true;
}

bool checksys_serial_ftdi(const struct checksys *cs, const struct conf_serial *s,
			  struct checksys_result *r)
{
	return serial_ftdi_at(cs, s, false, r);
}

/*
 * What stands between the port's wire and the reader (drivers/delivery.c), as the
 * reader will find it at open: a UART whose FIFO hands bytes over in batches is
 * made direct where portlogd may write its trigger level; where not, or on an
 * adapter, the port's boundaries are judged in wire time, and the row says what
 * that costs (the gap it resolves, the time within which a next packet's boundary
 * is inferred and marked).
 */
static bool serial_delivery_at(const struct checksys *cs, const struct conf_serial *s, bool tx,
			       struct checksys_result *r)
{
	char name[CHECKSYS_NAME_MAX], rel[PATH_MAX], path[PATH_MAX], val[32];
	const char *base;
	struct delivery d;
	struct reasm_dev m;
	struct stat st;
	int latency = -1;
	int64_t gap;

	if (!resolved_device(cs, serial_dev(s, tx), rel, sizeof(rel), &st))
		return false;   /* port:NAME says it is missing */
	port_name(name, sizeof(name), s->name, tx ? ":tx:delivery" : ":delivery");
	base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	if (read_at(cs, val, sizeof(val), "/sys/bus/usb-serial/devices/%s/latency_timer",
		    base) >= 0)
		latency = atoi(val);
	delivery_find(cs->root, rel, strncmp(rel, "/dev/pts/", 9) == 0, latency,
		      &s->tty.delivery, &d);
	delivery_reread(cs->root, rel, latency, &d);
	m = delivery_model(&d, s->char_ns);
	gap = delivery_gap(&d, s->gap_ns, s->gap_us == 0, s->char_ns) / 1000;
	path_at(cs, path, sizeof(path), "/sys/class/tty/%s/rx_trig_bytes", base);
	if (d.configured) {
		set(r, CHECKSYS_OK, name, "delivery = %s in the config (%s): boundaries judged "
		    "in wire time, gap %lld us", delivery_conf_text(&s->tty.delivery, val,
								   sizeof(val)),
		    d.what, (long long)gap);
	} else if (d.kind == DELIVERY_FIFO && d.trigger > 1 && s->tty.rx_trigger != DELIVERY_TRIGGER_KEEP
		   && access(path, W_OK) == 0) {
		set(r, CHECKSYS_OK, name, "%s: receive trigger %u now; portlogd sets %d when it "
		    "opens the port (EV open rx_trigger=), and puts %u back", d.what, d.trigger,
		    s->tty.rx_trigger > 0 ? s->tty.rx_trigger : 1, d.trigger);
	} else if (d.kind == DELIVERY_FIFO && d.trigger > 1) {
		set(r, CHECKSYS_WARN, name, "%s: receive trigger %u, %s: the FIFO holds bytes up to "
		    "%lld us unseen; boundaries are judged in wire time (gap %lld us), a boundary "
		    "within %lld us of the packet before is inferred and marked (EV late-delivery "
		    "case=held); fix: %s", d.what, d.trigger,
		    s->tty.rx_trigger == DELIVERY_TRIGGER_KEEP ? "kept (rx_trigger = keep)"
		    : "and this user cannot write rx_trig_bytes",
		    (long long)(m.hold_ns / 1000), (long long)gap,
		    (long long)((m.hold_ns + m.blur_ns) / 1000 + gap),
		    s->tty.rx_trigger == DELIVERY_TRIGGER_KEEP ? "rx_trigger = auto"
		    : "the package's udev rule (60-portlogd.rules gives group portlogd "
		      "rx_trig_bytes), or echo 1 > /sys/class/tty/<port>/rx_trig_bytes as root");
	} else if (d.kind == DELIVERY_FIFO && d.trigger == 0) {
		set(r, CHECKSYS_WARN, name, "%s: a %u-byte FIFO whose receive trigger level Linux "
		    "does not show: taken as the whole FIFO, so bytes may wait %lld us unseen and "
		    "the gap is %lld us; fix: delivery = fifo:N with the level the card's driver "
		    "sets (its manual, or its module parameters)", d.what, d.fifo,
		    (long long)(m.hold_ns / 1000), (long long)gap);
	} else if (d.kind == DELIVERY_USB && d.latency_ms >= 0) {
		set(r, CHECKSYS_OK, name, "%s: USB adapter holding a byte up to %u us (its latency "
		    "timer and a USB frame): boundaries judged in wire time, gap %lld us", d.what,
		    d.hold_us, (long long)gap);
	} else if (d.kind == DELIVERY_USB) {
		set(r, CHECKSYS_WARN, name, "%s: USB adapter whose hold Linux does not show: taken as "
		    "%u us until its traffic shows it (EV delivery), so the gap is %lld us meanwhile "
		    "and a line that may hold a shorter silence of the gap asked for is marked; fix: "
		    "portlogd --calibrate %s --baud %u through a loopback plug (service stopped) "
		    "prints the delivery = line to put in [serial %s], or an FTDI adapter (latency "
		    "timer 1 ms)", d.what, d.hold_us, (long long)gap, rel, s->tty.baud, s->name);
	} else if (strcmp(d.what, "unknown") == 0) {
		set(r, CHECKSYS_WARN, name, "%s: Linux shows neither a UART's FIFO nor a USB adapter: "
		    "taken as handing each byte over as it comes; fix: delivery = fifo:N or usb:MS "
		    "if the device holds bytes", rel);
	} else {
		set(r, CHECKSYS_OK, name, "%s%s: each byte reaches the reader as it comes", d.what,
		    d.kind == DELIVERY_FIFO ? " at receive trigger 1"
		    : strcmp(d.what, "pty") != 0 ? " without a FIFO" : "");
	}
	return true;
}

bool checksys_serial_delivery(const struct checksys *cs, const struct conf_serial *s,
			      struct checksys_result *r)
{
	return serial_delivery_at(cs, s, false, r);
}

bool checksys_serial_pass(const struct checksys *cs, const struct conf_serial *s,
			  struct checksys_result *r)
{
	char name[CHECKSYS_NAME_MAX], full[PATH_MAX], dir[PATH_MAX], *slash;
	struct stat st;

	if (s->pass[0] == '\0')
		return false;
	port_name(name, sizeof(name), s->name, ":pass");
	path_at(cs, full, sizeof(full), "/dev/ptmx");
	if (access(full, R_OK | W_OK) < 0) {
		set(r, CHECKSYS_FAIL, name, "/dev/ptmx: %s: uid %u cannot make a pty; fix: "
		    "DeviceAllow=/dev/ptmx rw in the unit (the shipped one has it), and a /dev "
		    "with ptys", strerrorname_np(errno), (unsigned)getuid());
		return true;
	}
	path_at(cs, full, sizeof(full), "%s", s->pass_path);
	if (lstat(full, &st) == 0 && !S_ISLNK(st.st_mode)) {
		set(r, CHECKSYS_FAIL, name, "%s exists and is not a symbolic link; fix: remove it, "
		    "or set [serial %s] pass to another path", s->pass_path, s->name);
		return true;
	}
	/* the link's directory, or the nearest one above it that exists */
	snprintf(dir, sizeof(dir), "%s", s->pass_path);
	do {
		slash = strrchr(dir, '/');
		if (slash == NULL)
			break;
		*(slash == dir ? slash + 1 : slash) = '\0';
		path_at(cs, full, sizeof(full), "%s", dir);
	} while (stat(full, &st) < 0 && slash != dir);
	if (access(full, W_OK | X_OK) < 0 || !files_can_be_made(full))
		set(r, CHECKSYS_FAIL, name, "%s: cannot make the link %s: %s is not writable by uid "
		    "%u (%s); fix: let the service user write there (the unit's RuntimeDirectory "
		    "is %s), or choose another path", s->pass_path, s->pass_path, dir,
		    (unsigned)getuid(), errno != 0 ? strerrorname_np(errno) : "a read-only or "
		    "kernel file system", CONF_PASS_DIR);
	else
		set(r, CHECKSYS_OK, name, "%s: the link to a new pty can be made (%s writable); "
		    "/dev/ptmx usable", s->pass_path, dir);
	return true;
}

/* What a port's interrupt is not, in words. */
static const char *irq_none_text(const char *why)
{
	if (strcmp(why, IRQ_WHY_PTY) == 0)
		return "a pseudo-terminal has no interrupt";
	if (strcmp(why, IRQ_WHY_USB) == 0)
		return "a USB adapter has no interrupt of its own (its bytes come with the USB host "
		       "controller's, shared with every USB device): portlogd leaves that alone";
	if (strcmp(why, IRQ_WHY_FILE) == 0)
		return "a simulated port has no interrupt";
	return "no interrupt line (irq 0, or parport_pc loaded without irq=): nothing to set";
}

/* The port whose consumer (reader or sampler) runs at prio on cpu, and whose
 * threads portlogd sets to want (0: leaves them). */
struct irq_row {
	const char *port, *consumer;    /* "gps", "reader" */
	const char *row;                /* ":irq", or ":tx:irq" for a tap's second port */
	int irq, prio, cpu, want;
	bool parallel;
};

/* The priority verdict on threads t[0..n): 0 OK, 1 WARN; text and fix appended. */
static int irq_prio_verdict(const struct checksys *cs, const struct irq_row *w,
			    const struct irq_thread *t, int n, char *text, size_t tl, char *fix,
			    size_t fl)
{
	int low = 100, lowi = 0;
	bool cap = has_cap(cs, CAP_SYS_NICE_BIT) == 1;
	size_t k = (size_t)snprintf(text, tl, "irq %d: ", w->irq);

	for (int i = 0; i < n; i++) {
		int p = t[i].policy == SCHED_FIFO || t[i].policy == SCHED_RR ? t[i].prio : 0;

		k += (size_t)snprintf(text + k, k < tl ? tl - k : 0, "%s%s (pid %d) %s %d",
				      i ? ", " : "", t[i].comm, t[i].pid, p ? "SCHED_FIFO" : "SCHED_OTHER", p);
		if (p < low) {
			low = p;
			lowi = i;
		}
	}
	if (k >= tl)
		k = tl - 1;
	if (w->prio <= 0) {
		snprintf(text + k, tl - k, ": the %s is SCHED_OTHER, every IRQ thread comes first",
			 w->consumer);
		return 0;
	}
	if (w->parallel) {
		int eff = w->want > 0 ? w->want : low;

		if (eff < w->prio) {
			snprintf(text + k, tl - k, ", below the sampler's %d%s: it cannot delay a "
				 "sample (the sampler polls the registers and needs no interrupt)",
				 w->prio, w->want > 0 ? " once portlogd sets it" : "");
			return 0;
		}
		snprintf(text + k, tl - k, ", at or above the sampler's %d: its handler can delay "
			 "a sample, which needs no interrupt", w->prio);
		snprintf(fix, fl, "irq_priority = off and chrt -f -p 50 %d, or irq_priority = %d",
			 t[lowi].pid, w->prio - 1);
		return 1;
	}
	if (low > w->prio) {
		snprintf(text + k, tl - k, ", above the reader's %d", w->prio);
		return 0;
	}
	if (w->want > w->prio && cap) {
		snprintf(text + k, tl - k, ", not above the reader's %d; portlogd sets SCHED_FIFO %d "
			 "at open", w->prio, w->want);
		return 0;
	}
	if (w->want > w->prio) {
		snprintf(text + k, tl - k, ", not above the reader's %d, and portlogd cannot raise "
			 "it to %d (no CAP_SYS_NICE)", w->prio, w->want);
		snprintf(fix, fl, "AmbientCapabilities=CAP_SYS_NICE, or run as root, or chrt -f -p "
			 "%d %d after each open", w->want, t[lowi].pid);
		return 1;
	}
	snprintf(text + k, tl - k, ", not above the reader's %d: a busy reader, or any real-time "
		 "task between them, holds back the bytes it feeds", w->prio);
	snprintf(fix, fl, "[serial %s] irq_priority = auto (or %d), or chrt -f -p %d %d", w->port,
		 w->prio < 99 ? w->prio + 1 : 99, w->prio < 99 ? w->prio + 1 : 99, t[lowi].pid);
	return 1;
}

/* No thread to be seen: 0 OK, 1 WARN. */
static int irq_nothread_verdict(const struct checksys *cs, const struct irq_row *w, char *text,
				size_t tl, char *fix, size_t fl)
{
	if (!irq_forced_threads(cs->root)) {
		snprintf(text, tl, "irq %d is not threaded (no PREEMPT_RT, no threadirqs): its "
			 "handler runs in hard interrupt context, before any thread; irq_priority "
			 "has nothing to set", w->irq);
		return 0;
	}
	if (irq_proc_hidden(cs->root)) {
		snprintf(text, tl, "irq %d: its threads cannot be seen: /proc is mounted with "
			 "hidepid (ProtectProc=invisible), which hides kernel threads", w->irq);
		snprintf(fix, fl, "ProtectProc=default in the unit (the shipped unit has it)");
		return 1;
	}
	if (w->parallel || w->prio <= 0) {
		snprintf(text, tl, "irq %d: no thread running%s", w->irq, w->parallel ? ""
			 : " (the reader is SCHED_OTHER: every IRQ thread comes first)");
		return 0;
	}
	if (w->want > w->prio && has_cap(cs, CAP_SYS_NICE_BIT) == 1) {
		snprintf(text, tl, "irq %d: its thread starts when the port is opened (a UART "
			 "requests its interrupt then); portlogd sets it to SCHED_FIFO %d, above the "
			 "reader's %d", w->irq, w->want, w->prio);
		return 0;
	}
	snprintf(text, tl, "irq %d: its thread starts when the port is opened, at SCHED_FIFO 50 "
		 "unless set%s, and the reader runs at %d", w->irq, w->want > w->prio ?
		 "; portlogd cannot set it (no CAP_SYS_NICE)" : "", w->prio);
	if (w->want > w->prio)
		snprintf(fix, fl, "AmbientCapabilities=CAP_SYS_NICE, or run as root");
	else if (w->prio >= 50)
		snprintf(fix, fl, "[serial %s] irq_priority = auto", w->port);
	else
		return 0;
	return 1;
}

/* A reader pinned to a CPU its interrupt does not go to: every byte crosses CPUs. */
static int irq_affinity_verdict(const struct checksys *cs, const struct irq_row *w, char *text,
				size_t tl, char *fix, size_t fl)
{
	struct cpus shown = { 0 };
	char list[256];
	cpu_set_t aff;

	if (w->parallel || w->cpu < 0 || !irq_affinity(cs->root, w->irq, &aff))
		return 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET((size_t)c, &aff))
			cpus_add(&shown, c);
	cpus_format(&shown, list, sizeof(list));
	if (CPU_COUNT(&aff) == 1 && CPU_ISSET((size_t)w->cpu, &aff)) {
		snprintf(text, tl, "; irq %d goes to CPU %d, the reader's", w->irq, w->cpu);
		return 0;
	}
	snprintf(text, tl, "; irq %d goes to CPUs %s, the reader runs on CPU %d: a byte's "
		 "wake-up may cross CPUs (an interrupt between them, and a wake-up from idle if "
		 "its CPU sleeps)", w->irq, list, w->cpu);
	snprintf(fix, fl, "echo %d > /proc/irq/%d/smp_affinity_list (after each boot; with "
		 "irqbalance, IRQBALANCE_BANNED_CPULIST too)", w->cpu, w->irq);
	return 1;
}

static void irq_check(const struct checksys *cs, const struct irq_row *w, const char *why,
		      struct checksys_result *r)
{
	char name[CHECKSYS_NAME_MAX], text[CHECKSYS_TEXT_MAX] = "", aff[512] = "";
	char fix[256] = "", fix2[256] = "";
	struct irq_thread t[IRQ_THREADS_MAX];
	int n, bad;

	port_name(name, sizeof(name), w->port, w->row);
	if (w->irq < 0) {
		set(r, CHECKSYS_OK, name, "n/a: %s", irq_none_text(why));
		return;
	}
	n = irq_threads(cs->root, w->irq, t, IRQ_THREADS_MAX);
	if (n < 0) {
		set(r, CHECKSYS_WARN, name, "irq %d: its threads cannot be looked for: /proc cannot "
		    "be listed (%s); fix: %s", w->irq, strerrorname_np(-n), unlisted_fix(-n));
		return;
	}
	bad = n > 0 ? irq_prio_verdict(cs, w, t, n, text, sizeof(text), fix, sizeof(fix))
	      : irq_nothread_verdict(cs, w, text, sizeof(text), fix, sizeof(fix));
	bad |= irq_affinity_verdict(cs, w, aff, sizeof(aff), fix2, sizeof(fix2)) << 1;
	if (bad == 0)
		set(r, CHECKSYS_OK, name, "%s%s", text, aff);
	else
		set(r, CHECKSYS_WARN, name, "%s%s; fix: %s%s%s", text, aff, fix,
		    bad == 3 ? "; and " : "", fix2);
}

/* The interrupt of the port's device, or (tx) of its tap's second port, whose
 * reader runs at the port's priority and CPU and gets the same irq_priority. */
static bool serial_irq_at(const struct checksys *cs, const struct conf_serial *s, bool tx,
			  struct checksys_result *r)
{
	char rel[PATH_MAX];
	const char *why = IRQ_WHY_NONE;
	struct stat st;
	struct irq_row w = { .port = s->name, .consumer = "reader", .row = tx ? ":tx:irq" : ":irq",
			     .prio = s->priority, .cpu = s->cpu, .want = irq_wanted_serial(s) };

	if (!resolved_device(cs, serial_dev(s, tx), rel, sizeof(rel), &st))
		return false;   /* port:NAME (port:NAME:tx) says it is missing */
	w.irq = irq_of_tty(cs->root, rel, &why);
	irq_check(cs, &w, why, r);
	return true;
}

bool checksys_serial_irq(const struct checksys *cs, const struct conf_serial *s,
			 struct checksys_result *r)
{
	return serial_irq_at(cs, s, false, r);
}

unsigned checksys_serial_tx(const struct checksys *cs, const struct conf_serial *s,
			    struct checksys_result *r)
{
	unsigned n = 0;

	if (s->tx_device[0] == '\0')
		return 0;
	serial_device_at(cs, s, true, &r[n++]);
	n += serial_low_latency_at(cs, s, true, &r[n]);
	n += serial_ftdi_at(cs, s, true, &r[n]);
	n += serial_delivery_at(cs, s, true, &r[n]);
	n += serial_irq_at(cs, s, true, &r[n]);
	return n;
}

bool checksys_parallel_irq(const struct checksys *cs, const struct conf_parallel *p,
			   struct checksys_result *r)
{
	const char *why = IRQ_WHY_NONE;
	struct irq_row w = { .port = p->name, .consumer = "sampler", .row = ":irq",
			     .prio = p->priority, .cpu = p->cpu, .want = irq_wanted_parallel(p),
			     .parallel = true };

	w.irq = irq_of_parallel(cs->root, p, &why);
	irq_check(cs, &w, why, r);
	return true;
}

void checksys_parallel_device(const struct checksys *cs, const struct conf_parallel *p,
			      struct checksys_result *r)
{
	char name[CHECKSYS_NAME_MAX], dev[PATH_MAX], full[PATH_MAX];
	struct drv_device_check chk;
	char *slash;

	port_name(name, sizeof(name), p->name, "");
	p->driver->device_check(&p->in, p->name, &chk);
	path_at(cs, full, sizeof(full), "%s", chk.path);
	if (!chk.created || access(full, F_OK) == 0) {
		device_access(cs, name, chk.path, chk.fix, r);
		return;
	}
	snprintf(dev, sizeof(dev), "%s", chk.path);
	slash = strrchr(dev, '/');
	if (slash != NULL)
		*(slash == dev ? slash + 1 : slash) = '\0';
	path_at(cs, full, sizeof(full), "%s", dev);
	if (access(full, W_OK | X_OK) < 0)
		set(r, CHECKSYS_FAIL, name, "%s: cannot create it, directory %s: %s; fix: create "
		    "the directory and let the service user write to it", chk.path, dev,
		    strerrorname_np(errno));
	else
		set(r, CHECKSYS_OK, name, "%s: will be created (directory %s writable)", chk.path,
		    dev);
}
