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
local MAX_SAMPLES = 3

local threads = {}
local prefix, keys
local slot, reads, creates, sent = 0, 0, 0, 0

non2xx = 0
statuses = {}
samples = {}

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

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    statuses[status] = (statuses[status] or 0) + 1
    if #samples < MAX_SAMPLES then
      samples[#samples + 1] = status .. " " .. string.sub(body or "", 1, 200)
    end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("MIX requests=%d\n", summary.requests))
  io.write(string.format("MIX duration_us=%d\n", summary.duration))
  io.write(string.format("MIX p50_us=%d\n", latency:percentile(50)))
  io.write(string.format("MIX p99_us=%d\n", latency:percentile(99)))
  io.write(string.format("MIX socket_errors=%d\n", e.connect + e.read + e.write + e.timeout))
  local total = 0
  for _, thread in ipairs(threads) do
    total = total + thread:get("non2xx")
    for status, count in pairs(thread:get("statuses")) do
      io.write(string.format("MIX status_%d=%d\n", status, count))
    end
    for _, sample in ipairs(thread:get("samples")) do
      io.write("MIX sample=" .. string.gsub(sample, "[\r\n]", " ") .. "\n")
    end
  end
  io.write(string.format("MIX non2xx=%d\n", total))
end
