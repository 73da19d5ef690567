/* SPDX-License-Identifier: GPL-2.0-or-later */
/* replay.c - portlogd --replay: read the logs, note what cannot be replayed, play, report. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "export.h"
#include "fmt.h"
#include "reasm.h"
#include "replay.h"
#include "thread.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: portlogd --replay [--source NAME (--to PATH | --pty LINK)]... [--speed X]\n"
		"                [--since TIME] [--until TIME] [--dir rx|tx] [--priority N] LOG...\n"
		"Plays the packets of the log files LOG (in the order given, oldest first;\n"
		"plain or .gz; - is standard input) again, each at its time after the first:\n"
		"into a pty that an application opens as if it were the port, or a port.\n\n"
		"      --source NAME   replay this source; the next --to or --pty is its output\n"
		"                      (repeatable; without it, the log's one source with packets)\n"
		"      --to PATH       write to PATH: a serial port (set to the logged baud and\n"
		"                      format), an existing pty, a FIFO or a file that exists,\n"
		"                      - for standard output\n"
		"      --pty LINK      make a pty and link its slave at LINK; start when an\n"
		"                      application opens LINK\n"
		"      --speed X       divide the intervals by X (default 1); 0: as fast as the\n"
		"                      output takes the bytes\n"
		"      --dir rx|tx     replay the RX lines (from the device, default) or the TX\n"
		"                      lines (to the device)\n"
		"      --since TIME    only packets at or after TIME\n"
		"      --until TIME    only packets before TIME\n"
		"      --priority N    play at SCHED_FIFO priority N (1-99), memory locked\n"
		"  -h, --help          print this help and exit\n\n"
		"A packet's bytes are paced at the port's logged baud (a port's UART paces them\n"
		"itself). What cannot be replayed as logged is said: a DROP (bytes unknown),\n"
		"an EV late-delivery (a doubtful boundary), a stretch when the daemon or the\n"
		"port was away, a clock step. At the end: how late packets started (p50, p99,\n"
		"max); each packet with a write more than a character time late is named.\n"
		"Exit status: 0 every packet replayed; 1 done, but lines were skipped, a DROP or\n"
		"a gap is in the window, or a signal stopped it; 2 bad command line, a LOG\n"
		"unreadable, or an output not opened or not written. See portlogd(8).\n");
}

/* ---- the play ---- */

static atomic_bool *stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(stop_flag, true);
}

static void say_late(struct replay *r, size_t *said, struct fmt *f)
{
	/* acquire: each entry and its packet's figures, as the player stored them */
	size_t n = atomic_load_explicit(&r->nlate, memory_order_acquire);
	char a[FMT_TIME_MAX];

	for (; *said < n; (*said)++) {
		const struct replay_pkt *p = &r->pkt[r->late[*said]];
		const struct replay_out *o = NULL;

		for (unsigned i = 0; i < r->nout; i++)
			if (r->out[i].src == p->src)
				o = &r->out[i];
		fprintf(stderr, "portlogd: %s:%llu: %s %s at %s: late on %s: ", p->file,
			(unsigned long long)p->lineno, o->source, replay_dir_word(r), replay_when(f, p->t, a), o->path);
		if (p->late_ns > o->late_ns)
			fprintf(stderr, "its first byte %lld us after its time (a character: %lld us)",
				(long long)(p->late_ns / NS_PER_US), (long long)(o->late_ns / NS_PER_US));
		if (o->pace && p->pause_ns > o->split_ns)
			fprintf(stderr, "%sa pause of %lld us inside it (3.5 characters: %lld us; a "
				"reader may end the packet there)", p->late_ns > o->late_ns ? "; " : "",
				(long long)(p->pause_ns / NS_PER_US), (long long)(o->split_ns / NS_PER_US));
		fputc('\n', stderr);
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The start error over every packet written: how long after its time its first write returned. */
static void say_timing(const struct replay *r)
{
	int64_t *v = malloc((r->npkt ? r->npkt : 1) * sizeof(*v));
	size_t n = 0;

	if (v == NULL)
		return;
	for (size_t i = 0; i < r->npkt; i++)
		if (r->pkt[i].played)
			v[n++] = r->pkt[i].late_ns;
	if (n > 0 && r->speed != 0) {
		qsort(v, n, sizeof(*v), cmp_i64);
		fprintf(stderr, "portlogd: replay: start error p50=%lldus p99=%lldus max=%lldus over %zu "
			"packets (first byte written after its time; %zu late)\n",
			(long long)(v[(n - 1) / 2] / NS_PER_US), (long long)(v[(n - 1) * 99 / 100] / NS_PER_US),
			(long long)(v[n - 1] / NS_PER_US), n, atomic_load(&r->nlate));
	}
	free(v);
}

static int play(struct replay *r, int priority)
{
	struct thread th;
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, old;
	struct fmt f;
	size_t said = 0;
	int degraded = 0, rc;

	fmt_init(&f, CONF_TS_ISO, CONF_PAYLOAD_BOTH);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!replay_wait_apps(r))
		return 0;
	if (priority > 0 && mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		fprintf(stderr, "portlogd: replay: cannot lock memory (%s): page faults may delay "
			"it; fix: ulimit -l unlimited, or CAP_IPC_LOCK\n", strerror(errno));
	/* the player takes no signal: it sees the flag within 20 ms */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	rc = thread_start(&th, "plog-replay", priority, -1, replay_play, r, &degraded);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		fprintf(stderr, "portlogd: replay: cannot start its thread: %s\n", strerror(-rc));
		return -1;
	}
	if (degraded)
		fprintf(stderr, "portlogd: replay: SCHED_FIFO %d refused: playing at normal "
			"priority; fix: run as root, or CAP_SYS_NICE / ulimit -r %d\n", priority,
			priority);
	while (!atomic_load_explicit(&r->done, memory_order_acquire)) {
		say_late(r, &said, &f);
		nanosleep(&(struct timespec){ 0, 50 * NS_PER_MS }, NULL);
	}
	thread_join(&th);
	say_late(r, &said, &f);
	return 0;
}

/* Why output o stopped before its end, where, and what to do; by: the bytes it took whole. */
static void say_stopped(const struct replay *r, const struct replay_out *o, uint64_t by)
{
	const struct replay_pkt *p = o->next < o->n ? &r->pkt[o->idx[o->next]] : NULL;
	const char *to = strcmp(o->path, "-") == 0 ? "standard output" : o->path;
	char at[FMT_TIME_MAX + 300] = "";
	struct fmt f;
	char a[FMT_TIME_MAX];

	fmt_init(&f, CONF_TS_ISO, CONF_PAYLOAD_BOTH);
	if (p != NULL)
		snprintf(at, sizeof(at), " in the %s of %s:%llu (at %s)", replay_dir_word(r), p->file,
			 (unsigned long long)p->lineno, replay_when(&f, p->t, a));
	by += o->sent;
	if (o->stuck)
		fprintf(stderr, "portlogd: --to %s: its reader took nothing for %d s (a non-blocking "
			"pipe that nobody reads): stopped after %llu bytes%s; fix: read %s, or "
			"replay --to a file\n", o->path, REPLAY_STUCK_S, (unsigned long long)by, at, to);
	else if (o->err == ENOSPC || o->err == EDQUOT || o->err == EFBIG)
		fprintf(stderr, "portlogd: --to %s: %s after %llu bytes%s; fix: free space on its "
			"filesystem (df %s), or replay --to another place; --since %s starts at "
			"that packet\n", o->path, strerror(o->err), (unsigned long long)by, at,
			strcmp(o->path, "-") == 0 ? "." : o->path, p != NULL ? a : "TIME");
	else
		fprintf(stderr, "portlogd: --to %s: %s after %llu bytes%s\n", o->path, strerror(o->err),
			(unsigned long long)by, at);
}

/* ---- the command ---- */

static int parse_speed(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(*v) || *v < 0 || *v > 1e6) {
		fprintf(stderr, "portlogd: --speed %s: give a number from 0 to 1000000 (1: as "
			"logged, 2: twice as fast, 0: as fast as the output takes it)\n", s);
		return -1;
	}
	return 0;
}

int replay_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "replay", no_argument, NULL, 'R' },
		{ "source", required_argument, NULL, 's' },
		{ "to", required_argument, NULL, 't' },
		{ "pty", required_argument, NULL, 'p' },
		{ "speed", required_argument, NULL, 'x' },
		{ "dir", required_argument, NULL, 'd' },
		{ "since", required_argument, NULL, 'S' },
		{ "until", required_argument, NULL, 'U' },
		{ "priority", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct replay r = { .dir = REC_DIR_MAIN, .speed = 1 };
	struct replay_input in = { .until = INT64_MAX };
	struct replay_tally ty = { 0 };
	char **names = calloc((size_t)argc, sizeof(char *));
	unsigned nnames = 0;
	int opt, priority = 0, rc = REPLAY_FAILED;
	uint64_t unread;

	r.out = calloc(REPLAY_OUT_MAX, sizeof(*r.out));
	if (names == NULL || r.out == NULL) {
		fprintf(stderr, "portlogd: out of memory\n");
		goto done;
	}
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'R': break;
		case 's':
			for (unsigned i = 0; i < nnames; i++)
				if (strcmp(names[i], optarg) == 0) {
					fprintf(stderr, "portlogd: --source %s: given twice\n", optarg);
					goto done;
				}
			names[nnames++] = optarg;
			break;
		case 't':
		case 'p':
			if (r.nout == REPLAY_OUT_MAX) {
				fprintf(stderr, "portlogd: more than %d outputs\n", REPLAY_OUT_MAX);
				goto done;
			}
			r.out[r.nout].path = optarg;
			r.out[r.nout++].make_pty = opt == 'p';
			break;
		case 'x':
			if (parse_speed(optarg, &r.speed) < 0)
				goto done;
			break;
		case 'd':
			if (strcmp(optarg, "rx") != 0 && strcmp(optarg, "tx") != 0) {
				fprintf(stderr, "portlogd: --dir %s: give rx (from the device) or tx "
					"(to the device)\n", optarg);
				goto done;
			}
			r.dir = optarg[0] == 't' ? REC_DIR_TX : REC_DIR_MAIN;
			break;
		case 'S':
		case 'U':
			if (export_time_arg(opt == 'S' ? "since" : "until", optarg,
					    opt == 'S' ? &in.since : &in.until) < 0)
				goto done;
			in.have_since |= opt == 'S';
			break;
		case 'P':
			priority = atoi(optarg);
			if (priority < 1 || priority > 99 || strspn(optarg, "0123456789") != strlen(optarg)) {
				fprintf(stderr, "portlogd: --priority %s: give 1 to 99 (SCHED_FIFO)\n",
					optarg);
				goto done;
			}
			break;
		case 'h': usage(stdout); rc = REPLAY_OK; goto done;
		default: usage(stderr); goto done;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "portlogd: --replay: no LOG file given (- reads standard input)\n");
		usage(stderr);
		goto done;
	}
	if (r.nout == 0 || (nnames > 0 && r.nout != nnames) || (nnames == 0 && r.nout != 1)) {
		fprintf(stderr, "portlogd: --replay: give one output (--to PATH or --pty LINK) for "
			"each --source (%u outputs, %u sources)\n", r.nout, nnames);
		goto done;
	}
	if (in.have_since && in.until <= in.since) {
		fprintf(stderr, "portlogd: --until is not after --since: nothing to replay\n");
		goto done;
	}
	if (export_logs_readable(argv + optind, (unsigned)(argc - optind)) < 0)
		goto done;

	in.names = names;
	in.nnames = nnames;
	in.logs = argv + optind;
	in.nlogs = (unsigned)(argc - optind);
	rc = replay_read(&r, &in, &ty);
	if (rc == REPLAY_FAILED)
		goto done;
	stop_flag = &r.stop;
	signal(SIGPIPE, SIG_IGN);       /* a reader gone: EPIPE, said below */
	if (replay_open(&r) < 0) {
		rc = REPLAY_FAILED;
		goto done;
	}
	if (play(&r, priority) < 0)
		rc = REPLAY_FAILED;
	unread = replay_close(&r);

	for (unsigned i = 0; i < r.nout; i++) {
		const struct replay_out *o = &r.out[i];
		uint64_t pk = 0, by = 0;

		for (size_t k = 0; k < o->n; k++)
			if (r.pkt[o->idx[k]].played) {
				pk++;
				by += r.pkt[o->idx[k]].len;
			}
		fprintf(stderr, "portlogd: replay: %s %s to %s: %llu of %zu packets, %llu bytes", o->source,
			replay_dir_word(&r), o->path, (unsigned long long)pk, o->n, (unsigned long long)by);
		if (o->back > 0)
			fprintf(stderr, "; %llu bytes came back (read, not kept)", (unsigned long long)o->back);
		if (o->err != 0) {
			fprintf(stderr, "; stopped: cannot write: %s", strerror(o->err));
			rc = REPLAY_FAILED;
		}
		fputc('\n', stderr);
		if (o->err != 0)
			say_stopped(&r, o, by);
	}
	say_timing(&r);
	if (unread > 0)
		fprintf(stderr, "portlogd: replay: %llu bytes were still unread by the application "
			"at the end\n", (unsigned long long)unread);
	if (ty.drops + ty.gaps + ty.late_deliveries + ty.steps + ty.backward + ty.bauds + ty.held > 0)
		fprintf(stderr, "portlogd: replay: not as logged (each said above): drops=%llu "
			"(%llu packets, %llu bytes) gaps=%llu late_delivery=%llu clock_steps=%llu "
			"backwards=%llu baud_changes=%llu held=%llu\n", (unsigned long long)ty.drops,
			(unsigned long long)ty.drop_pkts, (unsigned long long)ty.drop_bytes,
			(unsigned long long)ty.gaps, (unsigned long long)ty.late_deliveries,
			(unsigned long long)ty.steps, (unsigned long long)ty.backward,
			(unsigned long long)ty.bauds, (unsigned long long)ty.held);
	if (atomic_load(&r.stop)) {
		size_t total = 0;

		for (unsigned i = 0; i < r.nout; i++)
			total += r.out[i].n;
		fprintf(stderr, "portlogd: replay: stopped by a signal after %llu of %zu packets\n",
			(unsigned long long)r.played, total);
		if (rc == REPLAY_OK)
			rc = REPLAY_INCOMPLETE;
	}
done:
	replay_free(&r);
	free(r.out);
	free(names);
	return rc;
}
