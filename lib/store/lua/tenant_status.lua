-- tenant_status: one tenant's share. ARGV = prefix, tenant, defaultMaxSlots,
--   defaultMaxSandboxes
-- Returns {activeSlots, queued, maxSlots, maxSandboxes} (caps as in force:
-- the tenant's own, else the defaults; maxSlots 0 = only the broker's capacity).
local t = ARGV[2]
local cfg = redis.call('HMGET', P .. 'tenantcfg:' .. t, 'maxSlots', 'maxSandboxes')
return { redis.call('SCARD', tactive_key(t)), redis.call('ZCARD', tqueue_key(t)),
  tonumber(cfg[1] or '') or tonumber(ARGV[3]), tonumber(cfg[2] or '') or tonumber(ARGV[4]) }
