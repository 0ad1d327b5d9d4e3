-- osb_create: the record of an OpenSandbox create, before it asks for a slot.
-- ARGV = prefix, sandboxId, tenant, maxPerTenant (default; tenantcfg maxSandboxes wins), timeoutMs ('' = manual cleanup),
--   poolImage ('' = do not take a warm-pool member), disk asked in MiB ('' = none),
--   SANDBOX_DISK_MB, SANDBOX_DISK_MAX_MB, then field/value pairs of the record
-- The record's diskMb: the disk asked, or SANDBOX_DISK_MB; the tenant's cap is its tenantcfg
-- maxDiskMb, else SANDBOX_DISK_MAX_MB (and never above it): a default above the cap is the
-- cap, an ask above it is refused. Warm members have SANDBOX_DISK_MB: another disk is a cold
-- create.
-- With poolImage, a ready member of that image's warm pool (wpool_take, common.lua) is taken in
-- this script, so that no member is ever handed out twice: the record gets the member's id
-- (its container's label), its container (ref) and poolLimits (the limits it was made with);
-- an empty pool is a cold create with sandboxId.
-- Returns {'ok', sandboxId, ref} | {'limit', live} when the tenant already has maxPerTenant live sandboxes
--       | {'disk', cap} when the disk asked is over the tenant's cap (nothing stored).
local sid, tenant, max, timeout, pool_image = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
local ask, ddef, dmax = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9])
local cap = tonumber(redis.call('HGET', P .. 'tenantcfg:' .. tenant, 'maxDiskMb') or '') or dmax
if cap > dmax then cap = dmax end
local disk = ddef
if ask ~= '' then
  if tonumber(ask) > cap then return { 'disk', cap } end
  disk = tonumber(ask)
elseif disk > cap then
  disk = cap
end
if disk ~= ddef then pool_image = '' end
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
for i = 10, #ARGV do table.insert(fields, ARGV[i]) end
local ref, warm = '', nil
if pool_image ~= '' then
  local want = {}
  for i = 1, #fields - 1, 2 do want[fields[i]] = fields[i + 1] end
  local id, r, limits = wpool_take(pool_image, (want.nanoCpus and want.memoryBytes and want.pids) and
    (want.nanoCpus .. ',' .. want.memoryBytes .. ',' .. want.pids) or nil)
  if id then sid, ref, warm = id, r, limits end
end
redis.call('HSET', sandbox_key(sid), 'sandboxId', sid, 'tenant', tenant, 'mode', 'exclusive',
  'createdAt', now, 'ref', ref, 'expiresAt', timeout == '' and '' or (now + tonumber(timeout)),
  'diskMb', disk, unpack(fields))
if warm then redis.call('HSET', sandbox_key(sid), 'poolLimits', warm) end
sandbox_set_state(sid, 'Pending', 'CREATING', 'waiting for admission', now)
redis.call('ZADD', K_SANDBOXES, now, sid)
redis.call('ZADD', idx, now, sid)
return { 'ok', sid, ref }
