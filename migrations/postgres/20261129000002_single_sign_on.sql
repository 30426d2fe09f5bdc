-- Single sign-on (OpenID Connect). An account made at its first sign-in through the provider
-- is linked to the provider's (issuer, subject), never matched to an existing account by
-- name; it has no password (`password_hash` holds a value no password matches) and no role
-- until the provider's role claim maps one or an admin grants one: `role` may be null.
alter table users alter column role drop not null;

alter table users add column oidc_issuer text;
alter table users add column oidc_subject text;
create unique index users_by_oidc_subject on users (oidc_issuer, oidc_subject)
    where oidc_subject is not null;
