-- token_check: the credential check of every execd, egress and port-endpoint
-- request (the data plane's hot path: one round trip, a few hash reads).
-- ARGV = prefix, sandboxId, sha256 of the presented token ('' = none: an
--   API key was checked instead), tenant of that key ('' = none or admin)
-- The sandbox must be an OpenSandbox one (its record has a tenant); the
-- tenant, when given, must own it; the token, when given, must be one that
-- token_issue.lua handed out for this sandbox (and not rotated away since),
-- and the key it was issued to must still be live: a revoked key's tokens
-- are refused ('revoked') from the moment it is revoked.
-- Renew-on-access (extensions "access.renew.extend.seconds", kept as the
-- record's renewExtendMs): an access that passes the check to a Running
-- sandbox with an expiry moves it to now + renewExtendMs when that is later,
-- at most once a minute (renewedAt; the reference server's default
-- min_interval_seconds), as renew-expiration would.
-- Returns {'ok', state, ref, mode, tenant, poolLimits, env, runtime} | {'notfound'} | {'revoked'}
local sid, hash, tenant = ARGV[2], ARGV[3], ARGV[4]
local RENEW_EVERY_MS = 60000
local s = redis.call('HMGET', sandbox_key(sid), 'state', 'ref', 'mode', 'tenant', 'poolLimits', 'env',
  'runtime', 'renewExtendMs', 'expiresAt', 'renewedAt')
if not s[1] or not s[4] or s[4] == '' then return { 'notfound' } end
if tenant ~= '' and s[4] ~= tenant then return { 'notfound' } end
if hash ~= '' then
  local kid = redis.call('HGET', P .. 'stokens:' .. sid, 't:' .. hash)
  if not kid then return { 'notfound' } end
  local khash = redis.call('GET', P .. 'apikeyid:' .. kid)
  local key = khash and redis.call('HMGET', P .. 'apikey:' .. khash, 'tenant', 'admin', 'revoked')
  if not key or not key[1] or key[3] == '1' then return { 'revoked' } end
  if key[2] ~= '1' and key[1] ~= s[4] then return { 'notfound' } end
end
local extend, expires = tonumber(s[8] or ''), tonumber(s[9] or '')
if extend and expires and s[1] == 'Running' then
  local now = now_ms()
  if now - (tonumber(s[10] or '') or 0) >= RENEW_EVERY_MS and now + extend > expires then
    osb_expiry_move(sid, s[4], now + extend)
    redis.call('HSET', sandbox_key(sid), 'renewedAt', now)
  end
end
return { 'ok', s[1], s[2] or '', s[3] or '', s[4], s[5] or '', s[6] or '', s[7] or '' }
