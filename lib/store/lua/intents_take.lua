-- intents_take: a supervisor's idle workers take provisioning intents.
-- ARGV = prefix, limit
-- Each intent is popped by one supervisor only (no double work). Its lease
-- stays in P..provisioning, restamped to now, so that if this supervisor
-- dies before the sandbox is made, lease_stale offers it to the others once
-- it is SUP_RECOVER_AGE_MS old again. Leases that moved on are dropped.
-- Returns {leaseId, waitedMs, ...}: waitedMs is how long the intent waited
-- for a worker (since its P..provisioning stamp: when the acquire, grant or
-- intent_push stored it).
local limit = tonumber(ARGV[2])
local now = now_ms()
local out = {}
while #out < limit do
  local id = redis.call('LPOP', K_INTENTS)
  if not id then break end
  if redis.call('HGET', lease_key(id), 'state') == 'provisioning' then
    local since = tonumber(redis.call('ZSCORE', K_PROV, id) or now)
    redis.call('ZADD', K_PROV, 'XX', now, id)
    table.insert(out, id)
    table.insert(out, math.max(now - since, 0))
  end
end
return out
