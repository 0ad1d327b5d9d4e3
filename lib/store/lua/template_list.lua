-- template_list: all of a tenant's templates, newest first; the caller
-- filters and pages them (the tenant's cap bounds the list).
-- ARGV = prefix, tenant, max
-- Returns {id1, spec1, createdAt1, updatedAt1, id2, ...}
local idx = P .. 'templates:' .. ARGV[2]
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', idx, 0, tonumber(ARGV[3]) - 1)) do
  local h = redis.call('HMGET', P .. 'template:' .. id, 'tenant', 'spec', 'createdAt', 'updatedAt')
  if not h[1] or h[1] ~= ARGV[2] then
    redis.call('ZREM', idx, id)
  else
    table.insert(out, id)
    table.insert(out, h[2] or '')
    table.insert(out, h[3] or '0')
    table.insert(out, h[4] or '0')
  end
end
return out
