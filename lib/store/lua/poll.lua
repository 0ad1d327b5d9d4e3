-- poll: ARGV = prefix, ticketId, ticketTtlMs, tenant
-- A ticket of another tenant, or of an OpenSandbox create, is 'notfound'.
-- Returns {'queued', position} | {'provisioning'} | {'granted', lease-hash...}
--       | {'failed', message} | {'expired'} | {'notfound'}
local tid, ticket_ttl, tenant = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local now = now_ms()
local t = redis.call('HMGET', ticket_key(tid), 'state', 'leaseId', 'userId', 'sandboxId')
if not t[1] or tenant_of(t[3]) ~= tenant or (t[4] or '') ~= '' then return { 'notfound' } end
if t[1] == 'queued' then
  if ticket_abandoned(tid, now, ticket_ttl) then
    ticket_expire(tid)
    return { 'expired' }
  end
  redis.call('ZADD', K_TPOLL, now, tid)
  return { 'queued', ticket_position(tid, t[3]) }
end
if t[1] == 'granted' then
  if redis.call('HGET', lease_key(t[2]), 'state') == 'provisioning' then
    return { 'provisioning' }
  end
  local l = redis.call('HGETALL', lease_key(t[2]))
  if #l > 0 then return { 'granted', l } end
end
if t[1] == 'failed' then
  return { 'failed', redis.call('HGET', ticket_key(tid), 'message') or '' }
end
return { 'expired' }
