-- key_rotate: ARGV = prefix, old id (16 hex), new keyHash (64 hex)
-- A new key for the old one's tenant, name and admin flag, and the old one
-- revoked, in one step: no moment with both or neither live.
-- Returns {'rotated', newId, tenant, name, admin, createdAt} | {'notfound'}
--       | {'revoked'} (the old key is already revoked) | {'collision'}
local old, hash = ARGV[2], ARGV[3]
local id = string.sub(hash, 1, 16)
local oldhash = redis.call('GET', P .. 'apikeyid:' .. old)
if not oldhash then return { 'notfound' } end
local ok = P .. 'apikey:' .. oldhash
local rec = redis.call('HMGET', ok, 'tenant', 'name', 'admin', 'revoked')
if not rec[1] then return { 'notfound' } end
if rec[4] == '1' then return { 'revoked' } end
if redis.call('EXISTS', P .. 'apikey:' .. hash) == 1 or
    redis.call('EXISTS', P .. 'apikeyid:' .. id) == 1 then
  return { 'collision' }
end
local now = now_ms()
local tenant, name, admin = rec[1], rec[2] or '', rec[3] or '0'
redis.call('HSET', P .. 'apikey:' .. hash, 'id', id, 'tenant', tenant, 'name', name,
  'admin', admin, 'createdAt', now)
redis.call('SET', P .. 'apikeyid:' .. id, hash)
redis.call('ZADD', P .. 'apikeys', now, id)
redis.call('HSET', ok, 'revoked', '1', 'revokedAt', now)
-- every handler process empties its API key cache (lib/store/auth_cache.h)
redis.call('PUBLISH', P .. 'apikey:revoked', oldhash)
return { 'rotated', id, tenant, name, admin, tostring(now) }
