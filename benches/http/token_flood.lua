-- wrk script: a flood of requests with random bearer tokens (a new one each request), on
-- GET /api/v1/proposals/$ID, as fast as they are answered; prints how many were answered
-- 401 (looked up) and 429 (refused from memory).
-- Usage: ID=... wrk -t1 -c64 -d12s -s benches/http/token_flood.lua http://127.0.0.1:3000
wrk.path = "/api/v1/proposals/" .. os.getenv("ID")
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  unauthorized, throttled, other = 0, 0, 0
end

function request()
  local t = {}
  for i = 1, 32 do
    t[i] = string.format("%02x", math.random(0, 255))
  end
  return wrk.format("GET", nil, { Authorization = "Bearer flood-" .. table.concat(t) })
end

function response(status, headers, body)
  if status == 401 then
    unauthorized = unauthorized + 1
  elseif status == 429 then
    throttled = throttled + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local u, t, o = 0, 0, 0
  for _, thread in ipairs(threads) do
    u = u + thread:get("unauthorized")
    t = t + thread:get("throttled")
    o = o + thread:get("other")
  end
  io.write(string.format(
    "flood: %d requests (%.0f/s)  %d answered 401 (looked up)  %d answered 429 (from memory)  %d other  p99 %.2f ms\n",
    summary.requests, summary.requests / (summary.duration / 1e6), u, t, o,
    latency:percentile(99) / 1000))
end
