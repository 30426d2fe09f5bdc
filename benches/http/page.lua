-- GETs one page as a signed-in person (session cookie from $COOKIE) and
-- prints the latency percentiles wrk's own summary leaves out (p95), in milliseconds.
wrk.headers["Cookie"] = os.getenv("COOKIE")
wrk.headers["Accept"] = "text/html"

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "p50 %.1f ms  p95 %.1f ms  p99 %.1f ms  max %.1f ms  %d requests  %d non-2xx/errors\n",
    latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000, summary.requests,
    e.status + e.connect + e.read + e.write + e.timeout))
end
