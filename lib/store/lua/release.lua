-- release: ARGV = prefix, userId, sessionId, sandboxAction ('stop'|'remove'), reason
-- Returns {'released', leaseId, freed (0|1)} | {'notfound'}
local user, session, action, reason = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local id = redis.call('GET', session_key(user, session))
if not id or redis.call('EXISTS', lease_key(id)) == 0 then return { 'notfound' } end
local freed = release_lease(id, action, reason)
return { 'released', id, freed and 1 or 0 }
