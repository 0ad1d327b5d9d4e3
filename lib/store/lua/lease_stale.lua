-- lease_stale: leases left 'provisioning' that nobody is working on.
-- ARGV = prefix, olderThanMs, limit
-- A lease is made 'provisioning' by an acquire or a grant, and its sandbox
-- is then made under the lock P..lock:sandbox:<id>. One older than
-- olderThanMs whose sandbox lock is free (or that has no sandbox yet) was
-- left by a process that died (a supervisor killed mid-grant): whoever
-- finds it finishes it (sandbox_lease_ready is safe to repeat). A lease
-- whose intent still waits in P..intents is nobody's yet: it is left to the
-- worker that takes the intent (intents_take.lua restamps its entry), so a
-- backlog of intents is not made twice, once by a recovery and once by the
-- supervisor that takes it.
-- The candidates come from the P..provisioning index (createdAt order), so a
-- call costs the leases being provisioned, not every lease. Leases made
-- before the index existed are added to it once, by the first call.
-- Returns {leaseId...}
local older, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local out = {}
if redis.call('SETNX', P .. 'provisioning:indexed', '1') == 1 then
  for _, id in ipairs(redis.call('ZRANGE', K_LEASES, 0, -1)) do
    local l = redis.call('HMGET', lease_key(id), 'state', 'createdAt')
    if l[1] == 'provisioning' then redis.call('ZADD', K_PROV, tonumber(l[2] or now), id) end
  end
end
-- at most this many entries looked at per call: ones still being worked on
-- (lock held) are passed over, so the window is wider than the limit
local scan = math.max(limit * 8, 256)
local waiting -- the intents not taken yet, read once per call if needed
local function intent_waits(id)
  if not waiting then
    waiting = {}
    for _, w in ipairs(redis.call('LRANGE', K_INTENTS, 0, -1)) do waiting[w] = true end
  end
  return waiting[id]
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', K_PROV, '-inf', now - older, 'LIMIT', 0, scan)) do
  local l = redis.call('HMGET', lease_key(id), 'state', 'sandboxId')
  if l[1] ~= 'provisioning' then
    redis.call('ZREM', K_PROV, id) -- the lease moved on or is gone
  elseif (not l[2] or l[2] == '' or redis.call('EXISTS', P .. 'lock:sandbox:' .. l[2]) == 0)
      and not intent_waits(id) then
    table.insert(out, id)
    if #out >= limit then break end
  end
end
return out
