-- token_issue: the data-plane access token (X-EXECD-ACCESS-TOKEN) of an
-- OpenSandbox sandbox for the API key that asks (GET .../endpoints/{port}).
-- ARGV = prefix, sandboxId, tenant ('' = an admin key: any tenant's), keyId,
--   newToken, sha256(newToken) (64 hex; both random, made by the caller)
-- A sandbox's tokens are per key: each key that asks gets its own, the same
-- one every time until the sandbox's tokens are rotated (token_rotate.lua),
-- and each token is checked against its key on every use (token_check.lua),
-- so a revoked key's tokens stop working with it.
--   P..stokens:<sid>  HASH  'k:'..keyId -> token (to hand the same one out
--                           again), 't:'..sha256(token) -> keyId (to check it)
-- It goes with the record: a finished record expires (sandbox_finish), and
-- so does this hash, there or here when it is made after.
-- Returns {'ok', token} | {'notfound'} (no record, not an OpenSandbox
-- sandbox, or another tenant's)
local sid, tenant, kid, tok, hash = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local owner = redis.call('HGET', sandbox_key(sid), 'tenant')
if not owner or owner == '' or (tenant ~= '' and owner ~= tenant) then return { 'notfound' } end
local k = P .. 'stokens:' .. sid
local have = redis.call('HGET', k, 'k:' .. kid)
if have then return { 'ok', have } end
redis.call('HSET', k, 'k:' .. kid, tok, 't:' .. hash, kid)
local ttl = redis.call('PTTL', sandbox_key(sid))
if ttl > 0 then redis.call('PEXPIRE', k, ttl) end
return { 'ok', tok }
