-- egress_init: give a lease's sandbox its egress policy when it has none (a
-- new record, a warm-pool member, a record older than egress policies). An
-- OpenSandbox record got its own at create time and keeps it, as does a
-- sandbox that goes on to its slot's next lease.
-- ARGV = prefix, sandboxId, default policy, then the policies of the modes
--   exclusive, user_shared, multi_user_shared ('' = the default); normalized JSON
-- Returns {'set'} | {'kept'} | {'notfound'}
local sid = ARGV[2]
local h = redis.call('HMGET', sandbox_key(sid), 'sandboxId', 'egress_policy', 'mode')
if not h[1] then return { 'notfound' } end
if h[2] and h[2] ~= '' then return { 'kept' } end
local by_mode = { exclusive = ARGV[4], user_shared = ARGV[5], multi_user_shared = ARGV[6] }
local pol = by_mode[h[3] or '']
if not pol or pol == '' then pol = ARGV[3] end
redis.call('HSET', sandbox_key(sid), 'egress_policy', pol)
return { 'set' }
