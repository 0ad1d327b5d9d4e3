-- template_get: a tenant's template. ARGV = prefix, templateId, tenant
-- Returns {'ok', spec, createdAt, updatedAt} | {'notfound'} (unknown, or another tenant's)
local h = redis.call('HMGET', P .. 'template:' .. ARGV[2], 'tenant', 'spec', 'createdAt', 'updatedAt')
if not h[1] or h[1] ~= ARGV[3] then return { 'notfound' } end
return { 'ok', h[2] or '', h[3] or '0', h[4] or '0' }
