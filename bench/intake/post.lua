-- wrk script for bench/intake: POST one pre-signed webhook body with a unique X-GitHub-Delivery.
-- The signature covers the body only, so one signed body serves every request; the delivery id
-- (a header) makes each request a new delivery. Arguments (after `--`):
--   1 delivery-id prefix, 2 X-GitHub-Event, 3 X-Hub-Signature-256 value, 4 path of the body file.
local threads = {}
local counter = 0
local headers = nil
local body = nil
local prefix = "bench"

function setup(thread)
   table.insert(threads, thread)
   thread:set("thread_no", #threads)
end

function init(args)
   prefix = args[1] .. "-" .. tostring(thread_no)
   local f = assert(io.open(args[4], "rb"))
   body = f:read("*a")
   f:close()
   headers = {
      ["Content-Type"] = "application/json",
      ["X-GitHub-Event"] = args[2],
      ["X-Hub-Signature-256"] = args[3],
   }
end

function request()
   counter = counter + 1
   headers["X-GitHub-Delivery"] = prefix .. "-" .. tostring(counter)
   return wrk.format("POST", "/webhooks/github", headers, body)
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
      '"latency_us":{"mean":%.1f,"p50":%d,"p90":%d,"p99":%d,"max":%d}}\n',
      summary.requests, summary.duration, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout,
      latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
