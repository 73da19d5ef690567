/* SPDX-License-Identifier: GPL-2.0-or-later */
/* log.h - the daemon's own diagnostics (not the data log): stderr or the journal.
 * Only main and the flusher call these; real-time threads never do. */
#ifndef PORTLOGD_LOG_H
#define PORTLOGD_LOG_H

#include <syslog.h>

enum log_sink { LOG_SINK_STDERR, LOG_SINK_JOURNAL };

void log_init(enum log_sink sink);
void log_msg(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * A message about one source (a port's name, or "portlogd"): in the journal
 * it carries the field PORTLOGD_SOURCE=, so `journalctl PORTLOGD_SOURCE=gps`
 * shows one port's events.
 */
void log_source(int priority, const char *source, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)

#endif
