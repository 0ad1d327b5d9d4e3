-- exec_create: the record of a command a lease runs with an execId, made
-- before the command starts (create-if-absent), with the lease's cap.
-- ARGV = prefix, leaseId, execId, tenant, sandboxId, cap, ttlMs (how long
-- the record lives while running: the command's timeout + 60 s)
-- Returns {'created', startedAt} | {'inuse'} (a record of that id exists)
--       | {'full', running} (cap records, all running) | {'notfound'} (the
--       lease is not an active lease of tenant)
local lease, eid, tenant, sid = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local cap, ttl = tonumber(ARGV[6]), tonumber(ARGV[7])
local l = redis.call('HMGET', lease_key(lease), 'state', 'userId', 'sandboxId')
if l[1] ~= 'active' or tenant_of(l[2]) ~= tenant or l[3] ~= sid then return { 'notfound' } end
local key, idx = exec_key(lease, eid), execs_key(lease)
if redis.call('EXISTS', key) == 1 then return { 'inuse' } end
-- the index outlives no record by much, but forget the ones that expired
local live = {}
for _, m in ipairs(redis.call('ZRANGE', idx, 0, -1)) do
  local st = redis.call('HGET', exec_key(lease, m), 'state')
  if st then live[#live + 1] = { m, st } else redis.call('ZREM', idx, m) end
end
-- at the cap: the oldest records that are no longer running make room
local n = #live
for _, e in ipairs(live) do
  if n < cap then break end
  if e[2] ~= 'running' then
    redis.call('DEL', exec_key(lease, e[1]))
    redis.call('ZREM', idx, e[1])
    n = n - 1
  end
end
if n >= cap then return { 'full', n } end
local now = now_ms()
redis.call('HSET', key, 'tenant', tenant, 'sandboxId', sid, 'state', 'running',
  'startedAt', now, 'output', '', 'outputBytes', 0)
redis.call('PEXPIRE', key, ttl)
redis.call('ZADD', idx, now, eid)
if redis.call('PTTL', idx) < ttl then redis.call('PEXPIRE', idx, ttl) end
return { 'created', now }
