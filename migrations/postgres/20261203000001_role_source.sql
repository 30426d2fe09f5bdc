-- Where an account's role came from: `admin` (an admin or the operator granted it, or the
-- account was made with it) or `claim` (the identity provider's role claim granted it at a
-- single sign-on). A claim's role is revoked at the next sign-in whose claim grants none; an
-- admin's is kept. Rows from before this migration have none, and are kept as an admin's.
alter table users add column role_source text check (role_source in ('admin', 'claim'));
