/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_strobe.c - what the ADC strobe adds to a sample, through the sim driver: prints numbers, never a verdict. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "conf.h"
#include "drv.h"

#define RUNS 5

extern const struct drv_input_ops drv_input_sim;

/* Nanoseconds per sample, best of RUNS: read alone, or set + read + reset. */
static double per_sample(void *st, bool strobe, unsigned n)
{
	double best = 1e30;

	for (int r = 0; r < RUNS; r++) {
		int64_t t0 = mono_ns();

		for (unsigned i = 0; i < n; i++) {
			if (strobe && drv_input_sim.strobe(st, true) < 0)
				exit(1);
			if (drv_input_sim.read(st) < 0)
				exit(1);
			if (strobe && drv_input_sim.strobe(st, false) < 0)
				exit(1);
		}
		double ns = (double)(mono_ns() - t0) / n;
		best = ns < best ? ns : best;
	}
	return best;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 100000;
	struct drv_input_config c = { .read = DRV_READ_STATUS, .strobe = DRV_STROBE_CONTROL,
				      .strobe_bit = 0, .strobe_high = true };
	char err[CONF_ERR_MAX];
	void *st;
	double plain, strobed;

	snprintf(c.device, sizeof(c.device), "%s/portlogd-bench-strobe-%d.sim",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	if (n == 0 || drv_input_sim.open(&c, &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "usage: bench_strobe [SAMPLES]; %s\n", err);
		return 2;
	}
	plain = per_sample(st, false, n);
	strobed = per_sample(st, true, n);
	drv_input_sim.close(st);
	unlink(c.device);
	printf("sim driver, %u samples, best of %d runs (strobe_us = 0):\n", n, RUNS);
	printf("  read alone              %8.0f ns/sample (one pread)\n", plain);
	printf("  set + read + reset      %8.0f ns/sample (a pread and two pwrites)\n", strobed);
	printf("  the strobe adds         %8.0f ns/sample, %.0f ns per pin write\n",
	       strobed - plain, (strobed - plain) / 2);
	printf("ieee1284 (counted by test_input's libieee1284 mock, not timed here): the strobe "
	       "adds 2 register writes per sample\n  (ieee1284_write_control or _write_data: one "
	       "ppdev ioctl each, with an outb to the port)\n");
	return 0;
}
