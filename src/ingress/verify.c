/* SPDX-License-Identifier: MIT
 * Each scheme of enum hk_scheme, verifying and signing: its headers are
 * parsed and its timestamp checked at begin, where one HMAC per secret is
 * primed with the signed bytes that precede the body; body pieces stream
 * through them; finish compares in constant time against every signature
 * the header carried, or runs ed25519 over the whole message.
 *
 * What the sources loader must have put in struct hk_secret (key/len are
 * the bytes; "hmac MD" means hk_hmac_key_init(&s->hmac, MD, s->key, s->len)):
 *
 *   github, gitea, shopify, slack, twitch, zoom, meta
 *       key = the secret as written; hmac HK_MD_SHA256. For github with
 *       legacy_sha1, key must stay set too: an X-Hub-Signature (sha1=)
 *       delivery gets SHA-1 pads made from it (begin, and again at finish).
 *   stripe
 *       key = the whole "whsec_..." string, verbatim; hmac HK_MD_SHA256.
 *   standard-webhooks
 *       "whsec_<base64>": key = the base64-decoded bytes after the prefix,
 *       hmac HK_MD_SHA256, ed25519 false. "whpk_<base64>": key = the 32
 *       decoded bytes of the public key, ed25519 true (hmac unused).
 *   discord
 *       key = the 32 bytes of the application's hex public key, ed25519 true.
 *   twilio
 *       key = the auth token; hmac HK_MD_SHA1; src->public_url set.
 *   hmac
 *       key = the secret; hmac src->algorithm; src->header set; a template
 *       with {id} needs src->id_header and one with {timestamp} needs
 *       src->timestamp_header (hk_template_expand with NULL for the value
 *       a source lacks returns -1: the loader can check a template so).
 *   gitlab, token
 *       key = the token bytes (compared, never MACed; hmac unused);
 *       token: src->header set.
 *   none
 *       no secrets needed.
 *
 * A secret whose hmac was prepared with another digest than the scheme's
 * is skipped, as if absent: a loader mistake shows as no_secret, never as a
 * MAC computed with the wrong function. Body problems that are not the
 * signature's (twilio: not a form, over 1000 parameters) are
 * malformed_header with no header named. */
#include "ingress/verify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/ascii.h"
#include "core/base64.h"
#include "core/clock.h"

enum { SIG_MAC = 1, SIG_ED = 2 };   /* sig_kind; also hk_parse_std_sigs' kinds (v1, v1a) */

#define UNIX_DIGITS_MAX 12         /* seconds up to the year 33658; more is not a timestamp */
#define TWILIO_PARAMS_MAX 1000
#define ED_TRIES_MAX 16            /* ed25519 checks per delivery: each hashes the whole body */
#define ED_STACK 2048              /* signed messages up to this size are copied on the stack */

_Static_assert(HK_SOURCE_SECRETS_MAX <= 32, "hk_verify.active is a 32-bit mask");
_Static_assert(HK_VERIFY_SIGS_MAX <= 255, "nsig fits the parsers' int");

static const char *const reason_names[HK_VR__COUNT] = {
    [HK_VR_OK] = "ok",
    [HK_VR_MISSING_HEADER] = "missing_header",
    [HK_VR_MALFORMED_HEADER] = "malformed_header",
    [HK_VR_TIMESTAMP] = "timestamp_out_of_tolerance",
    [HK_VR_NO_MATCH] = "no_matching_signature",
    [HK_VR_NO_SECRET] = "no_secret",
};

const char *hk_vreason_name(enum hk_vreason r)
{
    return (unsigned)r < HK_VR__COUNT ? reason_names[r] : "?";
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

const char *hk_hdr_list_get(const void *ctx, const char *name, size_t *len, unsigned *count)
{
    const struct hk_hdr_list *l = ctx;
    size_t nl = strlen(name);
    const char *first = NULL;
    unsigned c = 0;
    for (size_t i = 0; i < l->n; i++) {
        const struct hk_hdr *h = &l->v[i];
        if (h->name_len != nl)
            continue;
        size_t k = 0;
        while (k < nl && lower((unsigned char)h->name[k]) == lower((unsigned char)name[k]))
            k++;
        if (k < nl)
            continue;
        if (!c++) {
            first = h->value;
            *len = h->value_len;
        }
    }
    if (count)
        *count = c;
    return first;
}

/* ---- small parsers ---------------------------------------------------- */

/* Unix seconds as providers send them: digits only, no sign, no leading
 * zero (so that the value printed back is the text that was signed). */
static bool parse_unix(const char *p, size_t n, int64_t *out)
{
    if (n == 0 || n > UNIX_DIGITS_MAX || (p[0] == '0' && n > 1))
        return false;
    int64_t t = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        t = t * 10 + (p[i] - '0');
    }
    *out = t;
    return true;
}

/* k decimal digits, or -1. */
static int digits(const char *p, int k)
{
    int v = 0;
    for (int i = 0; i < k; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

/* RFC 3339 date-time (Twitch's "2023-01-24T19:04:09.123456789Z"): unix
 * seconds, the fraction dropped. */
static bool parse_rfc3339(const char *p, size_t n, int64_t *out)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (n < 20 || p[4] != '-' || p[7] != '-' || (p[10] != 'T' && p[10] != 't') || p[13] != ':' || p[16] != ':')
        return false;
    int y = digits(p, 4), mo = digits(p + 5, 2), d = digits(p + 8, 2);
    int h = digits(p + 11, 2), mi = digits(p + 14, 2), s = digits(p + 17, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60)
        return false;
    bool leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    if (d > mdays[mo - 1] + (mo == 2 && leap))
        return false;
    size_t i = 19;
    if (i < n && p[i] == '.') {
        size_t start = ++i;
        while (i < n && p[i] >= '0' && p[i] <= '9' && i - start < 18)
            i++;
        if (i == start)
            return false;
    }
    int64_t off = 0;
    if (i < n && (p[i] == 'Z' || p[i] == 'z')) {
        i++;
    } else if (n - i == 6 && (p[i] == '+' || p[i] == '-') && p[i + 3] == ':') {
        int oh = digits(p + i + 1, 2), om = digits(p + i + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return false;
        off = (p[i] == '-' ? -1 : 1) * (int64_t)(oh * 3600 + om * 60);
        i += 6;
    } else {
        return false;
    }
    if (i != n)
        return false;
    *out = hk_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s - off;
    return true;
}

int hk_parse_stripe(const char *h, size_t n, int64_t *t, struct hk_sig_item *v1, int max)
{
    bool have_t = false;
    int k = 0;
    if (n == 0)
        return -1;
    for (size_t i = 0;;) {
        size_t j = i;
        while (j < n && h[j] != ',')
            j++;
        const char *item = h + i;
        size_t len = j - i;
        const char *eq = memchr(item, '=', len);
        if (!eq || eq == item)
            return -1;     /* an empty item, a key without '=', or '=' without a key */
        size_t klen = (size_t)(eq - item), vlen = len - klen - 1;
        if (klen == 1 && item[0] == 't') {
            if (have_t || !parse_unix(eq + 1, vlen, t))
                return -1;
            have_t = true;
        } else if (klen == 2 && item[0] == 'v' && item[1] == '1') {
            if (vlen == 0)
                return -1;
            if (k < max) {
                v1[k].p = eq + 1;
                v1[k].len = vlen;
                k++;
            }
        }
        if (j == n)
            break;
        i = j + 1;
    }
    return have_t ? k : -1;
}

int hk_parse_std_sigs(const char *h, size_t n, struct hk_sig_item *sigs, uint8_t *kinds, int max)
{
    int k = 0;
    for (size_t i = 0; i < n;) {
        if (h[i] == ' ') {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && h[j] != ' ')
            j++;
        const char *item = h + i, *comma = memchr(item, ',', j - i);
        if (!comma || comma == item || comma + 1 == h + j)
            return -1;     /* every item is "<version>,<value>" */
        size_t vlen = (size_t)(comma - item);
        uint8_t kind = 0;
        if (vlen == 2 && !memcmp(item, "v1", 2))
            kind = SIG_MAC;
        else if (vlen == 3 && !memcmp(item, "v1a", 3))
            kind = SIG_ED;
        if (kind && k < max) {
            sigs[k].p = comma + 1;
            sigs[k].len = (size_t)(h + j - (comma + 1));
            kinds[k] = kind;
            k++;
        }
        i = j;
    }
    return k;
}

int hk_template_expand(const char *tpl, const char *ts, size_t ts_len, const char *id, size_t id_len, char *pre,
                       size_t pre_cap, size_t *pre_len, char *post, size_t post_cap, size_t *post_len)
{
    char *out = pre;
    size_t cap = pre_cap, len = 0;
    int bodies = 0;
    if (!tpl || pre_cap == 0 || post_cap == 0)
        return -1;
    for (const char *p = tpl; *p;) {
        const char *ins = p;
        size_t ins_len = 1;
        if (*p == '{') {
            /* "{name}" with a lower-case name must be one of ours: a typo
             * fails here, at load, rather than signing the wrong bytes. */
            size_t k = 1;
            while ((p[k] >= 'a' && p[k] <= 'z') || p[k] == '_')
                k++;
            if (k > 1 && p[k] == '}') {
                size_t nl = k - 1;
                if (nl == 4 && !memcmp(p + 1, "body", 4)) {
                    if (bodies++)
                        return -1;
                    out[len] = '\0';
                    *pre_len = len;
                    out = post;
                    cap = post_cap;
                    len = 0;
                    p += k + 1;
                    continue;
                }
                if (nl == 9 && !memcmp(p + 1, "timestamp", 9)) {
                    if (!ts)
                        return -1;
                    ins = ts;
                    ins_len = ts_len;
                } else if (nl == 2 && !memcmp(p + 1, "id", 2)) {
                    if (!id)
                        return -1;
                    ins = id;
                    ins_len = id_len;
                } else {
                    return -1;
                }
                p += k + 1;
            } else {
                p++;
            }
        } else {
            p++;
        }
        if (ins_len >= cap - len)
            return -1;     /* keeps room for the NUL */
        memcpy(out + len, ins, ins_len);
        len += ins_len;
    }
    if (bodies != 1)
        return -1;
    out[len] = '\0';
    *post_len = len;
    return 0;
}

/* ---- twilio's form parameters ----------------------------------------- */

struct form_span {
    uint32_t name, name_len, value, value_len;     /* offsets into the body */
};

static bool pct_ok(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == '%' && (n - i < 3 || hk_hex_val(p[i + 1]) < 0 || hk_hex_val(p[i + 2]) < 0))
            return false;
    return true;
}

/* The next byte of a form-decoded run ('+' is a space, %XX a byte), or -1
 * at its end. The run was checked by pct_ok. */
static int dec_next(const char *p, size_t n, size_t *i)
{
    if (*i >= n)
        return -1;
    char c = p[*i];
    if (c == '%') {
        int v = hk_hex_val(p[*i + 1]) << 4 | hk_hex_val(p[*i + 2]);
        *i += 3;
        return v;
    }
    (*i)++;
    return c == '+' ? ' ' : (unsigned char)c;
}

static int dec_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t i = 0, j = 0;
    for (;;) {
        int x = dec_next(a, an, &i), y = dec_next(b, bn, &j);
        if (x != y)
            return x < y ? -1 : 1;     /* -1 (the end) sorts first */
        if (x < 0)
            return 0;
    }
}

static int span_cmp(const char *b, const struct form_span *x, const struct form_span *y)
{
    int c = dec_cmp(b + x->name, x->name_len, b + y->name, y->name_len);
    return c ? c : dec_cmp(b + x->value, x->value_len, b + y->value, y->value_len);
}

/* Split an application/x-www-form-urlencoded body into at most `max`
 * parameters; -1 when there are more, or an escape is broken. */
static int form_parse(const char *b, size_t n, struct form_span *sp, int max)
{
    int k = 0;
    if (n > UINT32_MAX)
        return -1;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && b[j] != '&')
            j++;
        if (j > i) {
            if (k == max)
                return -1;
            const char *eq = memchr(b + i, '=', j - i);
            size_t nl = eq ? (size_t)(eq - (b + i)) : j - i;
            size_t vl = eq ? j - i - nl - 1 : 0;
            if (!pct_ok(b + i, nl) || (eq && !pct_ok(eq + 1, vl)))
                return -1;
            sp[k].name = (uint32_t)i;
            sp[k].name_len = (uint32_t)nl;
            sp[k].value = (uint32_t)(eq ? i + nl + 1 : j);
            sp[k].value_len = (uint32_t)vl;
            k++;
        }
        i = j + 1;
    }
    return k;
}

static void sift(const char *b, struct form_span *a, size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && span_cmp(b, &a[c], &a[c + 1]) < 0)
            c++;
        if (span_cmp(b, &a[root], &a[c]) >= 0)
            return;
        struct form_span t = a[root];
        a[root] = a[c];
        a[c] = t;
        root = c;
    }
}

/* Heapsort: O(n log n) comparisons whatever the input, no allocation. By
 * name, then value (Twilio's libraries sort repeated names' values). */
static void form_sort(const char *b, struct form_span *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(b, a, i, n);
    for (size_t end = n; end-- > 1;) {
        struct form_span t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift(b, a, 0, end);
    }
}

static void mac_all(struct hk_hmac_ctx *macs, uint32_t mask, const void *p, size_t n)
{
    for (unsigned i = 0; i < HK_SOURCE_SECRETS_MAX; i++)
        if (mask & 1u << i)
            hk_hmac_update(&macs[i], p, n);
}

/* Feed a form-decoded run to every MAC of `mask`, a chunk at a time. */
static void mac_decoded(struct hk_hmac_ctx *macs, uint32_t mask, const char *p, size_t n)
{
    uint8_t buf[256];
    size_t k = 0, i = 0;
    for (int c; (c = dec_next(p, n, &i)) >= 0;) {
        buf[k++] = (uint8_t)c;
        if (k == sizeof buf) {
            mac_all(macs, mask, buf, k);
            k = 0;
        }
    }
    mac_all(macs, mask, buf, k);
}

/* Twilio's string after the URL: each parameter's name then value, sorted. */
static int mac_form(struct hk_hmac_ctx *macs, uint32_t mask, const char *b, size_t n)
{
    struct form_span sp[TWILIO_PARAMS_MAX];
    int k = form_parse(b, n, sp, TWILIO_PARAMS_MAX);
    if (k < 0)
        return -1;
    form_sort(b, sp, (size_t)k);
    for (int i = 0; i < k; i++) {
        mac_decoded(macs, mask, b + sp[i].name, sp[i].name_len);
        mac_decoded(macs, mask, b + sp[i].value, sp[i].value_len);
    }
    return 0;
}

/* The value of query parameter `name` in `url`. */
static bool query_param(const char *url, const char *name, const char **val, size_t *len)
{
    const char *q = strchr(url, '?');
    size_t nl = strlen(name);
    if (!q)
        return false;
    for (const char *p = q + 1; *p && *p != '#';) {
        size_t k = strcspn(p, "&#");
        if (k > nl && p[nl] == '=' && !memcmp(p, name, nl)) {
            *val = p + nl + 1;
            *len = k - nl - 1;
            return true;
        }
        p += k;
        if (*p == '&')
            p++;
    }
    return false;
}

/* ---- begin ------------------------------------------------------------ */

static enum hk_vreason fail(struct hk_verify *v, enum hk_vreason r, const char *header)
{
    v->reason = r;
    v->header = header;
    return r;
}

/* A header's value with optional whitespace trimmed; *count 0 when absent. */
static const char *hdr(const struct hk_hdrs *h, const char *name, size_t *len, unsigned *count)
{
    size_t n = 0;
    unsigned c = 0;
    const char *p = h->get(h->ctx, name, &n, &c);
    *len = 0;
    *count = 0;
    if (!p)
        return NULL;
    while (n && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    *len = n;
    *count = c ? c : 1;
    return p;
}

/* A header that may be absent. NULL when it is, or when it was sent twice
 * (then v->reason says so). */
static const char *maybe(struct hk_verify *v, const struct hk_hdrs *h, const char *name, size_t *len)
{
    unsigned c;
    const char *p = hdr(h, name, len, &c);
    if (p && c > 1) {
        fail(v, HK_VR_MALFORMED_HEADER, name);
        return NULL;
    }
    return p;
}

/* A header the scheme needs, exactly once; NULL with v->reason set. */
static const char *one(struct hk_verify *v, const struct hk_hdrs *h, const char *name, size_t *len)
{
    const char *p = maybe(v, h, name, len);
    if (!p && v->reason == HK_VR_OK)
        fail(v, HK_VR_MISSING_HEADER, name);
    return p;
}

static bool strip(const char **p, size_t *n, const char *prefix)
{
    size_t k = strlen(prefix);
    if (*n < k || memcmp(*p, prefix, k))
        return false;
    *p += k;
    *n -= k;
    return true;
}

/* Keep one signature of `len` bytes, hex or base64; false when it is not
 * that. Past HK_VERIFY_SIGS_MAX they are ignored. */
static bool add_sig(struct hk_verify *v, const char *p, size_t n, size_t len, uint8_t kind, bool b64)
{
    if (v->nsig >= HK_VERIFY_SIGS_MAX)
        return true;
    uint8_t *out = v->sig[v->nsig];
    if (b64 ? hk_base64_decode(p, n, out, HK_MD_MAX) != (long)len
            : n != 2 * len || hk_hex_decode(p, out, len) < 0)
        return false;
    v->sig_len[v->nsig] = (uint8_t)len;
    v->sig_kind[v->nsig] = kind;
    v->nsig++;
    return true;
}

static bool pre_add(struct hk_verify *v, const void *p, size_t n)
{
    if (n > sizeof v->pre - v->pre_len)
        return false;
    memcpy(v->pre + v->pre_len, p, n);
    v->pre_len += n;
    return true;
}

/* The timestamp window, inclusive at both ends. */
static enum hk_vreason window(struct hk_verify *v, int64_t ts, int64_t now, const char *name)
{
    int64_t tol = v->src->tolerance_s > 0 ? v->src->tolerance_s : 0;
    v->ts = ts;
    v->skew_s = now - ts;
    if (v->skew_s > tol || v->skew_s < -tol)
        return fail(v, HK_VR_TIMESTAMP, name);
    return HK_VR_OK;
}

static size_t nsecrets(const struct hk_source *src)
{
    return src->nsecrets < HK_SOURCE_SECRETS_MAX ? src->nsecrets : HK_SOURCE_SECRETS_MAX;
}

static bool has_ed_key(const struct hk_source *src)
{
    for (size_t i = 0; i < nsecrets(src); i++)
        if (src->secrets[i].ed25519 && src->secrets[i].key && src->secrets[i].len == 32)
            return true;
    return false;
}

/* One running MAC per usable secret, keyed for `md`, fed p[0..n). */
static void prime(struct hk_verify *v, enum hk_md md, const void *p, size_t n)
{
    const struct hk_source *src = v->src;
    v->md = (uint8_t)md;
    v->nmac = (unsigned)nsecrets(src);
    for (unsigned i = 0; i < v->nmac; i++) {
        const struct hk_secret *s = &src->secrets[i];
        if (s->ed25519)
            continue;
        if (v->legacy_sha1) {
            /* GitHub's SHA-1 header: the loader prepared SHA-256 pads, so
             * SHA-1 ones are made here; only the running state is kept. */
            if (!s->key || !s->len)
                continue;
            struct hk_hmac_key k;
            hk_hmac_key_init(&k, HK_MD_SHA1, s->key, s->len);
            hk_hmac_begin(&v->mac[i], &k);
            v->mac[i].key = NULL;
            hk_hmac_key_wipe(&k);
        } else {
            if (s->hmac.inner.md != md)
                continue;
            hk_hmac_begin(&v->mac[i], &s->hmac);
        }
        hk_hmac_update(&v->mac[i], p, n);
        v->active |= 1u << i;
    }
}

/* The HMAC schemes' last step of begin: the MACs start from the prefix. */
static enum hk_vreason begin_mac(struct hk_verify *v, enum hk_md md, const char *sig_hdr)
{
    v->sig_hdr = sig_hdr;
    v->stream = true;
    prime(v, md, v->pre, v->pre_len);
    return v->active ? HK_VR_OK : fail(v, HK_VR_NO_SECRET, sig_hdr);
}

static enum hk_vreason begin_github(struct hk_verify *v, const struct hk_hdrs *h, bool legacy_ok)
{
    size_t n;
    const char *name = "x-hub-signature-256", *prefix = "sha256=";
    enum hk_md md = HK_MD_SHA256;
    const char *p = maybe(v, h, name, &n);
    if (v->reason)
        return v->reason;
    if (!p && legacy_ok) {
        p = maybe(v, h, "x-hub-signature", &n);
        if (v->reason)
            return v->reason;
        if (p) {
            name = "x-hub-signature";
            prefix = "sha1=";
            md = HK_MD_SHA1;
            v->legacy_sha1 = true;
        }
    }
    if (!p)
        return fail(v, HK_VR_MISSING_HEADER, "x-hub-signature-256");
    if (!strip(&p, &n, prefix) || !add_sig(v, p, n, hk_md_len(md), SIG_MAC, false))
        return fail(v, HK_VR_MALFORMED_HEADER, name);
    return begin_mac(v, md, name);
}

static enum hk_vreason begin_gitea(struct hk_verify *v, const struct hk_hdrs *h)
{
    static const char *const names[] = {"x-gitea-signature", "x-forgejo-signature", "x-gogs-signature"};
    size_t n = 0;
    const char *p = NULL, *name = names[0];
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !p; i++) {
        p = maybe(v, h, names[i], &n);
        if (v->reason)
            return v->reason;
        if (p)
            name = names[i];
    }
    if (!p)
        return fail(v, HK_VR_MISSING_HEADER, name);
    if (!add_sig(v, p, n, 32, SIG_MAC, false))
        return fail(v, HK_VR_MALFORMED_HEADER, name);
    return begin_mac(v, HK_MD_SHA256, name);
}

/* gitlab and token: the header is the secret itself. Every secret is
 * compared (no early exit), each in constant time on equal lengths. */
static enum hk_vreason begin_token(struct hk_verify *v, const struct hk_hdrs *h, const char *name)
{
    size_t n;
    if (!name)
        return fail(v, HK_VR_NO_SECRET, NULL);
    const char *p = one(v, h, name, &n);
    if (!p)
        return v->reason;
    if (n == 0)
        return fail(v, HK_VR_MALFORMED_HEADER, name);
    bool any = false;
    int matched = -1;
    for (size_t i = 0; i < nsecrets(v->src); i++) {
        const struct hk_secret *s = &v->src->secrets[i];
        if (s->ed25519 || !s->key || !s->len)
            continue;
        any = true;
        if (s->len == n && !hk_crypto_memeq(s->key, p, n) && matched < 0)
            matched = (int)i;
    }
    if (!any)
        return fail(v, HK_VR_NO_SECRET, name);
    v->matched = matched;
    return matched < 0 ? fail(v, HK_VR_NO_MATCH, name) : HK_VR_OK;
}

static enum hk_vreason begin_stripe(struct hk_verify *v, const struct hk_hdrs *h, int64_t now)
{
    static const char name[] = "stripe-signature";
    struct hk_sig_item items[HK_VERIFY_SIGS_MAX];
    size_t n;
    int64_t t;
    const char *p = one(v, h, name, &n);
    if (!p)
        return v->reason;
    /* A v1 that is not 64 hex digits is skipped, as Stripe's libraries
     * let it simply not match; a header with no usable one is malformed. */
    int k = hk_parse_stripe(p, n, &t, items, HK_VERIFY_SIGS_MAX);
    for (int i = 0; i < k; i++)
        add_sig(v, items[i].p, items[i].len, 32, SIG_MAC, false);
    if (k < 0 || v->nsig == 0)
        return fail(v, HK_VR_MALFORMED_HEADER, name);
    if (window(v, t, now, name))
        return v->reason;
    char ts[24];
    int tl = snprintf(ts, sizeof ts, "%lld.", (long long)t);
    pre_add(v, ts, (size_t)tl);
    return begin_mac(v, HK_MD_SHA256, name);
}

static enum hk_vreason begin_shopify(struct hk_verify *v, const struct hk_hdrs *h)
{
    static const char name[] = "x-shopify-hmac-sha256";
    size_t n;
    const char *p = one(v, h, name, &n);
    if (!p)
        return v->reason;
    if (!add_sig(v, p, n, 32, SIG_MAC, true))
        return fail(v, HK_VR_MALFORMED_HEADER, name);
    return begin_mac(v, HK_MD_SHA256, name);
}

/* Slack and Zoom: "v0=<hex>" over "v0:<timestamp>:<body>". */
static enum hk_vreason begin_v0(struct hk_verify *v, const struct hk_hdrs *h, int64_t now, const char *sig_name,
                                const char *ts_name)
{
    size_t n, tn;
    int64_t t;
    const char *p = one(v, h, sig_name, &n);
    if (!p)
        return v->reason;
    const char *ts = one(v, h, ts_name, &tn);
    if (!ts)
        return v->reason;
    if (!strip(&p, &n, "v0=") || !add_sig(v, p, n, 32, SIG_MAC, false))
        return fail(v, HK_VR_MALFORMED_HEADER, sig_name);
    if (!parse_unix(ts, tn, &t))
        return fail(v, HK_VR_MALFORMED_HEADER, ts_name);
    if (window(v, t, now, ts_name))
        return v->reason;
    pre_add(v, "v0:", 3);
    pre_add(v, ts, tn);
    pre_add(v, ":", 1);
    return begin_mac(v, HK_MD_SHA256, sig_name);
}

static enum hk_vreason begin_standard(struct hk_verify *v, const struct hk_hdrs *h, int64_t now)
{
    const char *sig_name = "webhook-signature", *id_name = "webhook-id", *ts_name = "webhook-timestamp";
    struct hk_sig_item items[HK_VERIFY_SIGS_MAX];
    uint8_t kinds[HK_VERIFY_SIGS_MAX];
    size_t n, idn, tn;
    int64_t t;
    const char *p = maybe(v, h, sig_name, &n);
    if (v->reason)
        return v->reason;
    if (!p) {
        /* Svix sends the same scheme under its own names. */
        if (maybe(v, h, "svix-signature", &n)) {
            sig_name = "svix-signature";
            id_name = "svix-id";
            ts_name = "svix-timestamp";
        }
        if (v->reason)
            return v->reason;
    }
    p = one(v, h, sig_name, &n);
    if (!p)
        return v->reason;
    const char *id = one(v, h, id_name, &idn);
    if (!id)
        return v->reason;
    const char *ts = one(v, h, ts_name, &tn);
    if (!ts)
        return v->reason;
    /* As with Stripe: a signature of the wrong size is one that cannot
     * match, skipped; none usable at all is a malformed header. */
    int k = hk_parse_std_sigs(p, n, items, kinds, HK_VERIFY_SIGS_MAX);
    for (int i = 0; i < k; i++)
        add_sig(v, items[i].p, items[i].len, kinds[i] == SIG_ED ? 64 : 32, kinds[i], true);
    if (k < 0 || v->nsig == 0)
        return fail(v, HK_VR_MALFORMED_HEADER, sig_name);
    bool want_mac = false, want_ed = false;
    for (unsigned i = 0; i < v->nsig; i++) {
        want_mac |= v->sig_kind[i] == SIG_MAC;
        want_ed |= v->sig_kind[i] == SIG_ED;
    }
    if (idn == 0 || !hk_ascii_printable(id, idn, 0x21))
        return fail(v, HK_VR_MALFORMED_HEADER, id_name);
    if (!parse_unix(ts, tn, &t))
        return fail(v, HK_VR_MALFORMED_HEADER, ts_name);
    if (window(v, t, now, ts_name))
        return v->reason;
    if (!pre_add(v, id, idn) || !pre_add(v, ".", 1) || !pre_add(v, ts, tn) || !pre_add(v, ".", 1))
        return fail(v, HK_VR_MALFORMED_HEADER, id_name);
    v->sig_hdr = sig_name;
    v->need_body = has_ed_key(v->src);
    if (want_mac) {
        v->stream = true;
        prime(v, HK_MD_SHA256, v->pre, v->pre_len);
    }
    if (!v->active && !(want_ed && v->need_body))
        return fail(v, HK_VR_NO_SECRET, sig_name);
    return HK_VR_OK;
}

static enum hk_vreason begin_discord(struct hk_verify *v, const struct hk_hdrs *h, int64_t now)
{
    static const char sig_name[] = "x-signature-ed25519", ts_name[] = "x-signature-timestamp";
    size_t n, tn;
    int64_t t;
    const char *p = one(v, h, sig_name, &n);
    if (!p)
        return v->reason;
    const char *ts = one(v, h, ts_name, &tn);
    if (!ts)
        return v->reason;
    if (!add_sig(v, p, n, 64, SIG_ED, false))
        return fail(v, HK_VR_MALFORMED_HEADER, sig_name);
    if (!parse_unix(ts, tn, &t))
        return fail(v, HK_VR_MALFORMED_HEADER, ts_name);
    if (window(v, t, now, ts_name))
        return v->reason;
    pre_add(v, ts, tn);
    v->sig_hdr = sig_name;
    v->need_body = true;
    return has_ed_key(v->src) ? HK_VR_OK : fail(v, HK_VR_NO_SECRET, sig_name);
}

static enum hk_vreason begin_twitch(struct hk_verify *v, const struct hk_hdrs *h, int64_t now)
{
    static const char sig_name[] = "twitch-eventsub-message-signature", id_name[] = "twitch-eventsub-message-id",
                      ts_name[] = "twitch-eventsub-message-timestamp";
    size_t n, idn, tn;
    int64_t t;
    const char *p = one(v, h, sig_name, &n);
    if (!p)
        return v->reason;
    const char *id = one(v, h, id_name, &idn);
    if (!id)
        return v->reason;
    const char *ts = one(v, h, ts_name, &tn);
    if (!ts)
        return v->reason;
    if (!strip(&p, &n, "sha256=") || !add_sig(v, p, n, 32, SIG_MAC, false))
        return fail(v, HK_VR_MALFORMED_HEADER, sig_name);
    if (idn == 0 || !hk_ascii_printable(id, idn, 0x21))
        return fail(v, HK_VR_MALFORMED_HEADER, id_name);
    /* The window uses the parsed time; the MAC the text as sent. */
    if (!parse_rfc3339(ts, tn, &t))
        return fail(v, HK_VR_MALFORMED_HEADER, ts_name);
    if (window(v, t, now, ts_name))
        return v->reason;
    if (!pre_add(v, id, idn) || !pre_add(v, ts, tn))
        return fail(v, HK_VR_MALFORMED_HEADER, id_name);
    return begin_mac(v, HK_MD_SHA256, sig_name);
}

static enum hk_vreason begin_twilio(struct hk_verify *v, const struct hk_hdrs *h)
{
    static const char name[] = "x-twilio-signature";
    size_t n;
    const char *p = one(v, h, name, &n);
    if (!p)
        return v->reason;
    if (!add_sig(v, p, n, 20, SIG_MAC, true))
        return fail(v, HK_VR_MALFORMED_HEADER, name);
    const char *url = v->src->public_url;
    if (!url || !*url)
        return fail(v, HK_VR_NO_SECRET, name);
    /* The URL is the MAC's prefix (it may be longer than pre holds); the
     * form parameters are fed, sorted, at finish: the body is not streamed. */
    v->sig_hdr = name;
    v->need_body = true;
    prime(v, HK_MD_SHA1, url, strlen(url));
    return v->active ? HK_VR_OK : fail(v, HK_VR_NO_SECRET, name);
}

static enum hk_vreason begin_hmac(struct hk_verify *v, const struct hk_hdrs *h, int64_t now)
{
    const struct hk_source *src = v->src;
    const char *name = src->header;
    const char *tpl = src->template ? src->template : "{body}";
    size_t n, tn = 0, idn = 0;
    int64_t t;
    if (!name || (unsigned)src->algorithm > HK_MD_SHA512)
        return fail(v, HK_VR_NO_SECRET, name);
    const char *p = one(v, h, name, &n);
    if (!p)
        return v->reason;
    if (src->prefix && !strip(&p, &n, src->prefix))
        return fail(v, HK_VR_MALFORMED_HEADER, name);
    if (!add_sig(v, p, n, hk_md_len(src->algorithm), SIG_MAC, src->encoding == HK_ENC_BASE64))
        return fail(v, HK_VR_MALFORMED_HEADER, name);
    const char *ts = NULL, *id = NULL;
    if (src->timestamp_header) {
        ts = one(v, h, src->timestamp_header, &tn);
        if (!ts)
            return v->reason;
        if (!parse_unix(ts, tn, &t))
            return fail(v, HK_VR_MALFORMED_HEADER, src->timestamp_header);
        if (window(v, t, now, src->timestamp_header))
            return v->reason;
    }
    if (strstr(tpl, "{id}")) {
        if (!src->id_header)
            return fail(v, HK_VR_NO_SECRET, name);     /* a source the loader should have refused */
        id = one(v, h, src->id_header, &idn);
        if (!id)
            return v->reason;
        if (!hk_ascii_printable(id, idn, 0x20))
            return fail(v, HK_VR_MALFORMED_HEADER, src->id_header);
    }
    if (hk_template_expand(tpl, ts, tn, id, idn, v->pre, sizeof v->pre, &v->pre_len, v->post, sizeof v->post,
                           &v->post_len) < 0)
        return fail(v, HK_VR_MALFORMED_HEADER, id ? src->id_header : name);
    return begin_mac(v, src->algorithm, name);
}

enum hk_vreason hk_verify_begin(struct hk_verify *v, const struct hk_source *src, const struct hk_hdrs *h,
                                int64_t now_s)
{
    memset(v, 0, sizeof *v);
    v->src = src;
    v->matched = -1;
    v->reason = HK_VR_OK;
    if (src->scheme == HK_SCHEME_NONE)
        return HK_VR_OK;
    /* Normally loaded with the sources; a no-op then. */
    if (hk_crypto_init(NULL, 0) < 0)
        return fail(v, HK_VR_NO_SECRET, NULL);
    switch (src->scheme) {
    case HK_SCHEME_GITHUB:
        return begin_github(v, h, src->legacy_sha1);
    case HK_SCHEME_META:
        return begin_github(v, h, false);
    case HK_SCHEME_GITEA:
        return begin_gitea(v, h);
    case HK_SCHEME_GITLAB:
        return begin_token(v, h, "x-gitlab-token");
    case HK_SCHEME_TOKEN:
        return begin_token(v, h, src->header);
    case HK_SCHEME_STRIPE:
        return begin_stripe(v, h, now_s);
    case HK_SCHEME_SHOPIFY:
        return begin_shopify(v, h);
    case HK_SCHEME_SLACK:
        return begin_v0(v, h, now_s, "x-slack-signature", "x-slack-request-timestamp");
    case HK_SCHEME_ZOOM:
        return begin_v0(v, h, now_s, "x-zm-signature", "x-zm-request-timestamp");
    case HK_SCHEME_STANDARD:
        return begin_standard(v, h, now_s);
    case HK_SCHEME_DISCORD:
        return begin_discord(v, h, now_s);
    case HK_SCHEME_TWITCH:
        return begin_twitch(v, h, now_s);
    case HK_SCHEME_TWILIO:
        return begin_twilio(v, h);
    case HK_SCHEME_HMAC:
        return begin_hmac(v, h, now_s);
    case HK_SCHEME_NONE:
    case HK_SCHEME__COUNT:
        break;
    }
    return fail(v, HK_VR_NO_SECRET, NULL);
}

void hk_verify_update(struct hk_verify *v, const void *p, size_t n)
{
    if (v->reason != HK_VR_OK || !v->stream || v->finished)
        return;
    mac_all(v->mac, v->active, p, n);
}

/* ---- finish ----------------------------------------------------------- */

/* Close every running MAC (the template's tail first) and compare each
 * with every MAC signature of the header, in constant time. The first
 * secret that matched, or -1. */
static int close_macs(struct hk_verify *v)
{
    uint8_t out[HK_MD_MAX];
    size_t len = hk_md_len((enum hk_md)v->md);
    int matched = -1;
    for (unsigned i = 0; i < v->nmac; i++) {
        if (!(v->active & 1u << i))
            continue;
        hk_hmac_update(&v->mac[i], v->post, v->post_len);
        if (v->legacy_sha1) {
            const struct hk_secret *s = &v->src->secrets[i];
            struct hk_hmac_key k;
            hk_hmac_key_init(&k, HK_MD_SHA1, s->key, s->len);
            v->mac[i].key = &k;
            hk_hmac_final(&v->mac[i], out);
            hk_hmac_key_wipe(&k);
        } else {
            hk_hmac_final(&v->mac[i], out);
        }
        for (unsigned j = 0; j < v->nsig; j++)
            if (v->sig_kind[j] == SIG_MAC && v->sig_len[j] == len && !hk_crypto_memeq(out, v->sig[j], len) &&
                matched < 0)
                matched = (int)i;
    }
    v->active = 0;
    explicit_bzero(out, sizeof out);
    return matched;
}

/* ed25519 over prefix + body + post with every public key and every v1a
 * signature (at most ED_TRIES_MAX checks). The first secret that
 * verified, or -1. */
static int ed_match(struct hk_verify *v, const void *body, size_t n)
{
    bool any = false;
    for (unsigned j = 0; j < v->nsig; j++)
        any |= v->sig_kind[j] == SIG_ED;
    if (!any || !has_ed_key(v->src) || (n && !body) || n > SIZE_MAX - 2 * HK_VERIFY_PREFIX_MAX)
        return -1;
    size_t total = v->pre_len + n + v->post_len;
    uint8_t stack[ED_STACK];
    uint8_t *m = total <= sizeof stack ? stack : malloc(total);
    if (!m)
        abort();       /* the process's OOM policy (core/buf.h) */
    memcpy(m, v->pre, v->pre_len);
    if (n)
        memcpy(m + v->pre_len, body, n);
    memcpy(m + v->pre_len + n, v->post, v->post_len);
    int matched = -1, tries = 0;
    for (size_t i = 0; i < nsecrets(v->src) && matched < 0; i++) {
        const struct hk_secret *s = &v->src->secrets[i];
        if (!s->ed25519 || !s->key || s->len != 32)
            continue;
        for (unsigned j = 0; j < v->nsig && matched < 0 && tries < ED_TRIES_MAX; j++) {
            if (v->sig_kind[j] != SIG_ED)
                continue;
            tries++;
            if (hk_ed25519_verify(s->key, m, total, v->sig[j]) == 0)
                matched = (int)i;
        }
    }
    if (m != stack)
        free(m);
    return matched;
}

static int twilio_match(struct hk_verify *v, const void *body, size_t n)
{
    const char *bh;
    size_t bhl;
    if (n && !body)
        return -1;
    if (query_param(v->src->public_url, "bodySHA256", &bh, &bhl)) {
        /* A JSON delivery: Twilio signs the URL alone, and the URL carries
         * the body's hash. */
        uint8_t want[32], got[32];
        struct hk_md_ctx c;
        hk_md_init(&c, HK_MD_SHA256);
        hk_md_update(&c, body, n);
        hk_md_final(&c, got);
        if (bhl != 64 || hk_hex_decode(bh, want, 32) < 0 || hk_crypto_memeq(want, got, 32))
            return -1;
        return close_macs(v);
    }
    if (mac_form(v->mac, v->active, body, n) < 0) {
        fail(v, HK_VR_MALFORMED_HEADER, NULL);
        return -1;
    }
    return close_macs(v);
}

enum hk_vreason hk_verify_finish(struct hk_verify *v, const void *body, size_t n)
{
    if (v->finished)
        return v->reason;
    v->finished = true;
    if (v->reason == HK_VR_OK) {
        switch (v->src->scheme) {
        case HK_SCHEME_GITLAB:
        case HK_SCHEME_TOKEN:
        case HK_SCHEME_NONE:
            break;             /* decided at begin */
        case HK_SCHEME_TWILIO:
            v->matched = twilio_match(v, body, n);
            break;
        case HK_SCHEME_DISCORD:
            v->matched = ed_match(v, body, n);
            break;
        case HK_SCHEME_STANDARD:
            v->matched = v->active ? close_macs(v) : -1;
            if (v->matched < 0)
                v->matched = ed_match(v, body, n);
            break;
        default:
            v->matched = close_macs(v);
            break;
        }
        if (v->reason == HK_VR_OK && v->matched < 0 && v->src->scheme != HK_SCHEME_NONE)
            fail(v, HK_VR_NO_MATCH, v->sig_hdr);
    }
    if (v->reason != HK_VR_OK)
        v->matched = -1;
    explicit_bzero(v->mac, sizeof v->mac);
    v->active = 0;
    return v->reason;
}

void hk_verify_end(struct hk_verify *v)
{
    explicit_bzero(v->mac, sizeof v->mac);
    v->active = 0;
    v->finished = true;
}

enum hk_vreason hk_verify_all(struct hk_verify *v, const struct hk_source *src, const struct hk_hdrs *h,
                              const void *body, size_t n, int64_t now_s)
{
    if (hk_verify_begin(v, src, h, now_s) == HK_VR_OK)
        hk_verify_update(v, body, n);
    hk_verify_finish(v, body, n);
    hk_verify_end(v);
    return v->reason;
}

/* ---- signing ---------------------------------------------------------- */

static void put_hdr(struct hk_buf *b, const char *name, const char *prefix, const char *value, size_t len)
{
    hk_buf_puts(b, name);
    hk_buf_put(b, ": ", 2);
    if (prefix)
        hk_buf_puts(b, prefix);
    hk_buf_put(b, value, len);
    hk_buf_put(b, "\r\n", 2);
}

static void put_hex(struct hk_buf *b, const char *name, const char *prefix, const uint8_t *p, size_t n)
{
    char hex[2 * HK_MD_MAX + 1];
    hk_hex_encode(p, n, hex);
    put_hdr(b, name, prefix, hex, 2 * n);
}

static void put_b64(struct hk_buf *b, const char *name, const char *prefix, const uint8_t *p, size_t n)
{
    char s[HK_BASE64_LEN(HK_MD_MAX) + 1];
    size_t len = hk_base64_encode(p, n, s);
    put_hdr(b, name, prefix, s, len);
}

/* The first secret keyed for `md`, or NULL. */
static const struct hk_secret *mac_secret(const struct hk_source *src, enum hk_md md)
{
    for (size_t i = 0; i < nsecrets(src); i++)
        if (!src->secrets[i].ed25519 && src->secrets[i].hmac.inner.md == md)
            return &src->secrets[i];
    return NULL;
}

/* The MAC of pre + body + post with the first secret keyed for `md`; its
 * length, 0 when the source has none. */
static size_t sign_mac(const struct hk_source *src, enum hk_md md, const void *pre, size_t pre_len, const void *body,
                       size_t n, const void *post, size_t post_len, uint8_t *out)
{
    const struct hk_secret *s = mac_secret(src, md);
    struct hk_hmac_ctx c;
    if (!s)
        return 0;
    hk_hmac_begin(&c, &s->hmac);
    hk_hmac_update(&c, pre, pre_len);
    hk_hmac_update(&c, body, n);
    hk_hmac_update(&c, post, post_len);
    return hk_hmac_final(&c, out);
}

static int random_hex(char *out, size_t bytes)
{
    uint8_t r[32];
    size_t got = 0;
    if (bytes > sizeof r)
        return -1;
    while (got < bytes) {
        ssize_t k = getrandom(r + got, bytes - got, 0);
        if (k < 0 && errno != EINTR)
            return -1;
        if (k > 0)
            got += (size_t)k;
    }
    hk_hex_encode(r, bytes, out);
    return 0;
}

/* A fresh delivery id in the provider's style. */
static int new_id(enum hk_scheme scheme, char *out, size_t cap)
{
    char hex[33];
    if (cap < 40 || random_hex(hex, 16) < 0)
        return -1;
    if (scheme == HK_SCHEME_TWITCH) {
        /* A version 4 UUID, as Twitch's message ids are. */
        hex[12] = '4';
        hex[16] = "89ab"[hk_hex_val(hex[16]) & 3];
        snprintf(out, cap, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
    } else if (scheme == HK_SCHEME_STANDARD) {
        snprintf(out, cap, "msg_%.24s", hex);
    } else {
        snprintf(out, cap, "%s", hex);
    }
    return 0;
}

/* ed25519 over a + b in one piece. */
static int sign_ed(const uint8_t *priv, const void *a, size_t an, const void *b, size_t bn, uint8_t sig[64])
{
    uint8_t *m = malloc(an + bn + 1);
    if (!m)
        abort();
    memcpy(m, a, an);
    if (bn)
        memcpy(m + an, b, bn);
    int rc = hk_ed25519_sign(priv, m, an + bn, sig);
    free(m);
    return rc;
}

int hk_sign(const struct hk_source *src, const void *body, size_t n, int64_t now_s, const char *id,
            const uint8_t *priv, struct hk_buf *out, char *err, size_t errlen)
{
    uint8_t mac[HK_MD_MAX], sig[64];
    size_t len = 0;
    char ts[24], idbuf[64], pre[HK_VERIFY_PREFIX_MAX], post[HK_VERIFY_PREFIX_MAX];
    const char *ctype = "application/json";
    struct hk_buf b = HK_BUF_INIT;
    int rc = -1;

    if (hk_crypto_init(err, errlen) < 0)
        return -1;
    if (n && !body) {
        snprintf(err, errlen, "no body");
        return -1;
    }
    if (id && (!*id || strlen(id) > 200 || !hk_ascii_printable(id, strlen(id), 0x21))) {
        snprintf(err, errlen, "the delivery id must be 1 to 200 printable characters without spaces");
        return -1;
    }
    snprintf(ts, sizeof ts, "%lld", (long long)now_s);
    bool needs_id = src->scheme == HK_SCHEME_STANDARD || src->scheme == HK_SCHEME_TWITCH ||
                    (src->scheme == HK_SCHEME_HMAC && src->template && strstr(src->template, "{id}"));
    if (needs_id && !id) {
        if (new_id(src->scheme, idbuf, sizeof idbuf) < 0) {
            snprintf(err, errlen, "no randomness for a delivery id");
            return -1;
        }
        id = idbuf;
    }

    switch (src->scheme) {
    case HK_SCHEME_GITHUB:
    case HK_SCHEME_META:
        if (!(len = sign_mac(src, HK_MD_SHA256, NULL, 0, body, n, NULL, 0, mac)))
            goto no_secret;
        put_hex(&b, "X-Hub-Signature-256", "sha256=", mac, len);
        if (src->scheme == HK_SCHEME_GITHUB && src->legacy_sha1) {
            const struct hk_secret *s = mac_secret(src, HK_MD_SHA256);
            len = hk_hmac(HK_MD_SHA1, s->key, s->len, body, n, mac);
            put_hex(&b, "X-Hub-Signature", "sha1=", mac, len);
        }
        break;
    case HK_SCHEME_GITEA:
        if (!(len = sign_mac(src, HK_MD_SHA256, NULL, 0, body, n, NULL, 0, mac)))
            goto no_secret;
        put_hex(&b, "X-Gitea-Signature", NULL, mac, len);
        break;
    case HK_SCHEME_GITLAB:
    case HK_SCHEME_TOKEN: {
        const char *name = src->scheme == HK_SCHEME_GITLAB ? "X-Gitlab-Token" : src->header;
        const struct hk_secret *s = NULL;
        for (size_t i = 0; i < nsecrets(src) && !s; i++)
            if (!src->secrets[i].ed25519 && src->secrets[i].key && src->secrets[i].len)
                s = &src->secrets[i];
        if (!s || !name)
            goto no_secret;
        const char *tok = (const char *)s->key;
        if (!hk_ascii_printable(tok, s->len, 0x20) || tok[0] == ' ' || tok[s->len - 1] == ' ') {
            snprintf(err, errlen, "source \"%s\": the token cannot be sent in a header", src->name);
            goto out;
        }
        put_hdr(&b, name, NULL, tok, s->len);
        break;
    }
    case HK_SCHEME_STRIPE: {
        int pl = snprintf(pre, sizeof pre, "%s.", ts);
        if (!(len = sign_mac(src, HK_MD_SHA256, pre, (size_t)pl, body, n, NULL, 0, mac)))
            goto no_secret;
        char hex[2 * HK_MD_MAX + 1];
        hk_hex_encode(mac, len, hex);
        hk_buf_printf(&b, "Stripe-Signature: t=%s,v1=%s\r\n", ts, hex);
        break;
    }
    case HK_SCHEME_SHOPIFY:
        if (!(len = sign_mac(src, HK_MD_SHA256, NULL, 0, body, n, NULL, 0, mac)))
            goto no_secret;
        put_b64(&b, "X-Shopify-Hmac-Sha256", NULL, mac, len);
        break;
    case HK_SCHEME_SLACK:
    case HK_SCHEME_ZOOM: {
        int pl = snprintf(pre, sizeof pre, "v0:%s:", ts);
        if (!(len = sign_mac(src, HK_MD_SHA256, pre, (size_t)pl, body, n, NULL, 0, mac)))
            goto no_secret;
        bool slack = src->scheme == HK_SCHEME_SLACK;
        put_hdr(&b, slack ? "X-Slack-Request-Timestamp" : "x-zm-request-timestamp", NULL, ts, strlen(ts));
        put_hex(&b, slack ? "X-Slack-Signature" : "x-zm-signature", "v0=", mac, len);
        break;
    }
    case HK_SCHEME_STANDARD: {
        int pl = snprintf(pre, sizeof pre, "%s.%s.", id, ts);
        put_hdr(&b, "webhook-id", NULL, id, strlen(id));
        put_hdr(&b, "webhook-timestamp", NULL, ts, strlen(ts));
        if (priv) {
            if (sign_ed(priv, pre, (size_t)pl, body, n, sig) < 0) {
                snprintf(err, errlen, "ed25519 signing failed");
                goto out;
            }
            put_b64(&b, "webhook-signature", "v1a,", sig, 64);
        } else {
            if (!(len = sign_mac(src, HK_MD_SHA256, pre, (size_t)pl, body, n, NULL, 0, mac))) {
                snprintf(err, errlen, "source \"%s\" has no whsec_ secret: give a private key to sign v1a",
                         src->name);
                goto out;
            }
            put_b64(&b, "webhook-signature", "v1,", mac, len);
        }
        break;
    }
    case HK_SCHEME_DISCORD:
        if (!priv) {
            snprintf(err, errlen, "discord signs with ed25519: a private key is needed");
            goto out;
        }
        if (sign_ed(priv, ts, strlen(ts), body, n, sig) < 0) {
            snprintf(err, errlen, "ed25519 signing failed");
            goto out;
        }
        put_hex(&b, "X-Signature-Ed25519", NULL, sig, 64);
        put_hdr(&b, "X-Signature-Timestamp", NULL, ts, strlen(ts));
        break;
    case HK_SCHEME_TWITCH: {
        char stamp[48];
        struct tm tm;
        time_t t = (time_t)now_s;
        if (!gmtime_r(&t, &tm) || !strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S.000000000Z", &tm)) {
            snprintf(err, errlen, "time out of range");
            goto out;
        }
        int pl = snprintf(pre, sizeof pre, "%s%s", id, stamp);
        if (!(len = sign_mac(src, HK_MD_SHA256, pre, (size_t)pl, body, n, NULL, 0, mac)))
            goto no_secret;
        put_hdr(&b, "Twitch-Eventsub-Message-Id", NULL, id, strlen(id));
        put_hdr(&b, "Twitch-Eventsub-Message-Timestamp", NULL, stamp, strlen(stamp));
        put_hex(&b, "Twitch-Eventsub-Message-Signature", "sha256=", mac, len);
        break;
    }
    case HK_SCHEME_TWILIO: {
        const struct hk_secret *s = mac_secret(src, HK_MD_SHA1);
        const char *url = src->public_url, *bh;
        size_t bhl;
        if (!s || !url || !*url)
            goto no_secret;
        struct hk_hmac_ctx c;
        hk_hmac_begin(&c, &s->hmac);
        hk_hmac_update(&c, url, strlen(url));
        if (!query_param(url, "bodySHA256", &bh, &bhl)) {
            ctype = "application/x-www-form-urlencoded";
            if (mac_form(&c, 1, body, n) < 0) {
                hk_hmac_final(&c, mac);
                snprintf(err, errlen, "the body is not a form of at most %d parameters", TWILIO_PARAMS_MAX);
                goto out;
            }
        }
        len = hk_hmac_final(&c, mac);
        put_b64(&b, "X-Twilio-Signature", NULL, mac, len);
        break;
    }
    case HK_SCHEME_HMAC: {
        const char *tpl = src->template ? src->template : "{body}";
        size_t pl, ql;
        if (!src->header || (unsigned)src->algorithm > HK_MD_SHA512)
            goto no_secret;
        if (strstr(tpl, "{id}") && !src->id_header) {
            snprintf(err, errlen, "source \"%s\": the template uses {id} but no id header is set", src->name);
            goto out;
        }
        bool want_id = strstr(tpl, "{id}") != NULL;
        if (hk_template_expand(tpl, src->timestamp_header ? ts : NULL, strlen(ts), want_id ? id : NULL,
                               want_id ? strlen(id) : 0, pre, sizeof pre, &pl, post, sizeof post, &ql) < 0) {
            snprintf(err, errlen, "source \"%s\": the template does not expand", src->name);
            goto out;
        }
        if (!(len = sign_mac(src, src->algorithm, pre, pl, body, n, post, ql, mac)))
            goto no_secret;
        if (src->encoding == HK_ENC_BASE64)
            put_b64(&b, src->header, src->prefix, mac, len);
        else
            put_hex(&b, src->header, src->prefix, mac, len);
        if (src->timestamp_header)
            put_hdr(&b, src->timestamp_header, NULL, ts, strlen(ts));
        if (want_id)
            put_hdr(&b, src->id_header, NULL, id, strlen(id));
        break;
    }
    case HK_SCHEME_NONE:
        break;
    case HK_SCHEME__COUNT:
        snprintf(err, errlen, "unknown scheme");
        goto out;
    }
    hk_buf_printf(out, "Content-Type: %s\r\n", ctype);
    hk_buf_put(out, b.p, b.len);
    rc = 0;
    goto out;
no_secret:
    snprintf(err, errlen, "source \"%s\" has no secret to sign with", src->name);
out:
    explicit_bzero(mac, sizeof mac);
    hk_buf_free(&b);
    return rc;
}
