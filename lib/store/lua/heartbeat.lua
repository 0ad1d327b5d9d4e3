-- heartbeat: ARGV = prefix, leaseId ('' to look up by session), userId (scoped),
--   sessionId, leaseTtlMs, tenant
-- A lease of another tenant, or the admission of an OpenSandbox create, is 'notfound'.
-- An active lease whose sandbox was lost (sandbox_lost: its container died
-- behind the broker's back) is not renewed: it ends with every lease of the
-- same sandbox (sandbox_leases_lose; the supervisor's watch usually ended them
-- already, when it marked the record Failed), and the heartbeat answers
-- 'lost', as it does for LOST_KEEP_S after such an end.
-- Returns {'ok', lease-hash...} | {'lost', leaseId, sandboxId, reason, message} | {'notfound'}
local id, user, session, ttl, tenant = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
if id == '' then
  id = redis.call('GET', session_key(user, session)) or redis.call('GET', sessionlost_key(user, session))
  if not id then return { 'notfound' } end
end
local l = redis.call('HMGET', lease_key(id), 'userId', 'fixedExpiry', 'state', 'sandboxId', 'slot')
if not l[1] then return lease_lost_reply(id, tenant) end
if tenant_of(l[1]) ~= tenant or l[2] == '1' then return { 'notfound' } end
if l[3] == 'active' then
  local reason, message = sandbox_lost(l[4])
  if reason then
    sandbox_leases_lose(l[4], l[5], reason, message)
    lease_lose(id, l[4], reason, message) -- a lease older than the slot's index
    return lease_lost_reply(id, tenant)
  end
end
local exp = now_ms() + ttl
redis.call('HSET', lease_key(id), 'expiresAt', exp)
redis.call('ZADD', K_LEASES, exp, id)
return { 'ok', redis.call('HGETALL', lease_key(id)) }
