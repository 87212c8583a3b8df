-- SPDX-License-Identifier: MIT
-- The GraphQL profile for wrk (bench/hkbench/graphql.py): one page of webhooks
-- read over and over, either way, through this same script so that wrk does
-- the same work per answer on both sides of the comparison.
--
--   wrk -t1 -c100 -d60s --latency -s bench/wrk/graphql.lua URL -- rest <path> [bucket_ms]
--   wrk -t1 -c100 -d60s --latency -s bench/wrk/graphql.lua URL -- graphql <bodyfile> [bucket_ms] [path]
--
-- rest: GET <path> (/api/webhooks?limit=20); a good answer is a 200 whose body
-- is a JSON array. graphql: POST <path> (default /graphql) with the JSON body
-- in <bodyfile> ({"query":…}), accepting application/graphql-response+json; a
-- good answer is a 200 without "errors" (a field that failed still answers
-- 200, with the error in the body). A 2xx that is not a good answer is counted
-- as "2xxOther", which the harness counts in non2xx. Responses are counted per
-- status class and per time bucket as in mix.lua; done() prints one line
-- "HKBENCH_JSON {...}" with mix.lua's fields, latencies in us.
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

t0 = 0
counts = {}
classes = { 0, 0, 0, 0, 0 }
other2xx = 0
bucket = 1000

local req
local good

-- The body file, read whole; a missing or empty file stops the run (wrk
-- reports the error and exits non-zero) instead of measuring empty posts.
local function read_body(path)
    if not path or path == "" then
        error("graphql.lua: no body file (the script's second argument)")
    end
    local f = assert(io.open(path, "rb"))
    local body = f:read("*a")
    f:close()
    if #body == 0 then
        error("graphql.lua: empty body file " .. path)
    end
    return body
end

local function is_array(body)
    return body ~= nil and body:find("^%s*%[") ~= nil
end

local function no_errors(body)
    -- Plain search: a payload that merely contains the word is escaped
    -- inside a JSON string (\"errors\"), so the quoted key is the member.
    return body ~= nil and #body > 0 and body:find('"errors"', 1, true) == nil
end

function init(args)
    local mode = args[1]
    bucket = tonumber(args[3] or "1000")
    if mode == "rest" then
        local path = args[2]
        if not path or path:sub(1, 1) ~= "/" then
            error("graphql.lua: rest takes the path to GET (/api/webhooks?limit=20)")
        end
        req = wrk.format("GET", path)
        good = is_array
    elseif mode == "graphql" then
        local body = read_body(args[2])
        req = wrk.format("POST", args[4] or "/graphql", {
            ["Content-Type"] = "application/json",
            ["Accept"] = "application/graphql-response+json, application/json;q=0.9",
        }, body)
        good = no_errors
    else
        error("graphql.lua: the first argument is rest or graphql, not " .. tostring(mode))
    end
end

function request()
    return req
end

function response(status, headers, body)
    local b = math.floor((now_ms() - t0) / bucket)
    counts[b] = (counts[b] or 0) + 1
    local c = math.floor(status / 100)
    if c == 2 and (status ~= 200 or not good(body)) then
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
