-- cancel: ARGV = prefix, ticketId. Takes back a ticket that could not be
-- queued in Kafka, as if the acquire never happened. Returns {'cancelled'|'notqueued'}.
local tid = ARGV[2]
local t = redis.call('HMGET', ticket_key(tid), 'state', 'userId', 'sessionId')
if t[1] ~= 'queued' then return { 'notqueued' } end
ticket_unqueue(tid, t[2], t[3])
redis.call('DEL', ticket_key(tid))
return { 'cancelled' }
