//! The admin pages: people (`/admin/users`), API tokens (`/admin/tokens`), agents' webhook
//! deliveries (`/admin/webhooks`) and the MCP gateway's pinned tools (`/admin/gateway`, where
//! a changed definition is shown beside the pinned one and accepted). Every change is a plain form post; a new token or one-time
//! password is shown once, on the page the form redirects to. Other roles get a 403 page.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::hooks::use_query_map;

use super::common::{Flash, error_view, with_csrf};
use crate::components::visible::{HiddenFlag, Shown as Visible};
use crate::dto::{
    GatewayToolItem, GatewayView, NotificationItem, ShownSecret, TokenItem, TokensView, UserItem,
    UsersView, WebhookAttempt, WebhookDelivery, WebhooksView,
};
use crate::server::admin::{
    ChangeGateway, ChangeToken, ChangeUser, list_admin_tokens, list_admin_users,
    list_gateway_tools, list_webhook_deliveries,
};
use crate::time::When;

#[component]
fn AdminNav(current: &'static str) -> impl IntoView {
    let class = move |tab: &'static str| (tab == current).then_some("current");
    view! {
        <nav class="tabs">
            <a href="/admin/users" class=class("users") data-testid="admin-users">"Users"</a>
            <a href="/admin/tokens" class=class("tokens") data-testid="admin-tokens">"Tokens"</a>
            <a href="/admin/webhooks" class=class("webhooks") data-testid="admin-webhooks">"Webhooks"</a>
            <a href="/admin/gateway" class=class("gateway") data-testid="admin-gateway">"Gateway"</a>
        </nav>
    }
}

#[component]
fn Shown(shown: Option<ShownSecret>) -> impl IntoView {
    shown.map(|s| {
        view! {
            <section class="shown" data-testid="shown-secret">
                <p>"For " {s.label} " — shown once; it cannot be shown again:"</p>
                <pre><code data-testid="secret">{s.secret}</code></pre>
                {s.webhook_secret.map(|w| view! {
                    <p>"Its webhook signing secret (the receiver checks " <code>"Countersign-Signature"</code> " with it):"</p>
                    <pre><code data-testid="webhook-secret">{w}</code></pre>
                })}
            </section>
        }
    })
}

/// The users page.
#[component]
pub fn AdminUsersPage() -> impl IntoView {
    let query = use_query_map();
    let users = Resource::new(move || query.read().get("shown"), list_admin_users);
    view! {
        <h1>"Users"</h1>
        <AdminNav current="users"/>
        <Flash/>
        {with_csrf(users, |view, csrf| view! { <Users view csrf/> })}
    }
}

#[component]
fn Users(view: UsersView, csrf: String) -> impl IntoView {
    let UsersView { users, shown } = view;
    let add_csrf = csrf.clone();
    view! {
        <Shown shown/>
        <table class="users">
            <thead><tr><th>"User"</th><th>"Role"</th><th>"Domains"</th><th>"Email"</th><th>"State"</th><th>"Change"</th></tr></thead>
            <tbody>
                {users.into_iter().map(|user| view! { <UserRow user csrf=csrf.clone()/> }).collect_view()}
            </tbody>
        </table>
        <form method="post" action=ChangeUser::url() class="add-user">
            <h2>"Add a user"</h2>
            <input type="hidden" name="csrf_token" value=add_csrf/>
            <input type="hidden" name="action" value="add"/>
            <label>"Username " <input name="username" required maxlength="64" data-testid="new-username"/></label>
            <label>"Role " <RoleSelect selected="reviewer".to_owned()/></label>
            <label>"Domains (comma-separated; blank for every domain) "
                <input name="domains" maxlength="512"/>
            </label>
            <label>"Email (for notifications; optional) "
                <input name="email" type="email" maxlength="254" data-testid="new-email"/>
            </label>
            <button type="submit" data-testid="add-user">"Add, with a one-time password"</button>
        </form>
    }
}

#[component]
fn RoleSelect(selected: String, #[prop(optional)] label: Option<String>) -> impl IntoView {
    let options = ["reviewer", "compliance", "admin"].map(|r| {
        let chosen = r == selected;
        view! { <option value=r selected=chosen>{r}</option> }
    });
    view! { <select name="role" aria-label=label>{options.into_iter().collect_view()}</select> }
}

/// One form posting `action` about `username`, with a submit button.
#[component]
fn UserAction(
    csrf: String,
    username: String,
    action: &'static str,
    label: &'static str,
    #[prop(optional)] children: Option<Children>,
) -> impl IntoView {
    let testid = format!("{action}-{username}");
    view! {
        <form method="post" action=ChangeUser::url() class="inline">
            <input type="hidden" name="csrf_token" value=csrf/>
            <input type="hidden" name="action" value=action/>
            <input type="hidden" name="username" value=username/>
            {children.map(|c| c())}
            <button type="submit" data-testid=testid>{label}</button>
        </form>
    }
}

#[component]
fn UserRow(user: UserItem, csrf: String) -> impl IntoView {
    let UserItem {
        username,
        role,
        domains,
        email,
        disabled,
    } = user;
    let email_label = format!("Email address of {username} (empty: none)");
    let state = if disabled { "disabled" } else { "active" };
    let shown_domains = domains.clone().unwrap_or_else(|| "every domain".into());
    let (c, u) = (csrf, username.clone());
    let toggle = if disabled {
        view! { <UserAction csrf=c.clone() username=u.clone() action="enable" label="Enable"/> }
    } else {
        view! { <UserAction csrf=c.clone() username=u.clone() action="disable" label="Disable"/> }
    };
    let selected = role.clone().unwrap_or_default();
    let shown_role = role.unwrap_or_else(|| "no role yet".into());
    let attr = username.clone();
    let role_label = format!("New role for {username}");
    let domains_label =
        format!("Domains {username} reviews (comma-separated; empty: every domain)");
    view! {
        <tr data-testid="user-row" data-username=attr>
            <td>{username}</td>
            <td data-testid="user-role">{shown_role}</td>
            <td>{shown_domains}</td>
            <td data-testid="user-email">{email.clone().unwrap_or_else(|| "—".into())}</td>
            <td data-testid="user-state">{state}</td>
            <td>
                {toggle}
                <UserAction csrf=c.clone() username=u.clone() action="reset_password" label="Reset password"/>
                <UserAction csrf=c.clone() username=u.clone() action="role" label="Change role">
                    <RoleSelect selected label=role_label/>
                </UserAction>
                <UserAction csrf=c.clone() username=u.clone() action="domains" label="Set domains">
                    <input name="domains" maxlength="512" value=domains.unwrap_or_default()
                        aria-label=domains_label placeholder="every domain"/>
                </UserAction>
                <UserAction csrf=c username=u action="email" label="Set email">
                    <input name="email" type="email" maxlength="254" value=email.unwrap_or_default()
                        aria-label=email_label placeholder="no email"/>
                </UserAction>
            </td>
        </tr>
    }
}

/// The tokens page.
#[component]
pub fn AdminTokensPage() -> impl IntoView {
    let query = use_query_map();
    let tokens = Resource::new(move || query.read().get("shown"), list_admin_tokens);
    view! {
        <h1>"API tokens"</h1>
        <AdminNav current="tokens"/>
        <Flash/>
        {with_csrf(tokens, |view, csrf| view! { <Tokens view csrf/> })}
    }
}

#[component]
fn Tokens(view: TokensView, csrf: String) -> impl IntoView {
    let TokensView { tokens, shown } = view;
    let create_csrf = csrf.clone();
    view! {
        <Shown shown/>
        <table class="tokens">
            <thead><tr><th>"Kind"</th><th>"Name"</th><th>"Scope"</th><th>"Operator"</th><th>"Webhook"</th><th>"Created"</th><th>"Revoked"</th><th></th></tr></thead>
            <tbody>
                {tokens.into_iter().map(|token| view! { <TokenRow token csrf=csrf.clone()/> }).collect_view()}
            </tbody>
        </table>
        <form method="post" action=ChangeToken::url() class="create-token">
            <h2>"Create a token"</h2>
            <input type="hidden" name="csrf_token" value=create_csrf/>
            <input type="hidden" name="action" value="create"/>
            <label>"Kind "
                <select name="kind" data-testid="token-kind">
                    <option value="agent" selected>"agent"</option>
                    <option value="executor">"executor"</option>
                </select>
            </label>
            <label>"Name " <input name="name" required maxlength="64" data-testid="token-name"/></label>
            <label>"Executor's tools (globs, comma-separated) " <input name="tools" maxlength="512"/></label>
            <label>"Agent's operator (a username) " <input name="operator" maxlength="64" data-testid="token-operator"/></label>
            <label>"Agent's webhook URL (https, or loopback) " <input name="webhook" type="url" maxlength="2048" data-testid="token-webhook"/></label>
            <button type="submit" data-testid="create-token">"Create, shown once"</button>
        </form>
    }
}

#[component]
fn TokenRow(token: TokenItem, csrf: String) -> impl IntoView {
    let TokenItem {
        id,
        kind,
        name,
        scope,
        operator,
        created,
        revoked,
        webhook,
        hidden,
    } = token;
    let rotate = (revoked.is_none() && webhook.is_some()).then(|| {
        let (id, csrf) = (id.clone(), csrf.clone());
        view! {
            <form method="post" action=ChangeToken::url() class="inline">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="action" value="rotate_webhook_secret"/>
                <input type="hidden" name="id" value=id/>
                <button type="submit" data-testid="rotate-webhook-secret" title="A new signing secret, shown once; the old one signs too for 24 h">"Rotate signing secret"</button>
            </form>
        }
    });
    let revoke = revoked.is_none().then(|| {
        let id = id.clone();
        view! {
            <form method="post" action=ChangeToken::url() class="inline">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="action" value="revoke"/>
                <input type="hidden" name="id" value=id/>
                <button type="submit" data-testid="revoke-token">"Revoke"</button>
            </form>
        }
    });
    let attr = name.clone();
    view! {
        <tr data-testid="token-row" data-token-id=id data-name=attr>
            <td>{kind}</td>
            <td>{name}<HiddenFlag count=hidden/></td>
            <td><Visible text=scope.unwrap_or_default()/></td>
            <td>{operator.unwrap_or_default()}</td>
            <td data-testid="token-webhook-url"><Visible text=webhook.unwrap_or_default()/></td>
            <td><When at=created/></td>
            <td data-testid="token-revoked">{revoked.map(|at| view! { <When at/> })}</td>
            <td>{rotate}{revoke}</td>
        </tr>
    }
}

/// Agents' webhook deliveries: each with its state and every attempt (status code, time,
/// error), and the next try of a pending one.
#[component]
pub fn AdminWebhooksPage() -> impl IntoView {
    let deliveries = Resource::new(|| (), |()| list_webhook_deliveries());
    view! {
        <h1>"Webhooks and notifications"</h1>
        <AdminNav current="webhooks"/>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match deliveries.await {
                    Ok(view) => {
                        let notifications = view.notifications.clone();
                        view! {
                            <h2>"Agents' webhook deliveries"</h2>
                            <Deliveries view/>
                            <h2>"Reviewers' notifications"</h2>
                            <Notifications notifications/>
                        }
                        .into_any()
                    }
                    Err(e) => error_view(e),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Deliveries(view: WebhooksView) -> impl IntoView {
    if view.deliveries.is_empty() {
        return view! { <p data-testid="no-deliveries">"No deliveries yet: none of the agents' tokens has a webhook, or nothing has changed since."</p> }.into_any();
    }
    view! {
        <table class="deliveries">
            <thead><tr><th>"Queued"</th><th>"Agent"</th><th>"Proposal"</th><th>"URL"</th><th>"State"</th><th>"Attempts"</th><th>"Next try"</th></tr></thead>
            <tbody>
                {view.deliveries.into_iter().map(|d| view! { <DeliveryRow d/> }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

#[component]
fn DeliveryRow(d: WebhookDelivery) -> impl IntoView {
    let WebhookDelivery {
        id,
        agent,
        proposal_id,
        url,
        state,
        created,
        next_attempt,
        attempts,
    } = d;
    let href = format!("/proposals/{proposal_id}");
    let state_attr = state.clone();
    view! {
        <tr data-testid="delivery-row" data-delivery-id=id data-state=state_attr>
            <td><When at=created/></td>
            <td>{agent}</td>
            <td><a href=href>{proposal_id}</a></td>
            <td class="url">{url}</td>
            <td data-testid="delivery-state">{state}</td>
            <td><ol class="attempts">{attempts.into_iter().map(|a| view! { <AttemptItem a/> }).collect_view()}</ol></td>
            <td data-testid="delivery-next">{next_attempt.map(|at| view! { <When at past_prefix="due "/> })}</td>
        </tr>
    }
}

#[component]
fn AttemptItem(a: WebhookAttempt) -> impl IntoView {
    let WebhookAttempt {
        attempt,
        at,
        status,
        error,
        took_ms,
    } = a;
    let answer = status.map_or_else(|| "no answer".to_owned(), |s| format!("HTTP {s}"));
    view! {
        <li data-testid="delivery-attempt" data-status=status.map(|s| s.to_string())>
            {format!("#{attempt} ")}<When at/>{format!(": {answer} in {took_ms} ms")}
            {error.map(|e| view! { <span class="error">{format!(" — {e}")}</span> })}
        </li>
    }
}

/// Reviewers' notifications: channel, why, the proposal, state, attempts and the last answer.
#[component]
fn Notifications(notifications: Vec<NotificationItem>) -> impl IntoView {
    if notifications.is_empty() {
        return view! { <p data-testid="no-notifications">"No notifications yet: no channel is configured, or nothing has waited for a reviewer since."</p> }.into_any();
    }
    view! {
        <table class="deliveries">
            <thead><tr><th>"Queued"</th><th>"Channel"</th><th>"Why"</th><th>"About"</th><th>"State"</th><th>"Attempts"</th><th>"Last answer"</th></tr></thead>
            <tbody>
                {notifications.into_iter().map(|n| {
                    let (about, href) = n.about;
                    let answer = match (n.last_status, n.last_error) {
                        (_, Some(e)) => e,
                        (Some(s), None) => format!("HTTP {s}"),
                        (None, None) => String::new(),
                    };
                    let when = n.last_attempt.map(|at| view! { " " <When at/> });
                    let state = n.state.clone();
                    view! {
                        <tr data-testid="notification-row" data-state=state>
                            <td><When at=n.created/></td>
                            <td>{n.channel}</td>
                            <td>{n.reason}</td>
                            <td><a href=href>{about}</a></td>
                            <td>{n.state}</td>
                            <td>{n.attempts}</td>
                            <td>{answer}{when}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// The MCP gateway: each upstream's state and every pinned tool. A tool whose upstream now
/// serves another definition is withheld; its two definitions are shown side by side, the
/// fields that differ named and hidden characters flagged, with a button to accept the new one.
#[component]
pub fn AdminGatewayPage() -> impl IntoView {
    let tools = Resource::new(|| (), |()| list_gateway_tools());
    view! {
        <h1>"MCP gateway"</h1>
        <AdminNav current="gateway"/>
        <Flash/>
        {with_csrf(tools, |view, csrf| view! { <Gateway view csrf/> })}
    }
}

#[component]
fn Gateway(view: GatewayView, csrf: String) -> impl IntoView {
    let GatewayView {
        configured,
        upstreams,
        tools,
    } = view;
    let upstreams = (!upstreams.is_empty()).then(|| {
        view! {
            <ul class="upstreams">
                {upstreams.into_iter().map(|(name, state)| {
                    let (attr, state_attr) = (name.clone(), state.clone());
                    view! { <li data-testid="upstream" data-upstream=attr data-state=state_attr>{name}": "{state}</li> }
                }).collect_view()}
            </ul>
        }
    });
    let none = match configured {
        true => "No tool pinned yet: the upstreams have not listed any.",
        false => {
            "This server runs no gateway (serve --gateway FILE); the tools below were pinned by one before."
        }
    };
    let (changed, steady): (Vec<_>, Vec<_>) = tools.into_iter().partition(|t| t.offered.is_some());
    let empty = (changed.is_empty() && steady.is_empty())
        .then(|| view! { <p data-testid="no-gateway-tools">{none}</p> });
    view! {
        {upstreams}
        {empty}
        {changed.into_iter().map(|tool| view! { <ChangedTool tool csrf=csrf.clone()/> }).collect_view()}
        {(!steady.is_empty()).then(|| view! {
            <div class="scroll" tabindex="0" role="region" aria-label="Pinned gateway tools">
                <table class="gateway-tools">
                    <thead><tr><th>"Tool"</th><th>"Upstream"</th><th>"Pinned definition"</th><th>"First seen"</th><th>"Changed"</th></tr></thead>
                    <tbody>
                        {steady.into_iter().map(|tool| view! { <PinnedRow tool/> }).collect_view()}
                    </tbody>
                </table>
            </div>
        })}
    }
}

#[component]
fn PinnedRow(tool: GatewayToolItem) -> impl IntoView {
    let attr = tool.name.clone();
    view! {
        <tr data-testid="gateway-tool" data-tool=attr data-state="served">
            <td>{tool.name}<HiddenFlag count=tool.hidden/></td>
            <td>{tool.upstream}</td>
            <td>
                <details>
                    <summary><code>{tool.pinned_sha256}</code></summary>
                    <pre class="definition"><Visible text=tool.pinned/></pre>
                </details>
            </td>
            <td><When at=tool.first_seen/></td>
            <td><When at=tool.updated/></td>
        </tr>
    }
}

/// A withheld tool: the pinned definition beside the one its upstream serves now.
#[component]
fn ChangedTool(tool: GatewayToolItem, csrf: String) -> impl IntoView {
    let GatewayToolItem {
        name,
        upstream,
        pinned_sha256,
        pinned,
        offered_sha256,
        offered,
        changed_fields,
        hidden,
        updated,
        ..
    } = tool;
    let (attr, field) = (name.clone(), name.clone());
    let fields = changed_fields.join(", ");
    view! {
        <section class="changed-tool" data-testid="gateway-tool" data-tool=attr data-state="withheld">
            <h2>{name}" (upstream "{upstream}"): its definition changed"<HiddenFlag count=hidden/></h2>
            <p>
                "Withheld since " <When at=updated/> ": agents do not see it and its calls are refused "
                "(" <code>"tool_definition_changed"</code> ") until you accept the new definition. "
                "Changed: " <strong data-testid="changed-fields">{fields}</strong> "."
            </p>
            <div class="side-by-side">
                <div>
                    <h3>"Pinned, approved so far"</h3>
                    <p><code data-testid="pinned-sha256">{pinned_sha256}</code></p>
                    <pre class="definition" data-testid="pinned-definition"><Visible text=pinned/></pre>
                </div>
                <div>
                    <h3>"Served now, withheld"</h3>
                    <p><code data-testid="offered-sha256">{offered_sha256.clone().unwrap_or_default()}</code></p>
                    <pre class="definition" data-testid="offered-definition"><Visible text=offered.unwrap_or_default()/></pre>
                </div>
            </div>
            <form method="post" action=ChangeGateway::url() class="inline">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="action" value="accept"/>
                <input type="hidden" name="name" value=field/>
                <input type="hidden" name="sha256" value=offered_sha256.unwrap_or_default()/>
                <button type="submit" data-testid="accept-definition">"Accept the new definition"</button>
            </form>
        </section>
    }
}
