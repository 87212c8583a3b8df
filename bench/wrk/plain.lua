-- SPDX-License-Identifier: MIT
-- One fixed GET (the URL's path) as fast as wrk can send it: no request() or
-- response() callback, so wrk stays on its C fast path. done() prints one line
-- "HKBENCH_JSON {...}" with the same fields as mix.lua (latencies in us);
-- statusClasses only counts what wrk itself counts (status >= 400).
local function num(v)
    if v ~= v or v == math.huge or v == -math.huge then
        return "null"
    end
    return string.format("%.3f", v)
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format(
        'HKBENCH_JSON {"durationUs":%d,"requests":%d,"bytes":%d,' ..
        '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
        '"latencyUs":{"min":%s,"max":%s,"mean":%s,"stdev":%s,"p50":%s,"p75":%s,"p90":%s,"p99":%s,"p999":%s},' ..
        '"statusClasses":null,"bucketMs":null,"perBucket":null}\n',
        summary.duration, summary.requests, summary.bytes,
        e.connect, e.read, e.write, e.status, e.timeout,
        num(latency.min), num(latency.max), num(latency.mean), num(latency.stdev),
        num(latency:percentile(50)), num(latency:percentile(75)), num(latency:percentile(90)),
        num(latency:percentile(99)), num(latency:percentile(99.9))))
end
