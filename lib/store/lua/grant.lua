-- grant: the supervisor's step. ARGV = prefix, targetTicketId ('' for none),
--   capacity, leaseTtlMs, ticketTtlMs, poolSeats, provider, tenantSlots (default
--   per-tenant slot cap, 0 = none), leaseId1 .. leaseIdN
-- Grants queued tickets while slots allow (at most N, one fresh lease id each),
-- skipping abandoned tickets. Tenants take turns (round robin over P..tqueues):
-- the tenant whose turn is lowest is served one ticket, the oldest of its own,
-- and goes to the back; a tenant at its slot cap is passed over. So one
-- tenant's thousand queued tickets hold another tenant's first ticket back by
-- at most one grant per waiting tenant. Idempotent: a ticket is granted at most
-- once because it leaves the queue in the same step.
-- A new lease with a provider is 'provisioning', and its intent (P..intents)
-- is stored in the same step, as acquire.lua stores a direct acquire's: the
-- supervisors' workers take it (intents_take.lua), so a supervisor killed
-- right after the grant loses nothing. The supervisors are woken once.
-- Returns {targetState ('queued'|'granted'|'expired'|'gone'|''), granted, expired}
-- where granted = {ticketId, leaseId, userId, sessionId, ...} and expired = {ticketId...}.
local target, capacity, ttl = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local ticket_ttl, seats, provider = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local tenant_cap = tonumber(ARGV[8])
local now = now_ms()
local granted, expired = {}, {}
local next_id = 9
local passed = {} -- tenants at their cap during this step
local full = false -- no free slot: only tickets that need none may go
local intents = 0 -- leases whose sandbox the workers are to make

-- The next tenant whose turn it is and that may be served now.
local function next_tenant()
  for _, t in ipairs(redis.call('ZRANGE', K_TQUEUES, 0, -1)) do
    if not passed[t] then return t end
  end
  return nil
end

while next_id <= #ARGV do
  local tenant = next_tenant()
  if not tenant then break end
  local head = redis.call('ZRANGE', tqueue_key(tenant), 0, 0)[1]
  if not head then
    redis.call('ZREM', K_TQUEUES, tenant)
  else
    local t = redis.call('HMGET', ticket_key(head), 'state', 'userId', 'sessionId', 'mode', 'poolId', 'sandboxId')
    if t[1] ~= 'queued' then
      ticket_unqueue(head, t[2] or (tenant .. '/'), t[3])
    elseif ticket_abandoned(head, now, ticket_ttl) then
      ticket_expire(head)
      table.insert(expired, head)
    else
      local user, session, mode, pool = t[2], t[3], t[4], t[5]
      local lease_id = redis.call('GET', session_key(user, session))
      local go = true
      if not lease_id or redis.call('EXISTS', lease_key(lease_id)) == 0 then
        local p = place(user, session, mode, pool, seats)
        if p.newslot and (full or not slot_free(capacity)) then
          full = true
          go = false
        elseif p.newslot and not tenant_room(tenant, tenant_cap) then
          go = false
        else
          lease_id = grant_lease(p, user, session, mode, pool, ARGV[next_id], provider, ttl, now, t[6])
          next_id = next_id + 1
          if provider ~= 'none' then
            redis.call('RPUSH', K_INTENTS, lease_id)
            intents = intents + 1
          end
        end
      end
      if go then
        ticket_unqueue(head, user, session)
        redis.call('HSET', ticket_key(head), 'state', 'granted', 'leaseId', lease_id, 'grantedAt', now)
        redis.call('HSET', lease_key(lease_id), 'ticketId', head)
        redis.call('EXPIRE', ticket_key(head), TICKET_KEEP_S)
        for _, v in ipairs({ head, lease_id, user, session }) do table.insert(granted, v) end
        -- served: this tenant's next ticket waits for everyone else's turn
        redis.call('ZADD', K_TQUEUES, 'XX', redis.call('INCR', K_TURN), tenant)
      else
        passed[tenant] = true
      end
    end
  end
end

if intents > 0 then redis.call('PUBLISH', K_WAKE, 'intent') end

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
