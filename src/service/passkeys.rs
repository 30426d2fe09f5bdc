//! Passkeys (WebAuthn, `webauthn-rs`): a person registers, names and removes their own on the
//! account page, and proves with one each approval the policy asks a step-up for
//! ([`crate::domain::review::step_up`]).
//!
//! The relying party is Countersign's public URL (`--public-url`): its host is the RP id, its
//! origin the only one accepted. Without one, `localhost` on any port (a machine's own
//! browser). A ceremony's state waits in the database between its two requests, so any
//! instance finishes it, and is taken once. A step-up challenge is not webauthn-rs's random
//! one but [`step_up::challenge`] of the proposal, its request hash and a random nonce, set in
//! both the options sent and the state kept, so the signature binds the exact request.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::Duration;
use uuid::Uuid;
use webauthn_rs::prelude::{
    Base64UrlSafeData, Passkey, PasskeyAuthentication, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, Url, Webauthn, WebauthnBuilder, WebauthnError,
};

use super::error::ServiceError;
use super::services::Services;
use crate::audit::ProposalSteppedUp;
use crate::audit::{Actor, AuditEvent, DecisionRefused, PasskeyChanged, ProposalFacets};
use crate::domain::FieldError;
use crate::domain::access::UseCase;
use crate::domain::lifecycle::ReviewVerdict;
use crate::domain::principal::{Person, Principal};
use crate::domain::record::{CeremonyRecord, PasskeyRecord, ProposalRecord};
use crate::domain::review::step_up::{self, CEREMONY_SECS, StepUpError};
use crate::storage::passkeys::{self, KeptAssertion};
use crate::storage::{StorageError, Tx};

const REGISTER: &str = "register";
const APPROVE: &str = "approve";

/// A step-up approval's verified proof, ready to write with the decision
/// ([`StepUp::write_in`]).
#[derive(Debug)]
pub(super) struct StepUp {
    ceremony: Uuid,
    /// The ceremony's state as answered: a newer one started meanwhile is not taken.
    ceremony_state: String,
    credential_id: String,
    /// The passkey's relying-party record the proof was checked against.
    before: String,
    /// The passkey's relying-party record after this use (its counter).
    passkey: String,
    /// What is kept with the approval (nonce, challenge, the credential's answer), JSON.
    assertion: String,
    event: ProposalSteppedUp,
}

fn corrupt(what: impl std::fmt::Display) -> ServiceError {
    ServiceError::Storage(StorageError::Corrupt(what.to_string()))
}

fn json_text<T: serde::Serialize>(value: &T) -> Result<String, ServiceError> {
    serde_json::to_string(value).map_err(corrupt)
}

/// A credential id as the trail and the pages name it.
fn credential_id(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The refusal of a step-up approval, as the error to answer.
pub(super) fn step_up_refused(e: StepUpError) -> ServiceError {
    let code = match e {
        StepUpError::NoPasskey => "passkey_none",
        StepUpError::Missing => "step_up_required",
        StepUpError::WrongChallenge => "step_up_challenge",
        StepUpError::Invalid(_) => "step_up_invalid",
    };
    ServiceError::Forbidden {
        code,
        message: e.to_string(),
    }
}

impl Services {
    /// The relying party: `--public-url`'s host and origin, or `localhost` on any port.
    fn relying_party(&self) -> Result<Webauthn, ServiceError> {
        let fallback = Url::parse("http://localhost").map_err(corrupt)?;
        let origin = self.notify.public_url.clone().unwrap_or(fallback);
        let rp_id = origin.host_str().unwrap_or("localhost").to_owned();
        let local = self.notify.public_url.is_none();
        WebauthnBuilder::new(&rp_id, &origin)
            .map(|b| b.rp_name("Countersign").allow_any_port(local))
            .and_then(WebauthnBuilder::build)
            .map_err(|e| corrupt(format!("the passkey relying party ({origin}): {e}")))
    }

    /// The person `who` is, if they may manage their passkeys.
    fn passkey_owner<'p>(&self, who: &'p Principal) -> Result<&'p Person, ServiceError> {
        self.authorize(who, UseCase::ManagePasskeys)?;
        who.as_person().ok_or(ServiceError::NotFound)
    }

    /// `who`'s own passkeys, oldest first.
    pub async fn passkeys(&self, who: &Principal) -> Result<Vec<PasskeyRecord>, ServiceError> {
        let person = self.passkey_owner(who)?;
        let mut read = self.read().await?;
        Ok(passkeys::of(read.conn(), &person.username).await?)
    }

    /// `who`'s passkeys as the relying party reads them.
    async fn passkey_keys(&self, who: &Principal) -> Result<Vec<Passkey>, ServiceError> {
        (self.passkeys(who).await?.iter())
            .map(|k| serde_json::from_str::<Passkey>(&k.passkey).map_err(corrupt))
            .collect()
    }

    async fn ceremony_begin(&self, c: CeremonyRecord) -> Result<(), ServiceError> {
        let now = self.now();
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    passkeys::begin(tx.conn(), &c, now).await?;
                    Ok::<_, ServiceError>(())
                })
            })
            .await
    }

    /// Starts registering a passkey for `who`: the options for the browser's
    /// `navigator.credentials.create`, JSON.
    pub async fn passkey_registration(&self, who: &Principal) -> Result<Value, ServiceError> {
        let person = self.passkey_owner(who)?;
        let exclude = (self.passkey_keys(who).await?.iter())
            .map(|k| k.cred_id().clone())
            .collect();
        let user = user_handle(&person.username);
        let (options, state) = self
            .relying_party()?
            .start_passkey_registration(user, &person.username, &person.username, Some(exclude))
            .map_err(corrupt)?;
        self.ceremony_begin(CeremonyRecord {
            id: ceremony_id(&person.username, REGISTER, None),
            username: person.username.clone(),
            purpose: REGISTER.into(),
            proposal_id: None,
            request_hash: None,
            nonce: None,
            state: json_text(&state)?,
            expires_at: self.now() + Duration::seconds(CEREMONY_SECS),
        })
        .await?;
        serde_json::to_value(&options).map_err(corrupt)
    }

    /// Finishes registering: the browser's `credential` (JSON) answers `who`'s registration
    /// ceremony; the passkey is kept under `name`. Audited `passkey.registered`.
    pub async fn register_passkey(
        &self,
        who: &Principal,
        name: &str,
        credential: &str,
    ) -> Result<PasskeyRecord, ServiceError> {
        let person = self.passkey_owner(who)?;
        let name = step_up::name(name)
            .map_err(|rule| ServiceError::Invalid(vec![FieldError::new("name", rule)]))?;
        let invalid =
            |rule: String| ServiceError::Invalid(vec![FieldError::new("credential", rule)]);
        let answer: RegisterPublicKeyCredential = serde_json::from_str(credential)
            .map_err(|e| invalid(format!("not a WebAuthn registration: {e}")))?;
        let now = self.now();
        let ceremony = {
            let mut read = self.read().await?;
            passkeys::ceremony(read.conn(), &person.username, REGISTER, None, now).await?
        }
        .ok_or_else(|| {
            invalid("no registration is under way (or it lapsed): start again".into())
        })?;
        let state: PasskeyRegistration = serde_json::from_str(&ceremony.state).map_err(corrupt)?;
        let passkey = self
            .relying_party()?
            .finish_passkey_registration(&answer, &state)
            .map_err(|e| invalid(format!("the registration did not verify: {e}")))?;
        let record = PasskeyRecord {
            id: Uuid::now_v7(),
            username: person.username.clone(),
            name,
            credential_id: credential_id(passkey.cred_id().as_ref()),
            passkey: json_text(&passkey)?,
            created_at: now,
            last_used_at: None,
        };
        let event = self.passkey_event("registered", &record, true);
        let kept = record.clone();
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    if !passkeys::take(tx.conn(), ceremony.id, &ceremony.state).await? {
                        return Err(invalid("this registration was already finished".into()));
                    }
                    if !passkeys::insert(tx.conn(), &kept).await? {
                        return Err(invalid("this passkey is already registered".into()));
                    }
                    tx.record(now, &Actor::user(&kept.username), event);
                    Ok(())
                })
            })
            .await?;
        Ok(record)
    }

    fn passkey_event(&self, change: &'static str, p: &PasskeyRecord, named: bool) -> AuditEvent {
        AuditEvent::PasskeyChanged(PasskeyChanged {
            change,
            passkey_id: p.id,
            username: p.username.clone(),
            credential_id: p.credential_id.clone(),
            name: named.then(|| self.store().salt().text(&p.name)),
        })
    }

    /// Renames `who`'s passkey `id`. Audited `passkey.renamed`.
    pub async fn rename_passkey(
        &self,
        who: &Principal,
        id: Uuid,
        name: &str,
    ) -> Result<PasskeyRecord, ServiceError> {
        let person = self.passkey_owner(who)?;
        let name = step_up::name(name)
            .map_err(|rule| ServiceError::Invalid(vec![FieldError::new("name", rule)]))?;
        let (username, now) = (person.username.clone(), self.now());
        let services = self.clone();
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    let renamed = passkeys::rename(tx.conn(), id, &username, &name)
                        .await?
                        .ok_or(ServiceError::NotFound)?;
                    let event = services.passkey_event("renamed", &renamed, true);
                    tx.record(now, &Actor::user(&username), event);
                    Ok(renamed)
                })
            })
            .await
    }

    /// Removes `who`'s passkey `id`. Audited `passkey.removed`.
    pub async fn remove_passkey(
        &self,
        who: &Principal,
        id: Uuid,
    ) -> Result<PasskeyRecord, ServiceError> {
        let person = self.passkey_owner(who)?;
        let (username, now) = (person.username.clone(), self.now());
        let services = self.clone();
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    let removed = passkeys::remove(tx.conn(), id, &username)
                        .await?
                        .ok_or(ServiceError::NotFound)?;
                    let event = services.passkey_event("removed", &removed, false);
                    tx.record(now, &Actor::user(&username), event);
                    Ok(removed)
                })
            })
            .await
    }

    /// Whether approving `p` needs a passkey: the policy's `step_up` for its tool, or its
    /// effective risk at or above `step_up_risk`.
    pub fn step_up_needed(&self, p: &ProposalRecord) -> bool {
        self.policy()
            .step_up(&p.contract.tool.name, p.routing.effective_risk)
    }

    /// A step-up challenge for `who` to approve proposal `id`: the options for the browser's
    /// `navigator.credentials.get`, JSON, whose challenge binds the proposal's request hash.
    /// Refused when they may not see the proposal or have no passkey.
    pub async fn step_up_challenge(
        &self,
        who: &Principal,
        id: Uuid,
    ) -> Result<Value, ServiceError> {
        self.authorize(who, UseCase::Decide)?;
        let person = who.as_person().ok_or(ServiceError::NotFound)?;
        let p = (self.reachable(who, UseCase::ViewProposal, id).await?)
            .ok_or(ServiceError::NotFound)?;
        let keys = self.passkey_keys(who).await?;
        if keys.is_empty() {
            return Err(step_up_refused(StepUpError::NoPasskey));
        }
        let (mut options, state) = self
            .relying_party()?
            .start_passkey_authentication(&keys)
            .map_err(corrupt)?;
        let nonce: [u8; 16] = rand::random();
        let challenge = step_up::challenge(id, &p.request_hash, &nonce);
        options.public_key.challenge = Base64UrlSafeData::from(challenge.to_vec());
        let mut state = serde_json::to_value(&state).map_err(corrupt)?;
        state["ast"]["challenge"] = json!(credential_id(&challenge));
        self.ceremony_begin(CeremonyRecord {
            id: ceremony_id(&person.username, APPROVE, Some(id)),
            username: person.username.clone(),
            purpose: APPROVE.into(),
            proposal_id: Some(id),
            request_hash: Some(p.request_hash.clone()),
            nonce: Some(hex::encode(nonce)),
            state: state.to_string(),
            expires_at: self.now() + Duration::seconds(CEREMONY_SECS),
        })
        .await?;
        serde_json::to_value(&options).map_err(corrupt)
    }

    /// The step-up proof of `reviewer`'s approval of `p`: `assertion` (the browser's answer,
    /// JSON) verified against the challenge they were given for this proposal and its current
    /// request. A refusal that says something about the person (a wrong or replayed answer,
    /// one that does not verify) is recorded `proposal.decision_refused`.
    pub(super) async fn step_up_proof(
        &self,
        reviewer: &Person,
        p: &ProposalRecord,
        assertion: Option<&str>,
    ) -> Result<StepUp, ServiceError> {
        let proof = self.verify_step_up(reviewer, p, assertion).await?;
        if let Err(e @ (StepUpError::WrongChallenge | StepUpError::Invalid(_))) = &proof {
            let code = match e {
                StepUpError::WrongChallenge => "step_up_challenge",
                _ => "step_up_invalid",
            };
            let event = AuditEvent::DecisionRefused(DecisionRefused {
                proposal_id: p.id,
                facets: ProposalFacets::of(&p.agent, &p.contract),
                verdict: ReviewVerdict::Approved,
                refused: code,
            });
            let actor = Actor::user(&reviewer.username);
            self.store()
                .record(vec![(self.now(), actor, event)])
                .await?;
        }
        proof.map_err(step_up_refused)
    }

    /// The person's live step-up ceremony for `p` and their passkeys.
    async fn step_up_inputs(
        &self,
        reviewer: &Person,
        p: &ProposalRecord,
    ) -> Result<(Option<CeremonyRecord>, Vec<PasskeyRecord>), ServiceError> {
        let mut read = self.read().await?;
        let name = &reviewer.username;
        let now = self.now();
        let ceremony = passkeys::ceremony(read.conn(), name, APPROVE, Some(p.id), now).await?;
        Ok((ceremony, passkeys::of(read.conn(), name).await?))
    }

    /// [`Services::step_up_proof`] before its refusal is recorded: the outer error is a
    /// failure of the server, the inner one a refusal.
    async fn verify_step_up(
        &self,
        reviewer: &Person,
        p: &ProposalRecord,
        assertion: Option<&str>,
    ) -> Result<Result<StepUp, StepUpError>, ServiceError> {
        let (ceremony, owned) = self.step_up_inputs(reviewer, p).await?;
        if owned.is_empty() {
            return Ok(Err(StepUpError::NoPasskey));
        }
        let Some(assertion) = assertion.map(str::trim).filter(|a| !a.is_empty()) else {
            return Ok(Err(StepUpError::Missing));
        };
        let answer: PublicKeyCredential = match serde_json::from_str(assertion) {
            Ok(answer) => answer,
            Err(e) => return Ok(Err(StepUpError::Invalid(format!("not an assertion: {e}")))),
        };
        // None given for this proposal, or its request was revised since.
        let bound = ceremony.filter(|c| c.request_hash.as_deref() == Some(&p.request_hash));
        let nonce = (bound.as_ref())
            .and_then(|c| c.nonce.as_deref())
            .and_then(|n| hex::decode(n).ok());
        let (Some(ceremony), Some(nonce)) = (bound, nonce) else {
            return Ok(Err(StepUpError::WrongChallenge));
        };
        let state: PasskeyAuthentication =
            serde_json::from_str(&ceremony.state).map_err(corrupt)?;
        let result = match self
            .relying_party()?
            .finish_passkey_authentication(&answer, &state)
        {
            Ok(result) => result,
            Err(WebauthnError::MismatchedChallenge) => return Ok(Err(StepUpError::WrongChallenge)),
            Err(e) => return Ok(Err(StepUpError::Invalid(e.to_string()))),
        };
        let used = credential_id(result.cred_id().as_ref());
        let Some(record) = owned.iter().find(|k| k.credential_id == used) else {
            return Ok(Err(StepUpError::Invalid("not one of your passkeys".into())));
        };
        let mut key: Passkey = serde_json::from_str(&record.passkey).map_err(corrupt)?;
        key.update_credential(&result);
        let challenge = credential_id(&step_up::challenge(p.id, &p.request_hash, &nonce));
        let kept =
            json!({"nonce": hex::encode(&nonce), "challenge": challenge, "credential": answer});
        Ok(Ok(StepUp {
            ceremony: ceremony.id,
            ceremony_state: ceremony.state.clone(),
            credential_id: used.clone(),
            before: record.passkey.clone(),
            passkey: json_text(&key)?,
            assertion: kept.to_string(),
            event: ProposalSteppedUp {
                proposal_id: p.id,
                facets: ProposalFacets::of(&p.agent, &p.contract),
                credential_id: used,
                challenge,
                nonce: hex::encode(&nonce),
                user_verified: result.user_verified(),
                request_hash_sha256: p.request_hash.clone(),
            },
        }))
    }
}

impl StepUp {
    /// Takes the ceremony (once: a replay, or the same answer racing on another instance, is
    /// refused here), moves the passkey's counter, keeps the assertion with the approval and
    /// records `proposal.stepped_up`: in the decision's own transaction.
    pub(super) async fn write_in(
        &self,
        tx: &mut Tx,
        username: &str,
        now: time::OffsetDateTime,
    ) -> Result<(), ServiceError> {
        if !passkeys::take(tx.conn(), self.ceremony, &self.ceremony_state).await? {
            return Err(step_up_refused(StepUpError::WrongChallenge));
        }
        let (id, before, after) = (&self.credential_id, &self.before, &self.passkey);
        if !passkeys::used(tx.conn(), id, before, after, now).await? {
            let why = "the passkey was removed, or used elsewhere at the same moment".to_owned();
            return Err(step_up_refused(StepUpError::Invalid(why)));
        }
        let kept = KeptAssertion {
            proposal_id: self.event.proposal_id,
            username,
            credential_id: &self.credential_id,
            request_hash: &self.event.request_hash_sha256,
            assertion: &self.assertion,
            at: now,
        };
        passkeys::keep(tx.conn(), &kept).await?;
        let event = AuditEvent::ProposalSteppedUp(self.event.clone());
        tx.record(now, &Actor::user(username), event);
        Ok(())
    }
}

/// The id of `username`'s ceremony for `purpose` (and `proposal`): one per person, purpose and
/// proposal, so a newer one replaces the older, on every instance.
fn ceremony_id(username: &str, purpose: &str, proposal: Option<Uuid>) -> Uuid {
    let proposal = proposal.map(|p| p.to_string()).unwrap_or_default();
    let digest = Sha256::digest(format!(
        "countersign/ceremony/{purpose}/{proposal}/{username}"
    ));
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// The WebAuthn user handle of `username`: stable, and not the name itself.
fn user_handle(username: &str) -> Uuid {
    let digest = Sha256::digest(format!("countersign/user/{username}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_handle_is_stable_and_per_person() {
        assert_eq!(user_handle("ana"), user_handle("ana"));
        assert_ne!(user_handle("ana"), user_handle("bo"));
    }
}
