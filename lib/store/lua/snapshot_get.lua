-- snapshot_get: a tenant's snapshot record. ARGV = prefix, snapshotId, tenant, staleMs
-- Returns {'ok', record (flat HGETALL)} | {'notfound'} (unknown, or another tenant's).
-- A record Creating for longer than staleMs lost the process committing it
-- (the handler died): it reads Failed from then on (snapshot_settle_lost, common.lua).
local id, tenant, stale = ARGV[2], ARGV[3], tonumber(ARGV[4])
local key = P .. 'snapshot:' .. id
local h = redis.call('HMGET', key, 'tenant', 'state', 'lastTransitionAt')
if not h[1] or h[1] ~= tenant then return { 'notfound' } end
snapshot_settle_lost(key, h[2], h[3], stale, now_ms())
return { 'ok', redis.call('HGETALL', key) }
