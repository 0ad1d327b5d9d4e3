-- snapshot_list: one page of a tenant's snapshots, newest first.
-- ARGV = prefix, tenant, page, pageSize, sandboxId ('' = any), name ('' = any), nStates, state...
-- Returns {totalItems, record1, record2, ...}, each record a flat HGETALL array.
-- The tenant's index holds at most its cap of live snapshots plus a day of
-- Failed ones, so the filter runs over all of it.
local tenant, page, size, sid = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local name, ns = ARGV[6], tonumber(ARGV[7])
local states = {}
for i = 1, ns do states[ARGV[7 + i]] = true end
local idx = P .. 'snapshots:' .. tenant
local first = (page - 1) * size
local out, total = { 0 }, 0
for _, id in ipairs(redis.call('ZREVRANGE', idx, 0, 9999)) do
  local h = redis.call('HMGET', P .. 'snapshot:' .. id, 'state', 'sandboxId', 'name')
  if not h[1] then
    redis.call('ZREM', idx, id)
  elseif (ns == 0 or states[h[1]]) and (sid == '' or h[2] == sid)
      and (name == '' or h[3] == name) then
    if total >= first and total < first + size then
      table.insert(out, redis.call('HGETALL', P .. 'snapshot:' .. id))
    end
    total = total + 1
  end
end
out[1] = total
return out
