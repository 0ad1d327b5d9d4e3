-- osb_delete: delete an OpenSandbox sandbox of tenant. ARGV = prefix, sandboxId, tenant,
--   idempotencyKey ('' or absent: none)
-- Releases its lease (the teardown removes the container), or takes its ticket out of
-- the queue if it never got a slot (osb_end, common.lua). With idempotencyKey (a create
-- undoing itself: it answers an error), the key no longer names the sandbox, so that the
-- client's retry with it is a new create.
-- Returns {'ok'} | {'notfound'} | {'gone', state}
local sid, tenant, key = ARGV[2], ARGV[3], ARGV[4] or ''
local s = redis.call('HMGET', sandbox_key(sid), 'tenant', 'state')
if s[1] ~= tenant then return { 'notfound' } end
if key ~= '' then
  local v = redis.call('HGET', P .. 'idem:' .. tenant, key)
  if v and string.sub(v, 1, #sid + 1) == sid .. ' ' then
    redis.call('HDEL', P .. 'idem:' .. tenant, key)
    redis.call('ZREM', P .. 'idemidx:' .. tenant, key)
  end
end
if s[2] == 'Stopping' or s[2] == 'Terminated' then return { 'gone', s[2] } end
osb_end(sid, tenant, 'user_delete', 'deleted before it ran')
return { 'ok' }
