-- lease_stale: leases left 'provisioning' that nobody is working on.
-- ARGV = prefix, olderThanMs, limit
-- A lease is made 'provisioning' by an acquire or a grant, and its sandbox
-- is then made under the lock P..lock:sandbox:<id>. One older than
-- olderThanMs whose sandbox lock is free (or that has no sandbox yet) was
-- left by a process that died (a supervisor killed mid-grant): whoever
-- finds it finishes it (sandbox_lease_ready is safe to repeat).
-- Returns {leaseId...}
local older, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local out = {}
for _, id in ipairs(redis.call('ZRANGE', K_LEASES, 0, -1)) do
  local l = redis.call('HMGET', lease_key(id), 'state', 'createdAt', 'sandboxId')
  if l[1] == 'provisioning' and tonumber(l[2] or now) + older < now and
     (not l[3] or l[3] == '' or redis.call('EXISTS', P .. 'lock:sandbox:' .. l[3]) == 0) then
    table.insert(out, id)
    if #out >= limit then break end
  end
end
return out
