-- osb_answered: a client has OpenSandbox sandbox sid: its create's answer (or a replay's)
-- was written, or a request of its tenant named it. It no longer waits to be removed
-- unanswered (osb_unanswered.lua). ARGV = prefix, sandboxId
-- Returns 1 when it was waiting, else 0.
local sid = ARGV[2]
if redis.call('EXISTS', sandbox_key(sid)) == 1 then
  redis.call('HDEL', sandbox_key(sid), 'answerBy')
end
return redis.call('ZREM', K_UNANSWERED, sid)
