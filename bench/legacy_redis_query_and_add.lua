-- scrapy-simhash: probe every permuted table for fingerprints within k of a
-- query, confirm each candidate by its sketch, and insert the query when asked
-- to, in one atomic call.
--
-- KEYS[1]  metadata hash (fields: signature, size, ...)
-- KEYS[2]  URL hash: decimal key -> URL (URL format "full"), or
--          key // B -> B packed 8-byte URL hashes in key order ("hash", compact)
-- KEYS[3]  sketch hash: decimal key -> the page's sketch
-- KEYS[4..] one hash per permuted table: bucket field -> packed entries
-- ARGV[1]  fingerprint, 8 bytes big-endian
-- ARGV[2]  k
-- ARGV[3]  "if_new" | "always" | "never"
-- ARGV[4]  URL stored with the new key ("" stores none), or its 8-byte hash
-- ARGV[5]  layout signature the caller was opened with
-- ARGV[6]  URL format: 0 for "full", B (the block size) for "hash"
-- ARGV[7]  the query's sketch ("": no confirmation, every candidate counts)
-- ARGV[8]  CONFIRM: a candidate is confirmed when matches * 64 >= CONFIRM *
--          filled and filled > 0 (matches: bins holding the same non-zero byte
--          in both sketches; filled: bins non-zero in either), the rule of
--          scrapy_simhash.fingerprinting.signature.confirms, exactly. A stored
--          page without a sketch is never confirmed.
-- ARGV[9..] bucket field of the query in each table, same order as KEYS[4..]
--
-- An entry is 12 bytes: fingerprint (8, big-endian) then key (4, big-endian).
-- Lua numbers are doubles, so 64-bit values are handled as two 32-bit halves
-- with the bit library, popcount by clearing the lowest set bit (stops at k+1).
--
-- Returns {status, new_key, nearest_url, matches}: status 0 ok, -1 metadata
-- missing, -2 signature differs (then new_key holds the stored signature),
-- -3 Redis is full (maxmemory): the probe ran, nothing was written;
-- matches is the concatenation of (entry, distance byte) of every distinct
-- stored page within k whose sketch confirms it, found before the insertion
-- (the query is inserted by "if_new" when there is none); nearest_url is
-- the nearest's URL (or its 8-byte hash in the "hash" format).
--
-- Steps: 1. check the metadata, 2. probe every table, 3. read the nearest's
-- URL, 4. insert (when asked to and allowed).

local meta, urls, sketches = KEYS[1], KEYS[2], KEYS[3]
local query, k, mode, url, signature = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local url_block = tonumber(ARGV[6])
local sketch, confirm = ARGV[7], tonumber(ARGV[8])
local FIRST_TABLE, FIRST_BUCKET = 4, 9

-- 1. the index must be the one the caller opened
local stored = redis.call('HGET', meta, 'signature')
if not stored then
  return {-1, '', '', ''}
end
if stored ~= signature then
  return {-2, stored, '', ''}
end

local band, bxor = bit.band, bit.bxor
local byte, sub = string.byte, string.sub
local q1, q2, q3, q4, q5, q6, q7, q8 = byte(query, 1, 8)
local qhi = ((q1 * 256 + q2) * 256 + q3) * 256 + q4
local qlo = ((q5 * 256 + q6) * 256 + q7) * 256 + q8

-- Whether the stored sketch of ``key`` (4 bytes) confirms the query's.
local function confirms(key)
  if sketch == '' then
    return true
  end
  local k1, k2, k3, k4 = byte(key, 1, 4)
  local id = ((k1 * 256 + k2) * 256 + k3) * 256 + k4
  local other = redis.call('HGET', sketches, string.format('%d', id))
  if not other or #other ~= #sketch then
    return false
  end
  local matches, filled = 0, 0
  for i = 1, #sketch do
    local a, b = byte(sketch, i), byte(other, i)
    if a ~= 0 or b ~= 0 then
      filled = filled + 1
      if a == b then
        matches = matches + 1
      end
    end
  end
  return filled > 0 and matches * 64 >= confirm * filled
end

-- 2. probe: every stored fingerprint within k in the query's bucket of each
-- table, kept when its sketch confirms it
local ntables = #KEYS - FIRST_TABLE + 1
local blobs = {}
local seen = {}
local found = {}
local best_d, best_key = k + 1, nil

for t = 1, ntables do
  local blob = redis.call('HGET', KEYS[t + FIRST_TABLE - 1], ARGV[t + FIRST_BUCKET - 1])
  blobs[t] = blob
  if blob then
    for i = 1, #blob, 12 do
      local c1, c2, c3, c4 = byte(blob, i, i + 3)
      local x = bxor(((c1 * 256 + c2) * 256 + c3) * 256 + c4, qhi)
      local d = 0
      while x ~= 0 and d <= k do
        x = band(x, x - 1)
        d = d + 1
      end
      if d <= k then
        local c5, c6, c7, c8 = byte(blob, i + 4, i + 7)
        x = bxor(((c5 * 256 + c6) * 256 + c7) * 256 + c8, qlo)
        while x ~= 0 and d <= k do
          x = band(x, x - 1)
          d = d + 1
        end
        if d <= k then
          local key = sub(blob, i + 8, i + 11)
          if not seen[key] then
            seen[key] = true
            if confirms(key) then
              found[#found + 1] = sub(blob, i, i + 11) .. string.char(d)
              if d < best_d or (d == best_d and key < best_key) then
                best_d, best_key = d, key
              end
            end
          end
        end
      end
    end
  end
end

-- 3. the nearest's URL (or URL hash)
local nearest_url = ''
if best_key then
  local k1, k2, k3, k4 = byte(best_key, 1, 4)
  local id = ((k1 * 256 + k2) * 256 + k3) * 256 + k4
  if url_block > 0 then
    local block = redis.call('HGET', urls, string.format('%d', math.floor(id / url_block)))
    local at = (id % url_block) * 8 + 1
    nearest_url = block and sub(block, at, at + 7) or ''
  else
    nearest_url = redis.call('HGET', urls, string.format('%d', id)) or ''
  end
end

-- 4. insert. The first write is a pcall: Redis refuses every write of a
-- script that started above maxmemory (noeviction), so either all of them
-- run or none; a refused one returns the probe's answer with status -3.
local new_key = 0
if mode == 'always' or (mode == 'if_new' and #found == 0) then
  local reply = redis.pcall('HINCRBY', meta, 'size', 1)
  if type(reply) == 'table' and reply.err then
    if string.find(reply.err, 'OOM', 1, true) then
      return {-3, 0, nearest_url, table.concat(found)}
    end
    return reply
  end
  new_key = reply
  if new_key > 4294967295 then
    redis.call('HINCRBY', meta, 'size', -1)
    return redis.error_reply('simhash index full: keys are 32-bit')
  end
  local entry = query .. string.char(
    math.floor(new_key / 16777216) % 256, math.floor(new_key / 65536) % 256,
    math.floor(new_key / 256) % 256, new_key % 256)
  for t = 1, ntables do
    redis.call('HSET', KEYS[t + FIRST_TABLE - 1], ARGV[t + FIRST_BUCKET - 1], (blobs[t] or '') .. entry)
  end
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
    redis.call('HSET', urls, field, sub(block, 1, want) .. hash)
  elseif url ~= '' then
    redis.call('HSET', urls, string.format('%d', new_key), url)
  end
  if sketch ~= '' then
    redis.call('HSET', sketches, string.format('%d', new_key), sketch)
  end
end

return {0, new_key, nearest_url, table.concat(found)}
