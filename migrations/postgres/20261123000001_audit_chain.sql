-- The audit trail becomes a hash chain: every row carries
-- sha256(format ‖ seq ‖ previous hash ‖ canonical payload), and `audit_chain` holds the head.
-- Countersign assigns seq itself (gap-free, in chain order), so the identity goes. Rows written
-- before this migration stay as they are, unchained; the chain starts after them.

alter table audit_events alter column seq drop identity;
alter table audit_events add column hash text;
alter table audit_events add constraint audit_events_hash_required
    check (hash is not null) not valid;

create table audit_chain (
    id integer primary key check (id = 1),
    seq bigint not null,
    hash text not null,
    chained_from bigint not null
);
insert into audit_chain (id, seq, hash, chained_from)
select 1,
       coalesce(max(seq), 0),
       '0000000000000000000000000000000000000000000000000000000000000000',
       coalesce(max(seq), 0) + 1
from audit_events;

create trigger audit_events_no_truncate before truncate on audit_events
    for each statement execute function audit_events_append_only();
create function audit_chain_keep() returns trigger language plpgsql as $$
begin
    raise exception 'audit_chain cannot be deleted';
end;
$$;
create trigger audit_chain_no_delete before delete or truncate on audit_chain
    for each statement execute function audit_chain_keep();
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
