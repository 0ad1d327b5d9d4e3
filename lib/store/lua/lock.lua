-- lock: ARGV = prefix, name, token, ttlMs [, 'renew']. Takes P..lock:<name>
-- if free; with 'renew' only extends it if it is still ours (the lock
-- keeper: a lock its holder dropped is never taken again by it).
-- Returns 1 if taken (or already ours), 0 if another holder has it.
local key = P .. 'lock:' .. ARGV[2]
if ARGV[5] == 'renew' then
  if redis.call('GET', key) == ARGV[3] then
    redis.call('PEXPIRE', key, ARGV[4])
    return 1
  end
  return 0
end
if redis.call('SET', key, ARGV[3], 'NX', 'PX', ARGV[4]) then return 1 end
if redis.call('GET', key) == ARGV[3] then
  redis.call('PEXPIRE', key, ARGV[4])
  return 1
end
return 0
