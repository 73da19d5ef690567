/* SPDX-License-Identifier: GPL-2.0-or-later */
/* calibrate.c - portlogd --calibrate: bursts through a loopback, the reads judged by the learner. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <termios.h>
#include <unistd.h>

#include "calibrate.h"
#include "clock.h"
#include "drv.h"
#include "libc.h"
#include "reasm.h"

#define BURST_MAX 190           /* bytes: three transfers of 62 or 64 and a last part */
#define PRIORITY 90             /* SCHED_FIFO, when allowed: wake-ups on time */

static int64_t us_down(int64_t ns) { return ns > 0 ? ns / 1000 : 0; }
static int64_t us_up(int64_t ns) { return ns > 0 ? (ns + 999) / 1000 : 0; }

void calibrate_judge(const struct learn *l, const struct delivery *found, int64_t char_ns,
		     unsigned at_level, unsigned reads, struct calibrate_verdict *v)
{
	struct learn_model m;
	char lo[24], hi[24], ch[24];

	memset(v, 0, sizeof(*v));
	v->why[0] = '\0';
	v->dc = (struct delivery_conf){ .kind = DELIVERY_AUTO };
	v->shown = learn_shown(l, &m);
	/* a UART whose reader stalled now and then (an emulated machine): the pairs'
	 * times prove nothing, but the level Linux shows and the reads agree: at trigger 1
	 * three quarters of them one byte, above it half of them a level's worth (the
	 * others a burst's rest after the timeout, or read together by a reader woken
	 * late) */
	if (!v->shown && found->kind == DELIVERY_FIFO && found->trigger >= 1 && reads >= 100
	    && (found->trigger == 1 ? 4ull * at_level >= 3ull * reads
				    : 2ull * at_level >= reads)) {
		v->shown = true;
		v->dc = found->trigger == 1
			? (struct delivery_conf){ .kind = DELIVERY_DIRECT }
			: (struct delivery_conf){ .kind = DELIVERY_FIFO, .trigger = found->trigger };
		snprintf(v->why, sizeof(v->why), "the UART's receive trigger is %u (rx_trig_bytes) "
			 "and %u of %u reads held %u byte%s: its hand-overs (the others read together "
			 "by a reader woken late, or a burst's rest)", found->trigger, at_level,
			 reads, found->trigger, found->trigger == 1 ? "" : "s");
		return;
	}
	if (!v->shown) {
		snprintf(v->why, sizeof(v->why), "no transfer size shown (%u streaming pairs) or "
			 "too few last parts (%llu)", l->npairs, (unsigned long long)l->samples);
		return;
	}
	delivery_ms_text(us_up(char_ns), ch, sizeof(ch));
	if (m.xfer == 1) {
		/* every byte alone: a UART at trigger 1, or an adapter quicker than a character */
		delivery_ms_text(us_up(m.hold_hi_ns), hi, sizeof(hi));
		if (found->kind == DELIVERY_FIFO)
			v->dc.kind = DELIVERY_DIRECT;
		else
			v->dc = (struct delivery_conf){ .kind = DELIVERY_USB,
							.hold_us = (unsigned)us_up(m.hold_hi_ns) };
		snprintf(v->why, sizeof(v->why), "every byte handed over alone, a character (%s ms) "
			 "after the one before: held less than that, taken as up to %s ms", ch, hi);
		return;
	}
	delivery_ms_text(us_down(m.hold_lo_ns), lo, sizeof(lo));
	delivery_ms_text(us_up(m.hold_hi_ns), hi, sizeof(hi));
	if (found->kind == DELIVERY_FIFO) {
		/* a UART: its trigger level is the transfer, its RX timeout the hold */
		v->dc = (struct delivery_conf){ .kind = DELIVERY_FIFO, .trigger = m.xfer };
		snprintf(v->why, sizeof(v->why), "hand-overs of %u bytes (the receive trigger), the "
			 "rest %s-%s ms after its last byte (the RX timeout; 4 characters: %s ms)",
			 m.xfer, lo, hi, delivery_ms_text(us_up(4 * char_ns), ch, sizeof(ch)));
		return;
	}
	v->dc = (struct delivery_conf){ .kind = DELIVERY_USB, .xfer = m.xfer,
					.hold_us = (unsigned)(us_down(m.hold_lo_ns) > 0
							      ? us_down(m.hold_lo_ns) : 1),
					.poll_us = (unsigned)us_up(m.hold_hi_ns - m.hold_lo_ns) };
	snprintf(v->why, sizeof(v->why), "transfers of %u bytes, the rest %s-%s ms after its last "
		 "byte (%u samples%s)", m.xfer, lo, hi, m.samples,
		 l->state == LEARN_SIZED ? "; no timeout seen: the hold assumed" : "");
}

/* "8N1" into the config's fields; false when it is not one. */
static bool parse_format(const char *s, struct drv_serial_config *t)
{
	if (strlen(s) != 3 || s[0] < '5' || s[0] > '8' || strchr("NEOMS", s[1]) == NULL
	    || (s[2] != '1' && s[2] != '2'))
		return false;
	t->data_bits = (unsigned)(s[0] - '0');
	t->parity = s[1];
	t->stop_bits = (unsigned)(s[2] - '0');
	return true;
}

/* Reads what comes until the line has been quiet for quiet_ns; -1 on a read error. */
static int drain(int fd, int64_t quiet_ns)
{
	uint8_t junk[512];

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct timespec ts = ns_to_ts(quiet_ns);
		int n = libc_ppoll(&p, 1, &ts, NULL);

		if (n == 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0 && read(fd, junk, sizeof(junk)) < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
	}
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };

			(void)libc_ppoll(&pf, 1, NULL, NULL);
			continue;
		}
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

struct tally {
	unsigned reads, bursts;
	size_t bytes;
	unsigned sizes[4097];           /* reads by their bytes */
	int64_t first_min, first_max;   /* a burst's write to its first read, less its bytes */
};

/* One burst of len bytes out, and back: every read to the learner. 0, or 1 with a message. */
static int burst(int tx, int rx, unsigned i, size_t len, int64_t char_ns, struct learn *l,
		 struct tally *t, const char *rxname)
{
	uint8_t out[BURST_MAX], in[4096];
	size_t got = 0;
	int64_t t0, quiet = 20 * char_ns > 50 * NS_PER_MS ? 20 * char_ns : 50 * NS_PER_MS;
	int64_t until;

	for (size_t k = 0; k < len; k++)
		out[k] = (uint8_t)(i * 31 + k * 7 + 1);
	t0 = mono_ns();
	if (write_all(tx, out, len) < 0) {
		fprintf(stderr, "portlogd: --calibrate: write: %s\n", strerror(errno));
		return 1;
	}
	until = t0 + 2 * (int64_t)len * char_ns + 500 * NS_PER_MS;
	for (;;) {
		struct pollfd p = { .fd = rx, .events = POLLIN };
		int64_t now = mono_ns(), left = got == len ? quiet : until - now;
		struct timespec ts = ns_to_ts(left > 0 ? left : 0);
		ssize_t n;
		int64_t seen;

		if (libc_ppoll(&p, 1, &ts, NULL) <= 0)
			break;
		seen = mono_ns();
		n = read(rx, in, sizeof(in));
		if (n <= 0)
			continue;
		t->reads++;
		t->sizes[n]++;
		if (got == 0) {
			int64_t d = seen - t0 - n * char_ns;

			t->first_min = t->bursts == 0 || d < t->first_min ? d : t->first_min;
			t->first_max = t->bursts == 0 || d > t->first_max ? d : t->first_max;
		}
		(void)learn_read(l, (size_t)n, seen, seen);
		for (ssize_t k = 0; k < n; k++, got++)
			if (got >= len || in[k] != out[got]) {
				fprintf(stderr, "portlogd: --calibrate: %s: byte %zu of burst %u came "
					"back as 0x%02x, sent 0x%02x: the loopback carries something "
					"else too (another device on the line?)\n", rxname, got, i,
					in[k], got < len ? out[got] : 0);
				return 1;
			}
	}
	if (got < len) {
		fprintf(stderr, "portlogd: --calibrate: %s: %zu of %zu bytes of burst %u came back "
			"within %lld ms: wire the port's TX to its RX (a loopback plug), or give the "
			"port it is wired to with --to\n", rxname, got, len, i,
			(long long)((until - t0) / NS_PER_MS));
		return 1;
	}
	t->bursts++;
	t->bytes += len;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: portlogd --calibrate PORT [--to PORT2] [--baud N] [--format 8N1] "
		"[--bursts N]\n"
		"Writes bursts of 1 to %d bytes on PORT and reads them back (a loopback plug: TX\n"
		"wired to RX; or PORT's TX wired to PORT2's RX), and measures how the device\n"
		"hands bytes over: its transfer size, the hold of a last part, the host's poll.\n"
		"Prints the [serial] delivery line for the port (portlogd.conf(5)). The port must\n"
		"not be in use (stop the service first). Defaults: 115200 8N1, 40 bursts.\n",
		BURST_MAX);
}

int calibrate_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "calibrate", required_argument, NULL, 'C' },
		{ "to", required_argument, NULL, 't' },
		{ "baud", required_argument, NULL, 'b' },
		{ "format", required_argument, NULL, 'f' },
		{ "bursts", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct drv_serial_config cfg = { .baud = 115200, .data_bits = 8, .parity = 'N',
					 .stop_bits = 1, .flow = DRV_FLOW_NONE,
					 .delivery = { .kind = DELIVERY_AUTO },
					 .rx_trigger = DELIVERY_TRIGGER_KEEP };
	struct drv_serial a = { .fd = -1 }, b = { .fd = -1 };
	struct sched_param sp = { .sched_priority = PRIORITY };
	const char *port = NULL, *to = NULL;
	unsigned bursts = 40;
	struct calibrate_verdict v;
	static struct tally t;
	struct learn l;
	char text[64];
	int opt, rc = 2, rx;
	int64_t c;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;

		switch (opt) {
		case 'C':
			if (strcmp(optarg, "--help") == 0 || strcmp(optarg, "-h") == 0) {
				usage(stdout);
				return 0;
			}
			port = optarg;
			break;
		case 't': to = optarg; break;
		case 'b':
			cfg.baud = (unsigned)strtoul(optarg, &end, 10);
			if (*end != '\0' || cfg.baud < 50 || cfg.baud > 4000000) {
				fprintf(stderr, "portlogd: --baud %s: expected 50 to 4000000\n", optarg);
				return 2;
			}
			break;
		case 'f':
			if (!parse_format(optarg, &cfg)) {
				fprintf(stderr, "portlogd: --format %s: expected data bits 5-8, parity "
					"N/E/O/M/S, stop bits 1-2 (8N1)\n", optarg);
				return 2;
			}
			break;
		case 'n':
			bursts = (unsigned)strtoul(optarg, &end, 10);
			if (*end != '\0' || bursts < 10 || bursts > 10000) {
				fprintf(stderr, "portlogd: --bursts %s: expected 10 to 10000\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (port == NULL || optind < argc) {
		usage(stderr);
		return 2;
	}
	c = reasm_char_ns(cfg.baud, 1 + cfg.data_bits + (cfg.parity != 'N') + cfg.stop_bits);
	/* on time for every hand-over where allowed (root, CAP_SYS_NICE); said, not needed */
	if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0 || mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
		fprintf(stderr, "portlogd: --calibrate: not at SCHED_FIFO %d with memory locked (%s): "
			"a late wake-up may make a hold look longer\n", PRIORITY, strerror(errno));
	if ((rc = drv_serial_open(port, &cfg, -1, 0, &a, NULL)) < 0
	    || (to != NULL && (rc = drv_serial_open(to, &cfg, -1, 0, &b, NULL)) < 0)) {
		fprintf(stderr, "portlogd: --calibrate: %s: %s%s\n", rc == -EBUSY || to == NULL
			|| a.fd < 0 ? port : to, strerror(-rc), rc == -EBUSY ? ": another program "
			"has it open (the portlogd service? systemctl stop portlogd first)" : "");
		drv_serial_close(&a);
		return 2;
	}
	rx = to != NULL ? b.fd : a.fd;
	printf("portlogd --calibrate: %s (%s, %s) at %u %u%c%u: %u bursts of 1-%d bytes to %s\n",
	       a.path, (to != NULL ? b.dlv : a.dlv).what,
	       delivery_kind_name((to != NULL ? b.dlv : a.dlv).kind), cfg.baud, cfg.data_bits,
	       cfg.parity, cfg.stop_bits, bursts, BURST_MAX, to != NULL ? b.path : "itself");
	learn_init(&l, c, DELIVERY_USB_UNKNOWN_MS * NS_PER_MS);
	rc = 1;
	if (drain(rx, 100 * NS_PER_MS) < 0 || tcflush(rx, TCIFLUSH) < 0) {
		fprintf(stderr, "portlogd: --calibrate: %s: %s\n", to ? to : port, strerror(errno));
		goto done;
	}
	for (unsigned i = 0; i < bursts; i++)
		if (burst(a.fd, rx, i, 1 + (i * 53 + 17) % BURST_MAX, c, &l, &t,
			  to != NULL ? to : port) != 0)
			goto done;
	{
		const struct delivery *found = to != NULL ? &b.dlv : &a.dlv;

		calibrate_judge(&l, found, c, t.sizes[found->trigger >= 1 && found->trigger <= 4096
						    ? found->trigger : 1], t.reads, &v);
	}
	printf("%u bursts, %zu bytes back in %u reads; %u streaming pairs; %llu last parts after "
	       "a full transfer\n", t.bursts, t.bytes, t.reads, l.npairs,
	       (unsigned long long)l.samples);
	/* what the device did, whatever the learner made of it */
	{
		unsigned top[3] = { 0 }, most = 0;
		char lo[24], hi[24];

		for (unsigned k = 1; k <= 4096; k++) {
			most = t.sizes[k] > 0 ? k : most;
			for (int j = 0; j < 3; j++)
				if (top[j] == 0 || t.sizes[k] > t.sizes[top[j]]) {
					memmove(top + j + 1, top + j, (size_t)(2 - j) * sizeof(top[0]));
					top[j] = k;
					break;
				}
		}
		printf("reads of %u (%u), %u (%u), %u (%u) bytes most often, %u at most; a burst's "
		       "first read %s-%s ms after its write, less its bytes' wire time\n",
		       top[0], t.sizes[top[0]], top[1], top[1] ? t.sizes[top[1]] : 0, top[2],
		       top[2] ? t.sizes[top[2]] : 0, most,
		       delivery_ms_text(us_down(t.first_min), lo, sizeof(lo)),
		       delivery_ms_text(us_up(t.first_max), hi, sizeof(hi)));
	}
	printf("%s\n", v.why);
	if (!v.shown) {
		printf("no delivery line: the reads did not show the device's hand-over\n");
		goto done;
	}
	printf("delivery = %s\n", delivery_conf_text(&v.dc, text, sizeof(text)));
	rc = 0;
done:
	drv_serial_close(&a);
	drv_serial_close(&b);
	return rc;
}
