-- reap: ARGV = prefix, ticketTtlMs, limit
-- Releases leases whose expiry has passed and expires tickets nobody polled
-- for ticketTtlMs, at most `limit` of each per call.
-- Returns {freedSlots, {leaseId, userId, sessionId, ...}, {ticketId...}}
local ticket_ttl, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local freed, leases, tickets = 0, {}, {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', K_LEASES, '-inf', now, 'LIMIT', 0, limit)) do
  local l = redis.call('HMGET', lease_key(id), 'userId', 'sessionId')
  if release_lease(id) then freed = freed + 1 end
  for _, v in ipairs({ id, l[1] or '', l[2] or '' }) do table.insert(leases, v) end
end
for _, tid in ipairs(redis.call('ZRANGEBYSCORE', K_TPOLL, '-inf', '(' .. (now - ticket_ttl), 'LIMIT', 0, limit)) do
  ticket_expire(tid)
  table.insert(tickets, tid)
end
return { freed, leases, tickets }
