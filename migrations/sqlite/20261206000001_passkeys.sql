-- Passkeys (WebAuthn) people register on their account page, and the ceremonies in flight.
-- A step-up approval's assertion is kept with the approval it proved (passkey_assertions):
-- its challenge is sha256 of the proposal and its request hash with a nonce, so the signature
-- itself says which request was approved.
create table passkeys (
    id blob primary key,
    username text not null,
    name text not null,
    -- The credential id, base64url: what the trail records.
    credential_id text not null unique,
    -- webauthn-rs's Passkey (public key, counter), JSON.
    passkey text not null,
    created_at text not null,
    last_used_at text
);
create index passkeys_by_user on passkeys (username);

-- A ceremony's state between its two requests (any instance may finish it), used once.
create table passkey_ceremonies (
    id blob primary key,
    username text not null,
    purpose text not null check (purpose in ('register', 'approve')),
    proposal_id blob,
    request_hash text,
    nonce text,
    state text not null,
    expires_at text not null
);
create index passkey_ceremonies_by_user on passkey_ceremonies (username, purpose);

create table passkey_assertions (
    proposal_id blob not null,
    username text not null,
    credential_id text not null,
    request_hash text not null,
    -- The assertion as verified: nonce, challenge, clientDataJSON, authenticatorData and
    -- signature, JSON (base64url values).
    assertion text not null,
    at text not null,
    primary key (proposal_id, username)
);
