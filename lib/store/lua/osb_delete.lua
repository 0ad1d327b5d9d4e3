-- osb_delete: delete an OpenSandbox sandbox of tenant. ARGV = prefix, sandboxId, tenant
-- Releases its lease (the teardown removes the container), or takes its ticket out of
-- the queue if it never got a slot. Returns {'ok'} | {'notfound'} | {'gone', state}
local sid, tenant = ARGV[2], ARGV[3]
local s = redis.call('HMGET', sandbox_key(sid), 'tenant', 'state', 'ref')
if s[1] ~= tenant then return { 'notfound' } end
if s[2] == 'Stopping' or s[2] == 'Terminated' then return { 'gone', s[2] } end
local lease = redis.call('GET', session_key(osb_user(tenant), sid))
if lease and redis.call('EXISTS', lease_key(lease)) == 1 then
  release_lease(lease, 'remove', 'user_delete')
end
local tid = redis.call('GET', tsession_key(osb_user(tenant), sid))
if tid and redis.call('HGET', ticket_key(tid), 'state') == 'queued' then
  ticket_unqueue(tid, osb_user(tenant), sid)
  redis.call('HSET', ticket_key(tid), 'state', 'expired')
  redis.call('EXPIRE', ticket_key(tid), TICKET_KEEP_S)
end
local st = redis.call('HGET', sandbox_key(sid), 'state')
if st ~= 'Stopping' and st ~= 'Terminated' then
  if (s[3] or '') == '' then
    sandbox_finish(sid, 'Terminated', 'user_delete', 'deleted before it ran')
  else
    sandbox_schedule_teardown(sid, 'remove', 'user_delete')
  end
end
return { 'ok' }
