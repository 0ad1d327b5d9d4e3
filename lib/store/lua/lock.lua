-- lock: ARGV = prefix, name, token, ttlMs. Takes P..lock:<name> if free.
-- Returns 1 if taken (or already ours), 0 if another holder has it.
local key = P .. 'lock:' .. ARGV[2]
if redis.call('SET', key, ARGV[3], 'NX', 'PX', ARGV[4]) then return 1 end
if redis.call('GET', key) == ARGV[3] then
  redis.call('PEXPIRE', key, ARGV[4])
  return 1
end
return 0
