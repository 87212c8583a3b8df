-- SPDX-License-Identifier: MIT
-- The ingress profile's baseline: unsigned POST /api/webhooks with one fixed
-- 2 KB envelope ({"source":"stripe","eventType":"charge.succeeded",
-- "payload":"..."}, written by bench/hkbench/ingress.py), on a fresh server of
-- the same build and store as the signed POST /hooks/stripe it is compared with.
--
--   wrk -t1 -c100 -d60s --latency -s bench/wrk/envelope2k.lua URL -- <bodyfile> [bucket_ms]
--
-- Counting and the summary line are ingress.lua's (a 2xx other than 201 is
-- "2xxOther", in the harness's non2xx).
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "ingress.lua")

local req

function init(args)
    local body = read_body(args[1])
    bucket = tonumber(args[2] or "1000")
    req = wrk.format("POST", "/api/webhooks", { ["Content-Type"] = "application/json" }, body)
end

function request()
    return req
end
