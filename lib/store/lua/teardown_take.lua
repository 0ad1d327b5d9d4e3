-- teardown_take: the next sandbox to stop or remove. ARGV = prefix
-- Moves it to P..teardown:busy until sandbox_state records the outcome (or,
-- for a purge, teardown_purged), so a supervisor killed mid-teardown leaves
-- it for the reconciler to requeue. A Failed lease sandbox whose container
-- is to go (sandbox_state.lua sets its teardown 'remove') is a 'purge': the
-- container is removed and the record stays Failed.
-- Returns {} | {sandboxId, ref, action ('stop'|'remove'|'purge'|'none')}
local sid = redis.call('LMOVE', K_TEARDOWN, K_TEARDOWN .. ':busy', 'LEFT', 'RIGHT')
if not sid then return {} end
local s = redis.call('HMGET', sandbox_key(sid), 'ref', 'teardown', 'state')
if s[3] == 'Failed' and s[2] == 'remove' then return { sid, s[1] or '', 'purge' } end
if s[3] ~= 'Stopping' then
  redis.call('LREM', K_TEARDOWN .. ':busy', 0, sid)
  return { sid, '', 'none' }
end
return { sid, s[1] or '', s[2] or 'remove' }
