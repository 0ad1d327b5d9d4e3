-- key_lookup: authenticate an API key by its SHA-256.
-- ARGV = prefix, keyHash (64 hex), keyId (its first 16 hex), seedTenant ('' unless
--   the key is one of the OPENSANDBOX_API_KEYS seeds)
-- Returns {'ok', tenant, admin ('1'|'0'), keyId} | {'denied'}
--
-- Keys (see also lib/store/keystore.c):
--   P..apikey:<hash>   HASH id, tenant, name, admin, createdAt[, revoked, revokedAt]
--                           (a revoked record is kept: a seed never brings it back)
--   P..apikeyid:<id>   STR  hash
--   P..apikeys         ZSET id -> createdAt
--   P..tenants         ZSET tenant -> createdAt
--   P..tenantcfg:<t>   HASH maxSlots, maxSandboxes, createdAt
local hash, id, seed_tenant = ARGV[2], ARGV[3], ARGV[4]
local k = P .. 'apikey:' .. hash
local rec = redis.call('HMGET', k, 'tenant', 'admin', 'revoked')
if rec[1] then
  if rec[3] == '1' then return { 'denied' } end
  return { 'ok', rec[1], rec[2] or '0', id }
end
if seed_tenant == '' then return { 'denied' } end
local now = now_ms()
redis.call('HSET', k, 'id', id, 'tenant', seed_tenant, 'name', 'seed', 'admin', '0', 'createdAt', now)
redis.call('SET', P .. 'apikeyid:' .. id, hash)
redis.call('ZADD', P .. 'apikeys', 'NX', now, id)
if redis.call('ZADD', P .. 'tenants', 'NX', now, seed_tenant) == 1 then
  redis.call('HSETNX', P .. 'tenantcfg:' .. seed_tenant, 'createdAt', now)
end
return { 'ok', seed_tenant, '0', id }
