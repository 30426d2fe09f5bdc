-- GDPR erasure: a proposal's personal data values can be removed (`countersign proposal erase`,
-- or an admin on the proposal page); who erased it, when and why stay on the proposal.
alter table proposals add column erased_at text;
alter table proposals add column erased_by text;
alter table proposals add column erasure_reason text;
