/* SPDX-License-Identifier: GPL-2.0-or-later */
/* log.c - diagnostics to stderr (foreground) or to the journal (service). */
#include <stdarg.h>
#include <stdio.h>

/* CODE_FILE= and friends would always name this file: leave them out */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "log.h"

static enum log_sink log_sink = LOG_SINK_STDERR;

void log_init(enum log_sink sink)
{
	log_sink = sink;
}

static void emit(int priority, const char *source, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_sink == LOG_SINK_JOURNAL)
		(void)sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", priority,
				      "PORTLOGD_SOURCE=%s", source,
				      "SYSLOG_IDENTIFIER=portlogd", NULL);   /* nowhere to report a failure */
	else
		fprintf(stderr, "portlogd: %s\n", msg);
}

void log_msg(int priority, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(priority, "portlogd", fmt, ap);
	va_end(ap);
}

void log_source(int priority, const char *source, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(priority, source, fmt, ap);
	va_end(ap);
}
