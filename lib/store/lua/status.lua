-- status: ARGV = prefix. Returns {activeSlots, activeLeases, queueDepth, modes-hash...}
return { redis.call('SCARD', K_ACTIVE), redis.call('ZCARD', K_LEASES),
  redis.call('ZCARD', K_QUEUE), redis.call('HGETALL', K_MODES) }
