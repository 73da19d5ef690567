/* SPDX-License-Identifier: GPL-2.0-or-later */
/* parts.c - the threads a config asks for, and the registry of the running parts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "parts.h"

const char *const part_kind_name[PART_NKINDS] = {
	[PART_MAIN] = "main", [PART_TIMER] = "timer", [PART_PARALLEL] = "parallel",
	[PART_SERIAL] = "serial", [PART_LINES] = "lines", [PART_TX] = "tx",
	[PART_FLUSHER] = "flusher", [PART_SENSOR] = "sensor",
	[PART_CLOCK] = "clock",
};

/* The stall sensors (sensor.h): on each CPU the readers are pinned to, at their
 * lowest priority; when one is not, one plan stands for a sensor on every CPU. */
static unsigned plan_sensors(const struct conf *c, struct part_plan *out)
{
	struct part_plan t = { .kind = PART_SENSOR, .priority = parts_sensor_priority(c),
			       .cpu = CONF_CPU_ANY, .line = c->logger.line };
	unsigned n = 0;

	for (unsigned i = 0; i < c->nserial; i++)
		if (c->serial[i].cpu == CONF_CPU_ANY) {
			out[0] = t;
			return 1;
		}
	for (unsigned i = 0; i < c->nserial; i++) {
		bool seen = false;

		for (unsigned j = 0; j < n; j++)
			seen |= out[j].cpu == c->serial[i].cpu;
		if (!seen) {
			t.cpu = c->serial[i].cpu;
			out[n++] = t;
		}
	}
	return n;
}

struct part_plan *parts_plan(const struct conf *c, unsigned *count)
{
	/* the flusher, the timer, three threads a serial port, a sampler, the sensors
	 * (one per serial port at most, or one) */
	struct part_plan *out = calloc(3 + 4 * (size_t)c->nserial + c->nparallel, sizeof(*out));
	unsigned n = 0;

	*count = 0;
	if (out == NULL)
		return NULL;
	out[n++] = (struct part_plan){
		.kind = PART_FLUSHER, .priority = c->logger.flusher_priority,
		.cpu = c->logger.flusher_cpu, .line = c->logger.line,
	};
	if (parts_timer_runs(c))
		out[n++] = (struct part_plan){
			.kind = PART_TIMER, .priority = c->timer.priority, .cpu = c->timer.cpu,
			.line = c->timer.line,
		};
	for (unsigned i = 0; i < c->nserial; i++) {
		const struct conf_serial *s = &c->serial[i];
		struct part_plan t = {
			.kind = PART_SERIAL, .port = s->name, .priority = s->priority, .cpu = s->cpu,
			.line = s->line, .ring = conf_ring_serial(&c->logger, s),
		};

		out[n++] = t;
		if (s->lines) {
			t.kind = PART_LINES;    /* the reader's priority and CPU, a ring of its own */
			out[n++] = t;
		}
		if (conf_serial_has_tx(s)) {
			t.kind = PART_TX;       /* the same, for what goes to the device */
			out[n++] = t;
		}
	}
	for (unsigned i = 0; i < c->nparallel; i++) {
		const struct conf_parallel *p = &c->parallel[i];

		out[n++] = (struct part_plan){
			.kind = PART_PARALLEL, .port = p->name, .priority = p->priority, .cpu = p->cpu,
			.line = p->line, .ring = conf_ring_parallel(&c->logger, &c->timer),
		};
	}
	*count = n + plan_sensors(c, out + n);
	return out;
}

int parts_sensor_priority(const struct conf *c)
{
	int prio = 99;

	for (unsigned i = 0; i < c->nserial; i++)       /* SCHED_OTHER is 0, below all */
		if (c->serial[i].priority < prio)
			prio = c->serial[i].priority;
	return c->nserial > 0 ? prio : 0;
}

void parts_cpu_key(const struct part_plan *t, char *buf, size_t len)
{
	switch (t->kind) {
	case PART_FLUSHER:
		snprintf(buf, len, "[logger] flusher_cpu");
		break;
	case PART_TIMER:
		snprintf(buf, len, "[timer] cpu");
		break;
	case PART_SENSOR:
		snprintf(buf, len, "[serial NAME] cpu");
		break;
	case PART_PARALLEL:
		snprintf(buf, len, "[parallel %s] cpu", t->port);
		break;
	default:
		snprintf(buf, len, "[serial %s] cpu", t->port);
		break;
	}
}

void parts_init(struct parts *ps)
{
	memset(ps, 0, sizeof(*ps));
}

void parts_fini(struct parts *ps)
{
	free(ps->part);
	free(ps->probe);
	memset(ps, 0, sizeof(*ps));
}

bool parts_add(struct parts *ps, const struct part *p, struct health_beat *beat)
{
	if (!grow_one(&ps->part, ps->n, sizeof(*ps->part), 16)
	    || (beat != NULL && !grow_one(&ps->probe, ps->nprobe, sizeof(*ps->probe), 16)))
		return false;
	ps->part[ps->n] = *p;
	ps->part[ps->n].overruns_said = 0;
	ps->n++;
	if (beat != NULL)
		health_probe_init(&ps->probe[ps->nprobe++], beat, part_kind_name[p->kind], p->port);
	return true;
}

const char *parts_stat_name(const struct part *p)
{
	return p->port != NULL ? p->port : part_kind_name[p->kind];
}

void parts_stat_text(const struct part *p, char *text)
{
	struct fmt_kv kv;

	fmt_kv_init(&kv, text, FMT_FIELDS_MAX);
	fmt_kv_word(&kv, parts_stat_name(p));
	p->stat(p->obj, &kv);
}

void parts_put_faults(struct fmt_kv *kv, const char *prefix, const struct thread *t)
{
	char min[24], maj[24];
	uint64_t minflt, majflt;

	snprintf(min, sizeof(min), "%sminflt", prefix);
	snprintf(maj, sizeof(maj), "%smajflt", prefix);
	if (thread_faults(t, &minflt, &majflt)) {
		fmt_kv_u64(kv, min, minflt);
		fmt_kv_u64(kv, maj, majflt);
	} else {
		fmt_kv_str(kv, min, "-");
		fmt_kv_str(kv, maj, "-");
	}
}
