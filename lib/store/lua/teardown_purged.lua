-- teardown_purged: the container of a Failed sandbox handed out as a 'purge'
-- (teardown_take) is removed. ARGV = prefix, sandboxId
-- Takes it off P..teardown:busy and forgets the teardown; the record stays
-- Failed, with its reason and message. Returns 1
local sid = ARGV[2]
redis.call('LREM', K_TEARDOWN .. ':busy', 0, sid)
if redis.call('EXISTS', sandbox_key(sid)) == 1 then redis.call('HDEL', sandbox_key(sid), 'teardown') end
return 1
