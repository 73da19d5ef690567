/* SPDX-License-Identifier: GPL-2.0-or-later */
/* portlogd-sim - creates simulated serial devices (ptys) and plays traffic into them,
 * or into a connected unix socket or a fifo (a virtual machine's UART, --connect). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
		"  -l, --len MIN-MAX     binary packet sizes (default 4-64); or A,B,...: these\n"
		"                        sizes in turn (up to 8); --lens is the same\n"
		"  -F, --frags N         cut each packet into up to N writes (default 3)\n"
		"  -i, --intra US        longest pause inside a packet (default 200)\n"
		"  -g, --gap MIN-MAX     pause after a packet, us (default 50000-200000)\n"
		"  -G, --daemon-gap US   the daemon's gap_us, to judge timing (default 1000)\n"
		"  -H, --daemon-hold US  wire mode: the hold the daemon allows the device (its\n"
		"                        EV open hold_us=), to judge timing (default 0)\n"
		"  -s, --seed N          random seed (default: the time)\n"
		"  -b, --baud N          a packet starts no sooner than the previous one would\n"
		"                        have gone out at N baud (8N1), default: no limit\n"
		"  -D, --device MODEL    wire mode (needs --baud): bytes arrive at the baud, one\n"
		"                        character time apart (the pauses of --frags/--intra and\n"
		"                        --gap are silences on the wire), and MODEL hands them\n"
		"                        over: direct (each at once), fifo:T (a 16550A at\n"
		"                        receive trigger T = 1, 4, 8, 14: T at once, fewer after\n"
		"                        4 character times of silence), usb:MS (an FTDI adapter,\n"
		"                        latency timer MS: on 1 ms USB frames, every MS ms, or\n"
		"                        once 62 bytes wait), adapter:MS/SIZE (one on a receive\n"
		"                        timeout: SIZE bytes at once, the rest MS ms after the\n"
		"                        last byte; MS with decimals). Runs SCHED_FIFO (--rt-priority)\n"
		"                        with its memory locked when allowed; prints how late\n"
		"                        the hand-overs were, per port\n"
		"  -P, --pace            --device direct -F 1: each byte a write of its own at its\n"
		"                        wire time, no pause inside a packet (a device that takes\n"
		"                        what it is handed at once, QEMU's UART, then sees a wire)\n"
		"      --spin US         wire mode: spin the last US before each hand-over\n"
		"                        instead of sleeping (default 0)\n"
		"      --gap-chars MIN-MAX  pause after a packet in character times at --baud\n"
		"                        (in wire mode: the silence on the wire), instead of --gap\n"
		"      --hold N[/MS]     wire mode into a socket or fifo: a hand-over due while the\n"
		"                        far end leaves more than N writes unread and has taken none\n"
		"                        for MS ms is lost on the wire, as at a UART nobody empties\n"
		"                        (default 16/50; 0: never)\n"
		"      --rt-priority N   wire mode: SCHED_FIFO N and locked memory when allowed\n"
		"                        (default 50; 0: neither)\n"
		"  -c, --connect NAME=SOCKET  play NAME into the unix stream socket SOCKET\n"
		"                        (e.g. QEMU's -chardev socket of a guest UART), or the\n"
		"                        fifo SOCKET (QEMU's -chardev pipe: its PATH.in), instead\n"
		"                        of a pty; repeatable; no NAME arguments needed then\n"
		"  -p, --print           print each packet sent: port, send time, length, hex,\n"
		"                        duration of its writes and longest pause inside (us),\n"
		"                        clean|unclean (its pauses\n"
		"                        inside under half --daemon-gap, around over 1.5 gaps);\n"
		"                        wire mode: its first byte's start on the wire, its time\n"
		"                        on the wire, its longest planned pause, clean|unclean\n"
		"                        (sim.h: sim_packet_clean), its hand-overs as\n"
		"                        LEN@LATENESS_US, and lost=N when N of its bytes were\n"
		"                        lost on the wire (--hold; LEN and the hex are what was\n"
		"                        written); a line \"# NAME: ...\" a port on the hand-overs\n"
		"  -o, --output FILE     --print into FILE instead of stdout (appended to by each\n"
		"                        port's process in one write)\n"
		"  -h, --help\n");
}

static int range(const char *s, unsigned *lo, unsigned *hi)
{
	return sscanf(s, "%u-%u", lo, hi) == 2 && *lo <= *hi ? 0 : -1;
}

/* Wire mode: one line per port on how the device model's hand-overs went. */
static void print_wire(FILE *out, const struct sim_port *p)
{
	size_t unclean = 0, lost = 0;
	int64_t unread = 0;

	for (size_t k = 0; k < p->npkt; k++)
		unclean += !sim_packet_clean(p, k);
	fprintf(out, "# %s: %zu packets, %zu hand-overs, late us: write began p50 %.1f p99 %.1f, "
		"returned p50 %.1f p99 %.1f max %.1f; %zu unclean at --daemon-gap %u us and "
		"--daemon-hold %u us; %zu hand-overs so late that a 16550A's FIFO would have "
		"overflowed", p->name, p->npkt, p->ndlv, (double)sim_late_pct(p, 50, true) / 1e3,
		(double)sim_late_pct(p, 99, true) / 1e3, (double)sim_late_pct(p, 50, false) / 1e3,
		(double)sim_late_pct(p, 99, false) / 1e3, (double)sim_late_pct(p, 100, false) / 1e3,
		unclean, p->cfg.gap_us, p->cfg.hold_us, p->overruns);
	/* a pty says nothing of what its reader has taken */
	if (p->outq_req != 0) {
		for (size_t d = 0; d < p->ndlv; d++) {
			lost += p->dlv[d].lost ? p->dlv[d].len : 0;
			if (p->dlv[d].t_unread - p->dlv[d].t_write > unread)
				unread = p->dlv[d].t_unread - p->dlv[d].t_write;
		}
		fprintf(out, "; the far end left a hand-over unread up to %.1f ms; %zu bytes lost on "
			"the wire (it left over %u unread for %u ms)", (double)unread / 1e6, lost,
			p->cfg.lose_unread, p->cfg.lose_ms);
	}
	fputc('\n', out);
}

/* The bytes of p's data from b to e in hex at hex + 2 * n; n + their count. */
static uint32_t hex_at(char *hex, uint32_t n, const struct sim_port *p, uint32_t b, uint32_t e)
{
	for (; b < e; b++, n++)
		sprintf(hex + 2 * n, "%02x", p->data[b]);
	return n;
}

/* Packet k of p, one --print line (see usage). */
static void print_packet(FILE *out, const struct sim_port *p, size_t k)
{
	const struct sim_packet *pk = &p->pkt[k];
	uint32_t d0 = pk->dlv_first, d1 = pk->dlv_first + pk->ndlv, n = 0;
	char *hex = malloc(2 * (size_t)pk->len + 2);

	if (hex == NULL)
		return;
	/* what was written: in wire mode, the packet's part of each hand-over not lost
	 * (and none past a failed write) */
	if (p->cfg.dev.kind == SIM_DEV_NONE)
		n = hex_at(hex, n, p, pk->off, pk->off + pk->len);
	for (uint32_t d = d0; d < d1; d++) {
		const struct sim_delivery *v = &p->dlv[d];

		if (!v->lost)
			n = hex_at(hex, n, p, v->off > pk->off ? v->off : pk->off,
				   v->off + v->len < pk->off + pk->len ? v->off + v->len : pk->off + pk->len);
	}
	fprintf(out, "%s %lld.%09lld %u %s", p->name, (long long)(pk->t_first_real / 1000000000),
		(long long)(pk->t_first_real % 1000000000), n, n > 0 ? hex : "-");
	free(hex);
	/* from its first write to the return of its last, the longest pause inside it as
	 * measured, and whether its pauses kept to --daemon-gap (sim_packet_clean) */
	fprintf(out, " %lld %lld %s", (long long)((pk->t_last_mono - pk->t_first_mono) / 1000),
		(long long)(pk->max_intra_gap_ns / 1000), sim_packet_clean(p, k) ? "clean" : "unclean");
	for (uint32_t d = d0; d < d1; d++) {
		const struct sim_delivery *v = &p->dlv[d];
		int64_t until = v->t_unread > v->t_ret ? v->t_unread : v->t_ret;

		if (!v->lost)
			fprintf(out, " %u@%.1f", v->len, (double)(until - v->due) / 1e3);
	}
	if (pk->lost > 0)
		fprintf(out, " lost=%u", pk->lost);
	fputc('\n', out);
}

/* --print: port p's packets (and in wire mode its summary) into out. The ports'
 * processes share out: each writes all its lines with one write() (out is O_APPEND),
 * so they do not interleave. */
static void print_records(const struct sim_port *p, FILE *out)
{
	char *text = NULL;
	size_t len = 0, done = 0;
	FILE *m = open_memstream(&text, &len);

	if (m == NULL)
		return;
	for (size_t k = 0; k < p->npkt; k++)
		print_packet(m, p, k);
	if (p->cfg.dev.kind != SIM_DEV_NONE)
		print_wire(m, p);
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

/* Wire mode: the hand-overs keep their due times better as SCHED_FIFO with locked
 * memory (best effort: without, their lateness shows in print_wire). */
static void wire_rt(const char *name, int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	if (prio <= 0)
		return;
	if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0 || mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		fprintf(stderr, "portlogd-sim: %s: not SCHED_FIFO %d with locked memory (%s): "
			"hand-overs will be later\n", name, prio, strerror(errno));
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
		{ "output", required_argument, NULL, 'o' }, { "device", required_argument, NULL, 'D' },
		{ "spin", required_argument, NULL, 'S' }, { "daemon-hold", required_argument, NULL, 'H' },
		{ "pace", no_argument, NULL, 'P' }, { "lens", required_argument, NULL, 'l' },
		{ "gap-chars", required_argument, NULL, 'C' }, { "hold", required_argument, NULL, 'K' },
		{ "rt-priority", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	struct sim_cfg cfg = {
		.kind = SIM_BINARY, .min_len = 4, .max_len = 64, .max_frags = 3,
		.intra_gap_max_us = 200, .inter_gap_min_us = 50000, .inter_gap_max_us = 200000,
		.gap_us = 1000, .seed = (uint64_t)time(NULL), .lose_unread = 16, .lose_ms = 50,
	};
	unsigned gap_chars_lo = 0, gap_chars_hi = 0;
	int rt_prio = 50;
	struct sim_cfg pcfg[MAX_PORTS];
	const char *dir = "/tmp/portlogd-demo", *socks[MAX_PORTS];
	unsigned nconnect = 0;
	FILE *out = stdout;
	bool print = false;
	int opt, rc = 0;
	char name[32];

	while ((opt = getopt_long(argc, argv, "d:n:l:F:i:g:G:H:s:pb:c:o:D:Ph", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 'n': cfg.packets = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'l':
			if (strchr(optarg, '-') != NULL ? range(optarg, &cfg.min_len, &cfg.max_len) < 0
			    || cfg.min_len == 0 : sim_lens_parse(optarg, cfg.lens, &cfg.nlens) < 0) {
				fprintf(stderr, "portlogd-sim: --len wants MIN-MAX, MIN >= 1, or a list "
					"of up to %d sizes >= 1 (5,20,5,100)\n", SIM_MAX_LENS);
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
		case 'H': cfg.hold_us = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': cfg.seed = strtoull(optarg, NULL, 0); break;
		case 'p': print = true; break;
		case 'b': cfg.baud = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'D':
			if (sim_dev_parse(optarg, &cfg.dev) < 0) {
				fprintf(stderr, "portlogd-sim: --device wants direct, fifo:T (T = 1, 4, "
					"8 or 14), usb:MS (1..255) or adapter:MS/SIZE (MS up to 255, "
					"SIZE 2..512), not '%s'\n", optarg);
				return 1;
			}
			break;
		case 'S': cfg.spin_us = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'P':
			cfg.dev = (struct sim_dev){ .kind = SIM_DEV_DIRECT };
			cfg.max_frags = 1;
			break;
		case 'C':
			if (range(optarg, &gap_chars_lo, &gap_chars_hi) < 0) {
				fprintf(stderr, "portlogd-sim: --gap-chars wants MIN-MAX\n");
				return 1;
			}
			break;
		case 'K':
			cfg.lose_ms = 50;
			if (sscanf(optarg, "%u/%u", &cfg.lose_unread, &cfg.lose_ms) < 1) {
				fprintf(stderr, "portlogd-sim: --hold wants N or N/MS\n");
				return 1;
			}
			break;
		case 'R': rt_prio = atoi(optarg); break;
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
	if ((cfg.dev.kind != SIM_DEV_NONE || gap_chars_hi > 0) && cfg.baud == 0) {
		fprintf(stderr, "portlogd-sim: --device, --pace and --gap-chars need --baud: the "
			"wire's bytes come at the baud\n");
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
			if (cfg.dev.kind != SIM_DEV_NONE)
				wire_rt(ports[i].name, rt_prio);
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
			else if (cfg.dev.kind != SIM_DEV_NONE)
				print_wire(stdout, &ports[i]);
			fflush(stdout);
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
