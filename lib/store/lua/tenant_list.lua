-- tenant_list: ARGV = prefix
-- Returns { {tenant, maxSlots, maxSandboxes, createdAt, liveKeys, maxDiskMb}, ... } in
-- creation order; '' for a cap that is absent (the broker's default).
local live = {}
for _, id in ipairs(redis.call('ZRANGE', P .. 'apikeys', 0, -1)) do
  local hash = redis.call('GET', P .. 'apikeyid:' .. id)
  if hash then
    local r = redis.call('HMGET', P .. 'apikey:' .. hash, 'tenant', 'revoked')
    if r[1] and r[2] ~= '1' then live[r[1]] = (live[r[1]] or 0) + 1 end
  end
end
local out = {}
for _, t in ipairs(redis.call('ZRANGE', P .. 'tenants', 0, -1)) do
  local c = redis.call('HMGET', P .. 'tenantcfg:' .. t, 'maxSlots', 'maxSandboxes', 'createdAt',
    'maxDiskMb')
  out[#out + 1] = { t, c[1] or '', c[2] or '', c[3] or '', live[t] or 0, c[4] or '' }
end
return out
