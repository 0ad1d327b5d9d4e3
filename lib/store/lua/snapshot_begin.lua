-- snapshot_begin: the record of a new snapshot (Creating) of a tenant's Running sandbox.
-- ARGV = prefix, snapshotId, tenant, sandboxId, name, image, maxPerTenant
-- Returns {'ok', ref} | {'nosandbox'} (unknown, or another tenant's)
--       | {'state', state} (not Running) | {'limit', n} (the tenant has maxPerTenant
--         snapshots that are not Failed).
-- Data: P..snapshot:<id> HASH id, tenant, sandboxId, name, image, ref, state, reason,
--         message, createdAt, lastTransitionAt, size
--       P..snapshots:<tenant> ZSET snapshotId -> createdAt
local id, tenant, sid, name, image, max = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], tonumber(ARGV[7])
local s = redis.call('HMGET', sandbox_key(sid), 'tenant', 'state', 'ref')
if not s[1] or s[1] ~= tenant then return { 'nosandbox' } end
if s[2] ~= 'Running' or not s[3] or s[3] == '' then return { 'state', s[2] or 'unknown' } end
local idx = P .. 'snapshots:' .. tenant
local n = 0
for _, other in ipairs(redis.call('ZRANGE', idx, 0, -1)) do
  local st = redis.call('HGET', P .. 'snapshot:' .. other, 'state')
  if not st then
    redis.call('ZREM', idx, other) -- a Failed record expired
  elseif st ~= 'Failed' then
    n = n + 1
  end
end
if n >= max then return { 'limit', n } end
local now = now_ms()
redis.call('HSET', P .. 'snapshot:' .. id, 'id', id, 'tenant', tenant, 'sandboxId', sid,
  'name', name, 'image', image, 'ref', s[3], 'state', 'Creating', 'reason', 'snapshot_accepted',
  'message', 'saving the sandbox filesystem', 'createdAt', now, 'lastTransitionAt', now)
redis.call('ZADD', idx, now, id)
return { 'ok', s[3] }
