-- What bench/mix.lua and bench/writes.lua report, shared (each loads it with dofile): every
-- thread counts its non-2xx answers by status and keeps the first few as samples; done()
-- prints the run's figures as "MIX k=v" lines (bench/wrkmix.py reads them).

local MAX_SAMPLES = 3

-- state read back by report() through thread:get
non2xx = 0
statuses = {}
samples = {}

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    statuses[status] = (statuses[status] or 0) + 1
    if #samples < MAX_SAMPLES then
      samples[#samples + 1] = status .. " " .. string.sub(body or "", 1, 200)
    end
  end
end

-- The MIX lines of a run: wrk's summary and latency, and what each of ``threads`` counted.
function report(threads, summary, latency)
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
