-- SPDX-License-Identifier: MIT
-- The load mix for the observability overhead check: 60% GET /api/webhooks,
-- 25% POST /api/webhooks, 15% GET /api/system/info. Each thread draws from
-- its own seeded sequence so runs are comparable.
local counter = 0
local sources = {"github", "gitlab", "stripe", "shopify", "slack"}

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
end

function init(args)
  math.randomseed(1000 + id)
  post_headers = {["Content-Type"] = "application/json"}
end

function request()
  local r = math.random(100)
  if r <= 60 then
    return wrk.format("GET", "/api/webhooks")
  elseif r <= 85 then
    local body = string.format('{"source":"%s","eventType":"push","payload":"{\\"n\\":%d}"}',
                               sources[math.random(#sources)], math.random(1000000))
    return wrk.format("POST", "/api/webhooks", post_headers, body)
  else
    return wrk.format("GET", "/api/system/info")
  end
end

function done(summary, latency, requests)
  io.write(string.format("requests %d  errors(status) %d  rps %.0f  p50 %.3fms  p90 %.3fms  p99 %.3fms  p99.9 %.3fms  max %.3fms\n",
    summary.requests, summary.errors.status, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000))
end
