// Starts one real Countersign server per Playwright worker: a fresh database, principals seeded
// through the CLI (never through SQL), a free loopback port, and a bounded readiness check.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync, type WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

export type Backend = 'sqlite' | 'postgres';
export const BACKENDS: readonly Backend[] = ['sqlite', 'postgres'];

/** A human principal created through `countersign user add`. */
export interface Credentials {
  username: string;
  password: string;
}

/** What the suite needs to know about one running server. */
export interface ServerInfo {
  backend: Backend;
  baseURL: string;
  databaseUrl: string;
  agentToken: string;
  otherAgentToken: string;
  executorToken: string;
  reviewer: Credentials;
  reviewer2: Credentials;
  auditor: Credentials;
  /** A reviewer the sign-in throttling spec locks out; no other spec signs in with it. */
  lockout: Credentials;
  /** An admin, for the account and token admin pages. */
  admin: Credentials;
  /** A reviewer the admin spec disables; no other spec signs in with it. */
  disposable: Credentials;
  /** A reviewer limited to the domain `e2e-billing` (`user add --domains`). */
  limited: Credentials;
  /** Agent name for each agent token, so a proposal's `proposed_by` can match its token. */
  agentNames: Readonly<Record<string, string>>;
  /** Where the server's stdout and stderr went, for reading after a failure. */
  logFile: string;
}

export const AGENT = 'agent-e2e';
export const OTHER_AGENT = 'other-agent';
export const EXECUTOR = 'exec-e2e';

/** The repository root: tests/ → end2end/ → repo. */
export const REPO_ROOT = path.resolve(__dirname, '../..');

const CLI_TIMEOUT_MS = 60_000; // argon2 in a debug build is slow, but never this slow
const READY_TIMEOUT_MS = 30_000;
const READY_POLL_MS = 100;
const STOP_GRACE_MS = 5_000;
const LOG_TAIL_CHARS = 8_000;

/**
 * The server binary: `COUNTERSIGN_BIN`, else the debug build that `cargo build` and
 * `cargo test` leave (scripts/test runs the one its `cargo test --workspace` built).
 */
export function serverBinary(): string {
  const bin = process.env.COUNTERSIGN_BIN ?? path.join(REPO_ROOT, 'target', 'debug', 'countersign');
  if (!existsSync(bin)) {
    throw new Error(
      `Countersign binary not found at ${bin}: run \`cargo build --bin countersign\` first ` +
        '(or point COUNTERSIGN_BIN at a built binary).',
    );
  }
  return bin;
}

/** The site the pages load: without it they render but never hydrate. */
function checkSite(): void {
  const wasm = path.join(REPO_ROOT, 'target', 'site', 'pkg', 'countersign.wasm');
  if (!existsSync(wasm)) {
    throw new Error(`${wasm} not found: run \`scripts/build-site\` first.`);
  }
}

/**
 * A database URL no other worker or earlier run has touched, and a directory of this server's
 * own (its key files: servers started at once never share one); `cleanup` removes local files.
 */
function freshDatabase(backend: Backend): { url: string; dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'countersign-e2e-'));
  const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
  if (backend === 'sqlite') {
    return { url: `sqlite://${dir}/e2e.db`, dir, cleanup };
  }
  const base = (process.env.COUNTERSIGN_E2E_PG_URL_BASE ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');
  // The server creates and migrates a missing database; nothing here needs psql.
  return { url: `${base}/cs_e2e_${randomBytes(6).toString('hex')}`, dir, cleanup };
}

/** 24 characters: a fixed prefix covers upper, lower, digit and symbol; 120 random bits follow. */
function strongPassword(): string {
  return `Cs1-${randomBytes(15).toString('base64url')}`;
}

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs one CLI command to completion (bounded), from the repo root like a developer would. */
function runCli(bin: string, args: string[], stdin?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: REPO_ROOT, env: process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), CLI_TIMEOUT_MS);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    // A command that never reads stdin may close it early; that is not our failure.
    child.stdin.on('error', () => {});
    child.stdin.end(stdin ?? '');
  });
}

/** Like runCli, but any non-zero exit fails the worker with the command's own words. */
async function cli(bin: string, args: string[], stdin?: string): Promise<string> {
  const res = await runCli(bin, args, stdin);
  if (res.code !== 0) {
    // Never echo stdin: it holds a password.
    throw new Error(
      `\`countersign ${args.join(' ')}\` exited with ${res.code}\n` +
        `--- stdout ---\n${res.stdout}\n--- stderr ---\n${res.stderr}`,
    );
  }
  return res.stdout;
}

async function addUser(bin: string, url: string, username: string, role: 'reviewer' | 'compliance' | 'admin'): Promise<Credentials> {
  const password = strongPassword();
  await cli(
    bin,
    ['user', 'add', '--database-url', url, '--username', username, '--role', role, '--password-stdin'],
    `${password}\n`,
  );
  return { username, password };
}

async function createToken(bin: string, url: string, kind: '--agent' | '--executor', name: string): Promise<string> {
  // The test executor may run every tool: executor tokens are scoped, deny by default.
  const scope = kind === '--executor' ? ['--tools', '*'] : [];
  const out = (await cli(bin, ['token', 'create', '--database-url', url, kind, name, ...scope])).trim();
  // The contract: stdout holds the token alone, on one line.
  if (out === '' || /\s/.test(out)) {
    throw new Error(`\`countersign token create ${kind} ${name}\` printed ${JSON.stringify(out)}, not one token`);
  }
  return out;
}

/** Asks the kernel for a free loopback port (a tiny race with other programs is acceptable here). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') {
        srv.close();
        reject(new Error('could not read the port of a probe socket'));
        return;
      }
      srv.close(() => resolve(addr.port));
    });
  });
}

/** The server process, its captured output, and how to stop it. */
export interface RunningServer {
  info: ServerInfo;
  stop(): Promise<void>;
}

/** Keeps the last few KiB of output in memory (for error messages) and all of it in a file. */
class OutputLog {
  private tail = '';
  private readonly file: WriteStream;

  constructor(filePath: string) {
    mkdirSync(path.dirname(filePath), { recursive: true });
    this.file = createWriteStream(filePath, { flags: 'a' });
  }

  write(chunk: string): void {
    this.file.write(chunk);
    this.tail = (this.tail + chunk).slice(-LOG_TAIL_CHARS);
  }

  text(): string {
    return this.tail;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.file.end(resolve));
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** SIGTERM, then SIGKILL if the server has not gone within the grace period. */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = exited(child);
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), STOP_GRACE_MS);
  });
  const outcome = await Promise.race([gone.then(() => 'exited' as const), graceOver]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    child.kill('SIGKILL');
    await gone;
  }
}

/** Polls /healthz until it answers 200; fails fast if the process dies first. */
async function waitUntilReady(child: ChildProcess, baseURL: string, log: OutputLog): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastProblem = 'no answer yet';
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `countersign serve exited (code ${child.exitCode}, signal ${child.signalCode}) before it was ready\n` +
          `--- server output (tail) ---\n${log.text()}`,
      );
    }
    try {
      const res = await fetch(`${baseURL}/healthz`, { signal: AbortSignal.timeout(1_000) });
      if (res.status === 200) return;
      lastProblem = `GET /healthz answered ${res.status}`;
    } catch (err) {
      lastProblem = String(err);
    }
    await delay(READY_POLL_MS); // startup readiness polling, not test synchronisation
  }
  throw new Error(
    `countersign serve was not ready within ${READY_TIMEOUT_MS} ms (${lastProblem})\n` +
      `--- server output (tail) ---\n${log.text()}`,
  );
}

/** What a spec that needs its own server may change about how it is started. */
export interface ServeOptions {
  /** Listen here instead of on a free port (a spec that must know the address in advance). */
  port?: number;
  /** More `serve` flags. */
  args?: string[];
  /** More environment variables for `serve` (secrets that are never flags). */
  env?: Record<string, string>;
}

/** Builds a database, seeds principals and starts `countersign serve` on a free port. */
export async function startServer(backend: Backend, logFile: string, options: ServeOptions = {}): Promise<RunningServer> {
  const bin = serverBinary();
  checkSite();
  const db = freshDatabase(backend);
  try {
    const url = db.url;
    await cli(bin, ['migrate', '--database-url', url]);
    const reviewer = await addUser(bin, url, 'reviewer1', 'reviewer');
    const reviewer2 = await addUser(bin, url, 'reviewer2', 'reviewer');
    const auditor = await addUser(bin, url, 'auditor1', 'compliance');
    const lockout = await addUser(bin, url, 'lockout1', 'reviewer');
    const admin = await addUser(bin, url, 'admin1', 'admin');
    const disposable = await addUser(bin, url, 'disposable1', 'reviewer');
    const limited = await addUser(bin, url, 'limited1', 'reviewer');
    await cli(bin, ['user', 'domains', '--database-url', url, '--username', 'limited1', '--domains', 'e2e-billing']);
    const agentToken = await createToken(bin, url, '--agent', AGENT);
    const otherAgentToken = await createToken(bin, url, '--agent', OTHER_AGENT);
    const executorToken = await createToken(bin, url, '--executor', EXECUTOR);

    const port = options.port ?? (await freePort());
    const baseURL = `http://127.0.0.1:${port}`;
    const log = new OutputLog(logFile);
    const serveArgs = [
      'serve',
      '--database-url',
      url,
      '--bind',
      `127.0.0.1:${port}`,
      '--audit-key',
      path.join(db.dir, 'audit.key'),
      '--grant-key',
      path.join(db.dir, 'grant.key'),
      ...(options.args ?? []),
    ];
    const child = spawn(bin, serveArgs, {
      cwd: REPO_ROOT, // the server reads Leptos.toml and target/site relative to the repo root
      env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'info', ...(options.env ?? {}) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => log.write(chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => log.write(chunk));
    // If the worker dies without teardown, do not leave a server holding the port.
    const killOnExit = (): void => {
      child.kill('SIGKILL');
    };
    process.once('exit', killOnExit);

    const stop = async (): Promise<void> => {
      process.removeListener('exit', killOnExit);
      await stopProcess(child);
      await log.close();
      db.cleanup();
    };

    try {
      await waitUntilReady(child, baseURL, log);
    } catch (err) {
      await stop();
      throw err;
    }

    return {
      info: {
        backend,
        baseURL,
        databaseUrl: url,
        agentToken,
        otherAgentToken,
        executorToken,
        reviewer,
        reviewer2,
        auditor,
        lockout,
        admin,
        disposable,
        limited,
        agentNames: { [agentToken]: AGENT, [otherAgentToken]: OTHER_AGENT },
        logFile,
      },
      stop,
    };
  } catch (err) {
    // stop() already cleaned up when serve itself failed; removing twice is harmless.
    db.cleanup();
    throw err;
  }
}
