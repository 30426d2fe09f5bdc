//! The documentation kept in step with the code: every flag the `countersign` command knows
//! (read from the built binary's `--help`, for every subcommand) is named on its topic's page
//! in `docs/`; the README stays the front door (under 250 lines, linking every page); and
//! every relative link in `README.md` and `docs/*.md` leads to a file that exists, and to a
//! heading that exists when it names one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The README's length limit: past it, the text belongs on a page in `docs/`.
const README_LINES: usize = 250;

/// Flags every command shares, documented once on the configuration page.
const SHARED_FLAGS: [&str; 2] = ["--help", "--database-url"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The page that documents the flags of `countersign <command…>`, by its first word.
fn page_for(command: &[String]) -> &'static str {
    match command.first().map(String::as_str) {
        None | Some("serve") => "docs/configuration.md",
        Some("migrate") => "docs/operations.md",
        Some("user" | "token") => "docs/accounts.md",
        Some("tool") => "docs/executors.md",
        Some("proposal" | "audit") => "docs/audit.md",
        Some("policy") => "docs/policy.md",
        Some("grant") => "docs/reviewing.md",
        Some("gateway") => "docs/gateway.md",
        Some(other) => panic!(
            "`countersign {other}` has no page in docs/: give it one in tests/docs.rs's page_for"
        ),
    }
}

/// `countersign <command…> --help`, as text.
fn help(command: &[String]) -> String {
    let out = Command::cargo_bin("countersign")
        .expect("the countersign binary")
        .args(command)
        .arg("--help")
        .env_remove("RUST_LOG")
        .assert()
        .success();
    String::from_utf8_lossy(&out.get_output().stdout).into_owned()
}

/// The long flags a help text lists: lines `  -h, --help` and `      --database-url <URL>`
/// (descriptions are indented further, so a flag named in one is not taken for an option).
fn flags_in(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("  ")?;
            let rest = match rest.strip_prefix("    ") {
                Some(long_only) => long_only,
                None => rest
                    .get(4..)
                    .filter(|_| rest.as_bytes().get(2) == Some(&b','))?,
            };
            let name: String = rest
                .strip_prefix("--")?
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (!name.is_empty()).then(|| format!("--{name}"))
        })
        .collect()
}

/// The subcommands a help text lists under `Commands:` (clap's own `help` left out).
fn subcommands_in(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| line.trim_end() != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command path (`[]`, `["serve"]`, `["user", "add"]`, …) with the flags it lists.
fn every_command() -> Vec<(Vec<String>, Vec<String>)> {
    let mut found = Vec::new();
    let mut to_read = vec![Vec::<String>::new()];
    while let Some(command) = to_read.pop() {
        let text = help(&command);
        for sub in subcommands_in(&text) {
            let mut path = command.clone();
            path.push(sub);
            to_read.push(path);
        }
        found.push((command, flags_in(&text)));
    }
    found
}

/// Whether `text` names `flag` as a whole word (`--to` is not named by `--tools`).
fn names_flag(text: &str, flag: &str) -> bool {
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '-';
    text.match_indices(flag).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + flag.len()..].chars().next();
        !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name)
    })
}

#[test]
fn every_flag_of_the_command_is_documented_on_its_page() {
    let commands = every_command();
    assert!(
        commands.iter().any(|(c, _)| c == &["user", "add"]) && commands.len() > 20,
        "the help texts were not read as expected: {commands:?}"
    );
    let mut missing = Vec::new();
    for (command, flags) in &commands {
        for flag in flags {
            let page = if SHARED_FLAGS.contains(&flag.as_str()) {
                "docs/configuration.md"
            } else {
                page_for(command)
            };
            if !names_flag(&read(&root().join(page)), flag) {
                missing.push(format!(
                    "`{flag}` of `countersign {}`: document it in {page}",
                    command.join(" ")
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "flags the command knows and docs/ does not name:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn the_readme_is_the_front_door() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines < README_LINES,
        "README.md has {lines} lines; keep it under {README_LINES} and move reference text to a page in docs/"
    );
    let linked: BTreeSet<String> = links(&readme).into_iter().collect();
    for page in pages() {
        let name = format!(
            "docs/{}",
            page.file_name().expect("a file").to_string_lossy()
        );
        assert!(
            linked
                .iter()
                .any(|l| l.split('#').next() == Some(name.as_str())),
            "README.md does not link {name}: every page in docs/ is reached from the front door"
        );
    }
}

#[test]
fn every_relative_link_leads_somewhere() {
    let mut files = vec![root().join("README.md"), root().join("BENCHMARKS.md")];
    files.extend(pages());
    let mut broken = Vec::new();
    for file in &files {
        for link in links(&read(file)) {
            if let Err(why) = check_link(file, &link) {
                broken.push(format!("{}: ({link}) {why}", file.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "broken links:\n  {}",
        broken.join("\n  ")
    );
}

/// `docs/*.md`, sorted.
fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("an entry of docs/").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages
}

/// Whether `link`, found in `file`, names a file that exists (and a heading in it, after `#`).
fn check_link(file: &Path, link: &str) -> Result<(), String> {
    let (path, anchor) = link.split_once('#').unwrap_or((link, ""));
    let target = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().expect("a folder").join(path)
    };
    if !target.exists() {
        return Err(format!("{} does not exist", target.display()));
    }
    let is_markdown = target.extension().is_some_and(|e| e == "md");
    if anchor.is_empty() || !is_markdown {
        return Ok(());
    }
    let slugs = heading_slugs(&read(&target));
    if slugs.iter().any(|s| s == anchor) {
        Ok(())
    } else {
        Err(format!("{} has no heading `#{anchor}`", target.display()))
    }
}

/// The relative targets of the Markdown links in `text` (`[text](target)`), outside code.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut found = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].trim();
        let external = ["http://", "https://", "mailto:"]
            .iter()
            .any(|scheme| target.starts_with(scheme));
        if !external && !target.is_empty() && !target.contains(char::is_whitespace) {
            found.push(target.to_owned());
        }
        rest = &rest[end..];
    }
    found
}

/// `text` without its fenced code blocks and inline code spans (which may span lines and be
/// opened by several backticks, closed by as many).
fn prose(text: &str) -> String {
    let mut unfenced = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            unfenced.push_str(line);
            unfenced.push('\n');
        }
    }
    let mut out = String::new();
    let mut chars = unfenced.chars().peekable();
    let mut open: Option<usize> = None;
    while let Some(c) = chars.next() {
        if c != '`' {
            if open.is_none() {
                out.push(c);
            }
            continue;
        }
        let mut run = 1;
        while chars.next_if_eq(&'`').is_some() {
            run += 1;
        }
        open = match open {
            None => Some(run),
            Some(n) if n == run => None,
            still => still,
        };
    }
    out
}

/// The anchors GitHub gives the headings of `text`: lowercased, punctuation dropped, spaces
/// as `-`, a repeated one suffixed `-1`, `-2`, ….
fn heading_slugs(text: &str) -> Vec<String> {
    let (mut slugs, mut bases) = (Vec::new(), Vec::<String>::new());
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let Some(title) = line.strip_prefix('#').filter(|_| !fenced) else {
            continue;
        };
        let title = title.trim_start_matches('#').trim();
        let base: String = title
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let seen = bases.iter().filter(|b| **b == base).count();
        slugs.push(match seen {
            0 => base.clone(),
            n => format!("{base}-{n}"),
        });
        bases.push(base);
    }
    slugs
}

#[test]
fn the_link_checker_reads_markdown_as_github_does() {
    let text = "# The README's figures\n## `audit verify` (again)\n## The README's figures\n\
                ```sh\n# not a heading [x](gone.md)\n```\n\
                see [a](docs/a.md#b), ``code [c](gone.md) `x` `` and [d](https://example.com)\n";
    assert_eq!(
        heading_slugs(text),
        [
            "the-readmes-figures",
            "audit-verify-again",
            "the-readmes-figures-1"
        ]
    );
    assert_eq!(links(text), ["docs/a.md#b"]);
    assert!(names_flag("use `--to T`", "--to") && !names_flag("use `--tools`", "--to"));
    let help = "Options:\n      --database-url <URL>\n          Names `--grant-to`\n  -h, --help\n";
    assert_eq!(flags_in(help), ["--database-url", "--help"]);
}
