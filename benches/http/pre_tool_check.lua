-- wrk script: POST one AANA Agent Action Contract v1 event to /api/v1/pre-tool-check.
-- Usage: TOKEN=... wrk -t2 -c64 -d15s -s benches/http/pre_tool_check.lua http://127.0.0.1:3000
wrk.method = "POST"
wrk.path = "/api/v1/pre-tool-check"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
wrk.body = [[{"schema_version":"aana.agent_tool_precheck.v1","tool_name":"crm.get_contact","tool_category":"private_read","authorization_state":"authenticated","evidence_refs":[{"source_id":"ticket-42","kind":"user_message","trust_tier":"verified","redaction_status":"redacted","summary":"The customer asked for their contact record.","provenance":"bench","freshness":{"status":"fresh"}}],"risk_domain":"customer_support","proposed_arguments":{"contact_id":"c-123"},"recommended_route":"accept"}]]

function response(status, headers, body)
  if status ~= 200 then
    io.stderr:write("unexpected status " .. status .. ": " .. body .. "\n")
  end
end
