-- snapshot_get: a tenant's snapshot record. ARGV = prefix, snapshotId, tenant, staleMs
-- Returns {'ok', record (flat HGETALL)} | {'notfound'} (unknown, or another tenant's).
-- A record Creating for longer than staleMs lost the process committing it
-- (the handler died): it reads Failed from then on.
local id, tenant, stale = ARGV[2], ARGV[3], tonumber(ARGV[4])
local key = P .. 'snapshot:' .. id
local h = redis.call('HMGET', key, 'tenant', 'state', 'lastTransitionAt')
if not h[1] or h[1] ~= tenant then return { 'notfound' } end
local now = now_ms()
if h[2] == 'Creating' and tonumber(h[3] or '0') + stale < now then
  redis.call('HSET', key, 'state', 'Failed', 'reason', 'snapshot_capture_lost',
    'message', 'the snapshot was not finished in time (its commit was interrupted)',
    'lastTransitionAt', now)
  redis.call('EXPIRE', key, 86400)
end
return { 'ok', redis.call('HGETALL', key) }
