/* SPDX-License-Identifier: MIT
 * Structured logging: one JSON object per line on stderr, written with a
 * single write(2) so lines from several threads never interleave. */
#include "core/log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"

static enum hk_log_level min_level = HK_LOG_INFO;
static const char *const names[] = {"debug", "info", "warn", "error"};

void hk_log_set_level(enum hk_log_level lvl)
{
    min_level = lvl;
}

int hk_log_parse_level(const char *s, enum hk_log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, names[i]) == 0) {
            *out = (enum hk_log_level)i;
            return 0;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        *out = HK_LOG_WARN;
        return 0;
    }
    return -1;
}

int hk_log_enabled(enum hk_log_level lvl)
{
    return lvl >= min_level;
}

void hk_log_req(enum hk_log_level lvl, const char *request_id, const char *msg, const char *fields_fmt, ...)
{
    if (lvl < min_level)
        return;
    struct hk_buf b = HK_BUF_INIT;
    hk_buf_puts(&b, "{\"ts\":\"");
    hk_buf_put_iso_us(&b, hk_wall_us());
    hk_buf_puts(&b, "\",\"level\":\"");
    hk_buf_puts(&b, names[lvl]);
    hk_buf_puts(&b, "\",\"msg\":");
    hk_buf_put_json_str(&b, msg, strlen(msg));
    if (request_id) {
        hk_buf_puts(&b, ",\"requestId\":");
        hk_buf_put_json_str(&b, request_id, strlen(request_id));
    }
    if (fields_fmt && *fields_fmt) {
        char fields[768];
        va_list ap;
        va_start(ap, fields_fmt);
        int n = vsnprintf(fields, sizeof fields, fields_fmt, ap);
        va_end(ap);
        if (n > 0) {
            hk_buf_putc(&b, ',');
            hk_buf_put(&b, fields, (size_t)n < sizeof fields ? (size_t)n : sizeof fields - 1);
        }
    }
    hk_buf_puts(&b, "}\n");
    ssize_t off = 0;
    while ((size_t)off < b.len) {
        ssize_t w = write(STDERR_FILENO, b.p + off, b.len - (size_t)off);
        if (w <= 0)
            break;
        off += w;
    }
    hk_buf_free(&b);
}
