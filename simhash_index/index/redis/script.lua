-- The server side of simhash_index.index.redis: each call runs atomically in Redis.
-- ARGV[1] is the command, ARGV[2] the key prefix; the key layout is docs/schema.md's.
-- `check` applies the rule of simhash_index/index/rule.py (the specification; a differential
-- test in tests/test_redis_index.py holds this copy to it).
-- Fingerprints and text hashes travel as 16 lower-case hex digits, '' meaning none. Lua numbers
-- are doubles, so 64-bit values are compared as two 32-bit halves with the `bit` library.

local command, P = ARGV[1], ARGV[2]

local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
local sub = string.sub

local function popcount(x)  -- bits set in a 32-bit value (bit ops work modulo 2^32)
  x = x - band(rshift(x, 1), 0x55555555)
  x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
  x = band(x + rshift(x, 4), 0x0F0F0F0F)
  x = x + rshift(x, 8)
  x = x + rshift(x, 16)
  return band(x, 0x3F)
end

local function halves(hex)
  return tonumber(sub(hex, 1, 8), 16), tonumber(sub(hex, 9, 16), 16)
end

local function weight(hex)  -- the popcount of a fingerprint: the score in its block sets
  local high, low = halves(hex)
  return popcount(high) + popcount(low)
end

local function distance(a, b)
  local ah, al = halves(a)
  local bh, bl = halves(b)
  return popcount(bxor(ah, bh)) + popcount(bxor(al, bl))
end

local function similarity(a, b)  -- as simhash_index.fingerprinting.sketch.estimate_jaccard: agreeing slots, less chance
  local x, y = {string.byte(a, 1, -1)}, {string.byte(b, 1, -1)}
  local agree = 0
  for i = 1, #x do
    if x[i] == y[i] then agree = agree + 1 end
  end
  local chance = 1 / 256
  return math.max(0.0, (agree / #x - chance) / (1 - chance))
end

local function block_set(i, value)  -- the set of block i's 16-bit value
  return P .. 'block:' .. i .. ':' .. string.format('%04x', value)
end

local function block_value(fp, i)  -- block i holds bits 16i..16i+15: hex digits 13-4i to 16-4i
  return tonumber(sub(fp, 13 - 4 * i, 16 - 4 * i), 16)
end

local function block_key(fp, i)
  return block_set(i, block_value(fp, i))
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

-- Writes page `id` (a new one, or one just unindexed) and enters it in its block sets
-- (unless exact-only) and its text set.
-- The sketch has a key of its own: in the hash, a 256-byte value would make Redis
-- give up the hash's compact encoding (hash-max-listpack-value is 64), doubling its size.
-- `merit`: {words, dated, modified} of the page ('' for not known), what a survivor policy compares.
local function put(id, key, fp, th, sketch, exact_only, now, replacing, merit)
  local doc = doc_key(id)
  if replacing then redis.call('DEL', doc, P .. 'sketch:' .. id) end
  if sketch ~= '' then redis.call('SET', P .. 'sketch:' .. id, sketch) end
  local fields = {'key', key, 'stored_at', now}
  if fp ~= '' then table.insert(fields, 'fingerprint'); table.insert(fields, fp) end
  if th ~= '' then table.insert(fields, 'text_hash'); table.insert(fields, th) end
  if fp ~= '' and exact_only == '1' then table.insert(fields, 'exact_only'); table.insert(fields, '1') end
  if merit[1] ~= '' then table.insert(fields, 'words'); table.insert(fields, merit[1]) end
  if merit[2] ~= '' then table.insert(fields, 'dated'); table.insert(fields, merit[2]) end
  if merit[3] ~= '' then table.insert(fields, 'modified'); table.insert(fields, merit[3]) end
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

-- The log ids of the duplicates logged against page `id` (kept with the log, so that the page
-- and its duplicates go in one atomic step).
local function against_key(id)
  return P .. 'against:' .. id
end

local function forget_duplicate(key)
  local did = redis.call('HGET', P .. 'dup_ids', key)
  if did then
    local target = redis.call('HGET', P .. 'dup:' .. did, 'duplicate_of_id')
    if target then redis.call('SREM', against_key(target), did) end
    redis.call('HDEL', P .. 'dup_ids', key)
    redis.call('ZREM', P .. 'dup_log', did)
    redis.call('DEL', P .. 'dup:' .. did)
  end
end

-- Stores a page under its key, replacing the page stored with that key, and takes the key
-- out of the duplicates log (a stored page is nobody's duplicate); returns its id.
local function store(key, fp, th, sketch, exact_only, now, merit)
  forget_duplicate(key)
  local id = redis.call('HGET', P .. 'ids', key)
  local replacing = id and true
  if replacing then
    unindex(id)
  else
    id = redis.call('INCR', P .. 'next_id')
    redis.call('HSET', P .. 'ids', key, id)
  end
  put(id, key, fp, th, sketch, exact_only, now, replacing, merit)
  return id
end

-- The keys of the block sets a lookup at max_distance probes (index/probes.py, the specification):
-- with max_distance = 4s + a, blocks 0..a at their value and every value up to s bits off, the
-- others up to s - 1 bits off (at most two bits: the index answers up to 8).
local function probed_block_keys(fp, max_distance)
  local s, a = math.floor(max_distance / 4), max_distance % 4
  local keys = {}
  for i = 0, 3 do
    local tolerance = (i <= a) and s or s - 1
    if tolerance >= 0 then
      local value = block_value(fp, i)
      table.insert(keys, block_set(i, value))
      for b = 0, (tolerance >= 1) and 15 or -1 do
        local flipped = bxor(value, bit.lshift(1, b))
        table.insert(keys, block_set(i, flipped))
        for c = b + 1, (tolerance >= 2) and 15 or -1 do
          table.insert(keys, block_set(i, bxor(flipped, bit.lshift(1, c))))
        end
      end
    end
  end
  return keys
end

-- {id, distance, fingerprint} of the pages within max_distance, nearest first, then oldest first.
-- Every such page is in a probed block set; its popcount is within max_distance of the query's.
local function near(fp, max_distance)
  local high, low = halves(fp)
  local w = popcount(high) + popcount(low)
  local seen, found = {}, {}
  for _, set in ipairs(probed_block_keys(fp, max_distance)) do
    local members = redis.call('ZRANGEBYSCORE', set, w - max_distance, w + max_distance)
    for _, member in ipairs(members) do  -- "<16 hex digits>:<id>"
      local d = popcount(bxor(high, tonumber(sub(member, 1, 8), 16)))
        + popcount(bxor(low, tonumber(sub(member, 9, 16), 16)))
      if d <= max_distance then
        local id = tonumber(sub(member, 18))
        if not seen[id] then  -- a page found by several probes comes once
          seen[id] = true
          table.insert(found, {id, d, sub(member, 1, 16)})
        end
      end
    end
  end
  if #found > 1 then
    table.sort(found, function(a, b)
      if a[2] ~= b[2] then return a[2] < b[2] end
      return a[1] < b[1]
    end)
  end
  return found
end

-- Logs `key` as a duplicate, with the evidence; a key logged before keeps its place in the log.
local function log_duplicate(key, fp, match, now, max_distance)
  local did = redis.call('HGET', P .. 'dup_ids', key)
  if not did then
    did = redis.call('INCR', P .. 'next_dup')
    redis.call('HSET', P .. 'dup_ids', key, did)
    redis.call('ZADD', P .. 'dup_log', did, did)
  end
  local entry = P .. 'dup:' .. did
  local target = redis.call('HGET', entry, 'duplicate_of_id')
  if target then redis.call('SREM', against_key(target), did) end
  redis.call('SADD', against_key(match.id), did)
  redis.call('DEL', entry)
  redis.call('HSET', entry, 'key', key, 'duplicate_of', match.key, 'duplicate_of_id', match.id,
    'distance', match.distance, 'exact', match.exact, 'seen_at', now, 'radius', max_distance)
  if fp ~= '' then redis.call('HSET', entry, 'fingerprint', fp) end
  if match.similarity ~= '' then redis.call('HSET', entry, 'similarity', match.similarity) end
end

-- Whether stored page `id` is in the window: stored at or after `since` (nil: no window).
local function within(id, since)
  return not since or tonumber(redis.call('HGET', doc_key(id), 'stored_at')) >= since
end

-- The oldest page with this text hash in the window (the whole set is read only with a window).
local function first_with_text(th, since)
  if not since then return redis.call('ZRANGE', P .. 'text:' .. th, 0, 0)[1] end
  for _, id in ipairs(redis.call('ZRANGE', P .. 'text:' .. th, 0, -1)) do
    if within(id, since) then return id end
  end
  return nil
end

-- The stored page a new page duplicates: the same text first, else the nearest verified candidate;
-- with a window, only pages stored at or after `since` count.
local function find_match(fp, th, sketch, exact_only, max_distance, min_similarity, since)
  if th ~= '' then
    local first = first_with_text(th, since)
    if first then
      local doc = redis.call('HMGET', doc_key(first), 'key', 'fingerprint')
      local d = 0
      if doc[2] and fp ~= '' then d = distance(doc[2], fp) end
      return {id = first, key = doc[1], fingerprint = doc[2] or '', distance = d, exact = 1, similarity = ''}
    end
  end
  if fp == '' or exact_only == '1' then return nil end
  for _, candidate in ipairs(near(fp, max_distance)) do
    local id, score, accepted = candidate[1], '', within(candidate[1], since)
    if accepted and sketch ~= '' then
      local stored = redis.call('GET', P .. 'sketch:' .. id)
      if stored and #stored == #sketch then
        local value = similarity(sketch, stored)
        score = string.format('%.17g', value)
        accepted = value >= min_similarity
      end
    end
    if accepted then
      local key = redis.call('HGET', doc_key(id), 'key')
      return {id = id, key = key, fingerprint = candidate[3], distance = candidate[2], exact = 0, similarity = score}
    end
  end
  return nil
end

-- Why the new page wins over stored page `id` under the survivor policy (index/prefer.py, the
-- specification): 'longer', 'newer', or nil when the stored page stays.
local function preferred(prefer, id, merit)
  if prefer == 'longest' then
    local stored = redis.call('HGET', doc_key(id), 'words')
    if merit[1] ~= '' and stored and tonumber(merit[1]) > tonumber(stored) then return 'longer' end
  elseif prefer == 'newest' then
    -- the first of the ages (own date, Last-Modified) both know that differ decides; else the new page
    local stored = redis.call('HMGET', doc_key(id), 'dated', 'modified')
    for level = 1, 2 do
      local mine, theirs = merit[level + 1], stored[level]
      if mine ~= '' and theirs and tonumber(mine) ~= tonumber(theirs) then
        if tonumber(mine) > tonumber(theirs) then return 'newer' end
        return nil
      end
    end
    return 'newer'
  end
  return nil
end

-- The new page `key` (stored as `new_id`) supersedes stored page `match`: the duplicates logged
-- against it move to the new page, it leaves the stored pages, and is logged as a duplicate.
local function supersede(key, new_id, match, reason, now, max_distance)
  local old_key = match.key
  local against = against_key(match.id)
  for _, did in ipairs(redis.call('SMEMBERS', against)) do
    redis.call('HSET', P .. 'dup:' .. did, 'duplicate_of', key, 'duplicate_of_id', new_id)
    redis.call('SADD', against_key(new_id), did)
  end
  redis.call('DEL', against)
  unindex(match.id)
  redis.call('DEL', doc_key(match.id), P .. 'sketch:' .. match.id)
  redis.call('HDEL', P .. 'ids', old_key)
  local target = {id = new_id, key = key, distance = match.distance, exact = match.exact, similarity = match.similarity}
  log_duplicate(old_key, match.fingerprint, target, now, max_distance)
  redis.call('HSET', P .. 'dup:' .. redis.call('HGET', P .. 'dup_ids', old_key), 'superseded', reason)
end

-- Checks one page and stores or logs it; returns false, or its match as the client reads it
-- (with the reason, when the page superseded it).
local function check(key, fp, th, sketch, exact_only, max_distance, min_similarity, now, since, merit, prefer)
  local id = redis.call('HGET', P .. 'ids', key)
  if id then  -- never a duplicate of itself: follow its new content (and its new length)
    local old = redis.call('HMGET', doc_key(id), 'fingerprint', 'text_hash', 'exact_only')
    local was_near, is_near = old[1] and not old[3], fp ~= '' and exact_only ~= '1'
    if (old[1] or '') ~= fp or (old[2] or '') ~= th or was_near ~= is_near then
      unindex(id)
      put(id, key, fp, th, sketch, exact_only, now, true, merit)
    end
    return false
  end
  local match = find_match(fp, th, sketch, exact_only, max_distance, min_similarity, since)
  if not match then
    store(key, fp, th, sketch, exact_only, now, merit)
    return false
  end
  local reason = preferred(prefer, match.id, merit)
  if reason then
    local new_id = store(key, fp, th, sketch, exact_only, now, merit)
    supersede(key, new_id, match, reason, now, max_distance)
    return {match.key, match.fingerprint, match.distance, match.exact, match.similarity, reason}
  end
  log_duplicate(key, fp, match, now, max_distance)
  return {match.key, match.fingerprint, match.distance, match.exact, match.similarity}
end

-- Drops the text kept for `key`, if any, and its bytes from the total.
local function forget_text(key)
  local size = redis.call('HSTRLEN', P .. 'texts', key)
  if size > 0 then
    redis.call('HDEL', P .. 'texts', key)
    redis.call('DECRBY', P .. 'texts_bytes', size)
  end
end

-- Removes the page stored under `key`, if any, with its text and the duplicates logged against
-- it; returns 1 when there was one, and how many duplicates went with it.
local function forget_page(key)
  local id = redis.call('HGET', P .. 'ids', key)
  if not id then return 0, 0 end
  local duplicates = 0
  for _, did in ipairs(redis.call('SMEMBERS', against_key(id))) do
    local dropped = redis.call('HGET', P .. 'dup:' .. did, 'key')
    if dropped then
      forget_duplicate(dropped)
      forget_text(dropped)
      duplicates = duplicates + 1
    end
  end
  redis.call('DEL', against_key(id))
  forget_text(key)
  unindex(id)
  redis.call('DEL', doc_key(id), P .. 'sketch:' .. id)
  redis.call('HDEL', P .. 'ids', key)
  return 1, duplicates
end

if command ~= 'open' and redis.call('EXISTS', P .. 'meta') == 0 then
  -- never carry on silently on an index that vanished (a server restarted without persistence)
  return redis.error_reply('NOINDEX simhash_index: no index under this prefix any more')
end

if command == 'check' then
  -- now, max_distance, min_similarity, window (microseconds, '' for none), survivor policy
  -- ('first', 'longest' or 'newest'), time budget (microseconds), then key, fingerprint, text_hash,
  -- sketch, exact_only, words, dated, modified (microseconds) of each page: checked in order, a page
  -- seeing those before it; one answer a page, for the pages checked: the call stops after the page
  -- that ends past the budget (so that no call holds the server long), and the client sends the
  -- rest in another call
  local now, max_distance, min_similarity = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
  local since = nil
  if ARGV[6] ~= '' then since = tonumber(now) - tonumber(ARGV[6]) end
  local prefer, budget = ARGV[7], tonumber(ARGV[8])
  local began = redis.call('TIME')
  local answers = {}
  for i = 9, #ARGV, 8 do
    table.insert(answers, check(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], max_distance,
      min_similarity, now, since, {ARGV[i + 5], ARGV[i + 6], ARGV[i + 7]}, prefer))
    local clock = redis.call('TIME')
    if (clock[1] - began[1]) * 1000000 + (clock[2] - began[2]) >= budget then break end
  end
  return answers
elseif command == 'store' then
  -- now, then key, fingerprint, text_hash, sketch, exact_only, words, dated, modified of each page:
  -- stored in order
  local now = ARGV[3]
  for i = 4, #ARGV, 8 do
    store(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], now, {ARGV[i + 5], ARGV[i + 6], ARGV[i + 7]})
  end
  return (#ARGV - 3) / 8
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
elseif command == 'forget' then
  -- keys: each stored page (with the duplicates logged against it) and each logged duplicate
  -- with one of them removed; returns {pages, duplicates}
  local pages, duplicates = 0, 0
  for i = 3, #ARGV do
    local page, against = forget_page(ARGV[i])
    pages, duplicates = pages + page, duplicates + against
    if redis.call('HEXISTS', P .. 'dup_ids', ARGV[i]) == 1 then
      forget_duplicate(ARGV[i])
      forget_text(ARGV[i])
      duplicates = duplicates + 1
    end
  end
  return {pages, duplicates}
elseif command == 'prune' then
  -- before (microseconds), then keys: the pages among them stored before it are removed, with
  -- the duplicates logged against them; returns {pages, duplicates}
  local before, pages, duplicates = tonumber(ARGV[3]), 0, 0
  for i = 4, #ARGV do
    local id = redis.call('HGET', P .. 'ids', ARGV[i])
    if id and tonumber(redis.call('HGET', doc_key(id), 'stored_at')) < before then
      local page, against = forget_page(ARGV[i])
      pages, duplicates = pages + page, duplicates + against
    end
  end
  return {pages, duplicates}
elseif command == 'sweep' then
  -- before (microseconds, or ''), then log ids: each entry logged before it, or against a
  -- page no longer stored, leaves the log; returns how many left
  local before, removed = tonumber(ARGV[3]), 0
  for i = 4, #ARGV do
    local entry = redis.call('HMGET', P .. 'dup:' .. ARGV[i], 'key', 'duplicate_of_id', 'seen_at')
    if entry[1] and ((before and tonumber(entry[3]) < before) or redis.call('EXISTS', doc_key(entry[2])) == 0) then
      forget_duplicate(entry[1])
      forget_text(entry[1])
      removed = removed + 1
    end
  end
  return removed
elseif command == 'texts' then
  -- key, compressed text of each page: kept (replacing the key's text), the total bytes counted
  for i = 3, #ARGV, 2 do
    local old = redis.call('HSTRLEN', P .. 'texts', ARGV[i])
    redis.call('HSET', P .. 'texts', ARGV[i], ARGV[i + 1])
    redis.call('INCRBY', P .. 'texts_bytes', #ARGV[i + 1] - old)
  end
  return (#ARGV - 2) / 2
elseif command == 'open' then
  -- schema_version, scheme, create: records what is missing when asked to; returns what is
  -- recorded, and 1 when this call created the index
  local created = 0
  if ARGV[5] == '1' then
    created = redis.call('HSETNX', P .. 'meta', 'schema_version', ARGV[3])
    redis.call('HSETNX', P .. 'meta', 'scheme', ARGV[4])
  end
  local recorded = redis.call('HMGET', P .. 'meta', 'schema_version', 'scheme')
  return {recorded[1], recorded[2], created}
end
return redis.error_reply('simhash_index: unknown command ' .. tostring(command))
