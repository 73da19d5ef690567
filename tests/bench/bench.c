/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench.c - ring (beside ck_ring), flusher and merge throughput: prints numbers, never a verdict.
 *
 * `bench merge` runs the merge across 1-256 rings alone. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "conf.h"
#include "flush.h"
#include "rec.h"
#include "ring.h"
#include "source.h"
#include "testutil.h"

#ifdef HAVE_CK
#include <ck_ring.h>
CK_RING_PROTOTYPE(rec, rec)
#endif

#define RUNS 3
#define RING_SLOTS 4096u
#define RECORDS_SMALL 8000000u      /* 1-slot records per ring run */
#define RECORDS_BIG 4000000u        /* 200-byte (2-slot) records per ring run */
#define BIG_LEN 200u
#define SMALL_LEN 64u
#define FLUSH_RECORDS (1u << 18)    /* lines per flusher run */

static double now_s(void)
{
	return (double)mono_ns() / 1e9;
}

static long ncpus;

/* Producer on CPU 0, consumer on CPU 1, when there are two; failure only costs noise. */
static void pin(int cpu)
{
	cpu_set_t set;

	if (ncpus < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* ---- ring throughput ---- */

enum impl { IMPL_OURS, IMPL_CK };

struct ring_run {
	enum impl impl;
	uint32_t n, len;
	_Atomic int ready;
	_Atomic bool go;
	struct source src;
#ifdef HAVE_CK
	struct ck_ring ck;
	struct rec *ck_buf;
#endif
	double t0, t1;
	uint64_t bad;       /* records that came out wrong: must stay 0 */
	uint64_t sum;       /* keeps the consumer's reads alive */
};

static void wait_go(struct ring_run *b)
{
	atomic_fetch_add(&b->ready, 1);
	while (!atomic_load_explicit(&b->go, memory_order_acquire))
		tu_relax();
}

static void *ours_producer(void *arg)
{
	struct ring_run *b = arg;
	struct source *s = &b->src;
	uint32_t slots = rec_slots(b->len);
	uint8_t payload[BIG_LEN];
	struct rec head = { .kind = REC_RX };

	pin(0);
	memset(payload, 0x5a, sizeof(payload));
	wait_go(b);
	for (uint32_t k = 0; k < b->n; k++) {
		head.t_mono = k;
		while (!ring_reserve(&s->ring, slots))
			tu_relax();
		(void)source_push(s, &head, payload, b->len);  /* cannot drop: room reserved */
	}
	return NULL;
}

static void *ours_consumer(void *arg)
{
	struct ring_run *b = arg;
	struct ring *r = &b->src.ring;
	uint8_t pkt[BIG_LEN];

	pin(1);
	wait_go(b);
	b->t0 = now_s();
	for (uint32_t k = 0; k < b->n;) {
		const struct rec *h;
		uint32_t ready = ring_ready(r), slots;

		if (ready == 0) {
			tu_relax();
			continue;
		}
		/* like the flusher: read the head in place, rejoin a longer payload */
		h = &ring_rslot(r, 0)->rec;
		slots = rec_slots(h->len);
		if (h->seq != k || h->t_mono != k || h->len != b->len)
			b->bad++;
		if (slots > 1) {
			memcpy(pkt, h->data, REC_HEAD_DATA);
			for (uint32_t off = REC_HEAD_DATA, i = 1; off < h->len; off += REC_SIZE, i++)
				memcpy(pkt + off, ring_rslot(r, i)->raw,
				       h->len - off < REC_SIZE ? h->len - off : REC_SIZE);
			b->sum += pkt[h->len - 1];
		} else {
			b->sum += h->data[0];
		}
		ring_release(r, slots);
		k++;
	}
	b->t1 = now_s();
	return NULL;
}

#ifdef HAVE_CK
/* The same 128-byte record type; a 200-byte record is a head entry and one raw entry. */
static void *ck_producer(void *arg)
{
	struct ring_run *b = arg;
	uint32_t slots = rec_slots(b->len);
	union rec_slot e[2];
	uint8_t payload[BIG_LEN];

	pin(0);
	memset(payload, 0x5a, sizeof(payload));
	memset(e, 0, sizeof(e));
	wait_go(b);
	for (uint32_t k = 0; k < b->n; k++) {
		e[0].rec.kind = REC_RX;
		e[0].rec.t_mono = k;
		e[0].rec.seq = k;
		e[0].rec.len = (uint16_t)b->len;
		memcpy(e[0].rec.data, payload, b->len < REC_HEAD_DATA ? b->len : REC_HEAD_DATA);
		if (slots > 1)
			memcpy(e[1].raw, payload + REC_HEAD_DATA, b->len - REC_HEAD_DATA);
		for (uint32_t i = 0; i < slots; i++)
			while (!ck_ring_enqueue_spsc_rec(&b->ck, b->ck_buf, &e[i].rec))
				tu_relax();
	}
	return NULL;
}

static void *ck_consumer(void *arg)
{
	struct ring_run *b = arg;
	union rec_slot e[2];

	pin(1);
	wait_go(b);
	b->t0 = now_s();
	for (uint32_t k = 0; k < b->n; k++) {
		uint32_t slots;

		while (!ck_ring_dequeue_spsc_rec(&b->ck, b->ck_buf, &e[0].rec))
			tu_relax();
		if (e[0].rec.seq != k || e[0].rec.t_mono != k || e[0].rec.len != b->len)
			b->bad++;
		slots = rec_slots(e[0].rec.len);
		for (uint32_t i = 1; i < slots; i++)
			while (!ck_ring_dequeue_spsc_rec(&b->ck, b->ck_buf, &e[1].rec))
				tu_relax();
		b->sum += slots > 1 ? e[1].raw[b->len - REC_HEAD_DATA - 1] : e[0].rec.data[0];
	}
	b->t1 = now_s();
	return NULL;
}
#endif

/* One run; returns seconds, or a negative number when it could not run. */
static double ring_once(enum impl impl, uint32_t n, uint32_t len, uint64_t *bad)
{
	struct ring_run *b = calloc(1, sizeof(*b));
	void *(*prod)(void *) = ours_producer, *(*cons)(void *) = ours_consumer;
	pthread_t tp, tc;
	double t = -1;

	if (b == NULL)
		return -1;
	b->impl = impl;
	b->n = n;
	b->len = len;
	if (source_init(&b->src, "bench", RING_SLOTS) < 0)
		goto out;
#ifdef HAVE_CK
	if (impl == IMPL_CK) {
		b->ck_buf = aligned_alloc(64, RING_SLOTS * sizeof(struct rec));
		if (b->ck_buf == NULL)
			goto out;
		memset(b->ck_buf, 0, RING_SLOTS * sizeof(struct rec));
		ck_ring_init(&b->ck, RING_SLOTS);
		prod = ck_producer;
		cons = ck_consumer;
	}
#endif
	if (pthread_create(&tc, NULL, cons, b) != 0)
		goto out;
	if (pthread_create(&tp, NULL, prod, b) != 0) {
		b->n = 0;
		atomic_store(&b->go, true);
		pthread_join(tc, NULL);
		goto out;
	}
	while (atomic_load(&b->ready) < 2)
		tu_relax();
	atomic_store_explicit(&b->go, true, memory_order_release);
	pthread_join(tp, NULL);
	pthread_join(tc, NULL);
	t = b->t1 - b->t0;
	*bad += b->bad;
out:
#ifdef HAVE_CK
	free(b->ck_buf);
#endif
	source_fini(&b->src);
	free(b);
	return t;
}

static void ring_row(enum impl impl, const char *name, uint32_t n, uint32_t len)
{
	double best = 0;
	uint64_t bad = 0;
	uint32_t slots = rec_slots(len);

	for (int i = 0; i < RUNS; i++) {
		double t = ring_once(impl, n, len, &bad);

		if (t < 0) {
			printf("  %-9s %4u B  %u slot%s  cannot run: out of memory or threads\n",
			       name, len, slots, slots > 1 ? "s" : "");
			return;
		}
		if (i == 0 || t < best)
			best = t;
	}
	printf("  %-9s %4u B  %u slot%s  %9u  %8.2f  %9.0f  %9.0f%s\n", name, len, slots,
	       slots > 1 ? "s" : " ", n, (double)n / best / 1e6,
	       (double)n * len / best / 1e6, (double)n * slots * REC_SIZE / best / 1e6,
	       bad != 0 ? "  (records came out wrong!)" : "");
	fflush(stdout);
}

/* ---- flusher throughput ---- */

struct packet {
	const char *what;
	uint8_t data[80];
	uint32_t len;
};

static void flush_row(struct flusher *f, struct source *s, const struct packet *p)
{
	double best = 0, best_sync = 0;
	uint64_t best_bytes = 0;
	int64_t t_real = real_ns();

	for (int run = 0; run < RUNS; run++) {
		uint64_t bytes0;
		double t0, t1, t2;

		if (ftruncate(f->log.fd, 0) < 0) {
			printf("  cannot truncate the bench log: %s\n", strerror(errno));
			return;
		}
		/* pre-fill: one line per 10 us, so the time cache works as in real use */
		for (uint32_t k = 0; k < FLUSH_RECORDS; k++) {
			struct rec head = {
				.t_real = t_real + (int64_t)k * 10000, .t_mono = k, .kind = REC_RX,
			};

			if (!source_push(s, &head, p->data, p->len)) {
				printf("  the ring is too small for the bench\n");
				return;
			}
		}
		bytes0 = atomic_load(&f->log.bytes_written);
		t0 = now_s();
		(void)flush_drain(f, true);
		if (flush_write(f) < 0) {
			printf("  cannot write the bench log\n");
			return;
		}
		t1 = now_s();
		(void)fdatasync(f->log.fd);     /* timed, not checked: a number, not a verdict */
		t2 = now_s();
		if (run == 0 || t1 - t0 < best) {
			best = t1 - t0;
			best_sync = t2 - t1;
			best_bytes = atomic_load(&f->log.bytes_written) - bytes0;
		}
	}
	printf("  %-22s %7u  %6.0f  %9.2f  %7.0f  %9.1f\n", p->what, FLUSH_RECORDS,
	       (double)best_bytes / FLUSH_RECORDS, FLUSH_RECORDS / best / 1e6,
	       (double)best_bytes / best / 1e6, best_sync * 1e3);
	fflush(stdout);
}

static void bench_flush(void)
{
	char dir[] = "/tmp/portlogd-bench-XXXXXX", err[CONF_ERR_MAX];
	struct packet p[4] = {
		{ .what = "20 B binary (Modbus)" },
		{ .what = "20 B ASCII" },
		{ .what = "80 B ASCII (NMEA)" },
		{ .what = "80 B binary" },
	};
	static const char nmea[] =
		"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n";
	struct source s;
	struct flusher f;
	static struct parts ps;     /* the bench's one ring, as the flusher finds it */
	struct conf c = { 0 };
	uint64_t x = 0x9e3779b97f4a7c15u;

	p[0].len = p[1].len = 20;
	p[2].len = p[3].len = 80;
	for (uint32_t i = 0; i < 80; i++) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		p[0].data[i] = p[3].data[i] = (uint8_t)(x >> 56);
		p[1].data[i] = (uint8_t)nmea[i % 20];
		p[2].data[i] = (uint8_t)nmea[i % (sizeof(nmea) - 1)];
	}
	if (mkdtemp(dir) == NULL) {
		printf("flusher: cannot create a directory in /tmp: %s\n", strerror(errno));
		return;
	}
	conf_defaults(&c);
	snprintf(c.logger.log_file, sizeof(c.logger.log_file), "%s/bench.log", dir);
	c.logger.payload = CONF_PAYLOAD_BOTH;
	if (source_init(&s, "gps", FLUSH_RECORDS) < 0) {
		printf("flusher: out of memory\n");
		(void)rmdir(dir);
		return;
	}
	parts_init(&ps);
	(void)parts_add(&ps, &(struct part){ .kind = PART_SERIAL, .port = "gps", .src = &s }, NULL);
	if (flush_init(&f, &c, &ps, err, sizeof(err)) < 0) {
		printf("flusher: %s\n", err);
		source_fini(&s);
		(void)rmdir(dir);
		return;
	}
	printf("\nflusher: flush_drain + flush_write of %u pre-filled RX records into %s,\n"
	       "payload = both, timestamp = iso, best of %d; fdatasync timed after, apart\n",
	       FLUSH_RECORDS, c.logger.log_file, RUNS);
	printf("  %-22s %7s  %6s  %9s  %7s  %9s\n", "packet", "lines", "B/line", "Mlines/s",
	       "MB/s", "sync ms");
	for (int i = 0; i < 4; i++)
		flush_row(&f, &s, &p[i]);
	flush_fini(&f);
	source_fini(&s);
	(void)unlink(c.logger.log_file);
	(void)rmdir(dir);
	conf_free(&c);
}

/* ---- the flusher's merge across many rings (issue 31) ---- */

#define MERGE_RECORDS (1u << 18)    /* lines per merge run, spread over the rings */

/* flush_drain + flush_write of MERGE_RECORDS 20-byte RX records spread round-robin over
 * n rings in time order (each line from the next ring), best of RUNS: ns per line. */
static double merge_row(unsigned n, const char *dir)
{
	struct source *s = calloc(n, sizeof(*s));
	struct parts *ps = calloc(1, sizeof(*ps));
	uint32_t per = MERGE_RECORDS / n, slots = 2;
	char err[CONF_ERR_MAX];
	struct flusher f;
	struct conf c = { 0 };
	double best = 0;
	uint8_t data[20];
	int64_t t_real = real_ns();

	memset(data, 0x5a, sizeof(data));
	while (slots < per + 1)
		slots *= 2;
	conf_defaults(&c);
	snprintf(c.logger.log_file, sizeof(c.logger.log_file), "%s/merge.log", dir);
	parts_init(ps);
	for (unsigned i = 0; s != NULL && i < n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "p%u", i);
		if (source_init(&s[i], name, slots) < 0
		    || !parts_add(ps, &(struct part){ .kind = PART_SERIAL, .port = s[i].name,
						      .src = &s[i] }, NULL)) {
			printf("  %u rings: out of memory or registry full\n", n);
			return -1;
		}
	}
	if (s == NULL || flush_init(&f, &c, ps, err, sizeof(err)) < 0) {
		printf("  %u rings: %s\n", n, s == NULL ? "out of memory" : err);
		return -1;
	}
	for (int run = 0; run < RUNS; run++) {
		double t0, t1;

		if (ftruncate(f.log.fd, 0) < 0)
			break;
		for (uint32_t k = 0; k < per * n; k++) {
			struct rec head = {
				.t_real = t_real + (int64_t)k * 10000, .t_mono = k, .kind = REC_RX,
			};

			(void)source_push(&s[k % n], &head, data, sizeof(data));
		}
		t0 = now_s();
		(void)flush_drain(&f, false);
		(void)flush_write(&f);
		t1 = now_s();
		if (run == 0 || t1 - t0 < best)
			best = t1 - t0;
	}
	flush_fini(&f);
	for (unsigned i = 0; i < n; i++)
		source_fini(&s[i]);
	free(s);
	parts_fini(ps);
	free(ps);
	(void)unlink(c.logger.log_file);
	conf_free(&c);
	return best * 1e9 / (double)(per * n);
}

static void bench_merge(void)
{
	static const unsigned rings[] = { 1, 8, 32, 64, 128, 256 };
	char dir[] = "/tmp/portlogd-bench-XXXXXX";
	double one = 0;

	if (mkdtemp(dir) == NULL) {
		printf("merge: cannot create a directory in /tmp: %s\n", strerror(errno));
		return;
	}
	printf("\nflusher merge: flush_drain + flush_write of %u pre-filled 20 B RX records\n"
	       "spread round-robin over N rings in time order (each line from the next ring),\n"
	       "payload = both, best of %d: the cost of a line, and what the merge adds to it\n",
	       MERGE_RECORDS, RUNS);
	printf("  %6s  %9s  %11s  %12s\n", "rings", "Mlines/s", "ns per line", "merge ns/line");
	for (size_t i = 0; i < sizeof(rings) / sizeof(rings[0]); i++) {
		double ns = merge_row(rings[i], dir);

		if (ns < 0)
			continue;
		if (rings[i] == 1)
			one = ns;
		printf("  %6u  %9.2f  %11.0f  %12.0f\n", rings[i], 1e3 / ns, ns, ns - one);
		fflush(stdout);
	}
	(void)rmdir(dir);
}

static void header(void)
{
	struct utsname u;
	char model[128] = "unknown", line[256];
	FILE *fp = fopen("/proc/cpuinfo", "r");

	if (fp != NULL) {
		while (fgets(line, sizeof(line), fp) != NULL)
			if (strncmp(line, "model name", 10) == 0 && strchr(line, ':') != NULL) {
				snprintf(model, sizeof(model), "%s", strchr(line, ':') + 2);
				model[strcspn(model, "\n")] = '\0';
				break;
			}
		fclose(fp);
	}
	if (uname(&u) < 0)
		snprintf(u.release, sizeof(u.release), "unknown");
	printf("portlogd bench: nproc %ld, kernel %s, %s, cpu %s\n", ncpus, u.release, u.machine,
	       model);
	printf("compiler %s%s%s\n", __VERSION__,
#ifdef __OPTIMIZE__
	       ", optimized",
#else
	       ", NOT optimized",
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
	       ", WITH A SANITIZER: the numbers mean little"
#else
	       ""
#endif
	       );
}

int main(int argc, char **argv)
{
	double t0 = now_s();

	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	header();
	if (argc > 1 && strcmp(argv[1], "merge") == 0) {     /* that part alone */
		bench_merge();
		return 0;
	}
	printf("\nring: one producer thread, one consumer thread%s, %u slots of %u B,\n"
	       "spin with pause on full/empty, best of %d. portlogd: source_push, consumer\n"
	       "reads the head in place and copies a longer payload out; ck_ring 0.7.1:\n"
	       "enqueue/dequeue_spsc of the same 128 B record, one entry per slot.\n",
	       ncpus >= 2 ? " (pinned to CPUs 0 and 1)" : "", RING_SLOTS, REC_SIZE, RUNS);
	printf("  %-9s %6s  %-7s  %9s  %8s  %9s  %9s\n", "ring", "record", "", "records",
	       "Mrec/s", "MB/s data", "MB/s slots");
	ring_row(IMPL_OURS, "portlogd", RECORDS_SMALL, SMALL_LEN);
#ifdef HAVE_CK
	ring_row(IMPL_CK, "ck_ring", RECORDS_SMALL, SMALL_LEN);
#endif
	ring_row(IMPL_OURS, "portlogd", RECORDS_BIG, BIG_LEN);
#ifdef HAVE_CK
	ring_row(IMPL_CK, "ck_ring", RECORDS_BIG, BIG_LEN);
#else
	printf("  (ck_ring: not built; install libck-dev and reconfigure)\n");
#endif
	bench_flush();
	bench_merge();
	printf("\ntotal %.1f s\n", now_s() - t0);
	return 0;
}
