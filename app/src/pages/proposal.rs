//! One proposal in full, with the approve and reject forms.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::hooks::{use_params_map, use_query_map};

use super::{Flash, error_view, use_session};
use crate::dto::{AuditView, ProposalView, Role, SessionView};
use crate::server::{DecideProposal, EraseProposal, get_proposal};

/// The proposal page.
#[component]
pub fn ProposalPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let proposal = Resource::new(
        move || {
            let before = query.read().get("trail_before");
            let id = params.read().get("id").unwrap_or_default();
            (id, before.and_then(|b| b.parse::<i64>().ok()))
        },
        |(id, trail_before)| get_proposal(id, trail_before),
    );
    let session = use_session();
    view! {
        <p class="back"><a href="/">"← Queue"</a></p>
        <Flash/>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                let (csrf, audits) = match session.await {
                    Ok(SessionView { csrf_token, viewer }) => {
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
                        view! { {timeline}<Detail p csrf/> }.into_any()
                    }
                    Err(e) => error_view(e),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Detail(p: ProposalView, csrf: String) -> impl IntoView {
    let status_class = format!("status status-{}", p.status);
    let targets = if p.targets.is_empty() {
        "—".to_owned()
    } else {
        p.targets.join(", ")
    };
    let approve_blocked = p.approve_blocked.clone();
    let erase_csrf = csrf.clone();
    let why = why_here(&p);
    let trail = trail(Trail::of(&p));
    let decide = p
        .can_decide
        .then(|| view! { <DecideForms id=p.id.clone() csrf approve_blocked/> });
    let cannot = p
        .cannot_decide_because
        .clone()
        .map(|why| view! { <p class="note" data-testid="cannot-decide">{why}</p> });
    view! {
        <article class="proposal">
            <h1 data-testid="proposal-summary">{p.summary}</h1>
            <p class="meta">
                <span class=status_class data-testid="proposal-status">{p.status}</span>
                " authorization "
                <strong data-testid="proposal-authorization">{p.authorization_state}</strong>
                " · proposed by " <strong>{p.proposed_by}</strong>
                " · " {p.domain} " · " {p.age} " ago"
            </p>
            {decide}
            {cannot}
            <section>
                <h2>"Reasoning"</h2>
                <p class="reasoning" data-testid="proposal-reasoning">{p.reasoning}</p>
            </section>
            <section class="facts">
                <h2>"The action"</h2>
                <dl>
                    <dt>"Tool"</dt><dd><code>{p.tool}</code> " " {p.tool_version}</dd>
                    <dt>"Target"</dt><dd data-testid="proposal-target">{targets}</dd>
                    <dt>"Expires"</dt>
                    <dd data-testid="proposal-expires">{p.expires_at.unwrap_or_else(|| "—".into())}</dd>
                    <dt>"Risk"</dt><dd>{p.risk_level}</dd>
                    <dt>"Blast radius"</dt><dd>{p.blast_radius.unwrap_or_else(|| "not stated".into())}</dd>
                    <dt>"Rollback"</dt><dd data-testid="proposal-rollback">{p.rollback}</dd>
                    <dt>"Compliance"</dt>
                    <dd>{if p.compliance.is_empty() { "none declared".to_owned() } else { p.compliance.join(", ") }}</dd>
                    {p.classification.into_iter().map(|(k, v)| view! { <dt>{k}</dt><dd>{v}</dd> }).collect_view()}
                </dl>
                <h3>"Affected data (parameters)"</h3>
                <pre data-testid="proposal-parameters">{p.parameters}</pre>
                {p.rollback_plan.map(|plan| view! { <h3>"Rollback plan"</h3><pre>{plan}</pre> })}
            </section>
            {why}
            {p.review.map(|r| view! {
                <section class="review">
                    <h2>"Decision"</h2>
                    <p data-testid="proposal-decision">
                        <strong>{r.verdict}</strong> " by " {r.decided_by} " at " {r.decided_at}
                    </p>
                    {r.reason.map(|reason| view! { <p class="reason">{reason}</p> })}
                </section>
            })}
            {p.erased.clone().map(|e| view! {
                <section class="erasure">
                    <h2>"Personal data erased"</h2>
                    <p data-testid="proposal-erased">{e}</p>
                </section>
            })}
            {p.can_erase.then(|| view! { <EraseForm id=p.id.clone() csrf=erase_csrf.clone()/> })}
            {p.execution.map(|x| view! {
                <section class="execution">
                    <h2>"Execution"</h2>
                    <p data-testid="proposal-execution">"Command " <code>{x.command_id}</code> " is " <strong>{x.status}</strong>
                       " (attempts: " {x.attempts} ")"
                       {x.leased_by.map(|e| format!(", executor {e}"))}</p>
                </section>
            })}
            {trail}
        </article>
    }
}

/// Why the proposal needs a human: category, risk, approvals, route, rule and blockers.
fn why_here(p: &ProposalView) -> impl IntoView + use<> {
    let p = p.clone();
    view! {
            <section class="routing">
            <h2>"Why it is here"</h2>
            <p>"Category " <strong>{p.category.to_uppercase()}</strong> " · effective risk "
               <strong data-testid="proposal-effective-risk">{p.effective_risk}</strong>
               " · approvals " <strong data-testid="proposal-approvals">{p.approvals.len()} " of " {p.required_approvals}</strong></p>
            <ul>{p.approvals.iter().map(|a| view! { <li>"Approved by " {a.clone()}</li> }).collect_view()}</ul>
            <p>"Route " <strong data-testid="proposal-route">{p.route}</strong> " by rule " <em>{p.rule}</em>
               " (policy " <code>{p.policy_version}</code> ")"</p>
            <ul>{p.reasons.into_iter().map(|r| view! { <li>{r}</li> }).collect_view()}</ul>
            <ul class="blockers">
                {p.blockers.into_iter().map(|b| view! { <li><code>{b.code}</code> " " {b.message}</li> }).collect_view()}
            </ul>
        </section>
    }
}

/// What the trail section shows: a page of events and where the others are.
struct Trail {
    id: String,
    audit: Vec<AuditView>,
    older: Option<i64>,
    newer: Option<i64>,
    request_hash: String,
    idempotency_key: String,
}

impl Trail {
    fn of(p: &ProposalView) -> Self {
        Self {
            id: p.id.clone(),
            audit: p.audit.clone(),
            older: p.audit_older,
            newer: p.audit_newer,
            request_hash: p.request_hash.clone(),
            idempotency_key: p.idempotency_key.clone(),
        }
    }
}

/// The proposal's audit trail (the most recent events, newest first, a page at a time), with
/// the request hash and idempotency key.
fn trail(t: Trail) -> impl IntoView {
    let base = format!("/proposals/{}", t.id);
    let newest = t.newer.map(|_| {
        view! { <a href=base.clone() data-testid="trail-newest">"← Most recent"</a> }
    });
    let older = t.older.map(|s| {
        let href = format!("{base}?trail_before={s}");
        view! { <a href=href data-testid="trail-older">"Older events →"</a> }
    });
    view! {
            <section class="audit">
            <h2>"Audit trail " <small class="muted">"newest first"</small></h2>
            <table data-testid="proposal-trail">
                <tbody>
                    {t.audit.into_iter().map(|a| view! {
                        <tr data-testid="trail-row"><td>{a.at}</td><td>{a.actor}</td><td><code>{a.action}</code></td><td>{a.change}</td></tr>
                    }).collect_view()}
                </tbody>
            </table>
            <p class="pager">{newest}" "{older}</p>
            <p class="hash">"Request hash " <code>{t.request_hash}</code> " · idempotency key " <code>{t.idempotency_key}</code></p>
        </section>
    }
}

#[component]
fn DecideForms(id: String, csrf: String, approve_blocked: Option<String>) -> impl IntoView {
    let approve = match approve_blocked {
        Some(why) => view! { <p class="note" data-testid="approve-blocked">{why}</p> }.into_any(),
        None => view! {
            <form method="post" action=DecideProposal::url() class="approve">
                <input type="hidden" name="csrf_token" value=csrf.clone()/>
                <input type="hidden" name="id" value=id.clone()/>
                <input type="hidden" name="verdict" value="approved"/>
                <button type="submit" class="approve" data-testid="approve">"Approve"</button>
            </form>
        }
        .into_any(),
    };
    view! {
        <div class="decide">
            {approve}
            <form method="post" action=DecideProposal::url() class="reject">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="id" value=id/>
                <input type="hidden" name="verdict" value="rejected"/>
                <label>"Reason for rejecting"
                    <textarea name="reason" required maxlength="2000" rows="2"></textarea>
                </label>
                <button type="submit" class="reject" data-testid="reject">"Reject"</button>
            </form>
        </div>
    }
}

/// GDPR erasure, offered to admins on settled proposals.
#[component]
fn EraseForm(id: String, csrf: String) -> impl IntoView {
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
