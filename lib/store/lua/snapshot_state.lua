-- snapshot_state: move a snapshot from one state to another, or drop it.
-- ARGV = prefix, snapshotId, tenant ('' = any: the committing process), from, to,
--   reason, message, size ('' = unchanged)
-- to = '-' deletes the record and its index entry. A Failed record expires
-- after a day (it holds no image).
-- Returns {'ok'} | {'notfound'} | {'conflict', state}.
local id, tenant, from, to = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local key = P .. 'snapshot:' .. id
local h = redis.call('HMGET', key, 'tenant', 'state')
if not h[1] or (tenant ~= '' and h[1] ~= tenant) then return { 'notfound' } end
if h[2] ~= from then return { 'conflict', h[2] or '' } end
if to == '-' then
  redis.call('DEL', key)
  redis.call('ZREM', P .. 'snapshots:' .. h[1], id)
  return { 'ok' }
end
redis.call('HSET', key, 'state', to, 'reason', ARGV[6], 'message', ARGV[7], 'lastTransitionAt', now_ms())
if ARGV[8] ~= '' then redis.call('HSET', key, 'size', ARGV[8]) end
if to == 'Failed' then redis.call('EXPIRE', key, 86400) end
return { 'ok' }
