-- sandbox_claim: give a lease its sandbox. ARGV = prefix, leaseId, newSandboxId,
--   image, multiUserImage, nanoCpus, memoryBytes, pids, provider, poolImage,
--   then the egress policies: default, exclusive, user_shared, multi_user_shared
--   (normalized JSON; '' = the default), and the pool policies: a JSON object
--   poolId or "<tenant>/<poolId>" -> normalized policy text ('' = none),
--   then the runtimes of new sandboxes of exclusive, user_shared, multi_user_shared,
--   then the warm pool members' runtime (SANDBOX_RUNTIME),
--   then SANDBOX_DISK_MB
-- The slot's sandbox if it has one; else a parked (Stopped) sandbox of the same
-- slot; else a new Pending record: with poolImage (the warm pool of image,
-- wpool.lua, named as POOL spells it, which may differ from image's own
-- spelling: "img" and "img:latest"; '' = none) and the mode's runtime the
-- members', the oldest ready
-- member is taken (its id and container become the sandbox's, record field
-- poolLimits = the limits it was made with), else a cold create. A new
-- record's field runtime is its mode's, its field diskMb SANDBOX_DISK_MB or its tenant's
-- maxDiskMb when lower (warm members have SANDBOX_DISK_MB: a record with another disk is a
-- cold create). Also sets the lease's workdir and Linux user, and
-- gives a sandbox without an egress policy (a new record, a pool member, a
-- record older than egress policies) the one of its multi_user_shared pool
-- (the tenant's own entry first, then the bare poolId), else of its mode; an OpenSandbox
-- record got its own at create time and keeps it.
-- Returns {'notfound'} (no lease) | {'gone'} (its OpenSandbox record was deleted)
--       | {'ok', sandboxId, state, ref, workdir, linuxUser, needs}
-- where needs is 'create', 'start' or 'none'.
local lease_id, new_sid, image = ARGV[2], ARGV[3], ARGV[4]
local l = redis.call('HMGET', lease_key(lease_id), 'slot', 'mode', 'userId', 'sessionId', 'seat', 'poolId')
if not l[1] then return { 'notfound' } end
local slot, mode, user, session, seat, pool = l[1], l[2], l[3], l[4], l[5], l[6]
local now = now_ms()
local sid = redis.call('HGET', slot_key(slot), 'sandboxId')
local want = redis.call('HGET', lease_key(lease_id), 'sandboxId')
if not sid and want and want ~= '' then
  -- an OpenSandbox create: its record was made at create time
  if redis.call('HGET', sandbox_key(want), 'state') ~= 'Pending' then return { 'gone' } end
  sid = want
  redis.call('HSET', sandbox_key(sid), 'slot', slot)
  sandbox_set_state(sid, 'Pending', 'CREATING', 'creating the sandbox', now)
  redis.call('HSET', slot_key(slot), 'sandboxId', sid)
end
if not sid then
  local parked = redis.call('GET', parked_key(slot))
  if parked and redis.call('HGET', sandbox_key(parked), 'state') == 'Stopped' then
    sid = parked
    redis.call('DEL', parked_key(slot))
    redis.call('ZREM', K_PARKED, sid)
    sandbox_set_state(sid, 'Pending', 'STARTING', 'restarting a kept sandbox', now)
  else
    sid = new_sid
    if mode == 'multi_user_shared' then image = ARGV[5] end
    local runtime = ({ exclusive = ARGV[16], user_shared = ARGV[17],
                       multi_user_shared = ARGV[18] })[mode] or ARGV[19]
    local ref, warm = '', nil
    local disk = tonumber(ARGV[20])
    local tenant = string.match(user or '', '^(.-)/')
    local tcap = tenant and tonumber(redis.call('HGET', P .. 'tenantcfg:' .. tenant, 'maxDiskMb') or '')
    if disk > 0 and tcap and tcap < disk then disk = tcap end
    if ARGV[10] ~= '' and mode ~= 'multi_user_shared' and runtime == ARGV[19] and disk == tonumber(ARGV[20]) then
      local id, r, limits = wpool_take(ARGV[10], ARGV[6] .. ',' .. ARGV[7] .. ',' .. ARGV[8])
      if id then sid, ref, warm = id, r, limits end
    end
    redis.call('HSET', sandbox_key(sid), 'sandboxId', sid, 'slot', slot, 'mode', mode,
      'userId', mode == 'multi_user_shared' and '' or user, 'poolId', pool, 'image', image,
      'nanoCpus', ARGV[6], 'memoryBytes', ARGV[7], 'pids', ARGV[8], 'provider', ARGV[9],
      'createdAt', now, 'ref', ref, 'runtime', runtime, 'diskMb', disk)
    if warm then
      redis.call('HSET', sandbox_key(sid), 'poolLimits', warm)
      sandbox_set_state(sid, 'Pending', 'STARTING', 'claimed from the warm pool', now)
    else
      sandbox_set_state(sid, 'Pending', 'CREATING', 'creating the sandbox', now)
    end
    redis.call('ZADD', K_SANDBOXES, now, sid)
  end
  redis.call('HSET', slot_key(slot), 'sandboxId', sid)
end
local workdir, linux_user = '/workspace', 'root'
if mode == 'user_shared' then
  workdir = '/workspace/' .. session
elseif mode == 'multi_user_shared' then
  linux_user = 'sbu' .. seat
  workdir = '/home/' .. linux_user
end
redis.call('HSET', lease_key(lease_id), 'sandboxId', sid, 'workdir', workdir, 'linuxUser', linux_user)
local e = redis.call('HMGET', sandbox_key(sid), 'egress_policy', 'mode', 'poolId')
if not e[1] or e[1] == '' then
  local by_mode = { exclusive = ARGV[12], user_shared = ARGV[13], multi_user_shared = ARGV[14] }
  local pol = by_mode[e[2] or '']
  if e[2] == 'multi_user_shared' and e[3] and e[3] ~= '' and ARGV[15] ~= '' then
    local by_pool = cjson.decode(ARGV[15])
    local bare = string.match(e[3], '/(.*)$') or e[3]
    local p = by_pool[e[3]] or by_pool[bare]
    if type(p) == 'string' and p ~= '' then pol = p end
  end
  if not pol or pol == '' then pol = ARGV[11] end
  if pol ~= '' then redis.call('HSET', sandbox_key(sid), 'egress_policy', pol) end
end
local s = redis.call('HMGET', sandbox_key(sid), 'state', 'ref', 'reason')
local needs = 'none'
if s[1] == 'Pending' then needs = (s[2] == nil or s[2] == '') and 'create' or 'start' end
return { 'ok', sid, s[1], s[2] or '', workdir, linux_user, needs }
