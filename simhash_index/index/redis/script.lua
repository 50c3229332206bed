-- The server side of simhash_index.index.redis: each call runs atomically in Redis.
-- ARGV[1] is the command, ARGV[2] the key prefix, ARGV[3] the names of the page fields kept
-- under keys of their own (codec.BLOBS, space-separated), ARGV[4] the change entries to keep;
-- the command's arguments follow. The key layout is docs/schema.md's.
--
-- No call decides whether a page is a duplicate: writers decide in Python (index/rule.py) on
-- the pages they read, and `write` stores what they decided, refused when the change stream
-- moved on since the writer last read it. Every change to the stored pages appends an entry to
-- that stream, in the call that makes it. Loops over many pages or keys stop once the call has
-- run for the time budget it is given, and say how far they got: no call holds the server long.

local command, P = ARGV[1], ARGV[2]
local BLOBS = {}
for name in string.gmatch(ARGV[3], '%S+') do table.insert(BLOBS, name) end
local KEEP = tonumber(ARGV[4])
-- change entries trimmed at a time, once more than KEEP + TRIM_CHUNK are held
local TRIM_CHUNK = math.max(1, math.min(1000, math.floor(KEEP / 4)))
local SLOT = 9  -- bytes a page takes in its fingerprint bucket: 1 when near-matchable, then 8 big-endian
local BUCKET = 1024  -- pages (by id) a fingerprint bucket holds
local MISSED = 1000  -- change entries a refused write returns, at most (else the writer follows)

local sub = string.sub

local began
local function spent()  -- microseconds since the first call of it in this script call
  local now = redis.call('TIME')
  local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
  if not began then began = clock end
  return clock - began
end

local function doc_key(id)
  return P .. 'doc:' .. id
end

local function new_epoch()  -- the server's clock, so that an index made anew never repeats one
  local now = redis.call('TIME')
  return now[1] .. '.' .. now[2]
end

local function key_hash(key)  -- as codec.key_hash
  return sub(redis.sha1hex(key), 1, 16)
end

-- Stream ids "<ms>-<seq>" compared as numbers (both fit a double exactly).
local function id_parts(id)
  local dash = string.find(id, '-', 1, true)
  return tonumber(sub(id, 1, dash - 1)), tonumber(sub(id, dash + 1))
end

local function id_after(a, b)  -- whether stream id a comes after b
  local am, as = id_parts(a)
  local bm, bs = id_parts(b)
  return am > bm or (am == bm and as > bs)
end

-- -- the change stream -------------------------------------------------------------------

-- What change entries say, as replies carry it (changes.parse): the last entry's id, the ids and
-- fingerprints of the near-matchable pages that came, how many went, and every entry's key
-- hash, text hash and near fingerprint: lists of 16 hex digits (ids: decimal) run together.
local function summary()
  return {last = false, came_ids = {}, came_fps = {}, went = 0, keys = {}, texts = {}, fps = {}}
end

local function tell(found, entry, came, id, fp, kh, th)
  found.last = entry
  table.insert(found.keys, kh)
  if th ~= '' then table.insert(found.texts, th) end
  if fp ~= '' then
    table.insert(found.fps, fp)
    if came == '1' then
      table.insert(found.came_ids, id)
      table.insert(found.came_fps, fp)
    else
      found.went = found.went + 1
    end
  end
end

local function reply(found)
  return {found.last, table.concat(found.came_ids, ' '), table.concat(found.came_fps), found.went,
    table.concat(found.keys), table.concat(found.texts), table.concat(found.fps)}
end

local function told(entries)  -- the summary of entries as XRANGE gives them
  local found = summary()
  for _, entry in ipairs(entries) do
    local f = {}
    for j = 1, #entry[2], 2 do f[entry[2][j]] = entry[2][j + 1] end
    tell(found, entry[1], f.a, f.i, f.f, f.k, f.t)
  end
  return found
end

local added = summary()  -- the entries this call appended

-- One change to the stored pages: page `id` came (came '1') or went ('0'), with its fingerprint
-- when near-matchable, its key's hash and its text hash.
local function note(came, id, fp, kh, th)
  local entry = redis.call('XADD', P .. 'changes', '*', 'a', came, 'i', id, 'f', fp, 'k', kh, 't', th)
  tell(added, entry, came, tostring(id), fp, kh, th)
end

-- Once the stream holds more than KEEP + TRIM_CHUNK entries, its oldest go (whole nodes of it,
-- about KEEP staying), and `floor` in meta names the first entry kept: a reader whose position is
-- before it may have missed some.
local function trim()
  if redis.call('XLEN', P .. 'changes') <= KEEP + TRIM_CHUNK then return end
  if redis.call('XTRIM', P .. 'changes', 'MAXLEN', '~', KEEP) > 0 then
    redis.call('HSET', P .. 'meta', 'floor', redis.call('XRANGE', P .. 'changes', '-', '+', 'COUNT', 1)[1][1])
  end
end

-- The entries after position `pos`, at most `count` of them, or nil when some of them may have
-- been trimmed away.
local function since(pos, count)
  local floor = redis.call('HGET', P .. 'meta', 'floor') or '0-0'
  if id_after(floor, pos) then return nil end
  return redis.call('XRANGE', P .. 'changes', '(' .. pos, '+', 'COUNT', count)
end

-- -- fingerprint buckets ---------------------------------------------------------------------

local function bucket_key(id)
  return P .. 'fp:' .. math.floor(tonumber(id) / BUCKET)
end

local function packed(hex)  -- 16 hex digits as 8 bytes, big-endian
  return (string.gsub(hex, '..', function(pair) return string.char(tonumber(pair, 16)) end))
end

local function set_slot(id, fp)
  redis.call('SETRANGE', bucket_key(id), (tonumber(id) % BUCKET) * SLOT, '\1' .. packed(fp))
end

local function clear_slot(id)
  local bucket = bucket_key(id)
  local held = redis.call('GET', bucket)
  local at = (tonumber(id) % BUCKET) * SLOT
  if not held or #held <= at then return end
  redis.call('SETRANGE', bucket, at, string.rep('\0', SLOT))
  if not string.find(redis.call('GET', bucket), '[^%z]') then redis.call('DEL', bucket) end
end

-- -- stored pages ------------------------------------------------------------------------------

-- A page's fields as the client sent them (codec.page_args), from ARGV[i]: {key, fields (name,
-- value, ...), blobs, fingerprint, text hash, exact_only} and the index of what follows.
local function read_page(i)
  local count = tonumber(ARGV[i + 1])
  local page = {key = ARGV[i], fields = {}, blobs = {}, fp = '', th = '', exact = false}
  for j = i + 2, i + 1 + 2 * count, 2 do
    local name, value = ARGV[j], ARGV[j + 1]
    table.insert(page.fields, name)
    table.insert(page.fields, value)
    if name == 'fingerprint' then page.fp = value
    elseif name == 'text_hash' then page.th = value
    elseif name == 'exact_only' then page.exact = value == '1' end
  end
  local at = i + 2 + 2 * count
  for b = 1, #BLOBS do page.blobs[b] = ARGV[at + b - 1] end
  return page, at + #BLOBS
end

local function near_of(fp, exact_only)  -- the fingerprint a page is near-matched by, or ''
  if fp and fp ~= '' and not exact_only then return fp end
  return ''
end

-- A stored page leaves its text set and its fingerprint bucket, and the stream says so.
local function unindex(id, key)
  local old = redis.call('HMGET', doc_key(id), 'fingerprint', 'text_hash', 'exact_only')
  local near = near_of(old[1], old[3])
  if near ~= '' then clear_slot(id) end
  if old[2] then redis.call('ZREM', P .. 'text:' .. old[2], id) end
  note('0', id, near, key_hash(key), old[2] or '')
end

local function drop_page(id)  -- its hash and blobs (after unindex)
  redis.call('DEL', doc_key(id))
  for _, name in ipairs(BLOBS) do redis.call('DEL', P .. name .. ':' .. id) end
end

-- Writes page `id` (a new one, or one just unindexed) and enters it in its text set and its
-- fingerprint bucket; the stream says it came.
local function put(id, page, now)
  redis.call('HSET', doc_key(id), 'key', page.key, 'stored_at', now, unpack(page.fields))
  for b, name in ipairs(BLOBS) do
    if page.blobs[b] ~= '' then redis.call('SET', P .. name .. ':' .. id, page.blobs[b]) end
  end
  local near = near_of(page.fp, page.exact)
  if near ~= '' then set_slot(id, near) end
  if page.th ~= '' then redis.call('ZADD', P .. 'text:' .. page.th, id, id) end
  note('1', id, near, key_hash(page.key), page.th)
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

-- Stores a page under its key, replacing the page stored with that key (which keeps its id), and
-- takes the key out of the duplicates log (a stored page is nobody's duplicate); returns its id.
local function store(page, now)
  forget_duplicate(page.key)
  local id = redis.call('HGET', P .. 'ids', page.key)
  if id then
    unindex(id, page.key)
    drop_page(id)
  else
    id = redis.call('INCR', P .. 'next_id')
    redis.call('HSET', P .. 'ids', page.key, id)
  end
  put(id, page, now)
  return id
end

-- Logs `key` as a duplicate of stored page `target` ({id, key}), with the evidence; a key
-- logged before keeps its place in the log.
local function log_duplicate(key, fp, target, evidence, now)
  local did = redis.call('HGET', P .. 'dup_ids', key)
  if not did then
    did = redis.call('INCR', P .. 'next_dup')
    redis.call('HSET', P .. 'dup_ids', key, did)
    redis.call('ZADD', P .. 'dup_log', did, did)
  end
  local entry = P .. 'dup:' .. did
  local old = redis.call('HGET', entry, 'duplicate_of_id')
  if old then redis.call('SREM', against_key(old), did) end
  redis.call('SADD', against_key(target.id), did)
  redis.call('DEL', entry)
  redis.call('HSET', entry, 'key', key, 'duplicate_of', target.key, 'duplicate_of_id', target.id,
    'distance', evidence.distance, 'exact', evidence.exact, 'seen_at', now, 'radius', evidence.radius)
  if fp ~= '' then redis.call('HSET', entry, 'fingerprint', fp) end
  if evidence.similarity ~= '' then redis.call('HSET', entry, 'similarity', evidence.similarity) end
  if evidence.added ~= '' then redis.call('HSET', entry, 'added', evidence.added) end
  if evidence.reason ~= '' then redis.call('HSET', entry, 'superseded', evidence.reason) end
end

local function stored_target(key)
  local id = redis.call('HGET', P .. 'ids', key)
  if not id then error('simhash_index: the page ' .. key .. ' a write names is not stored') end
  return {id = id, key = key}
end

-- Stored page `old_key` is superseded by stored page `new_key`: the duplicates logged against it
-- move to the new page, it leaves the stored pages, and is logged as the new page's duplicate.
local function supersede(old_key, new_key, fp, evidence, now)
  local old, new = stored_target(old_key), stored_target(new_key)
  local against = against_key(old.id)
  for _, did in ipairs(redis.call('SMEMBERS', against)) do
    redis.call('HSET', P .. 'dup:' .. did, 'duplicate_of', new.key, 'duplicate_of_id', new.id)
    redis.call('SADD', against_key(new.id), did)
  end
  redis.call('DEL', against)
  unindex(old.id, old_key)
  drop_page(old.id)
  redis.call('HDEL', P .. 'ids', old_key)
  log_duplicate(old_key, fp, new, evidence, now)
end

-- Drops the text kept for `key`, if any, and its bytes from the total.
local function forget_text(key)
  local size = redis.call('HSTRLEN', P .. 'texts', key)
  if size > 0 then
    redis.call('HDEL', P .. 'texts', key)
    redis.call('DECRBY', P .. 'texts_bytes', size)
  end
end

local AGAINST_AT_ONCE = 500  -- duplicates a call forgets with their page, at most

-- Removes the page stored under `key` with its text and the duplicates logged against it;
-- returns 1 when there was one, how many duplicates went with it, and whether it is done: a
-- page with more duplicates than AGAINST_AT_ONCE loses that many, and stays for another call.
local function forget_page(key)
  local id = redis.call('HGET', P .. 'ids', key)
  if not id then return 0, 0, true end
  local duplicates = 0
  local against = redis.call('SPOP', against_key(id), AGAINST_AT_ONCE)
  for _, did in ipairs(against) do
    local dropped = redis.call('HGET', P .. 'dup:' .. did, 'key')
    if dropped then
      forget_duplicate(dropped)
      forget_text(dropped)
      duplicates = duplicates + 1
    end
  end
  if #against == AGAINST_AT_ONCE and redis.call('EXISTS', against_key(id)) == 1 then
    return 0, duplicates, false
  end
  forget_text(key)
  unindex(id, key)
  drop_page(id)
  redis.call('HDEL', P .. 'ids', key)
  return 1, duplicates, true
end

-- -- commands ----------------------------------------------------------------------------------

if command ~= 'open' and redis.call('EXISTS', P .. 'meta') == 0 then
  -- never carry on silently on an index that vanished (a server restarted without persistence)
  return redis.error_reply('NOINDEX simhash_index: no index under this prefix any more')
end
spent()  -- the clock of the time budgets starts

if command == 'write' then
  -- epoch, position (the last change the writer read), now, radius, then what the writer
  -- decided, in order: 'S' and a page (codec.page_args): store it; 'D', key, fingerprint, stored
  -- key, distance, exact, similarity, added: log a duplicate; 'X', stored key, superseding key,
  -- fingerprint, distance, exact, similarity, added, reason: the stored page superseded.
  -- Refused when the index was emptied since ({'epoch'}), or the stream moved past the
  -- position: {'moved', what the entries since say (at most MISSED of them)}, or {'behind'};
  -- else {'ok', what the entries this call appended say}.
  if redis.call('HGET', P .. 'meta', 'epoch') ~= ARGV[5] then return {'epoch'} end
  local missed = since(ARGV[6], MISSED + 1)
  if not missed or #missed > MISSED then return {'behind'} end
  if #missed > 0 then return {'moved', reply(told(missed))} end
  local now, radius = ARGV[7], ARGV[8]
  local i = 9
  while i <= #ARGV do
    local op = ARGV[i]
    if op == 'S' then
      local page
      page, i = read_page(i + 1)
      store(page, now)
    elseif op == 'D' then
      local evidence = {distance = ARGV[i + 4], exact = ARGV[i + 5], similarity = ARGV[i + 6],
        added = ARGV[i + 7], reason = '', radius = radius}
      log_duplicate(ARGV[i + 1], ARGV[i + 2], stored_target(ARGV[i + 3]), evidence, now)
      i = i + 8
    elseif op == 'X' then
      local evidence = {distance = ARGV[i + 4], exact = ARGV[i + 5], similarity = ARGV[i + 6],
        added = ARGV[i + 7], reason = ARGV[i + 8], radius = radius}
      supersede(ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], evidence, now)
      i = i + 9
    else
      return redis.error_reply('simhash_index: unknown write ' .. tostring(op))
    end
  end
  trim()
  return {'ok', reply(added)}
elseif command == 'follow' then
  -- position, count: {epoch, 'ok', how many entries came after it (at most count), what they
  -- say} or {epoch, 'behind'}
  local epoch = redis.call('HGET', P .. 'meta', 'epoch')
  local found = since(ARGV[5], tonumber(ARGV[6]))
  if not found then return {epoch, 'behind'} end
  return {epoch, 'ok', #found, reply(told(found))}
elseif command == 'start' then
  -- where a writer that reads every stored fingerprint starts following: {epoch, the position
  -- (the last entry, else the floor), the last page id given}
  local last = redis.call('XREVRANGE', P .. 'changes', '+', '-', 'COUNT', 1)[1]
  local meta = redis.call('HMGET', P .. 'meta', 'epoch', 'floor')
  local pos = last and last[1] or meta[2] or '0-0'
  return {meta[1], pos, redis.call('GET', P .. 'next_id') or '0'}
elseif command == 'read' then
  -- how many of the oldest pages with a text hash to read (-1: all), then keys, text hashes,
  -- page ids, each list after its length: the ids stored under the keys (false for none), the
  -- ids of the (oldest) pages with each text hash, oldest first, and each page of all those ids:
  -- {id, its hash's fields and values, its blobs (false for none)}
  local oldest, i, ids, wanted, pages = tonumber(ARGV[5]) - 1, 6, {}, {}, {}
  local function want(id)
    if not wanted[id] then wanted[id] = true; table.insert(ids, id) end
  end
  local own, texts = {}, {}
  for j = i + 1, i + tonumber(ARGV[i]) do
    local id = redis.call('HGET', P .. 'ids', ARGV[j])
    table.insert(own, id)
    if id then want(id) end
  end
  i = i + 1 + tonumber(ARGV[i])
  for j = i + 1, i + tonumber(ARGV[i]) do
    local members = redis.call('ZRANGE', P .. 'text:' .. ARGV[j], 0, oldest)
    table.insert(texts, members)
    for _, id in ipairs(members) do want(id) end
  end
  i = i + 1 + tonumber(ARGV[i])
  for j = i + 1, i + tonumber(ARGV[i]) do want(ARGV[j]) end
  for _, id in ipairs(ids) do
    local page = {id, redis.call('HGETALL', doc_key(id))}
    for _, name in ipairs(BLOBS) do table.insert(page, redis.call('GET', P .. name .. ':' .. id)) end
    table.insert(pages, page)
  end
  return {own, texts, pages}
elseif command == 'get' then
  -- key: {fingerprint} of the page stored with it, or nil
  local id = redis.call('HGET', P .. 'ids', ARGV[5])
  if not id then return false end
  return {redis.call('HGET', doc_key(id), 'fingerprint') or ''}
elseif command == 'store' then
  -- now, time budget (microseconds), then pages (codec.page_args): stored in order (replacing),
  -- until the call has run for the budget; returns how many were stored
  local now, budget, stored = ARGV[5], tonumber(ARGV[6]), 0
  local i = 7
  while i <= #ARGV do
    local page
    page, i = read_page(i)
    store(page, now)
    stored = stored + 1
    if spent() >= budget then break end
  end
  trim()
  return stored
elseif command == 'forget' then
  -- time budget, then keys: each stored page (with the duplicates logged against it) and each
  -- logged duplicate with one of them removed, until the budget is spent; returns {keys done,
  -- pages, duplicates}
  local budget, done, pages, duplicates = tonumber(ARGV[5]), 0, 0, 0
  for i = 6, #ARGV do
    local page, against, finished = forget_page(ARGV[i])
    pages, duplicates = pages + page, duplicates + against
    if not finished then break end
    if redis.call('HEXISTS', P .. 'dup_ids', ARGV[i]) == 1 then
      forget_duplicate(ARGV[i])
      forget_text(ARGV[i])
      duplicates = duplicates + 1
    end
    done = done + 1
    if spent() >= budget then break end
  end
  trim()
  return {done, pages, duplicates}
elseif command == 'prune' then
  -- before (microseconds), time budget, then keys: the pages among them stored before it are
  -- removed, with the duplicates logged against them; returns {keys done, pages, duplicates}
  local before, budget, done, pages, duplicates = tonumber(ARGV[5]), tonumber(ARGV[6]), 0, 0, 0
  for i = 7, #ARGV do
    local id = redis.call('HGET', P .. 'ids', ARGV[i])
    if id and tonumber(redis.call('HGET', doc_key(id), 'stored_at')) < before then
      local page, against, finished = forget_page(ARGV[i])
      pages, duplicates = pages + page, duplicates + against
      if not finished then break end
    end
    done = done + 1
    if spent() >= budget then break end
  end
  trim()
  return {done, pages, duplicates}
elseif command == 'sweep' then
  -- before (microseconds, or ''), time budget, then log ids: each entry logged before it, or
  -- against a page no longer stored, leaves the log, until the budget is spent; returns {log ids
  -- done, how many left}
  local before, budget, done, removed = tonumber(ARGV[5]), tonumber(ARGV[6]), 0, 0
  for i = 7, #ARGV do
    local entry = redis.call('HMGET', P .. 'dup:' .. ARGV[i], 'key', 'duplicate_of_id', 'seen_at')
    if entry[1] and ((before and tonumber(entry[3]) < before) or redis.call('EXISTS', doc_key(entry[2])) == 0) then
      forget_duplicate(entry[1])
      forget_text(entry[1])
      removed = removed + 1
    end
    done = done + 1
    if spent() >= budget then break end
  end
  return {done, removed}
elseif command == 'texts' then
  -- key, compressed text of each page: kept (replacing the key's text), the total bytes counted
  for i = 5, #ARGV, 2 do
    local old = redis.call('HSTRLEN', P .. 'texts', ARGV[i])
    redis.call('HSET', P .. 'texts', ARGV[i], ARGV[i + 1])
    redis.call('INCRBY', P .. 'texts_bytes', #ARGV[i + 1] - old)
  end
  return (#ARGV - 4) / 2
elseif command == 'epoch' then
  -- the index was emptied (reset): every writer reads the stored fingerprints again
  redis.call('HSET', P .. 'meta', 'epoch', new_epoch())
  redis.call('HSET', P .. 'meta', 'floor', '0-0')
  return 1
elseif command == 'migrate' then
  -- key layout version 2 to 3: first page id, time budget: the fingerprint buckets of the pages
  -- from that id on, until the budget is spent; returns the next id to do, or 0 when done
  local id, budget, last = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(redis.call('GET', P .. 'next_id') or '0')
  while id <= last do
    local doc = redis.call('HMGET', doc_key(id), 'fingerprint', 'exact_only')
    local near = near_of(doc[1], doc[2])
    if near ~= '' then set_slot(id, near) end
    id = id + 1
    if spent() >= budget then break end
  end
  if id > last then return 0 end
  return id
elseif command == 'migrated' then
  -- schema_version: the buckets are filled and the block sets gone
  redis.call('HSETNX', P .. 'meta', 'epoch', new_epoch())
  redis.call('HSETNX', P .. 'meta', 'floor', '0-0')
  redis.call('HSET', P .. 'meta', 'schema_version', ARGV[5])
  return 1
elseif command == 'open' then
  -- schema_version, scheme, create: records what is missing when asked to; returns what is
  -- recorded, and 1 when this call created the index
  local created = 0
  if ARGV[7] == '1' then
    created = redis.call('HSETNX', P .. 'meta', 'schema_version', ARGV[5])
    redis.call('HSETNX', P .. 'meta', 'scheme', ARGV[6])
    if created == 1 then redis.call('HSET', P .. 'meta', 'epoch', new_epoch(), 'floor', '0-0') end
  end
  local recorded = redis.call('HMGET', P .. 'meta', 'schema_version', 'scheme')
  return {recorded[1], recorded[2], created}
end
return redis.error_reply('simhash_index: unknown command ' .. tostring(command))
