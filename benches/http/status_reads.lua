-- wrk script: agents' status reads of many proposals, GET /api/v1/proposals/{id} with $TOKEN,
-- each request the next id of the file $IDS (one a line), each wrk thread starting at its own
-- place in it: as many agents poll their own proposals, not one proposal polled by all.
-- Usage: IDS=ids.txt TOKEN=... wrk -t2 -c64 -d10s --latency -s benches/http/status_reads.lua http://127.0.0.1:3000
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")

local paths = {}
for id in io.lines(os.getenv("IDS")) do
  paths[#paths + 1] = "/api/v1/proposals/" .. id
end
assert(#paths > 0, "no ids in " .. os.getenv("IDS"))

local threads = 0
local next_id = 1

function setup(thread)
  threads = threads + 1
  thread:set("next_id", (threads * 7919) % #paths + 1)
end

function request()
  local path = paths[next_id]
  next_id = next_id % #paths + 1
  return wrk.format(nil, path)
end

function response(status, headers, body)
  if status ~= 200 then
    io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n")
  end
end
