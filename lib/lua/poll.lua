-- poll: ARGV = prefix, ticketId, ticketTtlMs
-- Returns {'queued', position} | {'granted', lease-hash...} | {'expired'} | {'notfound'}
local tid, ticket_ttl = ARGV[2], tonumber(ARGV[3])
local now = now_ms()
local t = redis.call('HMGET', ticket_key(tid), 'state', 'leaseId')
if not t[1] then return { 'notfound' } end
if t[1] == 'queued' then
  if ticket_abandoned(tid, now, ticket_ttl) then
    ticket_expire(tid)
    return { 'expired' }
  end
  redis.call('ZADD', K_TPOLL, now, tid)
  return { 'queued', ticket_position(tid) }
end
if t[1] == 'granted' then
  local l = redis.call('HGETALL', lease_key(t[2]))
  if #l > 0 then return { 'granted', l } end
end
return { 'expired' }
