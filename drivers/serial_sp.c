/* SPDX-License-Identifier: GPL-2.0-or-later */
/* serial_sp.c - serial driver for real ports, through libserialport. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <termios.h>

#include <libserialport.h>

#include "drv.h"

/* libserialport returns SP_ERR_* codes; read the OS error at once, same thread. */
static int sp_errno(enum sp_return r)
{
	int e;

	switch (r) {
	case SP_ERR_ARG: return -EINVAL;
	case SP_ERR_MEM: return -ENOMEM;
	case SP_ERR_SUPP: return -ENOTSUP;
	case SP_ERR_FAIL:
		e = sp_last_error_code();
		return e > 0 ? -e : -EIO;
	default: return -EIO;
	}
}

/*
 * Two settings libserialport 0.1.1 (Debian 12) does not leave as we need them,
 * measured with tcgetattr on a 16550A here:
 * - it returns SP_OK from sp_set_flowcontrol(RTSCTS) yet leaves CRTSCTS off, so
 *   the port would silently run without the handshake the config asks for;
 * - it sets VMIN = 0, so an empty non-blocking read returns 0, which is how a
 *   hang-up reads; the reader needs VMIN = 1, VTIME = 0 (empty: EAGAIN).
 * Read the termios back, set them ourselves, fail if they do not stick.
 */
static int enforce_termios(int fd, enum drv_flow flow)
{
	tcflag_t want_c = flow == DRV_FLOW_RTSCTS ? CRTSCTS : 0;
	tcflag_t want_i = flow == DRV_FLOW_XONXOFF ? (IXON | IXOFF) : 0;
	struct termios t;

	if (tcgetattr(fd, &t) < 0)
		return -errno;
	t.c_cflag = (t.c_cflag & ~(tcflag_t)CRTSCTS) | want_c;
	t.c_iflag = (t.c_iflag & ~(tcflag_t)(IXON | IXOFF)) | want_i;
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(fd, TCSANOW, &t) < 0 || tcgetattr(fd, &t) < 0)
		return -errno;
	if ((t.c_cflag & CRTSCTS) != want_c || (t.c_iflag & (IXON | IXOFF)) != want_i
	    || t.c_cc[VMIN] != 1 || t.c_cc[VTIME] != 0)
		return -ENOTSUP;
	return 0;
}

static int sp_open_port(const struct drv_serial_config *cfg, const char *path, void **state,
			int *fd)
{
	static const enum sp_parity parity[] = {
		['N'] = SP_PARITY_NONE, ['O'] = SP_PARITY_ODD, ['E'] = SP_PARITY_EVEN,
		['M'] = SP_PARITY_MARK, ['S'] = SP_PARITY_SPACE,
	};
	static const enum sp_flowcontrol flow[] = {
		[DRV_FLOW_NONE] = SP_FLOWCONTROL_NONE, [DRV_FLOW_RTSCTS] = SP_FLOWCONTROL_RTSCTS,
		[DRV_FLOW_XONXOFF] = SP_FLOWCONTROL_XONXOFF,
		[DRV_FLOW_DTRDSR] = SP_FLOWCONTROL_DTRDSR,
	};
	struct sp_port *port = NULL;
	enum sp_return r;
	int rc, flags;

	/* drv.c holds the flock on a descriptor of its own: the port is ours */
	*fd = -1;
	r = sp_get_port_by_name(path, &port);
	if (r != SP_OK)
		return r == SP_ERR_ARG ? -ENODEV : sp_errno(r);
	/* read-write: some USB adapters only raise DTR/RTS when opened for writing */
	if ((r = sp_open(port, SP_MODE_READ_WRITE)) != SP_OK
	    || (r = sp_set_baudrate(port, (int)cfg->baud)) != SP_OK
	    || (r = sp_set_bits(port, (int)cfg->data_bits)) != SP_OK
	    || (r = sp_set_parity(port, parity[(unsigned char)cfg->parity])) != SP_OK
	    || (r = sp_set_stopbits(port, (int)cfg->stop_bits)) != SP_OK
	    || (r = sp_set_flowcontrol(port, flow[cfg->flow])) != SP_OK
	    || (r = sp_get_port_handle(port, fd)) != SP_OK)
		rc = sp_errno(r);
	else
		rc = ioctl(*fd, TIOCEXCL) < 0 ? -errno : 0;    /* plain opens by others: EBUSY */
	if (rc == 0)
		rc = enforce_termios(*fd, cfg->flow);
	if (rc == 0) {
		flags = fcntl(*fd, F_GETFL);
		if (flags < 0 || fcntl(*fd, F_SETFL, flags | O_NONBLOCK) < 0)
			rc = -errno;
	}
	if (rc == 0)
		rc = fcntl(*fd, F_SETFD, FD_CLOEXEC) < 0 ? -errno : 0;
	if (rc < 0) {
		sp_close(port);     /* closes *fd; harmless on a port that did not open */
		sp_free_port(port);
		*fd = -1;
		return rc;
	}
	*state = port;
	return 0;
}

static void sp_close_port(void *state, int fd)
{
	struct sp_port *port = state;

	(void)fd;   /* owned by the sp_port */
	if (port == NULL)
		return;
	(void)sp_close(port);  /* nothing to do about a failing close of a dead port */
	sp_free_port(port);
}

const struct drv_serial_ops drv_serial_sp = {
	.name = "libserialport",
	.open = sp_open_port,       /* sp_get_port_by_name + sp_open + sp_set_* (drv.c holds the flock) */
	.close = sp_close_port,     /* sp_close + sp_free_port */
};
