/* SPDX-License-Identifier: GPL-2.0-or-later */
/* par_ieee1284.c - input driver for a PC parallel port's registers, through libieee1284.
 *
 * What the values mean. libieee1284 reports the status lines as IEEE 1284
 * levels, not as the PC status register holds them: on a PC-style port the
 * BUSY pin (S7) is inverted by the hardware, and libieee1284 undoes that
 * inversion (ieee1284_read_status(3): "libieee1284 operates on the IEEE 1284
 * values, not the PC-style inverted values"; the ppdev backend returns the
 * register XOR S1284_INVERTED). So with `read = status`:
 *
 *	bit 7  BUSY    1 = pin 11 high  (the raw PC register would read 0)
 *	bit 6  nACK    1 = pin 10 high
 *	bit 5  PERROR  1 = pin 12 high
 *	bit 4  SELECT  1 = pin 13 high
 *	bit 3  nFAULT  1 = pin 15 high
 *	bits 0-2       not status pins; reserved or chip-specific (some chips
 *	               keep an EPP time-out flag in bit 0): use mask = 0xf8
 *
 * Every bit follows its pin's electrical level; XOR with 0x80 (S1284_INVERTED)
 * gives what inb(base + 1) would have read. The data register is not inverted.
 * `read = data` samples the data lines as the port sees them; the driver never
 * changes the port's direction, so on a port left in forward mode that is what
 * the port itself drives, not a peripheral's levels.
 *
 * The strobe (`strobe = data:N | control:N`): the only pin the driver drives,
 * set before the read and reset after it (sampler.c). The control lines go
 * through ieee1284_write_control, which also takes IEEE 1284 levels: it undoes
 * the PC register's inversion of nStrobe, nAutoFd and nSelectIn
 * (C1284_INVERTED), so a bit set is its pin high on all four lines, and the
 * kernel leaves the register's other bits (IRQ enable, direction) alone. The
 * other lines of the register keep the values they had at open.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drv.h"
#include "irq.h"

#ifdef PORTLOGD_IEEE1284
#include <ieee1284.h>

struct par1284 {
	struct parport *port;           /* opened and claimed for our lifetime */
	enum drv_read read;
	enum drv_strobe strobe;        /* the register of the strobe pin, or none */
	unsigned char strobe_on, strobe_off;    /* that register with the pin active, at rest */
};

/* libieee1284 returns E1284_* codes and leaves the OS cause in errno; callers
 * clear errno before the call and pass it here at once, same thread. */
static int e1284_errno(int r, int e)
{
	switch (r) {
	case E1284_NOMEM: return -ENOMEM;
	case E1284_NOTAVAIL: return -ENODEV;
	case E1284_INVALIDPORT: return -ENODEV;
	/* E1284_INIT too: the ppdev backend returns it when open(2) of
	 * /dev/parportN failed, with that errno (EACCES for a missing group). */
	case E1284_SYS:
	case E1284_INIT:
		return e > 0 ? -e : -EIO;
	default: return -EIO;
	}
}

/* "parport0" as it is, "/dev/parport0" by its basename: libieee1284 names
 * ports after /proc/sys/dev/parport, which has no /dev prefix. */
static const char *port_name(const char *device)
{
	const char *slash = strrchr(device, '/');

	return slash != NULL ? slash + 1 : device;
}

static bool is_kernel_port(const char *name)
{
	return strncmp(name, "parport", 7) == 0;
}

static void explain_not_found(const struct parport_list *list, const char *want,
			      char *err, size_t errlen)
{
	size_t n;
	bool kernel = false;

	for (int i = 0; i < list->portc; i++)
		kernel |= is_kernel_port(list->portv[i]->name);
	if (!kernel) {
		/* Without parport in the kernel libieee1284 invents 0x278, 0x378
		 * and 0x3bc (legacy I/O addresses): guesses, not ports. */
		snprintf(err, errlen, "no parallel port %s: the kernel has none registered"
			 " (load the drivers: modprobe parport_pc ppdev; and check the port"
			 " is enabled in the BIOS)", want);
		return;
	}
	n = (size_t)snprintf(err, errlen, "no parallel port %s; the ports are:", want);
	for (int i = 0; i < list->portc && n < errlen; i++)
		n += (size_t)snprintf(err + n, errlen - n, "%s %s", i ? "," : "",
				      list->portv[i]->name);
	if (n < errlen)
		(void)snprintf(err + n, errlen - n, " (set device = one of these)");
}

/* When libieee1284 gives no cause (its backends can fail before any system
 * call, e.g. when detection could not open the node), look at the node. */
static int check_node(const char *name)
{
	char path[DRV_PATH_MAX];

	if (!is_kernel_port(name))
		return -EIO;
	(void)snprintf(path, sizeof(path), "/dev/%s", name);
	return access(path, R_OK | W_OK) < 0 ? -errno : -EIO;
}

/* ppdev registers every node it makes in sysfs, which a private /dev does not hide. */
static bool has_ppdev_class(const char *name)
{
	char path[DRV_PATH_MAX];

	(void)snprintf(path, sizeof(path), "/sys/class/ppdev/%s", name);
	return access(path, F_OK) == 0;
}

/* rc is -errno from open (claim = false) or claim (claim = true). */
static void explain(const char *name, int rc, bool claim, char *err, size_t errlen)
{
	switch (rc) {
	case -EACCES:
	case -EPERM:
		snprintf(err, errlen, "permission denied on /dev/%s: the service user needs"
			 " the group lp (usermod -aG lp USER), or read-write access to"
			 " /dev/%s", name, name);
		break;
	case -ENOENT:
		if (has_ppdev_class(name))
			/* ppdev made the node, but this process does not see it */
			snprintf(err, errlen, "/dev/%s exists (ppdev has it) but this process"
				 " cannot see it: it runs with a private /dev, as"
				 " PrivateDevices=yes in its unit or a drop-in makes"
				 " (systemctl cat portlogd); remove that", name);
		else
			snprintf(err, errlen, "parallel port %s has no /dev/%s: load ppdev"
				 " (modprobe ppdev)", name, name);
		break;
	case -EBUSY:
		snprintf(err, errlen, "parallel port %s is busy: another program or driver"
			 " has claimed it exclusively; stop it (fuser -v /dev/%s)", name, name);
		break;
	case -ENOMEM:
		snprintf(err, errlen, "out of memory opening parallel port %s", name);
		break;
	default:
		snprintf(err, errlen, "cannot %s parallel port %s: %s", claim ? "claim" : "open",
			 name, strerror(-rc));
		break;
	}
}

static int p1284_read(void *state)
{
	struct par1284 *p = state;
	int s = 0, d = 0;

	errno = 0;
	if (p->read & DRV_READ_STATUS) {
		s = ieee1284_read_status(p->port);
		if (s < 0)
			return e1284_errno(s, errno);
	}
	if (p->read & DRV_READ_DATA) {
		d = ieee1284_read_data(p->port);
		if (d < 0)
			return e1284_errno(d, errno);
	}
	switch (p->read) {
	case DRV_READ_STATUS: return s & 0xff;
	case DRV_READ_DATA: return d & 0xff;
	case DRV_READ_BOTH: return (s & 0xff) | (d & 0xff) << 8;
	}
	return -EINVAL;
}

/* Writes the strobe's register with the pin active or at rest. libieee1284's
 * write calls return nothing: ppdev's ioctl on a claimed port does not fail. */
static int p1284_strobe(void *state, bool active)
{
	struct par1284 *p = state;
	unsigned char v = active ? p->strobe_on : p->strobe_off;

	if (p->strobe == DRV_STROBE_CONTROL)
		ieee1284_write_control(p->port, v);
	else
		ieee1284_write_data(p->port, v);
	return 0;
}

/* The strobe's register values from what it holds now; the pin goes to rest. */
static int strobe_setup(struct par1284 *p, const struct drv_input_config *cfg,
			const char *name, char *err, size_t errlen)
{
	unsigned char bit = (unsigned char)(1u << cfg->strobe_bit);
	int cur;

	p->strobe = cfg->strobe;
	if (cfg->strobe == DRV_STROBE_NONE)
		return 0;
	errno = 0;
	if (cfg->strobe == DRV_STROBE_CONTROL) {
		cur = ieee1284_read_control(p->port);
		if (cur < 0) {
			int rc = e1284_errno(cur, errno);

			snprintf(err, errlen, "cannot read the control lines of parallel port %s "
				 "for strobe = control:%u: %s", name, cfg->strobe_bit, strerror(-rc));
			return rc;
		}
		cur &= 0x0f;    /* the four control lines */
	} else {
		cur = ieee1284_read_data(p->port);
		if (cur < 0)
			cur = 0;        /* a port that cannot read back its data lines: start low */
	}
	p->strobe_on = (unsigned char)(cfg->strobe_high ? cur | bit : cur & ~bit);
	p->strobe_off = (unsigned char)(cfg->strobe_high ? cur & ~bit : cur | bit);
	return p1284_strobe(p, false);
}

static int p1284_open(const struct drv_input_config *cfg, void **state, char *err,
		      size_t errlen)
{
	const char *want = port_name(cfg->device);
	struct parport_list list = { 0 };
	struct parport *port = NULL;
	struct par1284 *p;
	int r, rc;

	*state = NULL;
	if (cfg->read != DRV_READ_STATUS && cfg->read != DRV_READ_DATA
	    && cfg->read != DRV_READ_BOTH) {
		snprintf(err, errlen, "read = %d is not status, data or status+data", (int)cfg->read);
		return -EINVAL;
	}
	p = malloc(sizeof(*p));
	if (p == NULL) {
		snprintf(err, errlen, "out of memory opening parallel port %s", want);
		return -ENOMEM;
	}
	errno = 0;
	r = ieee1284_find_ports(&list, 0);
	if (r < 0) {
		rc = e1284_errno(r, errno);
		snprintf(err, errlen, "cannot list the parallel ports: %s", strerror(-rc));
		free(p);
		return rc;
	}
	for (int i = 0; i < list.portc && port == NULL; i++)
		if (strcmp(list.portv[i]->name, want) == 0)
			port = list.portv[i];
	if (port == NULL) {
		explain_not_found(&list, want, err, errlen);
		ieee1284_free_ports(&list);
		free(p);
		return -ENODEV;
	}
	/* Flags 0. ieee1284_release(3) advises F1284_EXCL for a port that is
	 * never released, but ppdev refuses exclusive access while any other
	 * driver (lp) is registered on the port, which is the common case. */
	errno = 0;
	r = ieee1284_open(port, 0, NULL);
	if (r < 0) {
		rc = e1284_errno(r, errno);
		if (rc == -EIO)
			rc = check_node(want);
		explain(want, rc, false, err, errlen);
		goto fail_list;
	}
	/* Claimed once for the daemon's lifetime: read() must be one register
	 * access, and a claim may sleep. ppdev's PPCLAIM waits while another
	 * driver holds the port, and fails with ENXIO when one holds it
	 * exclusively: that is "busy" to the user. */
	errno = 0;
	r = ieee1284_claim(port);
	if (r < 0) {
		rc = e1284_errno(r, errno);
		if (rc == -ENXIO)
			rc = -EBUSY;
		explain(want, rc, true, err, errlen);
		(void)ieee1284_close(port);     /* undoing our open: nothing to report */
		goto fail_list;
	}
	/* The ports are reference counted: an open port outlives the list. */
	ieee1284_free_ports(&list);
	p->port = port;
	p->read = cfg->read;
	p->strobe = DRV_STROBE_NONE;
	/* One sample now, so a port that cannot give these registers (no
	 * bidirectional data lines: E1284_NOTAVAIL) fails at start-up, not on
	 * every tick. read_data(3): if the first read works, later ones do. */
	rc = p1284_read(p);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read the %s of parallel port %s: %s%s",
			 cfg->read == DRV_READ_STATUS ? "status register" : cfg->read == DRV_READ_DATA
			 ? "data register" : "status and data registers", want, strerror(-rc),
			 rc == -ENODEV && (cfg->read & DRV_READ_DATA) ? " (no bidirectional data"
			 " lines: set the port to PS/2, EPP or ECP in the BIOS, or use read = status)"
			 : "");
		ieee1284_release(port);
		(void)ieee1284_close(port);
		free(p);
		return rc;
	}
	rc = strobe_setup(p, cfg, want, err, errlen);
	if (rc < 0) {
		ieee1284_release(port);
		(void)ieee1284_close(port);
		free(p);
		return rc;
	}
	*state = p;
	return 0;
fail_list:
	ieee1284_free_ports(&list);
	free(p);
	return rc;
}

static void p1284_check(const struct drv_input_config *cfg, const char *port,
			struct drv_device_check *chk)
{
	(void)port;
	/* libieee1284 goes through ppdev: parport0 is /dev/parport0 */
	snprintf(chk->path, sizeof(chk->path), "/dev/%s", port_name(cfg->device));
	snprintf(chk->fix, sizeof(chk->fix), "modprobe parport_pc ppdev (is the port enabled in "
		 "the firmware?)");
	chk->created = false;
}

/* parport_pc's interrupt, when it has one (irq= of the module): the sampler
 * polls and never waits for it. */
static int p1284_irq(const struct drv_input_config *cfg, const char *root, const char **why)
{
	return irq_of_parport(root, port_name(cfg->device), why);
}

static void p1284_close(void *state)
{
	struct par1284 *p = state;

	if (p == NULL)
		return;
	ieee1284_release(p->port);
	(void)ieee1284_close(p->port);  /* only fails for a port not open: a bug, not an event */
	free(p);
}

const struct drv_input_ops drv_input_ieee1284 = {
	.name = "ieee1284",
	.device_example = "parport0",
	.value_bits = drv_read_bits,    /* status, data: 8; status+data: 16 */
	.value_name = NULL,     /* the registers: EV open says the read = word */
	.device_check = p1284_check,    /* the ppdev node /dev/parportN */
	.open = p1284_open,     /* find_ports + open + claim (kept claimed) + one probe read */
	.read = p1284_read,     /* read_status and/or read_data, no other call */
	.strobe = p1284_strobe, /* write_control or write_data of the strobe's register */
	.close = p1284_close,   /* release + close */
	.irq = p1284_irq,       /* /proc/sys/dev/parport/NAME/irq */
};
#else
/* Built without libieee1284 (cmake -DPORTLOGD_IEEE1284=OFF): the table stays, so
 * that a config naming the driver is told it is not compiled in (the config's
 * checks say so before they look at a strobe). */
const struct drv_input_ops drv_input_ieee1284 = {
	.name = "ieee1284",
	.device_example = "parport0",
};
#endif
