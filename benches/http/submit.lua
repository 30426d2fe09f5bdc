-- wrk script: POST a fresh seed 004 tool proposal (new proposal_id and idempotency_key each
-- time) to /api/v1/proposals. Usage:
--   TOKEN=... wrk -t2 -c64 -d15s -s benches/http/submit.lua http://127.0.0.1:3000
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(os.time() + (tid or 0) * 7919)
end

local function uuid()
  local t = "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx"
  return (string.gsub(t, "[xy]", function(c)
    local v = (c == "x") and math.random(0, 15) or math.random(8, 11)
    return string.format("%x", v)
  end))
end

local template = [[{"proposal_id":"%s","proposed_by":"agent-a","timestamp":"2026-11-23T10:00:00Z","domain":"sales","tool":{"name":"crm.update_contact","version":"2024-01"},"intent":{"summary":"Update the contact's email","reasoning":"The customer asked for it in ticket 42."},"parameters":{"contact_id":"c-123","email":"new@example.com"},"risk_level":"medium","approval_required":true,"compliance_context":{"gdpr":false,"hipaa":false},"idempotency_key":"%s","rollback_supported":true,"blast_radius":"small","target_refs":[{"type":"crm_contact","id":"c-123"}]}]]

-- PROPOSAL=accepted: a Category A docs.search the executor benchmark's policy accepts outright,
-- so its command is queued at once (scripts/bench-executor).
if os.getenv("PROPOSAL") == "accepted" then
  template = [[{"proposal_id":"%s","proposed_by":"agent-a","timestamp":"2026-11-23T10:00:00Z","domain":"sales","tool":{"name":"docs.search","version":"1"},"intent":{"summary":"Search the docs","reasoning":"The customer asked about refunds."},"parameters":{"query":"refund policy"},"risk_level":"low","approval_required":false,"compliance_context":{"gdpr":false,"hipaa":false},"idempotency_key":"%s","rollback_supported":true,"blast_radius":"tiny"}]]
end

request = function()
  counter = counter + 1
  local body = string.format(template, uuid(), uuid())
  return wrk.format("POST", "/api/v1/proposals", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("TOKEN"),
  }, body)
end

function response(status, headers, body)
  if status ~= 201 then
    io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n")
  end
end
