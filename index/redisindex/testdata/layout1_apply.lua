local function versionOf(value)
  local sep = string.find(value, '|', 1, true)
  if sep then return string.sub(value, 1, sep - 1) end
  return value
end
local floor, ttl, out = redis.call('GET', KEYS[1]), ARGV[1], {}
if floor then floor = versionOf(floor) end
local function apply(k, m, a)
  local vkey, rkey, id, value = KEYS[k], KEYS[k + 1], ARGV[a + 1], ARGV[a + 2]
  local ver = string.match(value, '^(.*)|') or value
  if floor and ver < floor then return 0 end
  local got = redis.call('MGET', vkey, rkey)
  if got[1] and not (ver > versionOf(got[1])) then return 0 end
  local rel, newRel, del = got[2], ARGV[a + 4], m < 0
  if rel and (del or rel ~= newRel) then
    local isNew = {}
    for i = k + 2, k + 1 + m do isNew[KEYS[i]] = true end
    for _, key in ipairs(cjson.decode(rel)) do
      if not isNew[key] then redis.call('HDEL', key, id) end
    end
  end
  if del then
    if rel then redis.call('DEL', rkey) end
  else
    local row = ARGV[a + 3]
    for i = k + 2, k + 1 + m do redis.call('HSET', KEYS[i], id, row) end
    if rel ~= newRel then redis.call('SET', rkey, newRel) end
  end
  redis.call('SET', vkey, value, 'PX', ttl)
  return 1
end
local k, a, n = 2, 2, #ARGV
while a <= n do
  local m = tonumber(ARGV[a])
  out[#out + 1] = apply(k, m, a)
  k, a = k + 2 + math.max(m, 0), a + 5
end
return out
