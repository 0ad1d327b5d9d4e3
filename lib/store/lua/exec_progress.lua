-- exec_progress: the output so far of a running command's record.
-- ARGV = prefix, leaseId, execId, output (the last bytes of stdout+stderr),
-- outputBytes (every byte seen so far)
-- Returns 1, or 0 when the record is gone or no longer running.
local key = exec_key(ARGV[2], ARGV[3])
if redis.call('HGET', key, 'state') ~= 'running' then return 0 end
redis.call('HSET', key, 'output', ARGV[4], 'outputBytes', ARGV[5])
return 1
