-- Agent tokens name the person who operates the agent; that person may not approve its
-- proposals.
alter table api_tokens add column operator text;
