-- The standard request mix of bench/stores.py, for wrk:
--
--     wrk -c 32 -t 1 -d 10s -s bench/mix.lua http://127.0.0.1:PORT -- \
--         PREFIX JOB_ID,JOB_ID,... PAGE_PATH PAGE_PATH ...
--
-- PREFIX makes the Idempotency-Keys of this run unique; the job ids are jobs of workspace
-- acme to read; each PAGE_PATH is a second page (a path with a valid ?cursor=...), fetched
-- by bench/stores.py before the run (a wrk script cannot easily make HTTP calls of its own).
--
-- Per 20 requests: 6 lists, 4 cursor pages, 3 creates (each with a fresh Idempotency-Key),
-- 5 job reads, 2 capabilities reads; all as sk_test_acme_owner. done() prints "MIX k=v"
-- lines (requests, latency percentiles in microseconds, non-2xx responses by status, a few
-- of their bodies) for bench/stores.py to read.

local AUTH = "Bearer sk_test_acme_owner"

-- L: list, P: cursor page, C: create, J: job read, K: capabilities (6 + 4 + 3 + 5 + 2 = 20)
local SCHEDULE = {
  "L", "J", "P", "C", "L", "J", "K", "L", "P", "J",
  "C", "L", "P", "J", "L", "K", "C", "P", "J", "L",
}
local LISTS = {
  "/v1/campaigns?limit=20", "/v1/projects?limit=20", "/v1/jobs?limit=20",
  "/v1/products?limit=20", "/v1/campaigns?limit=20", "/v1/projects?limit=20",
}

local threads = {}
local prefix, jobs, pages
local counts = { L = 0, P = 0, C = 0, J = 0, K = 0 }
local slot = 0
local get_headers = { ["Authorization"] = AUTH }

-- response() and the MIX lines done() prints: bench/wrkreport.lua
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "wrkreport.lua")

local function split(text)
  local out = {}
  for part in string.gmatch(text or "", "[^,]+") do
    out[#out + 1] = part
  end
  return out
end

function setup(thread)
  thread:set("thread_id", #threads + 1)
  threads[#threads + 1] = thread
end

function init(args)
  prefix = args[1] or "bench"
  jobs = split(args[2])
  pages = {}
  for i = 3, #args do
    pages[#pages + 1] = args[i]
  end
  assert(#jobs > 0, "mix.lua: give job ids (second argument)")
  assert(#pages > 0, "mix.lua: give cursor page paths (third argument on)")
end

local function pick(kind, choices)
  counts[kind] = counts[kind] + 1
  return choices[(counts[kind] - 1) % #choices + 1]
end

local function create()
  counts.C = counts.C + 1
  local n = counts.C
  local path, body
  if n % 3 == 2 then
    path, body = "/v1/projects", string.format('{"title": "Bench project %d"}', n)
  else
    path, body = "/v1/products", string.format('{"name": "Bench product %d"}', n)
  end
  local headers = {
    ["Authorization"] = AUTH,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = string.format("%s-%d-%d", prefix, thread_id, n),
  }
  return wrk.format("POST", path, headers, body)
end

function request()
  slot = slot % #SCHEDULE + 1
  local kind = SCHEDULE[slot]
  if kind == "C" then
    return create()
  end
  local path
  if kind == "L" then
    path = pick(kind, LISTS)
  elseif kind == "P" then
    path = pick(kind, pages)
  elseif kind == "J" then
    path = "/v1/jobs/" .. pick(kind, jobs)
  else
    counts.K = counts.K + 1
    path = "/v1/capabilities"
  end
  return wrk.format("GET", path, get_headers, nil)
end

function done(summary, latency, requests)
  report(threads, summary, latency)
end
