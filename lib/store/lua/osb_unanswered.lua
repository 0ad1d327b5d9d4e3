-- osb_unanswered: end the OpenSandbox sandboxes whose create's answer reached nobody (the
-- handler died before writing it, so the client got a 502 and never learnt the id) and
-- that no request named since, once their deadline passed (osb_create.lua: the create's
-- time plus OPENSANDBOX_UNANSWERED_S). Such a sandbox would otherwise live on unowned, for
-- good with a null timeout. ARGV = prefix, limit, message
-- Returns {sandboxId, tenant, ...} of the sandboxes ended.
local limit, message = tonumber(ARGV[2]), ARGV[3]
local out = {}
for _, sid in ipairs(redis.call('ZRANGEBYSCORE', K_UNANSWERED, '-inf', now_ms(), 'LIMIT', 0, limit)) do
  redis.call('ZREM', K_UNANSWERED, sid)
  local s = redis.call('HMGET', sandbox_key(sid), 'tenant', 'state', 'answerBy')
  if s[1] and s[1] ~= '' and (s[3] or '') ~= '' and s[2] ~= 'Stopping' and s[2] ~= 'Terminated' then
    redis.call('HDEL', sandbox_key(sid), 'answerBy')
    osb_end(sid, s[1], 'CREATE_UNANSWERED', message)
    table.insert(out, sid)
    table.insert(out, s[1])
  end
end
return out
