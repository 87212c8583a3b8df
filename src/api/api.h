/* SPDX-License-Identifier: MIT
 * The application: hookd's routes and handlers, handed to the transport as
 * one struct hk_app. main.c makes one hk_api per process; the transport
 * calls its hooks on every loop. */
#ifndef HK_API_H
#define HK_API_H

#include <stdint.h>

#include "http/route.h"

struct hk_api;
struct hk_app;
struct hk_config;
struct hk_store;

/* The application over `store`. `cfg` and `store` are borrowed for its
 * life; `start_ns` is the process start (hk_mono_ns) for uptime. */
struct hk_api *hk_api_new(const struct hk_config *cfg, struct hk_store *store, uint64_t start_ns);
/* Its hooks, for hk_server_start or hk_worker_init; valid until hk_api_free. */
const struct hk_app *hk_api_app(struct hk_api *a);
/* What access control needs before the first request: Redis checked
 * (HOOKD_REDIS_URL: a wrong password fails here), the tokens file read,
 * and on the first start with nothing configured an admin token made and
 * shown once on stderr. Returns 0, or -1 with one line in err. */
int hk_api_prepare(struct hk_api *a, char *err, size_t errlen);
/* (Re)load HOOKD_SOURCES (api/hooks.c): at start, and on SIGHUP. A good
 * file replaces the sources atomically (deliveries in flight finish with
 * the old ones); a bad one changes nothing. 0, or -1 with one line in err
 * naming the source and the field. A no-op without HOOKD_SOURCES. */
int hk_api_sources_load(struct hk_api *a, char *err, size_t errlen);
/* After the sources: the live feed's hub, the forwarder (K_SINK or
 * HOOKD_FORWARD_URL: the URL checked, libcurl loaded) and the retention
 * rules (docs/forwarding.md). 0, or -1 with one line in err. Without this
 * call (tests driving loops in memory) none of them runs. */
int hk_api_start_outbound(struct hk_api *a, char *err, size_t errlen);
/* After every loop that used it has stopped. */
void hk_api_free(struct hk_api *a);

/* `hookd token create|list|revoke ...` (argv from the verb on) on `store`.
 * Returns the exit status. */
int hk_api_token_cli(const struct hk_config *cfg, struct hk_store *store, int argc, char **argv);

/* Read what /api/system/info reports that never changes (uname, memory
 * limit, CPUs). Idempotent and thread-safe; runs on first use if not called. */
void hk_api_init(void);

/* The route table: method, template and handler of every route, in the
 * order the matcher needs (same templates adjacent). The metrics' uri
 * labels and the OpenAPI check are derived from it. */
extern const struct hk_route hk_api_routes[];
extern const int hk_api_nroutes;

#endif
