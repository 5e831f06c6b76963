-- POSTs one request body, read from the file named after `--`, and prints
-- a machine-readable summary line for bench/load.sh. With a second argument
-- `count`, also counts answers by status (slower: wrk then parses every
-- response in Lua), for the overload run.
--   wrk -s bench/post.lua http://127.0.0.1:8080/hello/sync -- body.json [count]

local counting = false
local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   local file = assert(io.open(args[1], "rb"))
   wrk.method = "POST"
   wrk.body = file:read("*a")
   file:close()
   wrk.headers["Content-Type"] = "application/json"
   counting = args[2] == "count"
   if counting then
      c200, c429, cother, retry_after_missing = 0, 0, 0, 0
      response = function(status, headers, body)
         if status == 200 then
            c200 = c200 + 1
         elseif status == 429 then
            c429 = c429 + 1
            if headers["Retry-After"] == nil and headers["retry-after"] == nil then
               retry_after_missing = retry_after_missing + 1
            end
         else
            cother = cother + 1
         end
      end
   end
end

function done(summary, latency, requests)
   local c200, c429, cother, missing = 0, 0, 0, 0
   for _, t in ipairs(threads) do
      c200 = c200 + (t:get("c200") or 0)
      c429 = c429 + (t:get("c429") or 0)
      cother = cother + (t:get("cother") or 0)
      missing = missing + (t:get("retry_after_missing") or 0)
   end
   local e = summary.errors
   io.write(string.format(
      "RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d " ..
      "connect_errors=%d read_errors=%d write_errors=%d timeouts=%d non2xx=%d " ..
      "s200=%d s429=%d sother=%d retry_after_missing=%d\n",
      summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
      latency.max, e.connect, e.read, e.write, e.timeout, e.status,
      c200, c429, cother, missing))
end
