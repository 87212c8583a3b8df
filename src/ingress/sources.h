/* SPDX-License-Identifier: MIT
 * The sources file (HOOKD_SOURCES): which names POST /hooks/{source}
 * accepts and how each one is verified. Parsed with libyaml (JSON is valid
 * input) into one immutable snapshot; secrets are resolved at load (from
 * the environment or a file, never written in the file itself) and decoded
 * into the form their scheme uses. A snapshot is shared by every loop and
 * reference-counted: a reload makes a new one, and requests that hold the
 * old one keep it until they end. */
#ifndef HK_SOURCES_H
#define HK_SOURCES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/crypto.h"

enum hk_scheme {
    HK_SCHEME_GITHUB,
    HK_SCHEME_GITEA,
    HK_SCHEME_GITLAB,
    HK_SCHEME_STRIPE,
    HK_SCHEME_SHOPIFY,
    HK_SCHEME_SLACK,
    HK_SCHEME_STANDARD,        /* "standard-webhooks" (also svix-* headers) */
    HK_SCHEME_DISCORD,
    HK_SCHEME_TWITCH,
    HK_SCHEME_ZOOM,
    HK_SCHEME_META,
    HK_SCHEME_TWILIO,
    HK_SCHEME_HMAC,            /* generic */
    HK_SCHEME_TOKEN,           /* a shared token in a named header */
    HK_SCHEME_NONE,            /* only when written explicitly */
    HK_SCHEME__COUNT
};

/* The name as written in the file ("standard-webhooks", …). */
const char *hk_scheme_name(enum hk_scheme s);

enum hk_encoding { HK_ENC_HEX, HK_ENC_BASE64 };

#define HK_SOURCE_NAME_MAX 64
#define HK_SOURCES_MAX 1024        /* sources per file */
#define HK_SOURCE_SECRETS_MAX 8    /* active secrets per source (rotation) */
#define HK_SOURCE_LIST_MAX 32      /* entries of contentTypes, headers, trustedProxies */
#define HK_SECRET_MAX 1024         /* bytes of one secret, decoded */
#define HK_SOURCES_FILE_MAX (1 << 20)

/* One secret, as its scheme uses it. */
struct hk_secret {
    char ref[160];             /* "env:NAME" or "file:/path": safe to show, never the value */
    uint8_t *key;              /* the bytes the scheme keys with (owned; wiped on free):
                                * HMAC schemes: the HMAC key (stripe: the whole whsec_…
                                * string; standard-webhooks: the base64 after whsec_);
                                * gitlab/token: the token; ed25519: the 32-byte public key */
    size_t len;
    bool ed25519;              /* discord, and standard-webhooks whpk_ keys */
    struct hk_hmac_key hmac;   /* HMAC schemes: prepared with the scheme's digest */
};

/* An address block: IPv4 as v4-mapped IPv6, `bits` counted on 128. */
struct hk_cidr {
    uint8_t addr[16];
    uint8_t bits;
};

struct hk_source {
    char name[HK_SOURCE_NAME_MAX + 1];     /* [a-z0-9_-]{1,64} */
    size_t name_len;
    enum hk_scheme scheme;
    struct hk_secret secrets[HK_SOURCE_SECRETS_MAX];
    size_t nsecrets;
    int64_t tolerance_s;       /* timestamp window either way; default 300 */
    uint64_t max_body;         /* maxBodyBytes; default: the server's HOOKD_MAX_BODY_BYTES */
    /* contentTypes: allowed media types, lower-case, without parameters;
     * none: any. */
    char *content_types[HK_SOURCE_LIST_MAX];
    size_t ncontent_types;
    /* rateLimit: {rate: per second (may be fractional), burst}; rate 0: none. */
    double rate;
    uint32_t burst;
    /* headers: extra header names to keep with each delivery (lower-case),
     * beside the scheme's own list. Authorization and Cookie are refused. */
    char *headers[HK_SOURCE_LIST_MAX];
    size_t nheaders;
    /* Where the event type and delivery id come from, overriding the
     * scheme's default: a header name (lower-case), or a dotted path into
     * a JSON body ("event.type"). NULL: the scheme's default. */
    char *event_type_header, *event_type_field;
    char *delivery_id_header, *delivery_id_field;
    /* trustedProxies: peers whose X-Forwarded-For is believed. */
    struct hk_cidr proxies[HK_SOURCE_LIST_MAX];
    size_t nproxies;
    bool legacy_sha1;          /* github: also accept X-Hub-Signature (sha1=) */
    uint8_t *verify_token;     /* meta: verifyToken, for the GET handshake (owned) */
    size_t verify_token_len;
    char *verify_token_ref;
    char *public_url;          /* twilio: publicUrl, the URL Twilio signs */
    bool graph_validation;     /* graphValidation: answer Microsoft Graph's ?validationToken= */
    /* hmac (generic) and token: */
    char *header;              /* hmac: the signature header; token: the token header (lower-case) */
    enum hk_md algorithm;      /* hmac: sha1/sha256/sha512 (default sha256) */
    enum hk_encoding encoding; /* hmac: hex/base64 (default hex) */
    char *prefix;              /* hmac: before the signature in the header ("sha256="), or NULL */
    char *timestamp_header;    /* hmac: lower-case, or NULL */
    char *template;            /* hmac: the signed content, "{body}" by default;
                                * placeholders {body} (once), {timestamp}, {id} */
    char *id_header;           /* hmac: the header {id} comes from (deliveryIdHeader) */
    /* forward: this source's forwarding (docs/forwarding.md), overriding
     * K_SINK / HOOKD_FORWARD_URL. `forward: false` turns it off. */
    struct {
        bool off;              /* forward: false: never forwarded */
        char *url;             /* url: http(s) sink; NULL: the global one. Owned; may hold a
                                * password (userinfo): never in a message, wiped on free */
        char *type;            /* type: ce-type template ({event}, {source}), 1..256 bytes of
                                * printable ASCII (owned); NULL: by the scheme */
        int mode;              /* mode: -1 the global HOOKD_FORWARD_MODE, 0 binary, 1 structured */
        bool fifo;             /* fifo: the next event waits until the previous one is delivered or failed */
    } forward;
    /* retention: this source's own rules, replacing HOOKD_RETENTION and
     * HOOKD_MAX_ROWS for its rows (HOOKD_MAX_BYTES stays global). */
    struct {
        bool set;              /* a retention: key was given */
        uint64_t max_age_ms;   /* maxAge: 0 keeps rows forever (a source with retention: is
                                * left alone by the global age and row rules either way) */
        uint64_t max_rows;     /* maxRows: 0 no cap; at most INT64_MAX */
    } retention;
};

struct hk_sources {
    atomic_uint refs;
    struct hk_source *v;       /* sorted by name */
    size_t n;
    char path[256];
};

/* Resolves an environment variable for the loader (core/config.h's
 * hk_env in the server; tests pass their own). NULL: unset. */
typedef const char *(*hk_env_fn)(const char *name);

/* Reads a secret's file for the loader: at most `cap` bytes into `buf`,
 * their count in *len. Returns 0, or an errno value: EFBIG when the file
 * holds more than `cap` bytes, EINVAL when it is not a regular file. The
 * loader's own reads the file system; the fuzzer passes one that does not. */
typedef int (*hk_file_fn)(const char *path, void *buf, size_t cap, size_t *len);

/* Parse `len` bytes of YAML/JSON text into a new snapshot (refs 1).
 * `default_max_body` fills maxBodyBytes where a source has none. `base`
 * names the file in messages. On error returns NULL and writes one line
 * naming the file, the source (by index when its name is not known yet)
 * and the field into err ("sources.yaml: source \"stripe\": secrets[1]:
 * file /run/x: No such file or directory"). Never puts a secret's value
 * into err. Calls hk_crypto_init when a source uses an HMAC or ed25519
 * scheme (its message becomes the error if libcrypto cannot be loaded).
 * Secrets are decoded as sources.c's header comment says. */
struct hk_sources *hk_sources_parse(const char *text, size_t len, const char *base, uint64_t default_max_body,
                                    hk_env_fn env, char *err, size_t errlen);
/* hk_sources_parse with the reader of {file: PATH} secrets given
 * (NULL: every file secret fails with ENOENT). */
struct hk_sources *hk_sources_parse_with(const char *text, size_t len, const char *base, uint64_t default_max_body,
                                         hk_env_fn env, hk_file_fn file, char *err, size_t errlen);
/* The reader hk_sources_parse uses: open, fstat (a regular file), read. */
int hk_sources_read_file(const char *path, void *buf, size_t cap, size_t *len);
/* Read the file (at most HK_SOURCES_FILE_MAX bytes) and parse it. */
struct hk_sources *hk_sources_load(const char *path, uint64_t default_max_body, hk_env_fn env, char *err,
                                   size_t errlen);
/* Binary search by name; NULL when unknown. */
const struct hk_source *hk_sources_find(const struct hk_sources *s, const char *name, size_t len);
void hk_sources_ref(struct hk_sources *s);
/* Drop a reference; the last one frees the snapshot and wipes its secrets. */
void hk_sources_unref(struct hk_sources *s);

/* A name a source may have: [a-z0-9_-]{1,64}. */
bool hk_source_name_ok(const char *name, size_t len);
/* Is the 16-byte address inside one of the source's trusted proxies? */
bool hk_source_trusts(const struct hk_source *src, const uint8_t addr[16]);

#endif
