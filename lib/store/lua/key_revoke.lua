-- key_revoke: ARGV = prefix, id (16 hex). The record stays as a tombstone.
-- Publishes the revoked key's hash on P..'apikey:revoked' (lib/store/auth_cache.h).
-- Returns {'revoked', tenant} | {'already', tenant} | {'notfound'}
local id = ARGV[2]
local hash = redis.call('GET', P .. 'apikeyid:' .. id)
if not hash then return { 'notfound' } end
local k = P .. 'apikey:' .. hash
local rec = redis.call('HMGET', k, 'tenant', 'revoked')
if not rec[1] then return { 'notfound' } end
if rec[2] == '1' then return { 'already', rec[1] } end
redis.call('HSET', k, 'revoked', '1', 'revokedAt', now_ms())
-- every handler process empties its API key cache (lib/store/auth_cache.h)
redis.call('PUBLISH', P .. 'apikey:revoked', hash)
return { 'revoked', rec[1] }
