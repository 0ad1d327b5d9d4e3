-- snapshot_reap: which snapshot images the reconciler removes. ARGV = prefix, staleMs,
--   snapshotId... (the ids on the images the backend holds, PROVIDER_LABEL_SNAPSHOT)
-- An image is its snapshot's as long as the record is Creating, Ready or Deleting (the
-- delete removes it itself). A record Creating for longer than staleMs lost its
-- committer: it turns Failed here (snapshot_settle_lost), as a read would turn it. The
-- image of a Failed snapshot, or of one whose record is gone (deleted while a sandbox ran
-- from it, or a Failed record that expired), is nobody's.
-- Returns one verdict per id, in order: 'remove' | 'keep'.
local stale, now = tonumber(ARGV[2]), now_ms()
local out = {}
for i = 3, #ARGV do
  local key = P .. 'snapshot:' .. ARGV[i]
  local h = redis.call('HMGET', key, 'state', 'lastTransitionAt')
  snapshot_settle_lost(key, h[1], h[2], stale, now)
  local st = redis.call('HGET', key, 'state')
  table.insert(out, (not st or st == 'Failed') and 'remove' or 'keep')
end
return out
