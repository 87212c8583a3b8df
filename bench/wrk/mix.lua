-- SPDX-License-Identifier: MIT
-- The reference load mix for wrk: 60% GET /api/webhooks, 25% POST /api/webhooks
-- (a small JSON webhook like the reference's), 15% GET /api/system/info, in a
-- fixed interleaving of 20 requests (no random numbers: every run sends the
-- same sequence). Responses are counted per status class and per time bucket
-- (bucket_ms) so that one continuous run yields req/s over time (warm-up).
--
--   wrk -t1 -c100 -d60s --latency -s bench/wrk/mix.lua URL -- [paged|limit20|reference] [bucket_ms]
--
-- paged lists with the server's default limit (hookd's is 100 rows, the Go
-- peer's 20); limit20 asks both for 20 (?limit=20), the mix as the lean issue
-- defines it; reference lists with ?all=true, so the list grows through the
-- run as the reference service's unpaged list does.
-- done() prints one line "HKBENCH_JSON {...}" with every figure, latencies in us.
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
    -- One start time for every thread, so their buckets line up.
    start_ms = start_ms or now_ms()
    thread:set("t0", start_ms)
    table.insert(threads, thread)
end

local reqs, n, idx
t0 = 0
counts = {}
classes = { 0, 0, 0, 0, 0 }
bucket = 1000

function init(args)
    local profile = args[1] or "paged"
    bucket = tonumber(args[2] or "1000")
    local lists = { reference = "/api/webhooks?all=true", limit20 = "/api/webhooks?limit=20" }
    local list = lists[profile] or "/api/webhooks"
    local json = { ["Content-Type"] = "application/json" }
    local sources = { "github", "gitlab", "stripe", "github", "bitbucket" }
    local get = wrk.format("GET", list)
    local info = wrk.format("GET", "/api/system/info")
    local pattern = "LPLILPLLLPILLPLLLPIL" -- L list (12), P post (5), I info (3)
    reqs = {}
    local p = 0
    for k = 1, #pattern do
        local c = pattern:sub(k, k)
        if c == "L" then
            reqs[k] = get
        elseif c == "I" then
            reqs[k] = info
        else
            p = p + 1
            local body = string.format(
                '{"source":"%s","eventType":"push","payload":"{\\"ref\\":\\"refs/heads/main\\",\\"commits\\":%d}"}',
                sources[p], p)
            reqs[k] = wrk.format("POST", "/api/webhooks", json, body)
        end
    end
    n = #reqs
    idx = 0
end

function request()
    idx = idx % n + 1
    return reqs[idx]
end

function response(status, headers, body)
    local b = math.floor((now_ms() - t0) / bucket)
    counts[b] = (counts[b] or 0) + 1
    local c = math.floor(status / 100)
    if c >= 1 and c <= 5 then
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
    local merged, cls = {}, { 0, 0, 0, 0, 0 }
    local maxb = -1
    for _, th in ipairs(threads) do
        local c = th:get("counts")
        for b, v in pairs(c) do
            merged[b] = (merged[b] or 0) + v
            if b > maxb then maxb = b end
        end
        local k = th:get("classes")
        for i = 1, 5 do cls[i] = cls[i] + k[i] end
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
        '"statusClasses":{"1xx":%d,"2xx":%d,"3xx":%d,"4xx":%d,"5xx":%d},"bucketMs":%d,"perBucket":[%s]}\n',
        summary.duration, summary.requests, summary.bytes,
        e.connect, e.read, e.write, e.status, e.timeout,
        num(latency.min), num(latency.max), num(latency.mean), num(latency.stdev),
        num(latency:percentile(50)), num(latency:percentile(75)), num(latency:percentile(90)),
        num(latency:percentile(99)), num(latency:percentile(99.9)),
        cls[1], cls[2], cls[3], cls[4], cls[5], bucket, table.concat(series, ",")))
end
