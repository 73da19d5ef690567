/* SPDX-License-Identifier: GPL-2.0-or-later */
/* par_lines.c - input driver for a serial port's four modem input lines, as a 4-bit port.
 *
 * Bit 0 CTS, bit 1 DSR, bit 2 DCD, bit 3 RI; 1 = the line is asserted, as
 * TIOCMGET reports it (the UART's MSR; RS-232 inverts the voltage, the kernel
 * does not). `read =` does not apply: there is one set of lines.
 *
 * Unlike the serial drivers this one takes no flock and no TIOCEXCL: it opens
 * read-only and never reads a byte or changes termios, so sharing the port is
 * allowed, read-only. Beware the other way round: a program (or a [serial]
 * section of this daemon) that set TIOCEXCL first makes our open fail with
 * EBUSY for any user without CAP_SYS_ADMIN; to log the lines of a port the
 * daemon also reads, use `lines = on` in its [serial] section.
 *
 * Opening a real UART that nobody has open raises DTR and RTS (the kernel's
 * first-open default); closing it drops them again if HUPCL is set.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "drv.h"
#include "irq.h"

struct lines {
	int fd;
};


static int lines_read(void *state)
{
	struct lines *l = state;
	int m;

	if (ioctl(l->fd, TIOCMGET, &m) < 0)
		return -errno;
	return drv_lines_map(m);
}

static int lines_open(const struct drv_input_config *cfg, void **state, char *err,
		      size_t errlen)
{
	struct lines *l;
	int fd, m, e;

	*state = NULL;
	/* O_NONBLOCK: a port without CLOCAL would otherwise wait for DCD */
	fd = open(cfg->device, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		if (e == EACCES || e == EPERM)
			snprintf(err, errlen, "permission denied on %s: the service user needs"
				 " the group dialout (usermod -aG dialout USER), or read access"
				 " to %s", cfg->device, cfg->device);
		else if (e == EBUSY)
			snprintf(err, errlen, "%s is held exclusively (TIOCEXCL) by another"
				 " program or a [serial] section; for a port portlogd reads,"
				 " use lines = on there", cfg->device);
		else
			snprintf(err, errlen, "cannot open %s: %s", cfg->device, strerror(e));
		return -e;
	}
	if (ioctl(fd, TIOCMGET, &m) < 0) {
		e = errno;
		if (e == ENOTTY || e == EINVAL)
			snprintf(err, errlen, "%s has no modem lines (TIOCMGET: %s): a"
				 " pseudo-terminal or a file has none; use a real serial port",
				 cfg->device, strerror(e));
		else
			snprintf(err, errlen, "cannot read the modem lines of %s: %s",
				 cfg->device, strerror(e));
		close(fd);
		return -e;
	}
	l = malloc(sizeof(*l));
	if (l == NULL) {
		close(fd);
		snprintf(err, errlen, "out of memory opening %s", cfg->device);
		return -ENOMEM;
	}
	l->fd = fd;
	*state = l;
	return 0;
}

static void lines_close(void *state)
{
	struct lines *l = state;

	if (l == NULL)
		return;
	close(l->fd);
	free(l);
}

static unsigned lines_bits(const struct drv_input_config *cfg)
{
	(void)cfg;
	return 4;
}

static void lines_check(const struct drv_input_config *cfg, const char *port,
			struct drv_device_check *chk)
{
	snprintf(chk->path, sizeof(chk->path), "%s", cfg->device);
	snprintf(chk->fix, sizeof(chk->fix), "plug it in, or correct [parallel %s] device", port);
	chk->created = false;
}

static int lines_irq(const struct drv_input_config *cfg, const char *root, const char **why)
{
	return irq_of_device(root, cfg->device, why);
}

const struct drv_input_ops drv_input_lines = {
	.name = "lines",
	.device_example = "/dev/ttyS0",
	.value_bits = lines_bits,       /* CTS DSR DCD RI: 4 */
	.value_name = "lines",          /* whatever read = says */
	.device_check = lines_check,    /* the tty */
	.open = lines_open,     /* open(2) read-only, no lock; check TIOCMGET works */
	.read = lines_read,     /* ioctl(TIOCMGET), CTS DSR DCD RI to bits 0-3 */
	.strobe = NULL,         /* no output pin: the port is only watched, shared */
	.close = lines_close,   /* close(2) */
	.irq = lines_irq,       /* the UART's (a USB adapter has none of its own) */
};
