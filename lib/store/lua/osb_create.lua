-- osb_create: the record of an OpenSandbox create, before it asks for a slot.
-- ARGV = prefix, sandboxId, tenant, maxPerTenant (default; tenantcfg maxSandboxes wins), timeoutMs ('' = manual cleanup),
--   poolImage ('' = do not take a warm-pool member), disk asked in MiB ('' = none),
--   SANDBOX_DISK_MB, SANDBOX_DISK_MAX_MB, idempotencyKey ('' = none), fingerprint (of the
--   create body), idempotencyTtlMs, idempotencyMax (keys per tenant), unansweredMs,
--   then field/value pairs of the record
-- The record's diskMb: the disk asked, or SANDBOX_DISK_MB; the tenant's cap is its tenantcfg
-- maxDiskMb, else SANDBOX_DISK_MAX_MB (and never above it): a default above the cap is the
-- cap, an ask above it is refused. Warm members have SANDBOX_DISK_MB: another disk is a cold
-- create.
-- With poolImage, a ready member of that image's warm pool (wpool_take, common.lua) is taken in
-- this script, so that no member is ever handed out twice: the record gets the member's id
-- (its container's label), its container (ref), poolLimits (the limits it was made with) and
-- poolRef (the pool's image, as POOL names it: the answer's allocation.poolRef);
-- an empty pool is a cold create with sandboxId.
-- Idempotency: a key the tenant used before (within idempotencyTtlMs) answers the sandbox it
-- made instead of making another; the key is stored in this script with the record, so no
-- crash can leave one without the other. admit = '1' when that sandbox never asked for a
-- slot (its create stopped between this script and the acquire): the caller admits it now.
-- Every new record waits for its answer (answerBy, P..osbunanswered): osb_answered.lua
-- clears it once a client has it; osb_unanswered.lua removes it unanswered after
-- unansweredMs.
-- Returns {'ok', sandboxId, ref} | {'limit', live} when the tenant already has maxPerTenant live sandboxes
--       | {'disk', cap} when the disk asked is over the tenant's cap (nothing stored)
--       | {'replay', sandboxId, ref, admit} | {'mismatch', sandboxId} (the key made a
--         sandbox from another body) | {'spent', sandboxId} (the key's sandbox is gone).
local sid, tenant, max, timeout, pool_image = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
local ask, ddef, dmax = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9])
local key, fp, key_ttl, key_max = ARGV[10], ARGV[11], tonumber(ARGV[12]), tonumber(ARGV[13])
local unanswered = tonumber(ARGV[14])
local now = now_ms()
local ikeys, iidx = P .. 'idem:' .. tenant, P .. 'idemidx:' .. tenant
if key ~= '' then
  -- the tenant's keys past their TTL go first (a bounded number per create)
  for _, k in ipairs(redis.call('ZRANGEBYSCORE', iidx, '-inf', now - key_ttl, 'LIMIT', 0, 64)) do
    redis.call('HDEL', ikeys, k)
    redis.call('ZREM', iidx, k)
  end
  local v = redis.call('HGET', ikeys, key)
  if v then
    local osid, ofp = string.match(v, '^(%x+) (%x+)$')
    if not osid then
      redis.call('HDEL', ikeys, key) -- not ours: forget it
    elseif ofp ~= fp then
      return { 'mismatch', osid }
    else
      local s = redis.call('HMGET', sandbox_key(osid), 'state', 'ref', 'reason')
      if not s[1] then return { 'spent', osid } end
      local user = osb_user(tenant)
      local admit = (s[1] == 'Pending' and s[3] == 'CREATING'
        and not redis.call('GET', session_key(user, osid))
        and not redis.call('GET', tsession_key(user, osid))) and '1' or ''
      return { 'replay', osid, s[2] or '', admit }
    end
  end
end
local cap = tonumber(redis.call('HGET', P .. 'tenantcfg:' .. tenant, 'maxDiskMb') or '') or dmax
if cap > dmax then cap = dmax end
local disk = ddef
if ask ~= '' then
  if tonumber(ask) > cap then return { 'disk', cap } end
  disk = tonumber(ask)
elseif disk > cap then
  disk = cap
end
if disk ~= ddef then pool_image = '' end
-- a tenant's own maxSandboxes (broker-admin tenant set) overrides the default
max = tonumber(redis.call('HGET', P .. 'tenantcfg:' .. tenant, 'maxSandboxes') or '') or max
local idx = P .. 'tenant:' .. tenant
local live = 0
for _, other in ipairs(redis.call('ZRANGE', idx, 0, -1)) do
  local st = redis.call('HGET', sandbox_key(other), 'state')
  if not st then
    redis.call('ZREM', idx, other) -- its record expired
  elseif st ~= 'Terminated' and st ~= 'Failed' then
    live = live + 1
  end
end
if live >= max then return { 'limit', live } end
local fields = {}
for i = 15, #ARGV do table.insert(fields, ARGV[i]) end
local ref, warm = '', nil
if pool_image ~= '' then
  local want = {}
  for i = 1, #fields - 1, 2 do want[fields[i]] = fields[i + 1] end
  local id, r, limits = wpool_take(pool_image, (want.nanoCpus and want.memoryBytes and want.pids) and
    (want.nanoCpus .. ',' .. want.memoryBytes .. ',' .. want.pids) or nil)
  if id then sid, ref, warm = id, r, limits end
end
local answer_by = now + unanswered
redis.call('HSET', sandbox_key(sid), 'sandboxId', sid, 'tenant', tenant, 'mode', 'exclusive',
  'createdAt', now, 'ref', ref, 'expiresAt', timeout == '' and '' or (now + tonumber(timeout)),
  'diskMb', disk, 'answerBy', answer_by, unpack(fields))
if warm then redis.call('HSET', sandbox_key(sid), 'poolLimits', warm, 'poolRef', pool_image) end
sandbox_set_state(sid, 'Pending', 'CREATING', 'waiting for admission', now)
redis.call('ZADD', K_SANDBOXES, now, sid)
redis.call('ZADD', idx, now, sid)
redis.call('ZADD', K_UNANSWERED, answer_by, sid)
if key ~= '' then
  redis.call('HSET', ikeys, key, sid .. ' ' .. fp)
  redis.call('ZADD', iidx, now, key)
  local over = redis.call('ZCARD', iidx) - key_max
  if over > 0 then
    for _, k in ipairs(redis.call('ZRANGE', iidx, 0, over - 1)) do redis.call('HDEL', ikeys, k) end
    redis.call('ZREMRANGEBYRANK', iidx, 0, over - 1)
  end
  -- a tenant that stops creating leaves nothing behind
  redis.call('PEXPIRE', ikeys, key_ttl)
  redis.call('PEXPIRE', iidx, key_ttl)
end
return { 'ok', sid, ref }
