-- exec_get: a lease's exec record, as tenant sees it through sandboxId.
-- ARGV = prefix, leaseId, execId, tenant, sandboxId
-- Returns {'notfound'} (none, expired, or not this tenant's or sandbox's)
--       | {state, startedAt, output, outputBytes, exitCode, stdout, stderr,
--          stdoutTruncated, stderrTruncated, timedOut, durationMs, message}
--         (fields the state has not are false)
local r = redis.call('HMGET', exec_key(ARGV[2], ARGV[3]), 'tenant', 'sandboxId', 'state',
  'startedAt', 'output', 'outputBytes', 'exitCode', 'stdout', 'stderr', 'stdoutTruncated',
  'stderrTruncated', 'timedOut', 'durationMs', 'message')
if not r[3] or r[1] ~= ARGV[4] or r[2] ~= ARGV[5] then return { 'notfound' } end
return { r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14] }
