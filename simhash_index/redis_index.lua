-- The server side of simhash_index.redis_index: each call runs atomically in Redis.
-- ARGV[1] is the command, ARGV[2] the key prefix; the key layout is described in redis_index.py.
-- Fingerprints and text hashes travel as 16 lower-case hex digits, '' meaning none. Lua numbers
-- are doubles, so 64-bit values are compared as two 32-bit halves with the `bit` library.

local command, P = ARGV[1], ARGV[2]

local function popcount(x)  -- bits set in a 32-bit value (bit ops work modulo 2^32)
  x = x - bit.band(bit.rshift(x, 1), 0x55555555)
  x = bit.band(x, 0x33333333) + bit.band(bit.rshift(x, 2), 0x33333333)
  x = bit.band(x + bit.rshift(x, 4), 0x0F0F0F0F)
  x = x + bit.rshift(x, 8)
  x = x + bit.rshift(x, 16)
  return bit.band(x, 0x3F)
end

local function halves(hex)
  return tonumber(string.sub(hex, 1, 8), 16), tonumber(string.sub(hex, 9, 16), 16)
end

local function weight(hex)  -- the popcount of a fingerprint: the score in its block sets
  local high, low = halves(hex)
  return popcount(high) + popcount(low)
end

local function distance(a, b)
  local ah, al = halves(a)
  local bh, bl = halves(b)
  return popcount(bit.bxor(ah, bh)) + popcount(bit.bxor(al, bl))
end

local function similarity(a, b)  -- as simhash_index.sketch.similarity: agreeing slots, less chance
  local x, y = {string.byte(a, 1, -1)}, {string.byte(b, 1, -1)}
  local agree = 0
  for i = 1, #x do
    if x[i] == y[i] then agree = agree + 1 end
  end
  local chance = 1 / 256
  return math.max(0.0, (agree / #x - chance) / (1 - chance))
end

local function block_key(fp, i)  -- block i holds bits 16i..16i+15: hex digits 13-4i to 16-4i
  return P .. 'block:' .. i .. ':' .. string.sub(fp, 13 - 4 * i, 16 - 4 * i)
end

local function doc_key(id)
  return P .. 'doc:' .. id
end

-- A stored page leaves its block and text sets (before it is rewritten).
local function unindex(id)
  local old = redis.call('HMGET', doc_key(id), 'fingerprint', 'text_hash', 'exact_only')
  if old[1] and not old[3] then
    for i = 0, 3 do
      redis.call('ZREM', block_key(old[1], i), old[1] .. ':' .. id)
    end
  end
  if old[2] then
    redis.call('ZREM', P .. 'text:' .. old[2], id)
  end
end

-- Writes page `id` and enters it in its block sets (unless exact-only) and its text set.
local function put(id, key, fp, th, sketch, exact_only, now)
  local doc = doc_key(id)
  redis.call('DEL', doc)
  local fields = {'key', key, 'stored_at', now}
  if fp ~= '' then table.insert(fields, 'fingerprint'); table.insert(fields, fp) end
  if th ~= '' then table.insert(fields, 'text_hash'); table.insert(fields, th) end
  if sketch ~= '' then table.insert(fields, 'sketch'); table.insert(fields, sketch) end
  if fp ~= '' and exact_only == '1' then table.insert(fields, 'exact_only'); table.insert(fields, '1') end
  redis.call('HSET', doc, unpack(fields))
  if fp ~= '' and exact_only ~= '1' then
    local score = weight(fp)
    for i = 0, 3 do
      redis.call('ZADD', block_key(fp, i), score, fp .. ':' .. id)
    end
  end
  if th ~= '' then
    redis.call('ZADD', P .. 'text:' .. th, id, id)
  end
end

-- Stores a page under its key, replacing the page stored with that key; returns its id.
local function store(key, fp, th, sketch, exact_only, now)
  local id = redis.call('HGET', P .. 'ids', key)
  if id then
    unindex(id)
  else
    id = redis.call('INCR', P .. 'next_id')
    redis.call('HSET', P .. 'ids', key, id)
  end
  put(id, key, fp, th, sketch, exact_only, now)
  return id
end

-- {id, distance, fingerprint} of the pages within max_distance, nearest first, then oldest first.
-- A page within 3 bits shares a block; its popcount is within max_distance of the query's.
local function near(fp, max_distance)
  local w = weight(fp)
  local seen, found = {}, {}
  for i = 0, 3 do
    local members = redis.call('ZRANGEBYSCORE', block_key(fp, i), w - max_distance, w + max_distance)
    for _, member in ipairs(members) do
      local id = string.sub(member, 18)
      if not seen[id] then  -- a page sharing several blocks comes once per block
        seen[id] = true
        local stored = string.sub(member, 1, 16)
        local d = distance(fp, stored)
        if d <= max_distance then
          table.insert(found, {tonumber(id), d, stored})
        end
      end
    end
  end
  table.sort(found, function(a, b)
    if a[2] ~= b[2] then return a[2] < b[2] end
    return a[1] < b[1]
  end)
  return found
end

local function forget_duplicate(key)
  local did = redis.call('HGET', P .. 'dup_ids', key)
  if did then
    redis.call('HDEL', P .. 'dup_ids', key)
    redis.call('ZREM', P .. 'dup_log', did)
    redis.call('DEL', P .. 'dup:' .. did)
  end
end

-- Logs `key` as a duplicate; a key logged before keeps its place in the log.
local function log_duplicate(key, match, now)
  local did = redis.call('HGET', P .. 'dup_ids', key)
  if not did then
    did = redis.call('INCR', P .. 'next_dup')
    redis.call('HSET', P .. 'dup_ids', key, did)
    redis.call('ZADD', P .. 'dup_log', did, did)
  end
  redis.call('HSET', P .. 'dup:' .. did, 'key', key, 'duplicate_of', match.key, 'duplicate_of_id', match.id,
    'distance', match.distance, 'exact', match.exact, 'seen_at', now)
end

-- The stored page a new page duplicates: the same text first, else the nearest verified candidate.
local function find_match(fp, th, sketch, exact_only, max_distance, min_similarity)
  if th ~= '' then
    local first = redis.call('ZRANGE', P .. 'text:' .. th, 0, 0)[1]
    if first then
      local doc = redis.call('HMGET', doc_key(first), 'key', 'fingerprint')
      local d = 0
      if doc[2] and fp ~= '' then d = distance(doc[2], fp) end
      return {id = first, key = doc[1], fingerprint = doc[2] or '', distance = d, exact = 1, sketch = ''}
    end
  end
  if fp == '' or exact_only == '1' then return nil end
  for _, candidate in ipairs(near(fp, max_distance)) do
    local id, verified, accepted = candidate[1], '', true
    if sketch ~= '' then
      local stored = redis.call('HGET', doc_key(id), 'sketch')
      if stored and #stored == #sketch then
        verified = stored
        accepted = similarity(sketch, stored) >= min_similarity
      end
    end
    if accepted then
      local key = redis.call('HGET', doc_key(id), 'key')
      return {id = id, key = key, fingerprint = candidate[3], distance = candidate[2], exact = 0, sketch = verified}
    end
  end
  return nil
end

if command == 'check' then
  -- key, fingerprint, text_hash, sketch, exact_only, max_distance, min_similarity, now
  local key, fp, th, sketch, exact_only = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
  local max_distance, min_similarity, now = tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10]
  local id = redis.call('HGET', P .. 'ids', key)
  if id then  -- never a duplicate of itself: follow its new content
    local old = redis.call('HMGET', doc_key(id), 'fingerprint', 'text_hash')
    if (old[1] or '') ~= fp or (old[2] or '') ~= th then
      unindex(id)
      put(id, key, fp, th, sketch, exact_only, now)
    end
    return false
  end
  local match = find_match(fp, th, sketch, exact_only, max_distance, min_similarity)
  if not match then
    forget_duplicate(key)
    store(key, fp, th, sketch, exact_only, now)
    return false
  end
  log_duplicate(key, match, now)
  return {match.key, match.fingerprint, match.distance, match.exact, match.sketch}
elseif command == 'store' then
  -- key, fingerprint, text_hash, sketch, exact_only, now
  return store(ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8])
elseif command == 'near' then
  -- fingerprint, max_distance: {key, fingerprint, distance} of each page near it
  local out = {}
  for _, candidate in ipairs(near(ARGV[3], tonumber(ARGV[4]))) do
    table.insert(out, {redis.call('HGET', doc_key(candidate[1]), 'key'), candidate[3], candidate[2]})
  end
  return out
elseif command == 'get' then
  -- key: {fingerprint} of the page stored with it, or nil
  local id = redis.call('HGET', P .. 'ids', ARGV[3])
  if not id then return false end
  return {redis.call('HGET', doc_key(id), 'fingerprint') or ''}
elseif command == 'open' then
  -- schema_version, scheme, create: records what is missing when asked to; returns what is recorded
  if ARGV[5] == '1' then
    redis.call('HSETNX', P .. 'meta', 'schema_version', ARGV[3])
    redis.call('HSETNX', P .. 'meta', 'scheme', ARGV[4])
  end
  return redis.call('HMGET', P .. 'meta', 'schema_version', 'scheme')
end
return redis.error_reply('simhash_index: unknown command ' .. tostring(command))
