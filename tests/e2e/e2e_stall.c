/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_stall.c - the daemon end to end while the machine stalls: every packet boundary proven or marked.
 *
 * Three ptys fed by the simulator while the stall injector (tests/lib/stall.h) stops,
 * 30-200 ms at a time, ten times or more, one of:
 *  - cpu_stalls: the daemon's CPU (its readers pinned to CPU 1, the simulator to CPU 0),
 *    by a SCHED_FIFO 99 busy loop there: a vCPU the host stops;
 *  - tty_stalls: every CPU, by SCHED_FIFO 50 loops: the daemon's readers (97) and the
 *    simulator (60) run, the kernel's tty worker (SCHED_OTHER) does not;
 *  - process_stops: the daemon itself, SIGSTOP then SIGCONT.
 * The ports:
 *  - w: a wire at 9600 baud handing each byte over at its arrival (the simulator's
 *    direct model, delivery = direct), packets of 3-20 bytes a gap and a fraction of a
 *    character apart (gap_us auto, 3.5 characters; silences of 3.6-4.4): a stall of a
 *    few hundred microseconds at the wrong moment merges two of them;
 *  - p: packets of 4-64 bytes written in one or two writes, 9-18 ms apart, gap_us 3000
 *    (the pattern users met: seven packets as one line after a 107 ms hole);
 *  - q: the same a gap and up to 400 us apart.
 * What must hold: every byte is logged once and in order, every record is accounted
 * for; every packet whose timing was certain (below) is one RX line or its wrong
 * boundaries carry the EV late-delivery marks where the rule puts them
 * (e2e_packet_fit): the log's own mark is the only excuse. And the stalls must have
 * decided some boundaries (a wrong one, marked), or the run proved nothing.
 *
 * A packet's timing is certain when, as the simulator measured its writes (a pty's
 * bytes reach the kernel during the write), every silence inside it was shorter than
 * the daemon's gap for sure and the silences around it as long for sure; a packet the
 * simulator wrote late around the gap (its own thread stalled too) gets no verdict, and
 * is counted.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "sim/sim.h"
#include "stall.h"
#include "testutil.h"

#define NPORTS 3
#define MAX_PACKET 4096
#define BAUD 9600
#define PTY_GAP_US 3000

static struct e2e_daemon live;

static int teardown(void **state)
{
	(void)state;
	e2e_kill(&live);
	return 0;
}

/* The silences inside packet k of p (inside), or before it, against the daemon's gap:
 * -1 surely shorter, 1 surely as long, 0 not certain. Wire mode: the planned silence,
 * shrunk (before) or grown (inside) by how late its hand-overs were; plain: before,
 * from the last write's return to this one's start (at least); inside, the
 * simulator's bound. */
static int silence_vs_gap(const struct sim_port *p, size_t k, bool inside, int64_t gap)
{
	const struct sim_packet *pk = &p->pkt[k];
	int64_t lo, hi;

	if (p->cfg.dev.kind != SIM_DEV_NONE) {
		if (inside) {
			hi = pk->max_intra_gap_ns + pk->late_max_ns - pk->late_min_ns;
			return hi < gap ? -1 : 0;
		}
		lo = pk->t_first_mono - pk[-1].t_last_mono - (pk[-1].late_max_ns - pk->late_min_ns);
	} else {
		if (inside)
			return pk->max_intra_gap_ns < gap ? -1 : 0;
		lo = pk->t_first_mono - pk[-1].t_last_mono;
	}
	return lo >= gap ? 1 : 0;
}

static bool certain(const struct sim_port *p, size_t k, int64_t gap)
{
	if (k == 0 || k + 1 >= p->npkt || p->pkt[k].lost > 0)
		return false;
	return silence_vs_gap(p, k, true, gap) < 0 && silence_vs_gap(p, k, false, gap) > 0
	       && silence_vs_gap(p, k + 1, false, gap) > 0;
}

struct tally {
	size_t packets, certain, one, marked, unmarked, marks;
};

/* Port p against the guarantee; its counts into t. */
static void check_port(const struct e2e_log *log, const struct sim_port *p, struct tally *t)
{
	size_t len, *starts, *idx, nlines, sent = p->pkt[p->npkt - 1].off + p->pkt[p->npkt - 1].len;
	uint8_t *got = e2e_concat(log, p->name, &len, &starts, &idx, &nlines);
	long long gap_us = e2e_open_us(log, p->name, "gap_us");
	int64_t gap = gap_us * 1000;

	if (gap_us <= 0)
		fail_msg("%s: no EV open with gap_us=", p->name);
	if (len != sent || memcmp(got, p->data, sent) != 0)
		fail_msg("%s: %zu bytes sent, %zu logged (or other bytes)", p->name, sent, len);
	memset(t, 0, sizeof(*t));
	t->packets = p->npkt;
	for (size_t i = 0; i < log->n; i++)
		t->marks += strcmp(log->line[i].src, p->name) == 0
			    && strstr(log->line[i].text, " EV late-delivery ") != NULL;
	for (size_t k = 0; k < p->npkt; k++) {
		const struct sim_packet *pk = &p->pkt[k];
		enum e2e_fit fit;
		size_t c, e;

		if (!certain(p, k, gap))
			continue;
		t->certain++;
		fit = e2e_packet_fit(log, p->name, starts, idx, nlines, MAX_PACKET, pk->off, pk->len,
				     &c, &e);
		if (fit == E2E_FIT_ONE) {
			t->one++;
			continue;
		}
		if (fit == E2E_FIT_MARKED) {
			t->marked++;
			continue;
		}
		if (t->unmarked++ < 3) {
			printf("# %s: packet %zu (%u bytes at %u) is lines %zu..%zu, unmarked; the "
			       "silence before it %.0f us, after it %.0f us\n", p->name, k, pk->len,
			       pk->off, c, e, (double)(pk->t_first_mono - pk[-1].t_last_mono) / 1e3,
			       (double)(pk[1].t_first_mono - pk->t_last_mono) / 1e3);
			for (size_t l = c > 1 ? c - 2 : 0; l <= e + 1 && l < nlines; l++)
				printf("#   line %zu at %.6f: %zu bytes from %zu\n", l,
				       (double)log->line[idx[l]].t / 1e9, starts[l + 1] - starts[l],
				       starts[l]);
			/* the hand-overs of the lines' bytes, and how late each was written */
			for (size_t d = 0, shown = 0; p->cfg.dev.kind != SIM_DEV_NONE && d < p->ndlv
			     && shown < 40 && t->unmarked == 1; d++)
				if (p->dlv[d].off >= starts[c] && p->dlv[d].off < starts[e + 1] && ++shown)
					printf("#     byte %u due %.6f, written %.0f us late\n", p->dlv[d].off,
					       (double)p->dlv[d].due / 1e9,
					       (double)(p->dlv[d].t_write - p->dlv[d].due) / 1e3);
		}
	}
	printf("# %s (gap_us %lld): %zu packets, %zu of certain timing: %zu one RX line, %zu cut "
	       "wrong with their marks, %zu without; %zu EV late-delivery lines\n", p->name,
	       gap_us, t->packets, t->certain, t->one, t->marked, t->unmarked, t->marks);
	/* most packets keep their timing on this machine: else the run proves little */
	assert_true(t->certain * 2 >= t->packets);
	free(got);
	free(starts);
	free(idx);
}

/* Pins the calling thread (and the simulator's, which inherit it) to cpu. */
static void pin_self(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	assert_int_equal(sched_setaffinity(0, sizeof(s), &s), 0);
}

static void unpin_self(void)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	for (int i = 0; i < CPU_SETSIZE && i < (int)sysconf(_SC_NPROCESSORS_ONLN); i++)
		CPU_SET(i, &s);
	(void)sched_setaffinity(0, sizeof(s), &s);
}

/* One run: the three ports and the daemon while the injector stalls in `mode`. */
static void run(enum stall_kind mode)
{
	struct sim_port p[NPORTS];
	struct sim_cfg cfg[NPORTS];
	char dir[256], conf[300], path[300], text[4096], sum[256];
	const char *pin = mode == STALL_CPU ? "cpu = 1\n" : "";
	struct e2e_log log = { 0 };
	struct stall_cfg sc;
	struct stall st;
	struct tally t[NPORTS];
	uint64_t seed = tu_seed("e2e_stall");
	/* 500 at least: long enough for ten stalls or more at the injector's pauses
	 * (0.3-2 s), whatever PORTLOGD_E2E_PACKETS the sanitizer builds run the others with */
	unsigned packets = tu_env_uint("PORTLOGD_E2E_PACKETS", 10000) / 20;
	size_t wrong = 0, unmarked = 0;
	int status, stalls, rc;

	if (packets < 500)
		packets = 500;
	if (mode == STALL_CPU && sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip();         /* the sender needs a CPU of its own */
	e2e_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/portlogd.log", dir);
	snprintf(text, sizeof(text), "# generated by e2e_stall\n[logger]\nlog_file = %s\n"
		 "timestamp = epoch\nflush_interval_ms = 50\nstat_interval_s = 1\n%s"
		 "[serial w]\ndevice = %s/w\nbaud = %d\ndelivery = direct\n%s"
		 "[serial p]\ndevice = %s/p\ngap_us = %d\nmax_packet = %d\n%s"
		 "[serial q]\ndevice = %s/q\ngap_us = %d\nmax_packet = %d\n%s",
		 path, mode == STALL_CPU ? "flusher_cpu = 1\n" : "", dir, BAUD, pin, dir, PTY_GAP_US,
		 MAX_PACKET, pin, dir, PTY_GAP_US, MAX_PACKET, pin);
	for (unsigned i = 0; i < NPORTS; i++) {
		char link[300];
		static const char *const names[NPORTS] = { "w", "p", "q" };

		snprintf(link, sizeof(link), "%s/%s", dir, names[i]);
		assert_int_equal(sim_port_open(&p[i], names[i], link), 0);
	}
	/* w: 3.5 characters are the gap (3646 us at 9600); silences a tenth to nine
	 * tenths of a character past it */
	cfg[0] = (struct sim_cfg){ .kind = SIM_BINARY, .packets = packets, .min_len = 3,
				   .max_len = 20, .max_frags = 1, .inter_gap_min_us = 3646 + 104,
				   .inter_gap_max_us = 3646 + 938, .gap_us = 3646, .baud = BAUD,
				   .dev = { .kind = SIM_DEV_DIRECT }, .spin_us = 200, .seed = seed };
	cfg[1] = (struct sim_cfg){ .kind = SIM_BINARY, .packets = packets / 2, .min_len = 4,
				   .max_len = 64, .max_frags = 2, .intra_gap_max_us = 200,
				   .inter_gap_min_us = 9000, .inter_gap_max_us = 18000,
				   .gap_us = PTY_GAP_US, .seed = seed + 1 };
	cfg[2] = cfg[1];
	cfg[2].packets = packets;
	cfg[2].inter_gap_min_us = PTY_GAP_US + 50;
	cfg[2].inter_gap_max_us = PTY_GAP_US + 400;
	cfg[2].seed = seed + 2;
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	e2e_write_file(conf, text);
	assert_int_equal(e2e_start(&live, dir, conf), 0);
	assert_int_equal(e2e_wait_ready(&live, 10000), 0);
	for (unsigned i = 0; i < NPORTS; i++)
		assert_int_equal(sim_port_wait_open(&p[i], 5000), 0);

	stall_defaults(&sc);
	sc.mode = mode;
	sc.cpu = 1;
	sc.pid = mode == STALL_STOP ? live.pid : 0;
	sc.pause_min_ms = 150;
	sc.pause_max_ms = 600;
	sc.seed = seed;
	rc = stall_start(&st, &sc);
	if (rc == -EPERM)
		fail_msg("the stall injector may not run SCHED_FIFO: run as root");
	assert_int_equal(rc, 0);
	if (mode == STALL_CPU)
		pin_self(0);
	/* above the tty loops (50), below the daemon's readers (97) */
	rc = sim_run_each(p, NPORTS, cfg, 60);
	unpin_self();
	stalls = stall_stop(&st);
	stall_summary(&st, sum, sizeof(sum));
	printf("# %s\n", sum);
	assert_int_equal(rc, 0);
	tu_sleep_ms(300);       /* the last packets' gaps pass */
	status = e2e_stop(&live, SIGTERM, 10000, NULL);
	live.pid = 0;
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(e2e_read_log(&log, path), 0);
	e2e_expect_accounted(&log);
	for (unsigned i = 0; i < NPORTS; i++) {
		check_port(&log, &p[i], &t[i]);
		wrong += t[i].marked;
		unmarked += t[i].unmarked;
	}
	printf("# %d stalls; %zu packets cut wrong with their marks, %zu without\n", stalls, wrong,
	       unmarked);
	if (unmarked > 0)
		fail_msg("%zu packets cut wrong without an EV late-delivery where the rule puts it",
			 unmarked);
	/* ten stalls or more, and they decided boundaries: else nothing was shown */
	assert_true(stalls >= 10);
	assert_true(wrong > 0);
	stall_free(&st);
	e2e_free_log(&log);
	for (unsigned i = 0; i < NPORTS; i++)
		sim_port_close(&p[i]);
	free(e2e_sh(&status, "rm -rf '%s'", dir));
}

static void cpu_stalls(void **state)
{
	(void)state;
	run(STALL_CPU);
}

static void tty_stalls(void **state)
{
	(void)state;
	run(STALL_TTY);
}

static void process_stops(void **state)
{
	(void)state;
	run(STALL_STOP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(cpu_stalls, teardown),
		cmocka_unit_test_teardown(tty_stalls, teardown),
		cmocka_unit_test_teardown(process_stops, teardown),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("# e2e_stall needs root (the injector's SCHED_FIFO loops): skipped\n");
		return 77;
	}
	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
