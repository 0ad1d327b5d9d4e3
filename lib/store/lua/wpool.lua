-- wpool: the warm pool's bookkeeping (lib/sandbox/pool.h). ARGV = prefix, op, ...
-- Keys (P = prefix; distinct from P..pool:<pool>, the multi_user_shared slots):
--   P..wpool:<image>     ZSET  ready members -> createdAt (sandbox_claim pops the oldest)
--   P..wpoolall:<image>  ZSET  every member of the image, creating or ready -> createdAt
--   P..wpool:all         ZSET  every member of any image -> createdAt (age scan)
--   P..wpoolm:<sid>      HASH  image, state (creating|ready), ref, createdAt, limits,
--                              imageId (what the image name named when it was made; '' unknown)
--   P..wpoolstat:<image> HASH  warm, cold (claims), lastRefillAt, refillMs, error,
--                              failures, backoffUntil
-- A member is the supervisor's until a claim removes it from every set
-- (one script: never handed twice); its container is then the claimed
-- sandbox's, with the same id.
--
-- ops:
--   alive owner ttlMs           -> 1       (a refilling supervisor's heartbeat)
--   reserve image sid owner     -> 1       (before the container is made)
--   ready sid ref limits imageId -> 1 | 0  (0: dropped meanwhile, remove it)
--   drop sid                    -> ref | '' | false (false: claimed or gone)
--   scan limit                  -> {sid, image, createdAt, state, ownerAlive, imageId, ...} oldest first
--   count image                 -> {all, ready}
--   stat image field value ...  -> 1
--   member sid                  -> 1 | 0   (is sid a pool member?)
local op = ARGV[2]
local function mkey(sid) return P .. 'wpoolm:' .. sid end
if op == 'alive' then
  redis.call('SET', P .. 'wpoolowner:' .. ARGV[3], '1', 'PX', ARGV[4])
  return 1
elseif op == 'reserve' then
  local image, sid, now = ARGV[3], ARGV[4], now_ms()
  redis.call('HSET', mkey(sid), 'image', image, 'state', 'creating', 'ref', '', 'createdAt', now,
    'owner', ARGV[5])
  redis.call('ZADD', P .. 'wpoolall:' .. image, now, sid)
  redis.call('ZADD', P .. 'wpool:all', now, sid)
  return 1
elseif op == 'ready' then
  local sid = ARGV[3]
  local m = redis.call('HMGET', mkey(sid), 'image', 'createdAt', 'state')
  if not m[1] or m[3] ~= 'creating' then return 0 end
  redis.call('HSET', mkey(sid), 'state', 'ready', 'ref', ARGV[4], 'limits', ARGV[5],
    'imageId', ARGV[6] or '')
  redis.call('ZADD', P .. 'wpool:' .. m[1], m[2], sid)
  return 1
elseif op == 'drop' then
  local sid = ARGV[3]
  if redis.call('ZREM', P .. 'wpool:all', sid) == 0 then
    redis.call('DEL', mkey(sid))
    return false
  end
  local m = redis.call('HMGET', mkey(sid), 'image', 'ref')
  if m[1] then
    redis.call('ZREM', P .. 'wpool:' .. m[1], sid)
    redis.call('ZREM', P .. 'wpoolall:' .. m[1], sid)
  end
  redis.call('DEL', mkey(sid))
  return m[2] or ''
elseif op == 'scan' then
  local out = {}
  local ids = redis.call('ZRANGE', P .. 'wpool:all', 0, tonumber(ARGV[3]) - 1, 'WITHSCORES')
  for i = 1, #ids, 2 do
    local m = redis.call('HMGET', mkey(ids[i]), 'image', 'state', 'owner', 'imageId')
    out[#out + 1] = ids[i]
    out[#out + 1] = m[1] or ''
    out[#out + 1] = ids[i + 1]
    out[#out + 1] = m[2] or ''
    out[#out + 1] = tostring(m[3] and redis.call('EXISTS', P .. 'wpoolowner:' .. m[3]) or 0)
    out[#out + 1] = m[4] or ''
  end
  return out
elseif op == 'count' then
  local image = ARGV[3]
  return { redis.call('ZCARD', P .. 'wpoolall:' .. image), redis.call('ZCARD', P .. 'wpool:' .. image) }
elseif op == 'stat' then
  local k = P .. 'wpoolstat:' .. ARGV[3]
  for i = 4, #ARGV - 1, 2 do redis.call('HSET', k, ARGV[i], ARGV[i + 1]) end
  return 1
elseif op == 'member' then
  return redis.call('EXISTS', mkey(ARGV[3]))
end
return redis.error_reply('wpool: unknown op')
