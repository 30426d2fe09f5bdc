-- The audit trail becomes a hash chain: every row carries
-- sha256(format ‖ seq ‖ previous hash ‖ canonical payload), and `audit_chain` holds the head.
-- Rows written before this migration stay as they are, unchained; the chain starts after them
-- (`chained_from`), and `countersign audit verify` says so.

alter table audit_events add column hash text;

create table audit_chain (
    id integer primary key check (id = 1),
    seq integer not null,
    hash text not null,
    chained_from integer not null
);
insert into audit_chain (id, seq, hash, chained_from)
select 1,
       coalesce(max(seq), 0),
       '0000000000000000000000000000000000000000000000000000000000000000',
       coalesce(max(seq), 0) + 1
from audit_events;

create trigger audit_events_hash_required before insert on audit_events
when new.hash is null
begin
    select raise(abort, 'audit rows must carry their chain hash');
end;
create trigger audit_chain_no_delete before delete on audit_chain
begin
    select raise(abort, 'audit_chain cannot be deleted');
end;
create index audit_events_by_kind on audit_events (action, seq);
create index audit_events_by_actor on audit_events (actor, seq);

-- Signed chain heads (Ed25519, key outside the database).
create table audit_checkpoints (
    seq bigint primary key,
    hash text not null,
    at text not null,
    public_key text not null,
    signature text not null
);
