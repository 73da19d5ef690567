/* log.c - diagnostics to stderr (foreground) or to the journal (service). */
#include <stdarg.h>
#include <stdio.h>

#include <systemd/sd-journal.h>

#include "log.h"

static enum log_sink log_sink = LOG_SINK_STDERR;

void log_init(enum log_sink sink)
{
	log_sink = sink;
}

void log_msg(int priority, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_sink == LOG_SINK_JOURNAL)
		(void)sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", priority,
				      "SYSLOG_IDENTIFIER=portlogd", NULL);   /* nowhere to report a failure */
	else
		fprintf(stderr, "portlogd: %s\n", msg);
}
