-- osb_create: the record of an OpenSandbox create, before it asks for a slot.
-- ARGV = prefix, sandboxId, tenant, maxPerTenant (default; tenantcfg maxSandboxes wins), timeoutMs ('' = manual cleanup),
--   then field/value pairs of the record
-- Returns {'ok'} | {'limit', live} when the tenant already has maxPerTenant live sandboxes.
local sid, tenant, max, timeout = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
-- a tenant's own maxSandboxes (broker-admin tenant set) overrides the default
max = tonumber(redis.call('HGET', P .. 'tenantcfg:' .. tenant, 'maxSandboxes') or '') or max
local idx = P .. 'tenant:' .. tenant
local live = 0
for _, other in ipairs(redis.call('ZRANGE', idx, 0, -1)) do
  local st = redis.call('HGET', sandbox_key(other), 'state')
  if not st then
    redis.call('ZREM', idx, other) -- its record expired
  elseif st ~= 'Terminated' and st ~= 'Failed' then
    live = live + 1
  end
end
if live >= max then return { 'limit', live } end
local now = now_ms()
local fields = {}
for i = 6, #ARGV do table.insert(fields, ARGV[i]) end
redis.call('HSET', sandbox_key(sid), 'sandboxId', sid, 'tenant', tenant, 'mode', 'exclusive',
  'createdAt', now, 'ref', '', 'expiresAt', timeout == '' and '' or (now + tonumber(timeout)),
  unpack(fields))
sandbox_set_state(sid, 'Pending', 'CREATING', 'waiting for admission', now)
redis.call('ZADD', K_SANDBOXES, now, sid)
redis.call('ZADD', idx, now, sid)
return { 'ok' }
