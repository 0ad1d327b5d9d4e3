-- lease_activate: a lease whose sandbox is ready. ARGV = prefix, leaseId
-- Returns {'ok', lease-hash...} | {'notfound'}
local id = ARGV[2]
if redis.call('EXISTS', lease_key(id)) == 0 then return { 'notfound' } end
redis.call('HSET', lease_key(id), 'state', 'active')
redis.call('ZREM', K_PROV, id)
ticket_done(redis.call('HGET', lease_key(id), 'ticketId'))
return { 'ok', redis.call('HGETALL', lease_key(id)) }
