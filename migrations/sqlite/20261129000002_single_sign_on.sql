-- Single sign-on (OpenID Connect). An account made at its first sign-in through the provider
-- is linked to the provider's (issuer, subject), never matched to an existing account by
-- name; it has no password (`password_hash` holds a value no password matches) and no role
-- until the provider's role claim maps one or an admin grants one: `role` may be null.
--
-- SQLite cannot drop a column's NOT NULL in place; a nullable copy of the column (same check)
-- takes its place instead of rebuilding the table, so columns added since stay untouched.
alter table users add column role_granted text
    check (role_granted in ('admin', 'reviewer', 'compliance'));
update users set role_granted = role;
alter table users drop column role;
alter table users rename column role_granted to role;

alter table users add column oidc_issuer text;
alter table users add column oidc_subject text;
create unique index users_by_oidc_subject on users (oidc_issuer, oidc_subject)
    where oidc_subject is not null;
