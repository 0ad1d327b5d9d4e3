-- key_create: ARGV = prefix, keyHash (64 hex), tenant, name ('' for none),
-- admin ('1'|'0'), createTenant ('1'|'0')
-- Returns {'created', id, createdAt} | {'notenant'} | {'collision'}
--
-- API keys (P = prefix; the plaintext key is never stored):
--   P..apikey:<sha256hex>  HASH  id, tenant, name, admin, createdAt
--                                (+ revoked='1', revokedAt once revoked: a tombstone
--                                that is kept, so a seed cannot re-create the key)
--   P..apikeyid:<id>       STR   sha256hex (id = its first 16 hex characters)
--   P..apikeys             ZSET  id -> createdAt (every key, revoked ones too)
--   P..tenants             ZSET  tenant -> createdAt
--   P..tenantcfg:<tenant>  HASH  maxSlots, maxSandboxes (absent = the broker's
--                                default), createdAt
local hash, tenant, name, admin, mk = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local id = string.sub(hash, 1, 16)
local now = now_ms()
if not redis.call('ZSCORE', P .. 'tenants', tenant) then
  if mk ~= '1' then return { 'notenant' } end
  redis.call('ZADD', P .. 'tenants', now, tenant)
  redis.call('HSET', P .. 'tenantcfg:' .. tenant, 'createdAt', now)
end
-- An existing record (live or a revoked tombstone) or id is never overwritten.
if redis.call('EXISTS', P .. 'apikey:' .. hash) == 1 or
    redis.call('EXISTS', P .. 'apikeyid:' .. id) == 1 then
  return { 'collision' }
end
redis.call('HSET', P .. 'apikey:' .. hash, 'id', id, 'tenant', tenant, 'name', name,
  'admin', admin, 'createdAt', now)
redis.call('SET', P .. 'apikeyid:' .. id, hash)
redis.call('ZADD', P .. 'apikeys', now, id)
return { 'created', id, tostring(now) }
