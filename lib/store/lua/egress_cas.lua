-- egress_cas: replace a sandbox's egress policy if it is still the one the
-- caller read (compare and set), so that read-merge-write in C
-- (egress_store.c) loses no concurrent change: a loser reads again.
-- ARGV = prefix, sandboxId, expected ('' = the record has none), new (normalized JSON)
-- Returns {'ok'} | {'conflict'} | {'notfound'}
local sid = ARGV[2]
local h = redis.call('HMGET', sandbox_key(sid), 'sandboxId', 'egress_policy', 'state')
if not h[1] or h[3] == 'Terminated' then return { 'notfound' } end
if (h[2] or '') ~= ARGV[3] then return { 'conflict' } end
redis.call('HSET', sandbox_key(sid), 'egress_policy', ARGV[4])
return { 'ok' }
