/* SPDX-License-Identifier: MIT
 * The web inspector's files as the build embeds them (src/api/ui_embed.py
 * writes the table into ui_data.c) and the handlers that serve them
 * (api/ui.c). docs/ui.md. Private to api/. */
#ifndef HK_API_UI_H
#define HK_API_UI_H

#include <stdbool.h>
#include <stddef.h>

struct hk_req;

/* One embedded file; everything static, read-only, for the process's life. */
struct hk_ui_file {
    const char *path;          /* "/ui" for the page, else "/ui/assets/<stem>.<12 hex>.<ext>" */
    size_t path_len;
    const char *name;          /* the file's name in ui/ */
    const char *content_type;  /* with a charset for text */
    const char *cache_control;
    const unsigned char *data; /* the bytes served (references rewritten) */
    size_t len;
    const unsigned char *gz;   /* gzip rendering of data (level 9, mtime 0) */
    size_t gz_len;
    const char *etag;          /* quoted, strong: of data */
    const char *etag_gz;       /* quoted, strong: of the gzip rendering */
};

/* hk_ui_files[0] is the page; the others are assets. */
extern const struct hk_ui_file hk_ui_files[];
extern const size_t hk_ui_nfiles;
extern const size_t hk_ui_gzip_total;

/* Is `path` one the inspector serves (/ui, or under /ui/)? */
bool hk_ui_path(const char *path, size_t len);

/* GET/HEAD /ui and /ui/: the page. GET/HEAD /ui/assets/{asset}: an asset
 * by its hashed name, 404 otherwise. No credential; nothing allocated. */
void hk_api_ui_page(struct hk_req *r);
void hk_api_ui_asset(struct hk_req *r);
/* GET/HEAD /favicon.ico: the icon, cached for a day. */
void hk_api_ui_favicon(struct hk_req *r);

/* A request under /ui the route table did not match (status 404, or 405
 * with `allow`): "/ui/" gets the page, anything else the refusal with
 * the inspector's security headers. For api/app.c's on_request. */
void hk_api_ui_unrouted(struct hk_req *r, int status, const char *allow);

#endif
