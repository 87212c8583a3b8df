/* SPDX-License-Identifier: MIT
 * Structured logging: one JSON object per line on stderr
 * {"ts":"...","level":"info","msg":"...", <fields>}. Thread-safe: each line is one write(2). */
#ifndef HK_LOG_H
#define HK_LOG_H

enum hk_log_level { HK_LOG_DEBUG, HK_LOG_INFO, HK_LOG_WARN, HK_LOG_ERROR };

void hk_log_set_level(enum hk_log_level lvl);
int hk_log_parse_level(const char *s, enum hk_log_level *out); /* 0 or -1 */
/* One line at `lvl`. `request_id` NULL, or the request the line is about:
 * "requestId":<request_id> (JSON-escaped) follows the message. `fields` is
 * NULL or a run of JSON members without braces, e.g. "\"port\":8080".
 * `msg` is escaped by the logger. */
void hk_log_req(enum hk_log_level lvl, const char *request_id, const char *msg, const char *fields_fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define hk_log(lvl, ...) hk_log_req(lvl, NULL, __VA_ARGS__)
/* Would a line at `lvl` be written? */
int hk_log_enabled(enum hk_log_level lvl);

#define hk_info(...) hk_log(HK_LOG_INFO, __VA_ARGS__)
#define hk_warn(...) hk_log(HK_LOG_WARN, __VA_ARGS__)
#define hk_error(...) hk_log(HK_LOG_ERROR, __VA_ARGS__)

#endif
