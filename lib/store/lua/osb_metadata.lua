-- osb_metadata: JSON Merge Patch (RFC 7396) of a sandbox's flat metadata, atomically.
-- ARGV = prefix, sandboxId, tenant, maxBytes, patch (a JSON object whose values are
--   strings, already checked by the caller, or null to delete a key)
-- Returns {'ok', record (HGETALL)} | {'notfound'} | {'toolarge'}
-- Read, merge and write happen in one script, so two concurrent patches
-- both land (no lost update).
local sid, tenant, max = ARGV[2], ARGV[3], tonumber(ARGV[4])
local h = redis.call('HMGET', sandbox_key(sid), 'tenant', 'metadata')
if not h[1] or h[1] ~= tenant then return { 'notfound' } end
local ok, md = pcall(cjson.decode, h[2] or '{}')
if not ok or type(md) ~= 'table' then md = {} end
local patch = cjson.decode(ARGV[5])
for k, v in pairs(patch) do
  if v == cjson.null then md[k] = nil else md[k] = v end
end
local text = next(md) == nil and '{}' or cjson.encode(md)
if #text > max then return { 'toolarge' } end
redis.call('HSET', sandbox_key(sid), 'metadata', text)
return { 'ok', redis.call('HGETALL', sandbox_key(sid)) }
