/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vm_wire - what one port of a guest run logged against what the host played into it at
 * the baud (tests/vm/run.sh's trials and restarts): figures, one row a run.
 *
 * vm_wire --log FILE [--log FILE]... --sent FILE [--sent FILE]... --port NAME --baud N
 *         [--label TEXT] [--short-max N] [--max-packet N] [--windows] [--pauses FILE]
 *         [--want-bytes] [--want-no-unmarked] [--want-marked] [--max-bias-chars X]
 *
 * The logs are read in the order given (oldest first), the --sent files (portlogd-sim
 * --pace --output) likewise, each one window. It prints, for the port:
 *   - packets sent, and of the clean ones (portlogd-sim's judgement: its writes kept
 *     to the pace and nothing lost on the wire): exactly one RX line; a wrong boundary
 *     with the EV late-delivery marks the README's rule asks for (e2e_packet_fit);
 *     other wrong boundaries, without them (no excuse but the log's own mark); packets
 *     whose bytes are not all in the log
 *     in one piece;
 *   - bytes sent (written, and lost on the wire: portlogd-sim --hold), logged, missing
 *     (written, not in the log), extra (in the log, out of order or twice): the logged
 *     bytes are aligned with the written ones, skipping holes;
 *   - the first-byte time error, TIME of the line that begins at a clean packet's first
 *     byte minus the host's time of that byte's write, for short packets (at most
 *     --short-max bytes, default 8) and long ones, p50 and p99; and the short-minus-long
 *     bias (medians), in us and in character times. Host and guest clocks differ by an
 *     offset nothing here can measure better than the data: the errors are taken
 *     against the long packets' median (so their p50 is 0 by construction and the bias
 *     is what is measured). Their drift is left alone: over 90 s of a guest under TCG
 *     a line through the errors moved by 9 ppm, under 50 us in a run of 5 s;
 *   - --windows: per --sent file, bytes sent, logged and lost, where the holes were, and
 *     the bytes said as held across a restart (EV late-delivery case=restart: the port
 *     stayed open while no daemon ran), each counted in the window of the first byte
 *     of the line it marks.
 *   - --pauses FILE (the guest test's pause: "N STOP_SENT STOP_ACKED CONT_SENT
 *     CONT_ACKED" a line, the host's CLOCK_REALTIME around QEMU's stop and cont; a paced
 *     port, a byte a hand-over): the hand-overs the paused guest left in the socket, each
 *     unread across a pause or written while one held so waited unread (QEMU takes them
 *     in order), and the packets their lateness made unclean at the simulator, judged
 *     after all when the rest of their hand-overs kept to the gap (sim_packet_clean's
 *     rule with that lateness taken away: the pause is the stall under test, not a fault
 *     of the host's wire). Never fewer packets judged than without it;
 *   - each clean packet with a wrong boundary and no mark (up to 5): its bytes as sent,
 *     the simulator's record of it (its hand-overs' lateness), and the port's log
 *     lines around it;
 * The last line is "vm_wire KEY=VALUE ..." with the same figures, for tables.
 * Measurement by default (exit 0 when the files could be read); the --want options make
 * it a check (exit 1 when one does not hold): --want-bytes every byte written logged
 * once, in order; --want-no-unmarked no wrong boundary without its marks; --want-marked
 * at least one wrong boundary with them (a stall made on purpose decided something);
 * --max-bias-chars X |bias| at most X character times.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "vm_sent.h"

#define NONE ((size_t)-1)

/*
 * map[i] = where written byte i is in the logged bytes, or NONE. Logged bytes are
 * taken in order; at a mismatch the written stream is searched ahead for the next 8
 * logged bytes (fewer at the end): found, the bytes skipped are a hole; not found, the
 * logged byte is extra (out of order or twice). Returns the number of extra bytes.
 */
static size_t align(const uint8_t *sent, size_t ns, const uint8_t *got, size_t ng, size_t *map)
{
	size_t i = 0, extra = 0;

	for (size_t k = 0; k < ns; k++)
		map[k] = NONE;
	for (size_t j = 0; j < ng;) {
		if (i < ns && sent[i] == got[j]) {
			map[i++] = j++;
			continue;
		}
		size_t want = ng - j < 8 ? ng - j : 8;
		const uint8_t *at = i + 1 < ns ? memmem(sent + i + 1, ns - i - 1, got + j, want) : NULL;
		if (at != NULL) {
			i = (size_t)(at - sent);
		} else {
			extra++;
			j++;
		}
	}
	return extra;
}

static double us(int64_t ns)
{
	return (double)ns / 1e3;
}

/* Packet k, which the log's lines first..last (starts, idx: e2e_concat's) hold with a
 * wrong boundary and no mark: what was sent and the port's log lines around, as "# ". */
static void explain(const struct vm_sent *s, size_t k, const struct e2e_log *log, const char *port,
		    const size_t *idx, size_t first, size_t last)
{
	size_t from = idx[first] > 4 ? idx[first] - 4 : 0, to = idx[last] + 5;

	printf("# packet %zu: %zu bytes sent at %.6f (%.1f ms after the one before ended):",
	       k, s->pkt_len[k], (double)s->pkt_t[k] / 1e9,
	       k > 0 ? (double)(s->pkt_t[k] - s->pkt_end[k - 1]) / 1e6 : -1.0);
	for (size_t b = 0; b < s->pkt_len[k]; b++)
		printf("%s%02x", b ? "" : " ", s->data[s->pkt_off[k] + b]);
	printf("; hand-overs (bytes@us late):%s\n", s->pkt_note[k]);
	for (size_t i = from; i < to && i < log->n; i++)
		if (strcmp(log->line[i].src, port) == 0)
			printf("#   %s\n", log->line[i].text);
}

#define VM_PAUSES 256

/* The host's pauses of the guest: [stop sent, cont acknowledged], CLOCK_REALTIME ns. */
static size_t read_pauses(const char *path, int64_t *from, int64_t *to)
{
	FILE *f = fopen(path, "r");
	char line[256];
	size_t n = 0;

	if (f == NULL)
		return 0;
	while (n < VM_PAUSES && fgets(line, sizeof(line), f) != NULL) {
		long double a, b, c, d;
		unsigned j;

		if (sscanf(line, "%u %Lf %Lf %Lf %Lf", &j, &a, &b, &c, &d) == 5) {
			from[n] = (int64_t)(a * 1e9L);
			to[n++] = (int64_t)(d * 1e9L);
		}
	}
	fclose(f);
	return n;
}

/*
 * --pauses: which packets to judge although the simulator found them unclean. A
 * hand-over (the record's LEN@LATE_US, due when its last byte ended on the wire) is
 * the pause's when it was unread across one, or written while a hand-over so held was
 * still unread (QEMU reads its socket in order). The packets with such a hand-over, or
 * next to one, are judged when sim_packet_clean's rule holds with that lateness taken
 * away (none is earlier than due: the least lateness is taken as 0). held[j]: the
 * bytes pause j held. Returns the number of packets the pauses made late.
 */
static size_t pause_judge(const struct vm_sent *s, unsigned baud, const int64_t *from,
			  const int64_t *to, size_t np, int64_t gap, int64_t hold, bool *judge,
			  size_t *held)
{
	int64_t char_ns = 10000000000LL / baud, held_until = INT64_MIN;
	int64_t *late = calloc(s->n + 1, sizeof(int64_t));
	bool *aff = calloc(s->n + 1, sizeof(bool)), *any = calloc(s->n + 1, sizeof(bool));
	size_t paused = 0, chain = 0;

	for (size_t k = 0; k < s->n; k++) {
		const char *p = s->pkt_note[k];
		size_t in = 0;
		unsigned len;
		double l;
		int used;

		while (sscanf(p, " %u@%lf%n", &len, &l, &used) == 2) {
			size_t end = in + len < s->pkt_len[k] ? in + len : s->pkt_len[k];
			int64_t due = s->pkt_t[k] + (int64_t)end * char_ns, until = due + (int64_t)(l * 1e3);
			bool mine = due < held_until;

			any[k] = true;
			for (size_t j = 0; j < np && !mine; j++)
				if (due <= to[j] && until >= from[j]) {
					mine = true;
					chain = j;
				}
			if (mine) {
				aff[k] = true;
				held[chain] += len;
				if (until > held_until)
					held_until = until;
			} else if (until - due > late[k]) {
				late[k] = until - due;
			}
			in = end;
			p += used;
		}
	}
	for (size_t k = 0; k < s->n; k++) {
		bool near = aff[k] || (k > 0 && aff[k - 1]) || (k + 1 < s->n && aff[k + 1]);
		bool ok = any[k] && s->pkt_lost[k] == 0 && s->pkt_pause[k] * 2 <= gap
			  && (s->pkt_pause[k] + late[k]) * 2 <= gap + hold;

		paused += aff[k];
		if (k > 0 && (s->pkt_t[k] - s->pkt_end[k - 1] - late[k - 1]) * 2 < 3 * gap)
			ok = false;
		if (k + 1 < s->n && any[k + 1] && (s->pkt_t[k + 1] - s->pkt_end[k] - late[k]) * 2 < 3 * gap)
			ok = false;
		judge[k] = near && ok;
	}
	free(late);
	free(aff);
	free(any);
	return paused;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "log", required_argument, NULL, 'l' }, { "sent", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' }, { "baud", required_argument, NULL, 'b' },
		{ "label", required_argument, NULL, 'L' }, { "short-max", required_argument, NULL, 'S' },
		{ "max-packet", required_argument, NULL, 'm' }, { "windows", no_argument, NULL, 'w' },
		{ "want-bytes", no_argument, NULL, 'B' }, { "want-no-unmarked", no_argument, NULL, 'U' },
		{ "max-bias-chars", required_argument, NULL, 'X' }, { "pauses", required_argument, NULL, 'P' },
		{ "want-marked", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	const char *logs[16], *sents[VM_SENT_WINDOWS], *port = NULL, *label = "", *pauses = NULL;
	unsigned nlogs = 0, nsents = 0, baud = 0, short_max = 8;
	size_t max_packet = 4096;
	bool windows = false, want_bytes = false, want_marks = false, want_marked = false;
	double max_bias = -1;
	int opt, failed = 0;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'l': if (nlogs < 16) logs[nlogs++] = optarg; break;
		case 's':
			if (nsents == VM_SENT_WINDOWS) {
				fprintf(stderr, "vm_wire: more than %d --sent files\n", VM_SENT_WINDOWS);
				return 2;
			}
			sents[nsents++] = optarg;
			break;
		case 'p': port = optarg; break;
		case 'b': baud = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'L': label = optarg; break;
		case 'S': short_max = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'm': max_packet = strtoull(optarg, NULL, 10); break;
		case 'w': windows = true; break;
		case 'B': want_bytes = true; break;
		case 'U': want_marks = true; break;
		case 'X': max_bias = atof(optarg); break;
		case 'P': pauses = optarg; break;
		case 'M': want_marked = true; break;
		default: return 2;
		}
	}
	if (nlogs == 0 || nsents == 0 || port == NULL || baud == 0) {
		fprintf(stderr, "usage: vm_wire --log FILE... --sent FILE... --port NAME --baud N [options]\n");
		return 2;
	}

	struct e2e_log log = { 0 };
	struct vm_sent s = { 0 };
	for (unsigned i = 0; i < nlogs; i++)
		if (e2e_read_log(&log, logs[i]) < 0) {
			fprintf(stderr, "vm_wire: %s: %s\n", logs[i], strerror(errno));
			return 2;
		}
	for (unsigned i = 0; i < nsents; i++)
		if (vm_sent_read(&s, sents[i], port) < 0) {
			fprintf(stderr, "vm_wire: %s: %s\n", sents[i], strerror(errno));
			return 2;
		}

	size_t got_len, *starts, *idx, nlines;
	uint8_t *got = e2e_concat(&log, port, &got_len, &starts, &idx, &nlines);
	size_t *map = malloc((s.len + 1) * sizeof(size_t));
	size_t extra = align(s.data, s.len, got, got_len, map), logged = 0, lost_wire = 0;
	for (size_t i = 0; i < s.len; i++)
		logged += map[i] != NONE;
	for (size_t k = 0; k < s.n; k++)
		lost_wire += s.pkt_lost[k];

	/* the guest's pauses: the packets they made late, judged where the rest kept time */
	int64_t p_from[VM_PAUSES], p_to[VM_PAUSES];
	size_t np = pauses ? read_pauses(pauses, p_from, p_to) : 0, p_held[VM_PAUSES] = { 0 };
	size_t paused = 0, paused_judged = 0;
	bool *judge = calloc(s.n + 1, sizeof(bool));
	int64_t gap_ns = e2e_open_us(&log, port, "gap_us") * 1000, hold_ns = e2e_open_us(&log, port, "hold_us") * 1000;
	if (pauses != NULL && np == 0) {
		fprintf(stderr, "vm_wire: %s: no pauses\n", pauses);
		return 2;
	}
	if (np > 0 && gap_ns > 0)
		paused = pause_judge(&s, baud, p_from, p_to, np, gap_ns, hold_ns > 0 ? hold_ns : 0, judge,
				     p_held);

	/* boundaries, and the first-byte times of the packets a line begins at */
	size_t clean = 0, one = 0, marked = 0, unmarked = 0, broken = 0, nshort = 0, nlong = 0;
	size_t u_one = 0, u_wrong = 0;      /* the unclean packets, for the record */
	size_t *why = malloc((s.n + 1) * 3 * sizeof(size_t));   /* unmarked: packet, lines */
	int64_t *es = malloc((s.n + 1) * sizeof(int64_t)), *el = malloc((s.n + 1) * sizeof(int64_t));
	for (size_t k = 0; k < s.n; k++) {
		size_t off = s.pkt_off[k], len = s.pkt_len[k], first, last;
		bool whole = len > 0 && map[off] != NONE;

		if (len == 0)
			continue;
		for (size_t b = 1; whole && b < len; b++)
			whole = map[off + b] == map[off] + b;
		paused_judged += !s.pkt_clean[k] && judge[k];
		if (!s.pkt_clean[k] && !judge[k]) {
			if (whole && nlines > 0) {
				bool exact = e2e_packet_fit(&log, port, starts, idx, nlines, max_packet,
							    map[off], len, &first, &last) == E2E_FIT_ONE;
				u_one += exact;
				u_wrong += !exact;
			}
			continue;
		}
		clean++;
		if (!whole || nlines == 0) {
			broken++;
			continue;
		}
		switch (e2e_packet_fit(&log, port, starts, idx, nlines, max_packet, map[off], len, &first, &last)) {
		case E2E_FIT_ONE: one++; break;
		case E2E_FIT_MARKED: marked++; break;
		case E2E_FIT_UNMARKED:
			why[3 * unmarked] = k;
			why[3 * unmarked + 1] = first;
			why[3 * unmarked + 2] = last;
			unmarked++;
			break;
		}
		if (starts[first] != map[off])
			continue;
		int64_t err = log.line[idx[first]].t - s.pkt_t[k];
		if (len <= short_max)
			es[nshort++] = err;
		else
			el[nlong++] = err;
	}
	/* the clocks' offset: the long packets' median error */
	int64_t offset = e2e_pct(el, nlong, 50);
	for (size_t k = 0; k < nshort; k++)
		es[k] -= offset;
	for (size_t k = 0; k < nlong; k++)
		el[k] -= offset;
	int64_t s50 = e2e_pct(es, nshort, 50), s99 = e2e_pct(es, nshort, 99);
	int64_t l50 = e2e_pct(el, nlong, 50), l99 = e2e_pct(el, nlong, 99);
	double char_ns = 1e10 / baud, bias = nshort && nlong ? (double)(s50 - l50) : 0;

	printf("%s%s%s: %zu packets sent, %zu clean: %zu exactly one RX line, %zu wrong boundary "
	       "marked, %zu unmarked, %zu not whole in the log; of the unclean, %zu one RX line, "
	       "%zu not\n", label, *label ? " " : "", port,
	       s.n, clean, one, marked, unmarked, broken, u_one, u_wrong);
	printf("  bytes: %zu sent (%zu written, %zu lost on the wire), %zu logged, %zu missing, "
	       "%zu extra (out of order or twice)%s\n", s.len + lost_wire, s.len, lost_wire, logged,
	       s.len - logged, extra, logged == s.len && extra == 0 ? ": every byte once, in order" : "");
	if (nshort > 0 && nlong > 0)
		printf("  first-byte error us (vs the long packets' median): short (<= %u bytes, %zu) "
		       "p50 %.1f p99 %.1f; long (%zu) p50 %.1f p99 %.1f; bias short-long %.1f us = "
		       "%.2f chars\n", short_max, nshort, us(s50), us(s99), nlong, us(l50), us(l99),
		       bias / 1e3, bias / char_ns);
	else
		printf("  first-byte error: %zu short and %zu long packets a line begins at (none to "
		       "compare)\n", nshort, nlong);

	if (np > 0) {
		printf("  pauses: %zu; bytes each held in the socket:", np);
		for (size_t j = 0; j < np; j++)
			printf(" %zu", p_held[j]);
		printf("; %zu packets they made late, %zu judged that the simulator had not (their "
		       "other hand-overs kept to the gap)\n", paused, paused_judged);
	}
	for (size_t u = 0; u < unmarked && u < 5; u++)
		explain(&s, why[3 * u], &log, port, idx, why[3 * u + 1], why[3 * u + 2]);

	/* held bytes: each EV late-delivery case=restart of the port marks the line it is
	 * dated at (the next RX line of that time); bytes= counted at that line's first
	 * sent byte */
	size_t *held_at = calloc(s.len + 1, sizeof(size_t)), *inv = malloc((got_len + 1) * sizeof(size_t));
	size_t held_total = 0;
	for (size_t j = 0; j <= got_len; j++)
		inv[j] = NONE;
	for (size_t i = 0; i < s.len; i++)
		if (map[i] != NONE)
			inv[map[i]] = i;
	for (size_t i = 0; i < log.n; i++) {
		const char *txt = log.line[i].text, *b = strstr(txt, " bytes=");
		size_t k = 0;

		if (strcmp(log.line[i].src, port) != 0 || strstr(txt, " EV late-delivery ") == NULL
		    || strstr(txt, " case=restart") == NULL || b == NULL)
			continue;
		while (k < nlines && (idx[k] < i || log.line[idx[k]].t != log.line[i].t))
			k++;
		held_total += strtoull(b + 7, NULL, 10);
		if (k < nlines && inv[starts[k]] != NONE)
			held_at[inv[starts[k]]] += strtoull(b + 7, NULL, 10);
	}
	if (windows) {
		for (unsigned w = 0; w < s.nwin; w++) {
			size_t k0 = w ? s.win_end[w - 1] : 0, k1 = s.win_end[w];
			size_t wr = 0, lw = 0, lg = 0, holes = 0, held = 0;
			for (size_t k = k0; k < k1; k++) {
				wr += s.pkt_len[k];
				lw += s.pkt_lost[k];
				for (size_t b = 0; b < s.pkt_len[k]; b++) {
					size_t i = s.pkt_off[k] + b;
					lg += map[i] != NONE;
					holes += map[i] == NONE && (i == 0 || map[i - 1] != NONE);
					held += held_at[i];
				}
			}
			printf("  window %u (%s): %zu bytes sent, %zu logged, %zu lost (%zu on the wire, "
			       "%zu written but not logged, in %zu hole(s)), %zu held across a restart "
			       "and marked\n", w + 1, sents[w], wr + lw, lg, wr + lw - lg, lw, wr - lg, holes,
			       held);
			printf("vm_window label=%s window=%u sent=%zu written=%zu lost_wire=%zu logged=%zu "
			       "missing=%zu holes=%zu held=%zu\n", *label ? label : "-", w + 1, wr + lw, wr, lw,
			       lg, wr - lg, holes, held);
			/* the wire's losses: runs of packets with bytes lost, between which writes */
			for (size_t k = k0, shown = 0; k < k1 && shown < 5; k++) {
				size_t e = k, n = 0;
				if (s.pkt_lost[k] == 0)
					continue;
				while (e < k1 && s.pkt_lost[e] > 0)
					n += s.pkt_lost[e++];
				int64_t from = k > 0 ? s.pkt_end[k - 1] : 0, to = e < s.n ? s.pkt_t[e] : 0;
				printf("    %zu bytes lost on the wire in packets %zu..%zu, between the writes at "
				       "%.3f and %.3f s (%.0f ms)\n", n, k, e - 1, (double)from / 1e9,
				       (double)to / 1e9, from && to ? (double)(to - from) / 1e6 : 0.0);
				shown++;
				k = e;
			}
			for (size_t k = k0, shown = 0; k < k1 && shown < 5; k++)
				for (size_t b = 0; b < s.pkt_len[k]; b++) {
					size_t i = s.pkt_off[k] + b, e = i;
					if (map[i] != NONE || (i > 0 && map[i - 1] == NONE))
						continue;
					while (e < s.len && map[e] == NONE)
						e++;
					printf("    hole of %zu bytes written but not logged from packet %zu (sent at "
					       "%.3f s)\n", e - i, k, (double)s.pkt_t[k] / 1e9);
					shown++;
				}
		}
	}
	printf("vm_wire label=%s port=%s baud=%u packets=%zu clean=%zu one=%zu marked=%zu "
	       "unmarked=%zu broken=%zu unclean_one=%zu unclean_wrong=%zu sent=%zu "
	       "written=%zu lost_wire=%zu logged=%zu missing=%zu "
	       "extra=%zu short_p50_us=%.1f short_p99_us=%.1f long_p50_us=%.1f long_p99_us=%.1f "
	       "bias_us=%.1f bias_chars=%.2f held=%zu paused=%zu paused_judged=%zu\n",
	       *label ? label : "-", port, baud, s.n,
	       clean, one, marked, unmarked, broken, u_one, u_wrong, s.len + lost_wire,
	       s.len,
	       lost_wire, logged,
	       s.len - logged, extra, us(s50), us(s99), us(l50), us(l99), bias / 1e3, bias / char_ns,
	       held_total, paused, paused_judged);

	if (want_bytes && (logged != s.len || extra != 0)) {
		printf("FAIL %s: %zu of %zu bytes logged, %zu extra (want every byte once, in order)\n",
		       port, logged, s.len, extra);
		failed = 1;
	}
	if (want_marks && unmarked > 0) {
		printf("FAIL %s: %zu wrong boundaries without their EV late-delivery marks\n", port,
		       unmarked);
		failed = 1;
	}
	if (want_marked && marked == 0) {
		printf("FAIL %s: no wrong boundary with its marks among %zu judged packets (want some: "
		       "the stall made here decided nothing)\n", port, clean);
		failed = 1;
	}
	if (max_bias >= 0 && (nshort == 0 || nlong == 0 || bias / char_ns > max_bias ||
			      -bias / char_ns > max_bias)) {
		printf("FAIL %s: short-minus-long first-byte bias %.2f chars (want within %.2f)\n", port,
		       bias / char_ns, max_bias);
		failed = 1;
	}
	free(map);
	free(judge);
	free(why);
	free(held_at);
	free(inv);
	free(es);
	free(el);
	free(got);
	free(starts);
	free(idx);
	vm_sent_free(&s);
	e2e_free_log(&log);
	return failed;
}
