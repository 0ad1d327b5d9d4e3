-- template_delete: remove a tenant's template. Sandboxes made from it keep
-- running: a create copied what it needed. ARGV = prefix, templateId, tenant
-- Returns {'ok'} | {'notfound'} (unknown, or another tenant's)
local key = P .. 'template:' .. ARGV[2]
if redis.call('HGET', key, 'tenant') ~= ARGV[3] then return { 'notfound' } end
redis.call('DEL', key)
redis.call('ZREM', P .. 'templates:' .. ARGV[3], ARGV[2])
return { 'ok' }
