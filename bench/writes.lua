-- The write mix of bench/writes.py, for wrk: 80% reads, 20% product creates.
--
--     wrk -c 32 -t 1 -d 10s -s bench/writes.lua http://127.0.0.1:PORT -- PREFIX KEY,KEY,...
--
-- Per 10 requests: 8 reads (project lists, campaign lists, capabilities) and 2 product creates
-- (no Idempotency-Key). Request n is sent with key n modulo the keys given: one key (the
-- default world), or one per sandbox (the load spread over them). done() prints "MIX k=v"
-- lines as bench/mix.lua does (bench/wrkmix.py reads them). PREFIX names the products.

local READS = { "/v1/projects?limit=20", "/v1/campaigns?limit=20", "/v1/capabilities" }
-- R: read, C: create (8 + 2 = 10)
local SCHEDULE = { "R", "R", "R", "R", "C", "R", "R", "R", "R", "C" }

local threads = {}
local prefix, keys
local slot, reads, creates, sent = 0, 0, 0, 0

-- response() and the MIX lines done() prints: bench/wrkreport.lua
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "wrkreport.lua")

function setup(thread)
  threads[#threads + 1] = thread
end

function init(args)
  prefix = args[1] or "bench"
  keys = {}
  for part in string.gmatch(args[2] or "", "[^,]+") do
    keys[#keys + 1] = part
  end
  assert(#keys > 0, "writes.lua: give API keys (second argument)")
end

function request()
  slot = slot % #SCHEDULE + 1
  sent = sent + 1
  local auth = "Bearer " .. keys[sent % #keys + 1]
  if SCHEDULE[slot] == "C" then
    creates = creates + 1
    local headers = { ["Authorization"] = auth, ["Content-Type"] = "application/json" }
    local body = string.format('{"name": "%s product %d"}', prefix, creates)
    return wrk.format("POST", "/v1/products", headers, body)
  end
  reads = reads + 1
  return wrk.format("GET", READS[reads % #READS + 1], { ["Authorization"] = auth }, nil)
end

function done(summary, latency, requests)
  report(threads, summary, latency)
end
