-- Sign-in throttling and "sign out everywhere" (issue 10).
--
-- `sign_in_throttle`: failed sign-ins counted per account and per client address, so every
-- instance on one database sees the same counts. `key` is a keyed hash (the installation's
-- salt) of what was typed as a username, or of the client's address: neither is stored in
-- the clear. Times are Unix milliseconds, compared as numbers on both backends.
create table sign_in_throttle (
    scope text not null check (scope in ('account', 'address')),
    key text not null,
    failures bigint not null,
    last_failure_ms bigint not null,
    primary key (scope, key)
);
create index sign_in_throttle_by_age on sign_in_throttle (last_failure_ms);

-- Every session remembers the account's epoch at sign-in; disabling the account or resetting
-- its password moves the epoch on, which ends every session signed in before.
alter table users add column session_epoch bigint not null default 0;
