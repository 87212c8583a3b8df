/* SPDX-License-Identifier: MIT
 * What a forwarding attempt's outcome means (docs/forwarding.md "The
 * outbox"): delivered, again after a delay (full jitter, or the sink's
 * Retry-After), or failed for good; Retry-After parsing; the short text an
 * attempt leaves in dlast_error. Pure functions: the caller brings the
 * clock and the random numbers. */
#ifndef HK_RETRY_H
#define HK_RETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hk_retry_verdict { HK_RETRY_DELIVERED, HK_RETRY_AGAIN, HK_RETRY_FAIL };

#define HK_RETRY_AFTER_MAX_MS 3600000   /* a sink's Retry-After is believed up to an hour */
#define HK_RETRY_REASON_MAX 128         /* bytes hk_retry_reason writes, NUL included */

struct hk_retry_policy {
    uint32_t max_attempts;     /* HOOKD_FORWARD_MAX_ATTEMPTS; 0: no limit */
    uint64_t max_age_ms;       /* HOOKD_FORWARD_MAX_AGE, from receipt; 0: no limit */
    uint64_t base_ms;          /* HOOKD_FORWARD_BACKOFF */
    uint64_t max_ms;           /* HOOKD_FORWARD_BACKOFF_MAX */
    bool retry_4xx;            /* HOOKD_FORWARD_RETRY_4XX: every refusal is retried */
};

/* The verdict on one attempt. `attempts`: attempts made, this one
 * included; `age_ms`: now - receipt; `status`: the sink's HTTP status, 0
 * when none came (connect error, reset, timeout); `retry_after_ms`: the
 * sink's Retry-After (hk_retry_after_ms), -1 when none; `rnd`: a uniform
 * 64-bit random number from the caller's generator.
 *
 * - 2xx: DELIVERED.
 * - FAIL, permanently: a 4xx other than 408, 409 and 429, and any 3xx (the
 *   client follows no redirect, so a redirect is a sink that is not where
 *   the configuration says: retrying changes nothing), unless retry_4xx.
 * - Otherwise (no answer, 408, 409, 429, 5xx, 1xx and any odd status) the
 *   delay: Retry-After on 429 and 503 when given (capped at
 *   HK_RETRY_AFTER_MAX_MS), else full jitter, uniform in
 *   [0, min(max_ms, base_ms * 2^(attempts - 1))]; then FAIL when
 *   attempts >= max_attempts or age_ms + delay >= max_age_ms, else AGAIN
 *   with *delay_ms set.
 * *delay_ms is 0 for DELIVERED and FAIL. */
enum hk_retry_verdict hk_retry_decide(const struct hk_retry_policy *p, uint32_t attempts, uint64_t age_ms,
                                      int status, int64_t retry_after_ms, uint64_t rnd, uint64_t *delay_ms);

/* The backoff cap for an attempt count: min(max_ms, base_ms *
 * 2^(attempts - 1)), without overflow for any count (0 counts as 1). */
uint64_t hk_retry_backoff_cap(const struct hk_retry_policy *p, uint32_t attempts);

/* A Retry-After value v[0..n) (RFC 9110 10.2.3): delta-seconds, or an
 * HTTP-date in IMF-fixdate, the obsolete RFC 850 form or asctime's, read
 * relative to now_s (unix seconds). Surrounding whitespace is allowed.
 * Returns milliseconds from now: 0 for a date already past, huge values
 * saturate at INT64_MAX; -1 when unreadable (garbage, a sign, a date that
 * is not one). */
int64_t hk_retry_after_ms(const char *v, size_t n, int64_t now_s);

/* The short text an attempt leaves in dlast_error, into out (at most
 * cap - 1 bytes and a NUL): "HTTP 503" when the sink answered, else by
 * `err` (HK_ETIMEDOUT "timed out", otherwise "unreachable") followed by
 * ": " and the client's `error` text when given. That text is kept to
 * printable ASCII and cut at HK_RETRY_REASON_MAX; the client's contract
 * keeps credentials out of it. Returns the length. */
size_t hk_retry_reason(int status, int err, const char *error, char *out, size_t cap);

/* "delivered", "retry", "failed": the result label of
 * hookd_forward_attempts_total. */
const char *hk_retry_verdict_name(enum hk_retry_verdict v);

#endif
