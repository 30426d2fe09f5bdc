//! The `countersign` command: `serve`, `migrate`, `user add`, `token create`, `policy`,
//! `audit verify|checkpoint|export`. Every flag
//! that configures the database or address has an environment fallback.

use std::io::{BufRead, IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod audit;

use crate::audit::Actor;
use crate::config::{DEFAULT_AUDIT_KEY, DEFAULT_DATABASE_URL, Settings, redact_url};
use crate::domain::principal::{Role, TokenKind};
use crate::service::{AccountError, Services};
use crate::startup::{Application, open_store};

/// Countersign: the approval gate between AI agents and the tools they want to run.
#[derive(Debug, Parser)]
#[command(name = "countersign", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
pub(crate) struct Database {
    /// Database URL: `sqlite://FILE` (created if missing) or `postgres://USER@HOST/DB`.
    #[arg(long, env = "COUNTERSIGN_DATABASE_URL", default_value = DEFAULT_DATABASE_URL)]
    pub(crate) database_url: String,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Migrate the database and serve the web app and API.
    Serve {
        #[command(flatten)]
        db: Database,
        /// Address to listen on [default: Leptos.toml's site-addr].
        #[arg(long, env = "COUNTERSIGN_BIND")]
        bind: Option<SocketAddr>,
        /// The Leptos settings file.
        #[arg(long, env = "COUNTERSIGN_LEPTOS_CONFIG", default_value = "Leptos.toml")]
        leptos_config: PathBuf,
        /// Mark the session cookie `Secure` (set this behind HTTPS).
        #[arg(long, env = "COUNTERSIGN_SECURE_COOKIES")]
        secure_cookies: bool,
        /// The routing policy (TOML; see policy.example.toml) [default: built-in, every tool
        /// Category C].
        #[arg(long, env = "COUNTERSIGN_POLICY")]
        policy: Option<PathBuf>,
        /// The Ed25519 key that signs audit checkpoints (created, mode 0600, if missing). Keep
        /// it where the database's owner cannot write.
        #[arg(long, env = "COUNTERSIGN_AUDIT_KEY", default_value = DEFAULT_AUDIT_KEY)]
        audit_key: PathBuf,
    },
    /// Validate and try out routing policies.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Create the database if missing and apply migrations.
    Migrate {
        #[command(flatten)]
        db: Database,
    },
    /// Manage people who sign in to the web app.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Manage API tokens of agents and executors.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Verify, checkpoint and export the hash-chained audit trail.
    Audit {
        #[command(subcommand)]
        command: audit::AuditCommand,
    },
}

#[derive(Debug, Subcommand)]
enum UserCommand {
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
    },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
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
    },
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Validate a policy file; print its version, or every error with its line.
    Check {
        /// The policy file.
        file: PathBuf,
    },
    /// Route one AANA event or tool proposal (JSON file) under a policy and print the decision
    /// with the rule that produced it.
    Explain {
        /// The policy file.
        file: PathBuf,
        /// An AANA v1 event (`tool_name`, …) or a seed 004 tool proposal (`proposal_id`, …).
        event: PathBuf,
    },
}

fn parse_role(s: &str) -> Result<Role, String> {
    Role::parse(s).ok_or_else(|| "must be one of `admin`, `reviewer`, `compliance`".to_owned())
}

/// Runs the command line and returns the process exit code.
pub async fn run() -> ExitCode {
    let cli = Cli::parse();
    crate::telemetry::init();
    match execute(cli.command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn execute(command: Command) -> Result<(), String> {
    match command {
        Command::Serve {
            db,
            bind,
            leptos_config,
            secure_cookies,
            policy,
            audit_key,
        } => {
            let settings = Settings {
                database_url: db.database_url,
                bind,
                leptos_config,
                secure_cookies,
                policy,
                audit_key: Some(audit_key),
            };
            serve(settings).await
        }
        Command::Policy { command } => policy_command(command),
        Command::Migrate { db } => {
            open_store(&db.database_url)
                .await
                .map_err(|e| e.to_string())?;
            eprintln!("database {} is migrated", redact_url(&db.database_url));
            Ok(())
        }
        Command::User { command } => user_command(command).await,
        Command::Token { command } => token_command(command).await,
        Command::Audit { command } => audit::run(command).await,
    }
}

fn policy_command(command: PolicyCommand) -> Result<(), String> {
    match command {
        PolicyCommand::Check { file } => {
            let policy = load_policy(&file)?;
            println!("{}", policy.version());
            eprintln!(
                "{}: valid, {} tool rules, {} agents",
                file.display(),
                policy.tools().len(),
                policy.agents().len()
            );
            Ok(())
        }
        PolicyCommand::Explain { file, event } => {
            let policy = load_policy(&file)?;
            let text =
                std::fs::read_to_string(&event).map_err(|e| format!("{}: {e}", event.display()))?;
            let value: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| format!("{}: not JSON: {e}", event.display()))?;
            let (decision, route, rule) = explain(&value, &policy).map_err(|errors| {
                let lines: Vec<String> = errors.iter().map(|e| format!("  {e}")).collect();
                format!(
                    "{} is not a valid event or proposal:\n{}",
                    event.display(),
                    lines.join("\n")
                )
            })?;
            println!(
                "{}",
                serde_json::to_string_pretty(&decision).map_err(|e| e.to_string())?
            );
            eprintln!("route {route} by rule: {rule}");
            Ok(())
        }
    }
}

async fn user_command(command: UserCommand) -> Result<(), String> {
    let UserCommand::Add {
        db,
        username,
        role,
        password_stdin,
    } = command;
    let password = read_password(password_stdin)?;
    let services = services(&db.database_url).await?;
    services
        .add_user(&username, role, password, &Actor::system("cli"))
        .await
        .map_err(|e| match e {
            AccountError::Service(s) => format!("storage: {s}"),
            other => other.to_string(),
        })?;
    eprintln!("added {role} `{username}`");
    Ok(())
}

async fn token_command(command: TokenCommand) -> Result<(), String> {
    let TokenCommand::Create {
        db,
        agent,
        executor,
    } = command;
    let (kind, name) = match (agent, executor) {
        (Some(a), None) => (TokenKind::Agent, a),
        (None, Some(e)) => (TokenKind::Executor, e),
        _ => return Err("give exactly one of --agent or --executor".into()),
    };
    let services = services(&db.database_url).await?;
    let secret = services
        .create_token(kind, &name, &Actor::system("cli"))
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "created a token for {kind} `{name}`; it is shown once, below, and stored only as a hash:"
    );
    println!("{}", secret.expose());
    Ok(())
}

/// The use cases over the database at `url`, for one-off commands (built-in policy: account
/// commands do not route anything).
pub(crate) async fn services(url: &str) -> Result<Services, String> {
    let (store, _) = open_store(url).await.map_err(|e| e.to_string())?;
    Ok(Services::new(
        store,
        std::sync::Arc::new(crate::domain::policy::model::Policy::builtin()),
    ))
}

async fn serve(settings: Settings) -> Result<(), String> {
    let app = Application::build(settings.clone())
        .await
        .map_err(|e| e.to_string())?;
    let addr = app.local_addr();
    if let Some(b) = app
        .services()
        .bootstrap_admin()
        .await
        .map_err(|e| e.to_string())?
    {
        // Printed, not logged: the one place this password ever appears.
        eprintln!(
            "\n  Countersign's first start created the account `{}` with the one-time password\n\n      {}\n\n  \
             Sign in at http://{addr}/login, then add reviewers with\n  \
             `countersign user add --username NAME --role reviewer`.\n",
            b.username,
            b.password.expose()
        );
    }
    tracing::info!(%addr, database = %redact_url(&settings.database_url), "Countersign is serving");
    app.run().await.map_err(|e| e.to_string())
}

fn load_policy(file: &std::path::Path) -> Result<crate::domain::Policy, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    crate::domain::Policy::from_toml_str(&text).map_err(|errors| {
        // Compiler-style `FILE:LINE:COLUMN: field: message`, one per line.
        let lines: Vec<String> = errors
            .iter()
            .map(|e| match (e.line, e.column) {
                (Some(l), Some(c)) => {
                    format!("{}:{l}:{c}: {}: {}", file.display(), e.path, e.message)
                }
                _ => format!("{}: {}: {}", file.display(), e.path, e.message),
            })
            .collect();
        format!(
            "{} is not a valid policy:\n{}",
            file.display(),
            lines.join("\n")
        )
    })
}

type Explained = (serde_json::Value, String, String);

/// Routes an AANA event (it has `tool_name`) or a tool proposal under `policy`.
fn explain(
    value: &serde_json::Value,
    policy: &crate::domain::Policy,
) -> Result<Explained, Vec<crate::domain::FieldError>> {
    use crate::domain::contract::proposal::ToolProposal;
    use crate::domain::routing::gate;
    use crate::domain::{Event, route_proposal};
    if value.get("tool_name").is_some() {
        let event = Event::parse(value)?;
        let d = gate::check(&event, policy);
        Ok((
            serde_json::to_value(&d).unwrap_or_default(),
            d.route.to_string(),
            d.rule.clone(),
        ))
    } else {
        let proposal = ToolProposal::parse(value)?;
        let d = route_proposal(&proposal.facts(), policy);
        Ok((
            serde_json::to_value(&d).unwrap_or_default(),
            d.route.to_string(),
            d.rule.clone(),
        ))
    }
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
