-- wrk script: one executor per thread (run with -tN -cN): lease, then complete what it leased,
-- then lease again. Every two requests are one lease + complete. Usage:
--   EXECUTOR_TOKEN=... wrk -t8 -c8 -d10s -s benches/http/executor.lua http://127.0.0.1:3999
-- With NEXT=1 each completion also asks for the executor's next command (`"next": {}`): one
-- request per command once the loop runs, a plain lease only when the answer's `next` is null.
local pending = nil
local headers = nil
local next_body = os.getenv("NEXT") == "1" and ',"next":{}' or ""

function init(args)
  headers = {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("EXECUTOR_TOKEN"),
  }
end

request = function()
  if pending then
    local path = "/api/v1/executor/commands/" .. pending.id .. "/complete"
    local body = string.format('{"lease_token":"%s","result":{"ok":true}%s}', pending.token, next_body)
    pending = nil
    return wrk.format("POST", path, headers, body)
  end
  return wrk.format("POST", "/api/v1/executor/lease", headers, "{}")
end

function response(status, hdrs, body)
  if status == 200 then
    -- A lease's answer, or a completion's with its `next` lease (the settled command carries
    -- no lease token and no grant). The signed grant names its command once (`command_id`);
    -- the answer's keys are sorted, so the command object does not start with its id.
    local token = body:match('"lease_token":"([^"]+)"')
    local id = body:match('"command_id":"([^"]+)"')
    if token and id then
      pending = { id = id, token = token }
    end
  elseif status ~= 204 then
    io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n")
  end
end
