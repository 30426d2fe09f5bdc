//! The approve, reject and request-changes forms (plain forms: they work without JavaScript), with the
//! typed-name confirmation approving a high-risk or wide-reaching action needs, and the admin's
//! GDPR erasure form.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use crate::server::{DecideProposal, EraseProposal};

/// "Type `name` to confirm": the server checks what is typed (`domain::review::confirm`).
fn confirmation(name: String, focus: bool) -> impl IntoView {
    view! {
        <div class="confirm">
            <label for="confirm-name">
                "This action is high risk or reaches wide. To approve it, type "
                <code data-testid="confirm-name">{name}</code>
                " exactly as shown."
            </label>
            <input id="confirm-name" name="confirm" type="text" required autocomplete="off" autofocus=focus
                autocapitalize="off" spellcheck="false" data-testid="confirm-input"/>
        </div>
    }
}

/// Approve (with its confirmation when one is needed) and reject.
#[component]
pub fn DecideForms(
    id: String,
    csrf: String,
    approve_blocked: Option<String>,
    confirm_name: Option<String>,
    /// `approve` or `reject`: the form to focus (the queue's `a` and `r` keys).
    focus: Option<String>,
) -> impl IntoView {
    let (csrf_changes, id_changes) = (csrf.clone(), id.clone());
    let focus_approve = focus.as_deref() == Some("approve");
    let focus_reject = focus.as_deref() == Some("reject");
    let confirm_focus = focus_approve && confirm_name.is_some();
    let button_focus = focus_approve && confirm_name.is_none();
    let approve = match approve_blocked {
        Some(why) => view! { <p class="note" data-testid="approve-blocked">{why}</p> }.into_any(),
        None => view! {
            <form method="post" action=DecideProposal::url() class="approve">
                <input type="hidden" name="csrf_token" value=csrf.clone()/>
                <input type="hidden" name="id" value=id.clone()/>
                <input type="hidden" name="verdict" value="approved"/>
                {confirm_name.map(|name| confirmation(name, confirm_focus))}
                <button type="submit" class="approve" data-testid="approve" autofocus=button_focus>"Approve"</button>
            </form>
        }
        .into_any(),
    };
    view! {
        <div class="decide" id="decide">
            {approve}
            <form method="post" action=DecideProposal::url() class="reject">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="id" value=id/>
                <input type="hidden" name="verdict" value="rejected"/>
                <label>"Reason for rejecting"
                    <textarea name="reason" required maxlength="2000" rows="2" autofocus=focus_reject></textarea>
                </label>
                <button type="submit" class="reject" data-testid="reject">"Reject"</button>
            </form>
            <form method="post" action=DecideProposal::url() class="request-changes">
                <input type="hidden" name="csrf_token" value=csrf_changes/>
                <input type="hidden" name="id" value=id_changes/>
                <input type="hidden" name="verdict" value="changes_requested"/>
                <label>"What must change (the agent sees this and may submit a revision)"
                    <textarea name="reason" required maxlength="2000" rows="2"></textarea>
                </label>
                <button type="submit" data-testid="request-changes">"Request changes"</button>
            </form>
        </div>
    }
}

/// GDPR erasure, offered to admins on settled proposals.
#[component]
pub fn EraseForm(id: String, csrf: String) -> impl IntoView {
    view! {
        <section class="erase">
            <h2>"Erase personal data (GDPR)"</h2>
            <p class="note">"Replaces parameter values, intent, target ids and the executor's report with "
               <code>"[erased]"</code> ". Keys, request hash, decision and the audit trail remain."</p>
            <form method="post" action=EraseProposal::url() class="erase">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="id" value=id/>
                <label>"Reason (e.g. the erasure request's reference)"
                    <input type="text" name="reason" required maxlength="500"/>
                </label>
                <button type="submit" class="reject" data-testid="erase">"Erase personal data"</button>
            </form>
        </section>
    }
}
