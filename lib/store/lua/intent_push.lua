-- intent_push: hand a lease whose caller prepared its sandbox's image (an
-- OpenSandbox create with image.auth: the handler pulled with the
-- credentials, which are never stored) to the supervisors' workers.
-- ARGV = prefix, leaseId
-- Returns 1 when queued, 0 when the lease is no longer 'provisioning'.
local id = ARGV[2]
if redis.call('HGET', lease_key(id), 'state') ~= 'provisioning' then return 0 end
redis.call('ZADD', K_PROV, now_ms(), id)
redis.call('RPUSH', K_INTENTS, id)
redis.call('PUBLISH', K_WAKE, 'intent')
return 1
