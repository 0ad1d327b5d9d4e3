-- sandbox_state: one transition of a sandbox record.
-- ARGV = prefix, sandboxId, fromState ('' = any), toState, reason, message, ref ('' = keep),
--        lastTransitionAt the caller read ('' or absent = any: a caller that
--        decided on what it read moves nothing that changed since)
-- Terminated records leave the index and expire; a Stopped record with
-- teardown 'stop' is parked for its slot's next lease. An OpenSandbox
-- sandbox that was live (Running, Paused) and failed gives its slot back:
-- its lease is the broker's own, no client could release it (the record
-- stays readable, a DELETE still works; the reconciler removes the
-- container). A lease sandbox's slot forgets it, as any finished record;
-- one that was live (Running, Paused, Stopped) and failed ends every lease
-- that holds it (sandbox_leases_lose: each holder's heartbeat then answers
-- 'lost', the slot is freed, so a new acquire gets a new sandbox), and its
-- container goes to the teardown list to be removed (teardown 'remove' on a
-- Failed record: teardown_take hands it out as a 'purge', which keeps the
-- record Failed with its reason).
-- Returns {'ok', previousState, leasesEnded} | {'conflict', currentState} | {'notfound'}
local sid, from, to, reason, message, ref = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local seen = ARGV[8] or ''
local cur = redis.call('HMGET', sandbox_key(sid), 'state', 'slot', 'teardown', 'lastTransitionAt')
if not cur[1] then return { 'notfound' } end
if from ~= '' and cur[1] ~= from then return { 'conflict', cur[1] } end
if seen ~= '' and cur[4] ~= seen then return { 'conflict', cur[1] } end
local now = now_ms()
sandbox_set_state(sid, to, reason, message, now)
if cur[1] == 'Stopping' and to ~= 'Stopping' then
  redis.call('LREM', K_TEARDOWN .. ':busy', 0, sid)
end
if ref ~= '' then redis.call('HSET', sandbox_key(sid), 'ref', ref) end
local ended = 0
if to == 'Terminated' or to == 'Failed' then
  sandbox_finish(sid, to, reason, message)
  local tenant = redis.call('HGET', sandbox_key(sid), 'tenant')
  local live = cur[1] == 'Running' or cur[1] == 'Paused' or cur[1] == 'Stopped'
  if to == 'Failed' and live and (not tenant or tenant == '') then
    local r = redis.call('HMGET', sandbox_key(sid), 'reason', 'message', 'ref')
    -- after sandbox_finish: the slot no longer names the sandbox, so the
    -- releases free it without scheduling a teardown over the Failed record
    ended = sandbox_leases_lose(sid, cur[2], r[1] or 'FAILED', r[2] or '')
    if r[3] and r[3] ~= '' then
      redis.call('HSET', sandbox_key(sid), 'teardown', 'remove')
      redis.call('RPUSH', K_TEARDOWN, sid)
    end
  end
  if to == 'Failed' and (cur[1] == 'Running' or cur[1] == 'Paused') and tenant and tenant ~= '' then
    -- after sandbox_finish: its slot no longer names it, so the release
    -- frees the slot without scheduling a teardown over the Failed record
    local lease = redis.call('GET', session_key(osb_user(tenant), sid))
    if lease and redis.call('EXISTS', lease_key(lease)) == 1 then
      release_lease(lease, 'remove', reason)
    end
  end
elseif to == 'Stopped' and cur[1] == 'Stopping' then
  redis.call('HDEL', sandbox_key(sid), 'teardown')
  local slot = cur[2]
  if redis.call('EXISTS', slot_key(slot)) == 0 then
    redis.call('SET', parked_key(slot), sid)
    redis.call('ZADD', K_PARKED, now, sid)
  end
end
return { 'ok', cur[1], ended }
