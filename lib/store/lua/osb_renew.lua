-- osb_renew: move an OpenSandbox sandbox's expiry. ARGV = prefix, sandboxId, tenant,
--   newExpiresAtMs, latestAllowedMs, ticketTtlMs
-- Returns {'ok'} | {'notfound'} | {'invalid', reason} | {'conflict', state}
local sid, tenant, new, latest = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local s = redis.call('HMGET', sandbox_key(sid), 'tenant', 'state', 'expiresAt')
if s[1] ~= tenant then return { 'notfound' } end
if s[2] == 'Stopping' or s[2] == 'Terminated' or s[2] == 'Failed' then return { 'conflict', s[2] } end
local now = now_ms()
if new <= now then return { 'invalid', 'expiresAt must be in the future' } end
-- Any future time up to the maximum, shorter than the current one included
-- (OpenSandbox's reference server; the SDK's pool shortens a 24 h idle life).
if new > latest then return { 'invalid', 'expiresAt is beyond the longest timeout this server allows' } end
osb_expiry_move(sid, tenant, new)
local tid = redis.call('GET', tsession_key(osb_user(tenant), sid))
if tid and redis.call('ZSCORE', K_TPOLL, tid) then
  -- a queued create now waits until the new expiry (see acquire.lua)
  redis.call('ZADD', K_TPOLL, new - tonumber(ARGV[6] or 0), tid)
end
return { 'ok' }
