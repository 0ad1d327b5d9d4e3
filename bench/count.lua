-- count.lua: wrk script for plain GET benchmarks (scripts/bench-leases).
-- Counts non-2xx answers through the response hook and prints one
-- machine-readable BENCHRESULT line at the end (latencies in microseconds).
-- A 401 (key missing or refused) is a non-2xx like any other.
--
-- Authentication: when the environment has BENCH_BEARER, every request carries
-- "Authorization: Bearer $BENCH_BEARER" (an API key, or the METRICS_TOKEN for
-- /metrics). scripts/bench-leases sets it for every layer, the bench's own nginx
-- included, so all layers get the same request bytes.
local threads = {}

local bearer = os.getenv("BENCH_BEARER")
if bearer and bearer ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. bearer
end

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
