-- The executor queue, hardened (see src/domain/command/mod.rs for the life of a command):
-- new command and proposal statuses, rollback commands linked to the command they undo,
-- retry backoff, the approval window, run time limits, people's resolutions, executor token
-- scopes and paused tools.

alter table proposals drop constraint proposals_status_check;
alter table proposals add constraint proposals_status_check check (status in
    ('pending', 'approved', 'rejected', 'accepted', 'refused', 'expired', 'succeeded', 'failed',
     'outcome_unknown', 'timed_out'));

alter table commands drop constraint commands_status_check;
alter table commands add constraint commands_status_check check (status in ('queued', 'leased',
    'succeeded', 'failed', 'outcome_unknown', 'timed_out', 'expired', 'awaiting_approval',
    'dismissed'));
alter table commands drop constraint commands_proposal_id_key;
-- `action` runs the approved proposal; `rollback` undoes the command `rollback_of`.
alter table commands add column kind text not null default 'action'
    check (kind in ('action', 'rollback'));
alter table commands add column rollback_of uuid unique references commands (id);
alter table commands add column tool_name text;
update commands set tool_name = spec -> 'tool' ->> 'name';
alter table commands alter column tool_name set not null;
-- Not leased before this (a retry's backoff).
alter table commands add column available_at timestamptz;
update commands set available_at = created_at;
alter table commands alter column available_at set not null;
-- Not leased for the first time after this (the approval window); null: no window.
alter table commands add column execute_by timestamptz;
-- The running attempt must report by this (execution.timeout_ms); null: no limit.
alter table commands add column run_deadline timestamptz;
-- How the last attempt ended without success, and what the executor said of its side effect.
alter table commands add column interruption text;
alter table commands add column side_effect text check (side_effect in ('none', 'possible', 'done'));
-- A person's settlement of an unknown outcome.
alter table commands add column resolution text check (resolution in ('succeeded', 'failed', 'release'));
alter table commands add column resolved_by text;
alter table commands add column resolved_at timestamptz;
alter table commands add column resolution_reason text;
create unique index commands_one_action on commands (proposal_id) where kind = 'action';

-- An executor token's tool scope: comma-separated globs; null for a token without one.
alter table api_tokens add column tool_scope text;

-- The kill switch: tools (exact names or globs, `*` for all) no executor may lease.
create table paused_tools (
    pattern text primary key,
    paused_by text not null,
    paused_at timestamptz not null
);
