-- Signed checkpoints are evidence like the rows they vouch for: the database refuses to
-- change, delete or truncate them. (The owner can still drop these triggers; verifying with
-- the server's public key, `audit verify --public-key`, catches checkpoints re-signed then.)
create function audit_checkpoints_append_only() returns trigger language plpgsql as $$
begin
    raise exception 'audit_checkpoints is append-only';
end;
$$;
create trigger audit_checkpoints_no_update before update or delete on audit_checkpoints
    for each statement execute function audit_checkpoints_append_only();
create trigger audit_checkpoints_no_truncate before truncate on audit_checkpoints
    for each statement execute function audit_checkpoints_append_only();
