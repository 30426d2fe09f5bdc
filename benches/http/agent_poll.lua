-- wrk script: legitimate agents polling their proposal, GET /api/v1/proposals/$ID with $TOKEN,
-- each connection pausing $PAUSE_MS ms between requests (an agent's pace, not a flood);
-- prints the latency percentiles in milliseconds.
-- Usage: ID=... TOKEN=... PAUSE_MS=5 wrk -t1 -c16 -d10s -s benches/http/agent_poll.lua http://127.0.0.1:3000
wrk.path = "/api/v1/proposals/" .. os.getenv("ID")
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
local pause = tonumber(os.getenv("PAUSE_MS") or "0")

function delay()
  return pause
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "agents: p50 %.2f ms  p99 %.2f ms  max %.2f ms  %d requests (%.0f/s)  %d non-2xx/errors\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    summary.requests, summary.requests / (summary.duration / 1e6),
    e.status + e.connect + e.read + e.write + e.timeout))
end
