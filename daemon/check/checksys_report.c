/* SPDX-License-Identifier: GPL-2.0-or-later */
/* checksys_report.c - portlogd --check-system's report: every check in order, one line each, the totals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksys.h"

static const char *const level_word[] = {
	[CHECKSYS_OK] = "OK", [CHECKSYS_WARN] = "WARN", [CHECKSYS_FAIL] = "FAIL",
};

/* ---- the report ---- */

void checksys_print(FILE *out, const struct checksys_result *r, int width)
{
	fprintf(out, "%-4s %-*s %s\n", level_word[r->level], width, r->name, r->text);
}

typedef void (*check_fn)(const struct checksys *, struct checksys_result *);

int checksys_run(const struct checksys *cs, FILE *out)
{
	static const check_fn system_checks[] = {
		checksys_config, checksys_kernel_rt, checksys_rt_throttle, checksys_cpufreq,
		checksys_cpuidle, checksys_cpu_dma_latency, checksys_smt, checksys_isolation,
		checksys_irqbalance, checksys_rt_tasks, checksys_tty_worker, checksys_sensors,
		checksys_clock_sensor,
		checksys_rlimit_rtprio,
		checksys_rlimit_memlock, checksys_memory, checksys_threads, checksys_clocksource,
		checksys_clock, checksys_apparmor,
	};
	const size_t nsys = sizeof(system_checks) / sizeof(system_checks[0]);
	const struct conf *c = cs->conf;
	unsigned count[3] = { 0 }, nser = cs->have_conf ? c->nserial : 0;
	unsigned npar = cs->have_conf ? c->nparallel : 0;
	/* all results first, so that the name column fits the longest port name; 1 of
	 * the metrics file; per serial port: 5 of its device, and CHECKSYS_TX_MAX of its
	 * tap's second port or 1 of pass */
	struct checksys_result *r = calloc(nsys + 1 + (5 + CHECKSYS_TX_MAX) * nser + 2 * npar,
					   sizeof(*r));
	size_t n = 0;
	int width = 14;

	if (r == NULL) {
		fprintf(out, "portlogd: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < nsys; i++)
		system_checks[i](cs, &r[n++]);
	n += checksys_metrics_file(cs, &r[n]);
	for (unsigned i = 0; i < nser; i++) {
		checksys_serial_device(cs, &c->serial[i], &r[n++]);
		n += checksys_serial_low_latency(cs, &c->serial[i], &r[n]);
		n += checksys_serial_ftdi(cs, &c->serial[i], &r[n]);
		n += checksys_serial_delivery(cs, &c->serial[i], &r[n]);
		n += checksys_serial_irq(cs, &c->serial[i], &r[n]);
		n += checksys_serial_tx(cs, &c->serial[i], &r[n]);
		n += checksys_serial_pass(cs, &c->serial[i], &r[n]);
	}
	for (unsigned i = 0; i < npar; i++) {
		checksys_parallel_device(cs, &c->parallel[i], &r[n++]);
		n += checksys_parallel_irq(cs, &c->parallel[i], &r[n]);
	}
	for (size_t i = 0; i < n; i++)
		width = (int)strlen(r[i].name) > width ? (int)strlen(r[i].name) : width;
	for (size_t i = 0; i < n; i++) {
		checksys_print(out, &r[i], width);
		count[r[i].level]++;
	}
	free(r);
	fprintf(out, "%u OK, %u WARN, %u FAIL\n", count[CHECKSYS_OK], count[CHECKSYS_WARN],
		count[CHECKSYS_FAIL]);
	return count[CHECKSYS_FAIL] > 0 ? 1 : 0;
}
