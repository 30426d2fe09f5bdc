//! `serve --gateway FILE`: the upstream MCP servers Countersign stands in front of.
//!
//! ```toml
//! [upstreams.files]
//! command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/share"]
//! domain = "files"
//!
//! [upstreams.crm]
//! url = "https://crm.example.com/mcp"
//! headers = { Authorization = "Bearer ${CRM_MCP_TOKEN}" }
//! domain = "sales"
//! hold = "55s"
//! ```
//!
//! Every error is reported with its line, as the policy's are. `${NAME}` in a header is read
//! from Countersign's environment when the file is loaded; a variable that is not set is an
//! error. Header values are secrets: they never appear in `Debug`, logs, pages or the trail.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::domain::policy::model::PolicyError;
use crate::domain::policy::toml::{Located, TomlValue, line_col, parse, push_key};

/// A located problem in a gateway file (the policy's error shape: line, column, key path).
pub type GatewayError = PolicyError;

/// How long a held call stays open when the upstream does not say.
pub const DEFAULT_HOLD: Duration = Duration::from_secs(55);
/// The longest `hold` an upstream may set: every request's time is bounded.
pub const MAX_HOLD: Duration = Duration::from_secs(300);

/// Most upstreams one gateway serves: its executor's scope has a pattern for each.
pub const MAX_UPSTREAMS: usize = crate::domain::command::scope::MAX_SCOPE_PATTERNS;

/// The gateway's configuration: its upstreams, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// The upstream MCP servers.
    pub upstreams: Vec<Upstream>,
}

/// One upstream MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Its name (`[a-z0-9-]+`): the prefix of its tools' names.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// The domain its calls' proposals are in.
    pub domain: String,
    /// How long a held call stays open before it answers "pending".
    pub hold: Duration,
}

/// How an upstream is reached.
#[derive(Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program and its arguments.
        command: Vec<String>,
        /// Variables set in its environment, beyond the few it inherits, variables already
        /// read (secrets: the credentials it needs of its own services).
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP.
    Http {
        /// The MCP endpoint.
        url: String,
        /// Headers sent with every request, variables already read (secrets).
        headers: BTreeMap<String, String>,
    },
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio { command, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("env", &env.keys().collect::<Vec<_>>())
                .finish_non_exhaustive(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish_non_exhaustive(),
        }
    }
}

impl Transport {
    /// `stdio` or `http`, for logs and pages.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

impl GatewayConfig {
    /// The upstreams' names.
    pub fn names(&self) -> Vec<String> {
        self.upstreams.iter().map(|u| u.name.clone()).collect()
    }

    /// The upstream named `name`.
    pub fn upstream(&self, name: &str) -> Option<&Upstream> {
        self.upstreams.iter().find(|u| u.name == name)
    }

    /// Parses and validates a gateway file; `env` reads a variable of Countersign's
    /// environment. Every error, each with its line.
    pub fn parse(
        src: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, Vec<GatewayError>> {
        let root = parse(src).map_err(|e| {
            let (line, column) = e.span.map(|s| line_col(src, s.start)).unzip();
            vec![GatewayError {
                line,
                column,
                path: String::new(),
                message: e.message,
            }]
        })?;
        let mut reader = Reader {
            src,
            env,
            errors: Vec::new(),
        };
        let upstreams = reader.document(&root);
        if reader.errors.is_empty() {
            Ok(GatewayConfig { upstreams })
        } else {
            Err(reader.errors)
        }
    }
}

/// Whether `name` is an upstream name: `[a-z0-9-]+`, at most 32 characters (its tools' served
/// names must stay within the 64 characters LLM APIs accept).
pub fn is_upstream_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// An environment variable's name: a letter or `_`, then letters, digits and `_` (POSIX).
fn is_env_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && !bytes[0].is_ascii_digit()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// An HTTP header name: one or more token characters (RFC 9110).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// An HTTP header value: visible ASCII, spaces and tabs (RFC 9110's field value, without
/// obsolete text), so nothing can end the header early.
fn is_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

fn is_domain(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes.iter().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        })
}

struct Reader<'s> {
    src: &'s str,
    env: &'s dyn Fn(&str) -> Option<String>,
    errors: Vec<GatewayError>,
}

impl Reader<'_> {
    fn error(&mut self, at: &Located, path: &str, message: impl Into<String>) {
        let (line, column) = at.span().map(|s| line_col(self.src, s.start)).unzip();
        self.errors.push(GatewayError {
            line,
            column,
            path: path.to_owned(),
            message: message.into(),
        });
    }

    fn table<'a>(&mut self, v: &'a Located, path: &str) -> Option<&'a [(String, Located)]> {
        match &v.value {
            TomlValue::Table(entries) => Some(entries),
            _ => {
                self.error(v, path, format!("must be a table, got {}", v.type_name()));
                None
            }
        }
    }

    fn string<'a>(&mut self, v: &'a Located, path: &str) -> Option<&'a str> {
        match &v.value {
            TomlValue::String(s) => Some(s),
            _ => {
                self.error(v, path, format!("must be a string, got {}", v.type_name()));
                None
            }
        }
    }

    fn document(&mut self, root: &Located) -> Vec<Upstream> {
        let Some(entries) = self.table(root, "") else {
            return Vec::new();
        };
        let mut upstreams = Vec::new();
        let mut found = false;
        for (key, value) in entries {
            if key != "upstreams" {
                self.error(value, key, "unknown key (expected `upstreams`)");
                continue;
            }
            found = true;
            let Some(named) = self.table(value, "upstreams") else {
                continue;
            };
            if named.len() > MAX_UPSTREAMS {
                self.error(
                    value,
                    "upstreams",
                    format!(
                        "name at most {MAX_UPSTREAMS} upstreams (the gateway's executor is \
                         scoped to each one's tools by a pattern of its own)"
                    ),
                );
            }
            for (name, body) in named {
                let mut path = "upstreams".to_owned();
                push_key(&mut path, name);
                if let Some(u) = self.upstream(name, body, &path) {
                    upstreams.push(u);
                }
            }
        }
        if !found || (upstreams.is_empty() && self.errors.is_empty()) {
            self.error(
                root,
                "upstreams",
                "name at least one upstream ([upstreams.NAME])",
            );
        }
        upstreams
    }

    fn upstream(&mut self, name: &str, body: &Located, path: &str) -> Option<Upstream> {
        if !is_upstream_name(name) {
            self.error(
                body,
                path,
                "an upstream's name is 1 to 32 of a-z, 0-9 and `-` (its tools are served as \
                 NAME__TOOL)",
            );
        }
        let entries = self.table(body, path)?;
        let (mut command, mut url, mut headers, mut env, mut domain, mut hold) =
            (None, None, None, None, None, None);
        for (key, value) in entries {
            let mut at = path.to_owned();
            push_key(&mut at, key);
            match key.as_str() {
                "command" => command = self.command(value, &at),
                "url" => url = self.url(value, &at),
                "headers" => headers = self.headers(value, &at),
                "env" => env = self.env(value, &at),
                "domain" => domain = self.domain(value, &at),
                "hold" => hold = self.hold(value, &at),
                _ => self.error(
                    value,
                    &at,
                    "unknown key (expected command, url, headers, env, domain or hold)",
                ),
            }
        }
        let transport = match (command, url) {
            (Some(command), None) => {
                if headers.is_some() {
                    self.error(body, path, "`headers` go with `url`, not `command`");
                }
                Some(Transport::Stdio {
                    command,
                    env: env.unwrap_or_default(),
                })
            }
            (None, Some(url)) => {
                if env.is_some() {
                    self.error(body, path, "`env` goes with `command`, not `url`");
                }
                Some(Transport::Http {
                    url,
                    headers: headers.unwrap_or_default(),
                })
            }
            (Some(_), Some(_)) => {
                self.error(
                    body,
                    path,
                    "give `command` (stdio) or `url` (HTTP), not both",
                );
                None
            }
            (None, None) => {
                let declared = entries.iter().any(|(k, _)| k == "command" || k == "url");
                if !declared {
                    self.error(body, path, "give `command` (stdio) or `url` (HTTP)");
                }
                None
            }
        };
        if domain.is_none() && !entries.iter().any(|(k, _)| k == "domain") {
            self.error(
                body,
                path,
                "`domain` is required: the domain its calls are in",
            );
        }
        Some(Upstream {
            name: name.to_owned(),
            transport: transport?,
            domain: domain?,
            hold: hold.unwrap_or(DEFAULT_HOLD),
        })
    }

    fn command(&mut self, v: &Located, path: &str) -> Option<Vec<String>> {
        let TomlValue::Array(items) = &v.value else {
            self.error(
                v,
                path,
                format!("must be an array of strings, got {}", v.type_name()),
            );
            return None;
        };
        let mut words = Vec::new();
        for item in items {
            match &item.value {
                TomlValue::String(s) if !s.is_empty() => words.push(s.clone()),
                _ => {
                    self.error(item, path, "every word must be a non-empty string");
                    return None;
                }
            }
        }
        if words.is_empty() {
            self.error(v, path, "must name the program to start");
            return None;
        }
        Some(words)
    }

    fn url(&mut self, v: &Located, path: &str) -> Option<String> {
        let s = self.string(v, path)?;
        match url::Url::parse(s) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
                Some(s.to_owned())
            }
            _ => {
                self.error(v, path, "must be an http:// or https:// URL");
                None
            }
        }
    }

    /// `headers`: HTTP header names to values, each `${NAME}` read from Countersign's
    /// environment.
    fn headers(&mut self, v: &Located, path: &str) -> Option<BTreeMap<String, String>> {
        let names = (
            is_header_name as fn(&str) -> bool,
            "is not an HTTP header name",
        );
        let values = (
            is_header_value as fn(&str) -> bool,
            "is not a valid header value once expanded",
        );
        self.secrets(v, path, names, values)
    }

    fn domain(&mut self, v: &Located, path: &str) -> Option<String> {
        match self.string(v, path) {
            Some(d) if is_domain(d) => Some(d.to_owned()),
            Some(_) => {
                self.error(
                    v,
                    path,
                    "a domain is 1 to 64 of a-z, 0-9, `.`, `_` and `-`, starting with a letter \
                     or digit",
                );
                None
            }
            None => None,
        }
    }

    /// A stdio upstream's `env`: variable names to values, each `${NAME}` read from
    /// Countersign's environment.
    fn env(&mut self, v: &Located, path: &str) -> Option<BTreeMap<String, String>> {
        let names = (
            is_env_name as fn(&str) -> bool,
            "is not an environment variable name (A-Z, a-z, 0-9 and `_`, not starting with a \
             digit)",
        );
        let values = (
            (|v: &str| !v.contains('\0')) as fn(&str) -> bool,
            "holds a NUL character once expanded",
        );
        self.secrets(v, path, names, values)
    }

    /// A table of names to values read from the environment (`headers`, `env`: secrets): each
    /// name must pass `names`' check and each value, `${NAME}`s expanded, `values`' (else
    /// their errors).
    fn secrets(
        &mut self,
        v: &Located,
        path: &str,
        (name_ok, name_rule): (fn(&str) -> bool, &str),
        (value_ok, value_rule): (fn(&str) -> bool, &str),
    ) -> Option<BTreeMap<String, String>> {
        let entries = self.table(v, path)?;
        let mut read = BTreeMap::new();
        for (name, value) in entries {
            let mut at = path.to_owned();
            push_key(&mut at, name);
            if !name_ok(name) {
                self.error(value, &at, name_rule);
                continue;
            }
            let Some(template) = self.string(value, &at) else {
                continue;
            };
            match expand(template, self.env) {
                Ok(text) if value_ok(&text) => {
                    read.insert(name.clone(), text);
                }
                Ok(_) => self.error(value, &at, value_rule),
                Err(message) => self.error(value, &at, message),
            }
        }
        Some(read)
    }

    fn hold(&mut self, v: &Located, path: &str) -> Option<Duration> {
        let s = self.string(v, path)?;
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        let (n, unit) = s.split_at(digits);
        let secs = match (n.parse::<u64>(), unit) {
            (Ok(n), "s") => Some(n),
            (Ok(n), "m") => n.checked_mul(60),
            _ => None,
        };
        match secs.map(Duration::from_secs) {
            Some(d) if !d.is_zero() && d <= MAX_HOLD => Some(d),
            _ => {
                self.error(
                    v,
                    path,
                    format!(
                        "must be a duration from 1s to {}s, e.g. \"55s\" or \"2m\"",
                        MAX_HOLD.as_secs()
                    ),
                );
                None
            }
        }
    }
}

/// `template` with every `${NAME}` read from the environment; the error names a variable
/// that is not set (never a value).
fn expand(template: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err("`${` without its closing `}`".into());
        };
        let name = &after[..end];
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(format!(
                "`${{{name}}}`: a variable is named with A-Z, 0-9 and `_`"
            ));
        }
        match env(name) {
            Some(value) => out.push_str(&value),
            None => {
                return Err(format!(
                    "`${{{name}}}` is not set in Countersign's environment"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "CRM_MCP_TOKEN").then(|| "s3cret".to_owned())
    }

    const EXAMPLE: &str = r#"
[upstreams.files]
command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/share"]
domain = "files"

[upstreams.crm]
url = "https://crm.example.com/mcp"
headers = { Authorization = "Bearer ${CRM_MCP_TOKEN}" }
domain = "sales"
hold = "30s"
"#;

    #[test]
    fn the_example_reads_with_its_defaults_and_its_secret() {
        let config = GatewayConfig::parse(EXAMPLE, &env).expect("valid");
        assert_eq!(config.upstreams.len(), 2);
        let files = config.upstream("files").expect("files");
        assert_eq!(files.hold, DEFAULT_HOLD);
        assert_eq!(files.domain, "files");
        assert_eq!(files.transport.kind(), "stdio");
        let crm = config.upstream("crm").expect("crm");
        assert_eq!(crm.hold, Duration::from_secs(30));
        let Transport::Http { headers, .. } = &crm.transport else {
            panic!("http");
        };
        assert_eq!(headers["Authorization"], "Bearer s3cret");
        assert!(
            !format!("{config:?}").contains("s3cret"),
            "secrets stay out of Debug"
        );
    }

    #[test]
    fn every_error_is_reported_with_its_line() {
        let src = r#"
[upstreams.Files]
command = []
domain = "files"

[upstreams.crm]
url = "ftp://crm"
command = ["x"]
headers = { Authorization = "Bearer ${MISSING_TOKEN}" }
hold = "10h"
extra = 1
"#;
        let errors = GatewayConfig::parse(src, &env).expect_err("invalid");
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let has = |needle: &str| text.iter().any(|t| t.contains(needle));
        assert!(has("line 2"), "{text:?}");
        assert!(has("upstreams.Files: an upstream's name"), "{text:?}");
        assert!(
            has("line 3, column 11: upstreams.Files.command: must name the program"),
            "{text:?}"
        );
        assert!(
            has("line 7, column 7: upstreams.crm.url: must be an http"),
            "{text:?}"
        );
        assert!(has("`${MISSING_TOKEN}` is not set"), "{text:?}");
        assert!(has("line 10, column 8: upstreams.crm.hold"), "{text:?}");
        assert!(
            has("line 11, column 9: upstreams.crm.extra: unknown key"),
            "{text:?}"
        );
        assert!(has("`domain` is required"), "{text:?}");
    }

    #[test]
    fn a_stdio_upstream_gets_the_credentials_its_env_names_and_no_log_shows_them() {
        let src = r#"
[upstreams.crm]
command = ["crm-mcp"]
env = { CRM_TOKEN = "${CRM_MCP_TOKEN}", REGION = "eu" }
domain = "sales"
"#;
        let config = GatewayConfig::parse(src, &env).expect("valid");
        let Transport::Stdio { env: set, .. } = &config.upstream("crm").expect("crm").transport
        else {
            panic!("stdio");
        };
        assert_eq!(set["CRM_TOKEN"], "s3cret");
        assert_eq!(set["REGION"], "eu");
        let shown = format!("{config:?}");
        assert!(
            shown.contains("CRM_TOKEN") && !shown.contains("s3cret"),
            "{shown}"
        );

        let src = r#"
[upstreams.crm]
url = "https://crm.example.com/mcp"
env = { "1BAD" = "x", OK = "${NOT_SET}" }
domain = "sales"
"#;
        let errors = GatewayConfig::parse(src, &env).expect_err("invalid");
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let has = |needle: &str| text.iter().any(|t| t.contains(needle));
        assert!(
            has("upstreams.crm.env.1BAD: is not an environment"),
            "{text:?}"
        );
        assert!(has("`${NOT_SET}` is not set"), "{text:?}");
        assert!(has("`env` goes with `command`"), "{text:?}");
    }

    #[test]
    fn more_upstreams_than_the_executors_scope_holds_are_refused() {
        let file = |n: usize| {
            (0..n)
                .map(|i| format!("[upstreams.u{i}]\ncommand = [\"x\"]\ndomain = \"d\"\n"))
                .collect::<String>()
        };
        assert!(GatewayConfig::parse(&file(MAX_UPSTREAMS), &env).is_ok());
        let errors = GatewayConfig::parse(&file(MAX_UPSTREAMS + 1), &env).expect_err("too many");
        assert!(
            errors[0].to_string().contains("at most 32 upstreams"),
            "{errors:?}"
        );
    }

    #[test]
    fn a_file_without_upstreams_is_refused() {
        assert!(GatewayConfig::parse("", &env).is_err());
        assert!(GatewayConfig::parse("[upstreams]\n", &env).is_err());
        assert!(GatewayConfig::parse("upstreams = [", &env).is_err());
    }
}
