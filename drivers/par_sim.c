/* SPDX-License-Identifier: GPL-2.0-or-later */
/* par_sim.c - a simulated parallel port: a small file whose bytes are the pins.
 *
 * Byte 0 is the status register, byte 1 the data register. Another process
 * drives the pins with pwrite(2); the sampler sees the new value at its next
 * tick. Bytes 4-7 (little-endian) are a test hook: that many microseconds of
 * busy waiting in every read, to make a slow port and provoke overruns.
 *
 * With a strobe (`strobe = data:N` or `control:N`) the driver records its
 * pulses, little-endian, so that a test can count them: bytes 8-11 how often
 * the pin was set, 12-15 how often it was reset, 16-19 how many reads came
 * while it was set. One pulse per sample is 8-11 = 12-15 = 16-19 = samples.
 * The counts go on from what the file holds at open.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "drv.h"
#include "irq.h"

#define SIM_SIZE 8
#define SIM_STROBE_OFF 8        /* sets, resets, reads while set: 3 x 4 bytes */

/* The file is read with pread each tick, not mapped: a mapping of a file that
 * someone truncates (`printf x > pins.sim` does, for a moment) raises SIGBUS and
 * would end the daemon; a short read is an error the sampler reports. */
struct sim {
	int fd;
	enum drv_read read;
	bool strobing;              /* the pin is at its active level */
	uint32_t pulses[3];         /* sets, resets, reads while set */
};

static void put_le32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> 8 * i);
}

static uint32_t get_le32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static int sim_open(const struct drv_input_config *cfg, void **state, char *err, size_t errlen)
{
	struct sim *s;
	struct stat st;
	int fd;

	fd = open(cfg->device, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open or create the sim file %s: %s", cfg->device,
			 strerror(e));
		return -e;
	}
	/* a new or short file gets its 8 bytes (zeros: all pins low) */
	if (fstat(fd, &st) < 0 || (st.st_size < SIM_SIZE && ftruncate(fd, SIM_SIZE) < 0)) {
		int e = errno;
		snprintf(err, errlen, "cannot size the sim file %s: %s", cfg->device, strerror(e));
		close(fd);
		return -e;
	}
	s = malloc(sizeof(*s));
	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		return -ENOMEM;
	}
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->read = cfg->read;
	if (cfg->strobe != DRV_STROBE_NONE) {
		uint8_t b[sizeof(s->pulses)] = { 0 };

		/* a shorter file has not counted yet: its missing bytes are zeros */
		if (pread(fd, b, sizeof(b), SIM_STROBE_OFF) < 0) {
			int e = errno;

			snprintf(err, errlen, "cannot read the strobe counts of %s: %s", cfg->device,
				 strerror(e));
			close(fd);
			free(s);
			return -e;
		}
		for (int i = 0; i < 3; i++)
			s->pulses[i] = get_le32(b + 4 * i);
	}
	*state = s;
	return 0;
}

static int sim_read(void *state)
{
	struct sim *s = state;
	uint8_t b[SIM_SIZE];
	ssize_t n = pread(s->fd, b, sizeof(b), 0);
	uint32_t delay;
	uint8_t status, data;

	if (n != (ssize_t)sizeof(b))
		return n < 0 ? -errno : -EIO;   /* cut short: truncated by its writer */
	delay = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
	status = b[0];
	data = b[1];

	if (delay != 0)
		spin_until_ns(mono_ns() + (int64_t)delay * NS_PER_US);
	if (s->strobing)
		s->pulses[2]++;         /* written with the reset that ends the pulse */
	switch (s->read) {
	case DRV_READ_STATUS: return status;
	case DRV_READ_DATA: return data;
	case DRV_READ_BOTH: return status | data << 8;
	}
	return -EINVAL;
}

/* A set writes its count, a reset the resets and the reads while set: two
 * pwrites a sample, each a system call (what a strobe costs here). */
static int sim_strobe(void *state, bool active)
{
	struct sim *s = state;
	uint8_t b[8];
	size_t n = active ? 4 : 8;
	ssize_t w;

	s->strobing = active;
	s->pulses[active ? 0 : 1]++;
	put_le32(b, s->pulses[active ? 0 : 1]);
	put_le32(b + 4, s->pulses[2]);
	w = pwrite(s->fd, b, n, SIM_STROBE_OFF + (active ? 0 : 4));
	if (w != (ssize_t)n)
		return w < 0 ? -errno : -EIO;
	return 0;
}

static int sim_irq(const struct drv_input_config *cfg, const char *root, const char **why)
{
	(void)cfg;
	(void)root;
	*why = IRQ_WHY_FILE;
	return -1;
}

static void sim_check(const struct drv_input_config *cfg, const char *port,
		      struct drv_device_check *chk)
{
	(void)port;
	snprintf(chk->path, sizeof(chk->path), "%s", cfg->device);
	chk->fix[0] = '\0';
	chk->created = true;
}

static void sim_close(void *state)
{
	struct sim *s = state;

	if (s == NULL)
		return;
	close(s->fd);
	free(s);
}

const struct drv_input_ops drv_input_sim = {
	.name = "sim",
	.device_example = "a file",
	.value_bits = drv_read_bits,    /* status, data: 8; status+data: 16 */
	.value_name = NULL,     /* the registers: EV open says the read = word */
	.device_check = sim_check,      /* the file, or a directory to create it in */
	.open = sim_open,       /* open or create the file, size it to 8 bytes */
	.read = sim_read,       /* one pread of the 8 bytes (and the test delay) */
	.strobe = sim_strobe,   /* counts the pulse in the file (a pwrite) */
	.close = sim_close,     /* close */
	.irq = sim_irq,         /* none: a file */
};
