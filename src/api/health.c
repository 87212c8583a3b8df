/* SPDX-License-Identifier: MIT
 * The health endpoints, in MicroProfile Health's shape: live (the loop
 * answers), ready (the store is usable), started. */
#include "api/api_int.h"
#include "redis/redis.h"

static void health(struct hk_req *r, bool live, bool ready, bool started)
{
    struct hk_api_loop *L = api_loop(r);
    bool store_up = L->sl && hk_store_health(L->sl) == 0;
    /* Sessions live in Redis when it is configured: requests that need one
     * get 503 while it is down, so the pod is not ready either. Each loop
     * has its own client, and a probe reaches one loop: the pod is ready
     * only while every loop's client is up, or a probe answered by a loop
     * whose client is up would call it ready while requests landing on
     * another one fail (right after the start, as one connects after the
     * other). This loop's own client decides too, in case the count lags. */
    bool redis_up = !L->redis || (hk_redis_up(L->redis) &&
                                  atomic_load_explicit(&L->api->redis_up, memory_order_relaxed) >= L->api->nloops);
    bool up = !ready || (store_up && redis_up);
    struct hk_buf *b = hk_resp_body(r);
    hk_buf_puts(b, up ? "{\"status\":\"UP\",\"checks\":[" : "{\"status\":\"DOWN\",\"checks\":[");
    const char *sep = "";
    if (live) {
        hk_buf_puts(b, "{\"name\":\"event-loop\",\"status\":\"UP\"}");
        sep = ",";
    }
    if (ready) {
        hk_buf_puts(b, sep);
        hk_buf_puts(b, "{\"name\":\"store\",\"status\":\"");
        hk_buf_puts(b, store_up ? "UP" : "DOWN");
        hk_buf_puts(b, "\",\"data\":{\"backend\":\"");
        hk_buf_puts(b, L->api->store->vt->name);
        hk_buf_puts(b, "\"}}");
        if (L->redis)
            hk_buf_puts(b, redis_up ? ",{\"name\":\"redis\",\"status\":\"UP\"}"
                                    : ",{\"name\":\"redis\",\"status\":\"DOWN\"}");
        sep = ",";
    }
    if (started) {
        hk_buf_puts(b, sep);
        hk_buf_puts(b, "{\"name\":\"started\",\"status\":\"UP\"}");
    }
    hk_buf_puts(b, "]}");
    hk_resp_send(r, up ? 200 : 503, HK_CT_JSON);
}

void hk_api_health(struct hk_req *r)
{
    health(r, true, true, true);
}

void hk_api_health_live(struct hk_req *r)
{
    health(r, true, false, false);
}

void hk_api_health_ready(struct hk_req *r)
{
    health(r, false, true, false);
}

void hk_api_health_started(struct hk_req *r)
{
    health(r, false, false, true);
}
