//! `countersign user add|domains|role|disable|enable|reset-password|password` and
//! `token create|list|revoke`: people and API tokens, each change recorded in the audit trail
//! (actor `system:cli`).

use std::io::{BufRead, IsTerminal, Write};

use clap::Subcommand;

use super::{Database, parse_role, services};
use crate::domain::command::scope::ToolScope;
use crate::domain::principal::Principal;
use crate::domain::principal::{Role, TokenKind};
use crate::service::NewUser;
use crate::service::{AccountError, RotateWhich, TokenRequest};

#[derive(Debug, Subcommand)]
pub(crate) enum UserCommand {
    /// Add a user. The password is read from a prompt, or from stdin when piped.
    Add {
        #[command(flatten)]
        db: Database,
        /// Lowercase letters, digits, `-`, `_`, `.`.
        #[arg(long)]
        username: String,
        /// `reviewer` decides, `compliance` reads, `admin` does both.
        #[arg(long, value_parser = parse_role)]
        role: Role,
        /// Read the password from the first line of stdin, without prompting.
        #[arg(long)]
        password_stdin: bool,
        /// Limit the user to these domains, comma-separated (`billing,crm`): they see and
        /// decide only those. Without it, every domain.
        #[arg(long, value_parser = parse_domain_list)]
        domains: Option<DomainList>,
        /// Their Slack user id (`U024BE7LH`): their Approve and Reject in Slack count as theirs.
        #[arg(long)]
        slack_id: Option<String>,
        /// Their email address: they are emailed when work they may decide waits (with
        /// `serve --smtp-url`).
        #[arg(long)]
        email: Option<String>,
    },
    /// Set the address a user is emailed at, or remove it (`--none`).
    #[command(group(clap::ArgGroup::new("address").required(true).args(["email", "none"])))]
    Email {
        #[command(flatten)]
        db: Database,
        /// The user.
        #[arg(long)]
        username: String,
        /// Their email address.
        #[arg(long)]
        email: Option<String>,
        /// No email for them.
        #[arg(long)]
        none: bool,
    },
    /// Limit a user to domains, or lift the limit (`--all`).
    #[command(group(clap::ArgGroup::new("scope").required(true).args(["domains", "all"])))]
    Domains {
        #[command(flatten)]
        db: Database,
        /// The user.
        #[arg(long)]
        username: String,
        /// The domains they see and decide, comma-separated.
        #[arg(long, value_parser = parse_domain_list)]
        domains: Option<DomainList>,
        /// Every domain.
        #[arg(long)]
        all: bool,
    },
    /// Give a user another role (their sessions end at their next request).
    Role {
        #[command(flatten)]
        db: Database,
        /// The user.
        #[arg(long)]
        username: String,
        /// `reviewer`, `compliance` or `admin`.
        #[arg(long, value_parser = parse_role)]
        role: Role,
    },
    /// Disable a user: no more sign-ins; every session of theirs ends at its next request.
    Disable {
        #[command(flatten)]
        db: Database,
        /// The user.
        #[arg(long)]
        username: String,
    },
    /// Enable a disabled user again: they may sign in; sessions from before stay ended.
    Enable {
        #[command(flatten)]
        db: Database,
        /// The user.
        #[arg(long)]
        username: String,
    },
    /// Reset a user's password: every session of theirs ends at its next request. Prints a
    /// one-time password once on stdout, or sets the first line of stdin (`--password-stdin`).
    ResetPassword {
        #[command(flatten)]
        db: Database,
        /// The user.
        #[arg(long)]
        username: String,
        /// Read the password from the first line of stdin instead of making one.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Reset a user's password to one read from a prompt, or from stdin when piped (the
    /// older spelling of `reset-password`).
    Password {
        #[command(flatten)]
        db: Database,
        /// The user.
        #[arg(long)]
        username: String,
        /// Read the password from the first line of stdin, without prompting.
        #[arg(long)]
        password_stdin: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// Create a token and print it once on stdout; only its hash is stored.
    #[command(group(clap::ArgGroup::new("principal").required(true).args(["agent", "executor"])))]
    Create {
        #[command(flatten)]
        db: Database,
        /// The agent that will submit proposals with this token.
        #[arg(long)]
        agent: Option<String>,
        /// The executor that will lease commands with this token.
        #[arg(long)]
        executor: Option<String>,
        /// An executor token's tool scope: tool names or globs, comma-separated
        /// (`'crm.*,calendar.*'`). Without it, the executor runs only tools the policy names it
        /// for in `allowed_executors`.
        #[arg(long, requires = "executor")]
        tools: Option<String>,
        /// The person who operates the agent (a username): they may not approve its proposals.
        #[arg(long, requires = "agent")]
        operator: Option<String>,
        /// An agent token's callback URL: every status change of a proposal submitted with the
        /// token is POSTed there, signed with a secret printed once (`https`, or loopback).
        #[arg(long, requires = "agent")]
        webhook: Option<String>,
        #[command(flatten)]
        targets: super::WebhookTargets,
    },
    /// List every token: kind, name, scope, operator, created, revoked. Never a secret.
    List {
        #[command(flatten)]
        db: Database,
    },
    /// Give an agent's webhook a new signing secret: every active token of the agent that has
    /// a callback gets one, printed once per token. The replaced secret keeps signing beside
    /// it (a second `v1=` in `Countersign-Signature`) for `--overlap`, so receivers switch over
    /// without refusing a delivery.
    RotateWebhookSecret {
        #[command(flatten)]
        db: Database,
        /// The agent.
        #[arg(long)]
        agent: String,
        /// How long the replaced secret signs too: `24h` by default (as on the admin page,
        /// `domain::webhook::DEFAULT_OVERLAP`), `0s` to stop it at once, at most `7d`.
        #[arg(long, default_value = "24h", value_parser = parse_overlap)]
        overlap: time::Duration,
    },
    /// Revoke every active token of an agent or executor.
    #[command(group(clap::ArgGroup::new("principal").required(true).args(["agent", "executor"])))]
    Revoke {
        #[command(flatten)]
        db: Database,
        /// The agent whose tokens to revoke.
        #[arg(long)]
        agent: Option<String>,
        /// The executor whose tokens to revoke.
        #[arg(long)]
        executor: Option<String>,
    },
}

/// `24h`, `30m`, `7d`, or zero (`0`, `0s`, `0h` …) for no overlap.
fn parse_overlap(s: &str) -> Result<time::Duration, String> {
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if !digits.is_empty() && digits.bytes().all(|b| b == b'0') {
        return Ok(time::Duration::ZERO);
    }
    let secs = crate::domain::policy::loader::parse_duration(s)?;
    Ok(time::Duration::seconds(
        i64::try_from(secs).unwrap_or(i64::MAX),
    ))
}

/// Domain names given as one comma-separated argument.
#[derive(Debug, Clone)]
pub(crate) struct DomainList(Vec<String>);

/// `billing,crm`: domain names, comma-separated, at least one.
fn parse_domain_list(s: &str) -> Result<DomainList, String> {
    crate::domain::queue::parse_domains(s).map(DomainList)
}

/// Limits `username` to `domains` (`None`: every domain) and says so.
async fn limit_domains(
    services: &crate::service::Services,
    username: &str,
    domains: Option<Vec<String>>,
    cli: &Principal,
) -> Result<(), String> {
    let shown = domains.as_ref().map_or_else(
        || "every domain".to_owned(),
        |d| format!("{} only", d.join(", ")),
    );
    services
        .set_domains(cli, username, domains)
        .await
        .map_err(words)?;
    eprintln!("`{username}` reviews {shown}");
    Ok(())
}

async fn set_email(
    services: &crate::service::Services,
    username: &str,
    email: Option<&str>,
) -> Result<(), String> {
    services
        .set_email(&Principal::Operator, username, email)
        .await
        .map_err(words)?;
    match email {
        Some(email) => eprintln!("`{username}` is emailed at {}", email.trim()),
        None => eprintln!("`{username}` is not emailed"),
    }
    Ok(())
}

/// `user add`: the account with its domains, Slack id and email address, in one change.
async fn add_user(command: UserCommand, cli: &Principal) -> Result<(), String> {
    let UserCommand::Add {
        db,
        username,
        role,
        password_stdin,
        domains,
        slack_id,
        email,
    } = command
    else {
        return Ok(());
    };
    let password = read_password(password_stdin)?;
    let services = services(&db.database_url).await?;
    let new = NewUser {
        domains: domains.map(|DomainList(d)| d),
        email,
        slack_id,
        ..NewUser::new(&username, role, &password)
    };
    let (domains, slack_id, email) = (new.domains.clone(), new.slack_id.clone(), new.email.clone());
    services.add_user(cli, new).await.map_err(words)?;
    eprintln!("added {role} `{username}`");
    if let Some(domains) = domains {
        eprintln!("`{username}` reviews {} only", domains.join(", "));
    }
    if let Some(slack_id) = slack_id {
        eprintln!("`{username}` is Slack user `{}`", slack_id.trim());
    }
    if let Some(email) = email {
        eprintln!("`{username}` is emailed at {}", email.trim());
    }
    Ok(())
}

pub(crate) async fn user_command(command: UserCommand) -> Result<(), String> {
    let cli = Principal::Operator;
    match command {
        add @ UserCommand::Add { .. } => add_user(add, &cli).await?,
        UserCommand::Email {
            db,
            username,
            email,
            none: _,
        } => {
            let services = services(&db.database_url).await?;
            set_email(&services, &username, email.as_deref()).await?;
        }
        UserCommand::Domains {
            db,
            username,
            domains,
            all: _,
        } => {
            let services = services(&db.database_url).await?;
            let domains = domains.map(|DomainList(d)| d);
            limit_domains(&services, &username, domains, &cli).await?;
        }
        UserCommand::Role { db, username, role } => {
            let services = services(&db.database_url).await?;
            services
                .set_role(&cli, &username, role)
                .await
                .map_err(words)?;
            eprintln!("`{username}` is now {role}");
        }
        UserCommand::Disable { db, username } => {
            let services = services(&db.database_url).await?;
            services
                .disable_user(&cli, &username)
                .await
                .map_err(words)?;
            eprintln!("`{username}` is disabled");
        }
        UserCommand::Enable { db, username } => {
            let services = services(&db.database_url).await?;
            services.enable_user(&cli, &username).await.map_err(words)?;
            eprintln!("`{username}` is enabled");
        }
        UserCommand::ResetPassword {
            db,
            username,
            password_stdin,
        } => reset_password(&db, &username, password_stdin, &cli).await?,
        UserCommand::Password {
            db,
            username,
            password_stdin,
        } => {
            let password = read_password(password_stdin)?;
            let services = services(&db.database_url).await?;
            services
                .reset_password(&cli, &username, password)
                .await
                .map_err(words)?;
            eprintln!("`{username}` has a new password; their sessions have ended");
        }
    }
    Ok(())
}

fn words(e: AccountError) -> String {
    match e {
        AccountError::Service(s) => format!("storage: {s}"),
        other => other.to_string(),
    }
}

fn principal(
    agent: Option<String>,
    executor: Option<String>,
) -> Result<(TokenKind, String), String> {
    match (agent, executor) {
        (Some(a), None) => Ok((TokenKind::Agent, a)),
        (None, Some(e)) => Ok((TokenKind::Executor, e)),
        _ => Err("give exactly one of --agent or --executor".into()),
    }
}

pub(crate) async fn token_command(command: TokenCommand) -> Result<(), String> {
    let cli = Principal::Operator;
    match command {
        TokenCommand::Create {
            db,
            agent,
            executor,
            tools,
            operator,
            webhook,
            targets,
        } => {
            let (kind, name) = principal(agent, executor)?;
            let scope = tools
                .as_deref()
                .map(ToolScope::parse_list)
                .transpose()
                .map_err(|e| format!("--tools {e}"))?;
            let settings = crate::service::WebhookSettings {
                targets: targets.policy(),
                ..Default::default()
            };
            let services = services(&db.database_url).await?.with_webhooks(settings);
            let request = TokenRequest {
                scope: scope.as_ref(),
                operator: operator.as_deref(),
                webhook: webhook.as_deref(),
                ..TokenRequest::new(kind, &name)
            };
            let created = services
                .create_operated_token(&cli, request)
                .await
                .map_err(words)?;
            let scoped = scope.map_or(String::new(), |s| format!(" for tools `{}`", s.to_list()));
            eprintln!(
                "created a token for {kind} `{name}`{scoped}; it is shown once, below, and stored only as a hash:"
            );
            println!("{}", created.token.expose());
            if let Some(secret) = created.webhook_secret {
                eprintln!(
                    "its webhook deliveries are signed with this secret (Countersign-Signature), \
                     shown once, below:"
                );
                println!("{}", secret.expose());
            }
        }
        TokenCommand::Revoke {
            db,
            agent,
            executor,
        } => {
            let (kind, name) = principal(agent, executor)?;
            let services = services(&db.database_url).await?;
            let n = services
                .revoke_tokens(&cli, kind, &name)
                .await
                .map_err(words)?;
            eprintln!("revoked {n} token(s) of {kind} `{name}`");
        }
        TokenCommand::List { db } => list_tokens(&db).await?,
        TokenCommand::RotateWebhookSecret { db, agent, overlap } => {
            rotate_webhook_secret(&db, agent, overlap, &cli).await?;
        }
    }
    Ok(())
}

/// `token rotate-webhook-secret`: each new secret once on stdout, one line per token, the
/// token each belongs to named on stderr just before it.
async fn rotate_webhook_secret(
    db: &Database,
    agent: String,
    overlap: time::Duration,
    cli: &Principal,
) -> Result<(), String> {
    let services = services(&db.database_url).await?;
    let rotated = services
        .rotate_webhook_secrets(cli, RotateWhich::Agent(agent.clone()), overlap)
        .await
        .map_err(words)?;
    let old = match rotated.first().and_then(|r| r.previous_until) {
        Some(until) => format!("the old ones sign too until {until}"),
        None => "the old ones no longer sign".to_owned(),
    };
    eprintln!(
        "{} webhook secret(s) of agent `{agent}` rotated; {old}; each new one is shown once:",
        rotated.len()
    );
    for r in rotated {
        eprintln!("token {}:", r.token_id);
        println!("{}", r.secret.expose());
    }
    Ok(())
}

/// `user reset-password`: a one-time password printed once, or the one on stdin.
async fn reset_password(
    db: &Database,
    username: &str,
    from_stdin: bool,
    cli: &Principal,
) -> Result<(), String> {
    let made = !from_stdin;
    let password = if made {
        crate::auth::token::random_hex()[..24].to_owned()
    } else {
        read_password(true)?
    };
    let services = services(&db.database_url).await?;
    services
        .reset_password(cli, username, password.clone())
        .await
        .map_err(words)?;
    eprintln!("`{username}` has a new password; their sessions have ended");
    if made {
        eprintln!("their one-time password is shown once, below:");
        println!("{password}");
    }
    Ok(())
}

/// `token list`: one tab-separated line per token, newest first, with a header.
async fn list_tokens(db: &Database) -> Result<(), String> {
    use time::format_description::well_known::Rfc3339;

    let services = services(&db.database_url).await?;
    let tokens = services
        .list_tokens(&Principal::Operator)
        .await
        .map_err(|e| format!("storage: {e}"))?;
    let at = |t: time::OffsetDateTime| t.format(&Rfc3339).unwrap_or_default();
    println!("kind\tname\tscope\toperator\tcreated\trevoked\twebhook");
    for t in tokens {
        println!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
            t.kind,
            t.name,
            t.tool_scope.as_deref().unwrap_or("-"),
            t.operator.as_deref().unwrap_or("-"),
            at(t.created_at),
            t.revoked_at.map_or_else(|| "-".to_owned(), at),
            t.webhook_url.as_deref().unwrap_or("-"),
        );
    }
    Ok(())
}

fn read_password(from_stdin: bool) -> Result<String, String> {
    let stdin = std::io::stdin();
    if from_stdin || !stdin.is_terminal() {
        let mut line = String::new();
        stdin
            .lock()
            .read_line(&mut line)
            .map_err(|e| format!("reading the password: {e}"))?;
        let password = line.trim_end_matches(['\r', '\n']).to_owned();
        if password.is_empty() {
            return Err("no password on stdin".into());
        }
        return Ok(password);
    }
    let _ = std::io::stderr().flush();
    let first = rpassword::prompt_password("Password: ").map_err(|e| e.to_string())?;
    let second = rpassword::prompt_password("Again: ").map_err(|e| e.to_string())?;
    if first != second {
        return Err("the two passwords differ".into());
    }
    Ok(first)
}
