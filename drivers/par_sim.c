/* SPDX-License-Identifier: GPL-2.0-or-later */
/* par_sim.c - a simulated parallel port: a small file whose bytes are the pins.
 *
 * Byte 0 is the status register, byte 1 the data register. Another process
 * drives the pins with pwrite(2); the sampler sees the new value at its next
 * tick. Bytes 4-7 (little-endian) are a test hook: that many microseconds of
 * busy waiting in every read, to make a slow port and provoke overruns.
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

#include "drv.h"

#define SIM_SIZE 8

/* The file is read with pread each tick, not mapped: a mapping of a file that
 * someone truncates (`printf x > pins.sim` does, for a moment) raises SIGBUS and
 * would end the daemon; a short read is an error the sampler reports. */
struct sim {
	int fd;
	enum conf_par_read read;
};

static int sim_open(const struct conf_parallel *cfg, void **state, char *err, size_t errlen)
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
	s->fd = fd;
	s->read = cfg->read;
	*state = s;
	return 0;
}

static void spin_us(uint32_t us)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
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
		spin_us(delay);
	switch (s->read) {
	case CONF_READ_STATUS: return status;
	case CONF_READ_DATA: return data;
	case CONF_READ_BOTH: return status | data << 8;
	}
	return -EINVAL;
}

static void sim_check(const struct conf_parallel *cfg, struct drv_device_check *chk)
{
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
	.value_name = drv_read_name,    /* the read = word */
	.device_check = sim_check,      /* the file, or a directory to create it in */
	.open = sim_open,       /* open or create the file, size it to 8 bytes */
	.read = sim_read,       /* one pread of the 8 bytes (and the test delay) */
	.close = sim_close,     /* close */
};
