/* SPDX-License-Identifier: GPL-2.0-or-later */
/* e2e_replay_gpsd.c - a GPS receiver's log replayed through --pty into Debian's gpsd; gpspipe shows the positions.
 *
 * The real daemon logs NMEA sentences (GGA and RMC, a new position every 200
 * ms) written into a pty; portlogd --replay plays that log into a pty of its
 * own (--pty LINK) and gpsd, run by hand in the foreground on a port of
 * 127.0.0.1, reads LINK as its GPS. Every TPV report gpspipe shows carries the
 * latitude and longitude of the sentences of its second, and most seconds of
 * the log have one (gpsd needs a few sentences to know the device). Exits 77
 * (skipped) only when gpsd or gpspipe is missing (tests/deps.sh installs them).
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "sim/sim.h"
#include "testutil.h"

#define WAIT_MS 10000
#define FIXES 25

static struct e2e_daemon live;

static int teardown(void **state)
{
	(void)state;
	e2e_kill(&live);
	e2e_reap_all();
	return 0;
}

/* One NMEA sentence: $BODY*CS\r\n. */
static size_t nmea(char *out, size_t cap, const char *body)
{
	unsigned cs = 0;

	for (const char *c = body; *c; c++)
		cs ^= (unsigned char)*c;
	return (size_t)snprintf(out, cap, "$%s*%02X\r\n", body, cs);
}

/* Does something listen on 127.0.0.1:port? (A connection without a WATCH asks gpsd for nothing.) */
static bool listening(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* A value of "key":V in a JSON line of gpsd's, or NAN. */
/* Has gpspipe's output a TPV report holding want? */
static bool file_has(const char *path, const char *want)
{
	char *text = e2e_read_file(path, NULL), *save = NULL;
	bool has = false;

	for (char *l = text != NULL ? strtok_r(text, "\n", &save) : NULL; l != NULL && !has;
	     l = strtok_r(NULL, "\n", &save))
		has = strstr(l, "\"class\":\"TPV\"") != NULL && strstr(l, want) != NULL;
	free(text);
	return has;
}

static double json_num(const char *line, const char *key)
{
	char k[32];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(line, k);
	return p != NULL ? strtod(p + strlen(k), NULL) : NAN;
}

static void gpsd_reads_replay(void **state)
{
	char dir[256], link[300], conf[300], log[300], pty[300], text[1024], port[16];
	char rerr[300], gerr[300], pipe_out[300], sock[300], pidf[300], want[16];
	const char *rargv[] = { "portlogd", "--replay", "--priority", "80", "--pty", pty, log, NULL };
	const char *gargv[] = { "gpsd", "-N", "-S", port, "-F", sock, "-P", pidf, pty, NULL };
	const char *pargv[] = { "gpspipe", "-w", NULL, NULL };
	char where[64];
	double lat[FIXES], lon[FIXES];
	bool seen[FIXES] = { false };
	unsigned nseen = 0, tpv = 0;
	struct sim_port sp;
	uint64_t rng = tu_seed("e2e_replay_gpsd");
	pid_t rp, gp, pp;
	char *out, *save = NULL, *err;
	int rc;

	(void)state;
	e2e_tmpdir(dir, sizeof(dir));
	/* gpsd opens its device as user gpsd (group dialout): LINK's directory must let it in */
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(link, sizeof(link), "%s/gps", dir);
	snprintf(conf, sizeof(conf), "%s/portlogd.conf", dir);
	snprintf(log, sizeof(log), "%s/portlogd.log", dir);
	snprintf(pty, sizeof(pty), "%s/replayed-gps", dir);
	snprintf(rerr, sizeof(rerr), "%s/replay.err", dir);
	snprintf(gerr, sizeof(gerr), "%s/gpsd.err", dir);
	snprintf(pipe_out, sizeof(pipe_out), "%s/gpspipe.out", dir);
	snprintf(sock, sizeof(sock), "%s/gpsd.sock", dir);
	snprintf(pidf, sizeof(pidf), "%s/gpsd.pid", dir);
	snprintf(port, sizeof(port), "%u", 20000 + (unsigned)getpid() % 20000);
	snprintf(where, sizeof(where), "127.0.0.1:%s", port);
	pargv[2] = where;

	/* the receiver: a fix every 200 ms (each its own second in the sentences), logged */
	assert_int_equal(sim_port_open(&sp, "gps", link), 0);
	snprintf(text, sizeof(text), "[logger]\nlog_file = %s\nflush_interval_ms = 20\nstat_interval_s = 0\n"
		 "[serial gps]\ndevice = %s\nbaud = 9600\n", log, link);
	e2e_write_file(conf, text);
	assert_int_equal(e2e_start(&live, dir, conf), 0);
	assert_int_equal(e2e_wait_ready(&live, WAIT_MS), 0);
	assert_int_equal(sim_port_wait_open(&sp, WAIT_MS), 0);
	for (int i = 0; i < FIXES; i++) {
		char body[160], s[200];
		double la = 48 + (double)(tu_rand(&rng) % 600000) / 1e6, lo = 11 + (double)(tu_rand(&rng) % 600000) / 1e6;
		/* ddmm.mmmmmm: 6 decimals of minutes, as gpsd reads them */
		char las[32], los[32];
		size_t n;

		snprintf(las, sizeof(las), "%02d%09.6f", (int)la, (la - (int)la) * 60);
		snprintf(los, sizeof(los), "%03d%09.6f", (int)lo, (lo - (int)lo) * 60);
		lat[i] = (int)la + strtod(las + 2, NULL) / 60;
		lon[i] = (int)lo + strtod(los + 3, NULL) / 60;
		snprintf(body, sizeof(body), "GPGGA,1200%02d.00,%s,N,%s,E,1,08,0.9,545.4,M,46.9,M,,", i, las, los);
		n = nmea(s, sizeof(s), body);
		assert_int_equal(write(sp.master, s, n), (ssize_t)n);
		tu_sleep_ms(100);
		snprintf(body, sizeof(body), "GPRMC,1200%02d.00,A,%s,N,%s,E,000.5,054.7,241126,,", i, las, los);
		n = nmea(s, sizeof(s), body);
		assert_int_equal(write(sp.master, s, n), (ssize_t)n);
		tu_sleep_ms(100);
	}
	tu_sleep_ms(100);
	assert_int_equal(e2e_stop(&live, SIGTERM, WAIT_MS, NULL), 0);
	live.pid = 0;
	sim_port_close(&sp);

	/* the replay waits for gpsd, gpsd for a client: gpspipe's watch starts it all */
	rp = e2e_spawn(rargv, rerr);
	e2e_wait_path(pty, WAIT_MS);
	gp = e2e_spawn(gargv, gerr);
	e2e_wait_path(sock, WAIT_MS);
	for (int i = 0; i < WAIT_MS / 20 && !listening(atoi(port)); i++)
		tu_sleep_ms(20);        /* gpsd listens soon after it makes its socket */
	pp = e2e_spawn(pargv, pipe_out);
	rc = e2e_wait_exit(rp, 60000);
	err = e2e_sh(&(int){ 0 }, "cat %s; echo; cat %s", rerr, gerr);
	if (rc != 0)
		fail_msg("the replay exited %d:\n%s", rc, err);
	/* gpspipe is stopped once it shows the last fix (or WAIT_MS on: then the check below
	 * fails), not after a time that a stalled gpsd or gpspipe overruns */
	snprintf(want, sizeof(want), "T12:00:%02d", FIXES - 1);
	for (int i = 0; i < WAIT_MS / 20 && !file_has(pipe_out, want); i++)
		tu_sleep_ms(20);
	e2e_reap(pp);
	e2e_reap(gp);

	out = e2e_sh(&rc, "cat %s", pipe_out);
	for (char *l = strtok_r(out, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
		const char *t = strstr(l, "\"time\":\"");
		unsigned hh, mm, ss;
		double la, lo;

		if (strstr(l, "\"class\":\"TPV\"") == NULL || t == NULL)
			continue;
		if (sscanf(strchr(t + 8, 'T') + 1, "%2u:%2u:%2u", &hh, &mm, &ss) != 3 || hh != 12 || mm != 0
		    || ss >= FIXES)
			fail_msg("gpsd reports a time the sentences do not have: %s", l);
		la = json_num(l, "lat");
		lo = json_num(l, "lon");
		if (fabs(la - lat[ss]) > 1e-7 || fabs(lo - lon[ss]) > 1e-7)
			fail_msg("gpsd's TPV of second %u is at %.9f %.9f; the sentences said %.9f %.9f:\n%s",
				 ss, la, lo, lat[ss], lon[ss], l);
		tpv++;
		nseen += !seen[ss];
		seen[ss] = true;
	}
	printf("# gpsd: %u TPV reports, %u of %d fixes of the log, each at the position its "
	       "sentences carry\n", tpv, nseen, FIXES);
	e2e_print_from("the replay's own", err, "start error");
	/* gpsd takes a few sentences to know the device; the rest it must report */
	if (nseen < FIXES / 2)
		fail_msg("gpsd reported %u of %d fixes; gpspipe:\n%s\nthe replay and gpsd:\n%s", nseen,
			 FIXES, out, err);
	assert_true(seen[FIXES - 1]);
	free(out);
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(gpsd_reads_replay, teardown),
	};
	static const char *const tools[] = { "command -v gpsd", "command -v gpspipe" };

	signal(SIGPIPE, SIG_IGN);
	if (!e2e_have("e2e_replay_gpsd", tools, sizeof(tools) / sizeof(tools[0])))
		return 77;
	e2e_filter_from_env();
	return e2e_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
