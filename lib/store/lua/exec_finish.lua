-- exec_finish: a running command's record gets its end: 'done' with the
-- result, or 'failed' with a message; it then lives ttlMs more.
-- ARGV = prefix, leaseId, execId, state ('done'|'failed'), ttlMs, message,
-- exitCode, stdout, stderr, stdoutTruncated, stderrTruncated, timedOut,
-- durationMs (the result fields are ignored for 'failed')
-- Returns 1, or 0 when the record is gone (expired, or its lease released):
-- it is not made again.
local lease, eid, state, ttl = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local key, idx = exec_key(lease, eid), execs_key(lease)
if redis.call('HGET', key, 'state') ~= 'running' then return 0 end
redis.call('HDEL', key, 'output', 'outputBytes')
if state == 'done' then
  redis.call('HSET', key, 'state', 'done', 'exitCode', ARGV[7], 'stdout', ARGV[8],
    'stderr', ARGV[9], 'stdoutTruncated', ARGV[10], 'stderrTruncated', ARGV[11],
    'timedOut', ARGV[12], 'durationMs', ARGV[13])
else
  redis.call('HSET', key, 'state', 'failed', 'message', ARGV[6])
end
redis.call('HSET', key, 'finishedAt', now_ms())
redis.call('PEXPIRE', key, ttl)
-- the index lives as long as its longest-lived record (at most the cap's worth of them)
local keep = 0
for _, m in ipairs(redis.call('ZRANGE', idx, 0, -1)) do
  local left = redis.call('PTTL', exec_key(lease, m))
  if left == -2 then redis.call('ZREM', idx, m) elseif left > keep then keep = left end
end
if keep > 0 then redis.call('PEXPIRE', idx, keep) else redis.call('DEL', idx) end
return 1
