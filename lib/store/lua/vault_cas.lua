-- vault_cas: replace a sandbox's Credential Vault if it is still the one the
-- caller read (compare and set), so that read-change-write in C
-- (vault_store.c) loses no concurrent change: a loser reads again.
-- ARGV = prefix, sandboxId, expected ('' = none), new ('' = remove the vault)
-- Returns {'ok'} | {'conflict'} | {'notfound'}
local key = sandbox_key(ARGV[2])
local h = redis.call('HMGET', key, 'sandboxId', 'vault', 'state')
if not h[1] or h[3] == 'Terminated' then return { 'notfound' } end
if (h[2] or '') ~= ARGV[3] then return { 'conflict' } end
if ARGV[4] == '' then
  redis.call('HDEL', key, 'vault')
else
  redis.call('HSET', key, 'vault', ARGV[4])
end
return { 'ok' }
