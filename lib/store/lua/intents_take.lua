-- intents_take: a supervisor's idle workers take provisioning intents.
-- ARGV = prefix, limit
-- Each intent is popped by one supervisor only (no double work). Its lease
-- stays in P..provisioning, restamped to now, so that if this supervisor
-- dies before the sandbox is made, lease_stale offers it to the others once
-- it is SUP_RECOVER_AGE_MS old again. Leases that moved on are dropped.
-- Returns {leaseId...}
local limit = tonumber(ARGV[2])
local now = now_ms()
local out = {}
while #out < limit do
  local id = redis.call('LPOP', K_INTENTS)
  if not id then break end
  if redis.call('HGET', lease_key(id), 'state') == 'provisioning' then
    redis.call('ZADD', K_PROV, 'XX', now, id)
    table.insert(out, id)
  end
end
return out
