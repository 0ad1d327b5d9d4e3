-- unlock: ARGV = prefix, name, token. Releases P..lock:<name> only if ours.
local key = P .. 'lock:' .. ARGV[2]
if redis.call('GET', key) == ARGV[3] then return redis.call('DEL', key) end
return 0
