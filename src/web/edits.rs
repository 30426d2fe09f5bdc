//! "Edit, then approve" on the proposal page: the parameters offered for editing (only values
//! the page shows in clear: never a secret, nor withheld personal data), the edit shown after
//! the decision, and the form's post. The rules (what may change, the new request, its route)
//! are the services'; this only translates.

use app::dto::{self, AppError, EditFieldView, EditView, Notice};
use app::ports::DecideOutcome;
use serde_json::Value;
use uuid::Uuid;

use super::{internal, principal, refusal};
use crate::domain::record::ProposalRecord;
use crate::domain::review::disclosure::{Disclosure, entries};
use crate::domain::review::edit::Edited;
use crate::domain::review::text::{CLOSE, OPEN, is_hidden, visible};
use crate::service::{ServiceError, Services, withholds_personal_data};

/// The parameters of `p` a reviewer may edit on the page: each top-level one whose every value
/// the page shows in clear.
pub(super) fn fields(p: &ProposalRecord) -> Vec<EditFieldView> {
    let regulated = withholds_personal_data(p);
    let params = Value::Object(p.contract.parameters.clone());
    let entries = entries("parameters", &params, regulated);
    (p.contract.parameters.iter())
        .filter(|(k, _)| {
            let at = format!("/parameters/{}", k.replace('~', "~0").replace('/', "~1"));
            (entries.iter())
                .filter(|e| e.pointer == at || e.pointer.starts_with(&format!("{at}/")))
                .all(|e| e.disclosure == Disclosure::Shown)
        })
        .map(|(k, v)| EditFieldView {
            pointer: hex::encode(format!("/{}", k.replace('~', "~0").replace('/', "~1"))),
            name: visible(k).text,
            json: escaped_json(v),
        })
        .collect()
}

/// `v` as JSON text with every hidden character (and the page's own escape brackets) written
/// as a `\u` escape: the same JSON, and nothing on the page renders unlike what it is.
fn escaped_json(v: &Value) -> String {
    let text = serde_json::to_string(v).unwrap_or_default();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_hidden(c) || c == OPEN || c == CLOSE {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A reviewer's edit as the page shows it: values withheld while personal data is (`masked`),
/// secrets never.
pub(super) fn edits_view(edited: &Edited, masked: bool) -> Vec<EditView> {
    let shown = |field: &str, v: &Value| {
        let key = field.trim_start_matches('/');
        let path = ["parameters", key];
        match crate::domain::review::disclosure::classify(&path, v, masked) {
            Disclosure::Secret => "(a secret: not shown)".to_owned(),
            Disclosure::Personal => "(personal data: withheld until revealed)".to_owned(),
            Disclosure::Shown => visible(&serde_json::to_string(v).unwrap_or_default()).text,
        }
    };
    (edited.changes.iter())
        .map(|c| EditView {
            field: visible(&c.field).text,
            old: shown(&c.field, &c.old),
            new: shown(&c.field, &c.new),
        })
        .collect()
}

/// Approves proposal `id` as edited: `fields` are `(hex pointer, JSON text)` as the form posts
/// them.
pub(super) async fn edit_and_approve(
    services: &Services,
    viewer: &dto::Viewer,
    id: &str,
    confirmation: Option<&str>,
    fields: &[(String, String)],
) -> Result<DecideOutcome, AppError> {
    let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
    let mut edits = Vec::with_capacity(fields.len());
    for (field, json) in fields {
        let pointer = hex::decode(field.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok());
        let value = serde_json::from_str::<Value>(json).ok();
        match (pointer, value) {
            (Some(pointer), Some(value)) => edits.push((pointer, value)),
            _ => return Ok(DecideOutcome::Refused(Notice::EditInvalid)),
        }
    }
    let who = principal(services, viewer).await?;
    match (services.edit_and_approve(&who, id, &edits, confirmation)).await {
        Ok(_) => Ok(DecideOutcome::Decided(Notice::Edited)),
        Err(ServiceError::Invalid(_)) => Ok(DecideOutcome::Refused(Notice::EditInvalid)),
        Err(ServiceError::Forbidden { .. }) => Ok(DecideOutcome::Refused(Notice::NotEditable)),
        Err(e) => match refusal(&e) {
            Some(notice) => Ok(DecideOutcome::Refused(notice)),
            None => Err(internal(e)),
        },
    }
}
