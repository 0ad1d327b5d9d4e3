-- heartbeat: ARGV = prefix, leaseId ('' to look up by session), userId (scoped),
--   sessionId, leaseTtlMs, tenant
-- A lease of another tenant, or the admission of an OpenSandbox create, is 'notfound'.
-- Returns {'ok', lease-hash...} | {'notfound'}
local id, user, session, ttl, tenant = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
if id == '' then
  id = redis.call('GET', session_key(user, session))
  if not id then return { 'notfound' } end
end
local l = redis.call('HMGET', lease_key(id), 'userId', 'fixedExpiry')
if not l[1] or tenant_of(l[1]) ~= tenant or l[2] == '1' then return { 'notfound' } end
local exp = now_ms() + ttl
redis.call('HSET', lease_key(id), 'expiresAt', exp)
redis.call('ZADD', K_LEASES, exp, id)
return { 'ok', redis.call('HGETALL', lease_key(id)) }
