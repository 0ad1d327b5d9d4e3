-- acquire: ARGV = prefix, userId, sessionId, mode, poolId ('' if none), capacity,
--   leaseTtlMs, ticketTtlMs, poolSeats, newLeaseId, newTicketId, provider,
--   sandboxId ('' unless an OpenSandbox create: the record it is for),
--   tenantSlots (default per-tenant slot cap, 0 = none),
--   callerMakes ('1': the caller makes the granted lease's sandbox itself)
-- userId and poolId are scoped ("<tenant>/<name>", see common.lua).
-- A new lease with a provider is 'provisioning': an intent (P..intents) is
-- stored with it (and for a lease API acquire a granted ticket, newTicketId),
-- and the supervisors woken.
-- A repeated acquire of a session renews and returns its lease, unless that
-- lease's sandbox was lost (sandbox_lost): then the lease ends as a heartbeat
-- would end it, and the session is served anew.
-- Returns {'granted', lease-hash...} | {'queued', ticketId, position, 'new'|'existing'}
--       | {'conflict', mode, poolId}
local user, session, mode, pool = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local capacity, ttl, ticket_ttl = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local seats, lease_id, ticket_id, provider = tonumber(ARGV[9]), ARGV[10], ARGV[11], ARGV[12]
local want_sid, tenant_cap = ARGV[13] or '', tonumber(ARGV[14] or '0')
local caller_makes = ARGV[15] == '1'
local tenant = tenant_of(user)
local now = now_ms()

local held = redis.call('GET', session_key(user, session))
if held then
  local l = redis.call('HMGET', lease_key(held), 'mode', 'poolId', 'state', 'sandboxId', 'slot')
  -- A lease whose sandbox was lost is never handed back: it ends (with every
  -- lease of that sandbox) and the session gets a new lease, or a ticket.
  local reason, message
  if l[1] and l[3] == 'active' then reason, message = sandbox_lost(l[4]) end
  if reason then
    sandbox_leases_lose(l[4], l[5], reason, message)
    lease_lose(held, l[4], reason, message)
    l[1] = nil
  end
  if l[1] then
    if l[1] ~= mode or l[2] ~= pool then return { 'conflict', l[1], l[2] } end
    -- A repeated acquire is a sign of life: it renews like a heartbeat.
    if redis.call('HGET', lease_key(held), 'fixedExpiry') ~= '1' then
      local exp = now + ttl
      redis.call('HSET', lease_key(held), 'expiresAt', exp)
      redis.call('ZADD', K_LEASES, exp, held)
    end
    return { 'granted', redis.call('HGETALL', lease_key(held)) }
  end
  redis.call('DEL', session_key(user, session))
end

local waiting = redis.call('GET', tsession_key(user, session))
if waiting then
  local t = redis.call('HMGET', ticket_key(waiting), 'state', 'mode', 'poolId', 'sandboxId')
  if t[1] == 'queued' then
    if t[2] ~= mode or t[3] ~= pool then return { 'conflict', t[2], t[3] } end
    -- a sign of life, except for an OpenSandbox create's ticket (a replayed
    -- create): that one waits until its sandbox's expiry, placed below
    if (t[4] or '') == '' then redis.call('ZADD', K_TPOLL, now, waiting) end
    return { 'queued', waiting, ticket_position(waiting, user), 'existing' }
  end
  redis.call('DEL', tsession_key(user, session))
end

local p = place(user, session, mode, pool, seats)
-- A new slot only when one is free, the tenant is below its cap, and no
-- ticket that could take it waits (fairness is the grant script's job).
if not p.newslot or (slot_free(capacity) and tenant_room(tenant, tenant_cap)
    and not queue_blocks(tenant_cap)) then
  grant_lease(p, user, session, mode, pool, lease_id, provider, ttl, now, want_sid)
  -- the sandbox is the supervisors' to make, unless the caller makes it
  -- (an OpenSandbox create holding pull credentials, or a warm member)
  if provider ~= 'none' and not caller_makes then
    provision_intent(lease_id, want_sid == '' and ticket_id or '', user, session, mode, pool, now)
  end
  return { 'granted', redis.call('HGETALL', lease_key(lease_id)) }
end

-- The next place in line: one past the last queued ticket. Derived from the
-- queue itself, so a ticket taken back (Kafka refused it) leaves no trace.
local last = redis.call('ZRANGE', K_QUEUE, -1, -1, 'WITHSCORES')
local seq = (last[2] and tonumber(last[2]) or 0) + 1
redis.call('HSET', ticket_key(ticket_id), 'ticketId', ticket_id, 'userId', user,
  'sessionId', session, 'mode', mode, 'poolId', pool, 'seq', seq, 'state', 'queued',
  'createdAt', now, 'sandboxId', want_sid)
ticket_enqueue(ticket_id, user, seq)
if want_sid ~= '' then
  -- Nobody polls an OpenSandbox create: it waits until its sandbox would
  -- expire. The poll index holds "last sign of life"; place it so that the
  -- ticket counts as abandoned exactly at the sandbox's expiry.
  local rexp = redis.call('HGET', sandbox_key(want_sid), 'expiresAt')
  local until_ms = (rexp and rexp ~= '') and tonumber(rexp) or NEVER_MS
  redis.call('ZADD', K_TPOLL, until_ms - ticket_ttl, ticket_id)
else
  redis.call('ZADD', K_TPOLL, now, ticket_id)
end
redis.call('SET', tsession_key(user, session), ticket_id)
return { 'queued', ticket_id, ticket_position(ticket_id, user), 'new' }
