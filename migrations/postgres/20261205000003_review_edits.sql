-- Edit, then approve: a reviewer's changes to parameter values before approving, and the
-- edited request's hash the approval binds to (JSON: {"request_hash", "changes": [{"field",
-- "old", "new"}]}). The contract stays as the agent sent it.
alter table proposals add column decision_edit text;
