/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_export.c - portlogd --export and --replay of logs dated past a 32-bit time_t's 2038.
 *
 * export_main and replay_main, the code behind portlogd --export and --replay, on small
 * logs written by hand: the pcapng packet's timestamp and the VCD's time base are the
 * log's, to the nanosecond; the replay plays packets on both sides of 2038-01-19T03:14:08Z
 * and in 2040 in order, with nothing doubted. Unit tests, so that tests/pkg/arch.sh runs
 * them on armhf and i386 too (e2e_export and e2e_replay read and play the same kind of
 * logs through the real binary, on amd64).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "export.h"
#include "replay.h"

/* 2040-02-29T12:00:00Z */
#define T2040 2214129600LL

static const char log_2040[] =
	"2040-02-29T12:00:00.000000000Z lpt0 EV open driver=sim device=/x read=status mask=0xf8\n"
	"2040-02-29T12:00:00.100000000Z lpt0 IN 0x80 0x80 1\n"
	"2040-02-29T12:00:00.200000000Z plc EV open device=/dev/pts/0 driver=termios note=pty "
	"baud=9600 format=8N1 gap_us=4010\n"
	"2040-02-29T12:00:01.000000000Z lpt0 IN 0x88 0x08 900\n"
	"2040-02-29T12:00:01.500000000Z plc RX 3 010203 \"\\x01\\x02\\x03\"\n";

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* The whole file, NUL-terminated; its length in *len. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int run_export(const char *format, const char *out, const char *since, const char *log)
{
	char *argv[] = { "portlogd", "--export", (char *)format, "-o", (char *)out, "--since",
			 (char *)since, (char *)log, NULL };

	return export_main(8, argv);
}

/* portlogd --export FORMAT --since SINCE of log_2040, in a directory of its own: the output
 * (malloc'd), its length in *len. */
static char *export_2040(const char *format, const char *since, size_t *len)
{
	char root[] = "/tmp/portlogd-test-export-XXXXXX", log[64], out[64], *text;

	assert_non_null(mkdtemp(root));
	snprintf(log, sizeof(log), "%s/portlogd.log", root);
	snprintf(out, sizeof(out), "%s/out.%s", root, format);
	put(log, log_2040);
	assert_int_equal(run_export(format, out, since, log), EXPORT_OK);
	text = slurp(out, len);
	unlink(log);
	unlink(out);
	rmdir(root);
	return text;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The packet's timestamp (if_tsresol 9: ns) and its RTAC header's seconds, big-endian. */
static void pcapng_2040(void **state)
{
	size_t len, at = 0;
	unsigned char *b = (unsigned char *)export_2040("pcapng", "2040-02-29", &len);
	unsigned packets = 0;

	(void)state;
	/* blocks: type, total length, body; the host's byte order (little-endian writers) */
	while (at + 12 <= len) {
		uint32_t type = get32(b + at), blen = get32(b + at + 4);

		assert_true(blen >= 12 && at + blen <= len);
		if (type == 6 && get32(b + at + 20) == 12 + 3) {   /* EPB of the RX packet */
			uint64_t ts = (uint64_t)get32(b + at + 12) << 32 | get32(b + at + 16);
			const unsigned char *h = b + at + 28;
			uint32_t sec = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16
				       | (uint32_t)h[2] << 8 | h[3];

			assert_true(ts == (uint64_t)(T2040 + 1) * 1000000000 + 500000000);
			assert_true(sec == (uint32_t)(T2040 + 1));
			assert_memory_equal(h + 12, "\x01\x02\x03", 3);
			packets++;
		}
		at += blen;
	}
	assert_int_equal(at, len);
	assert_int_equal(packets, 1);
	printf("# the RX packet of 2040-02-29T12:00:01.5Z: pcapng timestamp %lld.500000000 s\n",
	       T2040 + 1);
	free(b);
}

/* The VCD's time 0 is --since, 2040, in ns since the epoch; the changes after it. */
static void vcd_2040(void **state)
{
	size_t len;
	char *v = export_2040("vcd", "2040-02-29T12:00:00.5Z", &len);

	(void)state;
	assert_non_null(strstr(v, "$date 2040-02-29T12:00:00.500000000Z $end"));
	assert_non_null(strstr(v, "2214129600500000000 ns since the epoch"));
	/* lpt0's IN at +0.5 s, plc's RX from +1 s for 3 characters of 10 bits at 9600 baud */
	assert_non_null(strstr(v, "\n#500000000\n"));
	assert_non_null(strstr(v, "\n#1000000000\n1"));
	assert_non_null(strstr(v, "\n#1003125000\n0"));
	free(v);
}

/* --replay --speed 0 into a file: every packet, in the log's order, and no note (exit 0). */
static void replay_2038_2040(void **state)
{
	static const char log_2038[] =
		"2038-01-19T03:14:07.900000000Z plc EV open device=/dev/pts/0 driver=termios "
		"note=pty baud=9600 format=8N1 gap_us=4010\n"
		"2038-01-19T03:14:07.950000000Z plc RX 2 0102 \"\\x01\\x02\"\n"
		"2038-01-19T03:14:08.050000000Z plc RX 2 0304 \"\\x03\\x04\"\n"
		"2040-02-29T12:00:00.000000000Z plc RX 5 68656c6c6f \"hello\"\n";
	char root[] = "/tmp/portlogd-test-replay-XXXXXX", log[64], out[64], *got;
	char *argv[] = { "portlogd", "--replay", "--source", "plc", "--to", out, "--speed", "0",
			 log, NULL };
	size_t len;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(log, sizeof(log), "%s/portlogd.log", root);
	snprintf(out, sizeof(out), "%s/out", root);
	put(log, log_2038);
	put(out, "");
	assert_int_equal(replay_main(9, argv), REPLAY_OK);
	got = slurp(out, &len);
	assert_int_equal(len, 9);
	assert_memory_equal(got, "\x01\x02\x03\x04hello", 9);
	free(got);
	unlink(log);
	unlink(out);
	rmdir(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pcapng_2040),
		cmocka_unit_test(vcd_2040),
		cmocka_unit_test(replay_2038_2040),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
