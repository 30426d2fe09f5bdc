-- The policy's life in the database: every version Countersign has run or been asked to run
-- (its text, by version), the one active version (one row, which every instance follows), each
-- activation in order, and the requests to activate one (proposed by one admin, approved by
-- another), with the backtest each was proposed with and the differences its shadow run saw.
create table policy_versions (
    -- sha256 of the policy's canonical form, as decisions record it.
    version text primary key,
    -- The TOML as loaded ('' for the built-in policy).
    text text not null,
    source text not null check (source in ('builtin', 'file', 'proposed')),
    loaded_by text not null,
    loaded_at timestamptz not null
);

-- The version in force: exactly one row once a server has started.
create table policy_active (
    id integer primary key check (id = 1),
    version text not null references policy_versions (version),
    since timestamptz not null
);

-- Every activation, in order: what the policy's history page lists.
create table policy_activations (
    seq bigint generated always as identity primary key,
    version text not null references policy_versions (version),
    previous text,
    activated_at timestamptz not null,
    -- `file` (serve --policy), `builtin` (a new database), `approved` (two admins),
    -- `break_glass` (policy activate at the shell).
    how text not null check (how in ('builtin', 'file', 'approved', 'break_glass')),
    proposed_by text not null,
    approved_by text,
    reason text,
    change_id uuid
);

-- Requests to activate a version (a new candidate, or a return to an earlier one).
create table policy_changes (
    id uuid primary key,
    version text not null references policy_versions (version),
    -- The version active when it was proposed (what its diff and backtest compare against).
    base text not null,
    proposed_by text not null,
    proposed_at timestamptz not null,
    reason text not null,
    status text not null check (status in ('pending', 'approved', 'refused', 'withdrawn')),
    decided_by text,
    decided_at timestamptz,
    decision_reason text,
    -- The backtest's report (JSON) when it was proposed.
    backtest text,
    -- Whether the backtest found a decision that would now be `accept` and was not.
    loosening boolean not null default false,
    -- A shadow run: every new decision is also routed under this version until then.
    shadow_until timestamptz,
    shadowed bigint not null default 0
);
create index policy_changes_by_status on policy_changes (status, proposed_at);

-- A shadow run's differences, counted by route change, tool and agent.
create table policy_shadow_transitions (
    change_id uuid not null references policy_changes (id),
    kind text not null check (kind in ('proposal', 'pre_tool_check')),
    from_route text not null,
    to_route text not null,
    tool text not null,
    agent text not null,
    count bigint not null,
    primary key (change_id, kind, from_route, to_route, tool, agent)
);

-- A few examples of each (per instance): audit-safe facts, never the request.
create table policy_shadow_differences (
    seq bigint generated always as identity primary key,
    change_id uuid not null references policy_changes (id),
    at timestamptz not null,
    kind text not null check (kind in ('proposal', 'pre_tool_check')),
    subject text not null,
    tool text not null,
    agent text not null,
    from_route text not null,
    from_rule text not null,
    to_route text not null,
    to_rule text not null,
    -- JSON arrays of blocker codes.
    from_blockers text not null,
    to_blockers text not null
);
create index policy_shadow_differences_by_change on policy_shadow_differences (change_id, seq);
