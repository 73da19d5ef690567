/* SPDX-License-Identifier: GPL-2.0-or-later */
/* drv.c - the input drivers' registry, and choosing a serial driver for a device. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/serial.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "drv.h"

/* UNIX98 pty slaves: majors 136-143 (Documentation/admin-guide/devices.txt). */
static int is_pty(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
		return 0;
	return major(st.st_rdev) >= 136 && major(st.st_rdev) <= 143;
}

/*
 * Is the port free? Asked before the driver opens it, because libserialport's
 * sp_open configures the tty at once (VMIN 0, its own defaults), the termios is
 * the tty's, not the descriptor's, and writing the FIFO's trigger level empties
 * the FIFO: opening a port that tio, minicom or another logger holds, to find out
 * only then that it is busy, would change the holder's settings and lose its
 * bytes (every retry, every 500 ms). So our own descriptor (the keeper) takes the
 * flock first and keeps it while the port is open; the driver's descriptor then
 * gets TIOCEXCL. Returns the keeper or -errno.
 */
static int lock_port(const char *path)
{
	int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = drv_serial_flock(fd);
	if (rc < 0) {
		close(fd);      /* the holder has it open: not the last close, DTR stays */
		return rc;
	}
	return fd;
}

const char *drv_kept_name(enum drv_kept k)
{
	switch (k) {
	case DRV_KEPT_YES: return "kept";
	case DRV_KEPT_HUNG_UP: return "hung-up";
	case DRV_KEPT_OTHER: return "other-device";
	default: return NULL;
	}
}

/*
 * A keeper handed over from before a restart: still open? A tty that hung up
 * meanwhile (an adapter unplugged, a pty's master closed) says POLLHUP or POLLERR
 * for good: whatever came before is gone with it, whichever device the config's
 * path names now. Closed then, and -1.
 */
static int still_open(struct drv_serial *port, int kept, unsigned kept_trigger)
{
	struct pollfd pfd = { .fd = kept, .events = POLLIN };

	if (kept < 0)
		return -1;
	if (poll(&pfd, 1, 0) >= 0 && (pfd.revents & (POLLHUP | POLLERR | POLLNVAL)) == 0)
		return kept;
	port->kept = DRV_KEPT_HUNG_UP;
	drv_serial_forget(kept, kept_trigger);
	return -1;
}

/* The keeper to hold the port with: the one kept, if it is of this device (and its
 * flock still ours), or a new one. */
static int keeper_of(struct drv_serial *port, int kept, unsigned kept_trigger, const char *real)
{
	struct stat a, b;

	if (kept >= 0) {
		port->kept = DRV_KEPT_OTHER;
		if (fstat(kept, &a) == 0 && stat(real, &b) == 0 && S_ISCHR(a.st_mode)
		    && a.st_rdev == b.st_rdev && drv_serial_flock(kept) == 0) {
			/* the exclusive mode is the tty's, set by the driver's descriptor of
			 * the last process: off, so that the driver can open it again (and
			 * set it again) */
			(void)ioctl(kept, TIOCNXCL);
			port->kept = DRV_KEPT_YES;
			return kept;
		}
		/* another device's: its FIFO level goes back, as at its last close */
		drv_serial_forget(kept, kept_trigger);
	}
	return lock_port(real);
}

int drv_serial_open(const char *device, const struct drv_serial_config *cfg, int kept,
		    unsigned kept_trigger, struct drv_serial *port, const char **note)
{
	char real[PATH_MAX];
	bool pty;
	int rc;

	if (note != NULL)
		*note = NULL;
	port->ops = NULL;
	port->state = NULL;
	port->fd = -1;
	port->lock_fd = -1;
	port->stored = false;
	port->kept = DRV_KEPT_NONE;
	kept = still_open(port, kept, kept_trigger);
	/* libserialport looks the port up under /sys/class/tty by its name, so
	 * /dev/serial/by-id/... links must be resolved first. */
	rc = realpath(device, real) == NULL ? -errno
	     : strlen(real) >= sizeof(port->path) ? -ENAMETOOLONG : 0;
	if (rc < 0) {
		if (kept >= 0) {
			/* the config's device is gone: the kept one is not it */
			drv_serial_forget(kept, kept_trigger);
			port->kept = DRV_KEPT_OTHER;
		}
		return rc;
	}
	strcpy(port->path, real);
	pty = is_pty(real);
	delivery_find("", real, pty, -1, &cfg->delivery, &port->dlv);
	port->lock_fd = keeper_of(port, kept, kept_trigger, real);
	if (port->lock_fd < 0) {
		rc = port->lock_fd;
		port->lock_fd = -1;
		return rc;
	}
	/* the port is ours and still unconfigured, unless it stayed open (its FIFO may
	 * hold bytes that came meanwhile): a refusal is kept in dlv.trigger_err, and
	 * the reader says it (EV rt-missing) */
	if (!pty && port->kept != DRV_KEPT_YES)
		(void)delivery_set_trigger("", real, cfg->rx_trigger, &port->dlv);
	port->ops = pty ? &drv_serial_tty : &drv_serial_sp;
	if (pty && note != NULL)
		*note = "pty";
	rc = port->ops->open(cfg, port->path, &port->state, &port->fd);
	if (rc < 0) {
		/* a driver may have set fd before a later step failed and closed it:
		 * a reader that polls a stale number could read another port's bytes */
		port->ops = NULL;
		port->state = NULL;
		port->fd = -1;
		drv_serial_close(port);
		return rc;
	}
	port->low_latency = drv_serial_low_latency(port->fd);
	port->latency_timer = drv_ftdi_latency("", port->path, &port->latency_err);
	delivery_reread("", real, port->latency_timer, &port->dlv);
	return 0;
}

void drv_serial_close(struct drv_serial *port)
{
	if (port->ops != NULL)
		port->ops->close(port->state, port->fd);
	if (port->lock_fd >= 0) {
		close(port->lock_fd);
		/* closed by everyone now (unless the service manager keeps it for the
		 * next process): writing the level empties a FIFO no one reads */
		if (!port->stored)
			delivery_restore("", port->path, &port->dlv);
	}
	port->ops = NULL;
	port->state = NULL;
	port->fd = -1;
	port->lock_fd = -1;
	port->stored = false;
}

void drv_serial_forget(int keeper, unsigned trigger_found)
{
	struct delivery d = { .trigger_found = trigger_found };
	char link[64], path[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", keeper);
	n = readlink(link, path, sizeof(path) - 1);
	close(keeper);
	if (n > 0 && trigger_found > 0) {
		path[n] = '\0';
		delivery_restore("", path, &d);
	}
}

int drv_serial_flock(int fd)
{
	/* what tio, minicom and picocom check */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	return 0;
}

/* The registry, gpsd style; in this order the config's messages list the drivers. */
extern const struct drv_input_ops drv_input_ieee1284;   /* par_ieee1284.c */
extern const struct drv_input_ops drv_input_lines;      /* par_lines.c */
extern const struct drv_input_ops drv_input_sim;        /* par_sim.c */

const struct drv_input_ops *const drv_inputs[] = {
	&drv_input_ieee1284,
	&drv_input_lines,
	&drv_input_sim,
	NULL,
};

const struct drv_input_ops *drv_input_find(const char *name)
{
	for (const struct drv_input_ops *const *d = drv_inputs; *d != NULL; d++)
		if (strcmp((*d)->name, name) == 0)
			return *d;
	return NULL;
}

unsigned drv_read_bits(const struct drv_input_config *cfg)
{
	return cfg->read == DRV_READ_BOTH ? 16 : 8;
}

int drv_lines_map(int tiocm)
{
	return (tiocm & TIOCM_CTS ? 1 : 0) | (tiocm & TIOCM_DSR ? 2 : 0)
	       | (tiocm & TIOCM_CAR ? 4 : 0) | (tiocm & TIOCM_RNG ? 8 : 0);
}

int drv_serial_low_latency(int fd)
{
	struct serial_struct ss;

	/* ENOTTY (a pty), EINVAL: the driver has no serial_struct */
	if (ioctl(fd, TIOCGSERIAL, &ss) < 0)
		return errno == ENOTTY || errno == EINVAL ? 0 : -errno;
	if (ss.flags & ASYNC_LOW_LATENCY)
		return 1;
	ss.flags |= ASYNC_LOW_LATENCY;
	if (ioctl(fd, TIOCSSERIAL, &ss) < 0)
		return -errno;
	if (ioctl(fd, TIOCGSERIAL, &ss) < 0)
		return -errno;
	return ss.flags & ASYNC_LOW_LATENCY ? 1 : -ENOTSUP;
}

static int read_int_file(const char *path, int *value)
{
	char buf[32];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	if (sscanf(buf, "%d", value) != 1)
		return -EIO;
	return 0;
}

int drv_ftdi_latency(const char *sysroot, const char *devpath, int *set_err)
{
	const char *name = strrchr(devpath, '/');
	char path[PATH_MAX];
	int ms, fd, rc;

	*set_err = 0;
	name = name != NULL ? name + 1 : devpath;
	if (strncmp(name, "ttyUSB", 6) != 0)
		return -ENODEV;
	snprintf(path, sizeof(path), "%s/sys/bus/usb-serial/devices/%s/latency_timer", sysroot,
		 name);
	rc = read_int_file(path, &ms);
	if (rc == -ENOENT)
		return -ENODEV;     /* a USB adapter of another make: no such timer */
	if (rc < 0 || ms <= 1)
		return rc < 0 ? rc : ms;
	/* as `echo 1 >` does: sysfs takes O_TRUNC, a fixture file needs it */
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0 || write(fd, "1\n", 2) != 2) {
		*set_err = errno ? errno : EIO;
		if (fd >= 0)
			close(fd);
		return ms;
	}
	close(fd);
	return read_int_file(path, &ms) == 0 ? ms : 1;
}
