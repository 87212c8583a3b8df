-- SPDX-License-Identifier: MIT
-- wrk: POST /api/webhooks with a small JSON body (bench/pg/run.sh).
wrk.method = "POST"
wrk.path = "/api/webhooks"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"source":"github","eventType":"push","payload":"{\\"ref\\":\\"refs/heads/main\\",\\"commits\\":3}"}'
