-- scrapy-simhash: the insert of one page into the shared index kept as a log.
--
-- Every crawler process holds the permuted tables itself, fed from the log of
-- fingerprints; it has probed them and confirmed the candidates by their
-- sketches before calling. This script appends the page only when none of the
-- log's entries past what the caller has read (its tail) is within k bits, and
-- returns that tail either way, so the caller stays in sync in the same round
-- trip. It reads at most ARGV[11] tail entries (longer: the caller reads the
-- log itself first), and a few commands more, whatever the index holds.
--
-- KEYS[1]  metadata hash (fields: signature, epoch, size, ...)
-- KEYS[2]  URL hash: decimal key -> URL (URL format "full"), or
--          key // B -> B packed 8-byte URL hashes in key order ("hash")
-- KEYS[3]  the log blocks' name without the block number: block n holds the
--          8-byte big-endian fingerprints of keys n * B + 1 .. (n + 1) * B,
--          B = ARGV[10], the fingerprint of key q at byte ((q - 1) % B) * 8
-- KEYS[4]  the sketch blocks' name without the block number: the sketch of key
--          q in block (q - 1) // ARGV[12] at ((q - 1) % ARGV[12]) * ARGV[13];
--          a page without one writes nothing (read back as zeros or nothing)
-- ARGV[1]  layout signature the caller was opened with
-- ARGV[2]  epoch of the index the caller joined (changes when it is recreated)
-- ARGV[3]  log entries the caller has read (its tail starts there)
-- ARGV[4]  the fingerprint, 8 bytes big-endian
-- ARGV[5]  k
-- ARGV[6]  the page's sketch ("" stores none)
-- ARGV[7]  URL stored with the new key ("" stores none), or its 8-byte hash
-- ARGV[8]  URL format: 0 for "full", B (the block size) for "hash"
-- ARGV[9]  "if_new": append unless a tail entry is within k; "always": append;
--          "read": return the tail only; "check": run every command once,
--          changing nothing (the start-up permission check)
-- ARGV[10] log entries per block; ARGV[11] longest tail read here;
-- ARGV[12] sketches per block; ARGV[13] sketch size in bytes
--
-- Returns {status, value, tail}: status 0 appended (value: the new key; with
-- "read", the log's size); -1 metadata missing; -2 signature or epoch differs
-- (value: the stored "signature/epoch"); -3 Redis is full (maxmemory): nothing
-- written (value: size); -4 a tail entry is within k: nothing written (value:
-- size); -7 the tail is longer than ARGV[11]: nothing read (value: size);
-- -8 the log is shorter than the caller has read (a failover to a replica
-- that lagged): nothing read (value: size);
-- -6 (check) a command was refused: {-6, command, error}.

local meta, urls, logp, skp = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local signature, epoch, seen = ARGV[1], ARGV[2], tonumber(ARGV[3])
local fp, k, sketch, url = ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7]
local url_block, mode = tonumber(ARGV[8]), ARGV[9]
local B, cap = tonumber(ARGV[10]), tonumber(ARGV[11])
local SB, SBINS = tonumber(ARGV[12]), tonumber(ARGV[13])

-- 1. the index must be the one the caller joined
local stored = redis.call('HMGET', meta, 'signature', 'epoch', 'size')
if not stored[1] then
  return {-1, 0, ''}
end
if stored[1] ~= signature or stored[2] ~= epoch then
  return {-2, tostring(stored[1]) .. '/' .. tostring(stored[2]), ''}
end
local size = tonumber(stored[3])

if mode == 'check' then
  -- every command of an insert once, changing nothing: a write of the
  -- metadata's own signature, empty SETRANGEs (no-ops, even on a missing key);
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
    try('HSET', meta, 'signature', signature)
    try('GETRANGE', logp .. '0', 0, 7)
    try('SETRANGE', logp .. '0', 0, '')
    try('GETRANGE', skp .. '0', 0, SBINS - 1)
    try('SETRANGE', skp .. '0', 0, '')
    try('HGET', urls, '0')
  end)
  if not ok then
    if type(failure) == 'table' then
      return {-6, failure.command or current, failure.message or failure.err}
    end
    return redis.error_reply(tostring(failure))
  end
  return {0, 0, ''}
end

-- 2. the tail: what the caller has not read yet
if size - seen > cap then
  return {-7, size, ''}
end
if size < seen then
  return {-8, size, ''}
end
local parts, pos = {}, seen
while pos < size do
  local block = math.floor(pos / B)
  local upto = math.min(size, (block + 1) * B)
  parts[#parts + 1] = redis.call('GETRANGE', logp .. block, (pos - block * B) * 8,
                                 (upto - block * B) * 8 - 1)
  pos = upto
end
local tail = table.concat(parts)
if mode == 'read' then
  return {0, size, tail}
end

-- 3. none of it within k (Hamming distance of two 32-bit halves)
if mode == 'if_new' and #tail > 0 then
  local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
  local function pop(x)
    x = x - band(rshift(x, 1), 0x55555555)
    x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
    x = band(x + rshift(x, 4), 0x0F0F0F0F)
    return band(x, 0xFF) + band(rshift(x, 8), 0xFF) + band(rshift(x, 16), 0xFF) + rshift(x, 24)
  end
  local qa, qb = struct.unpack('>I4I4', fp)
  for i = 1, #tail, 8 do
    local a, b = struct.unpack('>I4I4', tail, i)
    if pop(bxor(a, qa)) + pop(bxor(b, qb)) <= k then
      return {-4, size, tail}
    end
  end
end

-- 4. the key. The first write is a pcall: Redis refuses every write of a
-- script that started above maxmemory (noeviction), so either all of them run
-- or none.
local new_key = size + 1
local reply = redis.pcall('HSET', meta, 'size', string.format('%d', new_key))
if type(reply) == 'table' and reply.err then
  if string.find(reply.err, 'OOM', 1, true) then
    return {-3, size, tail}
  end
  return reply
end

-- 5. the fingerprint, the sketch and the URL, at their key's place
redis.call('SETRANGE', logp .. math.floor(size / B), (size % B) * 8, fp)
if sketch ~= '' then
  redis.call('SETRANGE', skp .. math.floor(size / SB), (size % SB) * SBINS, sketch)
end
if url_block > 0 then
  -- keys are handed out in order, so a block is append-only: key n is at
  -- offset (n % B) * 8 of field n // B; a missing URL is 8 zero bytes
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
return {0, new_key, tail}
