-- release: ARGV = prefix, userId, sessionId
-- Returns {'released', leaseId, freed (0|1)} | {'notfound'}
local user, session = ARGV[2], ARGV[3]
local id = redis.call('GET', session_key(user, session))
if not id or redis.call('EXISTS', lease_key(id)) == 0 then return { 'notfound' } end
local freed = release_lease(id)
return { 'released', id, freed and 1 or 0 }
