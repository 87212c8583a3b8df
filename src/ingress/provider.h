/* SPDX-License-Identifier: MIT
 * What a provider's delivery says about itself - its event type and
 * delivery id, from headers or a JSON body (jansson) - and the handshakes
 * providers make before they send events: answered here, never stored. */
#ifndef HK_PROVIDER_H
#define HK_PROVIDER_H

#include <stddef.h>

#include "core/buf.h"
#include "ingress/sources.h"
#include "ingress/verify.h"

#define HK_META_MAX 255            /* bytes kept of an event type or a delivery id */
#define HK_META_PATH_MAX 16        /* segments of a dotted body path ("event.type": 2) */
#define HK_HANDSHAKE_ECHO_MAX 1024 /* bytes of a challenge or token echoed back */
#define HK_HANDSHAKE_BODY_MAX 65536 /* a larger POST body is never a handshake (none is parsed) */

/* Pointers into the headers, or into `buf` (values read from the body).
 * NULL: the delivery has none. A value counts as none when it is empty,
 * longer than HK_META_MAX, not valid UTF-8, or holds a control character
 * (C0, DEL or C1); so does a header sent more than once. Values from the
 * body are NUL-terminated in `buf`; header values are not. */
struct hk_meta {
    const char *event_type;
    size_t event_type_len;
    const char *delivery_id;
    size_t delivery_id_len;
    char buf[2 * (HK_META_MAX + 1)];
};

/* The source's overrides first (event_type_header, event_type_field,
 * delivery_id_header, delivery_id_field), then the scheme's defaults
 * (docs/ingress.md). A body field is a dotted path through JSON objects;
 * strings are taken as they are, numbers rendered as decimal text, any
 * other JSON value counts as none. The body is parsed (once, jansson,
 * nesting bounded by its JSON_PARSER_MAX_DEPTH) only when a value comes
 * from it and the content type is JSON (application/json or any +json,
 * parameters ignored); the tree is freed before return. `h` and `body` are
 * read during the call; the result borrows the header values that `h`
 * returned (valid while the request's headers are) and `out` itself. */
void hk_meta_extract(const struct hk_source *src, const struct hk_hdrs *h, const char *content_type,
                     size_t content_type_len, const void *body, size_t n, struct hk_meta *out);

enum hk_handshake {
    HK_HS_NONE,
    HK_HS_SLACK,               /* url_verification: echo challenge */
    HK_HS_DISCORD,             /* PING {"type":1} -> {"type":1}; webhook-event PING {"type":0} -> 204 */
    HK_HS_TWITCH,              /* webhook_callback_verification: challenge as text/plain */
    HK_HS_ZOOM,                /* endpoint.url_validation: plainToken + encryptedToken */
    HK_HS_META,                /* GET ?hub.mode=subscribe&hub.verify_token=…&hub.challenge=… */
    HK_HS_GRAPH,               /* Microsoft Graph ?validationToken=… */
    HK_HS__COUNT
};
/* "none", "slack", "discord", "twitch", "zoom", "meta", "graph". */
const char *hk_handshake_name(enum hk_handshake k);

/* A verified POST: is it the scheme's handshake? If so, appends the
 * response body to `resp`, sets *ctype (a static string), and returns the
 * kind; answer 200 with them, except when `resp` received nothing (Discord's
 * webhook-event PING): answer 204 No Content, with *ctype as Content-Type
 * (Discord asks for one). `matched` is the secret that verified (zoom's
 * answer is keyed with it; without a usable one zoom's handshake is not
 * answered). A body larger than HK_HANDSHAKE_BODY_MAX, or a challenge that
 * is empty, longer than HK_HANDSHAKE_ECHO_MAX or (text/plain answers) holds
 * a control character, is not a handshake: HK_HS_NONE, `resp` untouched,
 * and the delivery, which did verify, goes on as an ordinary one. */
enum hk_handshake hk_handshake_post(const struct hk_source *src, const struct hk_hdrs *h, const void *body, size_t n,
                                    int matched, struct hk_buf *resp, const char **ctype);

/* A handshake carried by the query string (Meta's GET, Graph's POST before
 * any signature exists); `query` is what follows '?' (a leading '?' is
 * skipped), percent-decoded here ('+' is a space). Returns the HTTP status
 * to answer with:
 *   200  `resp` holds the challenge (text/plain), *ctype set;
 *   403  meta: hub.verify_token missing or not the source's verifyToken
 *        (also when the source has none);
 *   400  a handshake this source answers, but malformed: a bad percent
 *        escape, a parameter sent twice, hub.mode other than "subscribe",
 *        a challenge/token missing, empty, over HK_HANDSHAKE_ECHO_MAX
 *        decoded bytes, not UTF-8 or holding a control character;
 *   0    not a handshake this source answers (meta: no hub.mode, or the
 *        source is neither scheme meta nor has a verifyToken; graph: no
 *        validationToken or graphValidation off).
 * `resp` and *ctype are touched only for 200. *kind says which handshake
 * (HK_HS_NONE with 0). Meta is looked at before Graph. */
int hk_handshake_query(const struct hk_source *src, const char *query, size_t query_len, struct hk_buf *resp,
                       const char **ctype, enum hk_handshake *kind);

#endif
