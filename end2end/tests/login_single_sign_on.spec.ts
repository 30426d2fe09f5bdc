// Signing in through an OpenID provider: a real one (the OpenID Certified `oidc-provider`
// package, end2end/oidc/provider.mjs) on a loopback port, and a Countersign server of this
// spec's own started with the single sign-on flags. A person the provider's role claim makes a
// reviewer lands on the queue; one it grants no role lands on the "no role yet" page and can
// neither open a proposal nor decide one.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { Page } from '@playwright/test';

import { CountersignApi } from './api';
import { expect, expectAccessible, login, newSession, test } from './fixtures';
import { REPO_ROOT, freePort, startServer, type RunningServer } from './server';

const CLIENT_ID = 'countersign-e2e';
const ROLE_CLAIM = 'countersign_roles';
const READY_TIMEOUT_MS = 20_000;

/** The provider's accounts: id → the claims it vouches for. */
const ACCOUNTS: Record<string, Record<string, unknown>> = {
  'sso-rita': { preferred_username: 'Rita', email: 'rita@example.com', [ROLE_CLAIM]: ['reviewer'] },
  'sso-nora': { preferred_username: 'Nora', email: 'nora@example.com' },
  'sso-gale': { preferred_username: 'gale', [ROLE_CLAIM]: [] },
  'sso-rory': { preferred_username: 'rory', [ROLE_CLAIM]: ['reviewer'] },
};

/** The file the provider reads its accounts from at every sign-in. */
const ACCOUNTS_FILE = path.join(mkdtempSync(path.join(tmpdir(), 'cs-oidc-')), 'accounts.json');

/** What the provider vouches for from now on. */
function vouchFor(accounts: Record<string, Record<string, unknown>>): void {
  writeFileSync(ACCOUNTS_FILE, JSON.stringify(accounts));
}

interface Provider {
  issuer: string;
  stop(): Promise<void>;
}

/** Starts the provider and resolves once it says it listens. */
async function startProvider(port: number, redirectUri: string, clientSecret: string): Promise<Provider> {
  const child: ChildProcess = spawn(process.execPath, [path.join(REPO_ROOT, 'end2end', 'oidc', 'provider.mjs')], {
    env: {
      ...process.env,
      OIDC_PORT: String(port),
      OIDC_CLIENT_ID: CLIENT_ID,
      OIDC_CLIENT_SECRET: clientSecret,
      OIDC_REDIRECT_URI: redirectUri,
      OIDC_ROLE_CLAIM: ROLE_CLAIM,
      OIDC_ACCOUNTS_FILE: ACCOUNTS_FILE,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const issuer = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the OpenID provider did not start:\n${output}`)), READY_TIMEOUT_MS);
    const onData = (chunk: string): void => {
      output += chunk;
      const ready = /^ready (\S+)$/m.exec(output);
      if (ready?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(ready[1]);
      }
    };
    child.stdout?.setEncoding('utf8').on('data', onData);
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the OpenID provider exited (${code}):\n${output}`));
    });
  });
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await gone;
  };
  return { issuer, stop };
}

/** Signs in on the provider's pages as `account` (any password) and allows Countersign. */
async function signInAtProvider(page: Page, baseURL: string, account: string): Promise<void> {
  await page.goto(`${baseURL}/login`);
  await expectAccessible(page, 'the sign-in page with single sign-on');
  await page.getByTestId('sso-login').click();
  await page.locator('input[name=login]').fill(account);
  await page.locator('input[name=password]').fill('any password will do');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

test.describe('single sign-on', () => {
  let provider: Provider | undefined;
  let countersign: RunningServer | undefined;

  test.beforeAll(async ({ backend }, workerInfo) => {
    test.setTimeout(180_000);
    const clientSecret = `e2e-${randomBytes(24).toString('hex')}`;
    vouchFor(ACCOUNTS);
    const [providerPort, port] = [await freePort(), await freePort()];
    const publicUrl = `http://127.0.0.1:${port}`;
    provider = await startProvider(providerPort, `${publicUrl}/auth/oidc/callback`, clientSecret);
    const logFile = path.join(workerInfo.project.outputDir, `server-sso-${workerInfo.project.name}.log`);
    countersign = await startServer(backend, logFile, {
      port,
      args: [
        '--public-url',
        publicUrl,
        '--oidc-issuer',
        provider.issuer,
        '--oidc-client-id',
        CLIENT_ID,
        '--oidc-role-claim',
        ROLE_CLAIM,
      ],
      // The secret is never a flag.
      env: { COUNTERSIGN_OIDC_CLIENT_SECRET: clientSecret },
    });
  });

  test.afterAll(async () => {
    await countersign?.stop();
    await provider?.stop();
  });

  function server(): RunningServer['info'] {
    if (countersign === undefined) throw new Error('the single sign-on server did not start');
    return countersign.info;
  }

  test('the worker server without single sign-on offers passwords only', async ({ page }) => {
    await page.goto('/login');
    await expect(page.locator('input[name=username]')).toBeVisible();
    await expect(page.getByTestId('sso-login')).toHaveCount(0);
  });

  test('an answer this session did not ask for signs nobody in', async ({ page }) => {
    const info = server();
    await page.goto(`${info.baseURL}/auth/oidc/callback?code=forged&state=forged`);
    await expect(page).toHaveURL(`${info.baseURL}/login?error=sso_failed`);
    await expect(page.getByTestId('flash-error')).toContainText('Single sign-on did not work');
    await page.goto(`${info.baseURL}/`);
    await expect(page).toHaveURL(/\/login(\?.*)?$/);
  });

  test('a person the provider makes a reviewer lands on the queue', async ({ page }) => {
    const info = server();
    await signInAtProvider(page, info.baseURL, 'sso-rita');

    await expect(page).toHaveURL(`${info.baseURL}/`);
    await expect(page.getByTestId('viewer')).toContainText('rita · reviewer');
    await expect(page.locator('[data-testid=queue-row], [data-testid=queue-empty]').first()).toBeVisible();

    // The reviewer may decide: a seeded proposal offers approve and reject.
    const api = new CountersignApi(info.baseURL, info.agentNames);
    const { id } = await api.proposeOk(info.agentToken);
    await page.goto(`${info.baseURL}/proposals/${id}`);
    await expect(page.locator('button[data-testid=approve]')).toBeVisible();
  });

  test('a person the provider grants no role may do nothing', async ({ page }) => {
    const info = server();
    const api = new CountersignApi(info.baseURL, info.agentNames);
    const { id } = await api.proposeOk(info.agentToken);

    await signInAtProvider(page, info.baseURL, 'sso-nora');
    await expect(page).toHaveURL(`${info.baseURL}/no-role`);
    await expect(page.getByTestId('no-role')).toContainText('nora');
    await expectAccessible(page, 'the no-role page');

    // No queue, no proposal: every page sends the person back to say so.
    await page.goto(`${info.baseURL}/`);
    await expect(page).toHaveURL(`${info.baseURL}/no-role`);
    await page.goto(`${info.baseURL}/proposals/${id}`);
    await expect(page).toHaveURL(`${info.baseURL}/no-role`);
    await expect(page.getByTestId('proposal-summary')).toHaveCount(0);

    // Nor a decision posted straight to the server function with the session's own token.
    const csrf = await page.locator('input[name=csrf_token]').first().getAttribute('value');
    const r = await page.request.post(`${info.baseURL}/fn/decide_proposal`, {
      form: { csrf_token: csrf ?? '', id, verdict: 'approved' },
      headers: { referer: `${info.baseURL}/proposals/${id}`, origin: info.baseURL, accept: 'text/html' },
      maxRedirects: 0,
    });
    expect(r.status()).toBe(302);
    expect(r.headers()['location']).toBe('/login');
    const after = await api.getProposal(info.agentToken, id);
    expect(after.body?.proposal.status).toBe('pending');

    // Signing out works as for anyone.
    await page.getByTestId('no-role-logout').click();
    await expect(page).toHaveURL(/\/login(\?.*)?$/);
  });

  test('an admin grants a role later; the next sign-in has it', async ({ page, browser }) => {
    const info = server();
    await signInAtProvider(page, info.baseURL, 'sso-gale');
    await expect(page).toHaveURL(`${info.baseURL}/no-role`);

    const admin = await newSession(browser, info);
    try {
      await login(admin.page, info.admin);
      await admin.page.goto('/admin/users');
      const row = admin.page.locator('[data-testid=user-row][data-username=gale]');
      await expect(row.getByTestId('user-role')).toHaveText('no role yet');
      await admin.page.getByLabel('New role for gale').selectOption('reviewer');
      await admin.page.getByTestId('role-gale').click();
      await expect(admin.page.getByTestId('flash-notice')).toBeVisible();
      await expect(row.getByTestId('user-role')).toHaveText('reviewer');
    } finally {
      await admin.context.close();
    }

    // The role change ends the session that had none; signing in again brings the role.
    await page.goto(`${info.baseURL}/`);
    await expect(page).toHaveURL(/\/login(\?.*)?$/);
    await page.getByTestId('sso-login').click();
    // The provider remembers the person and their consent, so it sends them straight back.
    await expect(page).toHaveURL(`${info.baseURL}/`);
    await expect(page.getByTestId('viewer')).toContainText('gale · reviewer');
  });

  test('a role the provider stops granting is taken away at the next sign-in', async ({ page }) => {
    const info = server();
    await signInAtProvider(page, info.baseURL, 'sso-rory');
    await expect(page).toHaveURL(`${info.baseURL}/`);
    await expect(page.getByTestId('viewer')).toContainText('rory · reviewer');

    // The identity provider no longer grants rory a role.
    vouchFor({ ...ACCOUNTS, 'sso-rory': { preferred_username: 'rory', [ROLE_CLAIM]: [] } });
    await page.getByTestId('logout').click();
    await expect(page).toHaveURL(/\/login(\?.*)?$/);
    await page.getByTestId('sso-login').click();
    // The provider remembers the person and their consent, so it sends them straight back.
    await expect(page).toHaveURL(`${info.baseURL}/no-role`);
    await expect(page.getByTestId('no-role')).toContainText('rory');
    await page.goto(`${info.baseURL}/`);
    await expect(page).toHaveURL(`${info.baseURL}/no-role`);
    vouchFor(ACCOUNTS);
  });
});
