-- tenant_set: ARGV = prefix, tenant, op ('create'|'update'), maxSlots, maxSandboxes, maxDiskMb
-- A cap is '' (leave as is), 'default' (remove: the broker's default applies)
-- or a decimal integer >= 0 (maxDiskMb >= 64: a disk has a bound, keystore.h).
-- Returns {'created'} | {'updated'} | {'exists'} (create) | {'notfound'} (update)
local tenant, op = ARGV[2], ARGV[3]
local caps = { { 'maxSlots', ARGV[4] }, { 'maxSandboxes', ARGV[5] }, { 'maxDiskMb', ARGV[6] or '' } }
for _, c in ipairs(caps) do
  local f, v = c[1], c[2]
  if v ~= '' and v ~= 'default' and (not string.match(v, '^%d+$') or
      (f == 'maxDiskMb' and tonumber(v) < 64)) then
    return redis.error_reply('tenant_set: bad ' .. f)
  end
end
local cfg = P .. 'tenantcfg:' .. tenant
local known = redis.call('ZSCORE', P .. 'tenants', tenant)
if op == 'create' and known then return { 'exists' } end
if op == 'update' and not known then return { 'notfound' } end
if not known then
  local now = now_ms()
  redis.call('ZADD', P .. 'tenants', now, tenant)
  redis.call('HSET', cfg, 'createdAt', now)
end
for _, c in ipairs(caps) do
  local f, v = c[1], c[2]
  if v == 'default' then
    redis.call('HDEL', cfg, f)
  elseif v ~= '' then
    redis.call('HSET', cfg, f, v)
  end
end
return { known and 'updated' or 'created' }
