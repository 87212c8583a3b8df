/* SPDX-License-Identifier: MIT
 * The API's handlers and the entry point the HTTP layer calls per request. */
#ifndef HK_API_H
#define HK_API_H

struct hk_req;

/* Read what /api/system/info reports that never changes (uname, memory
 * limit, CPUs). Idempotent and thread-safe; runs on first use if not called. */
void hk_api_init(void);

/* Route the request and run its handler (or answer 404/405). */
void hk_api_dispatch(struct hk_req *r);

void hk_api_webhook_create(struct hk_req *r);
void hk_api_webhook_list(struct hk_req *r);
void hk_api_webhook_get(struct hk_req *r);
void hk_api_webhook_delete(struct hk_req *r);
void hk_api_system_info(struct hk_req *r);
void hk_api_system_benchmark(struct hk_req *r);
void hk_api_health(struct hk_req *r);
void hk_api_health_live(struct hk_req *r);
void hk_api_health_ready(struct hk_req *r);
void hk_api_health_started(struct hk_req *r);

#endif
