-- SPDX-License-Identifier: MIT
-- The forwarding profile's sink on its own (bench/hkbench/forward.py): wrk
-- sends the nginx sink what hookd's forwarder sends it, a binary-mode
-- CloudEvent (ce-specversion, ce-id, ce-source, ce-type, ce-time, ce-subject
-- headers, the envelope's payload as the body), to measure what the sink can
-- take before hookd is measured against it. Each request has its own ce-id
-- ("<thread>-<counter>"); ce-time is the script's start (the sink logs it,
-- the harness only counts the lines here).
--
--   wrk -t1 -c64 -d10s --latency -s bench/wrk/sink.lua URL -- <bodyfile> [bucket_ms]
--
-- The sink answers 202: that is counted as the "2xx" status class, any
-- other 2xx as "2xxOther" (in the harness's non2xx). The summary line is
-- ingress.lua's.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "ingress.lua")

local ffi = require("ffi")
local ts = ffi.new("hk_timespec")
local function clock_ms()
    ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC, as ingress.lua's buckets
    return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local MARK = "@@HKBENCH_CE_ID@@"
local pre, post
local seq = 0

function init(args)
    local body = read_body(args[1])
    bucket = tonumber(args[2] or "1000")
    local req = wrk.format("POST", "/sink", {
        ["Content-Type"] = "application/json",
        ["ce-specversion"] = "1.0",
        ["ce-id"] = MARK,
        ["ce-source"] = "/api/webhooks",
        ["ce-type"] = "dev.hookd.webhook.charge.succeeded",
        ["ce-time"] = os.date("!%Y-%m-%dT%H:%M:%S.000000Z"),
        ["ce-subject"] = "stripe",
    }, body)
    local i, j = req:find(MARK, 1, true)
    pre, post = req:sub(1, i - 1) .. tostring(tid) .. "-", req:sub(j + 1)
end

function request()
    seq = seq + 1
    return pre .. seq .. post
end

function response(status, headers, body)
    local b = math.floor((clock_ms() - t0) / bucket)
    counts[b] = (counts[b] or 0) + 1
    local c = math.floor(status / 100)
    if c == 2 and status ~= 202 then
        other2xx = other2xx + 1
    elseif c >= 1 and c <= 5 then
        classes[c] = classes[c] + 1
    end
end
