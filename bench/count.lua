-- count.lua: wrk script for plain GET benchmarks (scripts/bench-leases).
-- Counts non-2xx answers through the response hook and prints one
-- machine-readable BENCHRESULT line at the end (latencies in microseconds).
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  non2xx = 0
end

function response(status, headers, body)
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
end

function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do n = n + (t:get("non2xx") or 0) end
  local e = summary.errors
  io.write(string.format(
    "BENCHRESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p90_us=%d p99_us=%d max_us=%d " ..
    "non2xx=%d err_connect=%d err_read=%d err_write=%d err_status=%d err_timeout=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    n, e.connect, e.read, e.write, e.status, e.timeout))
end
