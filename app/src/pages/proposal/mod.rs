//! One proposal in full, for the reviewer deciding it (seed 004's approval UX: the action, its
//! target, the affected data, rollback support and what happens if it fails; clear,
//! unambiguous, easy to reject).
//!
//! What the reviewer sees is everything the executor will receive: [`command`] renders every
//! field of the command, each row carrying its JSON pointer (`data-field`). Agent-written text
//! shows its hidden characters ([`crate::components::visible`]); secrets never reach the
//! page, personal data of GDPR and HIPAA proposals only after an audited reveal. Approving a
//! high-risk or wide-reaching action asks for the target's name ([`decide`]). The agent's
//! record with the tool is in [`history`], the routing and the trail in [`trail`].

mod command;
mod decide;
mod history;
mod trail;

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use super::common::{Flash, error_view, use_session};
use crate::components::live::use_proposal_changes;
use crate::components::visible::Shown;
use crate::dto::{ProposalView, Role, SessionView};
use crate::server::get_proposal;
use crate::time::When;

/// The proposal page.
#[component]
pub fn ProposalPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let proposal = Resource::new(
        move || {
            let q = query.read();
            let before = q.get("trail_before").and_then(|b| b.parse::<i64>().ok());
            let reveal = q.get("revealed").is_some_and(|r| r == "1");
            let id = params.read().get("id").unwrap_or_default();
            (id, before, reveal)
        },
        |(id, trail_before, reveal)| get_proposal(id, trail_before, reveal),
    );
    // Refetched when its status moves: a colleague's decision, its expiry, its command's
    // outcome show without a reload (and the decision forms go once it is decided).
    let shown = move || {
        let id = params.read().get("id")?;
        let status = proposal.get().and_then(Result::ok).map(|p| p.status);
        Some((id, status))
    };
    let live = use_proposal_changes(shown, move || proposal.refetch());
    let session = use_session();
    // `?act=approve` or `?act=reject` (the queue's `a` and `r` keys): focus that form.
    let act = query.read_untracked().get("act");
    view! {
        <p class="back" data-testid="proposal-back" data-live=move || live.get().then_some("1")><a href="/">"← Queue"</a></p>
        <Flash/>
        // A transition keeps the page on screen while a live change refetches it.
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || {
                let act = act.clone();
                Suspend::new(async move {
                let (csrf, audits) = match session.await {
                    Ok(SessionView { csrf_token, viewer, .. }) => {
                        let audits = viewer.is_some_and(|v| matches!(v.role, Role::Compliance | Role::Admin));
                        (csrf_token, audits)
                    }
                    Err(e) => return error_view(e),
                };
                match proposal.await {
                    Ok(p) => {
                        // Compliance officers follow the proposal into the whole trail.
                        let timeline = audits.then(|| {
                            let href = format!("/audit/proposals/{}", p.id);
                            view! { <p class="back"><a href=href data-testid="proposal-timeline">"Audit timeline →"</a></p> }
                        });
                        view! { {timeline}<Detail p csrf act/> }.into_any()
                    }
                    Err(e) => error_view(e),
                }
            })}}
        </Transition>
    }
}

/// A banner when agent-written text hides characters.
fn hidden_banner(n: usize) -> impl IntoView {
    (n > 0).then(|| {
        let chars = if n == 1 { "character" } else { "characters" };
        view! {
            <p class="flash warn" role="alert" data-testid="hidden-chars">
                <strong>"⚠ Hidden characters. "</strong>
                "This proposal's text contains " <span data-testid="hidden-count">{n}</span> " invisible or direction-changing " {chars}
                ". Each is shown as " <mark class="hidden-char">"⟦U+…⟧"</mark>
                " where it occurs; what runs contains the character itself."
            </p>
        }
    })
}

#[component]
fn Detail(p: ProposalView, csrf: String, act: Option<String>) -> impl IntoView {
    let status_class = format!("status status-{}", p.status);
    let decide = p.can_decide.then(|| {
        view! {
            <decide::DecideForms id=p.id.clone() csrf=csrf.clone()
                approve_blocked=p.approve_blocked.clone() confirm_name=p.confirm_name.clone()
                focus=act.clone() offers=p.offers.clone()/>
        }
        .into_any()
    });
    let cannot = p
        .cannot_decide_because
        .clone()
        .map(|why| view! { <p class="note" data-testid="cannot-decide">{why}</p> });
    // Each section's view type erased: the page's whole type is too deep for the wasm build.
    let facts = facts(&p).into_any();
    let why = trail::why_here(&p).into_any();
    let command = view! { <command::CommandSection id=p.id.clone() csrf=csrf.clone() sheet=p.command.clone()/> }
        .into_any();
    let history = history::history(&p).into_any();
    let outcome = outcome(&p, csrf).into_any();
    let trail = trail::trail(trail::Trail::of(&p)).into_any();
    let banner = hidden_banner(p.hidden_chars).into_any();
    let revision = revision(&p.revision).into_any();
    let definition = tool_definition(&p).into_any();
    let glass = p.broke_glass.clone().map(|b| {
        let required = p.required_approvals;
        view! {
            <p class="break-glass-mark" role="alert" data-testid="broke-glass">
                "Break-glass: " {b.by} " approved this alone " <When at=b.at/>
                ", past the policy's " {required} " approvals. The justification is the review's reason."
            </p>
        }
    });
    let proofs = (!p.passkey_proofs.is_empty()).then(|| {
        let items = (p.passkey_proofs.iter())
            .map(|proof| {
                view! {
                    <li data-testid="passkey-proof">
                        {proof.by.clone()} " signed this request with passkey "
                        <code>{proof.credential_id.clone()}</code>
                    </li>
                }
            })
            .collect_view();
        view! { <ul class="passkey-proofs">{items}</ul> }
    });
    view! {
        <article class="proposal">
            <h1 data-testid="proposal-summary"><Shown text=p.summary.clone()/></h1>
            <p class="meta">
                <span class=status_class data-testid="proposal-status">{p.status.clone()}</span>
                " · authorization "
                <strong data-testid="proposal-authorization">{p.authorization_state.clone()}</strong>
                " · proposed by " <strong data-testid="proposal-agent">{p.proposed_by.clone()}</strong>
                " · " {p.domain.clone()} " · " <When at=p.created_at/>
            </p>
            {glass}
            {proofs}
            {banner}
            {revision}
            {decide}
            {cannot}
            <section class="intent">
                <h2>"Reasoning"</h2>
                <p class="reasoning" data-testid="proposal-reasoning"><Shown text=p.reasoning.clone()/></p>
            </section>
            {facts}
            {definition}
            {why}
            {command}
            {history}
            {outcome}
            {trail}
        </article>
    }
}

/// The action at a glance: tool, target, risk, blast radius, rollback, compliance, expiry.
/// A call through the MCP gateway: the tool's pinned definition, as the model read it.
fn tool_definition(p: &ProposalView) -> impl IntoView + use<> {
    p.tool_definition.clone().map(|d| {
        let annotations = if d.annotations.is_empty() {
            view! { <span class="muted">"none"</span> }.into_any()
        } else {
            d.annotations
                .into_iter()
                .map(|(k, v)| view! { <code><Shown text=k/>": "<Shown text=v/></code>" " })
                .collect_view()
                .into_any()
        };
        let against = if d.called_against_pinned {
            "the call was made against this definition"
        } else {
            "the call was made against another definition, the one shown here: it will not run"
        };
        let changed = d.changed_to.map(|sha| {
            view! {
                <p class="note" data-testid="tool-definition-changed">
                    "The upstream now serves another definition (" <code>{sha}</code>
                    "): withheld until an admin accepts it."
                </p>
            }
        });
        view! {
            <section class="tool-definition" aria-labelledby="tool-definition-h" data-testid="tool-definition">
                <h2 id="tool-definition-h">"The tool, as the agent's model read it"</h2>
                <dl>
                    <dt>"Description"</dt>
                    <dd data-testid="tool-description"><Shown text=d.description/></dd>
                    <dt>"Annotations"</dt>
                    <dd data-testid="tool-annotations">{annotations}</dd>
                    <dt>"Pinned definition"</dt>
                    <dd><code>{d.pinned}</code> " · " {against}</dd>
                </dl>
                {changed}
            </section>
        }
    })
}

fn facts(p: &ProposalView) -> impl IntoView + use<> {
    let p = p.clone();
    let targets = if p.targets.is_empty() {
        view! { <span class="muted">"none named"</span> }.into_any()
    } else {
        p.targets
            .iter()
            .map(|t| view! { <code class="target"><Shown text=t.clone()/></code>" " })
            .collect_view()
            .into_any()
    };
    let risk_class = format!("risk risk-{}", p.effective_risk);
    let raised = (p.effective_risk != p.risk_level)
        .then(|| format!(" (declared {}, raised by the policy)", p.risk_level));
    let expires = p.expires_at.map(|at| {
        view! {
            <dt>"Expires"</dt>
            <dd data-testid="proposal-expires"><When at prefix="expires " past_prefix="expired "/></dd>
        }
    });
    let compliance = if p.compliance.is_empty() {
        "none declared".to_owned()
    } else {
        p.compliance.join(", ")
    };
    view! {
        <section class="facts" aria-labelledby="facts-h">
            <h2 id="facts-h">"The action"</h2>
            <dl>
                <dt>"Tool"</dt><dd><code>{p.tool}</code> " " <Shown text=p.tool_version/></dd>
                <dt>"Target"</dt><dd data-testid="proposal-target">{targets}</dd>
                <dt>"Risk"</dt>
                <dd><span class=risk_class data-testid="proposal-risk">{p.effective_risk}</span>{raised}</dd>
                <dt>"Blast radius"</dt><dd>{p.blast_radius.unwrap_or_else(|| "not stated".into())}</dd>
                <dt>"Rollback"</dt><dd data-testid="proposal-rollback">{p.rollback}</dd>
                <dt>"Compliance"</dt><dd>{compliance}</dd>
                {expires}
                {p.classification.into_iter().map(|(k, v)| view! { <dt>{k}</dt><dd>{v}</dd> }).collect_view()}
            </dl>
        </section>
    }
}

/// The decision, erasure and execution, once there are any.
fn outcome(p: &ProposalView, csrf: String) -> impl IntoView + use<> {
    let p = p.clone();
    let review = p.review.map(|r| {
        view! {
            <section class="review">
                <h2>"Decision"</h2>
                <p data-testid="proposal-decision">
                    <strong>{r.verdict}</strong> " by " {r.decided_by} " " <When at=r.decided_at/>
                </p>
                {r.reason.map(|reason| view! { <p class="reason"><Shown text=reason/></p> })}
                {(!r.edited.is_empty()).then(|| view! {
                    <p>"Approved as edited: the command runs with the reviewer's values."</p>
                    <table class="edited" data-testid="proposal-edited">
                        <thead><tr><th scope="col">"Parameter"</th><th scope="col">"Sent"</th><th scope="col">"Approved"</th></tr></thead>
                        <tbody>
                            {r.edited.into_iter().map(|e| view! {
                                <tr><td><code>{e.field}</code></td><td><code>{e.old}</code></td><td><code>{e.new}</code></td></tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                })}
            </section>
        }
    });
    let erased = p.erased.map(|e| {
        view! {
            <section class="erasure">
                <h2>"Personal data erased"</h2>
                <p data-testid="proposal-erased">"Erased by " {e.by} " " <When at=e.at/> ": " {e.reason}</p>
            </section>
        }
    });
    let erase = p
        .can_erase
        .then(|| view! { <decide::EraseForm id=p.id.clone() csrf/> });
    let execution = p.execution.map(|x| {
        view! {
            <section class="execution">
                <h2>"Execution"</h2>
                <p data-testid="proposal-execution">"Command " <code>{x.command_id}</code> " is " <strong>{x.status}</strong>
                   " (attempts: " {x.attempts} ")"
                   {x.leased_by.map(|e| format!(", executor {e}"))}</p>
            </section>
        }
    });
    view! { {review}{erased}{erase}{execution} }
}

/// The proposal this one revises, with what changed, and the proposals that revise it.
fn revision(r: &crate::dto::RevisionView) -> impl IntoView + use<> {
    let first = r.supersedes.clone().map(|id| {
        let href = format!("/proposals/{id}");
        let rows = r
            .changes
            .iter()
            .cloned()
            .map(|(path, before, after)| {
                view! { <tr><td><code>{path}</code></td><td><code>{before}</code></td><td><code>{after}</code></td></tr> }
            })
            .collect_view();
        view! {
            <section class="revision" data-testid="revision">
                <p>"Revises " <a href=href data-testid="revises">"the proposal a reviewer asked changes to"</a> "."</p>
                <table class="revision-diff" data-testid="revision-diff">
                    <caption>"Parameters changed since then"</caption>
                    <thead><tr><th scope="col">"Parameter"</th><th scope="col">"Before"</th><th scope="col">"Now"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </section>
        }
    });
    let later = (!r.revised_by.is_empty()).then(|| {
        let links = r
            .revised_by
            .iter()
            .map(|id| {
                let href = format!("/proposals/{id}");
                view! { <li><a href=href data-testid="revised-by">{id.clone()}</a></li> }
            })
            .collect_view();
        view! { <section class="revision"><p>"Revised by:"</p><ul>{links}</ul></section> }
    });
    view! { {first}{later} }
}
