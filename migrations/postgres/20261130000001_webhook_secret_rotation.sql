-- A webhook's signing secret can be rotated without a new token: the new secret signs every
-- delivery from then on, and the one it replaced signs them too (a second `v1=` in
-- `Countersign-Signature`) until `webhook_previous_until`, so receivers switch over without
-- refusing a delivery meanwhile.
alter table api_tokens add column webhook_previous_secret text;
alter table api_tokens add column webhook_previous_until timestamptz;
