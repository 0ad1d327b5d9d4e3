-- teardown_take: the next sandbox to stop or remove. ARGV = prefix
-- Moves it to P..teardown:busy until sandbox_state records the outcome, so a
-- supervisor killed mid-teardown leaves it for the reconciler to requeue.
-- Returns {} | {sandboxId, ref, action}
local sid = redis.call('LMOVE', K_TEARDOWN, K_TEARDOWN .. ':busy', 'LEFT', 'RIGHT')
if not sid then return {} end
local s = redis.call('HMGET', sandbox_key(sid), 'ref', 'teardown', 'state')
if s[3] ~= 'Stopping' then
  redis.call('LREM', K_TEARDOWN .. ':busy', 0, sid)
  return { sid, '', 'none' }
end
return { sid, s[1] or '', s[2] or 'remove' }
