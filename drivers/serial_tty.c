/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_tty.c - serial driver with plain termios, for pseudo-terminals.
 * libserialport 0.1.1 refuses ports it cannot find under /sys/class/tty, and a
 * pty has no entry there; a pty also has no wire, so baud and framing only
 * matter to the gap and character-time arithmetic, not to the kernel. */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "drv.h"

static const struct { unsigned baud; speed_t speed; } speeds[] = {
	{ 50, B50 }, { 75, B75 }, { 110, B110 }, { 134, B134 }, { 150, B150 },
	{ 200, B200 }, { 300, B300 }, { 600, B600 }, { 1200, B1200 },
	{ 1800, B1800 }, { 2400, B2400 }, { 4800, B4800 }, { 9600, B9600 },
	{ 19200, B19200 }, { 38400, B38400 }, { 57600, B57600 },
	{ 115200, B115200 }, { 230400, B230400 }, { 460800, B460800 },
	{ 500000, B500000 }, { 576000, B576000 }, { 921600, B921600 },
	{ 1000000, B1000000 }, { 1152000, B1152000 }, { 1500000, B1500000 },
	{ 2000000, B2000000 }, { 2500000, B2500000 }, { 3000000, B3000000 },
	{ 3500000, B3500000 }, { 4000000, B4000000 },
};

unsigned drv_tty_speed(unsigned baud)
{
	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].baud == baud)
			return speeds[i].speed;
	return B0;      /* not a termios speed: leave the speed alone */
}

unsigned drv_tty_baud(unsigned speed)
{
	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].speed == speed)
			return speeds[i].baud;
	return 0;
}

int drv_tty_raw(int fd, const struct drv_serial_config *cfg, bool flow)
{
	struct termios tio;
	speed_t speed = drv_tty_speed(cfg->baud);

	if (tcgetattr(fd, &tio) < 0)
		return -errno;
	cfmakeraw(&tio);
	tio.c_cflag &= ~(tcflag_t)(CSIZE | PARENB | PARODD | CSTOPB | CRTSCTS | CMSPAR);
	/* The kernel keeps a pty at CS8 without parity (pty_set_termios) and glibc's
	 * tcsetattr reports EINVAL when asked for anything else, so data bits and
	 * parity only count in the character-time arithmetic here. */
	tio.c_cflag |= CS8 | CLOCAL | CREAD;
	if (cfg->stop_bits == 2)
		tio.c_cflag |= CSTOPB;
	if (flow && cfg->flow == DRV_FLOW_RTSCTS)
		tio.c_cflag |= CRTSCTS;
	if (flow && cfg->flow == DRV_FLOW_XONXOFF)
		tio.c_iflag |= IXON | IXOFF;
	tio.c_cc[VMIN] = 1;
	tio.c_cc[VTIME] = 0;
	if (speed != B0 && (cfsetispeed(&tio, speed) < 0 || cfsetospeed(&tio, speed) < 0))
		return -errno;
	if (tcsetattr(fd, TCSANOW, &tio) < 0)
		return -errno;
	return 0;
}

static int tty_open(const struct drv_serial_config *cfg, const char *path, void **state,
		    int *fd)
{
	int rc;

	*state = NULL;
	*fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	/* drv.c's keeper holds the flock; TIOCEXCL stops plain opens by anyone but root */
	rc = ioctl(*fd, TIOCEXCL) < 0 ? -errno : 0;
	if (rc == 0)
		rc = drv_tty_raw(*fd, cfg, true);
	if (rc < 0) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

static void tty_close(void *state, int fd)
{
	(void)state;
	if (fd >= 0)
		close(fd);
}

const struct drv_serial_ops drv_serial_tty = {
	.name = "termios",
	.open = tty_open,       /* open(2) + TIOCEXCL + raw termios (drv.c holds the flock) */
	.close = tty_close,     /* close(2) */
};
