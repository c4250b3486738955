-- scrapy-simhash: the conditional insert of one page into the shared index.
--
-- The client has read the page's buckets, compared the fingerprints and
-- confirmed the candidates by their sketches itself; this script only checks
-- that nothing it read has changed meanwhile and appends. It never scans
-- entries and never reads a sketch: one HMGET and one HSET for every table
-- together, and a few more commands, whatever the buckets hold.
--
-- KEYS[1]  metadata hash (fields: signature, epoch, size, ...)
-- KEYS[2]  URL hash: decimal key -> URL (URL format "full"), or
--          key // B -> B packed 8-byte URL hashes in key order ("hash")
-- KEYS[3]  the sketch blocks' name without the block number: block n
--          (a string, key // B) holds the B = ARGV[10] sketches of keys
--          n * B .. n * B + B - 1, 64 bytes each at (key % B) * 64, zeros for
--          none (stored, never read here)
-- KEYS[4]  bucket hash: table number (1 byte) .. bucket -> packed entries
--          (absent when the tables live elsewhere: the sharded placement)
-- ARGV[1]  layout signature the caller was opened with
-- ARGV[2]  epoch of the index the caller joined (changes when it is recreated)
-- ARGV[3]  entry to append: fingerprint (8 bytes) .. 4 zero bytes (the key
--          is filled in here)
-- ARGV[4]  URL stored with the new key ("" stores none), or its 8-byte hash
-- ARGV[5]  URL format: 0 for "full", B (the block size) for "hash"
-- ARGV[6]  the page's sketch ("" stores none)
-- ARGV[7]  bucket capacity in bytes: a bucket this full is not appended to
-- ARGV[8]  "check": run every command this script needs once, changing
--          nothing (the start-up permission check); else "insert"
-- ARGV[9]  sketch size in bytes; ARGV[10] sketches per block
-- ARGV[11..] per table: the bucket's field in KEYS[4], then its length in
--          bytes when the client read it (-1: do not check)
--
-- Returns {status, new_key, skipped}: status 0 inserted (new_key; skipped:
-- tables whose bucket was full), -1 metadata missing, -2 signature or epoch
-- differs (new_key holds the stored "signature/epoch"), -3 Redis is full
-- (maxmemory): nothing was written, -4 a bucket changed since it was read
-- (new_key holds the table's number): read again; -5 every bucket is full:
-- nothing was written; -6 (check) a command was refused: {-6, command, error}.

local meta, urls, sketches = KEYS[1], KEYS[2], KEYS[3]
local signature, epoch, entry, url = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local url_block, sketch, capacity = tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
local check = ARGV[8] == 'check'
local buckets = KEYS[4]
local sketch_size, sketch_block = tonumber(ARGV[9]), tonumber(ARGV[10])
local FIRST_BUCKET = 11
local ntables = (#ARGV - FIRST_BUCKET + 1) / 2
local fields = {}
for t = 1, ntables do
  fields[t] = ARGV[FIRST_BUCKET + 2 * (t - 1)]
end

-- 1. the index must be the one the caller joined
local stored = redis.call('HMGET', meta, 'signature', 'epoch')
if not stored[1] then
  return {-1, 0, 0}
end
if stored[1] ~= signature or stored[2] ~= epoch then
  return {-2, tostring(stored[1]) .. '/' .. tostring(stored[2]), 0}
end

if check then
  -- every command of an insert once, changing nothing: writes on the
  -- metadata only (its own signature again, size + 0) and no-op ones on the
  -- first sketch block, reads on every key (so a user that may read but not
  -- write the tables is not caught here);
  -- the first one refused is named: {-6, command, error}
  local current -- a refused command may raise even under pcall
  local function try(...)
    current = (...)
    local reply = redis.pcall(...)
    if type(reply) == 'table' and reply.err then
      if string.find(reply.err, 'OOM', 1, true) then
        return nil -- full, not forbidden: checked pages are queued then
      end
      error({command = (...), message = reply.err})
    end
    return reply
  end
  local ok, failure = pcall(function()
    try('HINCRBY', meta, 'size', 0)
    try('HSET', meta, 'signature', signature)
    if ntables > 0 then
      try('HMGET', buckets, unpack(fields))
    end
    try('HGET', urls, '0')
    -- block 0 is needed by the first page anyway: created here if missing
    local first = sketches .. '0'
    if try('EXISTS', first) == 0 then
      try('SET', first, string.rep('\0', sketch_size * sketch_block))
    end
    try('GETRANGE', first, 0, sketch_size - 1)
    try('SETRANGE', first, 0, '')
  end)
  if not ok then
    if type(failure) == 'table' then
      return {-6, failure.command or current, failure.message or failure.err}
    end
    return redis.error_reply(tostring(failure))
  end
  return {0, 0, 0}
end

-- 2. every bucket as long as when the client read it (buckets only grow:
-- the same length is the same content). One HMGET for all of them: a
-- command called from Lua costs far more than the bytes it copies.
local blobs = ntables > 0 and redis.call('HMGET', buckets, unpack(fields)) or {}
local lengths = {}
for t = 1, ntables do
  local length = blobs[t] and #blobs[t] or 0
  local seen = tonumber(ARGV[FIRST_BUCKET + 2 * (t - 1) + 1])
  if seen >= 0 and length ~= seen then
    return {-4, t - 1, 0}
  end
  lengths[t] = length
end

-- 3. a key, unless no table has room. The first write is a pcall: Redis refuses every write of a
-- script that started above maxmemory (noeviction), so either all of them
-- run or none.
local room = ntables == 0
for t = 1, ntables do
  room = room or lengths[t] + 12 <= capacity
end
if not room then
  return {-5, 0, ntables}
end
local reply = redis.pcall('HINCRBY', meta, 'size', 1)
if type(reply) == 'table' and reply.err then
  if string.find(reply.err, 'OOM', 1, true) then
    return {-3, 0, 0}
  end
  return reply
end
local new_key = reply
if new_key > 4294967295 then
  redis.call('HINCRBY', meta, 'size', -1)
  return redis.error_reply('simhash index full: keys are 32-bit')
end
entry = string.sub(entry, 1, 8) .. string.char(
  math.floor(new_key / 16777216) % 256, math.floor(new_key / 65536) % 256,
  math.floor(new_key / 256) % 256, new_key % 256)

-- 4. append to every bucket that has room, in one HSET
local skipped, pairs = 0, {}
for t = 1, ntables do
  if lengths[t] + 12 > capacity then
    skipped = skipped + 1
  else
    pairs[#pairs + 1] = fields[t]
    pairs[#pairs + 1] = (blobs[t] or '') .. entry
  end
end
if #pairs > 0 then
  redis.call('HSET', buckets, unpack(pairs))
end

-- 5. the URL and the sketch
if url_block > 0 then
  -- keys are handed out in order, so a block is append-only: key n is at
  -- offset (n % B) * 8; a missing URL is stored as 8 zero bytes
  local field = string.format('%d', math.floor(new_key / url_block))
  local hash = url ~= '' and url or string.rep('\0', 8)
  local block = redis.call('HGET', urls, field) or ''
  local want = (new_key % url_block) * 8
  if #block < want then
    block = block .. string.rep('\0', want - #block)
  end
  redis.call('HSET', urls, field, string.sub(block, 1, want) .. hash)
elseif url ~= '' then
  redis.call('HSET', urls, string.format('%d', new_key), url)
end
if sketch ~= '' then
  -- a block is made whole at once (SET is exact-size; SETRANGE would grow it
  -- to twice what it needs), then written in place
  local name = sketches .. string.format('%d', math.floor(new_key / sketch_block))
  if redis.call('EXISTS', name) == 0 then
    redis.call('SET', name, string.rep('\0', sketch_size * sketch_block))
  end
  redis.call('SETRANGE', name, (new_key % sketch_block) * sketch_size, sketch)
end

return {0, new_key, skipped}
