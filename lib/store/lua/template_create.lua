-- template_create: store a tenant's new template (lib/sandbox/template_store.c).
-- ARGV = prefix, templateId, tenant, spec (the stored form, JSON), maxPerTenant
-- Returns {'ok', createdAt} | {'limit', n} (the tenant has maxPerTenant templates)
--       | {'exists'} (the id is taken: the caller draws another)
-- Data: P..template:<id> HASH id, tenant, spec, createdAt, updatedAt
--       P..templates:<tenant> ZSET templateId -> createdAt
local id, tenant, spec, max = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local key, idx = P .. 'template:' .. id, P .. 'templates:' .. tenant
if redis.call('EXISTS', key) == 1 then return { 'exists' } end
local n = redis.call('ZCARD', idx)
if n >= max then return { 'limit', n } end
local now = now_ms()
redis.call('HSET', key, 'id', id, 'tenant', tenant, 'spec', spec, 'createdAt', now, 'updatedAt', now)
redis.call('ZADD', idx, now, id)
return { 'ok', tostring(now) }
