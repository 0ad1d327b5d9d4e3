-- grant: the supervisor's step. ARGV = prefix, targetTicketId ('' for none),
--   capacity, leaseTtlMs, ticketTtlMs, poolSeats, provider, leaseId1 .. leaseIdN
-- Grants queued tickets strictly in queue order while slots allow (at most N,
-- one fresh lease id each), skipping abandoned tickets. Idempotent: a ticket
-- is granted at most once because it leaves the queue in the same step.
-- Returns {targetState ('queued'|'granted'|'expired'|'gone'|''), granted, expired}
-- where granted = {ticketId, leaseId, userId, sessionId, ...} and expired = {ticketId...}.
local target, capacity, ttl = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local ticket_ttl, seats, provider = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local now = now_ms()
local granted, expired = {}, {}
local next_id = 8

while next_id <= #ARGV do
  local head = redis.call('ZRANGE', K_QUEUE, 0, 0)[1]
  if not head then break end
  local t = redis.call('HMGET', ticket_key(head), 'state', 'userId', 'sessionId', 'mode', 'poolId', 'sandboxId')
  if t[1] ~= 'queued' then
    ticket_unqueue(head, t[2], t[3])
  elseif ticket_abandoned(head, now, ticket_ttl) then
    ticket_expire(head)
    table.insert(expired, head)
  else
    local user, session, mode, pool = t[2], t[3], t[4], t[5]
    local lease_id = redis.call('GET', session_key(user, session))
    if not lease_id or redis.call('EXISTS', lease_key(lease_id)) == 0 then
      local p = place(user, session, mode, pool, seats)
      if p.newslot and not slot_free(capacity) then break end
      lease_id = grant_lease(p, user, session, mode, pool, ARGV[next_id], provider, ttl, now, t[6])
      next_id = next_id + 1
    end
    ticket_unqueue(head, user, session)
    redis.call('HSET', ticket_key(head), 'state', 'granted', 'leaseId', lease_id, 'grantedAt', now)
    redis.call('HSET', lease_key(lease_id), 'ticketId', head)
    redis.call('EXPIRE', ticket_key(head), TICKET_KEEP_S)
    for _, v in ipairs({ head, lease_id, user, session }) do table.insert(granted, v) end
  end
end

local state = ''
if target ~= '' then
  state = redis.call('HGET', ticket_key(target), 'state') or 'gone'
  if state == 'queued' and ticket_abandoned(target, now, ticket_ttl) then
    ticket_expire(target)
    table.insert(expired, target)
    state = 'expired'
  end
end
return { state, granted, expired }
