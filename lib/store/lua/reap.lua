-- reap: ARGV = prefix, ticketTtlMs, limit, idleKeepMs, provisionMaxMs
-- Releases leases whose expiry has passed (their sandboxes are removed),
-- except leases still 'provisioning' for less than provisionMaxMs, or whose
-- intent waits for a supervisor's worker (P..intents): their holder never
-- had them to heartbeat (a grant whose supervisor died is finished by
-- lease_stale's finder), so their expiry is pushed on;
-- expires tickets nobody polled for ticketTtlMs, and removes parked
-- sandboxes older than idleKeepMs; at most `limit` of each per call.
-- Returns {freedSlots, {leaseId, userId, sessionId, ...}, {ticketId...}, {sandboxId...}}
local ticket_ttl, limit, idle_keep = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local prov_max = tonumber(ARGV[5] or '0')
local now = now_ms()
local freed, leases, tickets = 0, {}, {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', K_LEASES, '-inf', now, 'LIMIT', 0, limit)) do
  local l = redis.call('HMGET', lease_key(id), 'userId', 'sessionId', 'state', 'createdAt')
  -- provisioning since its creation, or since a supervisor took its intent
  -- (intents_take.lua restamps P..provisioning); an intent no supervisor
  -- has taken yet has not started at all
  local since = math.max(tonumber(l[4] or 0), tonumber(redis.call('ZSCORE', K_PROV, id) or 0))
  if l[3] == 'provisioning' and (since + prov_max > now
      or redis.call('LPOS', K_INTENTS, id) ~= false) then
    redis.call('ZADD', K_LEASES, now + 5000, id)
  else
    if release_lease(id, 'remove', 'LEASE_EXPIRED') then freed = freed + 1 end
    for _, v in ipairs({ id, l[1] or '', l[2] or '' }) do table.insert(leases, v) end
  end
end
for _, tid in ipairs(redis.call('ZRANGEBYSCORE', K_TPOLL, '-inf', '(' .. (now - ticket_ttl), 'LIMIT', 0, limit)) do
  ticket_expire(tid)
  table.insert(tickets, tid)
end
local parked = {}
for _, sid in ipairs(redis.call('ZRANGEBYSCORE', K_PARKED, '-inf', '(' .. (now - idle_keep), 'LIMIT', 0, limit)) do
  redis.call('ZREM', K_PARKED, sid)
  local slot = redis.call('HGET', sandbox_key(sid), 'slot')
  if slot and redis.call('GET', parked_key(slot)) == sid then redis.call('DEL', parked_key(slot)) end
  if redis.call('HGET', sandbox_key(sid), 'state') == 'Stopped' then
    sandbox_schedule_teardown(sid, 'remove', 'IDLE_EXPIRED')
    table.insert(parked, sid)
  end
end
return { freed, leases, tickets, parked }
