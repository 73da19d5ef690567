/* SPDX-License-Identifier: GPL-2.0-or-later */
/* portlogd-sim - creates simulated serial devices (ptys) and plays traffic into them,
 * or into a connected unix socket (a virtual machine's UART, --connect). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

#define MAX_PORTS 16

static struct sim_port ports[MAX_PORTS];
static unsigned nports;
static pid_t children[MAX_PORTS];

/* In the parent: pass the signal on to the per-port children. In a child: stop. */
static void on_signal(int sig)
{
	for (unsigned i = 0; i < nports; i++) {
		if (children[i] > 0)
			kill(children[i], sig);
		atomic_store(&ports[i].stop, true);
	}
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: portlogd-sim [options] NAME[:nmea|:binary|:modbus]...\n"
		"Creates a pseudo-terminal per NAME, links DIR/NAME to it, waits until\n"
		"something opens it, and plays packets into it until stopped (Ctrl-C).\n\n"
		"  -d, --dir DIR         where the links go (default /tmp/portlogd-demo)\n"
		"  -n, --packets N       packets per port, 0 = until stopped (default 0)\n"
		"  -l, --len MIN-MAX     binary packet sizes (default 4-64)\n"
		"  -F, --frags N         cut each packet into up to N writes (default 3)\n"
		"  -i, --intra US        longest pause inside a packet (default 200)\n"
		"  -g, --gap MIN-MAX     pause after a packet, us (default 50000-200000)\n"
		"  -G, --daemon-gap US   the daemon's gap_us, to judge timing (default 1000)\n"
		"  -s, --seed N          random seed (default: the time)\n"
		"  -b, --baud N          a packet starts no sooner than the previous one would\n"
		"                        have gone out at N baud (8N1), default: no limit\n"
		"  -P, --pace            each byte a write of its own at its wire time at --baud\n"
		"                        (10 bits a byte, absolute deadlines; -F and -i unused);\n"
		"                        a packet's time is its first byte's write; prints the\n"
		"                        writes' lateness (p50/p99/max) at the end\n"
		"      --lens A,B,...    packet lengths in turn, instead of --len\n"
		"      --gap-chars MIN-MAX  pause after a packet in character times at --baud\n"
		"                        (with --pace: the silence on the wire), instead of --gap\n"
		"      --hold N[/MS]     --pace into a socket or fifo: a byte due while the far end\n"
		"                        leaves more than N writes unread and has taken none for\n"
		"                        MS ms is lost on the wire, as at a UART nobody empties\n"
		"                        (default 16/50; 0: never)\n"
		"      --rt-priority N   --pace as root: SCHED_FIFO N and locked memory (default\n"
		"                        80; 0: neither)\n"
		"  -c, --connect NAME=SOCKET  play NAME into the unix stream socket SOCKET\n"
		"                        (e.g. QEMU's -chardev socket of a guest UART), or the\n"
		"                        fifo SOCKET (QEMU's -chardev pipe: its PATH.in), instead\n"
		"                        of a pty; repeatable; no NAME arguments needed then\n"
		"  -p, --print           print each packet sent: port, send time, length, hex,\n"
		"                        duration of its writes and longest pause inside (us),\n"
		"                        clean|unclean (its pauses\n"
		"                        inside under half --daemon-gap, around over 1.5 gaps,\n"
		"                        no byte lost), and lost=N when N bytes were lost\n"
		"  -o, --output FILE     --print into FILE instead of stdout\n"
		"  -h, --help\n");
}

static int range(const char *s, unsigned *lo, unsigned *hi)
{
	return sscanf(s, "%u-%u", lo, hi) == 2 && *lo <= *hi ? 0 : -1;
}

/* "A,B,..." into cfg->lens; -1 unless 1..8 lengths of 1..8192. */
static int lens(const char *s, struct sim_cfg *cfg)
{
	char *end;

	cfg->nlens = 0;
	cfg->max_len = 0;
	do {
		unsigned long n = strtoul(s, &end, 10);
		if (end == s || n == 0 || n > 8192 || cfg->nlens == 8)
			return -1;
		cfg->lens[cfg->nlens++] = (unsigned)n;
		if (n > cfg->max_len)
			cfg->max_len = (unsigned)n;
		s = end + 1;
	} while (*end == ',');
	return *end == '\0' ? 0 : -1;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* --print: port p's packets, one line each, into out. The ports' processes share out:
 * each writes its lines with one write() (out is O_APPEND), so they do not interleave. */
static void print_records(const struct sim_port *p, FILE *out)
{
	char *text = NULL;
	size_t len = 0, done = 0;
	FILE *m = open_memstream(&text, &len);

	if (m == NULL)
		return;
	for (size_t k = 0; k < p->npkt; k++) {
		const struct sim_packet *pk = &p->pkt[k];

		fprintf(m, "%s %lld.%09lld %u ", p->name, (long long)(pk->t_first_real / 1000000000),
			(long long)(pk->t_first_real % 1000000000), pk->len);
		for (uint32_t b = 0; b < pk->len; b++)
			fprintf(m, "%02x", p->data[pk->off + b]);
		if (pk->len == 0)
			fprintf(m, "-");
		/* from its first write to the return of its last, the longest pause inside it
		 * as measured, and whether its pauses kept to --daemon-gap (sim_packet_clean) */
		fprintf(m, " %lld %lld %s", (long long)((pk->t_last_mono - pk->t_first_mono) / 1000),
			(long long)(pk->max_intra_gap_ns / 1000), sim_packet_clean(p, k) ? "clean" : "unclean");
		if (pk->lost > 0)
			fprintf(m, " lost=%u", pk->lost);
		fprintf(m, "\n");
	}
	fclose(m);
	fflush(out);
	while (done < len) {
		ssize_t n = write(fileno(out), text + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	free(text);
}

/* --pace: how late the writes of port p came against their deadlines, on stdout. */
static void print_pace(const struct sim_port *p, const struct sim_cfg *cfg)
{
	size_t n = p->data_len, lost = 0, untaken = 0;
	int64_t *v = malloc((n + 1) * sizeof(*v)), take = 0;

	for (size_t k = 0; k < p->npkt; k++) {
		lost += p->pkt[k].lost;
		untaken += p->pkt[k].max_take_ns * 2 > (int64_t)cfg->gap_us * 1000;
		if (p->pkt[k].max_take_ns > take)
			take = p->pkt[k].max_take_ns;
	}
	if (v == NULL)
		return;
	memcpy(v, p->late, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp64);
	printf("%s: paced %zu bytes at %u baud; write lateness us p50 %.1f p99 %.1f max %.1f; "
	       "%zu bytes lost on the wire (the far end left over %u writes unread for %u ms)",
	       p->name, n, cfg->baud, n ? (double)v[n / 2] / 1e3 : 0.0,
	       n ? (double)v[(size_t)((double)(n - 1) * 0.99 + 0.5)] / 1e3 : 0.0,
	       n ? (double)v[n - 1] / 1e3 : 0.0, lost, cfg->hold, cfg->hold_ms);
	/* a pty says nothing of what its reader has taken */
	if (p->outq_unit > 0)
		printf("; the far end left a byte unread up to %.1f ms, over half a gap in %zu packets",
		       (double)take / 1e6, untaken);
	printf("\n");
	fflush(stdout);
	free(v);
}

/* --pace as root: the deadlines are kept by a SCHED_FIFO thread with its memory locked
 * (best effort: without, lateness shows in print_pace). */
static void pace_rt(int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	if (prio <= 0 || geteuid() != 0)
		return;
	if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0 || mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		fprintf(stderr, "portlogd-sim: SCHED_FIFO %d or mlockall: %s, going on without\n",
			prio, strerror(errno));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' }, { "packets", required_argument, NULL, 'n' },
		{ "len", required_argument, NULL, 'l' }, { "frags", required_argument, NULL, 'F' },
		{ "intra", required_argument, NULL, 'i' }, { "gap", required_argument, NULL, 'g' },
		{ "daemon-gap", required_argument, NULL, 'G' }, { "seed", required_argument, NULL, 's' },
		{ "print", no_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
		{ "baud", required_argument, NULL, 'b' }, { "connect", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' }, { "pace", no_argument, NULL, 'P' },
		{ "lens", required_argument, NULL, 'L' }, { "gap-chars", required_argument, NULL, 'C' },
		{ "hold", required_argument, NULL, 'H' }, { "rt-priority", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	struct sim_cfg cfg = {
		.kind = SIM_BINARY, .min_len = 4, .max_len = 64, .max_frags = 3,
		.intra_gap_max_us = 200, .inter_gap_min_us = 50000, .inter_gap_max_us = 200000,
		.gap_us = 1000, .seed = (uint64_t)time(NULL), .hold = 16, .hold_ms = 50,
	};
	unsigned gap_chars_lo = 0, gap_chars_hi = 0;
	int rt_prio = 80;
	struct sim_cfg pcfg[MAX_PORTS];
	const char *dir = "/tmp/portlogd-demo", *socks[MAX_PORTS];
	unsigned nconnect = 0;
	FILE *out = stdout;
	bool print = false;
	int opt, rc = 0;
	char name[32];

	while ((opt = getopt_long(argc, argv, "d:n:l:F:i:g:G:s:pb:c:o:Ph", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 'n': cfg.packets = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'l':
			if (range(optarg, &cfg.min_len, &cfg.max_len) < 0 || cfg.min_len == 0) {
				fprintf(stderr, "portlogd-sim: --len wants MIN-MAX, MIN >= 1\n");
				return 1;
			}
			break;
		case 'F': cfg.max_frags = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'i': cfg.intra_gap_max_us = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'g':
			if (range(optarg, &cfg.inter_gap_min_us, &cfg.inter_gap_max_us) < 0) {
				fprintf(stderr, "portlogd-sim: --gap wants MIN-MAX in us\n");
				return 1;
			}
			break;
		case 'G': cfg.gap_us = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': cfg.seed = strtoull(optarg, NULL, 0); break;
		case 'p': print = true; break;
		case 'b': cfg.baud = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'c':
			if (strchr(optarg, '=') == NULL || nconnect == MAX_PORTS) {
				fprintf(stderr, "portlogd-sim: --connect wants NAME=SOCKET\n");
				return 1;
			}
			socks[nconnect++] = optarg;
			break;
		case 'o':
			if ((out = fopen(optarg, "w")) == NULL ||
			    fcntl(fileno(out), F_SETFL, O_APPEND) < 0) {
				fprintf(stderr, "portlogd-sim: %s: %s\n", optarg, strerror(errno));
				return 1;
			}
			print = true;
			break;
		case 'P': cfg.pace = true; break;
		case 'L':
			if (lens(optarg, &cfg) < 0) {
				fprintf(stderr, "portlogd-sim: --lens wants up to 8 lengths A,B,... of 1..8192\n");
				return 1;
			}
			break;
		case 'C':
			if (range(optarg, &gap_chars_lo, &gap_chars_hi) < 0) {
				fprintf(stderr, "portlogd-sim: --gap-chars wants MIN-MAX\n");
				return 1;
			}
			break;
		case 'H':
			if (sscanf(optarg, "%u/%u", &cfg.hold, &cfg.hold_ms) < 1) {
				fprintf(stderr, "portlogd-sim: --hold wants N or N/MS\n");
				return 1;
			}
			break;
		case 'R': rt_prio = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 1;
		}
	}
	if ((optind == argc && nconnect == 0) || argc - optind + nconnect > MAX_PORTS) {
		usage(stderr);
		return 1;
	}
	if (cfg.max_frags == 0)
		cfg.max_frags = 1;
	if ((cfg.pace || gap_chars_hi > 0) && cfg.baud == 0) {
		fprintf(stderr, "portlogd-sim: --pace and --gap-chars need --baud\n");
		return 1;
	}
	if (gap_chars_hi > 0) {
		cfg.inter_gap_min_us = (unsigned)((uint64_t)gap_chars_lo * 10000000 / cfg.baud);
		cfg.inter_gap_max_us = (unsigned)((uint64_t)gap_chars_hi * 10000000 / cfg.baud);
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "portlogd-sim: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);       /* a closed socket is an error of the write */
	for (unsigned c = 0; c < nconnect; c++) {
		const char *eq = strchr(socks[c], '=');
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		struct stat st;
		int fd;

		/* a fifo (QEMU's pipe chardev, always open: a usb-serial device is plugged in
		 * only while its chardev is) is written to; a socket is connected to */
		if (stat(eq + 1, &st) == 0 && S_ISFIFO(st.st_mode)) {
			fd = open(eq + 1, O_WRONLY | O_CLOEXEC);   /* waits for a reader */
		} else {
			snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", eq + 1);
			fd = socket(AF_UNIX, SOCK_STREAM, 0);
			if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0) {
			fprintf(stderr, "portlogd-sim: %s: %s\n", eq + 1, strerror(errno));
			return 1;
		}
		pcfg[nports] = cfg;
		pcfg[nports].seed = cfg.seed + nports;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - socks[c]), socks[c]);
		if ((rc = sim_port_attach(&ports[nports], name, fd)) < 0) {
			fprintf(stderr, "portlogd-sim: %s: %s\n", eq + 1, strerror(-rc));
			return 1;
		}
		printf("%s -> %s (binary)\n", name, eq + 1);
		nports++;
	}
	for (int a = optind; a < argc; a++) {
		char link[512];
		const char *colon = strchr(argv[a], ':');
		size_t n = colon ? (size_t)(colon - argv[a]) : strlen(argv[a]);

		snprintf(name, sizeof(name), "%.*s", (int)n, argv[a]);
		snprintf(link, sizeof(link), "%s/%s", dir, name);
		pcfg[nports] = cfg;
		pcfg[nports].kind = colon == NULL ? SIM_BINARY : strcmp(colon + 1, "nmea") == 0 ? SIM_NMEA
				    : strcmp(colon + 1, "modbus") == 0 ? SIM_MODBUS : SIM_BINARY;
		pcfg[nports].seed = cfg.seed + nports;
		if ((rc = sim_port_open(&ports[nports], name, link)) < 0) {
			fprintf(stderr, "portlogd-sim: %s: %s\n", link, strerror(-rc));
			return 1;
		}
		printf("%s -> %s (%s)\n", link, ports[nports].slave,
		       pcfg[nports].kind == SIM_NMEA ? "nmea" : pcfg[nports].kind == SIM_MODBUS ? "modbus"
		       : "binary");
		nports++;
	}
	fflush(stdout);
	/* one process per port keeps this program simple: sim_port_run blocks */
	for (unsigned i = 0; i < nports; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			memset(children, 0, sizeof(children));
			if (pcfg[i].pace)
				pace_rt(rt_prio);
			if (sim_port_wait_open(&ports[i], 60000) < 0) {
				fprintf(stderr, "portlogd-sim: nobody opened %s within 60 s\n", ports[i].link);
				_exit(1);
			}
			rc = sim_port_run(&ports[i], &pcfg[i]);
			/* a socket's peer drops what it has not read when we hang up */
			if (rc == 0 && ports[i].link[0] == '\0' && sim_port_drain(&ports[i], 30000) < 0) {
				fprintf(stderr, "portlogd-sim: %s: the peer has not read everything "
					"after 30 s\n", ports[i].name);
				rc = -ETIMEDOUT;
			}
			if (print)
				print_records(&ports[i], out);
			if (pcfg[i].pace)
				print_pace(&ports[i], &pcfg[i]);
			if (rc < 0)
				fprintf(stderr, "portlogd-sim: %s: %s after %zu packets\n", ports[i].name,
					strerror(-rc), ports[i].npkt);
			_exit(rc < 0 && rc != -ECANCELED && rc != -EPIPE ? 1 : 0);
		}
		children[i] = pid;
	}
	while (wait(NULL) > 0 || errno == EINTR)
		;
	for (unsigned i = 0; i < nports; i++)
		sim_port_close(&ports[i]);
	return 0;
}
