/* SPDX-License-Identifier: MIT
 * Verifying a delivery with its source's scheme, while the body arrives:
 * hk_verify_begin reads the headers (signatures, timestamp, id), checks the
 * timestamp window and primes one HMAC per secret with the signed prefix;
 * hk_verify_update feeds body bytes; hk_verify_finish compares in constant
 * time. Nothing is allocated, but for ed25519 (discord, standard-webhooks
 * v1a): its PureEdDSA needs the signed message in one piece, so finish
 * copies prefix + body into a buffer (on the stack up to 2 KiB, else one
 * malloc) besides what libcrypto allocates. The same schemes sign
 * (hk_sign), for `hookd sign` and the tests. What the sources loader must
 * put in struct hk_secret for each scheme is in verify.c's header. */
#ifndef HK_VERIFY_H
#define HK_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/crypto.h"
#include "ingress/sources.h"

/* A request's headers, as the verifier reads them: `get` returns the first
 * value of `name` (lower-case; matched case-insensitively) and its length,
 * NULL when absent, and stores in *count how many times it was sent. */
struct hk_hdrs {
    const char *(*get)(const void *ctx, const char *name, size_t *len, unsigned *count);
    const void *ctx;
};

/* Headers held in an array (the CLI, the tests, the fuzzer). */
struct hk_hdr {
    const char *name, *value;
    size_t name_len, value_len;
};
struct hk_hdr_list {
    const struct hk_hdr *v;
    size_t n;
};
/* A `get` for hk_hdrs over a struct hk_hdr_list (ctx). */
const char *hk_hdr_list_get(const void *ctx, const char *name, size_t *len, unsigned *count);

enum hk_vreason {
    HK_VR_OK,
    HK_VR_MISSING_HEADER,      /* a header the scheme needs is absent */
    HK_VR_MALFORMED_HEADER,    /* present but not what the scheme sends (or sent twice) */
    HK_VR_TIMESTAMP,           /* outside the tolerance: skew_s says by how much */
    HK_VR_NO_MATCH,            /* well-formed, but no signature verifies with any secret */
    HK_VR_NO_SECRET,           /* the source has no secret of the kind the header needs */
    HK_VR__COUNT
};
/* "ok", "missing_header", "malformed_header", "timestamp_out_of_tolerance",
 * "no_matching_signature", "no_secret". Stable: clients and metrics use them. */
const char *hk_vreason_name(enum hk_vreason r);

#define HK_VERIFY_SIGS_MAX 16      /* signatures read from one header; more are ignored */
#define HK_VERIFY_PREFIX_MAX 512   /* signed bytes before/after the body (id, timestamp, url) */

struct hk_verify {
    const struct hk_source *src;   /* borrowed until hk_verify_end */
    enum hk_vreason reason;        /* after begin: HK_VR_OK so far, or why not */
    const char *header;            /* the header `reason` is about (lower-case; static, or the
                                    * source's own name for hmac/token), or NULL */
    int64_t ts;                    /* the signed timestamp (unix seconds); 0: none */
    int64_t skew_s;                /* now - ts, when ts is set */
    int matched;                   /* after finish: index of the secret that verified, or -1 */
    bool need_body;                /* finish needs the whole body (ed25519, twilio) */
    /* Private from here on. */
    unsigned nsig;
    uint8_t sig[HK_VERIFY_SIGS_MAX][HK_MD_MAX];
    uint8_t sig_len[HK_VERIFY_SIGS_MAX];
    uint8_t sig_kind[HK_VERIFY_SIGS_MAX];
    struct hk_hmac_ctx mac[HK_SOURCE_SECRETS_MAX];
    unsigned nmac;
    uint32_t active;               /* bit i: mac[i] runs secrets[i]'s MAC */
    uint8_t md;                    /* their digest (enum hk_md) */
    bool stream;                   /* body bytes go through the MACs as they arrive (not twilio) */
    bool legacy_sha1;              /* github X-Hub-Signature: SHA-1 pads made from secrets[i].key */
    bool finished;
    const char *sig_hdr;           /* the signature header, named by a no-match verdict */
    char pre[HK_VERIFY_PREFIX_MAX];    /* signed bytes before the body (ed25519: kept for finish) */
    size_t pre_len;
    char post[HK_VERIFY_PREFIX_MAX];   /* signed bytes after the body (generic template) */
    size_t post_len;
};

/* Read the headers and prepare. Returns v->reason. `now_s` is unix time.
 * `h` is read during the call only. */
enum hk_vreason hk_verify_begin(struct hk_verify *v, const struct hk_source *src, const struct hk_hdrs *h,
                                int64_t now_s);
/* More body bytes (a no-op once reason is not OK, and for twilio, whose
 * form parameters are read from the whole body at finish). */
void hk_verify_update(struct hk_verify *v, const void *p, size_t n);
/* The verdict. `body` is the whole body; read only when v->need_body.
 * Sets v->matched (gitlab and token: already at begin). Returns v->reason;
 * called again, the same verdict. */
enum hk_vreason hk_verify_finish(struct hk_verify *v, const void *body, size_t n);
/* Wipe the key-derived state. Safe after any step, and twice. */
void hk_verify_end(struct hk_verify *v);

/* One-shot verification (CLI, tests): begin + update + finish + end. */
enum hk_vreason hk_verify_all(struct hk_verify *v, const struct hk_source *src, const struct hk_hdrs *h,
                              const void *body, size_t n, int64_t now_s);

/* The headers the provider would send with `body` at `now_s`, signed with
 * the source's first secret, appended to `out` as "Name: value\r\n" lines
 * (Content-Type included when the scheme implies one). `id` is the
 * delivery id for schemes that sign one (NULL: a fresh random one; else
 * 1 to 200 printable characters without spaces, refused otherwise).
 * ed25519 schemes need `priv` (32 bytes; the source only holds public
 * keys). 0, or -1 with a one-line reason in err. */
int hk_sign(const struct hk_source *src, const void *body, size_t n, int64_t now_s, const char *id,
            const uint8_t *priv, struct hk_buf *out, char *err, size_t errlen);

/* Parsers, public for the fuzzer and the tests. Each fills at most `max`
 * entries and returns how many, or -1 when the header is malformed. */
struct hk_sig_item {
    const char *p;             /* the value (points into the header) */
    size_t len;
};
/* Stripe-Signature "t=…,v1=…[,v1=…]" (other keys ignored): *t and the v1
 * values. */
int hk_parse_stripe(const char *h, size_t n, int64_t *t, struct hk_sig_item *v1, int max);
/* webhook-signature: space-separated "v1,<base64>" / "v1a,<base64>";
 * kinds[i] is 1 for v1, 2 for v1a; unknown versions are skipped. */
int hk_parse_std_sigs(const char *h, size_t n, struct hk_sig_item *sigs, uint8_t *kinds, int max);
/* A generic template: literal text with {body} (exactly once), {timestamp},
 * {id}. Splits it around {body}, expanding the others into pre/post
 * (NUL-terminated). 0, or -1 when malformed or too long. */
int hk_template_expand(const char *tpl, const char *ts, size_t ts_len, const char *id, size_t id_len, char *pre,
                       size_t pre_cap, size_t *pre_len, char *post, size_t post_cap, size_t *post_len);

#endif
