-- The person who made an agent token at `/admin/tokens` saw its secret, so they could submit as
-- that agent: like its named operator, they may not approve its proposals. Null for a token made
-- at the shell (`countersign token create`), where no person signed in.
alter table api_tokens add column created_by text;
