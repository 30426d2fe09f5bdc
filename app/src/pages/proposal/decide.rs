//! The approve, reject and request-changes forms (plain forms: they work without JavaScript), with the
//! typed-name confirmation approving a high-risk or wide-reaching action needs, and the admin's
//! GDPR erasure form.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use crate::dto::{DecisionOffers, EditFieldView, GrantOfferView};
use crate::server::grants::ApproveAndGrant;
use crate::server::{BreakGlass, DecideProposal, EditAndApprove, EraseProposal};

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

/// The typed name a folded-away approval form needs (`form` tells its input apart).
fn typed_name(form: &'static str, name: String) -> impl IntoView {
    let input = format!("confirm-name-{form}");
    view! {
        <div class="confirm">
            <label for=input.clone()>"To approve, type " <code>{name}</code> " exactly as shown."</label>
            <input id=input name="confirm" type="text" required autocomplete="off"
                autocapitalize="off" spellcheck="false" data-testid=format!("confirm-input-{form}")/>
        </div>
    }
}

/// What a step-up approval form carries: the passkey's answer, filled in by
/// `public/passkey.js` when Approve is pressed (it asks the server for the challenge, which
/// binds this request, then the browser for the passkey), and where a failure is said.
fn step_up_fields() -> impl IntoView {
    view! {
        <input type="hidden" name="passkey" value=""/>
        <p class="note step-up" data-testid="step-up-note">
            "Approving asks for your passkey: it signs this exact request."
        </p>
        <p class="flash error" role="alert" data-testid="step-up-error" hidden></p>
    }
}

/// Approving needs a passkey and the viewer has none: where to add one.
fn no_passkey() -> impl IntoView {
    view! {
        <p class="note" data-testid="step-up-no-passkey">
            "Approving this needs your passkey (the policy asks it for this action), and you have \
             none yet. Add one on "
            <a href="/account">"your account page"</a>
            ", then come back to approve."
        </p>
    }
}

/// "Approve and allow similar": the approval and a standing grant of this agent's later calls
/// with the same parameters (or named ones free, or numbers bounded), for a while. Folded away
/// under its summary, so the plain Approve stays the one-click default; its own choices start
/// at the narrowest grant.
fn grant_form(
    id: String,
    csrf: String,
    offer: GrantOfferView,
    confirm: Option<String>,
) -> impl IntoView {
    if let Some(why) = offer.refused {
        return view! {
            <p class="note" data-testid="grant-refused">"Similar calls cannot be allowed: " {why}</p>
        }
        .into_any();
    }
    let default = offer.default_secs;
    let durations = (offer.durations.into_iter())
        .map(|(secs, words)| view! { <option value=secs.to_string() selected=secs == default>{words}</option> })
        .collect_view();
    let mut bound = 0usize;
    let fields = (offer.fields.into_iter().enumerate())
        .map(|(i, f)| {
            let numeric = f.numeric.then(|| {
                let j = bound;
                bound += 1;
                view! {
                    <input type="hidden" name=format!("bound_at[{j}]") value=f.pointer.clone()/>
                    <label class="inline">" or from 0 to "
                        <input type="number" step="any" name=format!("bound_max[{j}]") placeholder="exact"
                            class="bound" data-testid=format!("grant-bound-{}", f.name)/>
                    </label>
                }
            });
            view! {
                <li>
                    <code>{f.name.clone()}</code> " = " <code>{f.approved}</code>
                    <label class="inline">
                        <input type="checkbox" name=format!("free[{i}]") value=f.pointer
                            data-testid=format!("grant-free-{}", f.name)/>
                        " any value"
                    </label>
                    {numeric}
                </li>
            }
        })
        .collect_view();
    view! {
        <details class="grant" data-testid="grant">
            <summary>"Approve and allow similar…"</summary>
            <form method="post" action=ApproveAndGrant::url() class="approve grant">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="id" value=id/>
                <p class="note">
                    "Approves this call, and this agent's later calls of this tool with exactly \
                     these parameters (unless you free or bound some below) are approved without \
                     asking until the time or the uses run out. Grants can be revoked at any time."
                </p>
                <fieldset>
                    <legend>"What may differ"</legend>
                    <ul class="grant-fields">{fields}</ul>
                </fieldset>
                <label>"For "
                    <select name="duration" data-testid="grant-duration">{durations}</select>
                </label>
                <label>" at most "
                    <input type="number" name="max_uses" min="1" max="10000" placeholder="any number of"
                        data-testid="grant-uses"/>
                    " uses"
                </label>
                {confirm.map(|name| typed_name("grant", name))}
                <button type="submit" class="approve" data-testid="approve-grant">"Approve and allow similar"</button>
            </form>
        </details>
    }
    .into_any()
}

/// Break-glass: an admin approves alone what needs more approvers, saying why. Folded away and
/// red: it is for emergencies, and everyone will hear of it.
fn break_glass_form(
    id: String,
    csrf: String,
    confirm: Option<String>,
    step_up: bool,
) -> impl IntoView {
    view! {
        <details class="break-glass" data-testid="break-glass">
            <summary>"Break glass: approve alone…"</summary>
            <form method="post" action=BreakGlass::url() class="approve break-glass"
                data-step-up=step_up.then_some("")>
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="id" value=id/>
                <p class="note">
                    "For an emergency only. The policy wants more approvers; this approves it \
                     with yours alone. Every admin and compliance officer is told on every \
                     channel, and the trail and this page mark it in red."
                </p>
                <label>"Why this cannot wait (at least 20 characters)"
                    <textarea name="justification" required minlength="20" maxlength="2000" rows="2"
                        data-testid="break-glass-justification"></textarea>
                </label>
                {confirm.map(|name| typed_name("glass", name))}
                {step_up.then(step_up_fields)}
                <button type="submit" class="reject" data-testid="break-glass-approve">"Approve alone (break-glass)"</button>
            </form>
        </details>
    }
}

/// "Edit, then approve": each parameter the page shows in clear as JSON text, to change before
/// approving. The server routes the edited request again and shows what changed.
fn edit_form(
    id: String,
    csrf: String,
    fields: Vec<EditFieldView>,
    confirm: Option<String>,
) -> impl IntoView {
    let rows = (fields.into_iter().enumerate())
        .map(|(i, f)| {
            let input = format!("edit-value-{i}");
            view! {
                <li>
                    <input type="hidden" name=format!("field[{i}]") value=f.pointer/>
                    <label for=input.clone()><code>{f.name.clone()}</code></label>
                    <textarea id=input name=format!("value[{i}]") rows="1" spellcheck="false"
                        data-testid=format!("edit-{}", f.name)>{f.json}</textarea>
                </li>
            }
        })
        .collect_view();
    view! {
        <details class="edit" data-testid="edit">
            <summary>"Edit, then approve…"</summary>
            <form method="post" action=EditAndApprove::url() class="approve edit">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="id" value=id/>
                <p class="note">
                    "Change values (as JSON: text in quotes) instead of asking the agent to. The \
                     edited request gets its own hash and is routed again; the command runs with \
                     your values, and the agent sees each change."
                </p>
                <ul class="edit-fields">{rows}</ul>
                {confirm.map(|name| typed_name("edit", name))}
                <button type="submit" class="approve" data-testid="edit-approve">"Approve as edited"</button>
            </form>
        </details>
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
    /// "Approve and allow similar" and break-glass, when offered.
    offers: DecisionOffers,
) -> impl IntoView {
    let DecisionOffers {
        grant,
        break_glass,
        glass_confirm,
        edit,
        step_up,
    } = offers;
    let (csrf_changes, id_changes) = (csrf.clone(), id.clone());
    let focus_approve = focus.as_deref() == Some("approve");
    let focus_reject = focus.as_deref() == Some("reject");
    let confirm_focus = focus_approve && confirm_name.is_some();
    let button_focus = focus_approve && confirm_name.is_none();
    let approve = match approve_blocked {
        Some(why) => view! { <p class="note" data-testid="approve-blocked">{why}</p> }.into_any(),
        None if step_up == Some(false) => no_passkey().into_any(),
        None => {
            let grant = grant
                .map(|offer| grant_form(id.clone(), csrf.clone(), offer, confirm_name.clone()));
            let edit = edit
                .map(|fields| edit_form(id.clone(), csrf.clone(), fields, confirm_name.clone()));
            view! {
                <form method="post" action=DecideProposal::url() class="approve"
                    data-step-up=step_up.map(|_| "")>
                    <input type="hidden" name="csrf_token" value=csrf.clone()/>
                    <input type="hidden" name="id" value=id.clone()/>
                    <input type="hidden" name="verdict" value="approved"/>
                    {confirm_name.map(|name| confirmation(name, confirm_focus))}
                    {step_up.map(|_| step_up_fields())}
                    <button type="submit" class="approve" data-testid="approve" autofocus=button_focus>"Approve"</button>
                </form>
                {grant}
                {edit}
            }
            .into_any()
        }
    };
    let glass = break_glass
        .then(|| break_glass_form(id.clone(), csrf.clone(), glass_confirm, step_up.is_some()));
    view! {
        <div class="decide" id="decide">
            {approve}
            {glass}
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
