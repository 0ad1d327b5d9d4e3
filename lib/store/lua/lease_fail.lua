-- lease_fail: a lease whose sandbox could not be made. ARGV = prefix, leaseId, message
-- Releases it (its sandbox is removed) and marks the ticket it came from failed,
-- so a polling client learns why. Returns {'released', freed} | {'notfound'}
local id, message = ARGV[2], ARGV[3]
local ticket = redis.call('HGET', lease_key(id), 'ticketId')
if redis.call('EXISTS', lease_key(id)) == 0 then return { 'notfound' } end
local freed = release_lease(id, 'remove', 'PROVISION_FAILED')
if ticket and ticket ~= '' then
  redis.call('HSET', ticket_key(ticket), 'state', 'failed', 'message', message)
  ticket_done(ticket)
end
return { 'released', freed and 1 or 0 }
