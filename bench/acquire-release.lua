-- acquire-release.lua: wrk script for scripts/bench-leases.
--
-- Every (user, session) is acquired once and then released once:
--   POST /v1/leases/acquire {"userId":"u<thread>","sessionId":"s<n>"}
--   POST /v1/leases/release {"userId":"u<thread>","sessionId":"s<n>"}
-- wrk gives the script no connection identity, so the pairing goes through
-- the answers: a granted acquire's body names its sessionId, which is queued
-- for release; request() sends a pending release if there is one, else a new
-- acquire. In steady state that is one acquire, one release, alternating (each
-- release is only sent after its acquire was answered, on whichever
-- connection is free). userIds are unique per wrk thread, sessionIds per
-- thread, so no two connections ever touch the same (user, session).
--
-- Counts acquires/releases/non-2xx per thread and prints one BENCHRESULT line
-- (latencies in microseconds) at the end. A 401 is a non-2xx like any other.
--
-- Authentication: every request carries "Authorization: Bearer $BENCH_BEARER"
-- (the environment variable; scripts/bench-leases sets it to a key it seeded
-- through OPENSANDBOX_API_KEYS). The requests are built with wrk.format and
-- their own header table, which does not inherit wrk.headers (nor wrk's -H),
-- so the header is put in that table.
local threads = {}
local next_id = 0

function setup(thread)
  next_id = next_id + 1
  thread:set("tid", next_id)
  table.insert(threads, thread)
end

local hdrs = { ["Content-Type"] = "application/json" }
local bearer = os.getenv("BENCH_BEARER")
if bearer and bearer ~= "" then
  hdrs["Authorization"] = "Bearer " .. bearer
end
local pending = {}   -- sessionIds granted and not yet released
local seq = 0
local user

function init(args)
  user = "bench-u" .. tostring(tid)
  non2xx, acquires, releases, granted, released, other = 0, 0, 0, 0, 0, 0
end

function request()
  local n = #pending
  if n > 0 then
    local s = pending[n]
    pending[n] = nil
    releases = releases + 1
    return wrk.format("POST", "/v1/leases/release", hdrs,
      '{"userId":"' .. user .. '","sessionId":"' .. s .. '"}')
  end
  seq = seq + 1
  acquires = acquires + 1
  return wrk.format("POST", "/v1/leases/acquire", hdrs,
    '{"userId":"' .. user .. '","sessionId":"s' .. seq .. '"}')
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    return
  end
  if string.find(body, '"status"%s*:%s*"granted"') then
    granted = granted + 1
    local s = string.match(body, '"sessionId"%s*:%s*"([^"]+)"')
    if s then pending[#pending + 1] = s end
  elseif string.find(body, '"status"%s*:%s*"released"') then
    released = released + 1
  else
    other = other + 1   -- e.g. a 202 "queued": capacity too low for the benchmark
  end
end

function done(summary, latency, requests)
  local t = { non2xx = 0, acquires = 0, releases = 0, granted = 0, released = 0, other = 0 }
  for _, th in ipairs(threads) do
    for k in pairs(t) do t[k] = t[k] + (th:get(k) or 0) end
  end
  local e = summary.errors
  io.write(string.format(
    "BENCHRESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p90_us=%d p99_us=%d max_us=%d " ..
    "non2xx=%d err_connect=%d err_read=%d err_write=%d err_status=%d err_timeout=%d " ..
    "acquires_sent=%d releases_sent=%d granted=%d released=%d other2xx=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    t.non2xx, e.connect, e.read, e.write, e.status, e.timeout,
    t.acquires, t.releases, t.granted, t.released, t.other))
end
