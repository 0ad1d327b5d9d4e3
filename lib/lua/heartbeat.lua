-- heartbeat: ARGV = prefix, leaseId ('' to look up by session), userId, sessionId, leaseTtlMs
-- Returns {'ok', lease-hash...} | {'notfound'}
local id, user, session, ttl = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
if id == '' then
  id = redis.call('GET', session_key(user, session))
  if not id then return { 'notfound' } end
end
if redis.call('EXISTS', lease_key(id)) == 0 then return { 'notfound' } end
-- An OpenSandbox lease lives until its sandbox's expiresAt (renew-expiration).
if redis.call('HGET', lease_key(id), 'fixedExpiry') ~= '1' then
  local exp = now_ms() + ttl
  redis.call('HSET', lease_key(id), 'expiresAt', exp)
  redis.call('ZADD', K_LEASES, exp, id)
end
return { 'ok', redis.call('HGETALL', lease_key(id)) }
