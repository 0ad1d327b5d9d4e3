-- vault_get: a sandbox's Credential Vault (lib/sandbox/vault_store.c), the
-- field `vault` of its record; a Terminated record has none to show.
-- ARGV = prefix, sandboxId
-- Returns {'ok', text ('' = no vault)} | {'notfound'}
local h = redis.call('HMGET', sandbox_key(ARGV[2]), 'sandboxId', 'vault', 'state')
if not h[1] or h[3] == 'Terminated' then return { 'notfound' } end
return { 'ok', h[2] or '' }
