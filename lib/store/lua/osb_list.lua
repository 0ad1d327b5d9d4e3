-- osb_list: one page of OpenSandbox sandboxes, newest first.
-- ARGV = prefix, tenant ('' = every tenant: an admin key), page, pageSize, scanMax,
--   nStates, state..., nMeta, key, value, ...
-- Returns {totalItems, record1, record2, ...}, each record a flat HGETALL array.
-- Without filters a page costs O(pageSize) whatever the number of sandboxes
-- (ranks of the index); with state or metadata filters the newest scanMax
-- records are matched here, in one round trip.
local tenant, page, size, scan_max = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ns = tonumber(ARGV[6])
local states, n = {}, 6
for i = 1, ns do states[ARGV[n + i]] = true end
n = n + ns + 1
local nm = tonumber(ARGV[n])
local meta = {}
for i = 1, nm do meta[ARGV[n + 2 * i - 1]] = ARGV[n + 2 * i] end

-- Finished records expire after SANDBOX_KEEP_S: drop them from the indexes first.
for _, sid in ipairs(redis.call('ZRANGEBYSCORE', K_GONE, '-inf', now_ms(), 'LIMIT', 0, 1000)) do
  redis.call('ZREM', K_GONE, sid)
  if redis.call('EXISTS', sandbox_key(sid)) == 0 then
    for _, t in ipairs(redis.call('ZRANGE', P .. 'tenants', 0, -1)) do
      redis.call('ZREM', P .. 'tenant:' .. t, sid)
    end
  end
end

local idx = tenant == '' and K_SANDBOXES or (P .. 'tenant:' .. tenant)
local first = (page - 1) * size
local out = { 0 }
if ns == 0 and nm == 0 and tenant ~= '' then
  out[1] = redis.call('ZCARD', idx)
  for _, sid in ipairs(redis.call('ZREVRANGE', idx, first, first + size - 1)) do
    local rec = redis.call('HGETALL', sandbox_key(sid))
    if #rec > 0 then table.insert(out, rec) end
  end
  return out
end

local function matches(sid)
  local h = redis.call('HMGET', sandbox_key(sid), 'state', 'metadata', 'tenant')
  if not h[1] or not h[3] or h[3] == '' then return false end -- gone, or a lease's sandbox
  if ns > 0 and not states[h[1]] then return false end
  if nm == 0 then return true end
  local ok, md = pcall(cjson.decode, h[2] or '{}')
  if not ok or type(md) ~= 'table' then return false end
  for k, v in pairs(meta) do
    if md[k] == nil or tostring(md[k]) ~= v then return false end
  end
  return true
end

local total = 0
for _, sid in ipairs(redis.call('ZREVRANGE', idx, 0, scan_max - 1)) do
  if matches(sid) then
    if total >= first and total < first + size then
      table.insert(out, redis.call('HGETALL', sandbox_key(sid)))
    end
    total = total + 1
  end
end
out[1] = total
return out
