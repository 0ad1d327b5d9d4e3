-- common.lua: helpers shared by every broker script; scripts/embed-lua puts
-- this text in front of each operation's file. ARGV[1] is always the key
-- prefix; keys are built from it (the broker targets one Redis, not a cluster).
--
-- Data model (P = prefix):
--   P..active            SET   slot names currently held (SCARD = active slots)
--   P..slot:<slot>       HASH  mode, refs (leases on it), pool, createdAt
--   P..seats:<slot>      HASH  userId -> seat   (multi_user_shared)
--   P..seatnums:<slot>   HASH  seat -> userId
--   P..seatrefs:<slot>   HASH  userId -> leases of that user on the slot
--   P..pool:<pool>       SET   slots of a pool
--   P..lease:<id>        HASH  the lease
--   P..leases            ZSET  leaseId -> expiresAt (ms)
--   P..provisioning      ZSET  leaseId -> createdAt of leases in state 'provisioning'
--                              (lease_stale reads it instead of every lease)
--   P..session:<u>:<s>   STR   leaseId of a (user, session)
--   P..tactive:<tenant>  SET   slot names a tenant holds (its share of P..active)
--   P..tqueue:<tenant>   ZSET  a tenant's queued ticketId -> seq (FIFO within the tenant)
--   P..tqueues           ZSET  tenants with queued tickets -> turn (round robin: the
--                              lowest turn is served next, then goes to the back)
--   P..turn              STR   counter of grants from the queue (the turns above)
--   P..tenantcfg:<t>     HASH  maxSlots, maxSandboxes (per-tenant caps), createdAt
--   P..ticket:<id>       HASH  userId, sessionId, mode, poolId, seq, state, leaseId, createdAt
--   P..tsession:<u>:<s>  STR   ticketId of a queued (user, session)
--   P..queue             ZSET  queued ticketId -> seq (FIFO order)
--   P..ticketpoll        ZSET  queued ticketId -> last poll (ms)
--   P..modes             HASH  <mode>:slots, <mode>:leases counters
--   P..sandbox:<id>      HASH  sandboxId, state, reason, message, lastTransitionAt, ref
--                              (backend id), slot, mode, userId, poolId, image, limits,
--                              teardown (stop|remove while Stopping), createdAt
--   P..sbevents:<id>     LIST  the record's last SANDBOX_EVENTS_KEEP transitions, oldest first,
--                              each "<ms>\t<state>\t<reason>\t<message>" (message cut at
--                              SANDBOX_EVENT_MSG_MAX bytes); written by sandbox_set_state, and
--                              expires when the record does (its TTL copied on every write)
--   P..sandboxes         ZSET  sandboxId -> createdAt (every record not yet Terminated)
--   P..teardown          LIST  sandboxIds to stop or remove (the supervisor drains it)
--   P..parked:<slot>     STR   sandboxId of a Stopped sandbox kept for its slot's next lease
--   P..parked            ZSET  parked sandboxId -> parkedAt
--   P..tenant:<t>        ZSET  a tenant's OpenSandbox sandboxIds -> createdAt (its list)
--   P..stokens:<id>      HASH  an OpenSandbox sandbox's data-plane tokens, one per API key
--                              (token_issue.lua); expires with its finished record
--   P..gone              ZSET  finished sandboxId -> when its record expires (list cleanup)
--   P..osbunanswered     ZSET  OpenSandbox sandboxId -> when it is removed unless its create's
--                              answer (or a replay's, or a request naming it) reaches a client
--                              first (osb_create.lua adds, osb_answered.lua takes out,
--                              osb_unanswered.lua removes the sandboxes due); the record's
--                              answerBy says the same while it waits
--   P..idem:<t>          HASH  a tenant's Idempotency-Keys -> "<sandboxId> <fingerprint of the
--                              create body>" (osb_create.lua)
--   P..idemidx:<t>       ZSET  the same keys -> when they were stored (their TTL, and the
--                              tenant's cap: the oldest goes first)
--   P..snapshot:<id>     HASH  a snapshot (snapshot_*.lua): id, tenant, sandboxId, name, image,
--                              ref, state, reason, message, createdAt, lastTransitionAt, size
--   P..snapshots:<t>     ZSET  a tenant's snapshotIds -> createdAt
--   P..template:<id>     HASH  a template (template_*.lua): id, tenant, spec (its stored form,
--                              lib/sandbox/template.h), createdAt, updatedAt
--   P..templates:<t>     ZSET  a tenant's templateIds -> createdAt
--   P..wake              channel: published when a slot or seat frees while tickets wait,
--                              and when a provisioning intent is stored
--   P..intents           LIST  leaseIds whose sandbox a supervisor's workers are to make
--                              (stored with the lease by acquire.lua and grant.lua, or by
--                              intent_push.lua after a pull; P..provisioning stays the durable
--                              record: an intent taken by a supervisor that dies is recovered)
--   P..ticket:<id>:done  LIST  pushed when the ticket's lease is ready or failed (a waiting
--                              acquire's wake-up; expires after a minute)
--   P..exec:<lease>:<execId>  HASH  an exec record (exec_*.lua): tenant, sandboxId, state
--                              (running|done|failed), startedAt; running: output (the last
--                              32 KiB of stdout+stderr), outputBytes; done: exitCode, stdout,
--                              stderr, stdoutTruncated, stderrTruncated, timedOut, durationMs;
--                              failed: message. Expires (PEXPIRE) the command's timeout + 60 s
--                              after it started, EXEC_RECORD_TTL_MS after it finished.
--   P..execs:<lease>     ZSET  a lease's execIds -> startedAt (the per-lease cap); expires with
--                              its longest-lived record, and goes with the lease (release_lease)
--   P..slotleases:<slot> SET   the leaseIds on a slot (grant_lease adds, release_lease removes):
--                              the leases a lost sandbox ends (sandbox_leases_lose)
--   P..leaselost:<id>    HASH  a lease that ended because its sandbox was lost (its record
--                              Failed, Terminated or gone while the lease was active):
--                              leaseId, userId, sessionId, sandboxId, reason, message; its
--                              heartbeats answer 'lost' with them. Expires after LOST_KEEP_S
--   P..sessionlost:<u>:<s> STR leaseId of such a lease of (user, session), for heartbeats by
--                              session; a new lease of the session deletes it (grant_lease)
-- Slot names: ex:<user>:<session>, us:<user>, mu:<pool>:<n>.
-- Tenants: every user and pool name the scripts see is scoped, "<tenant>/<name>"
-- (lib/store/lease.c builds them; ids never contain '/' or ':'), so the same userId
-- in two tenants are two users, with their own slots, seats and sessions.
-- OpenSandbox creates are leases of the reserved user "<tenant>/*osb", a name
-- the lease API cannot spell.
local P = ARGV[1]
local K_ACTIVE, K_LEASES, K_QUEUE = P .. 'active', P .. 'leases', P .. 'queue'
local K_TPOLL, K_MODES, K_WAKE = P .. 'ticketpoll', P .. 'modes', P .. 'wake'
local K_SANDBOXES, K_TEARDOWN, K_PARKED = P .. 'sandboxes', P .. 'teardown', P .. 'parked'
local K_TQUEUES, K_TURN = P .. 'tqueues', P .. 'turn'
local K_GONE = P .. 'gone' -- ZSET sandboxId -> when its finished record expires
local K_PROV = P .. 'provisioning' -- ZSET leaseId -> createdAt while 'provisioning'
local K_INTENTS = P .. 'intents' -- LIST leaseIds to provision (acquired or granted)
local K_UNANSWERED = P .. 'osbunanswered' -- ZSET sandboxId -> answer deadline (ms)
local TICKET_KEEP_S = 3600 -- how long a finished ticket still answers polls
local SANDBOX_KEEP_S = 3600 -- how long a Terminated sandbox record stays readable
local LOST_KEEP_S = 3600 -- how long a lease ended by its lost sandbox answers heartbeats
local SANDBOX_EVENTS_KEEP = 64 -- transitions kept per record (P..sbevents:<id>)
local SANDBOX_EVENT_MSG_MAX = 512 -- bytes of a transition's message kept there
local NEVER_MS = 253402300799000 -- 9999-12-31: "no expiry" (manual cleanup)

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function lease_key(id) return P .. 'lease:' .. id end
local function ticket_key(id) return P .. 'ticket:' .. id end
local function session_key(u, s) return P .. 'session:' .. u .. ':' .. s end
local function tsession_key(u, s) return P .. 'tsession:' .. u .. ':' .. s end
local function slot_key(slot) return P .. 'slot:' .. slot end
local function seats_key(slot) return P .. 'seats:' .. slot end
local function seatnums_key(slot) return P .. 'seatnums:' .. slot end
local function seatrefs_key(slot) return P .. 'seatrefs:' .. slot end
local function pool_key(pool) return P .. 'pool:' .. pool end
local function sandbox_key(id) return P .. 'sandbox:' .. id end
local function parked_key(slot) return P .. 'parked:' .. slot end
local function tactive_key(t) return P .. 'tactive:' .. t end
local function tqueue_key(t) return P .. 'tqueue:' .. t end
local function exec_key(lease, eid) return P .. 'exec:' .. lease .. ':' .. eid end
local function execs_key(lease) return P .. 'execs:' .. lease end
local function slotleases_key(slot) return P .. 'slotleases:' .. slot end
local function leaselost_key(id) return P .. 'leaselost:' .. id end
local function sessionlost_key(u, s) return P .. 'sessionlost:' .. u .. ':' .. s end

-- The tenant of a scoped user or pool name ("<tenant>/<name>").
local function osb_user(tenant) return tenant .. '/*osb' end

local function tenant_of(scoped)
  return (scoped and scoped:match('^([^/]*)/')) or ''
end

-- May tenant t take one more slot? default_cap applies unless the tenant has
-- its own maxSlots; a cap of 0 means no cap of its own.
local function tenant_room(t, default_cap)
  local cap = tonumber(redis.call('HGET', P .. 'tenantcfg:' .. t, 'maxSlots') or '') or default_cap
  return cap <= 0 or redis.call('SCARD', tactive_key(t)) < cap
end

-- Is any ticket waiting that could take a free slot now (its tenant below
-- its cap)? A new acquire then queues behind it instead of jumping ahead.
local function queue_blocks(default_cap)
  for _, t in ipairs(redis.call('ZRANGE', K_TQUEUES, 0, -1)) do
    if tenant_room(t, default_cap) then return true end
  end
  return false
end

-- An empty reason keeps the current one (e.g. Stopping(LEASE_EXPIRED) -> Terminated).
-- Take a ready member of image's warm pool (wpool.lua) and count the claim
-- warm or cold: the oldest made with the limits the claim wants ("cpus,mem,
-- pids", as pool_limits_string) among the WPOOL_MATCH oldest, else the oldest
-- (its limits are then updated). The wanted limits are kept as the pool's
-- lastLimits: the refill makes the next members with them (pool.c).
-- Returns its sandbox id, container ref and the limits it was made with, or
-- nil when the pool has none.
local WPOOL_MATCH = 32
local function wpool_take(image, want)
  local id, ref, limits
  local ready = P .. 'wpool:' .. image
  local pick
  if want and want ~= '' then
    for _, m in ipairs(redis.call('ZRANGE', ready, 0, WPOOL_MATCH - 1)) do
      if redis.call('HGET', P .. 'wpoolm:' .. m, 'limits') == want then pick = m break end
    end
    redis.call('HSET', P .. 'wpoolstat:' .. image, 'lastLimits', want)
  end
  if not pick then pick = redis.call('ZRANGE', ready, 0, 0)[1] end
  if pick then
    redis.call('ZREM', ready, pick)
    local m = redis.call('HMGET', P .. 'wpoolm:' .. pick, 'ref', 'limits')
    redis.call('ZREM', P .. 'wpoolall:' .. image, pick)
    redis.call('ZREM', P .. 'wpool:all', pick)
    redis.call('DEL', P .. 'wpoolm:' .. pick)
    if m[1] and m[1] ~= '' then id, ref, limits = pick, m[1], m[2] or '' end
  end
  redis.call('HINCRBY', P .. 'wpoolstat:' .. image, id and 'warm' or 'cold', 1)
  return id, ref, limits
end

-- Every transition of a record goes through here, and so into its history
-- (P..sbevents:<id>, the diagnostics' events): capped at SANDBOX_EVENTS_KEEP,
-- living exactly as long as the record (its TTL, if any, copied over).
local function sandbox_set_state(sid, state, reason, message, now)
  local at = now or now_ms()
  local key = sandbox_key(sid)
  redis.call('HSET', key, 'state', state, 'message', message or '', 'lastTransitionAt', at)
  if reason and reason ~= '' then redis.call('HSET', key, 'reason', reason) end
  local ev = P .. 'sbevents:' .. sid
  local why = redis.call('HGET', key, 'reason') or ''
  local what = state .. '\t' .. why .. '\t' .. string.sub(message or '', 1, SANDBOX_EVENT_MSG_MAX)
  -- the same transition said twice in one script (sandbox_finish after a
  -- caller's own set) is one event
  local last = redis.call('LINDEX', ev, -1)
  if last and string.match(last, '^[^\t]*\t(.*)$') == what then return end
  redis.call('RPUSH', ev, at .. '\t' .. what)
  redis.call('LTRIM', ev, -SANDBOX_EVENTS_KEEP, -1)
  local ttl = redis.call('PTTL', key)
  if ttl > 0 then redis.call('PEXPIRE', ev, ttl) else redis.call('PERSIST', ev) end
end

-- A record leaves for good (Terminated or Failed): out of the indexes, kept
-- readable for SANDBOX_KEEP_S, and its slot no longer points at it.
local function sandbox_finish(sid, state, reason, message)
  sandbox_set_state(sid, state, reason, message)
  redis.call('HDEL', sandbox_key(sid), 'vault') -- its secrets end with it (vault_store.c)
  redis.call('ZREM', K_SANDBOXES, sid)
  redis.call('ZREM', K_PARKED, sid)
  redis.call('EXPIRE', sandbox_key(sid), SANDBOX_KEEP_S)
  redis.call('EXPIRE', P .. 'stokens:' .. sid, SANDBOX_KEEP_S) -- token_issue.lua
  redis.call('EXPIRE', P .. 'sbevents:' .. sid, SANDBOX_KEEP_S) -- sandbox_set_state
  -- A terminated sandbox leaves its tenant's list at once (it stays readable
  -- by id for SANDBOX_KEEP_S); a Failed one is listed until its record expires.
  local owner = redis.call('HGET', sandbox_key(sid), 'tenant')
  if state == 'Terminated' and owner and owner ~= '' then
    redis.call('ZREM', P .. 'tenant:' .. owner, sid)
  end
  redis.call('ZADD', K_GONE, now_ms() + SANDBOX_KEEP_S * 1000, sid)
  local slot = redis.call('HGET', sandbox_key(sid), 'slot')
  if slot and slot ~= '' and redis.call('HGET', slot_key(slot), 'sandboxId') == sid then
    redis.call('HDEL', slot_key(slot), 'sandboxId')
  end
end

-- Hand a sandbox to the supervisor's teardown: action 'stop' parks it for
-- its slot's next lease (idle policy stop_keep), 'remove' deletes it.
local function sandbox_schedule_teardown(sid, action, reason)
  local state = redis.call('HGET', sandbox_key(sid), 'state')
  if not state or state == 'Terminated' then return end
  if state == 'Stopping' then
    -- already on its way out: a remove wins over a stop
    if action == 'remove' then redis.call('HSET', sandbox_key(sid), 'teardown', 'remove') end
    return
  end
  sandbox_set_state(sid, 'Stopping', reason, '')
  redis.call('HSET', sandbox_key(sid), 'teardown', action)
  redis.call('RPUSH', K_TEARDOWN, sid)
end

-- Where a new lease of (user, session, mode, pool) would live, without
-- changing anything: {slot, seat, newslot, newseat}.
local function place(user, session, mode, pool, seats)
  if mode == 'exclusive' then
    return { slot = 'ex:' .. user .. ':' .. session, newslot = true }
  elseif mode == 'user_shared' then
    local slot = 'us:' .. user
    return { slot = slot, newslot = redis.call('SISMEMBER', K_ACTIVE, slot) == 0 }
  end
  local members = redis.call('SMEMBERS', pool_key(pool))
  table.sort(members)
  local free
  for _, slot in ipairs(members) do
    local seat = redis.call('HGET', seats_key(slot), user)
    if seat then
      return { slot = slot, seat = tonumber(seat), newslot = false, newseat = false }
    end
    if not free and redis.call('HLEN', seats_key(slot)) < seats then free = slot end
  end
  if free then
    for n = 1, seats do
      if redis.call('HEXISTS', seatnums_key(free), n) == 0 then
        return { slot = free, seat = n, newslot = false, newseat = true }
      end
    end
  end
  local n = 1
  while redis.call('SISMEMBER', K_ACTIVE, 'mu:' .. pool .. ':' .. n) == 1 do n = n + 1 end
  return { slot = 'mu:' .. pool .. ':' .. n, seat = 1, newslot = true, newseat = true }
end

-- A new slot may be taken only when one is free and nobody waits before us.
local function slot_free(capacity)
  return redis.call('SCARD', K_ACTIVE) < capacity
end

-- Store a lease at place p. Returns the lease id.
-- want_sid ('' for none): the sandbox record this lease is for (an OpenSandbox
-- create); such a lease expires when its sandbox does, not by heartbeats.
local function grant_lease(p, user, session, mode, pool, lease_id, provider, ttl, now, want_sid)
  local slot = p.slot
  if p.newslot then
    redis.call('SADD', K_ACTIVE, slot)
    redis.call('SADD', tactive_key(tenant_of(user)), slot)
    redis.call('HSET', slot_key(slot), 'mode', mode, 'refs', 0, 'pool', pool, 'createdAt', now)
    redis.call('HINCRBY', K_MODES, mode .. ':slots', 1)
    if mode == 'multi_user_shared' then redis.call('SADD', pool_key(pool), slot) end
  end
  redis.call('HINCRBY', slot_key(slot), 'refs', 1)
  if p.seat then
    if p.newseat then
      redis.call('HSET', seats_key(slot), user, p.seat)
      redis.call('HSET', seatnums_key(slot), p.seat, user)
    end
    redis.call('HINCRBY', seatrefs_key(slot), user, 1)
  end
  local exp = now + ttl
  if want_sid and want_sid ~= '' then
    local rexp = redis.call('HGET', sandbox_key(want_sid), 'expiresAt')
    exp = (rexp and rexp ~= '') and tonumber(rexp) or NEVER_MS
    redis.call('HSET', lease_key(lease_id), 'sandboxId', want_sid, 'fixedExpiry', '1')
  end
  redis.call('HSET', lease_key(lease_id), 'leaseId', lease_id, 'userId', user,
    'sessionId', session, 'mode', mode, 'poolId', pool, 'slot', slot,
    'seat', p.seat or '', 'provider', provider,
    -- with a sandbox provider the lease is usable once its sandbox is ready
    'state', provider == 'none' and 'active' or 'provisioning',
    'createdAt', now, 'expiresAt', exp)
  redis.call('ZADD', K_LEASES, exp, lease_id)
  if provider ~= 'none' then redis.call('ZADD', K_PROV, now, lease_id) end
  redis.call('SET', session_key(user, session), lease_id)
  redis.call('SADD', slotleases_key(slot), lease_id)
  -- a new lease of the session: a lost one no longer answers for it
  redis.call('DEL', sessionlost_key(user, session))
  redis.call('HINCRBY', K_MODES, mode .. ':leases', 1)
  return lease_id
end

-- A lease granted at once whose sandbox the supervisors' workers make: the
-- intent they take, and (ticket_id non-empty: a lease API acquire) a ticket
-- record that is already granted, so that the client polls it like a queued
-- one while the sandbox is made (an OpenSandbox create is polled through its
-- record instead). Returns the number of supervisors listening.
local function provision_intent(lease_id, ticket_id, user, session, mode, pool, now)
  if ticket_id ~= '' then
    redis.call('HSET', ticket_key(ticket_id), 'ticketId', ticket_id, 'userId', user,
      'sessionId', session, 'mode', mode, 'poolId', pool, 'state', 'granted',
      'leaseId', lease_id, 'createdAt', now, 'grantedAt', now, 'sandboxId', '', 'direct', '1')
    redis.call('EXPIRE', ticket_key(ticket_id), TICKET_KEEP_S)
    redis.call('HSET', lease_key(lease_id), 'ticketId', ticket_id)
  end
  redis.call('RPUSH', K_INTENTS, lease_id)
  return redis.call('PUBLISH', K_WAKE, 'intent')
end

-- Tell an acquire waiting on the lease's ticket that the lease moved on.
local function ticket_done(ticket)
  if not ticket or ticket == '' then return end
  local k = ticket_key(ticket) .. ':done'
  redis.call('RPUSH', k, '1')
  redis.call('PEXPIRE', k, 60000)
end

-- Remove a lease; frees its slot when it was the last lease on it.
-- Returns true when a slot was freed.
-- action: what happens to the slot's sandbox if the slot frees ('stop' or 'remove').
local function release_lease(id, action, reason)
  local l = redis.call('HMGET', lease_key(id), 'userId', 'sessionId', 'mode', 'slot', 'seat', 'poolId')
  redis.call('ZREM', K_LEASES, id)
  redis.call('ZREM', K_PROV, id)
  if not l[1] then return false end
  local user, session, mode, slot, seat, pool = l[1], l[2], l[3], l[4], l[5], l[6]
  redis.call('DEL', lease_key(id))
  -- its exec records: nobody can read them any more (GET needs the lease)
  for _, eid in ipairs(redis.call('ZRANGE', execs_key(id), 0, -1)) do
    redis.call('DEL', exec_key(id, eid))
  end
  redis.call('DEL', execs_key(id))
  if redis.call('GET', session_key(user, session)) == id then
    redis.call('DEL', session_key(user, session))
  end
  redis.call('HINCRBY', K_MODES, mode .. ':leases', -1)
  redis.call('SREM', slotleases_key(slot), id)
  local seat_freed = false
  if seat and seat ~= '' then
    if redis.call('HINCRBY', seatrefs_key(slot), user, -1) <= 0 then
      redis.call('HDEL', seatrefs_key(slot), user)
      redis.call('HDEL', seats_key(slot), user)
      redis.call('HDEL', seatnums_key(slot), seat)
      seat_freed = true
    end
  end
  local slot_freed = redis.call('HINCRBY', slot_key(slot), 'refs', -1) <= 0
  if slot_freed then
    local sid = redis.call('HGET', slot_key(slot), 'sandboxId')
    if sid then sandbox_schedule_teardown(sid, action, reason) end
    redis.call('DEL', slot_key(slot), seats_key(slot), seatnums_key(slot), seatrefs_key(slot),
      slotleases_key(slot))
    redis.call('SREM', K_ACTIVE, slot)
    redis.call('SREM', tactive_key(tenant_of(user)), slot)
    redis.call('HINCRBY', K_MODES, mode .. ':slots', -1)
    if mode == 'multi_user_shared' then redis.call('SREM', pool_key(pool), slot) end
  end
  -- A freed slot or seat may let the head of the queue in: wake the supervisors.
  if (slot_freed or seat_freed) and redis.call('ZCARD', K_QUEUE) > 0 then
    redis.call('PUBLISH', K_WAKE, slot)
  end
  return slot_freed
end

-- Is sid, the sandbox of an active lease, lost: its record Failed or
-- Terminated (its container died or was removed behind the lease's back:
-- the supervisor's watch and reconciler mark it, docs/ARCHITECTURE.md 3.4),
-- or gone? Returns its reason and message when it is, nil when it is not
-- (or the lease names none yet).
local function sandbox_lost(sid)
  if not sid or sid == '' then return nil end
  local s = redis.call('HMGET', sandbox_key(sid), 'state', 'reason', 'message')
  if not s[1] then return 'SANDBOX_GONE', 'the sandbox record is gone' end
  if s[1] ~= 'Failed' and s[1] ~= 'Terminated' then return nil end
  local reason = (s[2] and s[2] ~= '') and s[2] or string.upper(s[1])
  return reason, s[3] or ''
end

-- End lease id, whose sandbox sid was lost (reason, message), as a release
-- would (its slot is freed when it was the last lease on it), and keep a
-- tombstone (P..leaselost, P..sessionlost) so that its holder's heartbeats
-- say why instead of 'notfound'. A ticket still reading granted reads
-- failed. Returns true when the lease existed.
local function lease_lose(id, sid, reason, message)
  local l = redis.call('HMGET', lease_key(id), 'userId', 'sessionId', 'ticketId')
  if not l[1] then return false end
  redis.call('HSET', leaselost_key(id), 'leaseId', id, 'userId', l[1], 'sessionId', l[2] or '',
    'sandboxId', sid, 'reason', reason, 'message', message)
  redis.call('EXPIRE', leaselost_key(id), LOST_KEEP_S)
  redis.call('SET', sessionlost_key(l[1], l[2] or ''), id, 'EX', LOST_KEEP_S)
  if l[3] and l[3] ~= '' and redis.call('HGET', ticket_key(l[3]), 'state') == 'granted' then
    redis.call('HSET', ticket_key(l[3]), 'state', 'failed', 'message',
      'the sandbox was lost (' .. reason .. '): ' .. message)
    ticket_done(l[3])
  end
  release_lease(id, 'remove', reason)
  return true
end

-- Every lease on slot that holds sid, lost: each ends (lease_lose), so in a
-- shared mode every holder of the sandbox learns it, and the slot is freed.
-- Returns the number of leases ended.
local function sandbox_leases_lose(sid, slot, reason, message)
  local n = 0
  if not slot or slot == '' then return 0 end
  for _, id in ipairs(redis.call('SMEMBERS', slotleases_key(slot))) do
    if redis.call('HGET', lease_key(id), 'sandboxId') == sid and lease_lose(id, sid, reason, message) then
      n = n + 1
    end
  end
  return n
end

-- What a heartbeat of lease id (of tenant) ended by its lost sandbox answers:
-- {'lost', leaseId, sandboxId, reason, message}, or {'notfound'} when it
-- did not end so (or is another tenant's).
local function lease_lost_reply(id, tenant)
  local t = redis.call('HMGET', leaselost_key(id), 'userId', 'sandboxId', 'reason', 'message')
  if not t[1] or tenant_of(t[1]) ~= tenant then return { 'notfound' } end
  return { 'lost', id, t[2] or '', t[3] or '', t[4] or '' }
end

-- A ticket's place in its tenant's line (1 = next of that tenant).
local function ticket_position(tid, user)
  local r = redis.call('ZRANK', tqueue_key(tenant_of(user)), tid)
  if not r then return 0 end
  return r + 1
end

-- Put a new ticket at the end of its tenant's line; a tenant that had none
-- waiting takes the current turn, so it is served before anyone served since.
local function ticket_enqueue(tid, user, seq)
  local t = tenant_of(user)
  redis.call('ZADD', K_QUEUE, seq, tid)
  redis.call('ZADD', tqueue_key(t), seq, tid)
  redis.call('ZADD', K_TQUEUES, 'NX', tonumber(redis.call('GET', K_TURN) or '0'), t)
end

local function ticket_unqueue(tid, user, session)
  redis.call('ZREM', K_QUEUE, tid)
  redis.call('ZREM', K_TPOLL, tid)
  if user then
    local t = tenant_of(user)
    redis.call('ZREM', tqueue_key(t), tid)
    if redis.call('ZCARD', tqueue_key(t)) == 0 then redis.call('ZREM', K_TQUEUES, t) end
  end
  if user and redis.call('GET', tsession_key(user, session)) == tid then
    redis.call('DEL', tsession_key(user, session))
  end
end

local function ticket_expire(tid)
  local t = redis.call('HMGET', ticket_key(tid), 'userId', 'sessionId', 'sandboxId')
  ticket_unqueue(tid, t[1], t[2])
  if t[3] and t[3] ~= '' and redis.call('HGET', sandbox_key(t[3]), 'state') == 'Pending' then
    sandbox_finish(t[3], 'Terminated', 'ttl_expiry', 'expired while waiting for a slot')
  end
  if t[1] then
    redis.call('HSET', ticket_key(tid), 'state', 'expired')
    redis.call('EXPIRE', ticket_key(tid), TICKET_KEEP_S)
  end
end

local function ticket_abandoned(tid, now, ticket_ttl)
  local last = redis.call('ZSCORE', K_TPOLL, tid)
  return (not last) or (tonumber(last) + ticket_ttl < now)
end

-- End OpenSandbox sandbox sid of tenant (a DELETE, or a create whose answer
-- reached nobody): release its lease (the teardown removes the container),
-- or take its ticket out of the queue if it never got a slot; one that never
-- had a container is Terminated at once. reason names why; message is the
-- record's while it has no container to tear down.
local function osb_end(sid, tenant, reason, message)
  local lease = redis.call('GET', session_key(osb_user(tenant), sid))
  if lease and redis.call('EXISTS', lease_key(lease)) == 1 then
    release_lease(lease, 'remove', reason)
  end
  local tid = redis.call('GET', tsession_key(osb_user(tenant), sid))
  if tid and redis.call('HGET', ticket_key(tid), 'state') == 'queued' then
    ticket_unqueue(tid, osb_user(tenant), sid)
    redis.call('HSET', ticket_key(tid), 'state', 'expired')
    redis.call('EXPIRE', ticket_key(tid), TICKET_KEEP_S)
  end
  redis.call('ZREM', K_UNANSWERED, sid)
  local s = redis.call('HMGET', sandbox_key(sid), 'state', 'ref')
  if s[1] and s[1] ~= 'Stopping' and s[1] ~= 'Terminated' then
    if (s[2] or '') == '' then
      sandbox_finish(sid, 'Terminated', reason, message)
    else
      sandbox_schedule_teardown(sid, 'remove', reason)
    end
  end
end

-- Move OpenSandbox sandbox sid's expiry (of tenant) to new ms: its record and
-- its lease (the reaper's schedule) alike. Returns the lease id, or nil.
local function osb_expiry_move(sid, tenant, new)
  redis.call('HSET', sandbox_key(sid), 'expiresAt', new)
  local lease = redis.call('GET', session_key(osb_user(tenant), sid))
  if lease and redis.call('EXISTS', lease_key(lease)) == 1 then
    redis.call('HSET', lease_key(lease), 'expiresAt', new)
    redis.call('ZADD', K_LEASES, new, lease)
    return lease
  end
  return nil
end

-- A snapshot (key P..snapshot:<id>, state h_state since h_since) Creating for
-- longer than stale ms lost the process committing it (the handler died, or
-- the commit outlived SNAPSHOT_TIMEOUT_MS): it turns Failed, and its record
-- expires after a day like any Failed one. Returns true when it did.
local function snapshot_settle_lost(key, h_state, h_since, stale, now)
  if h_state ~= 'Creating' or tonumber(h_since or '0') + stale >= now then return false end
  redis.call('HSET', key, 'state', 'Failed', 'reason', 'snapshot_capture_lost',
    'message', 'the snapshot was not finished in time (its commit was interrupted)',
    'lastTransitionAt', now)
  redis.call('EXPIRE', key, 86400)
  return true
end
