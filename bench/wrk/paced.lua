-- SPDX-License-Identifier: MIT
-- The forwarding profile's fixed-rate load (bench/hkbench/forward.py): POST
-- /api/webhooks with the 2 KB envelope of envelope2k.lua at `rate` requests
-- per second in all, to measure receive -> sink latency at a rate the server
-- keeps up with. wrk2 (which paces for you) is not in Debian; wrk calls a
-- script's delay() before every request of a connection and waits that many
-- ms. Here one schedule per thread hands out send times `1000 * threads / rate`
-- ms apart to whichever connection asks next, so the rate holds as long as
-- some connection is free: with 100 connections, while answers take less than
-- 100 / rate seconds. A slot that passed unused is not made up for later (no
-- burst after a stall), so a server that falls behind shows as a lower rate
-- than asked. wrk's timers have 1 ms resolution: sends are spread to the ms.
--
--   wrk -t1 -c100 -d60s --latency -s bench/wrk/paced.lua URL -- <bodyfile> <rate> [threads] [bucket_ms]
--
-- `threads` must be wrk's -t (each thread sends rate / threads). Counting and
-- the summary line are ingress.lua's (a 2xx other than 201 is "2xxOther").
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "ingress.lua")

-- ingress.lua declared the type and clock_gettime in this Lua state.
local ffi = require("ffi")
local ts = ffi.new("hk_timespec")
local function clock_ms()
    ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
    return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local req, interval
local next_ms = nil

function init(args)
    local body = read_body(args[1])
    local rate = tonumber(args[2] or "")
    local nthreads = tonumber(args[3] or "1")
    if not rate or rate <= 0 then
        error("paced.lua: the second argument must be the rate in requests per second (> 0)")
    end
    if not nthreads or nthreads < 1 then
        error("paced.lua: the third argument must be wrk's thread count")
    end
    bucket = tonumber(args[4] or "1000")
    interval = 1000 * nthreads / rate
    req = wrk.format("POST", "/api/webhooks", { ["Content-Type"] = "application/json" }, body)
end

function request()
    return req
end

function delay()
    local now = clock_ms()
    if next_ms == nil or next_ms < now then
        next_ms = now
    end
    local wait = next_ms - now
    next_ms = next_ms + interval
    return math.floor(wait + 0.5)
end
