-- SPDX-License-Identifier: MIT
-- The ingress profile for wrk: POST /hooks/stripe with one fixed body (a
-- Stripe event padded to 2 KB) and its Stripe-Signature, which covers
-- "t.body" only and so is made once by the harness (bench/hkbench/ingress.py).
-- Every request carries its own X-Bench-Delivery ("<thread>-<counter>"), the
-- source's delivery id: each one is a new row, never the dedup shortcut, and
-- the server computes the MAC over the body and reads the event type from the
-- JSON on every request.
--
--   wrk -t1 -c100 -d60s --latency -s bench/wrk/ingress.lua URL -- <t=...,v1=...> <bodyfile> [bucket_ms]
--
-- Responses are counted per status class and per time bucket as in mix.lua.
-- A 2xx other than 201 (200: the delivery was taken for a duplicate) is
-- counted as "2xxOther", which the harness counts in non2xx: the profile
-- measures new deliveries only. done() prints one line "HKBENCH_JSON {...}"
-- with mix.lua's fields, latencies in us. bench/wrk/envelope2k.lua reuses
-- this file with its own request.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } hk_timespec;
int clock_gettime(int clk, hk_timespec *ts);
]]
local ts = ffi.new("hk_timespec")
local function now_ms()
    ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC: the same clock in every thread
    return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local threads = {}
local start_ms = nil

function setup(thread)
    -- One start time for every thread, so their buckets line up; the thread
    -- number keeps the delivery ids of two threads apart.
    start_ms = start_ms or now_ms()
    thread:set("t0", start_ms)
    table.insert(threads, thread)
    thread:set("tid", #threads)
end

t0 = 0
tid = 1
counts = {}
classes = { 0, 0, 0, 0, 0 }
other2xx = 0
bucket = 1000

-- The body file, read whole; a missing or empty file stops the run (wrk
-- reports the error and exits non-zero) instead of measuring empty posts.
function read_body(path)
    if not path or path == "" then
        error("no body file (the script's second argument)")
    end
    local f = assert(io.open(path, "rb"))
    local body = f:read("*a")
    f:close()
    if #body == 0 then
        error("empty body file " .. path)
    end
    return body
end

local MARK = "@@HKBENCH_DELIVERY@@"
local pre, post
local seq = 0

function init(args)
    local sig = args[1]
    if not sig or not sig:match("^t=%d+,v1=%x+$") then
        error("ingress.lua: the first argument must be the Stripe-Signature (t=...,v1=...)")
    end
    local body = read_body(args[2])
    bucket = tonumber(args[3] or "1000")
    -- Formatted once with a marker where the delivery id goes: each request
    -- is then two concatenations, not a new wrk.format of 2 KB.
    local req = wrk.format("POST", "/hooks/stripe", {
        ["Content-Type"] = "application/json; charset=utf-8",
        ["User-Agent"] = "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
        ["Stripe-Signature"] = sig,
        ["X-Bench-Delivery"] = MARK,
    }, body)
    local i, j = req:find(MARK, 1, true)
    pre, post = req:sub(1, i - 1) .. tostring(tid) .. "-", req:sub(j + 1)
end

function request()
    seq = seq + 1
    return pre .. seq .. post
end

function response(status, headers, body)
    local b = math.floor((now_ms() - t0) / bucket)
    counts[b] = (counts[b] or 0) + 1
    local c = math.floor(status / 100)
    if c == 2 and status ~= 201 then
        other2xx = other2xx + 1
    elseif c >= 1 and c <= 5 then
        classes[c] = classes[c] + 1
    end
end

local function num(v)
    if v ~= v or v == math.huge or v == -math.huge then
        return "null"
    end
    return string.format("%.3f", v)
end

function done(summary, latency, requests)
    local merged, cls, other = {}, { 0, 0, 0, 0, 0 }, 0
    local maxb = -1
    -- done() runs in wrk's main Lua state, where init() never ran: the
    -- bucket size is the threads'.
    bucket = #threads > 0 and threads[1]:get("bucket") or bucket
    for _, th in ipairs(threads) do
        local c = th:get("counts")
        for b, v in pairs(c) do
            merged[b] = (merged[b] or 0) + v
            if b > maxb then maxb = b end
        end
        local k = th:get("classes")
        for i = 1, 5 do cls[i] = cls[i] + k[i] end
        other = other + th:get("other2xx")
    end
    local series = {}
    for b = 0, maxb do
        series[#series + 1] = tostring(merged[b] or 0)
    end
    local e = summary.errors
    io.write(string.format(
        'HKBENCH_JSON {"durationUs":%d,"requests":%d,"bytes":%d,' ..
        '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
        '"latencyUs":{"min":%s,"max":%s,"mean":%s,"stdev":%s,"p50":%s,"p75":%s,"p90":%s,"p99":%s,"p999":%s},' ..
        '"statusClasses":{"1xx":%d,"2xx":%d,"2xxOther":%d,"3xx":%d,"4xx":%d,"5xx":%d},"bucketMs":%d,' ..
        '"perBucket":[%s]}\n',
        summary.duration, summary.requests, summary.bytes,
        e.connect, e.read, e.write, e.status, e.timeout,
        num(latency.min), num(latency.max), num(latency.mean), num(latency.stdev),
        num(latency:percentile(50)), num(latency:percentile(75)), num(latency:percentile(90)),
        num(latency:percentile(99)), num(latency:percentile(99.9)),
        cls[1], cls[2], other, cls[3], cls[4], cls[5], bucket, table.concat(series, ",")))
end
