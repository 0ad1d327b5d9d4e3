-- token_rotate: every data-plane token of an OpenSandbox sandbox is
-- replaced (POST /v1/sandboxes/{id}/token/rotate): the old ones are refused
-- from the next request on, whichever key they were issued to, and the
-- caller's key gets a new one (other keys get theirs from the endpoint).
-- ARGV = prefix, sandboxId, tenant ('' = an admin key), keyId, newToken,
--   sha256(newToken). Schema: token_issue.lua.
-- Returns {'ok', token, tokensRevoked} | {'notfound'}
local sid, tenant, kid, tok, hash = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local owner = redis.call('HGET', sandbox_key(sid), 'tenant')
if not owner or owner == '' or (tenant ~= '' and owner ~= tenant) then return { 'notfound' } end
local k = P .. 'stokens:' .. sid
local old = math.floor(redis.call('HLEN', k) / 2)
redis.call('DEL', k)
-- the token the record was created with (brokers before per-key tokens)
-- is no credential either
redis.call('HDEL', sandbox_key(sid), 'token')
redis.call('HSET', k, 'k:' .. kid, tok, 't:' .. hash, kid)
local ttl = redis.call('PTTL', sandbox_key(sid))
if ttl > 0 then redis.call('PEXPIRE', k, ttl) end
return { 'ok', tok, old }
