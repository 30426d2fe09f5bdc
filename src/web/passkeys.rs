//! Passkeys' side of the desk: the account page, the options of the browser's passkey prompt
//! (registering, or answering a step-up challenge), and the forms that add, rename and remove
//! one. The rules (whose passkeys, what a challenge binds, what verifies) are the services'.

use app::dto::{self, AppError, Notice, PasskeyView};
use app::ports::DecideOutcome;
use uuid::Uuid;

use super::{internal, moment, principal};
use crate::service::{ServiceError, Services};

/// The notice of a step-up refusal's code, if it is one.
pub(super) fn refusal(code: &str) -> Option<Notice> {
    Some(match code {
        "passkey_none" => Notice::PasskeyNone,
        "step_up_required" => Notice::StepUpRequired,
        "step_up_challenge" => Notice::StepUpChallenge,
        "step_up_invalid" => Notice::StepUpInvalid,
        _ => return None,
    })
}

/// The account page.
async fn account(services: &Services, viewer: &dto::Viewer) -> Result<dto::AccountView, AppError> {
    let who = principal(services, viewer).await?;
    let now = services.now();
    let passkeys = services.passkeys(&who).await.map_err(internal)?;
    Ok(dto::AccountView {
        username: viewer.username.clone(),
        role: viewer.role.as_str().to_owned(),
        passkeys: passkeys
            .into_iter()
            .map(|p| PasskeyView {
                id: p.id.to_string(),
                name: p.name,
                credential_id: p.credential_id,
                created_at: moment(p.created_at, now),
                last_used_at: p.last_used_at.map(|t| moment(t, now)),
            })
            .collect(),
    })
}

/// The options of the browser's passkey prompt, JSON.
async fn options(
    services: &Services,
    viewer: &dto::Viewer,
    proposal: Option<&str>,
) -> Result<Result<String, Notice>, AppError> {
    let who = principal(services, viewer).await?;
    let options = match proposal {
        None => services.passkey_registration(&who).await,
        Some(id) => {
            let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
            services.step_up_challenge(&who, id).await
        }
    };
    match options {
        Ok(options) => Ok(Ok(options.to_string())),
        Err(ServiceError::Forbidden { code, .. }) if refusal(code).is_some() => {
            Ok(Err(refusal(code).unwrap_or(Notice::StepUpInvalid)))
        }
        Err(e) => Err(internal(e)),
    }
}

/// What came of a passkey form.
fn outcome<T>(done: Result<T, ServiceError>, notice: Notice) -> Result<DecideOutcome, AppError> {
    match done {
        Ok(_) => Ok(DecideOutcome::Decided(notice)),
        Err(ServiceError::Invalid(_)) => Ok(DecideOutcome::Refused(Notice::PasskeyInvalid)),
        Err(ServiceError::NotFound) => Ok(DecideOutcome::Refused(Notice::NotFound)),
        Err(e) => Err(internal(e)),
    }
}

/// Registers the passkey the browser created.
async fn add(
    services: &Services,
    viewer: &dto::Viewer,
    name: &str,
    credential: &str,
) -> Result<DecideOutcome, AppError> {
    let who = principal(services, viewer).await?;
    let added = services.register_passkey(&who, name, credential).await;
    if let Err(ServiceError::Invalid(why)) = &added {
        tracing::info!(username = %viewer.username, refused = ?why, "a passkey was not registered");
    }
    outcome(added, Notice::PasskeyAdded)
}

/// Renames one of the viewer's passkeys.
async fn rename(
    services: &Services,
    viewer: &dto::Viewer,
    id: &str,
    name: &str,
) -> Result<DecideOutcome, AppError> {
    let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
    let who = principal(services, viewer).await?;
    outcome(
        services.rename_passkey(&who, id, name).await,
        Notice::PasskeyRenamed,
    )
}

/// Removes one of the viewer's passkeys.
async fn remove(
    services: &Services,
    viewer: &dto::Viewer,
    id: &str,
) -> Result<DecideOutcome, AppError> {
    let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
    let who = principal(services, viewer).await?;
    outcome(
        services.remove_passkey(&who, id).await,
        Notice::PasskeyRemoved,
    )
}

#[async_trait::async_trait]
impl app::ports::AccountDesk for super::ReviewDesk {
    async fn account(&self, viewer: &dto::Viewer) -> Result<dto::AccountView, AppError> {
        account(&self.services, viewer).await
    }

    async fn passkey_options(
        &self,
        viewer: &dto::Viewer,
        proposal: Option<&str>,
    ) -> Result<Result<String, Notice>, AppError> {
        options(&self.services, viewer, proposal).await
    }

    async fn add_passkey(
        &self,
        viewer: &dto::Viewer,
        name: &str,
        credential: &str,
    ) -> Result<DecideOutcome, AppError> {
        add(&self.services, viewer, name, credential).await
    }

    async fn rename_passkey(
        &self,
        viewer: &dto::Viewer,
        id: &str,
        name: &str,
    ) -> Result<DecideOutcome, AppError> {
        rename(&self.services, viewer, id, name).await
    }

    async fn remove_passkey(
        &self,
        viewer: &dto::Viewer,
        id: &str,
    ) -> Result<DecideOutcome, AppError> {
        remove(&self.services, viewer, id).await
    }
}
