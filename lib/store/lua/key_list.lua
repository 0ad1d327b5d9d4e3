-- key_list: ARGV = prefix, tenant ('' for every tenant)
-- Returns { {id, tenant, name, admin, createdAt, revoked, revokedAt}, ... } in
-- creation order ('' for an absent field); never the hash.
local want = ARGV[2]
local out = {}
for _, id in ipairs(redis.call('ZRANGE', P .. 'apikeys', 0, -1)) do
  local hash = redis.call('GET', P .. 'apikeyid:' .. id)
  if hash then
    local r = redis.call('HMGET', P .. 'apikey:' .. hash, 'tenant', 'name', 'admin',
      'createdAt', 'revoked', 'revokedAt')
    if r[1] and (want == '' or r[1] == want) then
      out[#out + 1] = { id, r[1], r[2] or '', r[3] or '0', r[4] or '', r[5] or '0', r[6] or '' }
    end
  end
end
return out
