/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_replay.c - libFuzzer target: any bytes as a log that portlogd --replay reads.
 *
 * The first byte picks --speed (0, 1, 1e6, 1e-300, 0.001, 3.7) and --dir; the rest
 * is the log, read from a memfd by name (/proc/self/fd/N) as a LOG file is.
 * replay_read must never crash or overflow (UBSan aborts), and what it keeps
 * for the player must hold: every packet's bytes inside the data, its place on
 * the timeline at or after the first and within REPLAY_SPAN_MAX_NS, its
 * character time not negative. What the reader says goes to /dev/null.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "replay.h"

static const double speeds[] = { 0, 1, 1e6, 1e-300, 0.001, 3.7 };

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FILE *null = fopen("/dev/null", "w");

	(void)argc;
	(void)argv;
	/* the reader's messages (fprintf(stderr)) away; libFuzzer keeps its own copy of
	 * the FILE * it prints to, and the sanitizers write to descriptor 2 */
	if (null != NULL)
		stderr = null;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct replay_out out[REPLAY_OUT_MAX] = { { .path = "/dev/null" } };
	struct replay r = { .out = out, .nout = 1 };
	struct replay_tally ty = { 0 };
	char name[64], *logs[1] = { name };
	struct replay_input in = { .logs = logs, .nlogs = 1, .until = INT64_MAX };
	int fd, rc;

	if (size == 0)
		return 0;
	r.speed = speeds[data[0] % (sizeof(speeds) / sizeof(speeds[0]))];
	r.dir = data[0] & 0x80 ? REC_DIR_TX : REC_DIR_MAIN;
	fd = memfd_create("log", MFD_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(write(fd, data + 1, size - 1) == (ssize_t)(size - 1));
	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	rc = replay_read(&r, &in, &ty);
	CHECK(rc == REPLAY_OK || rc == REPLAY_INCOMPLETE || rc == REPLAY_FAILED);
	if (rc != REPLAY_FAILED) {
		CHECK(r.out[0].n > 0 && r.out[0].n <= r.npkt);
		for (size_t k = 0; k < r.out[0].n; k++) {
			const struct replay_pkt *p = &r.pkt[r.out[0].idx[k]];

			CHECK(p->off + p->len <= r.data_len);
			CHECK(p->char_ns >= 0);
			CHECK(p->at_ns >= 0 && p->at_ns <= (int64_t)REPLAY_SPAN_MAX_NS + 2 * INT64_C(1000000000000000));
			CHECK(r.speed > 0 || p->at_ns == 0);
		}
	}
	replay_free(&r);
	close(fd);
	return 0;
}
