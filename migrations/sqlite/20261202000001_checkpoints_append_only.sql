-- Signed checkpoints are evidence like the rows they vouch for: the database refuses to
-- change or delete one. (Whoever owns the file can still drop these triggers; verifying with
-- the server's public key, `audit verify --public-key`, catches checkpoints re-signed then.)
create trigger audit_checkpoints_no_update before update on audit_checkpoints
begin
    select raise(abort, 'audit_checkpoints is append-only');
end;
create trigger audit_checkpoints_no_delete before delete on audit_checkpoints
begin
    select raise(abort, 'audit_checkpoints is append-only');
end;
