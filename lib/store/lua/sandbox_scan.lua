-- sandbox_scan: what the reconciler checks. ARGV = prefix, olderThanMs, limit
-- Returns {{sandboxId, state, ref, stateAgeMs}...}, {leaseId of leases still
-- provisioning after olderThanMs...}
local older, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local boxes = {}
for _, sid in ipairs(redis.call('ZRANGE', K_SANDBOXES, 0, limit - 1)) do
  local s = redis.call('HMGET', sandbox_key(sid), 'state', 'ref', 'lastTransitionAt')
  if s[1] then
    table.insert(boxes, { sid, s[1], s[2] or '', now - tonumber(s[3] or now) })
  else
    redis.call('ZREM', K_SANDBOXES, sid)
  end
end
local stale = {}
-- from the index of provisioning leases (common.lua), oldest first
for _, id in ipairs(redis.call('ZRANGEBYSCORE', K_PROV, '-inf', now - older, 'LIMIT', 0, limit)) do
  if redis.call('HGET', lease_key(id), 'state') == 'provisioning' then
    table.insert(stale, id)
  end
end
return { boxes, stale }
