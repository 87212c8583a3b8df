-- SPDX-License-Identifier: MIT
-- bench/wrk/mix.lua with every read authenticated: the same fixed
-- interleaving of 20 requests, the GETs (GET /api/webhooks, which needs the
-- read scope, and GET /api/system/info, which is open) carrying
-- "Authorization: Bearer <session>"; the POSTs stay as senders send them,
-- without a credential. Point hookd at Redis (HOOKD_REDIS_URL) and every list
-- request is a session lookup in Redis.
--
--   wrk -t1 -c100 -d60s --latency -s bench/wrk/mix_auth.lua URL -- [paged|reference] [bucket_ms] [hks_...]
--
-- The session token is the third argument, else $HKBENCH_SESSION. The
-- summary line is mix.lua's: a rejected credential shows as 4xx in
-- statusClasses (and non2xx in the harness), never as a faster run.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "mix.lua")

local mix_init = init

function init(args)
    local session = args[3] or os.getenv("HKBENCH_SESSION")
    if not session or session == "" then
        error("mix_auth.lua: no session token (the third script argument, or HKBENCH_SESSION)")
    end
    -- mix.lua formats its GETs with wrk.headers and its POSTs with their own
    -- header table: only the GETs carry the credential.
    wrk.headers["Authorization"] = "Bearer " .. session
    mix_init(args)
end
